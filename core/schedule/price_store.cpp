#include "core/schedule/price_store.h"

#include <fmt/format.h>
#include <mutex>

#include "core/gpu/compile_cache.h"
#include "core/support/build_id.h"
#include "core/support/byte_io.h"

namespace souffle::schedule {

namespace {

constexpr uint32_t kKindPrice = 2;

// A field added to one of these must be written and read below (and kPriceStoreFormat raised):
// the sizes catch a field added without it (x86-64 with libstdc++, the project's platform).
static_assert(sizeof(plan::PartitionPrice) == 232, "store the new field of PartitionPrice");
static_assert(sizeof(plan::BuiltStage) == 352, "store the new field of BuiltStage");
static_assert(sizeof(plan::Boundary) == 184, "store the new field of Boundary");
static_assert(sizeof(StageBoundary) == 152, "store the new field of StageBoundary");
static_assert(sizeof(BuildChoice) == 56, "store the new field of BuildChoice");

void strings(ByteWriter& w, const std::vector<std::string>& v) {
  w.u64(v.size());
  for (const std::string& s : v) w.str(s);
}
bool strings(ByteReader& r, std::vector<std::string>& v) {
  uint64_t n = 0;
  if (!r.count(n, 8)) return false;
  v.resize(static_cast<size_t>(n));
  for (std::string& s : v)
    if (!r.str(s)) return false;
  return true;
}

void ints(ByteWriter& w, const std::vector<int>& v) {
  w.u64(v.size());
  for (int x : v) w.i64(x);
}
bool ints(ByteReader& r, std::vector<int>& v) {
  uint64_t n = 0;
  if (!r.count(n, 8)) return false;
  v.resize(static_cast<size_t>(n));
  for (int& x : v)
    if (!r.i32(x)) return false;
  return true;
}

/// An enum written as its number, read back only within [0, last].
template <typename E>
bool enumeration(ByteReader& r, E& e, E last) {
  uint32_t x = 0;
  if (!r.u32(x) || x > static_cast<uint32_t>(last)) return false;
  e = static_cast<E>(x);
  return true;
}

void choice(ByteWriter& w, const BuildChoice& c) {
  w.u32(static_cast<uint32_t>(c.kind));
  w.boolean(c.kept);
  w.f64(c.price_kept_us);
  w.f64(c.price_other_us);
  w.str(c.reason);
}
bool choice(ByteReader& r, BuildChoice& c) {
  return enumeration(r, c.kind, ChoiceKind::Waves) && r.boolean(c.kept) && r.f64(c.price_kept_us) &&
         r.f64(c.price_other_us) && r.str(c.reason);
}

void stage(ByteWriter& w, const plan::BuiltStage& s) {
  w.i64(s.launch);
  w.str(s.name);
  strings(w, s.tes);
  strings(w, s.nodes);
  w.i64(s.wave);
  w.i64(s.block_offset);
  w.i64(s.blocks);
  w.i64(s.threads);
  w.str(s.schedule);
  w.str(s.weight_panel);
  w.boolean(s.weight_panel_load);
  w.u64(s.choices.size());
  for (const BuildChoice& c : s.choices) choice(w, c);
  w.f64(s.est_us);
  w.str(s.bound);
  w.str(s.mainloop);
  w.str(s.priced_from);
  w.str(s.corrected);
}
bool stage(ByteReader& r, plan::BuiltStage& s) {
  uint64_t choices = 0;
  bool ok = r.i32(s.launch) && r.str(s.name) && strings(r, s.tes) && strings(r, s.nodes) &&
            r.i32(s.wave) && r.i64(s.block_offset) && r.i64(s.blocks) && r.i64(s.threads) &&
            r.str(s.schedule) && r.str(s.weight_panel) && r.boolean(s.weight_panel_load) &&
            r.count(choices, 4 + 4 + 8 + 8 + 8);
  if (!ok) return false;
  s.choices.resize(static_cast<size_t>(choices));
  for (BuildChoice& c : s.choices)
    if (!choice(r, c)) return false;
  return r.f64(s.est_us) && r.str(s.bound) && r.str(s.mainloop) && r.str(s.priced_from) &&
         r.str(s.corrected);
}

void boundary(ByteWriter& w, const plan::Boundary& b) {
  const StageBoundary& o = b.order;
  w.i64(o.before);
  w.i64(o.after);
  w.u32(static_cast<uint32_t>(o.kind));
  w.u32(static_cast<uint32_t>(o.reason));
  w.str(o.tensor);
  w.i64(o.producer);
  w.i64(o.consumer_block);
  w.i64(o.producer_block);
  w.i64(o.awaited_tiles);
  w.i64(o.grid);
  w.i64(o.waits);
  w.f64(o.grid_price_us);
  w.f64(o.flags_price_us);
  w.boolean(o.prefetched);
  w.boolean(o.forced);
  w.str(o.detail);
  w.i64(b.launch);
  w.i64(b.from);
  w.i64(b.to);
  w.i64(b.producer);
  w.i64(b.te);
  w.f64(b.cost_us);
}
bool boundary(ByteReader& r, plan::Boundary& b) {
  StageBoundary& o = b.order;
  return r.i32(o.before) && r.i32(o.after) && enumeration(r, o.kind, BoundaryKind::Flags) &&
         enumeration(r, o.reason, BoundaryReason::SplitRows) && r.str(o.tensor) &&
         r.i32(o.producer) && r.i64(o.consumer_block) && r.i64(o.producer_block) &&
         r.i64(o.awaited_tiles) && r.i64(o.grid) && r.i32(o.waits) && r.f64(o.grid_price_us) &&
         r.f64(o.flags_price_us) && r.boolean(o.prefetched) && r.boolean(o.forced) &&
         r.str(o.detail) && r.i32(b.launch) && r.i32(b.from) && r.i32(b.to) && r.i32(b.producer) &&
         r.i32(b.te) && r.f64(b.cost_us);
}

std::string spec_text(const gpu::GpuSpec& s) {
  std::string out =
      fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}|{}", s.name,
                  s.compute_capability, s.sm_count, s.max_threads_per_sm, s.max_threads_per_block,
                  s.max_blocks_per_sm, s.registers_per_sm, s.max_registers_per_block,
                  s.max_registers_per_thread, s.shared_memory_per_sm, s.max_shared_memory_per_block,
                  s.reserved_shared_memory_per_block, s.warp_size, s.l2_bytes, s.dram_bytes,
                  s.dram_bandwidth_gbps, s.peak_fp32_tflops, s.peak_tf32_tflops, s.peak_fp16_tflops,
                  s.launch_overhead_us, s.grid_sync_overhead_us);
  for (const std::string& a : s.aliases) out += "|" + a;
  return out + "|" + s.source;
}
static_assert(sizeof(gpu::GpuSpec) == 248, "a new figure of GpuSpec goes into spec_text");

std::mutex g_default_mutex;
std::shared_ptr<PriceStore> g_default;

void price(ByteWriter& w, const plan::PartitionPrice& p) {
  w.str(p.error);
  w.i64(p.launches);
  w.i64(p.grid_barriers);
  w.i64(p.block_barriers);
  w.i64(p.blocks);
  w.i64(p.threads);
  w.i64(p.regs);
  w.i64(p.smem);
  w.i64(p.co_resident);
  w.boolean(p.cooperative);
  w.i64(p.flops);
  w.i64(p.dram_bytes);
  w.i64(p.l2_bytes);
  w.f64(p.est_time_us);
  w.f64(p.launch_us);
  w.f64(p.barrier_us);
  strings(w, p.on_chip);
  ints(w, p.barrier_sites);
  w.u64(p.stages.size());
  for (const plan::BuiltStage& s : p.stages) stage(w, s);
  w.u64(p.boundaries.size());
  for (const plan::Boundary& b : p.boundaries) boundary(w, b);
}

bool price(ByteReader& r, plan::PartitionPrice& out) {
  plan::PartitionPrice p;
  uint64_t stages = 0, boundaries = 0;
  bool ok = r.str(p.error) && r.i32(p.launches) && r.i32(p.grid_barriers) &&
            r.i32(p.block_barriers) && r.i64(p.blocks) && r.i32(p.threads) && r.i32(p.regs) &&
            r.i64(p.smem) && r.i64(p.co_resident) && r.boolean(p.cooperative) && r.i64(p.flops) &&
            r.i64(p.dram_bytes) && r.i64(p.l2_bytes) && r.f64(p.est_time_us) &&
            r.f64(p.launch_us) && r.f64(p.barrier_us) && strings(r, p.on_chip) &&
            ints(r, p.barrier_sites) && r.count(stages, 100);
  if (!ok) return false;
  p.stages.resize(static_cast<size_t>(stages));
  for (plan::BuiltStage& s : p.stages)
    if (!stage(r, s)) return false;
  if (!r.count(boundaries, 100)) return false;
  p.boundaries.resize(static_cast<size_t>(boundaries));
  for (plan::Boundary& b : p.boundaries)
    if (!boundary(r, b)) return false;
  out = std::move(p);
  return true;
}

}  // namespace

std::string encode_price(const plan::PartitionPrice& p) {
  ByteWriter w;
  price(w, p);
  return std::move(w.bytes());
}

bool decode_price(const std::string& bytes, plan::PartitionPrice& out) {
  ByteReader r(bytes);
  plan::PartitionPrice p;
  if (!price(r, p) || !r.done()) return false;
  out = std::move(p);
  return true;
}

std::string encode_twin(const PriceStore::Twin& t) {
  ByteWriter w;
  price(w, t.price);
  w.i64(t.id);
  strings(w, t.structure.names);
  ints(w, t.structure.tes);
  return std::move(w.bytes());
}

bool decode_twin(const std::string& bytes, PriceStore::Twin& out) {
  ByteReader r(bytes);
  PriceStore::Twin t;
  if (!price(r, t.price) || !r.i32(t.id) || !strings(r, t.structure.names) ||
      !ints(r, t.structure.tes) || !r.done())
    return false;
  out = std::move(t);
  return true;
}

std::string price_store_key(const gpu::GpuSpec& spec, const gpu::GpuSpec& plan_spec,
                            gpu::Precision precision, const gpu::Calibration* calibration,
                            const std::string& partition_key) {
  std::string key =
      fmt::format("souffle partition price {}\nbuild {}\nspec {}\nplan spec {}\nprecision {}\n",
                  kPriceStoreFormat, build_id(), spec_text(spec), spec_text(plan_spec),
                  gpu::precision_name(precision));
  key += "calibration ";
  key += calibration ? gpu::calibration_json(*calibration) : std::string("none");
  key += "\n";
  key += partition_key;
  return key;
}

PriceStore::PriceStore(std::string dir, int64_t max_bytes, Warn warn)
    : m_disk(DiskStoreOptions{.dir = std::move(dir),
                              .folder = "prices",
                              .format = kPriceStoreFormat,
                              .kind = kKindPrice,
                              .max_bytes = max_bytes,
                              .label = "price cache",
                              .lost = "partitions are priced but their prices not kept",
                              .redo = "its partition is built and priced again",
                              .durable = false,
                              .evict_every = 256,
                              .count_every = 64},
             std::move(warn)) {}

template <typename T>
std::optional<T> PriceStore::load_as(const std::string& full_key,
                                     bool (*decode)(const std::string&, T&)) {
  std::string body;
  T out;
  const bool hit = m_disk.load(disk_key_hex(full_key), full_key, body,
                               [&](const std::string& b) { return decode(b, out); });
  std::lock_guard<std::mutex> lock(m_mutex);
  ++(hit ? m_hits : m_misses);
  if (!hit) return std::nullopt;
  return out;
}

void PriceStore::store_body(const std::string& full_key, const std::string& body) {
  m_disk.store(disk_key_hex(full_key), full_key, body);
  std::lock_guard<std::mutex> lock(m_mutex);
  ++m_stored;
}

std::optional<plan::PartitionPrice> PriceStore::load(const std::string& full_key) {
  return load_as<plan::PartitionPrice>(full_key, decode_price);
}

void PriceStore::store(const std::string& full_key, const plan::PartitionPrice& price) {
  store_body(full_key, encode_price(price));
}

std::optional<PriceStore::Twin> PriceStore::load_twin(const std::string& full_key) {
  return load_as<Twin>(full_key, decode_twin);
}

void PriceStore::store_twin(const std::string& full_key, const Twin& twin) {
  store_body(full_key, encode_twin(twin));
}

int64_t PriceStore::hits() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_hits;
}
int64_t PriceStore::misses() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_misses;
}
int64_t PriceStore::stored() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_stored;
}

void set_default_price_store(std::shared_ptr<PriceStore> store) {
  // The store replaced (or, at the end of the program, the last one) adds the lookups it
  // counted in memory to the counters file as it goes (DiskStore's destructor).
  std::lock_guard<std::mutex> lock(g_default_mutex);
  g_default = std::move(store);
}

std::shared_ptr<PriceStore> default_price_store() {
  std::lock_guard<std::mutex> lock(g_default_mutex);
  return g_default;
}

std::shared_ptr<PriceStore> open_user_price_store(PriceStore::Warn warn) {
  const std::string dir = gpu::default_compile_cache_dir();
  if (dir.empty()) return nullptr;
  return std::make_shared<PriceStore>(dir, gpu::default_compile_cache_bytes(), std::move(warn));
}

}  // namespace souffle::schedule
