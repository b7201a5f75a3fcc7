// Fused attention: the QK^T -> softmax -> xV chain of a head planned under the souffle strategy
// as one stage with an online softmax. On the sample BERT and small attention models (a ViT
// block, Swin windows with a relative bias and a shifted-window mask, a causal GPT block masked
// with -inf and with -1e9, two in float16): the chain is found from the TEs and shown as its own
// decision and transformation site, the TE program and the kernels (emulated) match the
// reference in fp32 and fp16, no built kernel writes a global tensor of the scores' shape, the
// estimated DRAM bytes drop by at least the scores' size, the fusion can be forbidden, and the
// fused stage's CUDA C compiles with NVRTC for sm_80 and sm_90.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/gpu/nvrtc.h"
#include "core/loop/mutator.h"
#include "core/plan/attention.h"
#include "core/plan/partition.h"
#include "core/plan/plan.h"
#include "core/schedule/attention.h"
#include "core/schedule/plan_kernels.h"
#include "core/schedule/plan_pricer.h"
#include "core/session/compile.h"
#include "core/session/load.h"
#include "core/session/sass_report.h"
#include "core/session/test_data.h"
#include "core/session/verify_kernels.h"
#include "core/te/program_index.h"
#include "tests/sample_model.h"

namespace souffle {
namespace {

struct Case {
  const char* name;
  std::string dir;  ///< the model's folder (model.onnx and test_data_set_0)
  int heads;        ///< attention chains the model has (one per layer)
};

std::string fixture(const std::string& name) {
  return std::string(SOUFFLE_SOURCE_DIR) + "/tests/data/attention/" + name;
}

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"bert", std::string(SOUFFLE_SOURCE_DIR) + "/sample_models/bert", 2},
      {"vit", fixture("vit"), 1},
      {"swin_window", fixture("swin_window"), 1},
      {"gpt_causal", fixture("gpt_causal"), 1},
      {"gpt_causal_add", fixture("gpt_causal_add"), 1},
      {"vit_fp16", fixture("vit_fp16"), 1},
      {"gpt_causal_fp16", fixture("gpt_causal_fp16"), 1},
  };
  return all;
}

const LoadedModel& model_of(const Case& c) {
  static std::map<std::string, LoadedModel> cache;
  auto it = cache.find(c.name);
  if (it == cache.end()) it = cache.emplace(c.name, load_model(c.dir + "/model.onnx")).first;
  return it->second;
}

plan::PlanOptions souffle_options(gpu::Precision precision = gpu::Precision::FP32,
                                  const plan::Decisions& d = {}) {
  plan::PlanOptions o;
  o.strategy = plan::Strategy::Souffle;
  o.gpu = gpu::gpu_spec("a100");
  o.precision = precision;
  o.decisions = d;
  o.pricer = std::make_shared<schedule::PlanPricer>(o.gpu, precision);
  return o;
}

std::vector<const plan::Decision*> decisions_of(const plan::FusionPlan& p, plan::DecisionKind k) {
  std::vector<const plan::Decision*> out;
  for (const plan::Partition& q : p.partitions)
    for (const plan::Decision& d : q.decisions)
      if (d.kind == k) out.push_back(&d);
  return out;
}

std::vector<const plan::TransformSite*> attention_sites(const plan::FusionPlan& p) {
  std::vector<const plan::TransformSite*> out;
  for (const plan::TransformSite& s : p.transforms)
    if (s.kind == plan::TransformKind::Attention) out.push_back(&s);
  return out;
}

/// The shapes of the chains' score-shaped tensors (S, [E,] P) of the plan's program.
std::set<Shape> score_shapes(const plan::FusionPlan& p) {
  std::set<Shape> out;
  for (const plan::AttentionChain& c : plan::find_attention_chains(p.program, *plan::index_of(p)))
    out.insert(p.program.ops[static_cast<size_t>(c.scores)]->output->shape);
  return out;
}

/// Global tensors of a score's shape that the kernels store to (buffers they allocate in shared
/// or local memory aside).
std::vector<std::string> score_writes(const loop::KernelSet& ks, const std::set<Shape>& shapes) {
  std::vector<std::string> out;
  for (const loop::Kernel& k : ks.kernels) {
    std::set<const te::TensorNode*> on_chip;
    loop::for_each_stmt(k.body, [&](const loop::Stmt& s) {
      if (const loop::Allocate* a = s.as<loop::Allocate>())
        if (a->scope != loop::MemScope::Global) on_chip.insert(a->buffer.get());
    });
    auto check = [&](const te::Tensor& t) {
      if (!on_chip.count(t.get()) && shapes.count(t->shape))
        out.push_back(k.name + " writes " + t->name);
    };
    loop::for_each_stmt(k.body, [&](const loop::Stmt& s) {
      if (const loop::Store* st = s.as<loop::Store>()) check(st->buffer);
      if (const loop::AtomicAdd* st = s.as<loop::AtomicAdd>()) check(st->buffer);
    });
    for (const te::Tensor& t : k.outputs)
      if (shapes.count(t->shape)) out.push_back(k.name + " outputs " + t->name);
  }
  return out;
}

class Attention : public ::testing::TestWithParam<Case> {};

TEST_P(Attention, FoundFusedAndShownAsADecision) {
  const Case& c = GetParam();
  const plan::FusionPlan p = plan::plan(model_of(c).program, souffle_options());
  plan::verify(p);
  const auto fused = decisions_of(p, plan::DecisionKind::FusedAttention);
  ASSERT_EQ(fused.size(), static_cast<size_t>(c.heads)) << plan::print(p);
  for (const plan::Decision* d : fused) {
    EXPECT_LE(d->merged_us, d->split_us);
    EXPECT_GT(d->merged_us, 0);
    EXPECT_NE(d->reason.find("never written to DRAM"), std::string::npos) << d->reason;
    EXPECT_GE(d->tensors.size(), 2u);
  }
  const auto sites = attention_sites(p);
  ASSERT_EQ(sites.size(), static_cast<size_t>(c.heads));
  for (const plan::TransformSite* s : sites) {
    EXPECT_TRUE(s->applied) << s->key << ": " << s->reason;
    EXPECT_EQ(s->key.rfind("attn:", 0), 0u);
    EXPECT_GE(s->ops.size(), 5u);
  }
  int stages = 0;
  for (const plan::Partition& q : p.partitions)
    for (const plan::Stage& st : q.stages) stages += st.kind == plan::StageKind::Attention;
  EXPECT_EQ(stages, c.heads);
  // The built kernels run it as the fused stage.
  int built = 0;
  for (const plan::Partition& q : p.partitions)
    for (const plan::BuiltStage& b : q.built_stages)
      built += b.schedule.find("fused attention") != std::string::npos;
  EXPECT_EQ(built, c.heads);
  // Rules and unfused plans do not fuse it.
  plan::PlanOptions rules = souffle_options();
  rules.strategy = plan::Strategy::Rules;
  EXPECT_TRUE(attention_sites(plan::plan(model_of(c).program, rules)).empty());
}

TEST_P(Attention, ScoresNeverWrittenAndDramDropsByTheirSize) {
  const Case& c = GetParam();
  const plan::FusionPlan fused = plan::plan(model_of(c).program, souffle_options());
  plan::Decisions forbid;
  for (const plan::TransformSite* s : attention_sites(fused))
    forbid.edits.push_back({plan::Edit::Kind::Forbid, s->key, ""});
  const plan::FusionPlan apart =
      plan::plan(model_of(c).program, souffle_options(gpu::Precision::FP32, forbid));
  // Forbidden: applied as decisions, no fused stage, the sites say why.
  EXPECT_EQ(apart.applied.size(), forbid.edits.size());
  EXPECT_TRUE(apart.refused.empty());
  EXPECT_TRUE(decisions_of(apart, plan::DecisionKind::FusedAttention).empty());
  for (const plan::TransformSite* s : attention_sites(apart)) {
    EXPECT_FALSE(s->applied);
    EXPECT_NE(s->reason.find("forbidden"), std::string::npos) << s->reason;
  }
  const std::set<Shape> shapes = score_shapes(fused);
  ASSERT_FALSE(shapes.empty());
  const loop::KernelSet ks =
      schedule::build_plan_kernels(fused, plan_build(fused).config, plan_build(fused).options);
  EXPECT_EQ(score_writes(ks, shapes), std::vector<std::string>{});
  // The check can fail: the unfused chain writes its scores.
  const loop::KernelSet ka =
      schedule::build_plan_kernels(apart, plan_build(apart).config, plan_build(apart).options);
  EXPECT_FALSE(score_writes(ka, shapes).empty());
  // S and P of every head (and E where it is a TE) no longer travel to DRAM.
  int64_t scores = 0;
  for (const plan::AttentionChain& ch :
       plan::find_attention_chains(fused.program, *plan::index_of(fused)))
    for (int te : {ch.scores, ch.probs}) {
      const te::Tensor& t = fused.program.ops[static_cast<size_t>(te)]->output;
      scores += shape_numel(t->shape) * dtype_size(t->dtype);
    }
  EXPECT_GE(apart.dram_bytes - fused.dram_bytes, scores)
      << "fused " << fused.dram_bytes << " B, apart " << apart.dram_bytes << " B";
  EXPECT_LT(fused.est_time_us, apart.est_time_us);
}

TEST_P(Attention, VerifiesAtTeAndKernelLevel) {
  const Case& c = GetParam();
  const std::vector<TestDataSet> sets = read_test_data(c.dir);
  ASSERT_FALSE(sets.empty());
  // TE level: the souffle program (after its transformations) in the interpreter.
  LoadedModel te_model = model_of(c);
  te_model.program = plan::transformed_program(te_model.program, plan::Strategy::Souffle);
  const VerifyReport te = verify_program(te_model, sets, VerifyOptions{});
  EXPECT_TRUE(te.ok);
  // Kernel level: the fused kernels in the emulator, fp32 and fp16 compute.
  for (gpu::Precision pr : {gpu::Precision::FP32, gpu::Precision::FP16}) {
    const KernelVerifyReport rep =
        verify_kernels(model_of(c), sets, pipeline_options(souffle_options(pr)), VerifyOptions{});
    EXPECT_TRUE(rep.ok()) << gpu::precision_name(pr) << ": " << rep.error;
    int fused = 0, tensor_cores = 0;
    for (const loop::Kernel& k : rep.built.kernels)
      for (const loop::StageInfo& s : k.stages) {
        fused += s.schedule.find("fused attention") != std::string::npos;
        tensor_cores += s.schedule.find("fused attention (online softmax) on tensor cores") !=
                        std::string::npos;
      }
    EXPECT_EQ(fused, c.heads) << gpu::precision_name(pr);
    // At fp16 the fused stage multiplies on tensor cores (attention_mma.cpp); fp32 keeps f32.
    EXPECT_EQ(tensor_cores, pr == gpu::Precision::FP16 ? c.heads : 0) << gpu::precision_name(pr);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, Attention, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return std::string(info.param.name); });

// A user's cut inside a chain leaves it as separate stages, and the site says why; a re-plan
// decides the same as the plan.
TEST(AttentionEdits, CutInsideTheChainAndReplan) {
  const Case& c = cases()[3];  // gpt_causal
  const plan::FusionPlan p = plan::plan(model_of(c).program, souffle_options());
  ASSERT_EQ(attention_sites(p).size(), 1u);
  const plan::TransformSite& site = *attention_sites(p)[0];
  const plan::FusionPlan again = plan::replan(p, souffle_options());
  EXPECT_EQ(decisions_of(again, plan::DecisionKind::FusedAttention).size(), 1u);
  EXPECT_EQ(again.est_time_us, p.est_time_us);
  plan::Decisions cut;
  cut.edits.push_back({plan::Edit::Kind::Split, site.ops[2], ""});  // before the row sum
  const plan::FusionPlan split =
      plan::plan(model_of(c).program, souffle_options(gpu::Precision::FP32, cut));
  plan::verify(split);
  ASSERT_EQ(split.applied.size(), 1u);
  EXPECT_TRUE(decisions_of(split, plan::DecisionKind::FusedAttention).empty());
  ASSERT_EQ(attention_sites(split).size(), 1u);
  EXPECT_FALSE(attention_sites(split)[0]->applied);
  EXPECT_NE(attention_sites(split)[0]->reason.find("different kernels"), std::string::npos)
      << attention_sites(split)[0]->reason;
  const KernelVerifyReport rep =
      verify_kernels(model_of(c), read_test_data(c.dir),
                     pipeline_options(souffle_options(gpu::Precision::FP32, cut)), VerifyOptions{});
  EXPECT_TRUE(rep.ok()) << rep.error;
}

// A kernel of more than kAttentionWindowTes TEs (the sample Swin's 221, a paper-size Swin-B's
// 570) prices each chain's decision on the window around the chain, and the decision says so;
// a smaller kernel (the sample BERT's) is priced whole.
TEST(AttentionWindow, ABigKernelPricesEachChainOnTheWindowAroundIt) {
  const LoadedModel swin =
      load_model(std::string(SOUFFLE_SOURCE_DIR) + "/sample_models/swin/model.onnx");
  const plan::FusionPlan p = plan::plan(swin.program, souffle_options());
  plan::verify(p);
  const auto fused = decisions_of(p, plan::DecisionKind::FusedAttention);
  ASSERT_FALSE(fused.empty()) << plan::print(p);
  size_t windowed = 0;
  for (const plan::Partition& q : p.partitions)
    for (const plan::Decision& d : q.decisions) {
      if (d.kind != plan::DecisionKind::FusedAttention) continue;
      const bool big = q.tes.size() > static_cast<size_t>(plan::detail::kAttentionWindowTes);
      const size_t at = d.reason.find("(priced on the ");
      EXPECT_EQ(at != std::string::npos, big) << q.tes.size() << " TEs: " << d.reason;
      windowed += at != std::string::npos;
      EXPECT_LE(d.merged_us, d.split_us);
    }
  EXPECT_GT(windowed, 0u);
  const plan::FusionPlan bert = plan::plan(model_of(cases()[0]).program, souffle_options());
  for (const plan::Decision* d : decisions_of(bert, plan::DecisionKind::FusedAttention))
    EXPECT_EQ(d->reason.find("(priced on the "), std::string::npos) << d->reason;
}

TEST(AttentionCuda, FusedStageCompilesWithNvrtc) {
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "this build has no NVRTC";
  // A float16 model: the stage converts its operands as it loads them.
  for (const char* name : {"gpt_causal_fp16"}) {
    const Case* c = nullptr;
    for (const Case& x : cases())
      if (std::string(x.name) == name) c = &x;
    ASSERT_NE(c, nullptr);
    const plan::FusionPlan p = plan::plan(model_of(*c).program, souffle_options());
    ASSERT_FALSE(decisions_of(p, plan::DecisionKind::FusedAttention).empty());
    CompileOptions o;
    o.archs = {"sm_80", "sm_90"};
    o.use_cache = false;
    const CompileReport r = compile_plan(p, o);
    EXPECT_TRUE(r.ok()) << name;
    bool online = false;
    for (const CompiledKernel& k : r.kernels) {
      EXPECT_TRUE(k.ok()) << name << " " << k.name << ": " << k.error;
      online |= k.cuda.find("fused attention") != std::string::npos;
    }
    EXPECT_TRUE(online) << name << ": no kernel source names the fused stage";
  }
}

TEST(AttentionTile, TensorCoresWhereTheWarpsShareTheTiles) {
  const Case* c = nullptr;
  for (const Case& x : cases())
    if (std::string(x.name) == "gpt_causal_fp16") c = &x;
  ASSERT_NE(c, nullptr);
  const te::TeProgram program =
      plan::transformed_program(model_of(*c).program, plan::Strategy::Souffle);
  const te::ProgramIndex index(program);
  const std::vector<plan::AttentionChain> chains = plan::find_attention_chains(program, index);
  ASSERT_FALSE(chains.empty());
  std::vector<const te::ComputeOp*> ops;
  for (int te : chains[0].tes()) ops.push_back(program.ops[static_cast<size_t>(te)].get());
  const std::optional<plan::AttentionMatch> m = plan::match_attention_ops(ops);
  ASSERT_TRUE(m.has_value());
  schedule::ScheduleConfig cfg;
  cfg.precision = gpu::Precision::FP16;
  // 4 warps: 32 query rows; a kernel's block of 8 warps: 64.
  schedule::AttentionTile t = schedule::attention_tile(*m, cfg);
  EXPECT_TRUE(t.tensor_cores);
  EXPECT_EQ(t.br, 32);
  EXPECT_EQ(t.threads, 128);
  cfg.exact_block = true;
  cfg.block = 256;
  t = schedule::attention_tile(*m, cfg);
  EXPECT_TRUE(t.tensor_cores);
  EXPECT_EQ(t.br, 64);
  // 3 warps cannot share the 4 units of a score tile: the f32 stage, built without an error.
  cfg.block = 96;
  t = schedule::attention_tile(*m, cfg);
  EXPECT_FALSE(t.tensor_cores);
  EXPECT_GT(t.br, 0);
  const loop::Kernel k = schedule::schedule_attention(*m, cfg);
  EXPECT_EQ(k.stages.front().schedule.find("on tensor cores"), std::string::npos);
  EXPECT_EQ(k.launch.block_x, 96);
  // tf32 and fp32 keep the f32 stage; so does the older template's option.
  cfg.block = 128;
  for (gpu::Precision pr : {gpu::Precision::TF32, gpu::Precision::FP32}) {
    cfg.precision = pr;
    EXPECT_FALSE(schedule::attention_tile(*m, cfg).tensor_cores) << gpu::precision_name(pr);
  }
  cfg.precision = gpu::Precision::BF16;
  EXPECT_TRUE(schedule::attention_tile(*m, cfg).tensor_cores);
  cfg.mma_mainloop = false;
  EXPECT_FALSE(schedule::attention_tile(*m, cfg).tensor_cores);
}

TEST(AttentionCuda, TensorCoreStageCompilesWithMmaAndNoSpills) {
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "this build has no NVRTC";
  // At fp16 the fused stage multiplies on tensor cores: its own SASS (the instructions of its
  // CUDA lines) holds ldmatrix and HMMA, and nothing spills, on sm_80 and sm_90.
  for (const char* name : {"gpt_causal_fp16", "swin_window"}) {
    const Case* c = nullptr;
    for (const Case& x : cases())
      if (std::string(x.name) == name) c = &x;
    ASSERT_NE(c, nullptr) << name;
    const plan::FusionPlan p =
        plan::plan(model_of(*c).program, souffle_options(gpu::Precision::FP16));
    ASSERT_FALSE(decisions_of(p, plan::DecisionKind::FusedAttention).empty()) << name;
    CompileOptions o;
    o.archs = {"sm_80", "sm_90"};
    o.use_cache = false;
    const CompileReport r = compile_plan(p, o);
    ASSERT_TRUE(r.ok()) << name;
    int stages = 0;
    for (const CompiledKernel& k : r.kernels) {
      EXPECT_TRUE(k.ok()) << name << " " << k.name << ": " << k.error;
      EXPECT_EQ(k.spill_bytes(), 0) << name << " " << k.name;
      for (const std::string& arch : o.archs) {
        const KernelSass sass = sass_of(k, arch, false);
        if (!sass.ok) GTEST_SKIP() << "no SASS: " << sass.error;
        for (const StageSass& st : sass.stages) {
          const std::string& sched = k.kernel.stages[static_cast<size_t>(st.stage)].schedule;
          if (sched.rfind("fused attention", 0) != 0) continue;
          ++stages;
          EXPECT_NE(sched.find("on tensor cores"), std::string::npos) << sched;
          EXPECT_TRUE(st.tensor_core) << name << " " << arch;
          EXPECT_GT(st.mix.mma, 0) << name << " " << arch << " " << st.name;
          EXPECT_GT(st.mix.ldsm, 0) << name << " " << arch << " " << st.name;
          EXPECT_EQ(st.mix.local_load + st.mix.local_store, 0) << name << " " << arch;
        }
      }
    }
    EXPECT_GT(stages, 0) << name << ": no fused attention stage in the SASS";
  }
}

}  // namespace
}  // namespace souffle
