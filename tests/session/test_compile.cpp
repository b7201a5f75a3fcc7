// compile_plan: every kernel of a small model's plans compiles for sm_80 and sm_90; a planted
// compile error and an over-sized cooperative grid are reported on their kernel only; a grid
// that fits under fewer registers is compiled again under that cap.
#include <gtest/gtest.h>

#include <atomic>
#include <sstream>

#include "core/codegen/codegen_cuda.h"
#include "core/gpu/cubin.h"
#include "core/gpu/nvrtc.h"
#include "core/loop/stmt.h"
#include "core/session/compile.h"
#include "core/session/load.h"
#include "core/support/cancel.h"
#include "core/support/error.h"
#include "core/te/builder.h"
#include "tests/codegen/kernels.h"

namespace souffle {
namespace {

const LoadedModel& mmoe() {
  static const LoadedModel m =
      load_model(std::string(SOUFFLE_SOURCE_DIR) + "/sample_models/mmoe/model.onnx");
  return m;
}

plan::FusionPlan plan_of(plan::Strategy s) {
  plan::PlanOptions po;
  po.strategy = s;
  po.gpu = gpu::gpu_spec("a100");
  return plan::plan(mmoe().program, po);
}

TEST(Compile, EveryMmoeKernelCompilesForBothArchs) {
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  for (plan::Strategy s : {plan::Strategy::Rules, plan::Strategy::Souffle}) {
    plan::FusionPlan p = plan_of(s);
    CompileReport r = compile_plan(p, {});
    EXPECT_EQ(r.errors, 0) << plan::strategy_name(s);
    ASSERT_EQ(r.kernels.size(), p.kernels());
    for (size_t i = 0; i < r.kernels.size(); ++i) {
      const CompiledKernel& k = r.kernels[i];
      EXPECT_TRUE(k.ok()) << k.error;
      EXPECT_EQ(k.partition, p.partitions[i].id);
      ASSERT_EQ(k.per_arch.size(), 2u);
      EXPECT_EQ(k.per_arch[0].arch, "sm_80");
      EXPECT_EQ(k.per_arch[1].arch, "sm_90");
      for (const gpu::CompileResult& c : k.per_arch) {
        EXPECT_TRUE(c.ok);
        EXPECT_NE(c.ptx.find(".entry " + k.image_entry()), std::string::npos) << k.name;
        EXPECT_NE(c.find_kernel(k.name), nullptr);
      }
      EXPECT_NE(k.cuda.find("extern \"C\""), std::string::npos);
      EXPECT_GT(k.max_registers(), 0);
      EXPECT_GT(k.co_resident, 0);
      if (k.launch.cooperative) {
        EXPECT_LE(k.launch.grid_x, k.co_resident);
      }
    }
    if (s == plan::Strategy::Souffle) {
      ASSERT_EQ(r.kernels.size(), 1u);
      EXPECT_TRUE(r.kernels[0].launch.cooperative);
    }
  }
}

TEST(Compile, PlantedErrorNamesItsKernelAndStageOnly) {
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  plan::FusionPlan p = plan_of(plan::Strategy::Rules);
  CompileOptions o;
  o.archs = {"sm_80"};
  CompileReport r = compile_plan(p, o);
  ASSERT_GE(r.kernels.size(), 3u);
  ASSERT_EQ(r.errors, 0);
  // An undeclared identifier in the first statement after kernel 1's first stage comment.
  CompiledKernel& bad = r.kernels[1];
  size_t stage = bad.cuda.find("// stage 0");
  ASSERT_NE(stage, std::string::npos) << bad.cuda;
  size_t brace = bad.cuda.find("{\n", stage);
  ASSERT_NE(brace, std::string::npos);
  bad.cuda.insert(brace + 2, "    planted_undeclared_name += 1;\n");
  for (CompiledKernel& k : r.kernels) k.per_arch.clear();
  compile_kernels(r.kernels, gpu::gpu_spec("a100"), o);
  EXPECT_TRUE(r.kernels[0].ok()) << r.kernels[0].error;
  EXPECT_TRUE(r.kernels[2].ok()) << r.kernels[2].error;
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error.rfind(bad.name + " (stage 0 `", 0), 0u) << bad.error;
  EXPECT_NE(bad.error.find("planted_undeclared_name"), std::string::npos);
  EXPECT_NE(bad.error.find("> "), std::string::npos) << "the failing line is marked";
  EXPECT_NE(bad.error.find("TEs: "), std::string::npos) << bad.error;
}

TEST(Compile, CooperativeGridBeyondCoResidencyIsAnError) {
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  plan::FusionPlan p = plan_of(plan::Strategy::Souffle);
  CompileOptions o;
  o.archs = {"sm_80"};
  CompileReport r = compile_plan(p, o);
  ASSERT_EQ(r.kernels.size(), 1u);
  ASSERT_TRUE(r.kernels[0].ok()) << r.kernels[0].error;
  // The same kernel on a GPU with a single SM that takes a single block.
  gpu::GpuSpec tiny = gpu::gpu_spec("a100");
  tiny.name = "tiny";
  tiny.sm_count = 1;
  tiny.max_blocks_per_sm = 1;
  r.kernels[0].per_arch.clear();
  if (r.kernels[0].launch.grid_x < 2) GTEST_SKIP() << "the kernel has a single block";
  compile_kernels(r.kernels, tiny, o);
  EXPECT_EQ(r.kernels[0].co_resident, 1);
  EXPECT_NE(r.kernels[0].error.find(r.kernels[0].name + ": cooperative grid of"), std::string::npos)
      << r.kernels[0].error;
  EXPECT_NE(r.kernels[0].error.find("tiny"), std::string::npos);
}

/// A cooperative two-stage kernel that needs many registers: stage 0 keeps 64 accumulators per
/// thread live across a loop (y[b, t, j] = sum_k x[k] * (j + 1) * (t + k)), a grid barrier, and
/// stage 1 sums each row of y into z.
loop::Kernel register_hungry_kernel(int64_t grid, int64_t block) {
  using te::Expr;
  const int64_t n = grid * block;
  te::Tensor x = te::make_input("x", {256}, DType::Float32);
  te::Tensor y = te::make_compute_tensor("y", {n, 64}, DType::Float32);
  te::Tensor z = te::make_compute_tensor("z", {n}, DType::Float32);
  te::Tensor acc = loop::make_buffer("acc", {64}, DType::Float32);
  Expr bx = te::var("bx"), tx = te::var("tx"), k = te::var("k"), j = te::var("j"), i = te::var("i"),
       c = te::var("c");
  auto f32 = [](double v) { return te::imm(DType::Float32, v); };
  Expr row = bx * te::int_imm(block) + tx;
  Expr weight = te::cast(DType::Float32, (j + te::int_imm(1)) * (row + k));
  loop::Stmt s0 = loop::stage(
      0, loop::allocate(
             acc, loop::MemScope::Local,
             loop::seq(
                 {loop::make_for(j, 64, loop::ForKind::Unrolled, loop::store(acc, {j}, f32(0))),
                  loop::make_for(
                      k, 256, loop::ForKind::Serial,
                      loop::make_for(
                          j, 64, loop::ForKind::Unrolled,
                          loop::store(acc, {j}, te::read(acc, {j}) + te::read(x, {k}) * weight))),
                  loop::make_for(j, 64, loop::ForKind::Unrolled,
                                 loop::store(y, {row, j}, te::read(acc, {j})))})));
  loop::Stmt s1 = loop::stage(
      1, loop::let_stmt(
             i, row,
             loop::seq(
                 {loop::store(z, {i}, f32(0)),
                  loop::make_for(c, 64, loop::ForKind::Serial,
                                 loop::store(z, {i}, te::read(z, {i}) + te::read(y, {i, c})))})));
  loop::Kernel kern;
  kern.name = "hungry";
  kern.inputs = {x};
  kern.outputs = {y, z};
  kern.launch.grid_x = grid;
  kern.launch.block_x = block;
  kern.launch.cooperative = true;
  for (int st = 0; st < 2; ++st) {
    loop::StageInfo info;
    info.name = st == 0 ? "accumulate" : "row_sum";
    info.schedule = "by hand";
    info.tes = {st == 0 ? "y" : "z"};
    info.grid_x = grid;
    info.block_x = block;
    kern.stages.push_back(info);
  }
  kern.body = loop::make_for(bx, grid, loop::ForKind::BlockIdxX,
                             loop::make_for(tx, block, loop::ForKind::ThreadIdxX,
                                            loop::seq({s0, loop::grid_barrier(), s1})));
  return kern;
}

CompiledKernel compiled_entry(const loop::Kernel& k, codegen::StageOutlining outlining) {
  CompiledKernel ck;
  ck.kernel = k;
  loop::KernelSet one;
  one.kernels = {k};
  ck.name = codegen::cuda_kernel_names(one)[0];
  codegen::CudaEmitOptions eo;
  eo.outlining = outlining;
  ck.cuda = codegen::emit_cuda(k, eo);
  ck.launch = k.launch;
  return ck;
}

// The register-cap retry: a cooperative grid that is co-resident on a GPU only below the
// registers ptxas first chose is compiled again under the cap that fits, with the stages inline
// or outlined, alone or in a batch with a kernel that needs no cap; the cap is in the source
// and its PTX, so a bundle built from them keeps it.
TEST(Compile, CooperativeGridIsFittedByCappingRegisters) {
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  const int64_t grid = 64, block = 128;
  for (codegen::StageOutlining mode :
       {codegen::StageOutlining::Never, codegen::StageOutlining::Always}) {
    SCOPED_TRACE(mode == codegen::StageOutlining::Never ? "inline" : "outlined");
    CompileOptions o;
    o.archs = {"sm_80", "sm_90"};
    o.outlining = mode;
    o.batch = 2;
    std::vector<CompiledKernel> ks = {compiled_entry(register_hungry_kernel(grid, block), mode)};
    loop::Kernel small = register_hungry_kernel(1, 32);
    small.name = "small";
    ks.push_back(compiled_entry(small, mode));
    const gpu::GpuSpec a100 = gpu::gpu_spec("a100");
    compile_kernels(ks, a100, o);
    ASSERT_TRUE(ks[0].ok()) << ks[0].error;
    const int regs = ks[0].max_registers();
    ASSERT_GT(regs, 64) << "64 live accumulators need more than 64 registers";
    EXPECT_EQ(ks[0].register_cap, 0);
    // Just enough SMs for the grid at 48 registers per thread, too few at the compiled count.
    gpu::GpuSpec tight = a100;
    tight.name = "tight";
    const int per_sm = gpu::occupancy(tight, static_cast<int>(block), 48, 0).blocks_per_sm;
    ASSERT_GT(per_sm, 0);
    tight.sm_count = static_cast<int>((grid + per_sm - 1) / per_sm);
    const int64_t smem = ks[0].per_arch[0].find_kernel(ks[0].name)->shared_bytes;
    ASSERT_LT(gpu::occupancy(tight, static_cast<int>(block), regs, smem).total_blocks, grid);

    for (CompiledKernel& k : ks) k.per_arch.clear();
    compile_kernels(ks, tight, o);
    const CompiledKernel& k = ks[0];
    ASSERT_TRUE(k.ok()) << k.error;
    EXPECT_GE(k.register_cap, 48);
    EXPECT_LT(k.register_cap, regs);
    EXPECT_LE(k.max_registers(), k.register_cap);
    EXPECT_GE(k.co_resident, grid);
    const std::string attr = "__maxnreg__(" + std::to_string(k.register_cap) + ")";
    EXPECT_NE(k.cuda.find(attr), std::string::npos) << k.cuda.substr(0, 2000);
    EXPECT_EQ(k.cuda.find("__launch_bounds__"), std::string::npos) << "CUDA takes one of the two";
    ASSERT_EQ(k.per_arch.size(), 2u);
    // Outlined, the kernel links from one program per stage function (SeparateCompile::Objects),
    // each capped: no PTX, and every function in the CUBIN under the cap.
    EXPECT_EQ(k.separately_linked, mode == codegen::StageOutlining::Always);
    for (const gpu::CompileResult& r : k.per_arch) {
      EXPECT_TRUE(r.ok) << r.log;
      if (k.separately_linked) {
        const std::vector<gpu::CubinFunction> fs = gpu::read_cubin_functions(r.cubin);
        EXPECT_GT(fs.size(), 1u) << r.arch;
        for (const gpu::CubinFunction& f : fs) EXPECT_LE(f.registers, k.register_cap) << f.name;
      } else {
        EXPECT_NE(r.ptx.find(".maxnreg " + std::to_string(k.register_cap)), std::string::npos)
            << r.arch;
      }
    }
    if (mode == codegen::StageOutlining::Always) {
      EXPECT_NE(k.cuda.find("__noinline__"), std::string::npos);
    }
    // The small kernel fits as it is and stays uncapped.
    EXPECT_TRUE(ks[1].ok()) << ks[1].error;
    EXPECT_EQ(ks[1].register_cap, 0);
    EXPECT_EQ(ks[1].cuda.find("__maxnreg__"), std::string::npos);
  }
}

// A cooperative grid that is co-resident only under a register cap is emitted under it before
// its first compile: one NVRTC run per arch (one program reported), not an uncapped compile
// found too big and a second one under the cap. A grid that fits at any register count stays
// uncapped.
TEST(Compile, CooperativeGridNeedingACapIsCompiledOnceUnderIt) {
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  const int64_t grid = 64, block = 128;
  gpu::GpuSpec tight = gpu::gpu_spec("a100");
  tight.name = "tight";
  const int per_sm = gpu::occupancy(tight, static_cast<int>(block), 48, 0).blocks_per_sm;
  ASSERT_GT(per_sm, 0);
  tight.sm_count = static_cast<int>((grid + per_sm - 1) / per_sm);
  CompileOptions o;
  o.archs = {"sm_80"};
  int reports = 0;
  o.progress = [&](const CompileProgress& p) {
    ++reports;
    EXPECT_EQ(p.total, 1);
  };
  std::vector<CompiledKernel> ks = {
      compiled_entry(register_hungry_kernel(grid, block), codegen::StageOutlining::Never)};
  EXPECT_EQ(ks[0].cuda.find("__maxnreg__"), std::string::npos);
  compile_kernels(ks, tight, o);
  const CompiledKernel& k = ks[0];
  ASSERT_TRUE(k.ok()) << k.error;
  EXPECT_EQ(reports, 1) << "compiled again after its first compile";
  EXPECT_GE(k.register_cap, 48);
  EXPECT_LE(k.max_registers(), k.register_cap);
  EXPECT_GE(k.co_resident, grid);
  EXPECT_NE(k.cuda.find("__maxnreg__(" + std::to_string(k.register_cap) + ")"), std::string::npos);
  ASSERT_EQ(k.per_arch.size(), 1u);
  EXPECT_NE(k.per_arch[0].ptx.find(".maxnreg " + std::to_string(k.register_cap)),
            std::string::npos);

  reports = 0;
  std::vector<CompiledKernel> roomy = {
      compiled_entry(register_hungry_kernel(grid, block), codegen::StageOutlining::Never)};
  compile_kernels(roomy, gpu::gpu_spec("a100"), o);
  ASSERT_TRUE(roomy[0].ok()) << roomy[0].error;
  EXPECT_EQ(reports, 1);
  EXPECT_EQ(roomy[0].register_cap, 0);
  EXPECT_EQ(roomy[0].cuda.find("__maxnreg__"), std::string::npos);
}

// ptxas lists the stage functions of an outlined kernel beside it: their spills and frames are
// the kernel's too (a function of another kernel, or no stage function, is not).
TEST(Compile, StageFunctionSpillsCountForTheirKernel) {
  const std::string log =
      "ptxas info    : Function properties for _ZN4_INT12kernel1_stage0EPKfPf\n"
      "ptxas         .     24 bytes stack frame, 8 bytes spill stores, 8 bytes spill loads\n"
      "ptxas info    : Compiling entry function 'kernel1' for 'sm_80'\n"
      "ptxas info    : Function properties for kernel1\n"
      "ptxas         .     16 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Used 80 registers, used 1 barriers, 400 bytes cmem[0]\n"
      "ptxas info    : Function properties for _ZN4_INT12kernel1_stage1EPKfPf\n"
      "ptxas         .     40 bytes stack frame, 0 bytes spill stores, 16 bytes spill loads\n"
      "ptxas info    : Function properties for _ZN4_INT13kernel11_stage0EPKfPf\n"
      "ptxas         .     8 bytes stack frame, 100 bytes spill stores, 100 bytes spill loads\n"
      "ptxas info    : Compiling entry function 'kernel11' for 'sm_80'\n"
      "ptxas info    : Function properties for kernel11\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 30 registers, 360 bytes cmem[0]\n";
  std::vector<gpu::KernelResources> ks = gpu::parse_ptxas_info(log);
  ASSERT_EQ(ks.size(), 2u);
  EXPECT_EQ(ks[0].name, "kernel1");
  EXPECT_EQ(ks[0].registers, 80);
  EXPECT_EQ(ks[0].spill_store_bytes, 4 + 8);
  EXPECT_EQ(ks[0].spill_load_bytes, 4 + 8 + 16);
  EXPECT_EQ(ks[0].stack_bytes, 16 + 40);
  EXPECT_EQ(ks[1].name, "kernel11");
  EXPECT_EQ(ks[1].spill_store_bytes, 100);
  EXPECT_EQ(ks[1].stack_bytes, 8);
}

// A cancel flag stops the build where it is: no partition's kernels are built after it is set
// (the one under way finishes), nothing is emitted, and no NVRTC program starts after it.
TEST(Compile, CancelStopsTheBuildBetweenKernels) {
  plan::FusionPlan p = plan_of(plan::Strategy::Unfused);
  ASSERT_GT(p.kernels(), 2u);
  std::atomic<bool> cancel{false};
  CompileOptions o;
  o.archs.clear();  // the build and emit only, as the emulator's profile needs
  o.cancel = &cancel;
  std::vector<std::string> started;
  o.building = [&](const std::string& k) {
    started.push_back(k);
    if (started.size() == 2) cancel = true;
  };
  EXPECT_THROW(compile_plan(p, o), Cancelled);
  EXPECT_EQ(started.size(), 2u);  // the first two; none after the flag
  // Unset, the same build goes through every partition.
  cancel = false;
  started.clear();
  o.building = [&](const std::string& k) { started.push_back(k); };
  CompileReport whole = compile_plan(p, o);
  EXPECT_EQ(whole.errors, 0);
  EXPECT_GT(started.size(), 2u);
  // Set before emitting: the kernels built are not emitted.
  std::vector<CompiledKernel> built = build_compiled_kernels(p);
  cancel = true;
  EXPECT_THROW(emit_compiled_kernels(built, codegen::StageOutlining::Auto, &cancel), Cancelled);
  EXPECT_TRUE(built.front().cuda.empty());
}

TEST(Compile, CancelStopsNvrtcBetweenPrograms) {
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  plan::FusionPlan p = plan_of(plan::Strategy::Unfused);
  std::atomic<bool> cancel{false};
  CompileOptions o;
  o.archs = {"sm_80"};
  o.use_cache = false;  // every program compiled, none answered from the cache
  o.threads = 1;        // one after the other, so the count is exact
  o.cancel = &cancel;
  int compiled = 0, total = 0;
  o.progress = [&](const CompileProgress& pr) {
    ++compiled;
    total = pr.total;
    cancel = true;
  };
  EXPECT_THROW(compile_plan(p, o), Cancelled);
  EXPECT_GT(total, 1);
  EXPECT_EQ(compiled, 1);  // of `total` programs, only the one under way when it was set
}

TEST(Compile, BadArchIsAUserError) {
  EXPECT_THROW(check_arch("sm80"), UserError);
  EXPECT_THROW(check_arch("gfx90a"), UserError);
  EXPECT_NO_THROW(check_arch("sm_90a"));
  EXPECT_NO_THROW(check_arch("compute_80"));
  CompileOptions o;
  o.archs = {"x86"};
  EXPECT_THROW(compile_plan(plan_of(plan::Strategy::Rules), o), UserError);
}

TEST(Compile, ErrorExcerptMarksTheLogsLines) {
  std::string src = "a\nb\nc\nd\ne\nf\ng\n";
  std::string ex = compile_error_excerpt(src, "k.cu(4): error: bad", 1);
  EXPECT_NE(ex.find(">    4 | d"), std::string::npos) << ex;
  EXPECT_NE(ex.find("     3 | c"), std::string::npos) << ex;
  EXPECT_EQ(ex.find("| b"), std::string::npos) << ex;
}

// A kernel's excerpt names the stage of the line NVRTC points at, from the map the emitter
// recorded beside the source (not from the comments above the line).
TEST(Compile, ErrorExcerptNamesTheStageOfTheLine) {
  CompiledKernel ck;
  ck.kernel = codegen::testing::two_stage_kernel();
  ck.emit_source({});
  const std::string needle = "t[i / 256 * 256 + i % 256] = x[";
  int line = 0;
  {
    std::istringstream in(ck.cuda);
    int n = 0;
    for (std::string l; std::getline(in, l);) {
      ++n;
      if (line == 0 && l.find(needle) != std::string::npos) line = n;
    }
  }
  ASSERT_GT(line, 0) << ck.cuda;
  const std::string log = "k.cu(" + std::to_string(line) + "): error: bad";
  const std::string ex = compile_error_excerpt(ck, log, 1);
  EXPECT_NE(ex.find("--- line " + std::to_string(line) +
                    ", in stage 0 `stage0_add` (TEs: Add_0 <- Add_0 (Add))"),
            std::string::npos)
      << ex;
  // A line outside every stage (the preamble) names none.
  const std::string outside = compile_error_excerpt(ck, "k.cu(1): error: bad", 0);
  EXPECT_EQ(outside.find(", in stage"), std::string::npos) << outside;
  // Without a kernel, the excerpt names no stage.
  EXPECT_EQ(compile_error_excerpt(ck.cuda, log, 1).find(", in stage"), std::string::npos);
}

}  // namespace
}  // namespace souffle
