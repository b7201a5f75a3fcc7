/// \file Partition prices kept on disk between processes: a plan made again (the same model
/// planned by another command, the explorer opening it again, a sweep) takes the price of every
/// partition priced before instead of building its kernels. A price is a pure function of its
/// partition's content key, id and op indices within its whole program (plan_pricer.h), the GPU
/// spec, the precision, the calibration and the code (support/build_id.h), and the full key of
/// an entry names all of them, so a hit is the price a build would give
/// (tests/session/test_price_store.cpp compares whole plans).
/// The prices live in the cache folder's "prices" folder beside the compile cache's, under the
/// same cap each, written without a flush (an entry a crash cut short fails its checksum and is
/// priced again).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "core/gpu/calibration.h"
#include "core/gpu/cost.h"
#include "core/gpu/spec.h"
#include "core/plan/plan.h"
#include "core/schedule/price_twins.h"
#include "core/support/disk_store.h"

namespace souffle::schedule {

/// The layout of an entry's body; a new one is a new key.
inline constexpr uint32_t kPriceStoreFormat = 1;

class PriceStore {
 public:
  using Warn = DiskStore::Warn;
  /// Prices in `dir`/prices, capped at `max_bytes`; `warn` is told each kind of problem once.
  PriceStore(std::string dir, int64_t max_bytes, Warn warn = nullptr);

  /// The price stored under `full_key` (price_store_key), or none (a miss, a corrupt entry,
  /// which is removed and said once).
  std::optional<plan::PartitionPrice> load(const std::string& full_key);
  void store(const std::string& full_key, const plan::PartitionPrice& price);
  /// A structure's first built price (PlanPricer's twins): the price, the structure it was
  /// built for (its names and op indices; its key is the entry's) and the partition id, stored
  /// under `full_key` (price_store_key of the structure's key). A partition whose own price is
  /// not stored takes its twin's, renamed, as in the process that built it.
  struct Twin {
    plan::PartitionPrice price;
    PartitionStructure structure;
    int id = 0;
  };
  std::optional<Twin> load_twin(const std::string& full_key);
  void store_twin(const std::string& full_key, const Twin& twin);

  DiskStore& disk() { return m_disk; }
  /// This process's lookups answered and not, and prices written.
  int64_t hits() const;
  int64_t misses() const;
  int64_t stored() const;

 private:
  template <typename T>
  std::optional<T> load_as(const std::string& full_key, bool (*decode)(const std::string&, T&));
  void store_body(const std::string& full_key, const std::string& body);

  DiskStore m_disk;
  mutable std::mutex m_mutex;
  int64_t m_hits = 0, m_misses = 0, m_stored = 0;
};

/// The full key of a price: the code's build id, the entry format, the pricer's `spec` and the
/// plan's `plan_spec` (every figure of each), the pricer's `precision`, the calibration (its
/// whole file as written back; none: "none"), then the partition's content key.
std::string price_store_key(const gpu::GpuSpec& spec, const gpu::GpuSpec& plan_spec,
                            gpu::Precision precision, const gpu::Calibration* calibration,
                            const std::string& partition_key);

/// A twin's bytes (its price's, then the partition id, the structure's names and op indices),
/// and back.
std::string encode_twin(const PriceStore::Twin& t);
bool decode_twin(const std::string& bytes, PriceStore::Twin& out);
/// A price as the bytes of an entry's body, and back (false for bytes that are not a whole
/// price; `out` is then left alone).
std::string encode_price(const plan::PartitionPrice& p);
bool decode_price(const std::string& bytes, plan::PartitionPrice& out);

/// The store every pricer without one of its own uses (PlanPricer::set_price_store); null, the
/// default, for none. The programs turn it on (the command line, the explorer, the Python
/// package); the library and its tests leave it off, so that what they measure and count is
/// the build.
void set_default_price_store(std::shared_ptr<PriceStore> store);
std::shared_ptr<PriceStore> default_price_store();
/// The store in the user's cache folder (gpu::default_compile_cache_dir, under
/// gpu::default_compile_cache_bytes); null when there is no such folder.
std::shared_ptr<PriceStore> open_user_price_store(PriceStore::Warn warn = nullptr);

}  // namespace souffle::schedule
