/// \file Helpers the schedule tests share: random inputs, relative L2, and a TE program of ops.
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "core/emulate/emulate.h"
#include "core/interp/interpreter.h"
#include "core/loop/stmt.h"
#include "core/schedule/schedule.h"
#include "core/support/tensor_data.h"
#include "core/te/expr.h"
#include "core/te/mutator.h"

namespace souffle::schedule_test {

/// Uniform in [-1, 1] for float tensors, zeros otherwise (index inputs), seeded.
inline std::shared_ptr<TensorData> random_data(const te::Tensor& t, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> dist(-1.0, 1.0);
  auto d = std::make_shared<TensorData>(t->dtype, t->shape);
  for (int64_t i = 0; i < d->numel(); ++i) d->set_f64(i, is_float(t->dtype) ? dist(rng) : 0.0);
  return d;
}

inline double rel_l2(const TensorData& got, const TensorData& want) {
  double num = 0, den = 0;
  for (int64_t i = 0; i < want.numel(); ++i) {
    double d = got.get_f64(i) - want.get_f64(i);
    num += d * d;
    den += want.get_f64(i) * want.get_f64(i);
  }
  return std::sqrt(num / std::max(den, 1e-30));
}

/// A program of `ops` in order: its inputs are the non-constant tensors the ops read that no
/// earlier op produces, its outputs every op's output.
inline te::TeProgram program_of(const std::vector<te::Op>& ops) {
  te::TeProgram p;
  p.name = "sub";
  std::set<const te::TensorNode*> produced;
  for (const te::Op& op : ops) {
    te::for_each_node(op->body, [&](const te::Expr& n) {
      const te::Read* r = n.as<te::Read>();
      if (r && r->tensor->source != te::TensorNode::Source::Constant &&
          !produced.count(r->tensor.get()) &&
          std::find(p.inputs.begin(), p.inputs.end(), r->tensor) == p.inputs.end())
        p.inputs.push_back(r->tensor);
    });
    produced.insert(op->output.get());
    p.ops.push_back(op);
    p.outputs.push_back(op->output);
  }
  return p;
}

/// A small SIMT GEMM tile for tests: bm x bn x bk, 2 x 2 per thread ((bm/2) * (bn/2) threads),
/// so that small problems still have several tiles and K steps.
inline schedule::ScheduleConfig small_gemm_tile(int64_t bm, int64_t bn, int64_t bk,
                                                bool double_buffer = false) {
  schedule::ScheduleConfig c;
  c.gemm_tile = {bm, bn, bk, 2, 2, double_buffer};
  return c;
}

/// Runs `ops` in the interpreter and `kernels` in the emulator on the same random inputs (input
/// i seeded with seed + i) and returns the worst relative L2 error over the ops' outputs. An
/// output the kernels do not write counts as infinitely wrong, unless `written_only` (outputs
/// kept on chip are then skipped).
inline double emulated_error(const std::vector<te::Op>& ops,
                             const std::vector<loop::Kernel>& kernels, uint32_t seed,
                             bool written_only = false) {
  te::TeProgram p = program_of(ops);
  std::vector<ConstTensorPtr> in;
  emulate::Buffers buffers;
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    auto d = random_data(p.inputs[i], seed + static_cast<uint32_t>(i));
    in.push_back(d);
    buffers[p.inputs[i]->name] = d;
  }
  std::vector<ConstTensorPtr> want = interp::run(p, in);
  loop::KernelSet ks;
  ks.kernels = kernels;
  emulate::Buffers got = emulate::run_kernels(ks, buffers);
  double worst = 0;
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    auto it = got.find(p.outputs[i]->name);
    if (it == got.end()) {
      if (!written_only) return std::numeric_limits<double>::infinity();
      continue;
    }
    worst = std::max(worst, rel_l2(*it->second, *want[i]));
  }
  return worst;
}

}  // namespace souffle::schedule_test
