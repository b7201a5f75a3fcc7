// The Hopper tensor-core GEMM mainloop (docs/mainloop.md): operand tiles stream into a ring of
// shared stages in the no-swizzle core-matrix layout (8 x 8 elements of 128 contiguous bytes,
// A as M x K and B as N x K, both K-major), by cp.async where the operand is a plain read of
// the compute type with K innermost, converted element by element otherwise; each warpgroup
// issues wgmma.mma_async m64nNk16 from shared-memory descriptors and computes the epilogue from
// its accumulator registers.
#include "core/schedule/gemm_wgmma.h"

#include <algorithm>
#include <functional>

#include "core/loop/stmt.h"
#include "core/schedule/gemm_operands.h"
#include "core/te/builder.h"

namespace souffle::schedule::detail {

using loop::ForKind;
using loop::Kernel;
using loop::MemScope;
using loop::MmaType;
using loop::Stmt;
using te::Expr;
using te::Tensor;

namespace {

constexpr int64_t kWarpgroup = 4 * loop::kWarpSize;
/// Bytes between core matrices along K (they are contiguous there).
constexpr int64_t kLbo = 128;

/// Whether the operand `value` reads a tensor whose innermost index is the last reduce axis
/// (K innermost in memory); false when it is another axis or no plain read.
bool k_innermost(const Expr& value, const std::vector<te::IterVar>& reduce) {
  Expr v = value;
  if (const te::Cast* c = v.as<te::Cast>()) v = c->a;
  const te::Read* r = v.as<te::Read>();
  if (!r || r->indices.empty() || reduce.empty()) return true;
  return r->indices.back().same_as(reduce.back().var);
}

}  // namespace

WgmmaSplit wgmma_split(const ScheduleConfig& c, std::string* why) {
  auto no = [&](const std::string& w) {
    if (why) *why = w;
    return WgmmaSplit{};
  };
  if (c.precision != gpu::Precision::FP16 && c.precision != gpu::Precision::BF16)
    return no("wgmma is built for fp16 and bf16 (tf32 stays on mma.sync)");
  const TcBlockTile tt = tc_block_tile(c, 16, "gemm_wgmma");
  const int64_t threads = tt.threads();
  if (threads % kWarpgroup != 0) return no("the block is not whole warpgroups");
  if (tt.bm % 64 != 0) return no("BM is not a multiple of 64");
  if (tt.bk % 16 != 0) return no("BK is not a multiple of 16");
  const int64_t groups = threads / kWarpgroup;
  // Warpgroups split M first (each a multiple of 64 rows), the rest split N.
  int64_t gm = 1;
  for (int64_t d = groups; d >= 1; --d)
    if (groups % d == 0 && (tt.bm / 64) % d == 0) {
      gm = d;
      break;
    }
  const int64_t gn = groups / gm;
  if (tt.bn % (8 * gn) != 0) return no("BN does not split into warpgroup columns of 8");
  WgmmaSplit s;
  s.groups_m = gm;
  s.groups_n = gn;
  s.m_tiles = tt.bm / 64 / gm;
  s.n = tt.bn / gn;
  if (s.n > 256) return no("a warpgroup's columns exceed 256");
  if (s.m_tiles * s.n / 2 > 128) return no("more than 128 accumulator registers per thread");
  return s;
}

Kernel schedule_gemm_wgmma(const te::ComputeOp& op, const GemmParts& g,
                           const std::vector<const te::ComputeOp*>& epilogue,
                           const std::vector<Tensor>& on_chip, const ScheduleConfig& c,
                           const WgmmaOptions& opts) {
  std::string why;
  const WgmmaSplit sp = wgmma_split(c, &why);
  SOUFFLE_CHECK(sp.ok(), "gemm_wgmma: " + why);
  Frame f;
  const MmaType mt = mma_type_of(c.precision);
  const DType ct = loop::mma_storage_dtype(mt);
  const TcBlockTile tt = tc_block_tile(c, 16, "gemm_wgmma");
  const int64_t bm = tt.bm, bn = tt.bn, bk = tt.bk, threads = tt.threads();
  const int64_t p = extent_product(g.batch), m = extent_product(g.rows), n = extent_product(g.cols),
                kdim = extent_product(op.reduce_axes);
  const int64_t mtiles = ceil_div(m, bm), ntiles = ceil_div(n, bn);
  const TileGrid tg(p * mtiles * ntiles, c);
  const Expr tile = te::var("tile");
  const int64_t ksteps = ceil_div(kdim, bk);
  // Core matrices of a row of them are kLbo apart along K; rows of core matrices sbo apart.
  const int64_t sbo = 8 * bk * dtype_size(ct);

  // cp.async where the operand is a plain read of the compute type with K innermost.
  const int64_t a_bytes = direct_copy_bytes(g.a, ct, g.rows, op.reduce_axes, bk);
  const int64_t b_bytes = direct_copy_bytes(g.b, ct, g.cols, op.reduce_axes, bk);
  const bool a_async = a_bytes > 0, b_async = b_bytes > 0, any_async = a_async || b_async;
  const gpu::Tile as_tile{bm, bn, bk, tt.fm, tt.fn, true, true};
  int64_t stages = c.mma_stages > 0
                       ? c.mma_stages
                       : (any_async ? mma_pipeline_stages(as_tile, c.precision, 48 << 10) : 2);
  stages = std::clamp<int64_t>(stages, 2, 4);

  Tensor sa = loop::make_buffer(op.name + "_a", {stages * bm * bk}, ct);
  Tensor sb = loop::make_buffer(op.name + "_b", {stages * bn * bk}, ct);
  const int64_t per_acc = sp.n / 2;
  Tensor acc = loop::make_buffer(op.name + "_acc", {sp.m_tiles * per_acc}, DType::Float32);

  Expr pb = te::var("pb"), mb = te::var("mb"), nbv = te::var("nb"), ko = te::var("ko"),
       kk = te::var("kk"), i = te::var("i"), e = te::var("e"), cur = te::var("cur");
  // The warpgroup's place in the block tile, written out from the thread index (not let-bound):
  // the verifier sees a descriptor address uniform over a warpgroup only as tx / 128k.
  const Expr wgm = te::floordiv(f.tx, ic(kWarpgroup * sp.groups_n)),
             wgn = te::floormod(te::floordiv(f.tx, ic(kWarpgroup)), ic(sp.groups_n));

  // Element (r, k) of an operand tile (r along M or N) in the core-matrix layout.
  auto core = [&](const Expr& r, const Expr& k) {
    return te::floordiv(r, ic(8)) * ic(8 * bk) + te::floordiv(k, ic(8)) * ic(64) +
           te::floormod(r, ic(8)) * ic(8) + te::floormod(k, ic(8));
  };
  // The operand's element (r, k) of K chunk kc: `use` gets whether it lies inside the matrix,
  // inside the lets binding the TE's axes.
  auto with_global = [&](bool is_a, const Expr& kc, const Expr& r, const Expr& k,
                         const std::function<Stmt(Expr)>& use) {
    const std::string tag = is_a ? "a" : "b";
    Expr gr = te::var("gr" + tag), gk = te::var("gk" + tag);
    Expr in = te::logical_and(te::lt(gr, ic(is_a ? m : n)), te::lt(gk, ic(kdim)));
    Stmt st = use(in);
    st = bind_flat(op.reduce_axes, gk, st);
    st = bind_flat(is_a ? g.rows : g.cols, gr, st);
    st = bind_flat(g.batch, pb, st);
    Expr row0 = is_a ? mb * ic(bm) : nbv * ic(bn);
    return loop::let_stmt(gr, row0 + r, loop::let_stmt(gk, kc * ic(bk) + k, st));
  };
  // Thread tx takes items q = l * threads + tx of `count`.
  auto per_item = [&](const std::string& tag, int64_t count,
                      const std::function<Stmt(Expr)>& body) {
    Expr l = te::var("l" + tag), q = te::var("q" + tag);
    Stmt st = body(q);
    if (count % threads != 0) st = loop::if_then_else(te::lt(q, ic(count)), st);
    return loop::make_for(l, ceil_div(count, threads), ForKind::Serial,
                          loop::let_stmt(q, l * ic(threads) + f.tx, st));
  };
  // cp.async of K chunk kc of an operand into stage st. Item q is the chunk of row r = 8 rb +
  // q % 8 at k = kc' * per: eight consecutive copies fill one 128-byte core matrix (no bank
  // conflict), and a warp reads eight rows of four 16-byte chunks (whole sectors).
  auto async_load = [&](bool is_a, const Expr& kc, const Expr& st) {
    const int64_t bytes = is_a ? a_bytes : b_bytes, per = bytes / dtype_size(ct);
    const int64_t rows = is_a ? bm : bn, cpr = bk / per;
    const std::string tag = is_a ? "a" : "b";
    const Tensor& buf = is_a ? sa : sb;
    const te::Read* rd = plain_read(is_a ? g.a : g.b, ct);
    return per_item("c" + tag, rows * cpr, [&](Expr q) {
      Expr r = te::var("r" + tag), k = te::var("k" + tag);
      Stmt s = with_global(is_a, kc, r, k, [&](Expr in) {
        return loop::async_copy(buf, {st * ic(rows * bk) + core(r, k)}, rd->tensor, rd->indices,
                                bytes, te::cast(DType::Int64, in));
      });
      Expr rest = te::floordiv(q, ic(8));
      return loop::let_stmt(r, te::floordiv(rest, ic(cpr)) * ic(8) + te::floormod(q, ic(8)),
                            loop::let_stmt(k, te::floormod(rest, ic(cpr)) * ic(per), s));
    });
  };
  // Converted staging of K chunk kc into stage st, element by element. Items run through the
  // core matrices in order (64 each) with K fastest when the tensor has K innermost (the
  // shared index is then the item itself), else the row fastest (a K x N weight: a warp reads
  // four K rows of eight consecutive columns); either way a warp's 2-byte stores fill distinct
  // words of one or two core matrices.
  auto stage_direct = [&](bool is_a, const Expr& kc, const Expr& st) {
    const int64_t rows = is_a ? bm : bn;
    const std::string tag = is_a ? "a" : "b";
    const Tensor& buf = is_a ? sa : sb;
    const Expr& value = is_a ? g.a : g.b;
    const bool kfast = k_innermost(value, op.reduce_axes);
    return per_item("d" + tag, rows * bk, [&](Expr q) {
      Expr r = te::var("r" + tag), k = te::var("k" + tag);
      Stmt s = with_global(is_a, kc, r, k, [&](Expr in) {
        Expr v = value;
        if (v.dtype() != ct) v = te::cast(ct, v);
        return loop::store(buf, {st * ic(rows * bk) + core(r, k)},
                           te::select(in, v, te::imm(ct, 0)));
      });
      Expr cm = te::floordiv(q, ic(64)), w = te::floormod(q, ic(64));
      Expr r8 = kfast ? te::floordiv(w, ic(8)) : te::floormod(w, ic(8));
      Expr k8 = kfast ? te::floormod(w, ic(8)) : te::floordiv(w, ic(8));
      return loop::let_stmt(r, te::floordiv(cm, ic(bk / 8)) * ic(8) + r8,
                            loop::let_stmt(k, te::floormod(cm, ic(bk / 8)) * ic(8) + k8, s));
    });
  };
  auto guarded = [&](const Expr& chunk, Stmt s) {
    return loop::if_then_else(te::lt(chunk, ic(ksteps)), std::move(s));
  };
  auto loads_of = [&](const Expr& chunk, const Expr& st) {
    std::vector<Stmt> loads;
    if (a_async) loads.push_back(async_load(true, chunk, st));
    if (b_async) loads.push_back(async_load(false, chunk, st));
    return guarded(chunk, loop::seq(std::move(loads)));
  };

  // ---- the K loop ----
  std::vector<Stmt> body;
  body.push_back(loop::make_for(i, sp.m_tiles * per_acc, ForKind::Unrolled,
                                loop::store(acc, {i}, te::imm(DType::Float32, 0))));
  if (any_async)
    for (int64_t s = 0; s + 1 < stages; ++s) {
      body.push_back(loads_of(ic(s), ic(s)));
      body.push_back(loop::async_commit());
    }
  if (!a_async) body.push_back(stage_direct(true, ic(0), ic(0)));
  if (!b_async) body.push_back(stage_direct(false, ic(0), ic(0)));

  const Expr arow0 = wgm * ic(sp.m_tiles * 64), bcol0 = wgn * ic(sp.n);
  std::vector<Stmt> step;
  if (any_async && !opts.drop_copy_wait) step.push_back(loop::async_wait(stages - 2));
  // The fence orders this thread's shared writes (cp.async completions, stores) before the
  // wgmmas' asynchronous reads (the CUDA emission adds fence.proxy.async) and the accumulator
  // registers before the next wgmma; the barrier then publishes every thread's writes.
  step.push_back(loop::wgmma_fence());
  step.push_back(loop::block_barrier());
  step.push_back(loop::make_for(
      i, sp.m_tiles, ForKind::Unrolled,
      loop::make_for(
          kk, bk / 16, ForKind::Unrolled,
          loop::wgmma_mma(mt, sp.n, acc, i * ic(per_acc), sa,
                          {cur * ic(bm * bk) + core(arow0 + i * ic(64), kk * ic(16))}, kLbo, sbo,
                          sb, {cur * ic(bn * bk) + core(bcol0, kk * ic(16))}, kLbo, sbo, true))));
  step.push_back(loop::wgmma_commit());
  // While the wgmmas run: chunk ko + stages - 1 into the stage chunk ko - 1 used (its wgmmas
  // completed at the previous step's wait, in every warpgroup before this step's barrier), and
  // converted operands of chunk ko + 1 into stage (ko + 1) % stages (last read at step
  // ko + 1 - stages <= ko - 1). An empty commit group keeps the wait count uniform.
  if (any_async) {
    Expr next = ko + ic(stages - 1);
    step.push_back(loads_of(next, te::floormod(next, ic(stages))));
    step.push_back(loop::async_commit());
  }
  if (!a_async || !b_async) {
    Expr st = te::floormod(ko + ic(1), ic(stages));
    std::vector<Stmt> post;
    if (!a_async) post.push_back(stage_direct(true, ko + ic(1), st));
    if (!b_async) post.push_back(stage_direct(false, ko + ic(1), st));
    step.push_back(loop::if_then_else(te::lt(ko + ic(1), ic(ksteps)), loop::seq(std::move(post))));
  }
  if (!opts.drop_wgmma_wait) step.push_back(loop::wgmma_wait(0));
  body.push_back(loop::make_for(
      ko, ksteps, ForKind::Serial,
      loop::let_stmt(cur, te::floormod(ko, ic(stages)), loop::seq(std::move(step)))));
  if (any_async) body.push_back(loop::async_wait(0));
  body.push_back(loop::block_barrier());

  // ---- epilogue from the accumulator registers ----
  // Thread 32 w + l of a warpgroup (g = l / 4, t = l % 4) holds element e of m tile i at row
  // 16 w + g + 8 ((e / 2) % 2), column 8 (e / 4) + 2 t + e % 2.
  Expr accv = te::read(acc, {i * ic(per_acc) + e});
  if (op.output->dtype != DType::Float32) accv = te::cast(op.output->dtype, accv);
  auto [stores, outputs, scalars] = gemm_element_stores(op, accv, epilogue, on_chip, "gemm_wgmma");
  Expr gi = te::var("gi"), gj = te::var("gj");
  Stmt out = loop::seq(std::move(stores));
  out = bind_flat(g.cols, gj, out);
  out = bind_flat(g.rows, gi, out);
  out = bind_flat(g.batch, pb, out);
  out = loop::if_then_else(te::logical_and(te::lt(gi, ic(m)), te::lt(gj, ic(n))), out);
  Expr in_group = te::floormod(f.tx, ic(kWarpgroup)), lane = te::floormod(f.tx, ic(32));
  Expr row = mb * ic(bm) + arow0 + i * ic(64) + te::floordiv(in_group, ic(32)) * ic(16) +
             te::floordiv(lane, ic(4)) + te::floormod(te::floordiv(e, ic(2)), ic(2)) * ic(8);
  Expr col = nbv * ic(bn) + bcol0 + te::floordiv(e, ic(4)) * ic(8) +
             te::floormod(lane, ic(4)) * ic(2) + te::floormod(e, ic(2));
  out = loop::let_stmt(gi, row, loop::let_stmt(gj, col, out));
  out = loop::make_for(i, sp.m_tiles, ForKind::Unrolled,
                       loop::make_for(e, per_acc, ForKind::Unrolled, out));
  for (const Tensor& s : scalars) out = loop::allocate(s, MemScope::Local, out);
  body.push_back(out);

  Stmt inner = loop::seq(std::move(body));
  inner =
      loop::let_stmt(pb, te::floordiv(tile, ic(mtiles * ntiles)),
                     loop::let_stmt(mb, te::floormod(te::floordiv(tile, ic(ntiles)), ic(mtiles)),
                                    loop::let_stmt(nbv, te::floormod(tile, ic(ntiles)), inner)));
  inner = tg.wrap(f, tile, inner);
  inner = loop::allocate(acc, MemScope::Local, inner);
  inner = loop::allocate(sa, MemScope::Shared, loop::allocate(sb, MemScope::Shared, inner));

  auto how = [](int64_t bytes) {
    return bytes > 0 ? "cp.async " + std::to_string(bytes) + "B" : std::string("converted");
  };
  std::string schedule = std::string("gemm_wgmma ") + loop::mma_type_name(mt) +
                         " tensor-core tile " + std::to_string(bm) + "x" + std::to_string(bn) +
                         "x" + std::to_string(bk) + ", warpgroups " + std::to_string(sp.groups_m) +
                         "x" + std::to_string(sp.groups_n) + " of " + std::to_string(sp.m_tiles) +
                         "x m64n" + std::to_string(sp.n) + "k16, " + std::to_string(stages) +
                         " stages (A " + how(a_bytes) + ", B " + how(b_bytes) +
                         "), core-matrix layout, wgmma.mma_async from shared descriptors, "
                         "epilogue from registers" +
                         tg.describe();
  TensorCoreTile built;
  built.kind = TcTemplate::Wgmma;
  built.bm = bm;
  built.bn = bn;
  built.bk = bk;
  built.fm = tt.fm;
  built.fn = tt.fn;
  built.warps = threads / loop::kWarpSize;
  built.stages = stages;
  return finish_gemm_tc(op, epilogue, std::move(outputs), f, inner, tg.grid, threads,
                        std::move(schedule), built);
}

}  // namespace souffle::schedule::detail
