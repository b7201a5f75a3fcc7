/// \file The kernel pricer of the planner: a partition's kernels built (plan_kernels) and priced
/// by cost model v2 (price.h), cached by the partition's content; compile takes the kernels it
/// built instead of building them again.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>

#include "core/gpu/calibration.h"
#include "core/gpu/spec.h"
#include "core/loop/stmt.h"
#include "core/plan/plan.h"
#include "core/schedule/plan_kernels.h"
#include "core/schedule/price_store.h"
#include "core/schedule/price_twins.h"

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
  /// The kernels of `p` in `context` as build_partition_kernels builds them with
  /// plan_build(context), named for p.id: those built when `p`'s content was priced last (the
  /// most recent kKeptKernels builds are kept), else built now and priced. Throws
  /// KernelBuildError as the build does.
  loop::KernelSet kernels(const plan::FusionPlan& context, const plan::Partition& p) const;
  /// Partitions built so far (cache misses) and prices served from the cache.
  size_t builds() const;
  size_t hits() const;
  /// Kernel sets that kernels() took from the cache, and those it had to build.
  size_t kernel_hits() const;
  size_t kernel_builds() const;
  /// Kernel sets priced under grid as a by-product of a build under auto (a partition built
  /// under auto yields its grid-barrier form too; KernelBuildOptions::grid_form): a later price
  /// or kernels() of the same partition under grid takes them without building.
  size_t grid_forms() const;
  /// Kernel sets kept after their price (the most recently built or used); older ones are
  /// dropped, their prices stay.
  static constexpr size_t kKeptKernels = 256;
  /// The content `p` of `context` is priced by: its cache key (see the class comment).
  std::string partition_key(const plan::FusionPlan& context, const plan::Partition& p) const;
  /// `p`'s structure: its key with the names of its tensors, TEs and nodes abstracted
  /// (price_twins.h). Partitions of one structure are twins: a price not in the cache is the
  /// price of a twin priced before, renamed, when there is one (on by default).
  PartitionStructure structure(const plan::FusionPlan& context, const plan::Partition& p) const;
  /// Whether prices are shared between twins (off: every partition of new content is built).
  void set_share_structures(bool on);
  /// Prices served renamed from a twin's (each saved a build).
  size_t twin_hits() const;
  /// Called with a partition's key and kernels each time they are built for a price, so that a
  /// session can keep them instead of building them again to show or compile them (one
  /// observer; null removes it). Called on the pricing thread, outside the pricer's lock.
  using BuildObserver = std::function<void(const std::string& key, const loop::KernelSet& kernels)>;
  void set_build_observer(BuildObserver observer);
  /// Prices kept on disk between processes (price_store.h): a price not in memory is looked up
  /// there before anything is built, and every price built is written there. Until this is
  /// called, a pricer uses whatever default_price_store() is at the time; null turns it off. A
  /// price taken from the store comes without its kernels: kernels() builds them.
  void set_price_store(std::shared_ptr<PriceStore> store);
  std::shared_ptr<PriceStore> price_store() const;
  /// Prices taken from the store (each saved a build).
  size_t store_hits() const;

 private:
  /// The content of one TE, printed once per live op. The memo holds its ops weakly: a
  /// process-wide pricer outlives every model the explorer opens, and holding their TEs (and
  /// through them tensors and constants) would keep each model ever opened in memory. An entry
  /// counts only while its op is alive, so a freed op's address reused by another op is never
  /// mistaken for it.
  const std::string& content(const te::Op& op) const;
  /// Builds and prices `p`, both kept under `key` (the price holds the error of a failed build).
  /// `stored`: set to whether the price went to the price store.
  plan::PartitionPrice build(const std::string& key, const plan::FusionPlan& context,
                             const plan::Partition& p, bool* stored = nullptr) const;
  /// The price of `ks`, the kernels built for `p`.
  plan::PartitionPrice price_built(const plan::FusionPlan& context, const plan::Partition& p,
                                   const loop::KernelSet& ks) const;
  /// Builds with `o` take the schedules kept from the last builds of the same partition (the
  /// planner builds each kernel with its intermediates on chip and in global scratch).
  void use_schedules(const plan::FusionPlan& context, KernelBuildOptions& o) const;
  /// `key` (a partition's under sync auto) with the sync mode grid; empty for another mode.
  std::string grid_key(const std::string& key) const;
  /// Prices and keeps `grid`, the grid-barrier form built beside the kernels of `key` under
  /// auto, under grid_key(key) (nothing when that is empty, or already priced).
  void keep_grid_form(const std::string& key, const plan::FusionPlan& context,
                      const plan::Partition& p, loop::KernelSet grid) const;
  /// A hash of the whole of context.program as printed (every op's content, the program's
  /// inputs and outputs), kept for the last kKeptPrograms programs.
  std::string program_print(const plan::FusionPlan& context) const;
  static constexpr size_t kKeptPrograms = 4;
  /// The full key in the price store of `p`, whose content key is `key`.
  std::string store_key(const plan::FusionPlan& context, const plan::Partition& p,
                        const std::string& key) const;
  /// The store's price of `p` (content key `key`; kept in memory too), if the store has one.
  std::optional<plan::PartitionPrice> from_store(const plan::FusionPlan& context,
                                                 const plan::Partition& p,
                                                 const std::string& key) const;
  /// A structure's first built price, kept in the store for its twins (PriceStore::Twin).
  std::string twin_store_key(const plan::FusionPlan& context, const PartitionStructure& s) const;
  std::optional<PriceStore::Twin> twin_from_store(const plan::FusionPlan& context,
                                                  const PartitionStructure& s) const;
  void twin_to_store(const plan::FusionPlan& context, const PartitionStructure& s,
                     const plan::PartitionPrice& price, int id) const;
  /// Writes `price`, just built for `p` under `key`, to the store (if there is one).
  void to_store(const plan::FusionPlan& context, const plan::Partition& p, const std::string& key,
                const plan::PartitionPrice& price) const;
  /// Hands kernels just built to the build observer, if there is one.
  void observe(const std::string& key, const loop::KernelSet& ks) const;
  /// Keeps `ks` under `key` (most recent first), dropping the oldest beyond kKeptKernels.
  void keep(const std::string& key, loop::KernelSet ks) const;
  struct Printed {
    std::weak_ptr<const te::ComputeOp> op;
    std::string text;
  };
  gpu::GpuSpec m_spec;
  gpu::Precision m_precision;
  std::optional<gpu::Calibration> m_calibration;
  mutable std::mutex m_mutex;
  mutable std::map<std::string, plan::PartitionPrice> m_cache;
  /// The first price built of each structure, with the structure it was built for.
  struct Twin {
    PartitionStructure structure;
    plan::PartitionPrice price;
    int id = 0;  ///< the partition it was built for (its kernels are named for it)
  };
  mutable std::map<std::string, Twin> m_twins;
  /// Structures being built now, and the signal that one of them was (a twin waits for it).
  mutable std::set<std::string> m_building;
  mutable std::condition_variable m_built;
  bool m_share_structures = true;
  mutable size_t m_twin_hits = 0;
  /// Kernel sets by key, most recently used first; m_kernel_at indexes the list.
  mutable std::list<std::pair<std::string, loop::KernelSet>> m_kernels;
  mutable std::map<std::string, std::list<std::pair<std::string, loop::KernelSet>>::iterator>
      m_kernel_at;
  mutable std::map<const te::ComputeOp*, Printed> m_printed;
  mutable size_t m_builds = 0, m_hits = 0, m_kernel_hits = 0, m_kernel_builds = 0;
  mutable size_t m_grid_forms = 0;
  ScheduleMemo m_schedules;
  mutable size_t m_printed_swept = 0;  ///< m_printed's size after its last sweep of dead ops
  BuildObserver m_observer;
  /// A program's ops as addresses, and held weakly (as m_printed does: a closed model's ops
  /// are freed), with the hash of their print.
  struct ProgramPrint {
    std::vector<const te::ComputeOp*> ops;
    std::vector<std::weak_ptr<const te::ComputeOp>> alive;
    std::string hash;
  };
  mutable std::list<ProgramPrint> m_programs;  ///< most recent first
  std::shared_ptr<PriceStore> m_store;
  bool m_store_set = false;  ///< m_store was set: default_price_store() is not consulted
  mutable size_t m_store_hits = 0;
};

/// The pricer a plan on `spec` at `precision` is priced with; `calibration_file` (empty: none)
/// is read with gpu::load_calibration (UserError naming the file for a bad one).
std::shared_ptr<PlanPricer> make_pricer(const gpu::GpuSpec& spec, gpu::Precision precision,
                                        const std::string& calibration_file = "");

/// One pricer per GPU spec (by its figures) and precision for the whole process, so that every
/// plan and re-plan of a session (the explorer's, a benchmark's) shares its kernel cache.
std::shared_ptr<PlanPricer> shared_pricer(const gpu::GpuSpec& spec, gpu::Precision precision);
/// The same with a calibration's constants (one pricer per spec, precision and calibration
/// content, so that re-plans with the same file share their cache).
std::shared_ptr<PlanPricer> shared_pricer(const gpu::GpuSpec& spec, gpu::Precision precision,
                                          const gpu::Calibration& calibration);

}  // namespace souffle::schedule
