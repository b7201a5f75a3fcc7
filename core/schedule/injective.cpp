#include <algorithm>

#include "core/loop/stmt.h"
#include "core/loop/vectorize.h"
#include "core/schedule/template_util.h"
#include "core/te/builder.h"
#include "core/te/mutator.h"

namespace souffle::schedule::detail {

using loop::ForKind;
using loop::Kernel;
using loop::MemScope;
using loop::Stmt;
using te::Expr;
using te::Tensor;

namespace {

/// Threads of n work items, grid-strided: block, grid and iterations per thread.
struct Stride {
  int64_t block, grid, iters;
  Stride(int64_t n, const ScheduleConfig& c)
      : block(std::min(c.block, std::max<int64_t>(32, ceil_div(n, 32) * 32))),
        grid(std::max<int64_t>(1, std::min(strided_grid(c), ceil_div(n, block)))),  // n may be 0
        iters(ceil_div(n, grid * block)) {}
};

/// for it: let idx = (it * grid + bx) * block + tx; if idx < n: body(idx).
Stmt grid_stride(const Frame& f, const Stride& s, int64_t n, const Stmt& body, const Expr& idx) {
  Expr it = te::var("it");
  Stmt guarded = loop::if_then_else(te::lt(idx, ic(n)), body);
  return loop::make_for(
      it, s.iters, ForKind::Serial,
      loop::let_stmt(idx, (it * ic(s.grid) + f.bx) * ic(s.block) + f.tx, guarded));
}

/// Each thread computes `lanes` consecutive elements of the innermost axis with 16-byte loads
/// and stores, when the output row and every read that follows the innermost axis are
/// contiguous and aligned (see loop::vectorizable); an undefined Stmt otherwise.
Stmt vectorized_body(const te::ComputeOp& op, const Frame& f, const ScheduleConfig& c,
                     int64_t& grid, int64_t& block) {
  if (op.axes.empty()) return {};
  const int64_t lanes = 16 / dtype_size(op.output->dtype);
  const te::IterVar& last = op.axes.back();
  if (lanes < 2 || 16 % dtype_size(op.output->dtype) != 0 || last.extent % lanes != 0) return {};
  // The innermost axis becomes q * lanes + v: q is bound like any axis, v is the vector lane.
  std::vector<te::IterVar> axes = op.axes;
  Expr q = te::var(last.var.as<te::Var>()->name + "_q"), v = te::var("v");
  axes.back().var = q;
  axes.back().extent = last.extent / lanes;
  std::unordered_map<const te::ExprNode*, Expr> sub = {{last.var.get(), q * ic(lanes) + v}};
  std::vector<Expr> idx;
  for (const Expr& a : axis_vars(op)) idx.push_back(te::substitute(a, sub));
  Stmt lanes_loop = loop::make_for(v, lanes, ForKind::Serial,
                                   loop::store(op.output, idx, te::substitute(op.body, sub)));
  const loop::For* lf = lanes_loop.as<loop::For>();
  if (!loop::vectorizable(*lf)) return {};
  // Reads that do not follow the innermost axis (a bias per row) stay scalar in the loop.
  lanes_loop = loop::make_for(v, lanes, ForKind::Vectorized, lf->body);
  const int64_t n = extent_product(axes);
  Stride s(n, c);
  grid = s.grid;
  block = s.block;
  Expr vi = te::var("vi");
  return grid_stride(f, s, n, bind_flat(axes, vi, loop::lower_vector_accesses(lanes_loop)), vi);
}

}  // namespace

Kernel schedule_injective(const te::ComputeOp& op, const ScheduleConfig& c) {
  Frame f;
  int64_t grid = 0, block = 0;
  if (Stmt vec = vectorized_body(op, f, c, grid, block); vec.defined())
    return finish(op, f, vec, grid, block,
                  "injective grid-stride, " + std::to_string(16 / dtype_size(op.output->dtype)) +
                      "-wide vectors");
  const int64_t n = extent_product(op.axes);
  Stride s(n, c);
  Expr idx = te::var("idx");
  Stmt st = loop::store(op.output, axis_vars(op), op.body);
  return finish(op, f, grid_stride(f, s, n, bind_flat(op.axes, idx, st), idx), s.grid, s.block,
                "injective grid-stride");
}

}  // namespace souffle::schedule::detail
