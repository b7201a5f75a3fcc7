// The fused attention stage: QK^T, softmax and x V of a head in one tiled stage with an online
// softmax (running row max and sum, the accumulator rescaled as the max grows), the scores kept
// in a shared tile.
#include "core/schedule/attention.h"

#include <fmt/format.h>
#include <functional>

#include "core/loop/stmt.h"
#include "core/schedule/attention_parts.h"
#include "core/schedule/template_util.h"
#include "core/te/builder.h"
#include "core/te/mutator.h"

namespace souffle::schedule {

using namespace detail;
using loop::ForKind;
using loop::Kernel;
using loop::MemScope;
using loop::Stmt;
using te::Expr;
using te::Tensor;

namespace {

constexpr int64_t kAttentionShared = 48 * 1024;

int64_t pow2_at_least(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

}  // namespace

AttentionTile attention_tile(const plan::AttentionMatch& a, const ScheduleConfig& c,
                             std::string* why) {
  if (AttentionTile mma = attention_mma_tile(a, c); mma.br > 0) return mma;
  AttentionTile t;
  t.threads = c.exact_block ? c.block : 128;
  for (int64_t b : {32, 16, 8}) {
    const int64_t br = std::min(b, pow2_at_least(a.rows_n)),
                  bc = std::min(b, pow2_at_least(a.keys_n));
    const int64_t bytes =
        4 * (br * a.head_dim + bc * a.head_dim + bc * a.value_dim + br * bc + 3 * br);
    if (bytes <= kAttentionShared) {
      t.br = br;
      t.bc = bc;
      t.shared_bytes = bytes;
      return t;
    }
  }
  if (why)
    *why = fmt::format("a head of {} x {} values needs more than {} B of shared tiles", a.head_dim,
                       a.value_dim, kAttentionShared);
  return t;
}

Kernel schedule_attention(const plan::AttentionMatch& a, const ScheduleConfig& c) {
  if (attention_mma_tile(a, c).br > 0) return schedule_attention_mma(a, c);
  std::string why;
  const AttentionTile t = attention_tile(a, c, &why);
  if (t.br == 0) throw std::runtime_error("fused attention: " + why);
  Frame f;
  const te::ComputeOp& s = *a.s;
  const te::ComputeOp& o = *a.o;
  const int64_t br = t.br, bc = t.bc, threads = t.threads, hd = a.head_dim, dv = a.value_dim;
  const int64_t mt = ceil_div(a.rows_n, br), key_tiles = ceil_div(a.keys_n, bc);
  const TileGrid tg(a.batch_n * mt, c);
  const DType f32 = DType::Float32;
  const std::string n = o.name;
  const Tensor qs = loop::make_buffer(n + "_q", {br, hd}, f32);
  const Tensor ks = loop::make_buffer(n + "_k", {bc, hd}, f32);
  const Tensor vs = loop::make_buffer(n + "_v", {bc, dv}, f32);
  const Tensor ps = loop::make_buffer(n + "_p", {br, bc}, f32);
  const Tensor mrow = loop::make_buffer(n + "_m", {br}, f32);
  const Tensor lrow = loop::make_buffer(n + "_l", {br}, f32);
  const Tensor alpha = loop::make_buffer(n + "_alpha", {br}, f32);
  const int64_t per_thread = ceil_div(br * dv, threads);
  const Tensor acc = loop::make_buffer(n + "_acc", {per_thread}, f32);
  const Tensor dot = loop::make_buffer(n + "_dot", {1}, f32);
  const Tensor rmax = loop::make_buffer(n + "_rmax", {1}, f32);
  const Tensor rsum = loop::make_buffer(n + "_rsum", {1}, f32);
  const Expr tile = te::var("tile"), pb = te::var("pb"), mb = te::var("mb"), kt = te::var("kt");
  const Expr neg_inf = te::reduce_identity(te::ReduceKind::Max, f32);
  const Expr zero = te::float_imm(0.0, f32);
  const Expr c0 = ic(0);

  auto per_elem = [&](const std::string& tag, int64_t count,
                      const std::function<Stmt(const Expr&, const Expr&)>& body) {
    return per_thread_elements(tag, count, threads, f.tx, body);
  };
  auto split = [](const Expr& e, const Expr& row, const Expr& col, int64_t cols, Stmt body) {
    return bind_row_col(e, row, col, cols, std::move(body));
  };
  auto read1 = [](const Tensor& b) { return te::read(b, {ic(0)}); };

  std::vector<Stmt> body;
  // Row statistics and the accumulator start empty; the block's Q rows go to shared memory.
  body.push_back(per_elem("init", br, [&](const Expr&, const Expr& e) {
    return loop::seq({loop::store(mrow, {e}, neg_inf), loop::store(lrow, {e}, zero)});
  }));
  body.push_back(per_elem("zero", br * dv,
                          [&](const Expr& l, const Expr&) { return loop::store(acc, {l}, zero); }));
  body.push_back(per_elem("q", br * hd, [&](const Expr&, const Expr& e) {
    Expr ri = te::var("qi"), d = te::var("qd"), gi = te::var("qgi");
    Stmt st =
        loop::store(qs, {ri, d}, te::select(te::lt(gi, ic(a.rows_n)), te::cast(f32, a.q), zero));
    st = bind_flat(s.reduce_axes, d, st);
    st = bind_flat(a.rows, gi, st);
    return split(e, ri, d, hd, loop::let_stmt(gi, mb * ic(br) + ri, st));
  }));

  // One key tile: K and V into shared memory.
  Stmt load_k = per_elem("k", bc * hd, [&](const Expr&, const Expr& e) {
    Expr cj = te::var("kj"), d = te::var("kd"), gj = te::var("kgj");
    Stmt st =
        loop::store(ks, {cj, d}, te::select(te::lt(gj, ic(a.keys_n)), te::cast(f32, a.k), zero));
    st = bind_flat(s.reduce_axes, d, st);
    st = bind_flat(a.keys, gj, st);
    return split(e, cj, d, hd, loop::let_stmt(gj, kt * ic(bc) + cj, st));
  });
  Stmt load_v = per_elem("v", bc * dv, [&](const Expr&, const Expr& e) {
    Expr cj = te::var("vj"), cv = te::var("vc"), gj = te::var("vgj");
    Stmt st =
        loop::store(vs, {cj, cv}, te::select(te::lt(gj, ic(a.keys_n)), te::cast(f32, a.v), zero));
    st = bind_flat(a.value_axes, cv, st);
    st = bind_flat(a.keys, gj, st);
    return split(e, cj, cv, dv, loop::let_stmt(gj, kt * ic(bc) + cj, st));
  });
  // The tile's scores: S's element from the shared tiles, then the softmax's input x of it
  // (scale, mask, bias read where x reads them); -inf outside the problem.
  Stmt scores = per_elem("s", br * bc, [&](const Expr&, const Expr& e) {
    Expr ri = te::var("si"), cj = te::var("sj"), gi = te::var("sgi"), gj = te::var("sgj"),
         d = te::var("sd");
    Stmt dotloop = loop::seq(
        {loop::store(dot, {c0}, zero),
         loop::make_for(
             d, hd, ForKind::Serial,
             loop::store(dot, {c0}, read1(dot) + te::read(qs, {ri, d}) * te::read(ks, {cj, d})))});
    Expr sval = with_init(s, te::cast(s.output->dtype, read1(dot)));
    Expr xv = te::rewrite_reads(a.x, [&](const te::Read& r, const std::vector<Expr>&) -> Expr {
      return r.tensor == s.output ? sval : Expr();
    });
    Expr in = te::logical_and(te::lt(gi, ic(a.rows_n)), te::lt(gj, ic(a.keys_n)));
    Stmt st = loop::store(ps, {ri, cj}, te::select(in, te::cast(f32, xv), neg_inf));
    st = bind_flat(a.keys, gj, st);
    st = bind_flat(a.rows, gi, st);
    st = loop::seq({dotloop, st});
    st = loop::let_stmt(gi, mb * ic(br) + ri, loop::let_stmt(gj, kt * ic(bc) + cj, st));
    return split(e, ri, cj, bc, st);
  });
  // Per row: the new max over the tile, the rescale of what came before, the tile's
  // probabilities against the new max (in place) and the running sum. A row whose max is still
  // -inf (all masked so far) takes 0 as its reference, so no inf - inf.
  Stmt stats = per_elem("r", br, [&](const Expr&, const Expr& e) {
    return online_softmax_row(e, bc, {ps, Tensor(), mrow, lrow, alpha, rmax, rsum});
  });
  // The accumulator: rescaled, plus the tile's probabilities times V.
  Stmt update = per_elem("o", br * dv, [&](const Expr& l, const Expr& e) {
    Expr ri = te::var("oi"), cv = te::var("oc"), cj = te::var("oj");
    Stmt st =
        loop::seq({loop::store(acc, {l}, te::read(acc, {l}) * te::read(alpha, {ri})),
                   loop::make_for(cj, bc, ForKind::Serial,
                                  loop::store(acc, {l},
                                              te::read(acc, {l}) + te::read(ps, {ri, cj}) *
                                                                       te::read(vs, {cj, cv})))});
    return split(e, ri, cv, dv, st);
  });
  // Every phase reads what the one before wrote; the first barrier ends the previous tile's
  // reads of K, V and the probabilities before they are overwritten.
  body.push_back(loop::make_for(
      kt, key_tiles, ForKind::Serial,
      loop::seq({loop::block_barrier(), load_k, load_v, loop::block_barrier(), scores,
                 loop::block_barrier(), stats, loop::block_barrier(), update})));
  // O = accumulator / row sum, the stage's only global store.
  body.push_back(per_elem("w", br * dv, [&](const Expr& l, const Expr& e) {
    Expr ri = te::var("wi"), cv = te::var("wc"), gi = te::var("wgi");
    Expr val = with_init(o, te::cast(o.output->dtype, te::read(acc, {l}) / te::read(lrow, {ri})));
    Stmt st = loop::store(o.output, a.out_index, val);
    st = bind_flat(a.value_axes, cv, st);
    st = bind_flat(a.rows, gi, st);
    st = loop::if_then_else(te::lt(gi, ic(a.rows_n)), st);
    return split(e, ri, cv, dv, loop::let_stmt(gi, mb * ic(br) + ri, st));
  }));
  // The block's next tile (grid-capped rounds) rewrites the row statistics read above.
  body.push_back(loop::block_barrier());

  Stmt inner = bind_flat(a.batch, pb, loop::seq(std::move(body)));
  inner = loop::let_stmt(pb, te::floordiv(tile, ic(mt)),
                         loop::let_stmt(mb, te::floormod(tile, ic(mt)), inner));
  inner = tg.wrap(f, tile, inner);
  for (const Tensor& b : {acc, dot, rmax, rsum}) inner = loop::allocate(b, MemScope::Local, inner);
  for (const Tensor& b : {qs, ks, vs, ps, mrow, lrow, alpha})
    inner = loop::allocate(b, MemScope::Shared, inner);
  std::string schedule = fmt::format(
      "fused attention (online softmax): {} query rows x {} keys per tile, head {} -> {}, {} "
      "blocks of {} threads{}; scores {} and probabilities {} stay on chip ({} B not written)",
      br, bc, hd, dv, tg.grid, threads, tg.describe(), s.name, a.p->name, a.score_bytes());
  return finish(a.ops, {o.output}, f, inner, tg.grid, threads, std::move(schedule));
}

}  // namespace souffle::schedule
