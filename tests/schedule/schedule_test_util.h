/// \file Helpers the schedule tests share: random inputs, relative L2, and a TE program of ops.
#pragma once

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <set>
#include <vector>

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
      if (const te::Read* r = n.as<te::Read>())
        if (r->tensor->source != te::TensorNode::Source::Constant &&
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

}  // namespace souffle::schedule_test
