// The fused attention stage on tensor cores (fp16 and bf16 compute): QK^T and P V as mma.sync
// m16n8k16 from ldmatrix fragments, the online softmax between them over a shared score tile
// (docs/attention.md). The shared tiles' rows are padded by 16 bytes to an odd number of 16-byte
// chunks, so that ldmatrix's eight row addresses of a matrix hit distinct banks.
#include <fmt/format.h>

#include <algorithm>
#include <functional>

#include "core/loop/stmt.h"
#include "core/schedule/attention.h"
#include "core/schedule/attention_parts.h"
#include "core/schedule/gemm_operands.h"
#include "core/schedule/template_util.h"
#include "core/te/builder.h"
#include "core/te/mutator.h"

namespace souffle::schedule {

using namespace detail;
using loop::ForKind;
using loop::FragmentRole;
using loop::Kernel;
using loop::MemScope;
using loop::MmaType;
using loop::Stmt;
using te::Expr;
using te::Tensor;

namespace {

constexpr int64_t kShared = int64_t{48} * 1024;
constexpr int64_t kKeys = 32;  ///< keys per tile: two k16 steps of P V, four n8 tiles of S

int64_t round_up(int64_t n, int64_t to) {
  return (n + to - 1) / to * to;
}

/// The padded row of a shared f16/bf16 tile of `cols` columns (a multiple of 16): 8 more
/// elements, an odd number of 16-byte chunks.
int64_t padded(int64_t cols) {
  return cols + 8;
}

struct MmaShape {
  int64_t warps = 0, br = 0, hd = 0, dv = 0;  ///< hd, dv: the head and value widths padded
  int64_t bytes = 0;
};

MmaShape mma_shape(const plan::AttentionMatch& a, int64_t threads) {
  MmaShape s;
  if (threads % loop::kWarpSize != 0) return s;
  s.warps = threads / loop::kWarpSize;
  // Query rows: 16 per m tile, as many m tiles as half the warps (at least two), so that the
  // (m tile, pair of n8 tiles) units of S (two pairs a key tile) and of O (value columns padded
  // to a multiple of 32: an even number of pairs) divide evenly among the warps.
  s.br = 16 * std::max<int64_t>(2, s.warps / 2);
  s.hd = round_up(a.head_dim, 16);
  s.dv = round_up(a.value_dim, 32);
  // An odd number of warps above one (a kernel's block of 96 or 160 threads) shares neither.
  const int64_t m_tiles = s.br / 16;
  if ((m_tiles * (kKeys / 16)) % s.warps != 0 || (m_tiles * (s.dv / 16)) % s.warps != 0) {
    s.warps = 0;
    return s;
  }
  s.bytes = 2 * (s.br * padded(s.hd) + kKeys * padded(s.hd) + kKeys * padded(s.dv) +
                 s.br * padded(kKeys)) +
            4 * (s.br * (kKeys + 4) + 3 * s.br);
  return s;
}

}  // namespace

AttentionTile attention_mma_tile(const plan::AttentionMatch& a, const ScheduleConfig& c) {
  AttentionTile t;
  const bool half = c.precision == gpu::Precision::FP16 || c.precision == gpu::Precision::BF16;
  if (!half || !c.mma_mainloop) return t;
  const int64_t threads = c.exact_block ? c.block : 128;
  const MmaShape s = mma_shape(a, threads);
  if (s.warps == 0 || s.bytes > kShared) return t;
  t.br = s.br;
  t.bc = kKeys;
  t.threads = threads;
  t.shared_bytes = s.bytes;
  t.tensor_cores = true;
  return t;
}

Kernel schedule_attention_mma(const plan::AttentionMatch& a, const ScheduleConfig& c) {
  const AttentionTile t = attention_mma_tile(a, c);
  SOUFFLE_CHECK(t.tensor_cores, "attention on tensor cores asked for a chain it does not take");
  const MmaShape sh = mma_shape(a, t.threads);
  Frame f;
  const te::ComputeOp& s = *a.s;
  const te::ComputeOp& o = *a.o;
  const MmaType mt = mma_type_of(c.precision);
  const DType ct = loop::mma_storage_dtype(mt);
  const DType f32 = DType::Float32;
  const int64_t br = sh.br, bc = kKeys, hd = sh.hd, dv = sh.dv, threads = t.threads;
  const int64_t warps = sh.warps;
  const int64_t m_tiles = br / 16, s_units = m_tiles * (bc / 16), o_units = m_tiles * (dv / 16);
  const int64_t s_per = s_units / warps, o_per = o_units / warps;
  SOUFFLE_CHECK(s_per * warps == s_units && o_per * warps == o_units,
                "attention on tensor cores: units do not divide among the warps");
  const int64_t row_tiles = ceil_div(a.rows_n, br), key_tiles = ceil_div(a.keys_n, bc);
  const TileGrid tg(a.batch_n * row_tiles, c);
  const std::string n = o.name;
  const Tensor qs = loop::make_buffer(n + "_q", {br, padded(hd)}, ct);
  const Tensor ks = loop::make_buffer(n + "_k", {bc, padded(hd)}, ct);
  const Tensor vs = loop::make_buffer(n + "_v", {bc, padded(dv)}, ct);
  const Tensor ps = loop::make_buffer(n + "_s", {br, bc + 4}, f32);
  const Tensor ph = loop::make_buffer(n + "_p", {br, padded(bc)}, ct);
  const Tensor mrow = loop::make_buffer(n + "_m", {br}, f32);
  const Tensor lrow = loop::make_buffer(n + "_l", {br}, f32);
  const Tensor alpha = loop::make_buffer(n + "_alpha", {br}, f32);
  const int64_t na = loop::mma_sync_elements(mt, FragmentRole::MatrixA),
                nb = loop::mma_sync_elements(mt, FragmentRole::MatrixB);
  const Tensor ra = loop::make_buffer(n + "_ra", {na}, ct);
  const Tensor rb = loop::make_buffer(n + "_rb", {2 * nb}, ct);
  const Tensor acc_s = loop::make_buffer(n + "_acc_s", {s_per * 8}, f32);
  const Tensor acc_o = loop::make_buffer(n + "_acc_o", {o_per * 8}, f32);
  const Tensor rmax = loop::make_buffer(n + "_rmax", {1}, f32);
  const Tensor rsum = loop::make_buffer(n + "_rsum", {1}, f32);
  const Expr tile = te::var("tile"), pb = te::var("pb"), mb = te::var("mb"), kt = te::var("kt");
  const Expr warp = te::var("warp"), lane = te::var("lane");
  const Expr g4 = te::floordiv(lane, ic(4)), t4 = te::floormod(lane, ic(4));
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
  // Warp `warp`'s unit u of `per` (a 16-row m tile and a pair of n8 tiles): binds the tile's
  // first row and column.
  auto unit = [&](const Expr& u, int64_t per, int64_t pairs, const Expr& row0, const Expr& col0,
                  Stmt body) {
    Expr id = te::var("unit");
    return loop::let_stmt(id, warp * ic(per) + u,
                          loop::let_stmt(row0, te::floordiv(id, ic(pairs)) * ic(16),
                                         loop::let_stmt(col0, te::floormod(id, ic(pairs)) * ic(16),
                                                        std::move(body))));
  };
  // ldmatrix.x4 of A (16 x 16 at (row0, k0), row-major): lane l gives row l % 16 at column
  // (l / 16) * 8.
  auto load_a = [&](const Tensor& src, const Expr& row0, const Expr& k0) {
    return loop::matrix_load(
        ra, c0, 4, false, src,
        {row0 + te::floormod(lane, ic(16)), k0 + te::floordiv(lane, ic(16)) * ic(8)});
  };
  // Two n8 tiles of B (16 x 16 at (k0, col0)) into rb: from a k x n row-major tile with
  // ldmatrix.x4.trans (lane l gives k row l % 16 of columns col0 + (l / 16) * 8), or from an
  // n x k row-major tile (K's rows) without .trans (lane l gives n row col0 + (l / 16) * 8 +
  // l % 8 at k column k0 + ((l / 8) % 2) * 8: matrices (n tile, k half) in the order of the
  // fragment's registers).
  auto load_b = [&](const Tensor& src, bool n_by_k, const Expr& k0, const Expr& col0) {
    if (!n_by_k) {
      return loop::matrix_load(
          rb, c0, 4, true, src,
          {k0 + te::floormod(lane, ic(16)), col0 + te::floordiv(lane, ic(16)) * ic(8)});
    }
    return loop::matrix_load(rb, c0, 4, false, src,
                             {col0 + te::floordiv(lane, ic(16)) * ic(8) + te::floormod(lane, ic(8)),
                              k0 + te::floormod(te::floordiv(lane, ic(8)), ic(2)) * ic(8)});
  };
  // d[off + 4 jj ...] += A x (n8 tile jj of B), for both tiles of the pair.
  auto mmas = [&](const Tensor& acc, const Expr& off) {
    Expr jj = te::var("jj");
    return loop::make_for(
        jj, 2, ForKind::Unrolled,
        loop::mma_sync(mt, acc, off + jj * ic(4), ra, c0, rb, jj * ic(nb), acc, off + jj * ic(4)));
  };
  // Accumulator element e (of 8: two n8 tiles of 4) of a unit at (row0, col0): its row and
  // column in the tile.
  auto frag_row = [&](const Expr& row0, const Expr& e) {
    return row0 + g4 + te::floormod(te::floordiv(e, ic(2)), ic(2)) * ic(8);
  };
  auto frag_col = [&](const Expr& col0, const Expr& e) {
    return col0 + te::floordiv(e, ic(4)) * ic(8) + t4 * ic(2) + te::floormod(e, ic(2));
  };

  std::vector<Stmt> body;
  body.push_back(per_elem("init", br, [&](const Expr&, const Expr& e) {
    return loop::seq({loop::store(mrow, {e}, neg_inf), loop::store(lrow, {e}, zero)});
  }));
  {
    Expr i = te::var("i");
    body.push_back(loop::make_for(i, o_per * 8, ForKind::Unrolled, loop::store(acc_o, {i}, zero)));
  }
  // Q's rows of the block, converted, zero past the rows and the head.
  body.push_back(per_elem("q", br * hd, [&](const Expr&, const Expr& e) {
    Expr ri = te::var("qi"), d = te::var("qd"), gi = te::var("qgi");
    Expr in = te::logical_and(te::lt(gi, ic(a.rows_n)), te::lt(d, ic(a.head_dim)));
    Stmt st = loop::store(qs, {ri, d}, te::select(in, te::cast(ct, a.q), te::imm(ct, 0)));
    st = bind_flat(s.reduce_axes, d, st);
    st = bind_flat(a.rows, gi, st);
    return split(e, ri, d, hd, loop::let_stmt(gi, mb * ic(br) + ri, st));
  }));

  // One key tile: K's rows and V's rows, converted, zero past the keys, head and value width.
  Stmt load_k = per_elem("k", bc * hd, [&](const Expr&, const Expr& e) {
    Expr cj = te::var("kj"), d = te::var("kd"), gj = te::var("kgj");
    Expr in = te::logical_and(te::lt(gj, ic(a.keys_n)), te::lt(d, ic(a.head_dim)));
    Stmt st = loop::store(ks, {cj, d}, te::select(in, te::cast(ct, a.k), te::imm(ct, 0)));
    st = bind_flat(s.reduce_axes, d, st);
    st = bind_flat(a.keys, gj, st);
    return split(e, cj, d, hd, loop::let_stmt(gj, kt * ic(bc) + cj, st));
  });
  Stmt load_v = per_elem("v", bc * dv, [&](const Expr&, const Expr& e) {
    Expr cj = te::var("vj"), cv = te::var("vc"), gj = te::var("vgj");
    Expr in = te::logical_and(te::lt(gj, ic(a.keys_n)), te::lt(cv, ic(a.value_dim)));
    Stmt st = loop::store(vs, {cj, cv}, te::select(in, te::cast(ct, a.v), te::imm(ct, 0)));
    st = bind_flat(a.value_axes, cv, st);
    st = bind_flat(a.keys, gj, st);
    return split(e, cj, cv, dv, loop::let_stmt(gj, kt * ic(bc) + cj, st));
  });
  // The tile's scores on tensor cores, then the softmax's input x of each (scale, mask, bias
  // read where x reads them) from the accumulator registers into the shared score tile; -inf
  // outside the problem.
  Stmt scores;
  {
    Expr u = te::var("su"), row0 = te::var("srow0"), col0 = te::var("scol0"), kk = te::var("sk"),
         e = te::var("se"), i = te::var("si");
    std::vector<Stmt> one;
    one.push_back(
        loop::make_for(i, 8, ForKind::Unrolled, loop::store(acc_s, {u * ic(8) + i}, zero)));
    one.push_back(
        loop::make_for(kk, hd / 16, ForKind::Serial,
                       loop::seq({load_a(qs, row0, kk * ic(16)),
                                  load_b(ks, true, kk * ic(16), col0), mmas(acc_s, u * ic(8))})));
    Expr ri = te::var("sri"), cj = te::var("scj"), gi = te::var("sgi"), gj = te::var("sgj");
    Expr sval = with_init(s, te::cast(s.output->dtype, te::read(acc_s, {u * ic(8) + e})));
    Expr xv = te::rewrite_reads(a.x, [&](const te::Read& r, const std::vector<Expr>&) -> Expr {
      return r.tensor == s.output ? sval : Expr();
    });
    Expr in = te::logical_and(te::lt(gi, ic(a.rows_n)), te::lt(gj, ic(a.keys_n)));
    Stmt st = loop::store(ps, {ri, cj}, te::select(in, te::cast(f32, xv), neg_inf));
    st = bind_flat(a.keys, gj, st);
    st = bind_flat(a.rows, gi, st);
    st = loop::let_stmt(gi, mb * ic(br) + ri, loop::let_stmt(gj, kt * ic(bc) + cj, st));
    st = loop::let_stmt(ri, frag_row(row0, e), loop::let_stmt(cj, frag_col(col0, e), st));
    one.push_back(loop::make_for(e, 8, ForKind::Unrolled, st));
    scores = loop::make_for(u, s_per, ForKind::Unrolled,
                            unit(u, s_per, bc / 16, row0, col0, loop::seq(std::move(one))));
  }
  // Per row (a thread each): the new max over the tile, the rescale of what came before, the
  // tile's probabilities against the new max (converted for the next MMAs) and the running sum.
  // A row whose max is still -inf (all masked so far) takes 0 as its reference.
  Stmt stats = per_elem("r", br, [&](const Expr&, const Expr& e) {
    return online_softmax_row(e, bc, {ps, ph, mrow, lrow, alpha, rmax, rsum});
  });
  // The accumulator of O: each element rescaled by its row's alpha, plus P V on tensor cores.
  Stmt update;
  {
    Expr u = te::var("ou"), row0 = te::var("orow0"), col0 = te::var("ocol0"), kk = te::var("ok"),
         e = te::var("oe");
    Expr at = u * ic(8) + e;
    Stmt rescale = loop::make_for(
        e, 8, ForKind::Unrolled,
        loop::store(acc_o, {at}, te::read(acc_o, {at}) * te::read(alpha, {frag_row(row0, e)})));
    Stmt pv =
        loop::make_for(kk, bc / 16, ForKind::Serial,
                       loop::seq({load_a(ph, row0, kk * ic(16)),
                                  load_b(vs, false, kk * ic(16), col0), mmas(acc_o, u * ic(8))}));
    update = loop::make_for(u, o_per, ForKind::Unrolled,
                            unit(u, o_per, dv / 16, row0, col0, loop::seq({rescale, pv})));
  }
  // Every phase reads what the one before wrote; the first barrier ends the previous tile's
  // reads of K, V and the probabilities before they are overwritten.
  body.push_back(loop::make_for(
      kt, key_tiles, ForKind::Serial,
      loop::seq({loop::block_barrier(), load_k, load_v, loop::block_barrier(), scores,
                 loop::block_barrier(), stats, loop::block_barrier(), update})));
  // O = accumulator / row sum from the registers, the stage's only global store.
  {
    Expr u = te::var("wu"), row0 = te::var("wrow0"), col0 = te::var("wcol0"), e = te::var("we");
    Expr ri = te::var("wi"), cv = te::var("wc"), gi = te::var("wgi");
    Expr val = with_init(
        o, te::cast(o.output->dtype, te::read(acc_o, {u * ic(8) + e}) / te::read(lrow, {ri})));
    Stmt st = loop::store(o.output, a.out_index, val);
    st = bind_flat(a.value_axes, cv, st);
    st = bind_flat(a.rows, gi, st);
    st = loop::if_then_else(te::logical_and(te::lt(gi, ic(a.rows_n)), te::lt(cv, ic(a.value_dim))),
                            st);
    st = loop::let_stmt(
        ri, frag_row(row0, e),
        loop::let_stmt(cv, frag_col(col0, e), loop::let_stmt(gi, mb * ic(br) + ri, st)));
    body.push_back(loop::make_for(
        u, o_per, ForKind::Unrolled,
        unit(u, o_per, dv / 16, row0, col0, loop::make_for(e, 8, ForKind::Unrolled, st))));
  }
  // The block's next tile (grid-capped rounds) rewrites the row statistics read above.
  body.push_back(loop::block_barrier());

  Stmt inner = bind_flat(a.batch, pb, loop::seq(std::move(body)));
  inner = loop::let_stmt(warp, te::floordiv(f.tx, ic(loop::kWarpSize)),
                         loop::let_stmt(lane, te::floormod(f.tx, ic(loop::kWarpSize)), inner));
  inner = loop::let_stmt(pb, te::floordiv(tile, ic(row_tiles)),
                         loop::let_stmt(mb, te::floormod(tile, ic(row_tiles)), inner));
  inner = tg.wrap(f, tile, inner);
  for (const Tensor& b : {ra, rb, acc_s, acc_o, rmax, rsum})
    inner = loop::allocate(b, MemScope::Local, inner);
  for (const Tensor& b : {qs, ks, vs, ps, ph, mrow, lrow, alpha})
    inner = loop::allocate(b, MemScope::Shared, inner);
  std::string schedule = fmt::format(
      "fused attention (online softmax) on tensor cores: {} query rows x {} keys per tile, head "
      "{} -> {} ({} x {} padded), QK^T and PV by ldmatrix + mma.sync m16n8k16 {}, {} warps, {} "
      "blocks of {} threads{}; scores {} and probabilities {} stay on chip ({} B not written)",
      br, bc, a.head_dim, a.value_dim, hd, dv, loop::mma_type_name(mt), warps, tg.grid, threads,
      tg.describe(), s.name, a.p->name, a.score_bytes());
  return finish(a.ops, {o.output}, f, inner, tg.grid, threads, std::move(schedule));
}

}  // namespace souffle::schedule
