#include "core/session/verify_kernels.h"

#include <chrono>
#include <cmath>
#include <filesystem>

#include "core/emulate/emulate.h"
#include "core/loop/mutator.h"

namespace souffle {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::string kernel_name(const plan::Partition& p) {
  return "kernel" + std::to_string(p.id);
}

bool has_block_barrier(const loop::Stmt& s) {
  bool found = false;
  loop::for_each_stmt(s,
                      [&](const loop::Stmt& x) { found |= x.as<loop::BlockBarrier>() != nullptr; });
  return found;
}

/// Adjusts `c` so injective and reduction stages use at most `block` threads and GEMMs exactly
/// `block` (the register tile grows as the thread count shrinks); false when no tile fits.
bool fit_block(schedule::ScheduleConfig& c, int64_t block) {
  c.block = block;
  for (int64_t tm = 1; tm <= c.gemm_bm; tm *= 2)
    for (int64_t tn = tm; tn >= 1 && tn >= tm / 2; tn /= 2)
      if (c.gemm_bm % tm == 0 && c.gemm_bn % tn == 0 &&
          (c.gemm_bm / tm) * (c.gemm_bn / tn) == block) {
        c.gemm_tm = tm;
        c.gemm_tn = tn;
        return true;
      }
  return false;
}

}  // namespace

KernelBuildError::KernelBuildError(std::string kernel, std::string te, std::string detail)
    : std::runtime_error(kernel + (te.empty() ? "" : " (" + te + ")") + ": " + detail),
      m_kernel(std::move(kernel)),
      m_te(std::move(te)),
      m_detail(std::move(detail)) {}

loop::KernelSet build_plan_kernels(const plan::FusionPlan& plan,
                                   const schedule::ScheduleConfig& config) {
  const te::TeProgram& prog = plan.program;
  loop::KernelSet ks;
  ks.name = prog.name;
  ks.inputs = prog.inputs;
  ks.outputs = prog.outputs;
  for (const plan::Partition& p : plan.partitions) {
    std::string name = kernel_name(p);
    // Stages list the partition's TEs in execution order; merge_stages places the grid
    // barriers itself from what each stage reads and writes.
    std::vector<const te::ComputeOp*> ops;
    for (const plan::Stage& st : p.stages)
      for (int te : st.tes) {
        if (te < 0 || static_cast<size_t>(te) >= prog.ops.size())
          throw KernelBuildError(name, "", "TE index " + std::to_string(te) + " out of range");
        ops.push_back(prog.ops[static_cast<size_t>(te)].get());
      }
    if (ops.empty()) continue;
    auto schedule_all = [&](const schedule::ScheduleConfig& c) {
      std::vector<loop::Kernel> stages;
      for (const te::ComputeOp* op : ops) try {
          stages.push_back(schedule::schedule_op(*op, c));
        } catch (const std::exception& e) {
          throw KernelBuildError(name, op->name, std::string("cannot schedule: ") + e.what());
        }
      return stages;
    };
    std::vector<loop::Kernel> stages = schedule_all(config);
    // A stage with block barriers must run on the kernel's whole block. When such stages want
    // different blocks, every stage is rescheduled on the smallest of them (reductions take any
    // power of two up to their extent, GEMMs a larger register tile per thread).
    int64_t barrier_block = 0, max_block = 0;
    for (const loop::Kernel& k : stages) {
      max_block = std::max(max_block, k.launch.block_x);
      if (has_block_barrier(k.body))
        barrier_block =
            barrier_block == 0 ? k.launch.block_x : std::min(barrier_block, k.launch.block_x);
    }
    if (barrier_block > 0 && barrier_block < max_block) {
      schedule::ScheduleConfig c = config;
      if (!fit_block(c, barrier_block))
        throw KernelBuildError(name, "",
                               "no schedule fits all stages on one block of " +
                                   std::to_string(barrier_block) + " threads");
      stages = schedule_all(c);
    }
    try {
      ks.kernels.push_back(schedule::merge_stages(std::move(stages), name));
    } catch (const std::exception& e) {
      throw KernelBuildError(name, "", std::string("cannot merge stages: ") + e.what());
    }
  }
  return ks;
}

KernelVerifyReport verify_kernels(const LoadedModel& model, const std::vector<TestDataSet>& sets,
                                  const plan::PlanOptions& plan_options,
                                  const VerifyOptions& options) {
  KernelVerifyReport rep;
  VerifyReport& out = rep.outputs;
  auto t0 = std::chrono::steady_clock::now();
  plan::FusionPlan p = plan::plan(model.program, plan_options);
  rep.plan_ms = ms_since(t0);
  const te::TeProgram& prog = p.program;

  t0 = std::chrono::steady_clock::now();
  loop::KernelSet ks;
  try {
    ks = build_plan_kernels(p);
  } catch (const KernelBuildError& e) {
    rep.error = e.what();
    out.ok = false;
    return rep;
  }
  rep.build_ms = ms_since(t0);
  rep.kernels = ks.kernels.size();
  for (const loop::Kernel& k : ks.kernels)
    loop::for_each_stmt(k.body, [&](const loop::Stmt& s) {
      if (s.as<loop::GridBarrier>()) ++rep.grid_barriers;
    });

  for (const TestDataSet& ds : sets) {
    std::string set_name = std::filesystem::path(ds.dir).filename().string();
    check_data_set_fits(ds, prog);
    emulate::Buffers inputs;
    for (size_t k = 0; k < ds.inputs.size(); ++k) {
      ConstTensorPtr in = reference_as_declared(ds.inputs[k], prog.inputs[k]->dtype);
      if (in->shape() != prog.inputs[k]->shape || in->dtype() != prog.inputs[k]->dtype)
        throw UserError(
            ds.dir, prog.inputs[k]->name,
            "input " + std::to_string(k) + " has another shape or type than the model's");
      inputs[prog.inputs[k]->name] = std::make_shared<TensorData>(*in);
    }
    emulate::Buffers got;
    t0 = std::chrono::steady_clock::now();
    try {
      got = emulate::run_kernels(ks, inputs);
    } catch (const emulate::EmulationError& e) {
      rep.error = std::string("emulator: ") + e.what();
      out.ok = false;
      return rep;
    }
    out.run_ms += ms_since(t0);
    for (size_t k = 0; k < ds.outputs.size(); ++k) {
      OutputCheck c;
      c.data_set = set_name;
      c.index = k;
      c.name = k < model.graph.outputs.size() ? model.graph.outputs[k] : prog.outputs[k]->name;
      const te::Tensor& t = prog.outputs[k];
      ConstTensorPtr want = reference_as_declared(ds.outputs[k], t->dtype);
      ConstTensorPtr have;
      auto it = got.find(t->name);
      if (it != got.end())
        have = it->second;
      else if (t->source == te::TensorNode::Source::Constant)
        have = t->data;
      if (!have) {
        rep.error = "output " + c.name + " (" + t->name + ") was written by no kernel";
        out.ok = false;
        return rep;
      }
      judge_output(c, *want, *have, options);
      out.max_rel_l2 = std::max(out.max_rel_l2, c.cmp.rel_l2_error);
      out.ok = out.ok && c.ok;
      out.checks.push_back(std::move(c));
    }
  }
  return rep;
}

}  // namespace souffle
