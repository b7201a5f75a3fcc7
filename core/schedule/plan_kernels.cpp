#include "core/schedule/plan_kernels.h"

#include <cctype>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "core/gpu/cost.h"
#include "core/loop/mutator.h"
#include "core/schedule/attention.h"
#include "core/schedule/build_choice.h"
#include "core/schedule/gemm_wgmma.h"
#include "core/schedule/kernel_units.h"
#include "core/schedule/price.h"
#include "core/schedule/wavefront.h"
#include "core/schedule/weight_panel.h"
#include "core/support/cancel.h"
#include "core/support/thread_pool.h"
#include "core/te/mutator.h"

namespace souffle::schedule {
namespace {

/// Stages from which a kernel's GEMM units are scheduled on every core and its two orders
/// (waves, program order) built side by side: a thread costs more than scheduling or merging a
/// few stages, and a recurrent model's thousands take seconds.
constexpr size_t kSideBySideStages = 64;

std::string kernel_name(const plan::Partition& p) {
  return "kernel" + std::to_string(p.id);
}

bool has_block_barrier(const loop::Stmt& s) {
  bool found = false;
  loop::for_each_stmt(s,
                      [&](const loop::Stmt& x) { found |= x.as<loop::BlockBarrier>() != nullptr; });
  return found;
}

/// A register tile for `t`'s block tile that gives exactly `threads` threads (the register
/// tile grows as the thread count shrinks); false when there is none.
bool fit_threads(gpu::Tile& t, int64_t threads) {
  for (int64_t tm = 1; tm <= t.bm; tm *= 2)
    for (int64_t tn = tm; tn >= 1 && tn >= tm / 2; tn /= 2)
      if (t.bm % tm == 0 && t.bn % tn == 0 && (t.bm / tm) * (t.bn / tn) == threads) {
        t.tm = tm;
        t.tn = tn;
        return true;
      }
  return false;
}

/// Which ops read the outputs of the partitions' TEs as their kernels compute them (views
/// folded), and the model's outputs: a GEMM's output may stay in registers only when no op
/// outside its epilogue group reads it. The partitions' ops are walked; readers elsewhere in the
/// program come from its index, since their bodies are the program's own.
class Readers {
 public:
  Readers(const KernelProgram& kp, const te::ProgramIndex& index) : m_kp(kp), m_index(index) {
    for (int i : kp.partition_ops()) {
      if (kp.dropped(static_cast<size_t>(i))) continue;
      auto add = [&](const te::Expr& e) {
        if (!e.defined()) return;
        te::for_each_node(e, [&](const te::Expr& n) {
          if (const te::Read* rd = n.as<te::Read>()) m_inside[rd->tensor.get()].insert(i);
        });
      };
      add(kp.op(static_cast<size_t>(i))->body);
      add(kp.op(static_cast<size_t>(i))->init);
    }
  }
  /// Whether `t` is a model output or an op not in `mine` reads it.
  bool read_outside(const te::Tensor& t, const std::set<int>& mine) const {
    if (m_index.is_output(t.get())) return true;
    auto it = m_inside.find(t.get());
    if (it != m_inside.end())
      for (int r : it->second)
        if (!mine.count(r)) return true;
    const int producer = m_index.producer(t.get());
    if (producer >= 0)
      for (int r : m_index.readers(static_cast<size_t>(producer)))
        if (!m_kp.in_partitions(static_cast<size_t>(r)) && !mine.count(r)) return true;
    return false;
  }

 private:
  const KernelProgram& m_kp;
  const te::ProgramIndex& m_index;
  /// Readers among the partitions' ops (folded views not computed are none).
  std::unordered_map<const te::TensorNode*, std::set<int>> m_inside;
};

/// TEs of a partition computed by one schedule: one TE, or a GEMM or a reduction and its
/// epilogue TEs.
struct Unit {
  std::vector<int> tes;  ///< op indices, the main TE first
  std::vector<te::Tensor> on_chip;
  bool gemm = false;
  bool reduction = false;  ///< a reduction whose row results are stored by one thread
  /// An attention chain (S, M, L, P, O) computed by the fused attention stage.
  bool attention = false;
  gpu::Tile tile;
  std::string why;  ///< the tuner's reason, when it chose the tile
};

/// The attention chain of the TEs `tes` (S, M, [E,] L, P, O) as the kernel computes them (views
/// folded), when the fused stage takes it under `config` and nothing outside the chain reads its
/// intermediates; nothing otherwise.
std::optional<plan::AttentionMatch> attention_of(const KernelProgram& kp,
                                                 const std::vector<int>& tes,
                                                 const Readers& readers,
                                                 const schedule::ScheduleConfig& config) {
  std::vector<const te::ComputeOp*> ops;
  for (int te : tes) {
    if (te < 0 || static_cast<size_t>(te) >= kp.size() || kp.dropped(static_cast<size_t>(te)))
      return std::nullopt;
    ops.push_back(kp.op(static_cast<size_t>(te)).get());
  }
  std::optional<plan::AttentionMatch> m = plan::match_attention_ops(ops);
  if (!m || schedule::attention_tile(*m, config).br == 0) return std::nullopt;
  const std::set<int> mine(tes.begin(), tes.end());
  for (size_t i = 0; i + 1 < ops.size(); ++i)
    if (readers.read_outside(ops[i]->output, mine)) return std::nullopt;
  return m;
}

std::vector<Unit> units_of(const KernelProgram& kp, const std::vector<int>& tes,
                           const Readers& readers, const schedule::ScheduleConfig& config,
                           const KernelBuildOptions& options,
                           const std::vector<std::vector<int>>& attention = {}) {
  std::vector<Unit> units;
  for (size_t i = 0; i < tes.size();) {
    Unit u;
    // A stage the plan fused as attention: its TEs in one unit, when the template takes
    // them as the kernel computes them (else they are scheduled one by one).
    for (const std::vector<int>& chain : attention)
      if (i + chain.size() <= tes.size() &&
          std::equal(chain.begin(), chain.end(), tes.begin() + static_cast<std::ptrdiff_t>(i)) &&
          attention_of(kp, chain, readers, config)) {
        u.tes = chain;
        u.attention = true;
        break;
      }
    if (u.attention) {
      i += u.tes.size();
      units.push_back(std::move(u));
      continue;
    }
    const te::ComputeOp& op = *kp.op(static_cast<size_t>(tes[i]));
    u.tes.push_back(tes[i++]);
    // The tuner and the epilogues serve the FP32 and the tensor-core GEMM templates alike.
    u.gemm = schedule::classify(op) == schedule::ScheduleKind::Gemm;
    // A row of a reduction split over blocks is finished by no single thread.
    u.reduction = schedule::classify(op) == schedule::ScheduleKind::Reduction &&
                  !schedule::reduction_splits_rows(op, config);
    if ((u.gemm || u.reduction) && options.epilogues) {
      std::vector<const te::ComputeOp*> group;
      auto takes = [&](const te::ComputeOp& next) {
        return u.gemm ? schedule::is_epilogue(op, group, next)
                      : schedule::is_reduction_epilogue(op, group, next);
      };
      while (i < tes.size() && takes(*kp.op(static_cast<size_t>(tes[i])))) {
        group.push_back(kp.op(static_cast<size_t>(tes[i])).get());
        u.tes.push_back(tes[i++]);
      }
      std::set<int> mine(u.tes.begin(), u.tes.end());
      for (int te : u.tes) {
        const te::Tensor& t = kp.op(static_cast<size_t>(te))->output;
        if (!readers.read_outside(t, mine) && te != u.tes.back()) u.on_chip.push_back(t);
      }
    }
    units.push_back(std::move(u));
  }
  return units;
}

/// Says in the stage's schedule text which views its TEs read through their indexing, and why
/// a view that is still computed is written (a copy for a model output or another kernel).
void describe_views(const KernelProgram& kp, const Unit& u, loop::Kernel& k) {
  std::string& text = k.stages.front().schedule;
  std::vector<std::string> folded;
  for (int te : u.tes)
    for (const std::string& v : kp.folds(static_cast<size_t>(te)))
      if (std::find(folded.begin(), folded.end(), v) == folded.end()) folded.push_back(v);
  const std::string& why = kp.copy_why(static_cast<size_t>(u.tes.front()));
  if (!why.empty()) text += "; view written as a copy: " + why;
  if (folded.empty()) return;
  text +=
      folded.size() == 1 ? "; view folded into its indexing:" : "; views folded into its indexing:";
  for (const std::string& v : folded) text += " " + v;
}

/// The stage of the GEMM unit `u` (a GEMM and its epilogue TEs) under `c` with the unit's tile,
/// reading operand B from `panel` when given; the views it folds told by the caller.
loop::Kernel schedule_gemm_unit(const KernelProgram& kp, const Unit& u,
                                const schedule::ScheduleConfig& c,
                                const schedule::WeightPanel* panel = nullptr) {
  const te::ComputeOp& op = *kp.op(static_cast<size_t>(u.tes[0]));
  std::vector<const te::ComputeOp*> epilogue;
  for (size_t i = 1; i < u.tes.size(); ++i)
    epilogue.push_back(kp.op(static_cast<size_t>(u.tes[i])).get());
  loop::Kernel k =
      schedule::schedule_fused(op, epilogue, schedule::with_tile(c, u.tile), u.on_chip, panel);
  if (!u.why.empty()) k.stages.front().schedule += "; tuned: " + u.why;
  return k;
}

/// The scheduled stages of one partition and the units they came from.
struct PartitionSchedule {
  std::vector<Unit> units;
  std::vector<loop::Kernel> stages;
  /// Per stage, the unit it computes (its index in units), or -1 for a stage of a unit split in
  /// several (a reduction whose rows went over blocks, and its consumers).
  std::vector<int> stage_unit;
  /// The configuration the stages were scheduled with (block, grid cap), tiles aside.
  schedule::ScheduleConfig config;
  /// Per stage, the stage of the GEMM on whose tiles it runs (schedule_on_gemm_tiles), or -1.
  std::vector<int> on_tiles_of;
};

PartitionSchedule schedule_partition_now(const KernelProgram& kp, const plan::Partition& p,
                                         const std::string& name, const Readers& readers,
                                         const gpu::GpuSpec* gpu,
                                         const schedule::ScheduleConfig& config,
                                         const KernelBuildOptions& options);

}  // namespace

struct ScheduleMemo::Impl {
  std::mutex mutex;
  std::list<std::pair<std::string, PartitionSchedule>> kept;  ///< most recent first
  static constexpr size_t kKept = 8;
};

ScheduleMemo::ScheduleMemo() : m_impl(std::make_unique<Impl>()) {}
ScheduleMemo::~ScheduleMemo() = default;

namespace {

/// schedule_partition_now, or the schedule options.schedules keeps for the same key.
PartitionSchedule schedule_partition(const KernelProgram& kp, const plan::Partition& p,
                                     const std::string& name, const Readers& readers,
                                     const gpu::GpuSpec* gpu,
                                     const schedule::ScheduleConfig& config,
                                     const KernelBuildOptions& options) {
  if (!options.schedules || !options.schedule_key)
    return schedule_partition_now(kp, p, name, readers, gpu, config, options);
  // The caller's key, and what this call adds to it: the kernel's name, the grid cap and
  // whether rows are split (config; the capped schedule is a second entry).
  const std::string key = fmt::format("{}|{}|cap {}|rows {}", options.schedule_key(p), name,
                                      config.grid_cap, config.cross_block_rows);
  ScheduleMemo::Impl& memo = options.schedules->impl();
  {
    std::lock_guard<std::mutex> lock(memo.mutex);
    for (auto it = memo.kept.begin(); it != memo.kept.end(); ++it)
      if (it->first == key) {
        memo.kept.splice(memo.kept.begin(), memo.kept, it);
        return memo.kept.front().second;
      }
  }
  PartitionSchedule ps = schedule_partition_now(kp, p, name, readers, gpu, config, options);
  std::lock_guard<std::mutex> lock(memo.mutex);
  memo.kept.emplace_front(key, ps);
  if (memo.kept.size() > ScheduleMemo::Impl::kKept) memo.kept.pop_back();
  return ps;
}

PartitionSchedule schedule_partition_now(const KernelProgram& kp, const plan::Partition& p,
                                         const std::string& name, const Readers& readers,
                                         const gpu::GpuSpec* gpu,
                                         const schedule::ScheduleConfig& config,
                                         const KernelBuildOptions& options) {
  // Stages list the partition's TEs in execution order; merge_stages places the grid
  // barriers itself from what each stage reads and writes.
  std::vector<int> tes;
  std::map<int, const plan::TileChoice*> recorded;
  for (const plan::Stage& st : p.stages) {
    for (int te : st.tes) {
      if (te < 0 || static_cast<size_t>(te) >= kp.size())
        throw KernelBuildError(name, "", "TE index " + std::to_string(te) + " out of range");
      if (!kp.dropped(static_cast<size_t>(te))) tes.push_back(te);
    }
    for (const plan::TileChoice& t : st.tiles) recorded[t.te] = &t;
  }
  std::vector<std::vector<int>> attention;
  for (const plan::Stage& st : p.stages)
    if (st.kind == plan::StageKind::Attention) attention.push_back(st.tes);
  PartitionSchedule ps;
  ps.units = units_of(kp, tes, readers, config, options, attention);
  // A kernel of several stages may get grid barriers: all its blocks must be co-resident.
  const bool multi = ps.units.size() > 1;
  auto pick_tiles = [&](int64_t threads) {
    for (Unit& u : ps.units) {
      if (!u.gemm) continue;
      const te::ComputeOp& op = *kp.op(static_cast<size_t>(u.tes[0]));
      auto rec = recorded.find(u.tes[0]);
      if (options.tune && rec != recorded.end()) {
        const plan::TileChoice& t = *rec->second;
        u.tile = t.tile;
        u.why = t.why;
        if (threads == 0 || u.tile.threads() == threads) continue;
      }
      if (options.tune && gpu) {
        schedule::TuneOptions to;
        to.gpu = *gpu;
        to.precision = config.precision;
        to.limits.threads = threads;
        to.limits.fit_co_resident = multi;
        to.measure = options.measure;
        to.measure_top = options.measure_top;
        schedule::TuneResult r = schedule::tune_gemm(op, to);
        if (!r.ok() && multi) {
          to.limits.fit_co_resident = false;
          r = schedule::tune_gemm(op, to);
        }
        if (r.ok()) {
          u.tile = r.best().tile;
          u.why = r.reason();
          // Under the Hopper mainloop, the best-ranked tile it takes (whole warpgroups, BM a
          // multiple of 64), when one fits the kernel.
          if (config.wgmma_mainloop && u.tile.tensor_core &&
              !detail::wgmma_split(with_tile(config, u.tile)).ok())
            for (const TileEstimate& e : r.ranked)
              if (e.tile.tensor_core && detail::wgmma_split(with_tile(config, e.tile)).ok()) {
                u.tile = e.tile;
                u.why = e.why() + "; the best of " + std::to_string(r.ranked.size()) +
                        " that wgmma takes (" + r.best().tile.describe() + " ranked first)";
                break;
              }
          continue;
        }
      }
      u.tile = config.gemm_tile;
      u.why.clear();
      if (threads > 0 && u.tile.threads() != threads && !fit_threads(u.tile, threads)) return false;
    }
    return true;
  };
  auto schedule_all = [&](const schedule::ScheduleConfig& c) {
    std::vector<loop::Kernel> stages;
    ps.stage_unit.clear();
    ps.on_tiles_of.clear();
    ps.config = c;
    // The GEMMs scheduled so far by output: an element-wise TE that reads one on its tiles
    // (an LSTM's cell update) is scheduled on them (schedule_on_gemm_tiles).
    struct GemmStage {
      const te::ComputeOp* op;
      gpu::Tile tile;
      int64_t threads;
      int stage;  ///< its index in `stages`
    };
    std::map<const te::TensorNode*, GemmStage> gemms;
    int tiles_of = -1;  // the GEMM stage on_gemm_tiles last scheduled a TE on
    auto on_gemm_tiles = [&](const te::ComputeOp& op) -> std::optional<loop::Kernel> {
      std::vector<const GemmStage*> read;
      te::for_each_node(op.body, [&](const te::Expr& x) {
        if (const te::Read* r = x.as<te::Read>())
          if (auto it = gemms.find(r->tensor.get());
              it != gemms.end() && std::find(read.begin(), read.end(), &it->second) == read.end())
            read.push_back(&it->second);
      });
      for (const GemmStage* g : read)
        if (std::optional<loop::Kernel> k = schedule::schedule_on_gemm_tiles(
                op, *g->op, g->tile, g->threads, schedule::with_tile(c, g->tile))) {
          tiles_of = g->stage;
          return k;
        }
      return std::nullopt;
    };
    // A kernel of many stages schedules its GEMM units (each alone) on every core first; the
    // walk below takes them in order, each error where scheduling it one by one would throw.
    std::vector<std::optional<loop::Kernel>> gemm_done(ps.units.size());
    std::vector<std::exception_ptr> gemm_failed(ps.units.size());
    if (ps.units.size() >= kSideBySideStages) {
      ThreadPool::global().parallel_for(
          static_cast<int64_t>(ps.units.size()), 16, [&](int64_t begin, int64_t end) {
            for (int64_t i = begin; i < end; ++i) {
              const Unit& u = ps.units[static_cast<size_t>(i)];
              if (!u.gemm || u.attention) continue;
              try {
                gemm_done[static_cast<size_t>(i)] = schedule_gemm_unit(kp, u, c);
              } catch (...) {
                gemm_failed[static_cast<size_t>(i)] = std::current_exception();
              }
            }
          });
    }
    for (const Unit& u : ps.units) {
      const te::ComputeOp& op = *kp.op(static_cast<size_t>(u.tes[0]));
      const int unit_index = static_cast<int>(&u - ps.units.data());
      try {
        std::vector<const te::ComputeOp*> epilogue;
        for (size_t i = 1; i < u.tes.size(); ++i)
          epilogue.push_back(kp.op(static_cast<size_t>(u.tes[i])).get());
        loop::Kernel k;
        if (u.attention) {
          std::optional<plan::AttentionMatch> m = attention_of(kp, u.tes, readers, c);
          SOUFFLE_CHECK(m.has_value(), "attention unit " + op.name + " no longer matches");
          k = schedule::schedule_attention(*m, c);
        } else if (u.gemm) {
          const auto at = static_cast<size_t>(unit_index);
          if (gemm_failed[at]) std::rethrow_exception(gemm_failed[at]);
          k = gemm_done[at] ? std::move(*gemm_done[at]) : schedule_gemm_unit(kp, u, c);
          gemms[op.output.get()] = {&op, u.tile, k.launch.block_x, static_cast<int>(stages.size())};
        } else if (std::optional<loop::Kernel> aligned;
                   epilogue.empty() && !u.reduction &&
                   schedule::classify(op) == schedule::ScheduleKind::Injective &&
                   (aligned = on_gemm_tiles(op))) {
          k = std::move(*aligned);
          describe_views(kp, u, k);
          stages.push_back(std::move(k));
          ps.stage_unit.push_back(unit_index);
          ps.on_tiles_of.push_back(tiles_of);
          continue;
        } else if (u.reduction && !epilogue.empty() && schedule::reduction_splits_rows(op, c)) {
          // Rescheduled on a smaller block, the rows now split over blocks, which takes no
          // epilogue: the reduction and its consumers become stages of their own again.
          k = schedule::schedule_op(op, c);
          describe_views(kp, u, k);
          stages.push_back(std::move(k));
          ps.stage_unit.push_back(-1);
          ps.on_tiles_of.push_back(-1);
          for (const te::ComputeOp* ep : epilogue) {
            loop::Kernel e = schedule::schedule_op(*ep, c);
            e.stages.front().schedule +=
                "; not in the epilogue of " + op.name + ": its rows split over blocks";
            stages.push_back(std::move(e));
            ps.stage_unit.push_back(-1);
            ps.on_tiles_of.push_back(-1);
          }
          continue;
        } else if (u.reduction && !epilogue.empty()) {
          k = schedule::schedule_reduction_fused(op, epilogue, c, u.on_chip);
        } else {
          k = schedule::schedule_op(op, c);
        }
        describe_views(kp, u, k);
        stages.push_back(std::move(k));
        ps.stage_unit.push_back(unit_index);
        ps.on_tiles_of.push_back(-1);
      } catch (const std::logic_error&) {
        throw;  // a bug in a template is not a schedule that cannot be made
      } catch (const std::exception& e) {
        throw KernelBuildError(name, op.name, std::string("cannot schedule: ") + e.what());
      }
    }
    return stages;
  };
  pick_tiles(0);
  ps.stages = schedule_all(config);
  // A stage with block barriers must run on the kernel's whole block. When such stages want
  // different blocks, or a stage without barriers wants a larger one, every stage is
  // rescheduled on the largest block a barrier stage wants: GEMMs, where the time goes, keep
  // their tiles or get another tile of that many threads, reductions take exactly that many
  // threads per row, and grid-stride stages take any block up to it.
  int64_t barrier_block = 0;
  for (const loop::Kernel& k : ps.stages)
    if (has_block_barrier(k.body)) barrier_block = std::max(barrier_block, k.launch.block_x);
  bool mismatch = false;
  for (const loop::Kernel& k : ps.stages)
    mismatch |=
        barrier_block > 0 && (k.launch.block_x > barrier_block ||
                              (k.launch.block_x != barrier_block && has_block_barrier(k.body)));
  if (mismatch) {
    schedule::ScheduleConfig c = config;
    c.block = barrier_block;
    c.exact_block = true;
    if (!pick_tiles(barrier_block))
      throw KernelBuildError(name, "",
                             "no schedule fits all stages on one block of " +
                                 std::to_string(barrier_block) + " threads");
    ps.stages = schedule_all(c);
  }
  return ps;
}

bool has_grid_barrier(const loop::Kernel& k) {
  bool found = false;
  loop::for_each_stmt(k.body,
                      [&](const loop::Stmt& x) { found |= x.as<loop::GridBarrier>() != nullptr; });
  return found;
}

loop::Kernel merged(std::vector<loop::Kernel> stages, const std::string& name,
                    const schedule::MergeOptions& options = {}) {
  try {
    return schedule::merge_stages(std::move(stages), name, options);
  } catch (const std::logic_error&) {
    throw;  // a failed proof or verifier is a bug, not a refusal
  } catch (const std::exception& e) {
    throw KernelBuildError(name, "", std::string("cannot merge stages: ") + e.what());
  }
}

/// Launches of a partition of a strategy that launches without grid synchronization: its
/// stages in order, one merged kernel as long as merge_stages needs no grid barrier between
/// them, a new launch at a stage that would need one. Each launch after the first says why in
/// its first stage's schedule text; with several, they are named `name`.0, .1, ...
/// The outputs of `p`'s TEs that only `p` reads (no model output): merge_stages may keep those
/// it proves block-owned in shared memory.
std::vector<te::Tensor> partition_locals(const KernelProgram& kp, const plan::Partition& p,
                                         const Readers& readers) {
  const std::set<int> mine(p.tes.begin(), p.tes.end());
  std::vector<te::Tensor> out;
  for (int te : p.tes) {
    if (te < 0 || static_cast<size_t>(te) >= kp.size()) continue;
    const te::Tensor& t = kp.op(static_cast<size_t>(te))->output;
    if (!readers.read_outside(t, mine)) out.push_back(t);
  }
  return out;
}

/// Merge options for a kernel of `stages`: `locals` may live in shared memory within a per-block
/// budget that, for a grid that must be co-resident, leaves room for its blocks on every SM.
schedule::MergeOptions merge_options(const std::vector<loop::Kernel>& stages,
                                     std::vector<te::Tensor> locals, const gpu::GpuSpec* gpu,
                                     bool cooperative) {
  schedule::MergeOptions mo;
  mo.local = std::move(locals);
  if (gpu && cooperative && gpu->sm_count > 0) {
    int64_t grid = 1;
    for (const loop::Kernel& k : stages) grid = std::max(grid, k.launch.grid_x);
    const int64_t per_sm = (grid + gpu->sm_count - 1) / gpu->sm_count;
    const int64_t fit = gpu->shared_memory_per_sm / per_sm - gpu->reserved_shared_memory_per_block;
    mo.shared_budget = std::max<int64_t>(0, std::min(mo.shared_budget, fit));
  }
  return mo;
}

std::vector<loop::Kernel> split_launches(std::vector<loop::Kernel> stages, const std::string& name,
                                         const std::vector<te::Tensor>& locals,
                                         const gpu::GpuSpec* gpu) {
  std::vector<std::vector<loop::Kernel>> launches;
  std::vector<StageBoundary> launch_bounds;  // per launch after the first: why it starts
  std::set<const te::TensorNode*> written;   // by the stages of the current launch
  for (loop::Kernel& s : stages) {
    if (!launches.empty()) {
      std::vector<loop::Kernel> trial = launches.back();
      trial.push_back(s);
      loop::Kernel k = merged(std::move(trial), name);
      if (has_grid_barrier(k) || k.launch.cooperative) {
        // The boundary merging placed before this stage is why it starts a launch.
        const int at = static_cast<int>(k.stages.size() - s.stages.size());
        StageBoundary why;
        for (const StageBoundary& b : k.boundaries)
          if (b.after == at && b.before == at - 1) why = b;
        why.before = -1;
        why.after = 0;
        why.producer = -1;
        why.kind = BoundaryKind::Launch;
        why.prefetched = false;
        why.grid = 0;
        launch_bounds.resize(launches.size() + 1);
        launch_bounds.back() = why;
        std::string dep;
        for (const te::Tensor& t : s.inputs)
          if (dep.empty() && written.count(t.get())) dep = t->name;
        const std::string n = std::to_string(launches.size());
        s.stages.front().schedule += "; a launch of its own (" + name + "." + n + "): " +
                                     (dep.empty() ? std::string("it would need a grid barrier")
                                                  : "it reads " + dep + " across blocks") +
                                     ", and this strategy launches without grid synchronization";
        written.clear();
        launches.emplace_back();
      }
    } else {
      launches.emplace_back();
    }
    for (const te::Tensor& t : s.outputs) written.insert(t.get());
    launches.back().push_back(std::move(s));
  }
  std::vector<loop::Kernel> out;
  for (size_t i = 0; i < launches.size(); ++i) {
    // A partition-local tensor is local to this launch when no other launch reads it.
    std::vector<te::Tensor> mine;
    for (const te::Tensor& t : locals) {
      bool elsewhere = false;
      for (size_t j = 0; j < launches.size(); ++j)
        if (j != i)
          for (const loop::Kernel& s : launches[j])
            elsewhere |= std::find(s.inputs.begin(), s.inputs.end(), t) != s.inputs.end();
      if (!elsewhere) mine.push_back(t);
    }
    schedule::MergeOptions mo = merge_options(launches[i], std::move(mine), gpu, false);
    out.push_back(merged(std::move(launches[i]),
                         launches.size() == 1 ? name : name + "." + std::to_string(i), mo));
    if (i > 0 && i < launch_bounds.size())
      out.back().boundaries.insert(out.back().boundaries.begin(), launch_bounds[i]);
  }
  return out;
}

/// The blocks of a cooperative kernel of `stages` that are co-resident on `gpu` with `registers`
/// per thread: the block is the largest stage's, the shared arena the largest stage's (merging
/// keeps it there; residents take only what is left at that many blocks per SM). 0 when the
/// spec lacks the figures.
int64_t cooperative_grid_cap(const std::vector<loop::Kernel>& stages, const gpu::GpuSpec& gpu,
                             int registers) {
  int64_t block = 1, arena = 0;
  for (const loop::Kernel& k : stages) {
    block = std::max(block, k.launch.block_x);
    arena = std::max(arena, (k.launch.dynamic_shared_bytes + 31) / 32 * 32);
  }
  if (gpu.sm_count <= 0 || registers <= 0) return 0;
  return gpu::max_active_blocks(gpu, static_cast<int>(block), registers, arena);
}

/// The plan's GPU: the spec it was made for, else the known spec it names (tiles are tuned for
/// it); null when neither.
std::optional<gpu::GpuSpec> plan_gpu(const plan::FusionPlan& plan) {
  if (plan.gpu_spec.sm_count > 0) return plan.gpu_spec;
  try {
    return gpu::gpu_spec(plan.gpu);
  } catch (const UserError&) {  // a name no built-in spec has
    return std::nullopt;
  }
}

/// `config` adapted to the plan: cross-block reductions need a grid barrier, which only the
/// souffle strategy launches; their grid is the plan GPU's SM count.
schedule::ScheduleConfig plan_config(const plan::FusionPlan& plan,
                                     const schedule::ScheduleConfig& config) {
  schedule::ScheduleConfig c = config;
  if (!plan::is_souffle(plan.strategy))
    c.cross_block_rows = 0;
  else if (std::optional<gpu::GpuSpec> gpu = plan_gpu(plan))
    c.cross_block_rows = std::min<int64_t>(c.cross_block_rows, gpu->sm_count);
  return c;
}

}  // namespace

KernelBuildError::KernelBuildError(std::string kernel, std::string te, std::string detail)
    : std::runtime_error(kernel + (te.empty() ? "" : " (" + te + ")") + ": " + detail),
      m_kernel(std::move(kernel)),
      m_te(std::move(te)),
      m_detail(std::move(detail)) {}

namespace {

/// The kernels of `parts`, partitions of a plan over `plan.program` (plan.partitions unread).
loop::KernelSet build_kernels(const plan::FusionPlan& plan,
                              const std::vector<plan::Partition>& parts,
                              const schedule::ScheduleConfig& plan_independent,
                              const KernelBuildOptions& options) {
  const schedule::ScheduleConfig shared_config = plan_config(plan, plan_independent);
  const te::TeProgram& prog = plan.program;
  loop::KernelSet ks;
  ks.name = prog.name;
  ks.inputs = prog.inputs;
  ks.outputs = prog.outputs;
  const std::shared_ptr<const te::ProgramIndex> index = plan::index_of(plan);
  const KernelProgram kp = fold_views(prog, *index, parts);
  const Readers readers(kp, *index);
  const std::optional<gpu::GpuSpec> gpu = options.tune ? plan_gpu(plan) : std::nullopt;
  const std::optional<gpu::GpuSpec> spec_for_budget = plan_gpu(plan);
  // On a GPU: the constants a kernel's variants (flags or grid barriers, waves or program
  // order) are priced with, and the FLOPs of each TE built here for pricing a kernel whole (as
  // the plan's pricer prices it).
  std::optional<gpu::CostConstants> costs;
  std::map<std::string, int64_t> flops;  // made at the first kernel priced here
  if (spec_for_budget)
    costs = gpu::cost_constants(*spec_for_budget, shared_config.precision, options.calibration);
  auto make_flops = [&] {
    if (flops.empty())
      for (const plan::Partition& p : parts)
        for (int i : p.tes)
          if (i >= 0 && static_cast<size_t>(i) < plan.analysis.tes.size())
            flops[plan.analysis.tes[static_cast<size_t>(i)].name] =
                plan.analysis.tes[static_cast<size_t>(i)].flops;
  };
  auto flops_of = [&](const std::string& te) -> int64_t {
    make_flops();
    auto it = flops.find(te);
    return it == flops.end() ? 0 : it->second;
  };
  // The grid-barrier form (options.grid_form): complete only when every kernel has one.
  const bool grid_form = options.grid_form && options.sync == SyncMode::Auto && spec_for_budget;
  loop::KernelSet grid_ks;
  grid_ks.name = ks.name;
  grid_ks.inputs = ks.inputs;
  grid_ks.outputs = ks.outputs;
  for (const plan::Partition& p : parts) {
    check_cancel(options.cancel, "building the kernels");
    std::string name = kernel_name(p);
    if (options.starting) options.starting(name);
    schedule::ScheduleConfig config = shared_config;
    if (!p.split_rows) config.cross_block_rows = 0;
    PartitionSchedule ps =
        schedule_partition(kp, p, name, readers, gpu ? &*gpu : nullptr, config, options);
    if (ps.stages.empty()) continue;
    std::vector<te::Tensor> locals;
    if (options.shared_residents) locals = partition_locals(kp, p, readers);
    // The souffle strategy's choice: these stay in global scratch.
    locals.erase(std::remove_if(locals.begin(), locals.end(),
                                [&](const te::Tensor& t) {
                                  return std::find(p.global_scratch.begin(), p.global_scratch.end(),
                                                   t->name) != p.global_scratch.end();
                                }),
                 locals.end());
    const gpu::GpuSpec* spec = spec_for_budget ? &*spec_for_budget : nullptr;
    if (options.split_launches && !plan::is_souffle(plan.strategy)) {
      for (loop::Kernel& k : split_launches(std::move(ps.stages), name, locals, spec)) {
        if (grid_form) grid_ks.kernels.push_back(k);
        ks.kernels.push_back(std::move(k));
      }
      continue;
    }
    // Stages that may need grid barriers: a grid beyond what is co-resident cannot launch, so
    // the stages are scheduled again within that many blocks.
    int64_t cap = 0, grid = 0;
    for (const loop::Kernel& k : ps.stages) grid = std::max(grid, k.launch.grid_x);
    // The registers the grid is planned at: the option's, or an mma mainloop stage's need.
    int registers = options.cooperative_registers;
    if (registers > 0)
      for (const loop::Kernel& k : ps.stages)
        registers = static_cast<int>(cooperative_register_budget(k.stages, registers));
    if (spec && ps.stages.size() > 1) cap = cooperative_grid_cap(ps.stages, *spec, registers);
    if (cap > 0 && grid > cap) {
      schedule::ScheduleConfig capped = config;
      capped.grid_cap = cap;
      ps = schedule_partition(kp, p, name, readers, gpu ? &*gpu : nullptr, capped, options);
    }
    schedule::MergeOptions mo = merge_options(ps.stages, std::move(locals), spec, true);
    mo.flag_max_tiles = flag_max_tiles(options.sync);
    for (const plan::ForcedSync& f : p.forced_sync) mo.forced[f.te] = f.kind;
    const bool auto_priced = options.sync == SyncMode::Auto && costs && spec;
    if (auto_priced) {
      // Each boundary where flags are possible gets the cheaper order by the cost model.
      const gpu::CostConstants c = *costs;
      const gpu::GpuSpec priced = *spec;
      mo.grid_price = [c, priced](int64_t blocks) {
        return gpu::grid_barrier_cost_us(priced, c, blocks);
      };
      mo.flags_price = [c](int64_t tiles, int waits) {
        return gpu::flag_wait_cost_us(c, tiles, waits);
      };
    } else if (options.sync == SyncMode::Auto) {
      mo.flag_max_tiles = kAutoFlagTiles;
    }
    // A kernel and its estimate where the build priced it (under auto), so that it is priced once.
    struct Priced {
      loop::Kernel k;
      std::optional<double> us;
    };
    auto price_of = [&](Priced& p) {
      if (!p.us)
        p.us = price_kernel(p.k, *spec, *costs, flops_of, options.cooperative_registers).total_us;
      return *p.us;
    };
    // A choice made for kernel `p`: on its first stage, typed and told in its schedule text.
    auto record = [](Priced& p, BuildChoice c) {
      loop::StageInfo& front = p.k.stages.front();
      front.schedule += "; " + describe(c);
      front.choices.push_back(std::move(c));
    };
    // Keeps `candidate` where the cost model prices it below `other`, else `other`, and records
    // the choice on the kept kernel.
    auto keep = [&](ChoiceKind kind, Priced& candidate, Priced other, std::string reason = {}) {
      record(candidate,
             keep_cheaper(kind, candidate, std::move(other), price_of, std::move(reason)));
    };
    // One kernel of the stages in the order and places `mo` says; under auto priced, its
    // grid-barrier form too (`grid_only_form`, as SyncMode::Grid builds it).
    auto build = [&](std::vector<loop::Kernel> stages, const schedule::MergeOptions& how,
                     Priced* grid_only_form = nullptr) {
      Priced out;
      if (how.grid_price && how.flags_price) {
        // Sync mode auto, per kernel: flags where each prices below its grid barrier, unless the
        // kernel with grid barriers only prices lower in all — a stage after a grid barrier needs
        // no order on what came before it, one after flags may need waits of its own, so a cheap
        // flag boundary can cost more waits further on.
        schedule::MergeOptions grid_only = how;
        grid_only.flag_max_tiles = 0;
        grid_only.grid_price = nullptr;
        grid_only.flags_price = nullptr;
        // Both priced whole (cost model v2, as the plan's pricer prices them): flags can also
        // change what a stage costs (no weight tile loaded before a barrier that is not there).
        Priced with_flags{merged(stages, name, how), std::nullopt};
        // Where no boundary could take flags (none was priced for them), the merge made every
        // choice the grid-barrier merge makes: that kernel is this one.
        const bool candidates =
            std::any_of(with_flags.k.boundaries.begin(), with_flags.k.boundaries.end(),
                        [](const StageBoundary& b) {
                          return b.kind == BoundaryKind::Flags || b.flags_price_us > 0;
                        });
        Priced with_grid = candidates
                               ? Priced{merged(std::move(stages), name, grid_only), std::nullopt}
                               : with_flags;
        price_of(with_flags);
        price_of(with_grid);  // once, also for the grid-barrier form
        if (grid_only_form) *grid_only_form = with_grid;
        out = std::move(with_flags);
        BuildChoice c = keep_cheaper(ChoiceKind::SyncForm, out, std::move(with_grid), price_of);
        // Priced alike, the two are one kernel (no boundary could take flags): no choice.
        if (c.price_kept_us != c.price_other_us) record(out, std::move(c));
      } else {
        out.k = merged(std::move(stages), name, how);
      }
      return out;
    };
    // Each stage's panel (weight_panel.h), were it to keep one: GEMMs whose operand B reads
    // nothing the kernel writes. Their keys are also the lanes the waves keep on their blocks.
    std::vector<std::optional<schedule::PanelShape>> stage_panels(ps.stages.size());
    if (options.weight_panels) {
      std::set<const te::TensorNode*> written;
      for (const loop::Kernel& st : ps.stages)
        for (const te::Tensor& t : st.outputs) written.insert(t.get());
      auto is_written = [&](const te::TensorNode* t) { return written.count(t) > 0; };
      for (size_t i = 0; i < ps.stages.size(); ++i) {
        const int u = ps.stage_unit[i];
        if (u < 0 || !ps.units[static_cast<size_t>(u)].gemm) continue;
        const Unit& unit = ps.units[static_cast<size_t>(u)];
        stage_panels[i] =
            schedule::weight_panel_shape(*kp.op(static_cast<size_t>(unit.tes[0])),
                                         schedule::with_tile(ps.config, unit.tile), is_written);
      }
    }
    // Weight panels for the stages ps.stages[order[j]] at `how`'s block offsets: the stages,
    // with the GEMMs that keep their weights in shared memory rescheduled to read them there,
    // and the buffers put in `how`. Nothing where no weights are read by two stages, or where
    // the panels do not fit beside the largest stage's arena (within a block's share of an SM,
    // and with the kernel's grid still co-resident on the plan's GPU).
    auto panelled = [&](const std::vector<size_t>& order,
                        schedule::MergeOptions& how) -> std::optional<std::vector<loop::Kernel>> {
      if (!options.weight_panels) return std::nullopt;
      const size_t n = order.size();
      std::vector<std::optional<schedule::PanelShape>> shapes(n);
      std::vector<int64_t> offsets(n, 0), grids(n, 1);
      int64_t arena = 0, block = 1, kernel_grid = 1;
      bool any = false;
      for (size_t j = 0; j < n; ++j) {
        const loop::Kernel& st = ps.stages[order[j]];
        offsets[j] = how.block_offsets.empty() ? 0 : how.block_offsets[j];
        grids[j] = std::max<int64_t>(1, st.launch.grid_x);
        arena = std::max(arena, (st.launch.dynamic_shared_bytes + 31) / 32 * 32);
        block = std::max(block, st.launch.block_x);
        kernel_grid = std::max(kernel_grid, offsets[j] + grids[j]);
        shapes[j] = stage_panels[order[j]];
        any |= shapes[j].has_value();
      }
      if (!any) return std::nullopt;
      // Per block: on the plan's GPU, its share of an SM's shared memory when the grid's blocks
      // spread evenly (within the opt-in maximum a block may have: the launchers opt in beyond
      // 48 KB); without one, the residents' budget.
      int64_t budget = how.shared_budget;
      if (spec && spec->sm_count > 0) {
        const int64_t per_sm = (kernel_grid + spec->sm_count - 1) / spec->sm_count;
        budget =
            std::min(spec->max_shared_memory_per_block,
                     spec->shared_memory_per_sm / per_sm - spec->reserved_shared_memory_per_block);
      }
      const schedule::PanelAssignment a =
          schedule::assign_weight_panels(shapes, offsets, grids, budget - arena, name);
      if (a.buffers.empty()) return std::nullopt;
      if (spec && registers > 0 &&
          gpu::max_active_blocks(*spec, static_cast<int>(block), registers, arena + a.bytes) <
              kernel_grid)
        return std::nullopt;
      std::vector<loop::Kernel> out;
      for (size_t j = 0; j < n; ++j) {
        if (!a.stage[j]) {
          out.push_back(ps.stages[order[j]]);
          continue;
        }
        const Unit& unit = ps.units[static_cast<size_t>(ps.stage_unit[order[j]])];
        try {
          out.push_back(schedule_gemm_unit(kp, unit, ps.config, &*a.stage[j]));
        } catch (const std::logic_error&) {
          throw;
        } catch (const std::exception& e) {
          throw KernelBuildError(name, kp.op(static_cast<size_t>(unit.tes[0]))->name,
                                 std::string("cannot schedule with a weight panel: ") + e.what());
        }
        describe_views(kp, unit, out.back());
      }
      how.kernel_shared = a.buffers;
      out.front().stages.front().schedule += fmt::format(
          "; weight panels: {} weights read by several GEMM stages kept in shared memory for "
          "the whole kernel ({} bytes per block): {} stages load them, {} read them there",
          a.groups, a.bytes, a.loads, a.reuses);
      return out;
    };
    Priced k, grid_k;
    Priced* grid_out = grid_form && auto_priced ? &grid_k : nullptr;
    // The stages ps.stages[order[j]] built as `how` says, with weight panels where they fit,
    // against without: the cheaper by the cost model (the panels without a GPU to price them:
    // they only take loads away). `grid_only_form` as for build.
    auto build_in = [&](const std::vector<size_t>& order, const schedule::MergeOptions& how,
                        Priced* grid_only_form) {
      std::vector<loop::Kernel> plain;
      for (size_t i : order) plain.push_back(ps.stages[i]);
      schedule::MergeOptions with = how;
      std::optional<std::vector<loop::Kernel>> pinned = panelled(order, with);
      if (!pinned) return build(std::move(plain), how, grid_only_form);
      Priced grid_with, grid_without;
      Priced in_panels = build(std::move(*pinned), with, grid_only_form ? &grid_with : nullptr);
      if (!costs || !spec) {
        if (grid_only_form) *grid_only_form = std::move(grid_with);
        return in_panels;
      }
      Priced without = build(std::move(plain), how, grid_only_form ? &grid_without : nullptr);
      if (grid_only_form) {
        keep(ChoiceKind::WeightPanels, grid_with, std::move(grid_without));
        *grid_only_form = std::move(grid_with);
      }
      keep(ChoiceKind::WeightPanels, in_panels, std::move(without));
      return in_panels;
    };
    std::vector<size_t> program_order(ps.stages.size());
    for (size_t i = 0; i < program_order.size(); ++i) program_order[i] = i;
    // Waves keep each weights' GEMMs on the blocks they first got (their panels stay valid),
    // and a stage on a GEMM's tiles on that GEMM's blocks.
    std::vector<std::string> lanes(ps.stages.size());
    for (size_t i = 0; i < ps.stages.size(); ++i)
      if (stage_panels[i]) lanes[i] = stage_panels[i]->key;
    const schedule::WaveLayout waves =
        options.waves && ps.stages.size() > 1
            ? schedule::pack_waves(ps.stages, cap, lanes, ps.on_tiles_of)
            : schedule::WaveLayout{};
    // The cheaper of waves and program order by the cost model, the choice told in the kernel.
    auto choose_waves = [&](Priced& in_waves, Priced plain) {
      keep(ChoiceKind::Waves, in_waves, std::move(plain), waves.summary());
    };
    if (waves.changes()) {
      // Stages side by side in waves, against program order: the cheaper by the cost model
      // (waves without a GPU to price them: they never need more barriers).
      schedule::MergeOptions packed = mo;
      for (size_t i : waves.order) {
        packed.block_offsets.push_back(waves.offset[i]);
        packed.waves.push_back(waves.wave[i]);
      }
      if (costs && spec) {
        // The two orders built side by side where the kernel is big enough to pay for a
        // thread (each merge of a long recurrent kernel takes most of a second); the FLOPs
        // their pricing reads are made before.
        make_flops();
        Priced plain, plain_grid;
        side_by_side([&] { k = build_in(waves.order, packed, grid_out); },
                     [&] { plain = build_in(program_order, mo, grid_out ? &plain_grid : nullptr); },
                     ps.stages.size() >= kSideBySideStages);
        choose_waves(k, std::move(plain));
        if (grid_out) choose_waves(grid_k, std::move(plain_grid));
      } else {
        k = build_in(waves.order, packed, grid_out);
        k.k.stages.front().schedule += "; waves: " + waves.summary();
      }
    } else {
      k = build_in(program_order, mo, grid_out);
    }
    for (Priced* one : {&k, grid_out})
      if (one && cap > 0 && grid > cap)
        one->k.stages.front().schedule +=
            "; kernel grid capped at " + std::to_string(cap) + " blocks (co-resident on " +
            spec->name + " at " + std::to_string(registers) +
            " registers per thread; the stages' own grids reach " + std::to_string(grid) + ")";
    if (grid_form) grid_ks.kernels.push_back(grid_out ? std::move(grid_k.k) : k.k);
    ks.kernels.push_back(std::move(k.k));
  }
  if (grid_form) *options.grid_form = std::move(grid_ks);
  return ks;
}

}  // namespace

loop::KernelSet build_plan_kernels(const plan::FusionPlan& plan, const ScheduleConfig& config,
                                   const KernelBuildOptions& options) {
  return build_kernels(plan, plan.partitions, config, options);
}

loop::KernelSet build_partition_kernels(const plan::FusionPlan& context, const plan::Partition& p,
                                        const ScheduleConfig& config,
                                        const KernelBuildOptions& options) {
  return build_kernels(context, {p}, config, options);
}

PlanBuild plan_build(const plan::FusionPlan& plan) {
  PlanBuild b;
  b.config.precision = plan.precision;
  b.options.split_launches = true;
  b.options.sync = plan.sync;
  b.options.waves = plan.waves;
  b.options.weight_panels = plan.weight_panels;
  // The Hopper mainloop only where wgmma exists: sm_90a.
  if (plan.wgmma)
    if (std::optional<gpu::GpuSpec> gpu = plan_gpu(plan))
      b.config.wgmma_mainloop = std::atof(gpu->compute_capability.c_str()) == 9.0;
  return b;
}

int kernel_partition(const std::string& kernel_name) {
  const std::string prefix = "kernel";
  if (kernel_name.compare(0, prefix.size(), prefix) != 0) return -1;
  size_t i = prefix.size(), digits = 0;
  int id = 0;
  for (; i < kernel_name.size() && std::isdigit(static_cast<unsigned char>(kernel_name[i]));
       ++i, ++digits)
    id = id * 10 + (kernel_name[i] - '0');
  if (digits == 0) return -1;
  if (i == kernel_name.size()) return id;
  if (kernel_name[i] != '.' || i + 1 == kernel_name.size()) return -1;
  for (++i; i < kernel_name.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(kernel_name[i]))) return -1;
  return id;
}

void tune_plan(plan::FusionPlan& plan, const schedule::ScheduleConfig& plan_independent,
               const KernelBuildOptions& options) {
  const schedule::ScheduleConfig shared_config = plan_config(plan, plan_independent);
  const std::optional<gpu::GpuSpec> gpu = plan_gpu(plan);
  if (!gpu) return;
  const std::shared_ptr<const te::ProgramIndex> index = plan::index_of(plan);
  const KernelProgram kp = fold_views(plan.program, *index, plan.partitions);
  const Readers readers(kp, *index);
  KernelBuildOptions o = options;
  o.tune = true;
  for (plan::Partition& p : plan.partitions) {
    for (plan::Stage& st : p.stages) st.tiles.clear();
    schedule::ScheduleConfig config = shared_config;
    if (!p.split_rows) config.cross_block_rows = 0;
    PartitionSchedule ps = schedule_partition(kp, p, kernel_name(p), readers, &*gpu, config, o);
    for (const Unit& u : ps.units) {
      if (!u.gemm || u.why.empty()) continue;
      for (plan::Stage& st : p.stages)
        if (std::find(st.tes.begin(), st.tes.end(), u.tes[0]) != st.tes.end()) {
          st.tiles.push_back({u.tes[0], u.tile, u.why});
          st.schedule += (st.schedule.empty() ? "tuned: " : "; tuned: ") + u.why;
        }
    }
  }
}

int64_t flag_max_tiles(SyncMode m) {
  switch (m) {
    case SyncMode::Grid:
      return 0;
    case SyncMode::Flags:
      return std::numeric_limits<int64_t>::max();
    case SyncMode::Auto:
      return std::numeric_limits<int64_t>::max();
  }
  return 0;
}

}  // namespace souffle::schedule
