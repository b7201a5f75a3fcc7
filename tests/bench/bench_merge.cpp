// What merge_stages' options change in the kernels of a plan: grid barriers with every dependent
// pair synchronized grid-wide, then with block-ownership proofs, weight-tile prefetches, and
// kernel-local intermediates kept in shared memory. Each partition's TEs are scheduled one by
// one with the default configuration (no epilogue fusion, no tuning), so the figures isolate
// merging. With --emulate, the kernels of the first and last variant run in the emulator on the
// same random inputs (races, uninitialized reads and out-of-bounds accesses are errors) and
// their model outputs must agree.
//
//   bench_merge [--strategy S] [--emulate] MODEL.onnx...
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <random>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

#include "core/emulate/emulate.h"
#include "core/loop/mutator.h"
#include "core/plan/plan.h"
#include "core/schedule/schedule.h"
#include "core/session/load.h"
#include "core/te/mutator.h"

namespace {

using namespace souffle;

struct Figures {
  int kernels = 0, skipped = 0, grid = 0, block = 0, prefetched = 0, resident = 0;
  int64_t avoided = 0;
};

/// Tensors of partition `p` that nothing outside it reads and that are no model output.
std::vector<te::Tensor> local_tensors(const plan::FusionPlan& fp, const plan::Partition& p) {
  const te::TeProgram& prog = fp.program;
  std::set<int> mine(p.tes.begin(), p.tes.end());
  std::set<const te::TensorNode*> outside;
  for (const te::Tensor& t : prog.outputs) outside.insert(t.get());
  for (size_t i = 0; i < prog.ops.size(); ++i) {
    if (mine.count(static_cast<int>(i))) continue;
    auto add = [&](const te::Expr& e) {
      if (e.defined())
        te::for_each_node(e, [&](const te::Expr& n) {
          if (const te::Read* r = n.as<te::Read>()) outside.insert(r->tensor.get());
        });
    };
    add(prog.ops[i]->body);
    add(prog.ops[i]->init);
  }
  std::vector<te::Tensor> out;
  for (int te : p.tes) {
    const te::Tensor& t = prog.ops[static_cast<size_t>(te)]->output;
    if (!outside.count(t.get())) out.push_back(t);
  }
  return out;
}

loop::KernelSet build(const plan::FusionPlan& fp, const schedule::MergeOptions& base,
                      bool with_local, Figures& f) {
  schedule::ScheduleConfig c;
  c.precision = fp.precision;
  if (fp.strategy != plan::Strategy::Souffle) c.cross_block_rows = 0;
  loop::KernelSet ks;
  ks.inputs = fp.program.inputs;
  ks.outputs = fp.program.outputs;
  for (const plan::Partition& p : fp.partitions) {
    if (p.tes.empty()) continue;
    auto schedule_all = [&](const schedule::ScheduleConfig& cc) {
      std::vector<loop::Kernel> out;
      for (int te : p.tes) out.push_back(schedule::schedule_op(*fp.program.ops[size_t(te)], cc));
      return out;
    };
    std::vector<loop::Kernel> stages = schedule_all(c);
    // As the session does: stages with block barriers all run on the largest block one of them
    // wants (reductions take exactly that many threads).
    int64_t barrier_block = 0;
    bool mismatch = false;
    auto has_barrier = [](const loop::Kernel& k) {
      bool barriers = false;
      loop::for_each_stmt(k.body, [&](const loop::Stmt& x) {
        barriers |= x.kind() == loop::StmtKind::BlockBarrier;
      });
      return barriers;
    };
    for (const loop::Kernel& k : stages)
      if (has_barrier(k)) barrier_block = std::max(barrier_block, k.launch.block_x);
    for (const loop::Kernel& k : stages)
      mismatch |= barrier_block > 0 && (k.launch.block_x > barrier_block ||
                                        (k.launch.block_x != barrier_block && has_barrier(k)));
    if (mismatch) {
      schedule::ScheduleConfig cc = c;
      cc.block = barrier_block;
      cc.exact_block = true;
      for (int64_t tm = 1; tm <= 8; tm *= 2)
        for (int64_t tn = 1; tn <= 8; tn *= 2)
          if ((cc.gemm_tile.bm / tm) * (cc.gemm_tile.bn / tn) == barrier_block) {
            cc.gemm_tile.tm = tm;
            cc.gemm_tile.tn = tn;
          }
      stages = schedule_all(cc);
    }
    schedule::MergeOptions o = base;
    if (with_local) o.local = local_tensors(fp, p);
    loop::Kernel k;
    try {
      k = schedule::merge_stages(std::move(stages), "kernel" + std::to_string(p.id), o);
    } catch (const std::exception& e) {
      ++f.skipped;  // stages of different blocks with block barriers (the session reschedules)
      if (std::getenv("BENCH_MERGE_VERBOSE")) fmt::print("  skipped: {}\n", e.what());
      continue;
    }
    ++f.kernels;
    loop::for_each_stmt(k.body, [&](const loop::Stmt& s) {
      f.grid += s.kind() == loop::StmtKind::GridBarrier;
      f.block += s.kind() == loop::StmtKind::BlockBarrier;
    });
    for (const loop::StageInfo& si : k.stages) {
      f.prefetched += si.schedule.find("prefetched before the grid barrier") != std::string::npos;
      for (size_t at = si.schedule.find(" kept in shared memory ("); at != std::string::npos;
           at = si.schedule.find(" kept in shared memory (", at + 1)) {
        ++f.resident;
        size_t semi = si.schedule.find("; ", at), end = si.schedule.find(" DRAM bytes", at);
        if (semi != std::string::npos && end != std::string::npos)
          f.avoided += std::stoll(si.schedule.substr(semi + 2, end - semi - 2));
      }
    }
    ks.kernels.push_back(std::move(k));
  }
  return ks;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> models;
  std::vector<plan::Strategy> strategies = plan::all_strategies();
  bool emulate_check = false;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--strategy" && i + 1 < argc)
      strategies = {plan::parse_strategy(argv[++i])};
    else if (a == "--emulate")
      emulate_check = true;
    else
      models.push_back(a);
  }
  fmt::print("{:<14} {:<8} {:>7} {:>6} | {:>9} | {:>9} {:>7} {:>9} | {:>8} {:>12}\n", "model",
             "strategy", "kernels", "skip", "grid(old)", "grid(new)", "block+", "prefetch",
             "resident", "DRAM B saved");
  int failures = 0;
  for (const std::string& path : models) {
    LoadedModel m = load_model(path);
    for (plan::Strategy s : strategies) {
      plan::PlanOptions po;
      po.strategy = s;
      po.gpu = gpu::gpu_spec("a100");
      plan::FusionPlan fp = plan::plan(m.program, po);
      Figures old_f, new_f, local_f;
      schedule::MergeOptions old_o;
      old_o.prove_ownership = false;
      old_o.prefetch_weights = false;
      loop::KernelSet old_ks = build(fp, old_o, false, old_f);
      build(fp, {}, false, new_f);
      loop::KernelSet local_ks = build(fp, {}, true, local_f);
      fmt::print("{:<14} {:<8} {:>7} {:>6} | {:>9} | {:>9} {:>7} {:>9} | {:>8} {:>12}\n",
                 std::filesystem::path(path).parent_path().filename().string(),
                 plan::strategy_name(s), new_f.kernels, new_f.skipped, old_f.grid, new_f.grid,
                 new_f.block - old_f.block, new_f.prefetched, local_f.resident, local_f.avoided);
      if (!emulate_check) continue;
      emulate::Buffers in;
      std::mt19937 rng(11);
      std::uniform_real_distribution<double> dist(-1.0, 1.0);
      for (const te::Tensor& t : fp.program.inputs) {
        auto d = std::make_shared<TensorData>(t->dtype, t->shape);
        for (int64_t i = 0; i < d->numel(); ++i) d->set_f64(i, is_float(t->dtype) ? dist(rng) : 0);
        in[t->name] = d;
      }
      try {
        emulate::Buffers a = emulate::run_kernels(old_ks, in),
                         b = emulate::run_kernels(local_ks, in);
        double worst = 0;
        for (const te::Tensor& t : fp.program.outputs) {
          if (!a.count(t->name) || !b.count(t->name)) continue;
          const TensorData &x = *a.at(t->name), &y = *b.at(t->name);
          for (int64_t i = 0; i < x.numel(); ++i)
            worst = std::max(worst, std::abs(x.get_f64(i) - y.get_f64(i)));
        }
        fmt::print("  emulated: outputs of both variants differ by at most {:.3g}\n", worst);
        failures += worst > 0;
      } catch (const std::exception& e) {
        fmt::print("  emulation failed: {}\n", e.what());
        ++failures;
      }
    }
  }
  return failures == 0 ? 0 : 1;
}
