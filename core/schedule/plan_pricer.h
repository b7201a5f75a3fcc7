/// \file The kernel pricer of the planner: a partition's kernels built (plan_kernels) and priced
/// by cost model v2 (price.h), cached by the partition's content.
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "core/gpu/calibration.h"
#include "core/gpu/spec.h"
#include "core/loop/stmt.h"
#include "core/plan/plan.h"

namespace souffle::schedule {

/// Prices partitions from their built kernels on one GPU at one precision, with a calibration
/// file's constants when one is given. Prices are cached by the content of their partition (its
/// TEs as printed, with the shapes of what they read, their stages and tiles; which of their
/// outputs are read outside it; strategy, GPU and precision), so a re-plan after an edit, or a
/// plan that transforms the program anew into the same TEs, builds only the partitions that
/// changed. Safe to share between threads.
class PlanPricer : public plan::KernelPricer {
 public:
  PlanPricer(gpu::GpuSpec spec, gpu::Precision precision,
             std::optional<gpu::Calibration> calibration = std::nullopt);
  plan::PartitionPrice price(const plan::FusionPlan& context,
                             const plan::Partition& p) const override;
  std::string constants() const override;
  /// Partitions built so far (cache misses) and prices served from the cache.
  size_t builds() const;
  size_t hits() const;
  /// The content `p` of `context` is priced by: its cache key (see the class comment).
  std::string partition_key(const plan::FusionPlan& context, const plan::Partition& p) const;
  /// Called with a partition's key and kernels each time they are built for a price, so that a
  /// session can keep them instead of building them again to show or compile them (one
  /// observer; null removes it). Called on the pricing thread, outside the pricer's lock.
  using BuildObserver = std::function<void(const std::string& key, const loop::KernelSet& kernels)>;
  void set_build_observer(BuildObserver observer);

 private:
  /// The content of one TE, printed once per handle (the handle kept so the key stays valid).
  const std::string& content(const te::Op& op) const;
  struct Printed {
    te::Op op;
    std::string text;
  };
  gpu::GpuSpec m_spec;
  gpu::Precision m_precision;
  std::optional<gpu::Calibration> m_calibration;
  mutable std::mutex m_mutex;
  mutable std::map<std::string, plan::PartitionPrice> m_cache;
  mutable std::map<const te::ComputeOp*, Printed> m_printed;
  mutable size_t m_builds = 0, m_hits = 0;
  BuildObserver m_observer;
};

/// The pricer a plan on `spec` at `precision` is priced with; `calibration_file` (empty: none)
/// is read with gpu::load_calibration (UserError naming the file for a bad one).
std::shared_ptr<PlanPricer> make_pricer(const gpu::GpuSpec& spec, gpu::Precision precision,
                                        const std::string& calibration_file = "");

/// One pricer per GPU spec (by its figures) and precision for the whole process, so that every
/// plan and re-plan of a session (the explorer's, a benchmark's) shares its kernel cache.
std::shared_ptr<PlanPricer> shared_pricer(const gpu::GpuSpec& spec, gpu::Precision precision);

}  // namespace souffle::schedule
