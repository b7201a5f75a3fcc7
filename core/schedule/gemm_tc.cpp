// The tensor-core GEMM template: warps compute 16x16 MMA tiles (wmma fragments) of a block tile
// whose A and B operands are staged through shared memory, converted to the compute type on the
// way in; fp32 accumulators go back through a shared tile so that any output shape is written
// with plain guarded stores, and element-wise consumers (the epilogue) are computed right there.
#include <algorithm>
#include <functional>
#include <unordered_map>

#include "core/loop/stmt.h"
#include "core/schedule/gemm_operands.h"
#include "core/schedule/gemm_wgmma.h"
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

constexpr int64_t kFrag = 16;  // MMA tile rows and columns (m16n16)

/// Padding (elements) of a shared tile row: keeps the leading dimension a multiple of 16 bytes
/// (wmma) while shifting successive rows across banks.
int64_t row_pad(DType t) {
  return dtype_size(t) == 2 ? 8 : 4;
}

}  // namespace

bool tensor_core_eligible(const te::ComputeOp& op, const GemmParts& g, const ScheduleConfig& c) {
  if (c.precision == gpu::Precision::FP32) return false;
  if (c.block < loop::kWarpSize || c.block % loop::kWarpSize != 0) return false;
  return is_float(g.a.dtype()) && is_float(g.b.dtype()) && is_float(op.output->dtype);
}

Kernel schedule_gemm_tc(const te::ComputeOp& op, const GemmParts& g, const ScheduleConfig& c) {
  return schedule_gemm_tc_fused(op, g, {}, {}, c);
}

Kernel schedule_gemm_tc_fused(const te::ComputeOp& op, const GemmParts& g,
                              const std::vector<const te::ComputeOp*>& epilogue,
                              const std::vector<Tensor>& on_chip, const ScheduleConfig& c) {
  // The Ampere-class mainloop (gemm_mma.cpp) unless the wmma template is asked for, or the warp
  // tile's accumulators alone would take more than 64 registers per lane (4x4 fragments: 128):
  // with its fragments and 64-bit addresses that spills under NVRTC (24 B at 256x128x64, sm_90)
  // where wmma's opaque fragments do not.
  const bool huge_warp_tile = c.tc_tile.bm > 0 && c.tc_tile.tm * c.tc_tile.tn > 8;
  if (c.wgmma_mainloop && wgmma_split(c).ok())
    return schedule_gemm_wgmma(op, g, epilogue, on_chip, c);
  if (c.mma_mainloop && !huge_warp_tile) return schedule_gemm_mma(op, g, epilogue, on_chip, c);
  Frame f;
  const MmaType mt = mma_type_of(c.precision);
  const DType ct = loop::mma_storage_dtype(mt);  // operand type in shared memory
  const int64_t ks = mt == MmaType::TF32 ? 8 : 16;
  const TcBlockTile tt = tc_block_tile(c, ks, "gemm_tc");
  const int64_t bm = tt.bm, bn = tt.bn, bk = tt.bk, fm = tt.fm, fn = tt.fn, wc = tt.wc;
  const int64_t threads = tt.threads();
  const int64_t p = extent_product(g.batch), m = extent_product(g.rows), n = extent_product(g.cols),
                kdim = extent_product(op.reduce_axes);
  const int64_t mtiles = ceil_div(m, bm), ntiles = ceil_div(n, bn);
  const TileGrid tg(p * mtiles * ntiles, c);
  const Expr tile = te::var("tile");

  const bool db = c.tc_tile.double_buffer;
  const int64_t ksteps = ceil_div(kdim, bk);
  // With double buffering each operand tile has two stages, the stage index first.
  auto tile_shape = [&](int64_t r, int64_t cols) {
    return db ? Shape{2, r, cols} : Shape{r, cols};
  };
  Tensor sa = loop::make_buffer(op.name + "_a", tile_shape(bm, bk + row_pad(ct)), ct);
  Tensor sb = loop::make_buffer(op.name + "_b", tile_shape(bk, bn + row_pad(ct)), ct);
  Tensor sc = loop::make_buffer(op.name + "_c", {bm, bn + row_pad(DType::Float32)}, DType::Float32);
  Tensor fa = loop::make_fragment_buffer(op.name + "_fa", fm, mt);
  Tensor fb = loop::make_fragment_buffer(op.name + "_fb", fn, mt);
  Tensor fc = loop::make_fragment_buffer(op.name + "_fc", fm * fn, MmaType::F32);
  Tensor ra = loop::make_buffer(op.name + "_a_next", {ceil_div(bm * bk, threads)}, ct);
  Tensor rb = loop::make_buffer(op.name + "_b_next", {ceil_div(bk * bn, threads)}, ct);
  Expr pb = te::var("pb"), mb = te::var("mb"), nb = te::var("nb"), warp = te::var("warp"),
       wm = te::var("wm"), wn = te::var("wn"), ko = te::var("ko"), kk = te::var("kk"),
       i = te::var("i"), j = te::var("j"), cur = te::var("cur");
  auto at = [&](const Expr& stage, Expr r, Expr col) {
    return db ? std::vector<Expr>{stage, std::move(r), std::move(col)}
              : std::vector<Expr>{std::move(r), std::move(col)};
  };

  // Thread tx handles elements e = l*threads + tx of an operand tile (e < rows*cols): `body`
  // makes the statement for element (ii, jj) and slot l.
  auto per_element = [&](bool is_a, const std::function<Stmt(Expr, Expr, Expr)>& body) {
    const std::string tag = is_a ? "a" : "b";
    const int64_t tr = is_a ? bm : bk, tcn = is_a ? bk : bn;
    Expr l = te::var("l" + tag), e = te::var("e" + tag), ii = te::var("i" + tag),
         jj = te::var("j" + tag);
    Stmt st = body(l, ii, jj);
    st = loop::let_stmt(ii, te::floordiv(e, ic(tcn)),
                        loop::let_stmt(jj, te::floormod(e, ic(tcn)), st));
    if (tr * tcn % threads != 0) st = loop::if_then_else(te::lt(e, ic(tr * tcn)), st);
    return loop::make_for(l, ceil_div(tr * tcn, threads), ForKind::Serial,
                          loop::let_stmt(e, l * ic(threads) + f.tx, st));
  };
  // The operand's element (ii, jj) of K chunk kc in the compute type, zero past the matrix
  // (K, M and N guards); `use` consumes it inside the lets that bind the TE's axes.
  auto with_global = [&](bool is_a, const Expr& kc, const Expr& ii, const Expr& jj,
                         const std::function<Stmt(Expr)>& use) {
    const std::string tag = is_a ? "a" : "b";
    Expr gi = te::var("gi" + tag), gj = te::var("gj" + tag);
    Expr value = is_a ? g.a : g.b;
    if (value.dtype() != ct) value = te::cast(ct, value);
    Expr grow = is_a ? mb * ic(bm) + ii : kc * ic(bk) + ii;
    Expr gcol = is_a ? kc * ic(bk) + jj : nb * ic(bn) + jj;
    int64_t lim_r = is_a ? m : kdim, lim_c = is_a ? kdim : n;
    Expr in = te::logical_and(te::lt(gi, ic(lim_r)), te::lt(gj, ic(lim_c)));
    Stmt st = use(te::select(in, value, te::imm(ct, 0)));
    st = bind_flat(op.reduce_axes, is_a ? gj : gi, st);
    st = bind_flat(is_a ? g.rows : g.cols, is_a ? gi : gj, st);
    st = bind_flat(g.batch, pb, st);
    return loop::let_stmt(gi, grow, loop::let_stmt(gj, gcol, st));
  };
  // Global -> shared stage `stage` of K chunk kc (a cooperative load).
  auto tile_load = [&](bool is_a, const Expr& kc, const Expr& stage) {
    const Tensor& buf = is_a ? sa : sb;
    return per_element(is_a, [&](Expr, Expr ii, Expr jj) {
      return with_global(is_a, kc, ii, jj,
                         [&](Expr v) { return loop::store(buf, at(stage, ii, jj), v); });
    });
  };
  // Global -> this thread's registers (issued before the MMAs of the current chunk) and
  // registers -> the other shared stage (after them).
  auto stage_next = [&](bool is_a, const Expr& kc) {
    const Tensor& reg = is_a ? ra : rb;
    return per_element(is_a, [&](Expr l, Expr ii, Expr jj) {
      return with_global(is_a, kc, ii, jj, [&](Expr v) { return loop::store(reg, {l}, v); });
    });
  };
  auto commit_next = [&](bool is_a, const Expr& stage) {
    const Tensor &buf = is_a ? sa : sb, &reg = is_a ? ra : rb;
    return per_element(is_a, [&](Expr l, Expr ii, Expr jj) {
      return loop::store(buf, at(stage, ii, jj), te::read(reg, {l}));
    });
  };

  const int64_t wtm = fm * kFrag, wtn = fn * kFrag;  // the warp tile
  Expr row0 = wm * ic(wtm), col0 = wn * ic(wtn);
  auto frag_ij = [&]() { return i * ic(fn) + j; };
  std::vector<Stmt> kphase;
  kphase.push_back(loop::make_for(i, fm * fn, ForKind::Unrolled,
                                  loop::fragment_fill(fc, i, te::imm(DType::Float32, 0))));
  Stmt mma_step = loop::seq(
      {loop::make_for(i, fm, ForKind::Unrolled,
                      loop::fragment_load(fa, i, sa, at(cur, row0 + i * ic(kFrag), kk * ic(ks)))),
       loop::make_for(j, fn, ForKind::Unrolled,
                      loop::fragment_load(fb, j, sb, at(cur, kk * ic(ks), col0 + j * ic(kFrag)))),
       loop::make_for(
           i, fm, ForKind::Unrolled,
           loop::make_for(j, fn, ForKind::Unrolled,
                          loop::fragment_mma(fc, frag_ij(), fa, i, fb, j, fc, frag_ij())))});
  Stmt mmas = loop::make_for(kk, bk / ks, ForKind::Serial, mma_step);
  // Chunk 0 of each operand is loaded before the K loop, each load marked (as the SIMT GEMM
  // does) so that merge_stages can issue a weight's load before a grid barrier.
  auto first_tile = [&](bool is_a, const Expr& stage) {
    kphase.push_back(loop::comment(std::string(kFirstTileMarker) + (is_a ? "a" : "b")));
    kphase.push_back(tile_load(is_a, ic(0), stage));
  };
  if (!db) {
    // Step ko multiplies chunk ko, then (after the barrier that ends its reads) loads ko+1.
    first_tile(true, Expr());
    first_tile(false, Expr());
    Stmt kstep = loop::seq({loop::block_barrier(), mmas, loop::block_barrier(),
                            loop::if_then_else(te::lt(ko + ic(1), ic(ksteps)),
                                               loop::seq({tile_load(true, ko + ic(1), Expr()),
                                                          tile_load(false, ko + ic(1), Expr())}))});
    kphase.push_back(loop::make_for(ko, ksteps, ForKind::Serial, kstep));
  } else {
    // Chunk 0 goes straight to stage 0; step ko multiplies stage ko%2 while chunk ko+1 travels
    // through registers into the other stage, last read in step ko-1, which ended with the
    // barrier: one barrier per step.
    first_tile(true, ic(0));
    first_tile(false, ic(0));
    kphase.push_back(loop::block_barrier());
    Expr more = te::lt(ko + ic(1), ic(ksteps));
    Stmt kstep = loop::seq(
        {loop::if_then_else(
             more, loop::seq({stage_next(true, ko + ic(1)), stage_next(false, ko + ic(1))})),
         mmas,
         loop::if_then_else(
             more, loop::seq({commit_next(true, ic(1) - cur), commit_next(false, ic(1) - cur)})),
         loop::block_barrier()});
    kphase.push_back(loop::make_for(ko, ksteps, ForKind::Serial,
                                    loop::let_stmt(cur, te::floormod(ko, ic(2)), kstep)));
  }

  // The store phase: accumulators to the shared C tile, then every thread computes elements of
  // the block tile from it.
  std::vector<Stmt> sphase;
  sphase.push_back(loop::make_for(
      i, fm, ForKind::Unrolled,
      loop::make_for(
          j, fn, ForKind::Unrolled,
          loop::fragment_store(sc, {row0 + i * ic(kFrag), col0 + j * ic(kFrag)}, fc, frag_ij()))));
  sphase.push_back(loop::block_barrier());

  Expr l = te::var("lc"), e = te::var("ec"), ii = te::var("ic"), jj = te::var("jc"),
       gi = te::var("gi"), gj = te::var("gj");
  Expr acc = te::read(sc, {ii, jj});
  if (op.output->dtype != DType::Float32) acc = te::cast(op.output->dtype, acc);
  // The GEMM's element, then each epilogue TE at the same element, its value kept in a
  // one-element register buffer so that later epilogue TEs read it there; a tensor in
  // `on_chip` is never written to global memory.
  auto kept = [&](const Tensor& x) {
    return std::find(on_chip.begin(), on_chip.end(), x) == on_chip.end();
  };
  std::unordered_map<const te::TensorNode*, Expr> in_regs;
  in_regs[op.output.get()] = with_init(op, acc);
  std::vector<Stmt> stores;
  std::vector<Tensor> outputs, scalars;
  if (kept(op.output)) {
    stores.push_back(loop::store(op.output, axis_vars(op), in_regs[op.output.get()]));
    outputs.push_back(op.output);
  }
  for (const te::ComputeOp* ep : epilogue) {
    SOUFFLE_CHECK(ep->axes.size() == op.axes.size(), "epilogue " + ep->name + " has another rank");
    std::unordered_map<const te::ExprNode*, Expr> axes;
    for (size_t d = 0; d < op.axes.size(); ++d) axes[ep->axes[d].var.get()] = op.axes[d].var;
    Expr v = te::rewrite_reads(te::substitute(ep->body, axes),
                               [&](const te::Read& rd, const std::vector<Expr>&) -> Expr {
                                 auto it = in_regs.find(rd.tensor.get());
                                 return it == in_regs.end() ? Expr() : it->second;
                               });
    Tensor reg = loop::make_buffer(ep->name + "_v", {1}, ep->output->dtype);
    scalars.push_back(reg);
    stores.push_back(loop::store(reg, {ic(0)}, v));
    in_regs[ep->output.get()] = te::read(reg, {ic(0)});
    if (kept(ep->output)) {
      stores.push_back(loop::store(ep->output, axis_vars(op), in_regs[ep->output.get()]));
      outputs.push_back(ep->output);
    }
  }
  SOUFFLE_CHECK(!outputs.empty(), "gemm_tc " + op.name + " stores nothing");

  Stmt out = loop::seq(std::move(stores));
  out = bind_flat(g.cols, gj, out);
  out = bind_flat(g.rows, gi, out);
  out = bind_flat(g.batch, pb, out);
  out = loop::if_then_else(te::logical_and(te::lt(gi, ic(m)), te::lt(gj, ic(n))), out);
  out = loop::let_stmt(gi, mb * ic(bm) + ii, loop::let_stmt(gj, nb * ic(bn) + jj, out));
  out =
      loop::let_stmt(ii, te::floordiv(e, ic(bn)), loop::let_stmt(jj, te::floormod(e, ic(bn)), out));
  out = loop::let_stmt(e, l * ic(threads) + f.tx, out);
  if (bm * bn % threads != 0)
    out = loop::if_then_else(te::lt(l * ic(threads) + f.tx, ic(bm * bn)), out);
  sphase.push_back(loop::make_for(l, ceil_div(bm * bn, threads), ForKind::Serial, out));

  Stmt store_phase = loop::seq(std::move(sphase));
  for (const Tensor& s : scalars) store_phase = loop::allocate(s, MemScope::Local, store_phase);
  // The K loop ends with a barrier, so the C tile could reuse the operand tiles' space; the
  // shared allocations stay outermost, where the arena planner sees them, and so they stack.
  // One statement list (K phase, then the store phase), where merge_stages finds the marked
  // first-chunk loads.
  kphase.push_back(store_phase);
  Stmt inner = loop::seq(std::move(kphase));
  inner = loop::fragment_alloc(fa, FragmentRole::MatrixA, mt, kFrag, kFrag, ks, inner);
  inner = loop::fragment_alloc(fb, FragmentRole::MatrixB, mt, kFrag, kFrag, ks, inner);
  inner =
      loop::fragment_alloc(fc, FragmentRole::Accumulator, MmaType::F32, kFrag, kFrag, ks, inner);
  inner = loop::let_stmt(warp, te::floordiv(f.tx, ic(loop::kWarpSize)),
                         loop::let_stmt(wm, te::floordiv(warp, ic(wc)),
                                        loop::let_stmt(wn, te::floormod(warp, ic(wc)), inner)));
  inner =
      loop::let_stmt(pb, te::floordiv(tile, ic(mtiles * ntiles)),
                     loop::let_stmt(mb, te::floormod(te::floordiv(tile, ic(ntiles)), ic(mtiles)),
                                    loop::let_stmt(nb, te::floormod(tile, ic(ntiles)), inner)));
  // A block's next tile: the operand and C tiles were last read before barriers of this round
  // (the K loop's, the store phase's), and the accumulators are filled again at its start.
  inner = tg.wrap(f, tile, inner);
  if (db) inner = loop::allocate(ra, MemScope::Local, loop::allocate(rb, MemScope::Local, inner));
  inner = loop::allocate(
      sa, MemScope::Shared,
      loop::allocate(sb, MemScope::Shared, loop::allocate(sc, MemScope::Shared, inner)));

  // The tile reads as gpu::Tile::describe() does, so a tuned stage names the tile it was given.
  std::string schedule = std::string("gemm_tc ") + loop::mma_type_name(mt) + " tensor-core tile " +
                         std::to_string(bm) + "x" + std::to_string(bn) + "x" + std::to_string(bk) +
                         ", warps " + std::to_string(tt.wr) + "x" + std::to_string(wc) + " of " +
                         std::to_string(fm) + "x" + std::to_string(fn) + " fragments" +
                         (db ? ", double-buffered" : "") + ", mma m16n16k" + std::to_string(ks) +
                         tg.describe();
  TensorCoreTile built;
  built.kind = TcTemplate::Wmma;
  built.bm = bm;
  built.bn = bn;
  built.bk = bk;
  built.fm = fm;
  built.fn = fn;
  built.warps = tt.wr * wc;
  built.stages = db ? 2 : 1;
  return finish_gemm_tc(op, epilogue, std::move(outputs), f, inner, tg.grid, threads,
                        std::move(schedule), built);
}

}  // namespace souffle::schedule::detail
