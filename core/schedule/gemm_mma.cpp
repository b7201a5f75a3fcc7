// The Ampere-class tensor-core GEMM mainloop (docs/mainloop.md): operand tiles stream into a
// ring of shared-memory stages (cp.async where the operand is a plain row-major read of the
// compute type, converted through registers one stage ahead otherwise), XOR-swizzled so that
// neither the copies nor ldmatrix meet a bank conflict; warps multiply with mma.sync from
// per-lane registers and compute the epilogue from the accumulator registers.
#include <algorithm>
#include <functional>
#include <unordered_map>

#include "core/loop/stmt.h"
#include "core/schedule/gemm_operands.h"
#include "core/schedule/template_util.h"
#include "core/te/builder.h"
#include "core/te/mutator.h"

namespace souffle::schedule::detail {

using loop::ForKind;
using loop::FragmentRole;
using loop::Kernel;
using loop::MemScope;
using loop::MmaType;
using loop::Stmt;
using te::Expr;
using te::Tensor;

namespace {

constexpr int64_t kFrag = 16;  // the tile's fragment edge (gpu::Tile counts 16x16 fragments)

/// How a shared operand tile is laid out: rows of `cols` elements in 16-byte chunks, chunk c of
/// row r stored at chunk c ^ f(r).
enum class Swizzle : uint8_t {
  None,
  /// f spreads 8 consecutive rows over the 8 chunk positions of a 128-byte line: ldmatrix's
  /// eight row addresses, and 16-byte copies of consecutive chunks, hit distinct banks.
  Rows8,
  /// f(r) = 2 (r % 4) (rows of 8 or more chunks): the tf32 B fragment's 32-bit loads (rows
  /// t and t + 4, eight consecutive columns) hit distinct banks.
  Tf32B,
};

struct Layout {
  Swizzle swz = Swizzle::None;
  int64_t epc = 8;  ///< elements per 16-byte chunk
  int64_t cpr = 1;  ///< chunks per row
  /// The physical column of logical (row, col).
  Expr column(const Expr& row, const Expr& col) const {
    if (swz == Swizzle::None || cpr < 2) return col;
    Expr f;
    if (swz == Swizzle::Tf32B && cpr >= 8) {
      f = te::floormod(row, ic(4)) * ic(2);
    } else if (cpr >= 8) {
      f = te::floormod(row, ic(8));
    } else {
      f = te::floormod(te::floordiv(row, ic(8 / cpr)), ic(cpr));
    }
    Expr chunk = te::binary(te::BinaryOp::BitXor, te::floordiv(col, ic(epc)), f);
    return chunk * ic(epc) + te::floormod(col, ic(epc));
  }
};

Layout layout_for(int64_t cols, int64_t es, Swizzle want) {
  Layout l;
  l.epc = 16 / es;
  l.cpr = cols * es / 16;
  // The XOR stays inside a row when the chunks come in whole groups of 8, or are 1, 2 or 4.
  const bool ok = cols * es % 16 == 0 && (l.cpr % 8 == 0 || l.cpr == 1 || l.cpr == 2 || l.cpr == 4);
  l.swz = ok ? want : Swizzle::None;
  if (want == Swizzle::Tf32B && l.cpr < 8) l.swz = ok ? Swizzle::Rows8 : Swizzle::None;
  return l;
}

}  // namespace

int64_t mma_stage_bytes(const gpu::Tile& t, gpu::Precision precision) {
  return gpu::mma_mainloop(t, {}, precision).stage_bytes;
}

int64_t mma_pipeline_stages(const gpu::Tile& t, gpu::Precision precision,
                            int64_t max_shared_per_block) {
  const int64_t per = std::max<int64_t>(1, mma_stage_bytes(t, precision));
  for (int64_t s : {3, 2})
    if (s * per <= max_shared_per_block) return s;
  return 2;
}

gpu::MmaOperands mma_operands(const te::ComputeOp& op, const GemmParts& g) {
  // The tensor's own type: whether the precision's compute type matches is mma_mainloop's call.
  auto elem = [](const Expr& v, const std::vector<te::IterVar>& outer,
                 const std::vector<te::IterVar>& inner) {
    for (auto [t, e] : {std::pair{DType::Float16, gpu::MmaElem::F16},
                        std::pair{DType::BFloat16, gpu::MmaElem::BF16},
                        std::pair{DType::Float32, gpu::MmaElem::F32}})
      if (direct_copy_bytes(v, t, outer, inner, kFrag) > 0) return e;
    return gpu::MmaElem::None;
  };
  return {elem(g.a, g.rows, op.reduce_axes), elem(g.b, op.reduce_axes, g.cols)};
}

Kernel schedule_gemm_mma(const te::ComputeOp& op, const GemmParts& g,
                         const std::vector<const te::ComputeOp*>& epilogue,
                         const std::vector<Tensor>& on_chip, const ScheduleConfig& c,
                         const MmaOptions& opts) {
  Frame f;
  const MmaType mt = mma_type_of(c.precision);
  const DType ct = loop::mma_storage_dtype(mt);
  const int64_t es = dtype_size(ct);
  const bool tf32 = mt == MmaType::TF32;
  const int64_t ks = loop::mma_sync_k(mt);
  const TcBlockTile tt = tc_block_tile(c, ks, "gemm_mma");
  const int64_t bm = tt.bm, bn = tt.bn, bk = tt.bk, wc = tt.wc;
  const int64_t threads = tt.threads();
  const int64_t p = extent_product(g.batch), m = extent_product(g.rows), n = extent_product(g.cols),
                kdim = extent_product(op.reduce_axes);
  const int64_t mtiles = ceil_div(m, bm), ntiles = ceil_div(n, bn);
  const TileGrid tg(p * mtiles * ntiles, c);
  const Expr tile = te::var("tile");
  const int64_t ksteps = ceil_div(kdim, bk);

  // Per operand: cp.async when a plain row-major read of the compute type, or of an f32 tensor
  // under fp16/bf16 where the tile asks for an f32 ring (wide); else staged.
  const int64_t a_same = direct_copy_bytes(g.a, ct, g.rows, op.reduce_axes, bk);
  const int64_t b_same = direct_copy_bytes(g.b, ct, op.reduce_axes, g.cols, bn);
  const int64_t a_f32 =
      tf32 || a_same > 0 ? 0 : direct_copy_bytes(g.a, DType::Float32, g.rows, op.reduce_axes, bk);
  const int64_t b_f32 =
      tf32 || b_same > 0 ? 0 : direct_copy_bytes(g.b, DType::Float32, op.reduce_axes, g.cols, bn);
  // The ring's depth and the prefetch of converted operands, as the resources model and the
  // tuner see them (gpu::mma_mainloop): the config's depth, else the tuned tile's, else the
  // default.
  gpu::Tile as_tile{bm, bn, bk, tt.fm, tt.fn, false, true};
  as_tile.stages = c.mma_stages > 0 ? c.mma_stages : c.tc_tile.stages;
  as_tile.f32_ring = c.tc_tile.f32_ring;
  const gpu::MmaElem same = tf32                                  ? gpu::MmaElem::F32
                            : c.precision == gpu::Precision::BF16 ? gpu::MmaElem::BF16
                                                                  : gpu::MmaElem::F16;
  auto elem = [&](int64_t same_bytes, int64_t f32_bytes) {
    return same_bytes > 0 ? same : f32_bytes > 0 ? gpu::MmaElem::F32 : gpu::MmaElem::None;
  };
  const gpu::MmaMainloop ml =
      gpu::mma_mainloop(as_tile, {elem(a_same, a_f32), elem(b_same, b_f32)}, c.precision);
  const int64_t stages = ml.stages;
  const bool a_wide = ml.a_wide, b_wide = ml.b_wide;
  const int64_t a_bytes = a_wide ? a_f32 : a_same, b_bytes = b_wide ? b_f32 : b_same;
  const bool any_async = a_bytes > 0 || b_bytes > 0;

  const Layout la = layout_for(bk, es, opts.swizzle ? Swizzle::Rows8 : Swizzle::None);
  const Layout lb = layout_for(bn, es,
                               !opts.swizzle ? Swizzle::None
                               : tf32        ? Swizzle::Tf32B
                                             : Swizzle::Rows8);
  // A wide operand's ring holds f32, swizzled for its 16-byte copies; each K step converts the
  // stage into a compute-type tile of the ldmatrix layout above (ca, cb), which the fragments
  // are loaded from: ldmatrix cannot convert. (Loading fragments straight from the f32 ring
  // with 32-bit loads would take twice the shared loads of the conversion, each warp converting
  // the rows it shares with the others again, and 2-way bank conflicts on A's pairs of
  // columns; the conversion costs a second block barrier per K step.)
  const DType a_rt = a_wide ? DType::Float32 : ct, b_rt = b_wide ? DType::Float32 : ct;
  const Swizzle plain_swz = opts.swizzle ? Swizzle::Rows8 : Swizzle::None;
  const Layout la_ring = a_wide ? layout_for(bk, 4, plain_swz) : la;
  const Layout lb_ring = b_wide ? layout_for(bn, 4, plain_swz) : lb;
  Tensor sa = loop::make_buffer(op.name + "_a", {stages, bm, bk}, a_rt);
  Tensor sb = loop::make_buffer(op.name + "_b", {stages, bk, bn}, b_rt);
  Tensor ca = loop::make_buffer(op.name + "_ca", {1, bm, bk}, ct);
  Tensor cb = loop::make_buffer(op.name + "_cb", {1, bk, bn}, ct);

  // Warp tile: wtm x wtn, mi x ni mma tiles of 16 x 8.
  const int64_t wtm = tt.fm * kFrag, wtn = tt.fn * kFrag, mi = wtm / 16, ni = wtn / 8;
  const int64_t na = loop::mma_sync_elements(mt, FragmentRole::MatrixA),
                nb = loop::mma_sync_elements(mt, FragmentRole::MatrixB);
  Tensor ra = loop::make_buffer(op.name + "_ra", {mi * na}, ct);
  Tensor rb = loop::make_buffer(op.name + "_rb", {(tf32 ? 1 : 2) * nb}, ct);
  Tensor acc = loop::make_buffer(op.name + "_acc", {mi * ni * 4}, DType::Float32);
  Tensor na_reg = loop::make_buffer(op.name + "_a_next", {ceil_div(bm * bk, threads)}, ct);
  Tensor nb_reg = loop::make_buffer(op.name + "_b_next", {ceil_div(bk * bn, threads)}, ct);

  Expr pb = te::var("pb"), mb = te::var("mb"), nbv = te::var("nb"), warp = te::var("warp"),
       lane = te::var("lane"), wm = te::var("wm"), wn = te::var("wn"), ko = te::var("ko"),
       kk = te::var("kk"), i = te::var("i"), j = te::var("j"), e = te::var("e");

  auto sa_at = [&](const Expr& st, const Expr& r, const Expr& col) {
    return std::vector<Expr>{st, r, la_ring.column(r, col)};
  };
  auto sb_at = [&](const Expr& st, const Expr& r, const Expr& col) {
    return std::vector<Expr>{st, r, lb_ring.column(r, col)};
  };
  // Where the fragments are loaded from: the ring's stage, or a wide operand's converted tile.
  const Tensor &fa = a_wide ? ca : sa, &fb = b_wide ? cb : sb;
  auto fa_at = [&](const Expr& st, const Expr& r, const Expr& col) {
    return std::vector<Expr>{a_wide ? ic(0) : st, r, la.column(r, col)};
  };
  auto fb_at = [&](const Expr& st, const Expr& r, const Expr& col) {
    return std::vector<Expr>{b_wide ? ic(0) : st, r, lb.column(r, col)};
  };

  // The operand's element (ii, jj) of K chunk kc: `use` gets the value (compute type, zero
  // past the matrix) inside the lets binding the TE's axes, and whether it is inside.
  auto with_global = [&](bool is_a, const Expr& kc, const Expr& ii, const Expr& jj,
                         const std::function<Stmt(Expr, Expr)>& use) {
    const std::string tag = is_a ? "a" : "b";
    Expr gi = te::var("gi" + tag), gj = te::var("gj" + tag);
    Expr grow = is_a ? mb * ic(bm) + ii : kc * ic(bk) + ii;
    Expr gcol = is_a ? kc * ic(bk) + jj : nbv * ic(bn) + jj;
    int64_t lim_r = is_a ? m : kdim, lim_c = is_a ? kdim : n;
    Expr in = te::logical_and(te::lt(gi, ic(lim_r)), te::lt(gj, ic(lim_c)));
    Stmt st = use(in, gi);
    st = bind_flat(op.reduce_axes, is_a ? gj : gi, st);
    st = bind_flat(is_a ? g.rows : g.cols, is_a ? gi : gj, st);
    st = bind_flat(g.batch, pb, st);
    return loop::let_stmt(gi, grow, loop::let_stmt(gj, gcol, st));
  };
  // Thread tx handles items q = l*threads + tx of `count` items (rows x chunks or elements).
  auto per_item = [&](const std::string& tag, int64_t count,
                      const std::function<Stmt(Expr, Expr)>& body, bool unroll = false) {
    Expr l = te::var("l" + tag), q = te::var("q" + tag);
    Stmt st = body(l, q);
    if (count % threads != 0) st = loop::if_then_else(te::lt(q, ic(count)), st);
    // Unrolled where they fill register slots, whose indices then are constants (registers).
    const int64_t trips = ceil_div(count, threads);
    return loop::make_for(l, trips, unroll && trips <= 32 ? ForKind::Unrolled : ForKind::Serial,
                          loop::let_stmt(q, l * ic(threads) + f.tx, st));
  };
  // cp.async of K chunk kc of an operand into stage st: chunks of `bytes` along the row.
  auto async_load = [&](bool is_a, const Expr& kc, const Expr& st) {
    const DType rt = is_a ? a_rt : b_rt;
    const int64_t bytes = is_a ? a_bytes : b_bytes, per = bytes / dtype_size(rt);
    const int64_t tr = is_a ? bm : bk, tcn = is_a ? bk : bn, cpr = tcn / per;
    const std::string tag = is_a ? "a" : "b";
    const Tensor& buf = is_a ? sa : sb;
    const te::Read* rd = plain_read(is_a ? g.a : g.b, rt);
    return per_item("c" + tag, tr * cpr, [&](Expr, Expr q) {
      Expr ii = te::var("i" + tag), jj = te::var("j" + tag);
      Stmt s = with_global(is_a, kc, ii, jj, [&](Expr in, Expr) {
        return loop::async_copy(buf, is_a ? sa_at(st, ii, jj) : sb_at(st, ii, jj), rd->tensor,
                                rd->indices, bytes, te::cast(DType::Int64, in));
      });
      return loop::let_stmt(ii, te::floordiv(q, ic(cpr)),
                            loop::let_stmt(jj, te::floormod(q, ic(cpr)) * ic(per), s));
    });
  };
  // Element-wise staging (converting): global -> registers, registers -> stage st.
  auto stage_regs = [&](bool is_a, const Expr& kc) {
    const int64_t tr = is_a ? bm : bk, tcn = is_a ? bk : bn;
    const std::string tag = is_a ? "a" : "b";
    const Tensor& reg = is_a ? na_reg : nb_reg;
    return per_item(
        "e" + tag, tr * tcn,
        [&](Expr l, Expr q) {
          Expr ii = te::var("i" + tag), jj = te::var("j" + tag);
          Stmt s = with_global(is_a, kc, ii, jj, [&](Expr in, Expr) {
            Expr v = is_a ? g.a : g.b;
            if (v.dtype() != ct) v = te::cast(ct, v);
            return loop::store(reg, {l}, te::select(in, v, te::imm(ct, 0)));
          });
          return loop::let_stmt(ii, te::floordiv(q, ic(tcn)),
                                loop::let_stmt(jj, te::floormod(q, ic(tcn)), s));
        },
        true);
  };
  auto commit_regs = [&](bool is_a, const Expr& st) {
    const int64_t tr = is_a ? bm : bk, tcn = is_a ? bk : bn;
    const std::string tag = is_a ? "a" : "b";
    const Tensor &reg = is_a ? na_reg : nb_reg, &buf = is_a ? sa : sb;
    return per_item(
        "s" + tag, tr * tcn,
        [&](Expr l, Expr q) {
          Expr ii = te::var("i" + tag), jj = te::var("j" + tag);
          Stmt s =
              loop::store(buf, is_a ? sa_at(st, ii, jj) : sb_at(st, ii, jj), te::read(reg, {l}));
          return loop::let_stmt(ii, te::floordiv(q, ic(tcn)),
                                loop::let_stmt(jj, te::floormod(q, ic(tcn)), s));
        },
        true);
  };
  const bool a_async = a_bytes > 0, b_async = b_bytes > 0;
  // Staged operands travel through registers one stage ahead (their loads overlap the MMAs)
  // while the registers that takes, with the fragments and accumulators, stay within 64 per
  // thread; past that they are stored straight to the next stage after the MMAs. (Measured by
  // NVRTC: a 64x64x32 bf16 tile from f32 operands takes 243 registers prefetching, 155 not.)
  const bool prefetch = ml.prefetch;
  // Straight from global memory into stage st (converting).
  auto stage_direct = [&](bool is_a, const Expr& kc, const Expr& st) {
    const int64_t tr = is_a ? bm : bk, tcn = is_a ? bk : bn;
    const std::string tag = is_a ? "a" : "b";
    const Tensor& buf = is_a ? sa : sb;
    return per_item("d" + tag, tr * tcn, [&](Expr, Expr q) {
      Expr ii = te::var("i" + tag), jj = te::var("j" + tag);
      Stmt s = with_global(is_a, kc, ii, jj, [&](Expr in, Expr) {
        Expr v = is_a ? g.a : g.b;
        if (v.dtype() != ct) v = te::cast(ct, v);
        return loop::store(buf, is_a ? sa_at(st, ii, jj) : sb_at(st, ii, jj),
                           te::select(in, v, te::imm(ct, 0)));
      });
      return loop::let_stmt(ii, te::floordiv(q, ic(tcn)),
                            loop::let_stmt(jj, te::floormod(q, ic(tcn)), s));
    });
  };
  // A wide operand's stage st converted into its compute-type tile: consecutive threads take
  // consecutive elements of a row (32 f32 reads and 32 16-bit writes a warp, each within one
  // 128-byte line of the swizzled tiles: no bank conflict).
  auto convert = [&](bool is_a, const Expr& st) {
    const int64_t tr = is_a ? bm : bk, tcn = is_a ? bk : bn;
    const std::string tag = is_a ? "a" : "b";
    const Tensor &ring = is_a ? sa : sb, &to = is_a ? ca : cb;
    const Layout &lr = is_a ? la_ring : lb_ring, &lt = is_a ? la : lb;
    return per_item("v" + tag, tr * tcn, [&](Expr, Expr q) {
      Expr ii = te::var("i" + tag), jj = te::var("j" + tag);
      Stmt s = loop::store(to, {ic(0), ii, lt.column(ii, jj)},
                           te::cast(ct, te::read(ring, {st, ii, lr.column(ii, jj)})));
      return loop::let_stmt(ii, te::floordiv(q, ic(tcn)),
                            loop::let_stmt(jj, te::floormod(q, ic(tcn)), s));
    });
  };
  auto guarded = [&](const Expr& chunk, Stmt s) {
    return loop::if_then_else(te::lt(chunk, ic(ksteps)), std::move(s));
  };

  // ---- the K loop ----
  std::vector<Stmt> body;
  body.push_back(loop::make_for(i, mi * ni * 4, ForKind::Unrolled,
                                loop::store(acc, {i}, te::imm(DType::Float32, 0))));
  // Prologue: async chunks 0 .. stages-2, one commit group each; staged chunk 0 into stage 0.
  if (any_async) {
    for (int64_t s = 0; s + 1 < stages; ++s) {
      std::vector<Stmt> loads;
      if (a_async) loads.push_back(async_load(true, ic(s), ic(s)));
      if (b_async) loads.push_back(async_load(false, ic(s), ic(s)));
      body.push_back(guarded(ic(s), loop::seq(std::move(loads))));
      body.push_back(loop::async_commit());
    }
  }
  if (!a_async) body.push_back(stage_direct(true, ic(0), ic(0)));
  if (!b_async) body.push_back(stage_direct(false, ic(0), ic(0)));

  Expr cur = te::var("cur");
  Expr g4 = te::floordiv(lane, ic(4)), t4 = te::floormod(lane, ic(4));
  const Expr row0 = wm * ic(wtm), col0 = wn * ic(wtn);
  // One k step of the warp: fragments from stage cur, then the mi x ni MMAs.
  std::vector<Stmt> kstep;
  // A: ldmatrix.x4 per 16-row tile: lane l gives row l % 16 at column (l / 16) * 8 (16-bit) or
  // (l / 16) * 4 (tf32: the 32-bit elements of an 8x8 b16 matrix are 8 rows of 4).
  {
    Expr r = row0 + i * ic(16) + te::floormod(lane, ic(16));
    Expr col = kk * ic(ks) + te::floordiv(lane, ic(16)) * ic(tf32 ? 4 : 8);
    kstep.push_back(
        loop::make_for(i, mi, ForKind::Unrolled,
                       loop::matrix_load(ra, i * ic(na), 4, false, fa, fa_at(cur, r, col))));
  }
  // B a group of n8 tiles at a time (two for f16/bf16, one for tf32), each group's MMAs right
  // after its loads: B's registers hold one group, not the warp's whole row of tiles.
  const int64_t group = tf32 ? 1 : 2;
  Expr jj = te::var("jj");
  std::vector<Stmt> bstep;
  if (!tf32) {
    // B (k x n, row-major): ldmatrix.x4.trans per pair of n8 tiles: lane l gives k row l % 16 of
    // columns n0 + (l / 16) * 8.
    Expr r = kk * ic(ks) + te::floormod(lane, ic(16));
    Expr col = col0 + j * ic(16) + te::floordiv(lane, ic(16)) * ic(8);
    bstep.push_back(loop::matrix_load(rb, ic(0), 4, true, fb, fb_at(cur, r, col)));
  } else {
    // B tf32: b0 = B[t][g], b1 = B[t + 4][g] of the n8 tile, 32-bit loads.
    for (int64_t h = 0; h < 2; ++h) {
      Expr r = kk * ic(ks) + t4 + ic(4 * h);
      Expr col = col0 + j * ic(8) + g4;
      bstep.push_back(loop::store(rb, {ic(h)}, te::read(sb, sb_at(cur, r, col))));
    }
  }
  Expr tile_j = j * ic(group) + jj;
  bstep.push_back(loop::make_for(
      i, mi, ForKind::Unrolled,
      loop::make_for(jj, group, ForKind::Unrolled,
                     loop::mma_sync(mt, acc, (i * ic(ni) + tile_j) * ic(4), ra, i * ic(na), rb,
                                    jj * ic(nb), acc, (i * ic(ni) + tile_j) * ic(4)))));
  kstep.push_back(loop::make_for(j, ni / group, ForKind::Unrolled, loop::seq(std::move(bstep))));
  Stmt mmas = loop::make_for(kk, bk / ks, ForKind::Serial, loop::seq(std::move(kstep)));

  std::vector<Stmt> step;
  if (any_async && !opts.drop_wait) step.push_back(loop::async_wait(stages - 2));
  step.push_back(loop::block_barrier());
  if (any_async) {
    // Chunk ko + stages - 1 goes to the stage chunk ko - 1 used, which every warp finished
    // reading before the barrier above; an empty group keeps the wait count uniform.
    Expr next = ko + ic(stages - 1);
    Expr st = te::floormod(next, ic(stages));
    std::vector<Stmt> loads;
    if (a_async) loads.push_back(async_load(true, next, st));
    if (b_async) loads.push_back(async_load(false, next, st));
    step.push_back(guarded(next, loop::seq(std::move(loads))));
    step.push_back(loop::async_commit());
  }
  if (a_wide || b_wide) {
    // Stage cur is complete (the wait and barrier above); every warp finished reading the
    // converted tiles in step ko - 1 before that barrier. A second barrier publishes them.
    std::vector<Stmt> conv;
    if (a_wide) conv.push_back(convert(true, cur));
    if (b_wide) conv.push_back(convert(false, cur));
    step.push_back(loop::seq(std::move(conv)));
    step.push_back(loop::block_barrier());
  }
  const bool any_staged = !a_async || !b_async;
  Expr more = te::lt(ko + ic(1), ic(ksteps));
  if (any_staged && prefetch) {
    std::vector<Stmt> pre;
    if (!a_async) pre.push_back(stage_regs(true, ko + ic(1)));
    if (!b_async) pre.push_back(stage_regs(false, ko + ic(1)));
    step.push_back(loop::if_then_else(more, loop::seq(std::move(pre))));
  }
  step.push_back(mmas);
  if (any_staged) {
    // Stage (ko + 1) % stages was last read in step ko + 1 - stages, before this step's barrier.
    Expr st = te::floormod(ko + ic(1), ic(stages));
    std::vector<Stmt> post;
    if (!a_async)
      post.push_back(prefetch ? commit_regs(true, st) : stage_direct(true, ko + ic(1), st));
    if (!b_async)
      post.push_back(prefetch ? commit_regs(false, st) : stage_direct(false, ko + ic(1), st));
    step.push_back(loop::if_then_else(more, loop::seq(std::move(post))));
  }
  body.push_back(loop::make_for(
      ko, ksteps, ForKind::Serial,
      loop::let_stmt(cur, te::floormod(ko, ic(stages)), loop::seq(std::move(step)))));
  // Drain the (empty) trailing groups, and let every warp finish its reads before the block's
  // next tile refills the stages.
  if (any_async) body.push_back(loop::async_wait(0));
  body.push_back(loop::block_barrier());

  // ---- epilogue from the accumulator registers ----
  Expr accv = te::read(acc, {(i * ic(ni) + j) * ic(4) + e});
  if (op.output->dtype != DType::Float32) accv = te::cast(op.output->dtype, accv);
  auto [stores, outputs, scalars] = gemm_element_stores(op, accv, epilogue, on_chip, "gemm_mma");
  Expr gi = te::var("gi"), gj = te::var("gj");
  Stmt out = loop::seq(std::move(stores));
  out = bind_flat(g.cols, gj, out);
  out = bind_flat(g.rows, gi, out);
  out = bind_flat(g.batch, pb, out);
  out = loop::if_then_else(te::logical_and(te::lt(gi, ic(m)), te::lt(gj, ic(n))), out);
  // Accumulator element e of tile (i, j): row g + 8 (e / 2), column 2 t + e % 2.
  out = loop::let_stmt(
      gi, mb * ic(bm) + row0 + i * ic(16) + g4 + te::floordiv(e, ic(2)) * ic(8),
      loop::let_stmt(gj, nbv * ic(bn) + col0 + j * ic(8) + t4 * ic(2) + te::floormod(e, ic(2)),
                     out));
  out = loop::make_for(
      i, mi, ForKind::Unrolled,
      loop::make_for(j, ni, ForKind::Unrolled, loop::make_for(e, 4, ForKind::Unrolled, out)));
  for (const Tensor& s : scalars) out = loop::allocate(s, MemScope::Local, out);
  body.push_back(out);

  Stmt inner = loop::seq(std::move(body));
  inner = loop::let_stmt(
      warp, te::floordiv(f.tx, ic(loop::kWarpSize)),
      loop::let_stmt(lane, te::floormod(f.tx, ic(loop::kWarpSize)),
                     loop::let_stmt(wm, te::floordiv(warp, ic(wc)),
                                    loop::let_stmt(wn, te::floormod(warp, ic(wc)), inner))));
  inner =
      loop::let_stmt(pb, te::floordiv(tile, ic(mtiles * ntiles)),
                     loop::let_stmt(mb, te::floormod(te::floordiv(tile, ic(ntiles)), ic(mtiles)),
                                    loop::let_stmt(nbv, te::floormod(tile, ic(ntiles)), inner)));
  inner = tg.wrap(f, tile, inner);
  for (const Tensor& r : {ra, rb, acc}) inner = loop::allocate(r, MemScope::Local, inner);
  if (!a_async && prefetch) inner = loop::allocate(na_reg, MemScope::Local, inner);
  if (!b_async && prefetch) inner = loop::allocate(nb_reg, MemScope::Local, inner);
  if (b_wide) inner = loop::allocate(cb, MemScope::Shared, inner);
  if (a_wide) inner = loop::allocate(ca, MemScope::Shared, inner);
  inner = loop::allocate(sa, MemScope::Shared, loop::allocate(sb, MemScope::Shared, inner));

  auto how = [](int64_t bytes) {
    return bytes > 0 ? "cp.async " + std::to_string(bytes) + "B" : std::string("staged");
  };
  auto staged_how = [&](int64_t bytes, bool wide) {
    if (wide) return how(bytes) + " f32, converted at each K step";
    return bytes > 0 ? how(bytes) : prefetch ? how(0) : std::string("stored after the MMAs");
  };
  std::string schedule =
      std::string("gemm_mma ") + loop::mma_type_name(mt) + " tensor-core tile " +
      std::to_string(bm) + "x" + std::to_string(bn) + "x" + std::to_string(bk) + ", warps " +
      std::to_string(tt.wr) + "x" + std::to_string(wc) + " of " + std::to_string(tt.fm) + "x" +
      std::to_string(tt.fn) + " fragments, " + std::to_string(stages) + " stages (A " +
      staged_how(a_bytes, a_wide) + ", B " + staged_how(b_bytes, b_wide) + "), " +
      (opts.swizzle ? "swizzled" : "unswizzled") + ", ldmatrix + mma.sync m16n8k" +
      std::to_string(ks) + ", epilogue from registers" + tg.describe();
  TensorCoreTile built;
  built.kind = TcTemplate::MmaSync;
  built.bm = bm;
  built.bn = bn;
  built.bk = bk;
  built.fm = tt.fm;
  built.fn = tt.fn;
  built.warps = tt.wr * wc;
  built.stages = stages;
  built.f32_ring = ml.any_wide();
  built.regs = ml.regs;
  return finish_gemm_tc(op, epilogue, std::move(outputs), f, inner, tg.grid, threads,
                        std::move(schedule), built);
}

}  // namespace souffle::schedule::detail
