// An element-wise TE scheduled on the tiles of the GEMM whose output it reads: each block
// computes the elements whose inputs lie in the output tiles that block computed, so the merge
// proves the dependence block-owned (a block barrier) instead of placing a grid barrier.
#include <fmt/format.h>

#include "core/loop/stmt.h"
#include "core/schedule/template_util.h"
#include "core/te/builder.h"
#include "core/te/mutator.h"

namespace souffle::schedule::detail {

using loop::ForKind;
using loop::Kernel;
using loop::Stmt;
using te::Expr;

namespace {

/// `e` as `var * group + k` with integer immediates group >= 1 and k (either operand order of
/// the product and the sum; `var` alone is group 1, k 0).
bool grouped_index(const Expr& e, const Expr& var, int64_t& group, int64_t& k) {
  auto int_of = [](const Expr& x, int64_t& v) {
    const te::IntImm* i = x.as<te::IntImm>();
    if (i) v = i->value;
    return i != nullptr;
  };
  auto product = [&](const Expr& x) {
    if (x.same_as(var)) return group = 1, true;
    const te::Binary* b = x.as<te::Binary>();
    if (!b || b->op != te::BinaryOp::Mul) return false;
    if (b->a.same_as(var)) return int_of(b->b, group);
    if (b->b.same_as(var)) return int_of(b->a, group);
    return false;
  };
  k = 0;
  if (product(e)) return group >= 1;
  const te::Binary* b = e.as<te::Binary>();
  if (!b || b->op != te::BinaryOp::Add) return false;
  if (product(b->a) && int_of(b->b, k)) return group >= 1;
  if (product(b->b) && int_of(b->a, k)) return group >= 1;
  return false;
}

}  // namespace

int64_t tile_alignment(const te::ComputeOp& op, const te::ComputeOp& gemm, const GemmParts& g) {
  if (op.reduce != te::ReduceKind::None || !op.reduce_axes.empty()) return 0;
  if (!g.batch.empty() || g.rows.size() != 1 || g.cols.size() != 1 || op.axes.size() != 2) return 0;
  // The TE's axes and the GEMM's output indices: rows by row, columns by groups of columns.
  if (gemm.axes.size() != 2 || !gemm.axes[0].var.same_as(g.rows[0].var) ||
      !gemm.axes[1].var.same_as(g.cols[0].var))
    return 0;
  const int64_t m = g.rows[0].extent, n = g.cols[0].extent, units = op.axes[1].extent;
  if (op.axes[0].extent != m || units <= 0 || n % units != 0) return 0;
  const int64_t group = n / units;
  const Expr& row = op.axes[0].var;
  const Expr& unit = op.axes[1].var;
  bool reads = false, aligned = true;
  te::for_each_node(op.body, [&](const Expr& x) {
    const te::Read* r = x.as<te::Read>();
    if (!r || r->tensor != gemm.output) return;
    reads = true;
    int64_t gr = 0, k = 0;
    aligned &= r->indices.size() == 2 && r->indices[0].same_as(row) &&
               grouped_index(r->indices[1], unit, gr, k) && gr == group && k >= 0 && k < group;
  });
  return reads && aligned ? group : 0;
}

Kernel schedule_tile_aligned(const te::ComputeOp& op, const te::ComputeOp& gemm, int64_t group,
                             const gpu::Tile& tile, int64_t threads, const ScheduleConfig& c) {
  SOUFFLE_CHECK(group >= 1 && tile.bn % group == 0,
                "tile_aligned: " + op.name + ": tile columns do not hold whole groups");
  Frame f;
  const int64_t m = op.axes[0].extent, units = op.axes[1].extent;
  const int64_t bm = tile.bm, bu = tile.bn / group;  // a tile's rows and units
  const int64_t mt = ceil_div(m, bm), nt = ceil_div(units * group, tile.bn);
  // The GEMM's tiles over its grid, in the same rounds (the same cap): tile -> (mb, nb).
  const TileGrid tg(mt * nt, c);
  const int64_t per_tile = bm * bu, per_thread = ceil_div(per_tile, threads);
  Expr t = te::var("tile"), mb = te::var("mb"), nb = te::var("nb"), l = te::var("l"),
       e = te::var("e"), gi = te::var("gi"), gu = te::var("gu");
  Stmt st = loop::store(
      op.output, {gi, gu},
      te::substitute(op.body, {{op.axes[0].var.get(), gi}, {op.axes[1].var.get(), gu}}));
  st = loop::if_then_else(te::logical_and(te::lt(gi, ic(m)), te::lt(gu, ic(units))), st);
  st = loop::let_stmt(gi, mb * ic(bm) + te::floordiv(e, ic(bu)),
                      loop::let_stmt(gu, nb * ic(bu) + te::floormod(e, ic(bu)), st));
  st = loop::if_then_else(te::lt(e, ic(per_tile)), st);
  st =
      loop::make_for(l, per_thread, ForKind::Serial, loop::let_stmt(e, l * ic(threads) + f.tx, st));
  st = loop::let_stmt(mb, te::floormod(te::floordiv(t, ic(nt)), ic(mt)),
                      loop::let_stmt(nb, te::floormod(t, ic(nt)), st));
  st = tg.wrap(f, t, st);
  return finish(op, f, st, tg.grid, threads,
                fmt::format("injective on the {}x{} tiles of {} ({} of its columns per element, "
                            "each block the elements of the tiles it computed){}",
                            tile.bm, tile.bn, gemm.name, group, tg.describe()));
}

}  // namespace souffle::schedule::detail

namespace souffle::schedule {

std::optional<loop::Kernel> schedule_on_gemm_tiles(const te::ComputeOp& op,
                                                   const te::ComputeOp& gemm, const gpu::Tile& tile,
                                                   int64_t threads, const ScheduleConfig& config) {
  detail::GemmParts g;
  if (!detail::match_gemm(gemm, g) || threads <= 0) return std::nullopt;
  const int64_t group = detail::tile_alignment(op, gemm, g);
  if (group <= 0 || tile.bn % group != 0) return std::nullopt;
  return detail::schedule_tile_aligned(op, gemm, group, tile, threads, config);
}

}  // namespace souffle::schedule
