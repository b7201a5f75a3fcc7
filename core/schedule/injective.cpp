#include "core/loop/stmt.h"
#include "core/schedule/template_util.h"
#include "core/te/builder.h"

namespace souffle::schedule::detail {

using loop::ForKind;
using loop::Kernel;
using loop::MemScope;
using loop::Stmt;
using te::Expr;
using te::Tensor;

Kernel schedule_injective(const te::ComputeOp& op, const ScheduleConfig& c) {
  Frame f;
  int64_t n = extent_product(op.axes);
  int64_t block = std::min(c.block, std::max<int64_t>(32, ceil_div(n, 32) * 32));
  int64_t grid = std::min(c.max_grid, ceil_div(n, block));
  int64_t iters = ceil_div(n, grid * block);
  Expr it = te::var("it"), idx = te::var("idx");
  Stmt st = loop::store(op.output, axis_vars(op), op.body);
  Stmt guarded = loop::if_then_else(te::lt(idx, ic(n)), bind_flat(op.axes, idx, st));
  Stmt body =
      loop::make_for(it, iters, ForKind::Serial,
                     loop::let_stmt(idx, (it * ic(grid) + f.bx) * ic(block) + f.tx, guarded));
  return finish(op, f, body, grid, block, "injective grid-stride");
}

}  // namespace souffle::schedule::detail
