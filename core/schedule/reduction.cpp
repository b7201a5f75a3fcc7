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

Kernel schedule_reduction(const te::ComputeOp& op, const ScheduleConfig& c) {
  Frame f;
  int64_t rows = extent_product(op.axes), r = extent_product(op.reduce_axes);
  int64_t block = 32;
  while (block < c.block && block < r) block *= 2;
  int64_t grid = std::min(c.max_grid, rows);
  DType t = op.output->dtype;
  Tensor red = loop::make_buffer(op.name + "_red", {block}, t);
  Tensor acc = loop::make_buffer(op.name + "_acc", {1}, t);
  Expr ri = te::var("ri"), row = te::var("row"), kk = te::var("kk"), k = te::var("k");
  Expr acc0 = te::read(acc, {ic(0)});

  std::vector<Stmt> per_row;
  per_row.push_back(loop::store(acc, {ic(0)}, te::reduce_identity(op.reduce, t)));
  Stmt fold = loop::store(acc, {ic(0)}, combine(op.reduce, acc0, op.body));
  per_row.push_back(loop::make_for(
      kk, ceil_div(r, block), ForKind::Serial,
      loop::let_stmt(k, kk * ic(block) + f.tx,
                     loop::if_then_else(te::lt(k, ic(r)), bind_flat(op.reduce_axes, k, fold)))));
  per_row.push_back(loop::store(red, {f.tx}, acc0));
  per_row.push_back(loop::block_barrier());
  for (int64_t s = block / 2; s >= 1; s /= 2) {
    Expr other = te::read(red, {f.tx + ic(s)});
    per_row.push_back(loop::if_then_else(
        te::lt(f.tx, ic(s)),
        loop::store(red, {f.tx}, combine(op.reduce, te::read(red, {f.tx}), other))));
    per_row.push_back(loop::block_barrier());
  }
  per_row.push_back(loop::if_then_else(
      te::eq(f.tx, ic(0)),
      loop::store(op.output, axis_vars(op), with_init(op, te::read(red, {ic(0)})))));
  // The next row overwrites red: every thread must be past the final read first.
  per_row.push_back(loop::block_barrier());

  Stmt row_body = loop::if_then_else(te::lt(row, ic(rows)),
                                     bind_flat(op.axes, row, loop::seq(std::move(per_row))));
  Stmt body = loop::make_for(ri, ceil_div(rows, grid), ForKind::Serial,
                             loop::let_stmt(row, ri * ic(grid) + f.bx, row_body));
  body = loop::allocate(red, MemScope::Shared, loop::allocate(acc, MemScope::Local, body));
  return finish(op, f, body, grid, block,
                "reduction, shared tree over " + std::to_string(block) + " threads");
}

}  // namespace souffle::schedule::detail
