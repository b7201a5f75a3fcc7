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

bool match_gemm(const te::ComputeOp& op, GemmParts& g) {
  if (op.reduce != te::ReduceKind::Sum || op.reduce_axes.empty()) return false;
  const te::Binary* mul = op.body.as<te::Binary>();
  if (!mul || mul->op != te::BinaryOp::Mul) return false;
  auto va = vars_of(mul->a), vb = vars_of(mul->b);
  g = {};
  for (const te::IterVar& ax : op.axes) {
    bool in_a = va.count(ax.var.get()), in_b = vb.count(ax.var.get());
    if (in_a && !in_b)
      g.rows.push_back(ax);
    else if (in_b && !in_a)
      g.cols.push_back(ax);
    else
      g.batch.push_back(ax);
  }
  // a provides the rows, b the columns; swap when the product is written the other way round.
  g.a = mul->a;
  g.b = mul->b;
  if (g.rows.empty() || g.cols.empty()) return false;
  for (const te::IterVar& k : op.reduce_axes)
    if (!va.count(k.var.get()) && !vb.count(k.var.get())) return false;
  return true;
}

Kernel schedule_gemm(const te::ComputeOp& op, const GemmParts& g, const ScheduleConfig& c) {
  Frame f;
  const int64_t bm = c.gemm_bm, bn = c.gemm_bn, bk = c.gemm_bk, tm = c.gemm_tm, tn = c.gemm_tn;
  SOUFFLE_CHECK(bm % tm == 0 && bn % tn == 0, "gemm tile must divide by the register tile");
  const int64_t threads = (bm / tm) * (bn / tn);
  const int64_t p = extent_product(g.batch), m = extent_product(g.rows), n = extent_product(g.cols),
                kdim = extent_product(op.reduce_axes);
  const int64_t mt = ceil_div(m, bm), nt = ceil_div(n, bn), grid = p * mt * nt;
  DType t = op.output->dtype;
  Tensor sa = loop::make_buffer(op.name + "_a", {bm, bk}, g.a.dtype());
  Tensor sb = loop::make_buffer(op.name + "_b", {bk, bn}, g.b.dtype());
  Tensor acc = loop::make_buffer(op.name + "_acc", {tm, tn}, t);
  Expr pb = te::var("pb"), mb = te::var("mb"), nb = te::var("nb"), ty = te::var("ty"),
       tc = te::var("tc"), ko = te::var("ko"), kk = te::var("kk"), r = te::var("r"),
       cc = te::var("c");

  // A cooperative tile load: each thread copies elements e = l*threads + tx of the tile.

  auto tile_load = [&](const Tensor& buf, int64_t tr, int64_t tcn, bool is_a) {
    std::string tag = is_a ? "a" : "b";
    Expr l = te::var("l" + tag), e = te::var("e" + tag), ii = te::var("i" + tag),
         jj = te::var("j" + tag), gi = te::var("gi" + tag), gj = te::var("gj" + tag);
    Expr value = is_a ? g.a : g.b;
    // For A the tile is [rows, k]; for B it is [k, cols].
    Expr grow = is_a ? mb * ic(bm) + ii : ko * ic(bk) + ii;
    Expr gcol = is_a ? ko * ic(bk) + jj : nb * ic(bn) + jj;
    int64_t lim_r = is_a ? m : kdim, lim_c = is_a ? kdim : n;
    Expr in = te::logical_and(te::lt(gi, ic(lim_r)), te::lt(gj, ic(lim_c)));
    Stmt st = loop::store(buf, {ii, jj}, te::select(in, value, te::imm(value.dtype(), 0)));
    st = bind_flat(op.reduce_axes, is_a ? gj : gi, st);
    st = bind_flat(is_a ? g.rows : g.cols, is_a ? gi : gj, st);
    st = bind_flat(g.batch, pb, st);
    st = loop::let_stmt(gi, grow, loop::let_stmt(gj, gcol, st));
    st = loop::let_stmt(ii, te::floordiv(e, ic(tcn)),
                        loop::let_stmt(jj, te::floormod(e, ic(tcn)), st));
    st = loop::if_then_else(te::lt(e, ic(tr * tcn)), st);
    return loop::make_for(l, ceil_div(tr * tcn, threads), ForKind::Serial,
                          loop::let_stmt(e, l * ic(threads) + f.tx, st));
  };

  std::vector<Stmt> body;
  body.push_back(loop::make_for(
      r, tm, ForKind::Unrolled,
      loop::make_for(cc, tn, ForKind::Unrolled,
                     loop::store(acc, {r, cc}, te::reduce_identity(te::ReduceKind::Sum, t)))));
  Expr prod = te::read(sa, {ty * ic(tm) + r, kk}) * te::read(sb, {kk, tc * ic(tn) + cc});
  if (prod.dtype() != t) prod = te::cast(t, prod);
  Stmt mac = loop::store(acc, {r, cc}, te::read(acc, {r, cc}) + prod);
  Stmt kstep =
      loop::seq({tile_load(sa, bm, bk, true), tile_load(sb, bk, bn, false), loop::block_barrier(),
                 loop::make_for(kk, bk, ForKind::Serial,
                                loop::make_for(r, tm, ForKind::Unrolled,
                                               loop::make_for(cc, tn, ForKind::Unrolled, mac))),
                 loop::block_barrier()});
  body.push_back(loop::make_for(ko, ceil_div(kdim, bk), ForKind::Serial, kstep));

  Expr gi = te::var("gi"), gj = te::var("gj");
  Stmt out = loop::store(op.output, axis_vars(op), with_init(op, te::read(acc, {r, cc})));
  out = bind_flat(g.cols, gj, out);
  out = bind_flat(g.rows, gi, out);
  out = bind_flat(g.batch, pb, out);
  out = loop::if_then_else(te::logical_and(te::lt(gi, ic(m)), te::lt(gj, ic(n))), out);
  out = loop::let_stmt(gi, mb * ic(bm) + ty * ic(tm) + r,
                       loop::let_stmt(gj, nb * ic(bn) + tc * ic(tn) + cc, out));
  body.push_back(
      loop::make_for(r, tm, ForKind::Unrolled, loop::make_for(cc, tn, ForKind::Unrolled, out)));

  Stmt inner = loop::seq(std::move(body));
  inner = loop::let_stmt(ty, te::floordiv(f.tx, ic(bn / tn)),
                         loop::let_stmt(tc, te::floormod(f.tx, ic(bn / tn)), inner));
  inner = loop::let_stmt(pb, te::floordiv(f.bx, ic(mt * nt)),
                         loop::let_stmt(mb, te::floormod(te::floordiv(f.bx, ic(nt)), ic(mt)),
                                        loop::let_stmt(nb, te::floormod(f.bx, ic(nt)), inner)));
  inner = loop::allocate(
      sa, MemScope::Shared,
      loop::allocate(sb, MemScope::Shared, loop::allocate(acc, MemScope::Local, inner)));
  return finish(op, f, inner, grid, threads,
                "gemm " + std::to_string(bm) + "x" + std::to_string(bn) + "x" + std::to_string(bk) +
                    " tile " + std::to_string(tm) + "x" + std::to_string(tn));
}

}  // namespace souffle::schedule::detail
