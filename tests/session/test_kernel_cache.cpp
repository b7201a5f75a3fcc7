// The session's kernel cache: what the planner's pricing built is there without building again;
// the kernels it gives are compile_plan's; an edit that renumbers kernels keeps them (renamed) and
// their compile results; only a changed partition is built and compiled; old entries go first.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <thread>

#include "core/gpu/nvrtc.h"
#include "core/schedule/plan_pricer.h"
#include "core/session/compile.h"
#include "core/session/kernel_cache.h"
#include "core/support/fault.h"
#include "tests/sample_model.h"

namespace souffle {
namespace {

plan::FusionPlan rules_plan(const plan::Decisions& decisions = {}) {
  plan::PlanOptions po;
  po.strategy = plan::Strategy::Rules;
  po.gpu = gpu::gpu_spec("a100");
  po.decisions = decisions;
  po.pricer = schedule::shared_pricer(po.gpu, po.precision);
  shared_kernel_cache().attach(po.gpu, po.precision);
  return plan::plan(test::sample_model("mmoe").program, po);
}

/// Merges partitions 2 and 3: every later kernel's id goes down by one.
plan::Decisions merge_2_3(const plan::FusionPlan& p) {
  plan::Decisions d;
  d.edits.push_back({plan::Edit::Kind::Merge, p.program.ops[p.partitions[2].tes.front()]->name,
                     p.program.ops[p.partitions[3].tes.front()]->name});
  return d;
}

TEST(KernelCache, PricedPartitionsAreThereAndMatchCompile) {
  KernelCache& cache = shared_kernel_cache();
  const plan::FusionPlan p = rules_plan();
  ASSERT_GT(p.partitions.size(), 6u);
  const KernelCache::Stats before = cache.stats();
  EXPECT_GT(before.received, 0u);
  // A partition priced from its structural twin's price (MMoE's experts) had no kernels built:
  // the views build those, and only those.
  std::vector<bool> priced_built(p.partitions.size());
  size_t twins = 0;
  for (size_t i = 0; i < p.partitions.size(); ++i) {
    priced_built[i] = cache.has_kernels(p, i);
    twins += !priced_built[i];
  }
  EXPECT_LT(twins * 2, p.partitions.size());
  // The kernels a compile builds, emitted: the cache's are the same text.
  std::vector<CompiledKernel> all = build_compiled_kernels(p, {});
  emit_compiled_kernels(all);
  for (size_t i = 0; i < p.partitions.size(); ++i) {
    PartitionKernelsPtr k = cache.kernels(p, i);
    ASSERT_TRUE(k);
    ASSERT_TRUE(k->error.empty()) << k->error;
    EXPECT_EQ(k->built_here, !priced_built[i]) << i;
    EXPECT_EQ(k->partition, p.partitions[i].id);
    std::vector<const CompiledKernel*> expected;
    for (const CompiledKernel& c : all)
      if (c.partition == p.partitions[i].id) expected.push_back(&c);
    ASSERT_EQ(k->kernels.size(), expected.size()) << i;
    for (size_t j = 0; j < expected.size(); ++j) {
      EXPECT_EQ(k->kernels[j].name, expected[j]->name);
      EXPECT_EQ(k->kernels[j].cuda, expected[j]->cuda) << expected[j]->name;
    }
  }
  EXPECT_EQ(cache.stats().builds, before.builds + twins);  // nothing else built for the views
}

TEST(KernelCache, TakesTheKernelsThePricingBuilt) {
  // A cache that saw no build as it happened (attached to no pricer) still builds nothing for a
  // priced partition: it asks the plan's pricer, as the pipeline's build kernels step does.
  const plan::FusionPlan p = rules_plan();
  auto pricer = schedule::shared_pricer(p.gpu_spec, p.precision);
  size_t priced = p.partitions.size();
  for (size_t i = 0; i < p.partitions.size() && priced == p.partitions.size(); ++i)
    if (shared_kernel_cache().has_kernels(p, i)) priced = i;
  ASSERT_LT(priced, p.partitions.size());
  KernelCache local(16);
  const size_t hits = pricer->kernel_hits(), builds = pricer->kernel_builds();
  PartitionKernelsPtr k = local.kernels(p, priced);
  ASSERT_TRUE(k && k->error.empty());
  EXPECT_EQ(pricer->kernel_hits(), hits + 1);
  EXPECT_EQ(pricer->kernel_builds(), builds);
  EXPECT_EQ(k->kernels.front().cuda,
            shared_kernel_cache().kernels(p, priced)->kernels.front().cuda);
}

TEST(KernelCache, AnEditBuildsOnlyWhatItChanged) {
  KernelCache& cache = shared_kernel_cache();
  const plan::FusionPlan p = rules_plan();
  const plan::FusionPlan q = rules_plan(merge_2_3(p));
  ASSERT_TRUE(q.refused.empty());
  ASSERT_EQ(q.partitions.size() + 1, p.partitions.size());
  // Kernels after the merge are the same kernels under ids one lower.
  const size_t last = q.partitions.size() - 1;
  EXPECT_EQ(cache.key(q, last), cache.key(p, last + 1));
  EXPECT_NE(cache.key(q, 2), cache.key(p, 2));
  const KernelCache::Stats before = cache.stats();
  PartitionKernelsPtr moved = cache.kernels(q, last);
  ASSERT_TRUE(moved && moved->error.empty());
  EXPECT_FALSE(moved->built_here);
  EXPECT_EQ(moved->partition, q.partitions[last].id);
  ASSERT_FALSE(moved->kernels.empty());
  EXPECT_EQ(moved->kernels.front().name.rfind("kernel" + std::to_string(q.partitions[last].id), 0),
            0u)
      << moved->kernels.front().name;
  EXPECT_NE(moved->kernels.front().cuda.find(moved->kernels.front().name + "("), std::string::npos);
  EXPECT_EQ(cache.stats().builds, before.builds);
}

TEST(KernelCache, CompileResultsSurviveARenumbering) {
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  KernelCache& cache = shared_kernel_cache();
  const plan::FusionPlan p = rules_plan();
  const plan::FusionPlan q = rules_plan(merge_2_3(p));
  const size_t last = q.partitions.size() - 1;
  CompileOptions o;
  o.archs = {"sm_80"};
  PartitionKernelsPtr first = cache.compiled(p, last + 1, o);
  ASSERT_TRUE(first->compiled);
  ASSERT_TRUE(first->ok()) << first->kernels.front().error;
  const KernelCache::Stats before = cache.stats();
  EXPECT_TRUE(cache.has_compiled(q, last, o));
  PartitionKernelsPtr again = cache.compiled(q, last, o);
  const KernelCache::Stats after = cache.stats();
  EXPECT_EQ(after.compiles, before.compiles);  // nothing compiled
  EXPECT_EQ(after.compile_hits, before.compile_hits + 1);
  EXPECT_FALSE(again->compiled_here);
  ASSERT_EQ(again->kernels.size(), first->kernels.size());
  const CompiledKernel& now = again->kernels.front();
  const CompiledKernel& was = first->kernels.front();
  EXPECT_NE(now.name, was.name);
  EXPECT_EQ(now.max_registers(), was.max_registers());
  EXPECT_GT(now.max_registers(), 0);
  ASSERT_EQ(now.per_arch.size(), 1u);
  EXPECT_NE(now.per_arch.front().find_kernel(now.name), nullptr);
  // The merged partition is new content: it is compiled.
  EXPECT_FALSE(cache.has_compiled(q, 2, o));
  PartitionKernelsPtr merged = cache.compiled(q, 2, o);
  EXPECT_TRUE(merged->compiled_here);
  EXPECT_EQ(cache.stats().compiles, after.compiles + 1);
}

TEST(KernelCache, LeastRecentlyUsedGoesFirst) {
  KernelCache cache(2);
  const plan::FusionPlan p = rules_plan();
  cache.kernels(p, 0);
  cache.kernels(p, 1);
  cache.kernels(p, 0);  // 0 is now the most recent
  cache.kernels(p, 2);  // evicts 1
  EXPECT_TRUE(cache.has_kernels(p, 0));
  EXPECT_FALSE(cache.has_kernels(p, 1));
  EXPECT_TRUE(cache.has_kernels(p, 2));
  EXPECT_EQ(cache.stats().builds, 3u);
  EXPECT_THROW(cache.kernels(p, p.partitions.size()), std::out_of_range);
}

/// Runs two askers of the kernel cache at once: the first build is held at its start (a planted
/// fault point that then runs `then`) until the second asker has had time to arrive; returns how
/// many builds started. A second asker arriving late finds the first build's result.
int ask_twice(const std::function<void()>& then, const std::function<void()>& first,
              const std::function<void()>& second) {
  std::atomic<int> entered{0};
  std::atomic<bool> release{false};
  fault::Planted held("kernel_cache.build", [&] {
    if (entered.fetch_add(1) == 0)
      while (!release.load()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    then();
  });
  std::thread a(first);
  while (entered.load() == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::thread b(second);
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  release = true;
  a.join();
  b.join();
  return entered.load();
}

// Two views asking for the same partition at once (the code panel and the memory picture follow
// one selection): one build, the second asker waits for it and finds it built.
TEST(KernelCache, ASecondAskerWaitsForTheBuildUnderWay) {
  KernelCache& cache = shared_kernel_cache();
  const plan::FusionPlan p = rules_plan();
  cache.clear();
  PartitionKernelsPtr first, second;
  const int builds =
      ask_twice([] {}, [&] { first = cache.kernels(p, 1); }, [&] { second = cache.kernels(p, 1); });
  EXPECT_EQ(builds, 1);
  const KernelCache::Stats st = cache.stats();
  EXPECT_EQ(st.builds, 1u);
  EXPECT_EQ(st.build_hits, 1u);
  ASSERT_TRUE(first && second);
  EXPECT_TRUE(first->error.empty() && second->error.empty());
  ASSERT_EQ(first->kernels.size(), second->kernels.size());
  for (size_t i = 0; i < first->kernels.size(); ++i)
    EXPECT_EQ(first->kernels[i].cuda, second->kernels[i].cuda);
}

// A bug in the build (a logic_error) reaches the asker waiting for it too, and the next ask
// builds again.
TEST(KernelCache, ABuildBugReachesTheWaiterToo) {
  KernelCache& cache = shared_kernel_cache();
  const plan::FusionPlan p = rules_plan();
  cache.clear();
  std::atomic<int> thrown{0};
  auto ask = [&] {
    try {
      cache.kernels(p, 1);
    } catch (const std::logic_error&) {
      ++thrown;
    }
  };
  ask_twice([] { throw std::logic_error("planted bug"); }, ask, ask);
  EXPECT_EQ(thrown.load(), 2);
  EXPECT_FALSE(cache.has_kernels(p, 1));
  PartitionKernelsPtr k = cache.kernels(p, 1);
  ASSERT_TRUE(k);
  EXPECT_TRUE(k->error.empty()) << k->error;
  EXPECT_TRUE(k->built_here);
}

}  // namespace
}  // namespace souffle
