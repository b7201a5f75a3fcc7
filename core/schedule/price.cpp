#include "core/schedule/price.h"

#include <fmt/format.h>
#include <algorithm>
#include <map>
#include <set>

#include "core/loop/mutator.h"
#include "core/support/tensor_data.h"
#include "core/te/mutator.h"

namespace souffle::schedule {
namespace {

using loop::Stmt;

int64_t bytes_of(const te::Tensor& t) {
  return shape_numel(t->shape) * dtype_size(t->dtype);
}

/// What each stage of a kernel touches: global tensors read and written, tensor-core use and
/// register estimate. Statements outside every stage (a prefetch hoisted above a barrier) count
/// for the stage that follows them.
class StageScan {
 public:
  struct Touch {
    std::vector<te::Tensor> reads, writes;
    bool tensor_core = false;
    int64_t local_elems = 0;
    // The mainloop's structure (tensor-core stages): what computes, how operands are staged.
    bool wmma = false, mma_sync = false, wgmma = false, async_copy = false, epilogue_shared = false;
    int64_t max_pending = -1;    ///< the largest wait_group N
    int64_t acc_per_warp = 0;    ///< accumulator elements of wmma fragments per warp
    int64_t acc_per_thread = 0;  ///< accumulator registers of mma.sync or wgmma per thread
    int64_t trips = 0;           ///< extent of the mainloop (0: not found)
    int operand_bytes = 0;
    int staged_bytes = 0;  ///< the widest element a cp.async stages (an f32 ring under fp16: 4)
  };
  StageScan(const loop::Kernel& k, size_t stages) : m_touch(std::max<size_t>(stages, 1)) {
    for (const te::Tensor& t : k.inputs) m_global.insert(t.get());
    for (const te::Tensor& t : k.outputs) m_global.insert(t.get());
    // The kernel's bookkeeping tables (flag waits' ranges, stages' block offsets): a few
    // numbers per block, no stage's traffic.
    for (const te::Tensor& t : k.tables) m_global.erase(t.get());
    walk(k.body, -1);
    // Hoisted statements before the first stage belong to it.
    if (!m_pending.reads.empty() || !m_pending.writes.empty()) merge(m_touch[0], m_pending);
  }
  std::vector<Touch>& touches() { return m_touch; }
  int grid_barriers = 0, block_barriers = 0;
  /// Stages whose first write follows a grid barrier after another stage's writes.
  std::vector<size_t> after_barrier;

 private:
  static void add(std::vector<te::Tensor>& v, const te::Tensor& t) {
    if (std::find(v.begin(), v.end(), t) == v.end()) v.push_back(t);
  }
  static void merge(Touch& into, const Touch& from) {
    for (const te::Tensor& t : from.reads) add(into.reads, t);
    for (const te::Tensor& t : from.writes) add(into.writes, t);
    into.tensor_core |= from.tensor_core;
    into.local_elems += from.local_elems;
    into.wmma |= from.wmma;
    into.mma_sync |= from.mma_sync;
    into.wgmma |= from.wgmma;
    into.async_copy |= from.async_copy;
    into.epilogue_shared |= from.epilogue_shared;
    into.max_pending = std::max(into.max_pending, from.max_pending);
    into.acc_per_warp += from.acc_per_warp;
    into.acc_per_thread += from.acc_per_thread;
    if (into.trips == 0) into.trips = from.trips;
    if (into.operand_bytes == 0) into.operand_bytes = from.operand_bytes;
    into.staged_bytes = std::max(into.staged_bytes, from.staged_bytes);
  }
  static int operand_bytes(loop::MmaType t) {
    return t == loop::MmaType::F16 || t == loop::MmaType::BF16 ? 2 : 4;
  }
  /// An open loop: whether its body computes MMAs and synchronizes (a block barrier or a
  /// cp.async wait), and whether a loop inside it already does both (the mainloop is the
  /// innermost such loop: the trip over k tiles).
  struct Frame {
    int64_t extent = 0;
    bool mma = false, sync = false, inner = false;
  };
  std::vector<Frame> m_frames;
  std::set<const te::TensorNode*> m_acc;             ///< mma.sync accumulators (d operands)
  std::map<const te::TensorNode*, int64_t> m_local;  ///< Local buffers' elements per thread
  Touch& at(int stage) {
    if (stage < 0) return m_pending;
    return m_touch[std::min(static_cast<size_t>(stage), m_touch.size() - 1)];
  }
  void read(int stage, const te::Tensor& t) {
    if (m_global.count(t.get())) add(at(stage).reads, t);
  }
  void write(int stage, const te::Tensor& t) {
    if (m_global.count(t.get())) add(at(stage).writes, t);
  }
  void walk(const Stmt& s, int stage) {
    if (!s.defined()) return;
    if (const loop::Stage* g = s.as<loop::Stage>()) {
      if (!m_pending.reads.empty() || !m_pending.writes.empty() || m_pending.tensor_core) {
        merge(at(g->index), m_pending);
        m_pending = Touch{};
      }
      walk(g->body, g->index);
      return;
    }
    if (s.as<loop::GridBarrier>()) {
      ++grid_barriers;
      m_barrier = true;
    }
    // Only global writes: a weight tile prefetched into shared memory before a barrier
    // belongs to the stage after it.
    const te::Tensor* written = nullptr;
    if (const loop::Store* st = s.as<loop::Store>()) written = &st->buffer;
    if (const loop::AtomicAdd* a = s.as<loop::AtomicAdd>()) written = &a->buffer;
    if (const loop::FragmentStore* f = s.as<loop::FragmentStore>()) written = &f->dest;
    if (written && m_global.count(written->get())) {
      if (m_barrier && stage >= 0 && m_last_writer >= 0 && stage != m_last_writer)
        after_barrier.push_back(static_cast<size_t>(stage));
      m_barrier = false;
      if (stage >= 0) m_last_writer = stage;
    }
    if (s.as<loop::BlockBarrier>()) {
      ++block_barriers;
      for (Frame& f : m_frames) f.sync = true;
    }
    if (s.as<loop::FragmentMma>()) {
      at(stage).wmma = true;
      for (Frame& fr : m_frames) fr.mma = true;
    }
    if (const loop::MmaSync* m = s.as<loop::MmaSync>()) {
      Touch& t = at(stage);
      t.tensor_core = t.mma_sync = true;
      if (t.operand_bytes == 0) t.operand_bytes = operand_bytes(m->type);
      if (m_acc.insert(m->d.get()).second) {
        auto it = m_local.find(m->d.get());
        t.acc_per_thread += it != m_local.end() ? it->second : 0;
      }
      for (Frame& fr : m_frames) fr.mma = true;
    }
    if (const loop::WgmmaMma* m = s.as<loop::WgmmaMma>()) {
      Touch& t = at(stage);
      t.tensor_core = t.wgmma = true;
      if (t.operand_bytes == 0) t.operand_bytes = operand_bytes(m->type);
      if (m_acc.insert(m->d.get()).second) {
        auto it = m_local.find(m->d.get());
        t.acc_per_thread += it != m_local.end() ? it->second : 0;
      }
      for (Frame& fr : m_frames) fr.mma = true;
    }
    if (const loop::AsyncCopy* c = s.as<loop::AsyncCopy>()) {
      at(stage).async_copy = true;
      at(stage).staged_bytes =
          std::max(at(stage).staged_bytes, static_cast<int>(dtype_size(c->dst->dtype)));
    }
    if (const loop::AsyncWait* w = s.as<loop::AsyncWait>()) {
      at(stage).max_pending = std::max(at(stage).max_pending, w->pending);
      for (Frame& f : m_frames) f.sync = true;
    }
    if (const loop::FragmentStore* f = s.as<loop::FragmentStore>())
      if (!m_global.count(f->dest.get())) at(stage).epilogue_shared = true;
    if (const loop::For* f = s.as<loop::For>()) {
      const te::IntImm* e = f->extent.as<te::IntImm>();
      m_frames.push_back(Frame{e ? e->value : 0});
      for_direct_exprs(s, [&](const te::Expr& x) {
        te::for_each_node(x, [&](const te::Expr& y) {
          if (const te::Read* r = y.as<te::Read>()) read(stage, r->tensor);
        });
      });
      walk(f->body, stage);
      const Frame fr = m_frames.back();
      m_frames.pop_back();
      const bool mainloop = fr.mma && fr.sync && fr.extent > 1;
      if (mainloop && !fr.inner && at(stage).trips == 0) at(stage).trips = fr.extent;
      if ((mainloop || fr.inner) && !m_frames.empty()) m_frames.back().inner = true;
      return;
    }
    if (const loop::Store* st = s.as<loop::Store>()) write(stage, st->buffer);
    if (const loop::AtomicAdd* a = s.as<loop::AtomicAdd>()) {
      write(stage, a->buffer);
      read(stage, a->buffer);
    }
    if (const loop::FragmentLoad* f = s.as<loop::FragmentLoad>()) read(stage, f->source);
    if (const loop::FragmentStore* f = s.as<loop::FragmentStore>()) write(stage, f->dest);
    if (s.as<loop::FragmentMma>()) at(stage).tensor_core = true;
    if (const loop::FragmentAlloc* f = s.as<loop::FragmentAlloc>()) {
      // A fragment spreads rows x cols elements over a warp's 32 lanes.
      const int64_t elems = shape_numel(f->buffer->shape) * f->rows() * f->cols();
      at(stage).local_elems += elems / 32;
      if (f->role == loop::FragmentRole::Accumulator) at(stage).acc_per_warp += elems;
      if (f->role == loop::FragmentRole::MatrixA && at(stage).operand_bytes == 0)
        at(stage).operand_bytes = operand_bytes(f->type);
    }
    if (const loop::Allocate* a = s.as<loop::Allocate>())
      if (a->scope == loop::MemScope::Local) {
        at(stage).local_elems += shape_numel(a->buffer->shape);
        m_local[a->buffer.get()] = shape_numel(a->buffer->shape);
      }
    // Reads in the expressions this statement holds, then its children. A flag wait reads two
    // numbers of the kernel's table of awaited ranges per block (its cost is the wait's price,
    // gpu::flag_wait_cost_us), not the table: that is no stage's traffic.
    if (s.as<loop::FlagWait>()) return;
    for_direct_exprs(s, [&](const te::Expr& e) {
      te::for_each_node(e, [&](const te::Expr& x) {
        if (const te::Read* r = x.as<te::Read>()) read(stage, r->tensor);
      });
    });
    for_children(s, [&](const Stmt& c) { walk(c, stage); });
  }
  template <typename F>
  static void for_direct_exprs(const Stmt& s, F&& fn) {
    struct V : loop::StmtVisitor {
      F* f;
      const loop::StmtNode* self;
      void visit(const Stmt& x) override {
        if (x.get() == self) loop::StmtVisitor::visit(x);
      }
      void visit_expr(const te::Expr& e) override { (*f)(e); }
    } v;
    v.f = &fn;
    v.self = s.get();
    v.visit(s);
  }
  template <typename F>
  static void for_children(const Stmt& s, F&& fn) {
    struct V : loop::StmtVisitor {
      F* f;
      const loop::StmtNode* self;
      void visit(const Stmt& x) override {
        if (x.get() == self)
          loop::StmtVisitor::visit(x);
        else
          (*f)(x);
      }
    } v;
    v.f = &fn;
    v.self = s.get();
    v.visit(s);
  }

  std::set<const te::TensorNode*> m_global;
  bool m_barrier = false;
  int m_last_writer = -1;
  std::vector<Touch> m_touch;
  Touch m_pending;
};

/// The structure of a tensor-core stage's mainloop from what its scan found: wmma fragments
/// staged synchronously, or mma.sync or wgmma fed by cp.async groups (depth: the largest
/// wait_group N plus the one computed), or by ordinary stores (synchronous).
gpu::MainloopStructure mainloop_structure(const StageScan::Touch& t, const loop::Kernel& k,
                                          int64_t flops, int64_t grid) {
  gpu::MainloopStructure m;
  if (!t.wmma && !t.mma_sync && !t.wgmma) return m;
  const bool registers = t.mma_sync || t.wgmma;  // accumulators counted per thread
  const int64_t threads = std::max<int64_t>(k.launch.block_x, 1);
  m.warps = std::max<int64_t>(1, (threads + loop::kWarpSize - 1) / loop::kWarpSize);
  m.instruction = t.wgmma ? "wgmma" : t.mma_sync ? "mma.sync" : "wmma";
  if (registers && t.async_copy) {
    m.staging = gpu::MainloopStructure::Staging::Pipelined;
    m.depth = static_cast<int>(std::max<int64_t>(t.max_pending, 0) + 1);
  } else {
    m.staging = gpu::MainloopStructure::Staging::Synchronous;
    m.depth = 1;
  }
  m.tile_elems = registers ? t.acc_per_thread * threads : t.acc_per_warp * m.warps;
  if (m.tile_elems <= 0) m.tile_elems = 64 * 64;
  m.operand_bytes = std::max(t.operand_bytes > 0 ? t.operand_bytes : 2, t.staged_bytes);
  m.epilogue_through_shared = t.epilogue_shared;
  m.trips = t.trips;
  if (t.trips > 0 && flops > 0) {
    const double reduction =
        double(flops) / double(std::max<int64_t>(grid, 1)) / (2.0 * double(m.tile_elems));
    m.k_per_step = std::max<int64_t>(1, std::llround(reduction / double(t.trips)));
  }
  return m;
}

}  // namespace

int64_t cooperative_register_budget(const std::vector<loop::StageInfo>& stages, int registers) {
  int64_t out = registers;
  for (const loop::StageInfo& info : stages) out = std::max(out, info.tensor_core.regs);
  return std::min<int64_t>(out, 255);
}

KernelPrice price_kernel(const loop::Kernel& k, const gpu::GpuSpec& spec,
                         const gpu::CostConstants& c, const FlopsOf& flops_of, int register_cap) {
  KernelPrice out;
  out.name = k.name;
  StageScan scan(k, k.stages.size());
  out.grid_barriers = scan.grid_barriers;
  out.block_barriers = scan.block_barriers;
  out.after_barrier = scan.after_barrier;
  std::vector<StageScan::Touch>& touch = scan.touches();
  // One register count for the whole kernel: its largest stage's.
  int regs = 32;
  for (const StageScan::Touch& t : touch)
    regs = std::max<int>(regs, static_cast<int>(std::min<int64_t>(255, 24 + t.local_elems)));
  // A stage of the Ampere mma mainloop takes its template's registers (gpu::MmaMainloop::regs,
  // recorded on the stage as StageInfo::tensor_core): its ring's copy addresses and conversions
  // hold registers no local buffer shows.
  for (const loop::StageInfo& info : k.stages)
    regs = std::max<int>(regs, static_cast<int>(info.tensor_core.regs));
  // A cooperative kernel's cap never goes below what an mma mainloop stage needs (the plan
  // caps its grid there, cooperative_register_budget).
  const int cap = k.launch.cooperative && register_cap > 0
                      ? static_cast<int>(cooperative_register_budget(k.stages, register_cap))
                      : 255;
  regs = std::min(regs, cap);
  out.regs = regs;
  out.co_resident =
      gpu::max_active_blocks(spec, static_cast<int>(std::max<int64_t>(1, k.launch.block_x)), regs,
                             k.launch.dynamic_shared_bytes);
  // Recency list of the global tensors touched so far (most recent last), for reuse distance.
  std::vector<std::pair<const te::TensorNode*, int64_t>> recent;
  auto touched = [&](const te::Tensor& t) -> bool {
    // True when t was touched within the L2's size since; moves it to the front.
    int64_t since = 0;
    bool hit = false;
    for (size_t i = recent.size(); i-- > 0;) {
      if (recent[i].first == t.get()) {
        hit = since + recent[i].second <= c.l2_bytes;
        recent.erase(recent.begin() + static_cast<std::ptrdiff_t>(i));
        break;
      }
      since += recent[i].second;
    }
    recent.emplace_back(t.get(), bytes_of(t));
    return hit;
  };
  for (size_t s = 0; s < std::max<size_t>(k.stages.size(), 1); ++s) {
    StagePrice sp;
    gpu::StageWork& w = sp.work;
    if (s < k.stages.size()) {
      const loop::StageInfo& info = k.stages[s];
      sp.name = info.name;
      for (const std::string& te : info.tes) w.flops += flops_of ? flops_of(te) : 0;
      w.grid = std::min(std::max<int64_t>(info.grid_x, 1), k.launch.grid_x);
    } else {
      sp.name = k.name;
      w.grid = k.launch.grid_x;
    }
    const StageScan::Touch& t = touch[std::min(s, touch.size() - 1)];
    w.tensor_core = t.tensor_core;
    if (t.tensor_core) w.mainloop = mainloop_structure(t, k, w.flops, w.grid);
    w.block = k.launch.block_x;
    w.regs = regs;
    w.smem = k.launch.dynamic_shared_bytes;
    for (const te::Tensor& x : t.reads) {
      if (touched(x))
        w.l2_read_bytes += bytes_of(x);
      else
        w.dram_read_bytes += bytes_of(x);
    }
    for (const te::Tensor& x : t.writes) {
      touched(x);
      w.write_bytes += bytes_of(x);
    }
    sp.cost = gpu::stage_cost(spec, c, w);
    // A correction measured from GPU timelines for the stage's template (calibration file).
    if (c.calibration && s < k.stages.size())
      if (const gpu::StageCorrection* sc =
              c.calibration->stage_correction(gpu::schedule_template(k.stages[s].schedule)))
        gpu::apply_stage_correction(sp.cost, *sc);
    out.flops += w.flops;
    out.dram_bytes += w.dram_read_bytes + w.write_bytes;
    out.l2_bytes += w.l2_read_bytes;
    out.global_bytes += w.dram_read_bytes + w.l2_read_bytes + w.write_bytes;
    out.stages.push_back(std::move(sp));
  }
  // Stages of one wave run side by side on disjoint blocks between the same barriers: together
  // they take as long as their summed work over their summed grid, and no less than the
  // slowest of them alone (its blocks go no faster for having neighbours).
  for (size_t s = 0; s < out.stages.size();) {
    const int wave = s < k.stages.size() ? k.stages[s].wave : -1;
    size_t e = s + 1;
    while (wave >= 0 && e < out.stages.size() && e < k.stages.size() && k.stages[e].wave == wave)
      ++e;
    if (e - s == 1) {
      out.stages_us += out.stages[s].cost.total_us;
      s = e;
      continue;
    }
    gpu::StageWork together = out.stages[s].work;
    double slowest = out.stages[s].cost.total_us;
    // Corrected stages scale the wave's joint price by their summed correction.
    double corrected_us = out.stages[s].cost.total_us;
    double raw_us = out.stages[s].cost.total_us / out.stages[s].cost.correction;
    for (size_t i = s + 1; i < e; ++i) {
      const gpu::StageWork& w = out.stages[i].work;
      together.flops += w.flops;
      together.tensor_core |= w.tensor_core;
      if (!together.mainloop.known()) together.mainloop = w.mainloop;
      together.dram_read_bytes += w.dram_read_bytes;
      together.l2_read_bytes += w.l2_read_bytes;
      together.write_bytes += w.write_bytes;
      together.grid += w.grid;
      slowest = std::max(slowest, out.stages[i].cost.total_us);
      corrected_us += out.stages[i].cost.total_us;
      raw_us += out.stages[i].cost.total_us / out.stages[i].cost.correction;
    }
    together.grid = std::min(together.grid, k.launch.grid_x);
    const double scale = raw_us > 0 ? corrected_us / raw_us : 1;
    out.stages_us += std::max(slowest, scale * gpu::stage_cost(spec, c, together).total_us);
    s = e;
  }
  for (const loop::SharedSlot& sl : k.shared) {
    const std::string& n = sl.buffer->name;
    const std::string suffix = "_smem";
    if (n.size() > suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0)
      out.on_chip.push_back(n.substr(0, n.size() - suffix.size()));
  }
  out.launch_us = c.launch_us;
  // Every grid barrier waits for the whole launch grid.
  out.barrier_us = out.grid_barriers * gpu::grid_barrier_cost_us(spec, c, k.launch.grid_x);
  // Per-tile flags: each flags boundary's releases and waits. The stages of one wave wait side
  // by side on their own blocks: their boundaries take as long as the dearest of them.
  std::map<int, double> wave_flags_us;
  for (const StageBoundary& b : k.boundaries)
    if (b.kind == BoundaryKind::Flags) {
      const int waits = std::max(b.waits, 1);
      out.flag_waits += waits;
      const double us = gpu::flag_wait_cost_us(c, b.awaited_tiles, waits);
      const int wave = b.after >= 0 && static_cast<size_t>(b.after) < k.stages.size()
                           ? k.stages[static_cast<size_t>(b.after)].wave
                           : -1;
      if (wave < 0) {
        out.barrier_us += us;
      } else {
        double& w = wave_flags_us[wave];
        w = std::max(w, us);
      }
    }
  for (const auto& [wave, us] : wave_flags_us) out.barrier_us += us;
  out.total_us = out.stages_us + out.launch_us + out.barrier_us;
  return out;
}

std::string print(const KernelPrice& p) {
  std::string s = fmt::format(
      "{}: {:.2f} us = stages {:.2f} + launch {:.2f} + {} grid barriers and {} flag waits "
      "{:.2f}; {} regs, {} co-resident; DRAM {} B, L2 {} B\n",
      p.name, p.total_us, p.stages_us, p.launch_us, p.grid_barriers, p.flag_waits, p.barrier_us,
      p.regs, p.co_resident, p.dram_bytes, p.l2_bytes);
  for (const StagePrice& st : p.stages)
    s += fmt::format(
        "  {} [{}{}] grid {} x {}, {} per SM, {} waves: {:.2f} us (flop {:.2f}, "
        "dram {:.2f}, l2 {:.2f}){}\n",
        st.name, st.cost.bound, st.work.tensor_core ? ", tensor cores" : "", st.work.grid,
        st.work.block, st.cost.blocks_per_sm, st.cost.waves, st.cost.total_us, st.cost.flop_us,
        st.cost.dram_us, st.cost.l2_us,
        st.cost.mainloop.priced ? "\n    mainloop " + st.cost.mainloop.from : std::string());
  return s;
}

}  // namespace souffle::schedule
