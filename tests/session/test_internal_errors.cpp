// Internal errors propagate; expected failures are reported. Each site that reports a failure to
// the user (a kernel's shown error, a note, a missing estimate, a kernel compiled whole) is given,
// through its fault point, first a planted bug (an InternalError, a std::logic_error) that must
// reach the caller, then a planted expected failure that must still be reported as before.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "core/emulate/emulate.h"
#include "core/report/lesson.h"
#include "core/schedule/plan_kernels.h"
#include "core/session/compile.h"
#include "core/session/gemm_bench.h"
#include "core/session/kernel_cache.h"
#include "core/session/pipeline_steps.h"
#include "core/session/runner_client.h"
#include "core/session/timeline.h"
#include "core/session/tune_measure.h"
#include "core/support/error.h"
#include "core/support/fault.h"
#include "tests/sample_model.h"

namespace souffle {
namespace {

void planted_bug() {
  throw InternalError("planted bug");
}

plan::FusionPlan plan_of(const char* model, plan::Strategy s) {
  plan::PlanOptions po;
  po.strategy = s;
  po.gpu = gpu::gpu_spec("a100");
  return plan::plan(test::sample_model(model).program, po);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(InternalErrors, KernelCacheBuild) {
  const plan::FusionPlan p = plan_of("mmoe", plan::Strategy::Rules);
  ASSERT_FALSE(p.partitions.empty());
  {
    KernelCache cache;
    fault::Planted f("kernel_cache.build", planted_bug);
    EXPECT_THROW(cache.kernels(p, 0), InternalError);
  }
  KernelCache cache;
  fault::Planted f("kernel_cache.build",
                   [] { throw schedule::KernelBuildError("kernel0", "", "planted refusal"); });
  PartitionKernelsPtr k = cache.kernels(p, 0);
  ASSERT_TRUE(k);
  EXPECT_TRUE(contains(k->error, "planted refusal")) << k->error;
}

TEST(InternalErrors, EmitAndLtoOutlining) {
  const plan::FusionPlan p = plan_of("bert", plan::Strategy::Souffle);
  std::vector<CompiledKernel> built = build_compiled_kernels(p);
  ASSERT_FALSE(built.empty());
  {
    std::vector<CompiledKernel> ks = built;
    fault::Planted f("compile.emit", planted_bug);
    EXPECT_THROW(emit_compiled_kernels(ks), InternalError);
  }
  {
    std::vector<CompiledKernel> ks = built;
    fault::Planted f("compile.emit", [] { throw UserError("planted unsupported op"); });
    emit_compiled_kernels(ks);
    EXPECT_TRUE(contains(ks[0].error, "cannot emit CUDA: planted unsupported op")) << ks[0].error;
  }
  // LTO outlines kernels of many stages again before compiling; no arch: nothing compiles.
  std::vector<CompiledKernel> ks = built;
  emit_compiled_kernels(ks);
  size_t many = ks.size();
  for (size_t i = 0; i < ks.size() && many == ks.size(); ++i)
    if (ks[i].ok() && ks[i].kernel.stages.size() >= static_cast<size_t>(kLtoMinStages)) many = i;
  ASSERT_LT(many, ks.size()) << "no kernel of " << kLtoMinStages << " stages";
  CompileOptions o;
  o.archs = {};
  o.separate = SeparateCompile::Lto;
  o.use_cache = false;
  {
    std::vector<CompiledKernel> lto = ks;
    fault::Planted f("compile.lto_outline", [] { throw std::logic_error("planted bug"); });
    EXPECT_THROW(compile_kernels(lto, p.gpu_spec, o), std::logic_error);
  }
  std::vector<CompiledKernel> lto = ks;
  fault::Planted f("compile.lto_outline", [] { throw UserError("planted"); });
  compile_kernels(lto, p.gpu_spec, o);
  EXPECT_EQ(lto[many].cuda, ks[many].cuda);  // kept as emitted: compiled whole
}

TEST(InternalErrors, LessonMemoryPicture) {
  PipelineStepOptions o;
  o.strategy = plan::Strategy::Souffle;
  o.gpu = gpu::gpu_spec("a100");
  const PipelineWalk w = walk_pipeline(test::sample_model_path("mmoe"), o);
  const PipelineStep* partition = nullptr;
  for (const PipelineStep& s : w.steps)
    if (s.name == "partition") partition = &s;
  ASSERT_TRUE(partition);
  const int64_t any = int64_t{1} << 40;
  {
    fault::Planted f("lesson.memory_picture", planted_bug);
    EXPECT_THROW(report::lesson_memory_html(*partition, w, any), InternalError);
  }
  fault::Planted f("lesson.memory_picture", [] {
    throw emulate::EmulationError("kernel0", "stage 0", "planted out-of-bounds read");
  });
  const std::string html = report::lesson_memory_html(*partition, w, any);
  EXPECT_TRUE(contains(html, "planted out-of-bounds read")) << html;
}

TEST(InternalErrors, TileMeasurement) {
  schedule::GemmProblem g;
  g.batch = 1;
  g.m = g.n = g.k = 64;
  const GemmBench b = make_gemm_bench(g, gpu::gpu_spec("a100"), gpu::Precision::FP32);
  schedule::TileEstimate c;
  c.tile = b.tile;
  TileMeasureOptions o;
  o.arch = "sm_80";
  o.gpu = gpu::gpu_spec("a100");
  o.dir = (std::filesystem::temp_directory_path() / "test_internal_errors_tiles").string();
  auto unused = [](const std::vector<nlohmann::json>&) -> std::vector<nlohmann::json> {
    throw RunnerFailure("died", "not reached");
  };
  {
    TileMeasurer m(o, unused);
    fault::Planted f("tune_measure.measure", planted_bug);
    EXPECT_THROW(m.measure(*b.op, {c}), InternalError);
  }
  TileMeasurer m(o, unused);
  fault::Planted f("tune_measure.measure",
                   [] { throw RunnerFailure("died", "planted runner exit"); });
  const std::vector<double> us = m.measure(*b.op, {c});
  ASSERT_EQ(us.size(), 1u);
  EXPECT_EQ(us[0], -1.0);
  ASSERT_EQ(m.measurements().size(), 1u);
  EXPECT_TRUE(contains(m.measurements()[0].note, "measuring failed: planted runner exit"))
      << m.measurements()[0].note;
}

TEST(InternalErrors, TimelineStagePrice) {
  const plan::FusionPlan p = plan_of("mmoe", plan::Strategy::Rules);
  std::vector<CompiledKernel> ks = build_compiled_kernels(p);
  ASSERT_FALSE(ks.empty());
  ASSERT_TRUE(ks[0].ok()) << ks[0].error;
  {
    KernelTimeline t;
    fault::Planted f("timeline.stage_price", planted_bug);
    EXPECT_THROW(attach_stage_info(t, ks[0], p), InternalError);
  }
  KernelTimeline t;
  fault::Planted f("timeline.stage_price", [] { throw UserError("planted unpriced stage"); });
  attach_stage_info(t, ks[0], p);
  ASSERT_FALSE(t.stage_est_us.empty());
  EXPECT_EQ(t.stage_est_us[0], -1);  // no estimate, the stages kept
  EXPECT_EQ(t.stage_names.size(), ks[0].kernel.stages.size());
}

}  // namespace
}  // namespace souffle
