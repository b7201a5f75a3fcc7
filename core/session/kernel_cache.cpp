#include "core/session/kernel_cache.h"

#include <fmt/format.h>
#include <algorithm>
#include <cctype>
#include <chrono>
#include <future>
#include <stdexcept>

#include "core/schedule/plan_kernels.h"
#include "core/schedule/plan_pricer.h"
#include "core/session/pipeline.h"
#include "core/support/fault.h"

namespace souffle {

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

/// "kernel12" / "kernel12.1" named for partition `id`: "kernel7" / "kernel7.1".
std::string renamed(const std::string& name, int id) {
  const std::string prefix = "kernel";
  size_t i = prefix.size();
  while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) ++i;
  return prefix + std::to_string(id) + name.substr(i);
}

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  if (from.empty() || from == to) return;
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

const plan::Partition& partition_at(const plan::FusionPlan& plan, size_t index) {
  if (index >= plan.partitions.size())
    throw std::out_of_range(fmt::format("kernel cache: no partition {} (the plan has {})", index,
                                        plan.partitions.size()));
  return plan.partitions[index];
}

gpu::GpuSpec compile_gpu(const plan::FusionPlan& plan, const CompileOptions& options) {
  if (!options.gpu.name.empty()) return options.gpu;
  if (plan.gpu_spec.sm_count > 0) return plan.gpu_spec;
  return gpu::gpu_spec(plan.gpu);
}

/// The pipeline's options for the cache's steps over `plan`: its kernels are those the shared
/// pricer of its GPU and precision builds (as the plan's pricing built them), in its sync mode.
PipelineOptions cache_steps(const plan::FusionPlan& plan, plan::Step until) {
  PipelineOptions o;
  o.until = until;
  o.compile.pricer = schedule::shared_pricer(plan.gpu_spec, plan.precision);
  o.compile.sync = plan.sync;
  return o;
}

}  // namespace

bool PartitionKernels::ok() const {
  if (!error.empty()) return false;
  return std::all_of(kernels.begin(), kernels.end(),
                     [](const CompiledKernel& k) { return k.ok(); });
}

template <typename V>
const V* KernelCache::Lru<V>::find(const std::string& key) {
  auto it = m_map.find(key);
  if (it == m_map.end()) return nullptr;
  m_order.splice(m_order.begin(), m_order, it->second.second);
  return &it->second.first;
}

template <typename V>
void KernelCache::Lru<V>::put(const std::string& key, V value) {
  auto it = m_map.find(key);
  if (it != m_map.end()) {
    it->second.first = std::move(value);
    m_order.splice(m_order.begin(), m_order, it->second.second);
    return;
  }
  m_order.push_front(key);
  m_map.emplace(key, std::make_pair(std::move(value), m_order.begin()));
  while (m_map.size() > m_capacity) {
    m_map.erase(m_order.back());
    m_order.pop_back();
  }
}

KernelCache::KernelCache(size_t capacity)
    : m_built(capacity), m_emitted(capacity), m_compiled(capacity) {}

KernelCache::~KernelCache() = default;

std::string KernelCache::key(const plan::FusionPlan& plan, size_t index) const {
  // The shared pricer prints each TE once per handle, and the plan's pricing printed them.
  return schedule::shared_pricer(plan.gpu_spec, plan.precision)
      ->partition_key(plan, partition_at(plan, index));
}

void KernelCache::store(const std::string& key, const loop::KernelSet& kernels) {
  Built b;
  b.kernels = std::make_shared<const loop::KernelSet>(kernels);
  std::lock_guard<std::mutex> lock(m_mutex);
  ++m_stats.received;
  m_built.put(key, std::move(b));
}

void KernelCache::attach(const gpu::GpuSpec& spec, gpu::Precision precision) {
  auto pricer = schedule::shared_pricer(spec, precision);
  const std::string id = fmt::format("{}", static_cast<const void*>(pricer.get()));
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (std::find(m_attached.begin(), m_attached.end(), id) != m_attached.end()) return;
    m_attached.push_back(id);
  }
  pricer->set_build_observer(
      [this](const std::string& key, const loop::KernelSet& ks) { store(key, ks); });
}

PartitionKernelsPtr KernelCache::emitted(const std::string& key, const plan::FusionPlan& plan,
                                         size_t index, const Built& built, bool built_here) {
  const plan::Partition& p = plan.partitions[index];
  const std::string ekey = key + fmt::format("\n#{}", p.id);
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (const PartitionKernelsPtr* e = m_emitted.find(ekey)) return *e;
  }
  auto out = std::make_shared<PartitionKernels>();
  out->partition = p.id;
  out->error = built.error;
  out->built_here = built_here;
  out->build_ms = built_here ? built.build_ms : 0;
  if (built.kernels) {
    for (const loop::Kernel& k : built.kernels->kernels) {
      CompiledKernel ck;
      ck.partition = p.id;
      ck.kernel = k;
      ck.kernel.name = renamed(k.name, p.id);
      ck.name = ck.kernel.name;
      out->kernels.push_back(std::move(ck));
    }
    auto t0 = std::chrono::steady_clock::now();
    out->kernels = run_pipeline(plan, std::move(out->kernels), plan::Step::Emit,
                                cache_steps(plan, plan::Step::Emit))
                       .kernels.kernels;
    out->emit_ms = ms_since(t0);
  }
  std::lock_guard<std::mutex> lock(m_mutex);
  m_emitted.put(ekey, out);
  return out;
}

PartitionKernelsPtr KernelCache::find(const plan::FusionPlan& plan, size_t index) {
  const std::string k = key(plan, index);
  Built b;
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    const Built* found = m_built.find(k);
    if (!found) return nullptr;
    b = *found;
    ++m_stats.build_hits;
  }
  return emitted(k, plan, index, b, false);
}

bool KernelCache::has_kernels(const plan::FusionPlan& plan, size_t index) const {
  const std::string k = key(plan, index);
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_built.contains(k);
}

PartitionKernelsPtr KernelCache::kernels(const plan::FusionPlan& plan, size_t index) {
  const std::string k = key(plan, index);  // std::out_of_range for a bad index
  const plan::Partition& p = plan.partitions[index];
  // One build per key at a time: a second asker (the code panel and the memory picture both
  // follow a selection) waits for the first build instead of repeating it.
  std::promise<Built> promise;
  {
    std::unique_lock<std::mutex> lock(m_mutex);
    if (const Built* found = m_built.find(k)) {
      const Built b = *found;
      ++m_stats.build_hits;
      lock.unlock();
      return emitted(k, plan, index, b, false);
    }
    auto running = m_building.find(k);
    if (running != m_building.end()) {
      std::shared_future<Built> pending = running->second;
      lock.unlock();
      const Built& b = pending.get();  // rethrows the first build's logic_error
      {
        std::lock_guard<std::mutex> again(m_mutex);
        ++m_stats.build_hits;
      }
      return emitted(k, plan, index, b, false);
    }
    m_building.emplace(k, promise.get_future().share());
  }
  Built b;
  auto t0 = std::chrono::steady_clock::now();
  try {
    // The pipeline's build kernels step for this partition alone: the plan's pricer's kernels
    // (those its pricing built and kept, else built now as pricing builds them).
    fault::point("kernel_cache.build");
    PipelineOptions o = cache_steps(plan, plan::Step::BuildKernels);
    o.partitions = {p.id};
    loop::KernelSet ks;
    for (CompiledKernel& ck : run_pipeline(plan, o).kernels.kernels) {
      if (!ck.error.empty() && b.error.empty()) b.error = ck.error;
      ks.kernels.push_back(std::move(ck.kernel));
    }
    if (b.error.empty()) b.kernels = std::make_shared<const loop::KernelSet>(std::move(ks));
  } catch (const std::logic_error&) {
    abandon(k, promise);
    throw;  // a bug reaches the caller and whoever waits; it is never the kernel's error
  } catch (const std::exception& e) {
    b.error = std::string("cannot build ") + e.what();
  } catch (...) {
    abandon(k, promise);
    throw;
  }
  b.build_ms = ms_since(t0);
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    ++m_stats.builds;
    m_built.put(k, b);
    promise.set_value(b);
    m_building.erase(k);
  }
  return emitted(k, plan, index, b, true);
}

void KernelCache::abandon(const std::string& key, std::promise<Built>& promise) {
  std::lock_guard<std::mutex> lock(m_mutex);
  promise.set_exception(std::current_exception());
  m_building.erase(key);
}

std::string KernelCache::compile_key(const std::string& key, const plan::FusionPlan& plan,
                                     const CompileOptions& options) {
  const gpu::GpuSpec g = compile_gpu(plan, options);
  std::string out = key + "\n@";
  for (const std::string& a : options.archs) out += a + ",";
  out += fmt::format("|{}|{}|{}|{}", g.name, g.compute_capability,
                     static_cast<int>(options.outlining), options.batch);
  return out;
}

bool KernelCache::has_compiled(const plan::FusionPlan& plan, size_t index,
                               const CompileOptions& options) const {
  const std::string ck = compile_key(key(plan, index), plan, options);
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_compiled.contains(ck);
}

PartitionKernelsPtr KernelCache::compiled(const plan::FusionPlan& plan, size_t index,
                                          const CompileOptions& options) {
  for (const std::string& a : options.archs) check_arch(a);
  const plan::Partition& p = partition_at(plan, index);
  const std::string ck = compile_key(key(plan, index), plan, options);
  PartitionKernelsPtr earlier;
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (const PartitionKernelsPtr* e = m_compiled.find(ck)) earlier = *e;
  }
  if (earlier && earlier->partition == p.id) {
    std::lock_guard<std::mutex> lock(m_mutex);
    ++m_stats.compile_hits;
    return earlier;
  }
  PartitionKernelsPtr source = kernels(plan, index);
  auto out = std::make_shared<PartitionKernels>(*source);
  out->compiled = true;
  out->archs = options.archs;
  if (earlier && earlier->kernels.size() == out->kernels.size()) {
    // The same kernels under another id: the figures carry over, the names follow the plan.
    for (size_t j = 0; j < out->kernels.size(); ++j) {
      CompiledKernel& now = out->kernels[j];
      const CompiledKernel& was = earlier->kernels[j];
      now.per_arch = was.per_arch;
      for (gpu::CompileResult& r : now.per_arch) {
        r.ptx.clear();  // named for the old function; a bundle compiles its own
        r.cubin.clear();
        r.from_cache = true;
        for (gpu::KernelResources& kr : r.kernels)
          if (kr.name.compare(0, was.name.size(), was.name) == 0)
            kr.name = now.name + kr.name.substr(was.name.size());
        replace_all(r.log, was.name, now.name);
        replace_all(r.error, was.name, now.name);
      }
      now.entry = was.entry;  // a neutral name (kernel_dedup.h) or the old function's
      now.image = was.image;
      now.co_resident = was.co_resident;
      now.co_resident_limit = was.co_resident_limit;
      now.register_cap = was.register_cap;
      now.error = was.error;
      replace_all(now.error, was.name, now.name);
      if (now.register_cap > 0 && now.ok()) {
        codegen::CudaEmitOptions eo;
        eo.outlining = options.outlining;
        eo.max_registers = now.register_cap;
        now.emit_source(eo);
      }
    }
    out->compiled_here = false;
    out->compile_ms = 0;
    std::lock_guard<std::mutex> lock(m_mutex);
    ++m_stats.compile_hits;
    m_compiled.put(ck, out);
    return out;
  }
  if (out->error.empty() && !out->kernels.empty()) {
    PipelineOptions o;
    o.until = plan::Step::Compile;
    o.gpu = compile_gpu(plan, options);
    o.compile = options;
    PipelineResult r = run_pipeline(plan, std::move(out->kernels), plan::Step::Compile, o);
    out->kernels = std::move(r.kernels.kernels);
    out->compile_ms = r.kernels.compile_ms;
    out->compiled_here = true;
  }
  std::lock_guard<std::mutex> lock(m_mutex);
  ++m_stats.compiles;
  m_compiled.put(ck, out);
  return out;
}

KernelCache::Stats KernelCache::stats() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_stats;
}

void KernelCache::clear() {
  std::lock_guard<std::mutex> lock(m_mutex);
  m_built.clear();
  m_emitted.clear();
  m_compiled.clear();
  m_stats = {};
}

KernelCache& shared_kernel_cache() {
  static KernelCache cache;
  return cache;
}

}  // namespace souffle
