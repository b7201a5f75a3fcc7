/// \file The kernel pricer of the planner: a partition's kernels built (plan_kernels) and priced
/// by cost model v2 (price.h), cached by the partition's content.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "core/gpu/calibration.h"
#include "core/gpu/spec.h"
#include "core/plan/plan.h"

namespace souffle::schedule {

/// Prices partitions from their built kernels on one GPU at one precision, with a calibration
/// file's constants when one is given. Kernels are cached by the content of their partition
/// (its TEs, by handle, with their stages and tiles; which of their outputs are read outside it;
/// strategy, GPU and precision), so a re-plan after an edit builds only the partitions it
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

 private:
  struct Entry {
    std::vector<te::Op> ops;  ///< keeps the handles the key names alive
    plan::PartitionPrice price;
  };
  gpu::GpuSpec m_spec;
  gpu::Precision m_precision;
  std::optional<gpu::Calibration> m_calibration;
  mutable std::mutex m_mutex;
  mutable std::map<std::string, Entry> m_cache;
  mutable size_t m_builds = 0, m_hits = 0;
};

/// The pricer a plan on `spec` at `precision` is priced with; `calibration_file` (empty: none)
/// is read with gpu::load_calibration (UserError naming the file for a bad one).
std::shared_ptr<PlanPricer> make_pricer(const gpu::GpuSpec& spec, gpu::Precision precision,
                                        const std::string& calibration_file = "");

/// One pricer per GPU spec (by its figures) and precision for the whole process, so that every
/// plan and re-plan of a session (the explorer's, a benchmark's) shares its kernel cache.
std::shared_ptr<PlanPricer> shared_pricer(const gpu::GpuSpec& spec, gpu::Precision precision);

}  // namespace souffle::schedule
