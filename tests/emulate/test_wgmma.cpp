// Hopper warpgroup MMA (loop::WgmmaMma and its fence / commit / wait): one 64 x 64 x 32 tile
// through two chained m64n64k16 wgmmas from no-swizzle K-major shared tiles, checked exactly
// against a reference in the emulator; planted wrong layouts, a dropped wait and a dropped
// fence are caught; the emitted CUDA compiles for sm_90a and its SASS holds HGMMA.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "core/codegen/codegen_cuda.h"
#include "core/emulate/emulate.h"
#include "core/emulate/wgmma.h"
#include "core/gpu/nvrtc.h"
#include "core/gpu/sass.h"
#include "core/loop/equal.h"
#include "core/loop/mutator.h"
#include "core/loop/stmt.h"
#include "core/loop/verify.h"
#include "core/session/sass_report.h"
#include "core/te/builder.h"

namespace souffle {
namespace {

using loop::ForKind;
using loop::Kernel;
using loop::MemScope;
using loop::Stmt;
using te::Expr;
using te::Tensor;

constexpr int64_t kM = 64, kN = 64, kK = 32;

/// What to plant in the kernel.
struct Plant {
  bool wrong_accumulator_layout = false;  ///< store the registers by the mma.sync-like rows
  bool swapped_descriptor = false;        ///< lbo and sbo exchanged in A's descriptor
  bool drop_wait = false;
  bool wait_after_store = false;  ///< read the accumulators before the wait
  bool drop_fence = false;
  loop::MmaType type = loop::MmaType::F16;
};

/// C[64, 64] = A[64, 32] x Bt[64, 32]^T by one warpgroup (block of 128 threads).
Kernel wgmma_tile(const Plant& p) {
  const DType st = p.type == loop::MmaType::BF16 ? DType::BFloat16 : DType::Float16;
  Expr bx = te::var("bx"), tx = te::var("tx"), i = te::var("i");
  Tensor a = te::make_input("a", {kM, kK}, st);
  Tensor bt = te::make_input("bt", {kN, kK}, st);
  Tensor c = te::make_compute_tensor("c", {kM, kN}, DType::Float32);
  Tensor sa = loop::make_buffer("sa", {kM * kK}, st);
  Tensor sb = loop::make_buffer("sb", {kN * kK}, st);
  Tensor acc = loop::make_buffer("acc", {kN / 2}, DType::Float32);
  // Core matrices of 8 rows x 16 bytes, contiguous along K (lbo 128 bytes), rows of them
  // kK / 8 core matrices apart (sbo 512 bytes).
  const int64_t lbo = 128, sbo = kK / 8 * 128;
  auto stage_in = [&](const Tensor& shared, const Tensor& global) {
    Expr e = i * te::int_imm(128) + tx;
    Expr r = te::floordiv(e, te::int_imm(kK)), k = te::floormod(e, te::int_imm(kK));
    Expr at = te::floordiv(r, te::int_imm(8)) * te::int_imm(sbo / 2) +
              te::floordiv(k, te::int_imm(8)) * te::int_imm(lbo / 2) +
              te::floormod(r, te::int_imm(8)) * te::int_imm(8) + te::floormod(k, te::int_imm(8));
    return loop::make_for(i, kM * kK / 128, ForKind::Serial,
                          loop::store(shared, {at}, te::read(global, {r, k})));
  };
  std::vector<Stmt> body = {stage_in(sa, a), stage_in(sb, bt), loop::block_barrier()};
  if (!p.drop_fence) body.push_back(loop::wgmma_fence());
  for (int64_t s = 0; s < kK / 16; ++s) {
    // k16 slice s starts two core matrices (2 * lbo bytes) further along K.
    Expr off = te::int_imm(s * 2 * lbo / 2);
    body.push_back(loop::wgmma_mma(p.type, kN, acc, te::int_imm(0), sa, {off},
                                   p.swapped_descriptor ? sbo : lbo,
                                   p.swapped_descriptor ? lbo : sbo, sb, {off}, lbo, sbo, s > 0));
  }
  body.push_back(loop::wgmma_commit());
  if (!p.drop_wait && !p.wait_after_store) body.push_back(loop::wgmma_wait(0));
  Expr w = te::floordiv(tx, te::int_imm(32)),
       g = te::floordiv(te::floormod(tx, te::int_imm(32)), te::int_imm(4)),
       t = te::floormod(tx, te::int_imm(4));
  for (int64_t r = 0; r < kN / 2; ++r) {
    // The PTX ISA's layout: row 16w + g + 8((r/2)%2), column 8(r/4) + 2t + r%2. The planted
    // one swaps the roles of the two low register bits.
    const int64_t half = p.wrong_accumulator_layout ? r % 2 : (r / 2) % 2;
    const int64_t pair = p.wrong_accumulator_layout ? (r / 2) % 2 : r % 2;
    Expr row = w * te::int_imm(16) + g + te::int_imm(8 * half);
    Expr col = te::int_imm(8 * (r / 4)) + t * te::int_imm(2) + te::int_imm(pair);
    body.push_back(loop::store(c, {row, col}, te::read(acc, {te::int_imm(r)})));
  }
  if (p.wait_after_store) body.push_back(loop::wgmma_wait(0));
  Stmt inner = loop::allocate(
      sa, MemScope::Shared,
      loop::allocate(sb, MemScope::Shared, loop::allocate(acc, MemScope::Local, loop::seq(body))));
  Kernel k;
  k.name = "wgmma_tile";
  k.launch.grid_x = 1;
  k.launch.block_x = 128;
  k.inputs = {a, bt};
  k.outputs = {c};
  loop::StageInfo info;
  info.name = "stage0";
  k.stages.push_back(info);
  k.body = loop::make_for(bx, 1, ForKind::BlockIdxX,
                          loop::make_for(tx, 128, ForKind::ThreadIdxX, loop::stage(0, inner)));
  return k;
}

/// Small integers and halves: exact in f16 and bf16, so every sum is exact in f32 and the
/// result must equal the reference bit for bit.
emulate::Buffers inputs(DType st) {
  auto a = std::make_shared<TensorData>(st, Shape{kM, kK});
  auto bt = std::make_shared<TensorData>(st, Shape{kN, kK});
  for (int64_t m = 0; m < kM; ++m)
    for (int64_t k = 0; k < kK; ++k)
      a->set_f64(m * kK + k, static_cast<double>((m * 7 + k * 3) % 11 - 5) / 2);
  for (int64_t n = 0; n < kN; ++n)
    for (int64_t k = 0; k < kK; ++k)
      bt->set_f64(n * kK + k, static_cast<double>((n * 5 + k * 13) % 9 - 4));
  return {{"a", a}, {"bt", bt}};
}

/// Elements of c that differ from the reference.
int64_t mismatches(const Plant& p, const emulate::EmulateOptions& o = {}) {
  Kernel k = wgmma_tile(p);
  loop::verify(k);
  const DType st = p.type == loop::MmaType::BF16 ? DType::BFloat16 : DType::Float16;
  emulate::Buffers buf = inputs(st);
  emulate::run_kernel(k, buf, o);
  const TensorData &a = *buf.at("a"), &bt = *buf.at("bt"), &c = *buf.at("c");
  int64_t bad = 0;
  for (int64_t m = 0; m < kM; ++m)
    for (int64_t n = 0; n < kN; ++n) {
      double want = 0;
      for (int64_t kk = 0; kk < kK; ++kk) want += a.get_f64(m * kK + kk) * bt.get_f64(n * kK + kk);
      bad += c.get_f64(m * kN + n) != want;
    }
  return bad;
}

std::string error_of(const Plant& p) {
  try {
    mismatches(p);
  } catch (const emulate::EmulationError& e) {
    return e.what();
  }
  return "";
}

TEST(Wgmma, AccumulatorLayoutCoversTheTileOnce) {
  for (int64_t n : {8, 64, 256}) {
    std::vector<int> seen(static_cast<size_t>(64 * n), 0);
    for (int t = 0; t < emulate::wgmma::kWarpgroup; ++t)
      for (int i = 0; i < n / 2; ++i) {
        auto [r, c] = emulate::wgmma::accumulator_position(t, i);
        ASSERT_TRUE(r >= 0 && r < 64 && c >= 0 && c < n);
        ++seen[static_cast<size_t>(r * n + c)];
      }
    EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int s) { return s == 1; })) << n;
  }
  // Spot values of the PTX ISA's figure: thread 0 holds (0,0) (0,1) (8,0) (8,1) (0,8);
  // thread 37 (warp 1, lane 5: g 1, t 1) element 6 at row 16 + 1 + 8, column 8 + 2.
  EXPECT_EQ(emulate::wgmma::accumulator_position(0, 2), std::make_pair(8, 0));
  EXPECT_EQ(emulate::wgmma::accumulator_position(0, 4), std::make_pair(0, 8));
  EXPECT_EQ(emulate::wgmma::accumulator_position(37, 6), std::make_pair(25, 10));
  EXPECT_EQ(emulate::wgmma::operand_byte_offset(9, 10, 128, 512), 512 + 128 + 16 + 4);
}

TEST(Wgmma, SingleTileGemmIsExactInTheEmulator) {
  for (loop::MmaType t : {loop::MmaType::F16, loop::MmaType::BF16}) {
    Plant p;
    p.type = t;
    EXPECT_EQ(mismatches(p), 0) << loop::mma_type_name(t);
  }
}

TEST(Wgmma, PlantedWrongLayoutsFail) {
  Plant layout;
  layout.wrong_accumulator_layout = true;
  EXPECT_GT(mismatches(layout), 1000);
  Plant desc;
  desc.swapped_descriptor = true;
  EXPECT_GT(mismatches(desc), 1000);
}

TEST(Wgmma, MissingWaitOrFenceIsCaught) {
  // The accumulators land only at the wait: without it the stores read registers no wgmma has
  // written yet (the uninitialized-read check), and, with that check off, stale values, and the
  // wgmma still in flight when the registers' scope ends.
  Plant drop;
  drop.drop_wait = true;
  EXPECT_NE(error_of(drop).find("never-written acc"), std::string::npos) << error_of(drop);
  emulate::EmulateOptions lax;
  lax.check_uninitialized = false;
  try {
    mismatches(drop, lax);
    ADD_FAILURE() << "a wgmma never waited for passed";
  } catch (const emulate::EmulationError& e) {
    EXPECT_NE(std::string(e.what()).find("wgmma into acc never waited for"), std::string::npos)
        << e.what();
  }
  // Reading the accumulators before the wait: the same read, then stale values.
  Plant early;
  early.wait_after_store = true;
  EXPECT_NE(error_of(early).find("never-written acc"), std::string::npos) << error_of(early);
  EXPECT_GT(mismatches(early, lax), 1000);
  Plant fence;
  fence.drop_fence = true;
  EXPECT_NE(error_of(fence).find("without a wgmma.fence"), std::string::npos) << error_of(fence);
}

TEST(Wgmma, PrinterShowsTheDescriptors) {
  const std::string s = loop::print(wgmma_tile({}).body);
  EXPECT_NE(s.find("wgmma.fence"), std::string::npos) << s;
  EXPECT_NE(s.find("wgmma.mma_async m64n64k16 f16 acc[0] += sa[128]{lbo 128, sbo 512}"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("wgmma.commit_group"), std::string::npos);
  EXPECT_NE(s.find("wgmma.wait_group 0"), std::string::npos);
}

TEST(Wgmma, VerifierEqualityAndMutator) {
  // Structural equality sees the descriptor offsets and the accumulate flag; a substitution
  // that changes nothing keeps the statement.
  Kernel k = wgmma_tile({});
  auto params = [](const Kernel& x) {
    return std::vector<Tensor>{x.inputs[0], x.inputs[1], x.outputs[0]};
  };
  auto same = [&](const Kernel& x) {
    return loop::equal_up_to_params(k.body, x.body, params(k), params(x));
  };
  EXPECT_TRUE(same(wgmma_tile({})));
  Plant swapped;
  swapped.swapped_descriptor = true;
  EXPECT_FALSE(same(wgmma_tile(swapped)));
  loop::StmtMutator identity;
  EXPECT_TRUE(identity.mutate(k.body).same_as(k.body));
  // Operands must be shared allocations: the same wgmma reading a register buffer is refused.
  Tensor acc = loop::make_buffer("acc", {32}, DType::Float32);
  Tensor ra = loop::make_buffer("ra", {1024}, DType::Float16);
  Stmt bad =
      loop::allocate(acc, MemScope::Local,
                     loop::allocate(ra, MemScope::Local,
                                    loop::wgmma_mma(loop::MmaType::F16, 64, acc, te::int_imm(0), ra,
                                                    {te::int_imm(0)}, 128, 512, ra,
                                                    {te::int_imm(0)}, 128, 512, false)));
  Kernel kb = k;
  Expr bx = te::var("bx"), tx = te::var("tx");
  kb.body = loop::make_for(bx, 1, ForKind::BlockIdxX,
                           loop::make_for(tx, 128, ForKind::ThreadIdxX, loop::stage(0, bad)));
  try {
    loop::verify(kb);
    ADD_FAILURE() << "a wgmma on registers verified";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("not a shared allocation"), std::string::npos) << e.what();
  }
  EXPECT_THROW(loop::wgmma_mma(loop::MmaType::TF32, 64, acc, te::int_imm(0), ra, {te::int_imm(0)},
                               128, 512, ra, {te::int_imm(0)}, 128, 512, false),
               std::exception);
  EXPECT_THROW(loop::wgmma_mma(loop::MmaType::F16, 60, acc, te::int_imm(0), ra, {te::int_imm(0)},
                               128, 512, ra, {te::int_imm(0)}, 128, 512, false),
               std::exception);
}

TEST(Wgmma, EmittedKernelCompilesForSm90aWithHgmma) {
  if (!gpu::nvrtc_available()) GTEST_FAIL() << "this build has no NVRTC";
  const std::string src = codegen::emit_cuda(wgmma_tile({}));
  EXPECT_NE(src.find("wgmma.mma_async.sync.aligned.m64n64k16.f32.f16.f16"), std::string::npos);
  gpu::CompileOptions o;
  o.arch = "sm_90a";
  o.use_cache = false;
  const gpu::CompileResult r = gpu::compile_cuda(src, "wgmma_tile.cu", o);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_NE(r.ptx.find("wgmma.mma_async"), std::string::npos);
  ASSERT_EQ(r.kernels.size(), 1u);
  EXPECT_EQ(r.kernels[0].spill_store_bytes + r.kernels[0].spill_load_bytes, 0);
  ASSERT_NE(gpu::find_nvdisasm(), "") << gpu::nvdisasm_missing_message();
  const gpu::Disassembly d = gpu::disassemble(r.cubin, "wgmma_tile.cu");
  ASSERT_TRUE(d.ok) << d.error;
  int64_t hgmma = 0;
  for (const gpu::SassFunction& f : d.listing.functions)
    for (const gpu::SassInstruction& i : f.code) hgmma += i.opcode == "HGMMA";
  EXPECT_EQ(hgmma, 2) << d.text;
  // The SASS report expects tensor-core instructions of the stage.
  EXPECT_TRUE(stage_expectations(wgmma_tile({})).at(0).tensor_core);
  // Without the "a" suffix ptxas refuses wgmma: sm_90 builds keep the Ampere mainloop.
  o.arch = "sm_90";
  EXPECT_FALSE(gpu::compile_cuda(src, "wgmma_tile.cu", o).ok);
}

}  // namespace
}  // namespace souffle
