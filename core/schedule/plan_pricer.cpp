#include "core/schedule/plan_pricer.h"

#include <fmt/format.h>
#include <algorithm>
#include <map>
#include <set>
#include <string_view>

#include "core/schedule/plan_kernels.h"
#include "core/schedule/price.h"
#include "core/support/tensor_data.h"
#include "core/te/mutator.h"
#include "core/te/printer.h"

namespace souffle::schedule {

PlanPricer::PlanPricer(gpu::GpuSpec spec, gpu::Precision precision,
                       std::optional<gpu::Calibration> calibration)
    : m_spec(std::move(spec)), m_precision(precision), m_calibration(std::move(calibration)) {}

void PlanPricer::set_price_store(std::shared_ptr<PriceStore> store) {
  std::lock_guard<std::mutex> lock(m_mutex);
  m_store = std::move(store);
  m_store_set = true;
}

std::shared_ptr<PriceStore> PlanPricer::price_store() const {
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_store_set) return m_store;
  }
  return default_price_store();
}

size_t PlanPricer::store_hits() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_store_hits;
}

std::string PlanPricer::program_print(const plan::FusionPlan& context) const {
  const std::vector<te::Op>& ops = context.program.ops;
  // The same ops: each at the same address and still alive (a live op's address is its own).
  auto same = [&ops](const ProgramPrint& kept) {
    if (kept.ops.size() != ops.size()) return false;
    for (size_t i = 0; i < ops.size(); ++i)
      if (kept.ops[i] != ops[i].get() || kept.alive[i].expired()) return false;
    return true;
  };
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    for (const ProgramPrint& pp : m_programs)
      if (same(pp)) return pp.hash;
  }
  std::string text;
  for (const te::Op& op : ops) text += content(op) + "\n";
  for (const std::vector<te::Tensor>* ts : {&context.program.inputs, &context.program.outputs}) {
    text += "|";
    for (const te::Tensor& t : *ts)
      text += fmt::format(" {}:{}:{}", t->name, shape_str(t->shape), dtype_name(t->dtype));
  }
  ProgramPrint pp;
  pp.hash = disk_key_hex(text);
  for (const te::Op& op : ops) {
    pp.ops.push_back(op.get());
    pp.alive.push_back(op);
  }
  std::lock_guard<std::mutex> lock(m_mutex);
  m_programs.push_front(pp);
  if (m_programs.size() > kKeptPrograms) m_programs.pop_back();
  return pp.hash;
}

std::string PlanPricer::store_key(const plan::FusionPlan& context, const plan::Partition& p,
                                  const std::string& key) const {
  // The whole program's print: a partition's kernels may read more of the program than its
  // own TEs (views folded into their readers), which the content key does not print, so a
  // price is kept for its program only. And the partition's id and op indices: its price names
  // its kernels by the id and its barrier sites by op index, and the content key says neither.
  std::string where = fmt::format("program {}\npartition {} tes", program_print(context), p.id);
  for (int te : p.tes) where += " " + std::to_string(te);
  return price_store_key(m_spec, context.gpu_spec, m_precision,
                         m_calibration ? &*m_calibration : nullptr, where + "\n" + key);
}

std::optional<plan::PartitionPrice> PlanPricer::from_store(const plan::FusionPlan& context,
                                                           const plan::Partition& p,
                                                           const std::string& key) const {
  std::shared_ptr<PriceStore> store = price_store();
  if (!store) return std::nullopt;
  std::optional<plan::PartitionPrice> got = store->load(store_key(context, p, key));
  if (!got) return std::nullopt;
  std::lock_guard<std::mutex> lock(m_mutex);
  ++m_store_hits;
  return m_cache.emplace(key, std::move(*got)).first->second;
}

std::string PlanPricer::twin_store_key(const plan::FusionPlan& context,
                                       const PartitionStructure& s) const {
  return price_store_key(m_spec, context.gpu_spec, m_precision,
                         m_calibration ? &*m_calibration : nullptr,
                         "program " + program_print(context) + "\nstructure\n" + s.key);
}

std::optional<PriceStore::Twin> PlanPricer::twin_from_store(const plan::FusionPlan& context,
                                                            const PartitionStructure& s) const {
  std::shared_ptr<PriceStore> store = price_store();
  if (!store) return std::nullopt;
  return store->load_twin(twin_store_key(context, s));
}

void PlanPricer::twin_to_store(const plan::FusionPlan& context, const PartitionStructure& s,
                               const plan::PartitionPrice& price, int id) const {
  if (std::shared_ptr<PriceStore> store = price_store())
    store->store_twin(twin_store_key(context, s), PriceStore::Twin{price, s, id});
}

void PlanPricer::to_store(const plan::FusionPlan& context, const plan::Partition& p,
                          const std::string& key, const plan::PartitionPrice& price) const {
  if (std::shared_ptr<PriceStore> store = price_store())
    store->store(store_key(context, p, key), price);
}

std::string PlanPricer::constants() const {
  return gpu::cost_constants(m_spec, m_precision, m_calibration ? &*m_calibration : nullptr).source;
}

size_t PlanPricer::builds() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_builds;
}

size_t PlanPricer::hits() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_hits;
}

size_t PlanPricer::grid_forms() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_grid_forms;
}

size_t PlanPricer::kernel_hits() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_kernel_hits;
}

size_t PlanPricer::kernel_builds() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_kernel_builds;
}

const std::string& PlanPricer::content(const te::Op& op) const {
  std::lock_guard<std::mutex> lock(m_mutex);
  auto it = m_printed.find(op.get());
  if (it != m_printed.end()) {
    if (it->second.op.lock() == op) return it->second.text;
    m_printed.erase(it);  // a dead op's entry; its address now belongs to `op`
  }
  // Entries of ops that died (models closed, programs re-planned) go once the memo has doubled.
  if (m_printed.size() > 2 * m_printed_swept + 4096) {
    std::erase_if(m_printed, [](const auto& e) { return e.second.op.expired(); });
    m_printed_swept = m_printed.size();
  }
  std::string text = te::print(*op);
  std::set<const te::TensorNode*> seen;
  auto reads = [&](const te::Expr& e) {
    if (!e.defined()) return;
    te::for_each_node(e, [&](const te::Expr& x) {
      const te::Read* r = x.as<te::Read>();
      if (!r || !seen.insert(r->tensor.get()).second) return;
      const te::TensorNode& t = *r->tensor;
      text += fmt::format(" {{{}:{}:{}:{}", t.name, shape_str(t.shape), dtype_name(t.dtype),
                          static_cast<int>(t.source));
      // A small constant's values may be folded into the code; a large one is only read.
      if (t.data && t.data->byte_size() <= 256)
        text += fmt::format(":{:x}", std::hash<std::string_view>{}(std::string_view(
                                         reinterpret_cast<const char*>(t.data->raw()),
                                         static_cast<size_t>(t.data->byte_size()))));
      text += "}";
    });
  };
  reads(op->body);
  reads(op->init);
  // The ONNX node it came from: built stages name it (a twin's price is renamed by it).
  text += fmt::format(" @{{{}}}:{}", op->origin.node, op->origin.op_type);
  return m_printed.emplace(op.get(), Printed{op, std::move(text)}).first->second.text;
}

namespace {

/// What the kernels of `p` depend on, as text: the context's strategy, precision, sync mode and
/// GPU, and per
/// stage its kind, TEs (`content`), tiles and which outputs are read outside the partition.
template <typename Content, typename TeLabel>
std::string content_key(const plan::FusionPlan& c, const plan::Partition& p, Content&& content,
                        TeLabel&& te_label) {
  const analysis::Analysis& a = c.analysis;
  std::set<int> mine(p.tes.begin(), p.tes.end());
  const gpu::GpuSpec& g = c.gpu_spec;
  std::string key = fmt::format("{}|{}|sync-{}|{}|{}|{}|{}|{}|{}", plan::strategy_name(c.strategy),
                                gpu::precision_name(c.precision), sync_mode_name(c.sync), g.name,
                                g.sm_count, g.shared_memory_per_sm, g.registers_per_sm,
                                g.launch_overhead_us, g.grid_sync_overhead_us);
  key += p.split_rows ? "|rows-split" : "|rows-in-block";
  if (!c.waves) key += "|program-order";
  if (!c.weight_panels) key += "|no-weight-panels";
  if (c.wgmma) key += "|wgmma";
  for (const std::string& t : p.global_scratch) key += "|global:" + t;
  for (const plan::ForcedSync& f : p.forced_sync)
    key += "|sync:" + f.te + "=" + boundary_kind_name(f.kind);
  for (const plan::Stage& st : p.stages) {
    key += std::string("|") + plan::stage_kind_name(st.kind) + ":";
    for (int te : st.tes) {
      if (te < 0 || static_cast<size_t>(te) >= c.program.ops.size()) {
        key += "?";
        continue;
      }
      bool outside = false;
      if (static_cast<size_t>(te) < a.tes.size()) {
        int x = a.tes[static_cast<size_t>(te)].output_tensor;
        if (x >= 0) {
          outside = a.tensors[static_cast<size_t>(x)].is_output;
          for (int r : a.tensors[static_cast<size_t>(x)].consumers) outside |= !mine.count(r);
        }
      }
      key += content(c.program.ops[static_cast<size_t>(te)]);
      if (!outside) {
        key += "\n";
        continue;
      }
      // Who reads it outside: a built stage's schedule names them.
      key += "\n[read outside";
      for (int r :
           a.tensors[static_cast<size_t>(a.tes[static_cast<size_t>(te)].output_tensor)].consumers)
        if (!mine.count(r) && r >= 0 && static_cast<size_t>(r) < c.program.ops.size())
          key += " by " + c.program.ops[static_cast<size_t>(r)]->name;
      key += "]\n";
    }
    for (const plan::TileChoice& t : st.tiles)
      key += fmt::format("t{}:{}x{}x{}/{}x{}{}{}s{}{}", te_label(t.te), t.tile.bm, t.tile.bn,
                         t.tile.bk, t.tile.tm, t.tile.tn, t.tile.double_buffer ? "d" : "",
                         t.tile.tensor_core ? "c" : "", t.tile.stages, t.tile.f32_ring ? "w" : "");
  }
  return key;
}

/// `ks`, built for a partition of another id, named for partition `id`: its kernels' names and
/// the launch names their stages' schedule texts quote ("a launch of its own (kernel3.1)").
void rename_kernels(loop::KernelSet& ks, int id) {
  for (loop::Kernel& k : ks.kernels) {
    const int old = kernel_partition(k.name);
    if (old < 0 || old == id) continue;
    const std::string from = "kernel" + std::to_string(old), to = "kernel" + std::to_string(id);
    k.name = to + k.name.substr(from.size());
    const std::string quoted_from = "(" + from + ".", quoted_to = "(" + to + ".";
    for (loop::StageInfo& st : k.stages)
      for (size_t at = st.schedule.find(quoted_from); at != std::string::npos;
           at = st.schedule.find(quoted_from, at + quoted_to.size()))
        st.schedule.replace(at, quoted_from.size(), quoted_to);
  }
}

}  // namespace

std::string PlanPricer::partition_key(const plan::FusionPlan& context,
                                      const plan::Partition& p) const {
  return content_key(
      context, p, [&](const te::Op& op) -> const std::string& { return content(op); },
      [](int te) { return std::to_string(te); });
}

PartitionStructure PlanPricer::structure(const plan::FusionPlan& context,
                                         const plan::Partition& p) const {
  // Op indices by their place in the key (stage by stage), names of everything the key prints.
  std::vector<int> tes;
  std::map<int, int> place;
  std::vector<std::string> names(p.global_scratch.begin(), p.global_scratch.end());
  for (const plan::ForcedSync& f : p.forced_sync) names.push_back(f.te);
  for (const plan::Stage& st : p.stages)
    for (int te : st.tes) {
      if (!place.emplace(te, static_cast<int>(tes.size())).second) continue;
      tes.push_back(te);
      if (te < 0 || static_cast<size_t>(te) >= context.program.ops.size()) continue;
      const te::ComputeOp& op = *context.program.ops[static_cast<size_t>(te)];
      names.push_back(op.name);
      names.push_back(op.output->name);
      names.push_back(op.origin.node);
      auto reads = [&](const te::Expr& e) {
        if (!e.defined()) return;
        te::for_each_node(e, [&](const te::Expr& x) {
          if (const te::Read* r = x.as<te::Read>()) names.push_back(r->tensor->name);
        });
      };
      reads(op.body);
      reads(op.init);
      if (static_cast<size_t>(te) < context.analysis.tes.size()) {
        const int x = context.analysis.tes[static_cast<size_t>(te)].output_tensor;
        if (x >= 0)
          for (int r : context.analysis.tensors[static_cast<size_t>(x)].consumers)
            if (r >= 0 && static_cast<size_t>(r) < context.program.ops.size())
              names.push_back(context.program.ops[static_cast<size_t>(r)]->name);
      }
    }
  const std::string key = content_key(
      context, p, [&](const te::Op& op) -> const std::string& { return content(op); },
      [&](int te) {
        auto it = place.find(te);
        return it == place.end() ? "?" : "#" + std::to_string(it->second);
      });
  return abstract_names(key, names, std::move(tes));
}

void PlanPricer::set_share_structures(bool on) {
  std::lock_guard<std::mutex> lock(m_mutex);
  m_share_structures = on;
}

size_t PlanPricer::twin_hits() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_twin_hits;
}

void PlanPricer::use_schedules(const plan::FusionPlan& context, KernelBuildOptions& o) const {
  o.schedules = &m_schedules;
  o.schedule_key = [this, &context](const plan::Partition& p) {
    plan::Partition without = p;
    without.global_scratch.clear();
    return partition_key(context, without);
  };
}

std::string PlanPricer::grid_key(const std::string& key) const {
  // The sync mode is the key's third field (content_key).
  const std::string from = "|sync-" + std::string(sync_mode_name(SyncMode::Auto)) + "|";
  const size_t at = key.find(from);
  if (at == std::string::npos) return {};
  return key.substr(0, at) + "|sync-" + std::string(sync_mode_name(SyncMode::Grid)) + "|" +
         key.substr(at + from.size());
}

void PlanPricer::keep_grid_form(const std::string& key, const plan::FusionPlan& context,
                                const plan::Partition& p, loop::KernelSet grid) const {
  const std::string gk = grid_key(key);
  if (gk.empty() || grid.kernels.empty()) return;
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    if (m_cache.contains(gk)) return;
  }
  plan::PartitionPrice pr = price_built(context, p, grid);
  observe(gk, grid);
  keep(gk, std::move(grid));
  to_store(context, p, gk, pr);
  std::lock_guard<std::mutex> lock(m_mutex);
  ++m_grid_forms;
  m_cache.emplace(gk, std::move(pr));
}

void PlanPricer::set_build_observer(BuildObserver observer) {
  std::lock_guard<std::mutex> lock(m_mutex);
  m_observer = std::move(observer);
}

void PlanPricer::observe(const std::string& key, const loop::KernelSet& ks) const {
  BuildObserver observer;
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    observer = m_observer;
  }
  if (observer) observer(key, ks);
}

plan::PartitionPrice PlanPricer::price(const plan::FusionPlan& context,
                                       const plan::Partition& p) const {
  const std::string k = partition_key(context, p);
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    auto it = m_cache.find(k);
    if (it != m_cache.end()) {
      ++m_hits;
      return it->second;
    }
  }
  // Priced by an earlier process: its price as stored (price_store.h).
  if (std::optional<plan::PartitionPrice> stored = from_store(context, p, k)) return *stored;
  bool share = false;
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    share = m_share_structures;
  }
  if (!share) return build(k, context, p);
  // A structural twin priced before (another layer of the same shape): its price, renamed.
  // A twin being built on another thread (prefetch prices a layer's twins side by side) is
  // waited for rather than built a second time.
  PartitionStructure s = structure(context, p);
  {
    std::unique_lock<std::mutex> lock(m_mutex);
    for (;;) {
      auto done = m_cache.find(k);
      if (done != m_cache.end()) {
        ++m_hits;
        return done->second;
      }
      auto it = m_twins.find(s.key);
      if (it != m_twins.end()) {
        if (std::optional<plan::PartitionPrice> renamed =
                rename_price(it->second.price, it->second.structure, s, it->second.id, p.id)) {
          ++m_twin_hits;
          return m_cache.emplace(k, std::move(*renamed)).first->second;
        }
        break;
      }
      if (m_building.insert(s.key).second) break;
      m_built.wait(lock);
    }
  }
  // Whatever happens to the build, threads waiting for this structure look again.
  struct Done {
    const PlanPricer& self;
    const std::string& key;
    ~Done() {
      {
        std::lock_guard<std::mutex> lock(self.m_mutex);
        self.m_building.erase(key);
      }
      self.m_built.notify_all();
    }
  };
  const std::string building = s.key;
  Done done{*this, building};
  // A twin an earlier process built (the store keeps each structure's first built price:
  // twins' own prices are not stored), renamed; a twin on another thread waits for it as for
  // a build. Else built, and kept for the twins of later processes.
  if (std::optional<PriceStore::Twin> twin = twin_from_store(context, s)) {
    twin->structure.key = s.key;
    if (std::optional<plan::PartitionPrice> renamed =
            rename_price(twin->price, twin->structure, s, twin->id, p.id)) {
      std::lock_guard<std::mutex> lock(m_mutex);
      ++m_store_hits;
      ++m_twin_hits;
      std::string key = s.key;
      m_twins.emplace(std::move(key), Twin{std::move(twin->structure), twin->price, twin->id});
      return m_cache.emplace(k, std::move(*renamed)).first->second;
    }
  }
  bool storable = false;
  plan::PartitionPrice out = build(k, context, p, &storable);
  if (storable) twin_to_store(context, s, out, p.id);
  std::lock_guard<std::mutex> lock(m_mutex);
  std::string key = s.key;
  m_twins.emplace(std::move(key), Twin{std::move(s), out, p.id});
  return out;
}

loop::KernelSet PlanPricer::kernels(const plan::FusionPlan& context,
                                    const plan::Partition& p) const {
  const std::string k = partition_key(context, p);
  loop::KernelSet ks;
  bool found = false;
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    auto it = m_kernel_at.find(k);
    if (it != m_kernel_at.end()) {
      m_kernels.splice(m_kernels.begin(), m_kernels, it->second);  // most recently used
      ks = it->second->second;
      found = true;
      ++m_kernel_hits;
    }
  }
  if (!found) {
    PlanBuild b = plan_build(context);
    b.options.calibration = m_calibration ? &*m_calibration : nullptr;
    loop::KernelSet grid;
    b.options.grid_form = &grid;
    use_schedules(context, b.options);
    ks = build_partition_kernels(context, p, b.config, b.options);  // throws KernelBuildError
    observe(k, ks);
    keep(k, ks);
    keep_grid_form(k, context, p, std::move(grid));
    plan::PartitionPrice pr = price_built(context, p, ks);
    std::lock_guard<std::mutex> lock(m_mutex);
    ++m_kernel_builds;
    m_cache.emplace(k, std::move(pr));
  }
  rename_kernels(ks, p.id);
  return ks;
}

void PlanPricer::keep(const std::string& key, loop::KernelSet ks) const {
  std::lock_guard<std::mutex> lock(m_mutex);
  auto it = m_kernel_at.find(key);
  if (it != m_kernel_at.end()) {
    m_kernels.erase(it->second);
    m_kernel_at.erase(it);
  }
  m_kernels.emplace_front(key, std::move(ks));
  m_kernel_at[key] = m_kernels.begin();
  while (m_kernels.size() > kKeptKernels) {
    m_kernel_at.erase(m_kernels.back().first);
    m_kernels.pop_back();
  }
}

plan::PartitionPrice PlanPricer::build(const std::string& key, const plan::FusionPlan& context,
                                       const plan::Partition& p, bool* stored) const {
  plan::PartitionPrice out;
  bool storable = true;
  try {
    PlanBuild b = plan_build(context);
    b.options.calibration = m_calibration ? &*m_calibration : nullptr;
    loop::KernelSet grid;
    b.options.grid_form = &grid;
    use_schedules(context, b.options);
    loop::KernelSet ks = build_partition_kernels(context, p, b.config, b.options);
    out = price_built(context, p, ks);
    observe(key, ks);
    keep(key, std::move(ks));
    keep_grid_form(key, context, p, std::move(grid));
  } catch (const std::logic_error&) {
    throw;  // an internal error is a bug: it reaches the top, it is never priced
  } catch (const std::exception& e) {
    // A partition that cannot be built (a user-level refusal: no schedule fits, too many
    // blocks, an op the templates do not take) is priced as not built, with the reason.
    out = plan::PartitionPrice{};
    out.error = e.what();
    // Only a refusal the partition's content decides is kept on disk: running out of memory
    // or anything else of the moment is not the partition's price.
    storable = dynamic_cast<const KernelBuildError*>(&e) || dynamic_cast<const UserError*>(&e);
  }
  if (storable) to_store(context, p, key, out);
  if (stored) *stored = storable && price_store() != nullptr;
  std::lock_guard<std::mutex> lock(m_mutex);
  ++m_builds;
  m_cache[key] = out;
  return out;
}

plan::PartitionPrice PlanPricer::price_built(const plan::FusionPlan& context,
                                             const plan::Partition& p,
                                             const loop::KernelSet& ks) const {
  plan::PartitionPrice out;
  const gpu::GpuSpec& spec = context.gpu_spec.sm_count > 0 ? context.gpu_spec : m_spec;
  const gpu::CostConstants c =
      gpu::cost_constants(spec, context.precision, m_calibration ? &*m_calibration : nullptr);
  std::map<std::string, int64_t> flops;
  std::map<std::string, int> index;
  for (int te : p.tes)
    if (te >= 0 && static_cast<size_t>(te) < context.analysis.tes.size()) {
      const analysis::TeInfo& t = context.analysis.tes[static_cast<size_t>(te)];
      flops[t.name] = t.flops;
      index[t.name] = te;
    }
  auto flops_of = [&](const std::string& name) -> int64_t {
    auto it = flops.find(name);
    return it == flops.end() ? 0 : it->second;
  };
  const int register_cap = plan_build(context).options.cooperative_registers;
  out.co_resident = 0;
  for (const loop::Kernel& k : ks.kernels) {
    KernelPrice kp = price_kernel(k, spec, c, flops_of, register_cap);
    ++out.launches;
    out.grid_barriers += kp.grid_barriers;
    out.block_barriers += kp.block_barriers;
    out.blocks = std::max(out.blocks, k.launch.grid_x);
    out.threads = std::max(out.threads, static_cast<int>(k.launch.block_x));
    out.regs = std::max(out.regs, kp.regs);
    out.smem = std::max(out.smem, k.launch.dynamic_shared_bytes);
    out.co_resident =
        out.co_resident == 0 ? kp.co_resident : std::min(out.co_resident, kp.co_resident);
    out.cooperative |= k.launch.cooperative;
    out.flops += kp.flops;
    out.dram_bytes += kp.dram_bytes;
    out.l2_bytes += kp.l2_bytes;
    out.est_time_us += kp.total_us;
    out.launch_us += kp.launch_us;
    out.barrier_us += kp.barrier_us;
    out.on_chip.insert(out.on_chip.end(), kp.on_chip.begin(), kp.on_chip.end());
    for (size_t st : kp.after_barrier) {
      if (st >= k.stages.size() || k.stages[st].tes.empty()) continue;
      auto it = index.find(k.stages[st].tes.front());
      if (it != index.end()) out.barrier_sites.push_back(it->second);
    }
    // The built stages and what orders each after the ones before, in the partition's terms.
    const int launch = out.launches - 1;
    const int base = static_cast<int>(out.stages.size());
    for (const loop::StageInfo& info : k.stages) {
      plan::BuiltStage bs;
      bs.launch = launch;
      bs.name = info.name;
      bs.tes = info.tes;
      bs.wave = info.wave;
      bs.block_offset = info.block_offset;
      bs.blocks = info.grid_x;
      bs.threads = info.block_x;
      bs.schedule = info.schedule;
      bs.weight_panel = info.weight_panel;
      bs.weight_panel_load = info.weight_panel_load;
      bs.choices = info.choices;
      if (const size_t i = static_cast<size_t>(&info - k.stages.data()); i < kp.stages.size()) {
        bs.est_us = kp.stages[i].cost.total_us;
        bs.bound = kp.stages[i].cost.bound;
        bs.corrected = kp.stages[i].cost.corrected;
        if (kp.stages[i].cost.mainloop.priced) {
          bs.mainloop = kp.stages[i].work.mainloop.describe();
          bs.priced_from = kp.stages[i].cost.mainloop.from;
        }
      }
      for (const te::Origin& o : info.origins)
        if (!o.node.empty() &&
            std::find(bs.nodes.begin(), bs.nodes.end(), o.node) == bs.nodes.end())
          bs.nodes.push_back(o.node);
      out.stages.push_back(std::move(bs));
    }
    for (const StageBoundary& sb : k.boundaries) {
      plan::Boundary b;
      b.order = sb;
      b.launch = launch;
      b.from = sb.before >= 0 ? base + sb.before : base - 1;
      b.to = base + sb.after;
      b.producer = sb.producer >= 0 ? base + sb.producer : -1;
      if (sb.after >= 0 && static_cast<size_t>(sb.after) < k.stages.size() &&
          !k.stages[static_cast<size_t>(sb.after)].tes.empty()) {
        auto it = index.find(k.stages[static_cast<size_t>(sb.after)].tes.front());
        if (it != index.end()) b.te = it->second;
      }
      if (sb.kind == BoundaryKind::Grid)
        b.cost_us = gpu::grid_barrier_cost_us(spec, c, k.launch.grid_x);
      else if (sb.kind == BoundaryKind::Launch)
        b.cost_us = c.launch_us;
      else if (sb.kind == BoundaryKind::Flags)
        b.cost_us = gpu::flag_wait_cost_us(c, sb.awaited_tiles, std::max(sb.waits, 1));
      out.boundaries.push_back(std::move(b));
    }
  }
  return out;
}

std::shared_ptr<PlanPricer> make_pricer(const gpu::GpuSpec& spec, gpu::Precision precision,
                                        const std::string& calibration_file) {
  std::optional<gpu::Calibration> cal;
  if (!calibration_file.empty()) cal = gpu::load_calibration(calibration_file);
  return std::make_shared<PlanPricer>(spec, precision, std::move(cal));
}

namespace {

std::shared_ptr<PlanPricer> shared_pricer_of(const gpu::GpuSpec& spec, gpu::Precision precision,
                                             const gpu::Calibration* calibration) {
  static std::mutex mutex;
  // Never destroyed: a process that ends does not spend its last milliseconds freeing every
  // price and kernel its pricers kept (a plan of full BERT-base: several percent of its time).
  static auto& pricers = *new std::map<std::string, std::shared_ptr<PlanPricer>>;
  std::string key =
      fmt::format("{}|{}|{}|{}|{}|{}|{}|{}|{}", spec.name, spec.sm_count, spec.shared_memory_per_sm,
                  spec.registers_per_sm, spec.dram_bandwidth_gbps, spec.peak_fp32_tflops,
                  spec.l2_bytes, spec.grid_sync_overhead_us, gpu::precision_name(precision));
  if (calibration) key += "|" + calibration->file + "|" + gpu::calibration_json(*calibration);
  std::lock_guard<std::mutex> lock(mutex);
  std::shared_ptr<PlanPricer>& p = pricers[key];
  if (!p)
    p = calibration ? std::make_shared<PlanPricer>(spec, precision, *calibration)
                    : std::make_shared<PlanPricer>(spec, precision);
  return p;
}

}  // namespace

std::shared_ptr<PlanPricer> shared_pricer(const gpu::GpuSpec& spec, gpu::Precision precision) {
  return shared_pricer_of(spec, precision, nullptr);
}

std::shared_ptr<PlanPricer> shared_pricer(const gpu::GpuSpec& spec, gpu::Precision precision,
                                          const gpu::Calibration& calibration) {
  return shared_pricer_of(spec, precision, &calibration);
}

}  // namespace souffle::schedule
