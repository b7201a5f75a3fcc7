/// \file The session's kernel cache: a partition's kernels built, emitted and compiled once per
/// content, so a view builds only what it shows, an edit rebuilds only what it changed, and a
/// compile reuses what a view (or the planner's pricing) already built.
#pragma once

#include <cstddef>
#include <functional>
#include <future>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "core/gpu/spec.h"
#include "core/plan/plan.h"
#include "core/session/compile.h"

namespace souffle {

/// The kernels of one partition of one plan (one per launch, in order), emitted as CUDA C and,
/// once compiled, with their per-arch results. Plain values, shared read-only.
struct PartitionKernels {
  int partition = -1;  ///< plan::Partition::id the kernels are named for (kernelN, kernelN.j)
  std::vector<CompiledKernel> kernels;
  /// Why the partition has no kernels (the build's error, naming the kernel and the TE).
  std::string error;
  /// Compiled for `archs` (per_arch filled, co-residency checked, errors named).
  bool compiled = false;
  std::vector<std::string> archs;
  /// Where the kernels came from: built for this request, or found (built by the planner's
  /// pricing or an earlier request); compiled for this request, or found. A kernel compiled
  /// under another partition id (an edit renumbered the kernels) keeps its figures: ptxas
  /// registers, shared memory and spills do not depend on the function's name.
  bool built_here = false;
  bool compiled_here = false;
  double build_ms = 0, emit_ms = 0, compile_ms = 0;
  bool ok() const;
};
using PartitionKernelsPtr = std::shared_ptr<const PartitionKernels>;

/// Kernels by partition content: the partition's TEs as printed with the shapes they read, its
/// stages and tiles, which outputs are read outside it, and the plan's strategy, GPU and
/// precision (schedule::PlanPricer's key). Least recently used entries go first beyond
/// `capacity`. Thread-safe; a partition being built is built once: a second thread asking for
/// it waits for that build.
class KernelCache {
 public:
  explicit KernelCache(size_t capacity = 160);
  ~KernelCache();

  /// The content key of partition `index` of `plan`.
  std::string key(const plan::FusionPlan& plan, size_t index) const;

  /// The built and emitted kernels of partition `index`: found, or built now. Never throws for
  /// a partition that cannot be built (`error` says why); throws std::out_of_range for a bad
  /// index.
  PartitionKernelsPtr kernels(const plan::FusionPlan& plan, size_t index);
  /// The same when already built (emitting is cheap), else null: nothing is built.
  PartitionKernelsPtr find(const plan::FusionPlan& plan, size_t index);
  /// Whether partition `index`'s kernels are built (by a view, a compile or the pricing).
  bool has_kernels(const plan::FusionPlan& plan, size_t index) const;

  /// The kernels of partition `index` compiled with NVRTC for `options.archs` (co-residency
  /// judged on options.gpu, else the plan's GPU): found when the same content was compiled for
  /// the same archs, else built (or found) and compiled now. UserError for a bad arch.
  PartitionKernelsPtr compiled(const plan::FusionPlan& plan, size_t index,
                               const CompileOptions& options);
  /// Whether compiled() would find partition `index` compiled for `options.archs`.
  bool has_compiled(const plan::FusionPlan& plan, size_t index,
                    const CompileOptions& options) const;

  /// Keeps the kernels the shared pricer of `spec` at `precision` builds while pricing
  /// (schedule::shared_pricer), so that showing or compiling a planned partition builds nothing.
  void attach(const gpu::GpuSpec& spec, gpu::Precision precision);

  /// Partitions built here (misses), found built, compiled here, found compiled.
  struct Stats {
    size_t builds = 0, build_hits = 0, compiles = 0, compile_hits = 0, received = 0;
  };
  Stats stats() const;
  void clear();

 private:
  struct Built {
    std::shared_ptr<const loop::KernelSet> kernels;
    std::string error;
    double build_ms = 0;
  };
  template <typename V>
  class Lru {
   public:
    explicit Lru(size_t capacity) : m_capacity(capacity) {}
    const V* find(const std::string& key);
    bool contains(const std::string& key) const { return m_map.count(key) > 0; }
    void put(const std::string& key, V value);
    void clear() {
      m_map.clear();
      m_order.clear();
    }

   private:
    size_t m_capacity;
    std::list<std::string> m_order;  ///< most recent first
    std::map<std::string, std::pair<V, std::list<std::string>::iterator>> m_map;
  };
  void store(const std::string& key, const loop::KernelSet& kernels);
  /// A build of `key` that threw (the exception being handled): its waiters get the exception,
  /// the next asker builds again.
  void abandon(const std::string& key, std::promise<Built>& promise);
  PartitionKernelsPtr emitted(const std::string& key, const plan::FusionPlan& plan, size_t index,
                              const Built& built, bool built_here);
  static std::string compile_key(const std::string& key, const plan::FusionPlan& plan,
                                 const CompileOptions& options);

  mutable std::mutex m_mutex;
  Lru<Built> m_built;
  Lru<PartitionKernelsPtr> m_emitted;  ///< by key and partition id
  Lru<PartitionKernelsPtr> m_compiled;
  std::map<std::string, std::shared_future<Built>> m_building;  ///< builds under way, by key
  std::vector<std::string> m_attached;
  Stats m_stats;
};

/// The process's kernel cache (the explorer's views and compiles share it).
KernelCache& shared_kernel_cache();

}  // namespace souffle
