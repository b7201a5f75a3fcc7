/// \file Helpers the plan tests share: programs, random inputs, comparing outputs.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "core/interp/interpreter.h"
#include "core/te/verify.h"

namespace souffle::plan::testing {

/// A verified program; its outputs default to the last op's output.
inline te::TeProgram program(std::vector<te::Tensor> inputs, std::vector<te::Op> ops,
                             std::vector<te::Tensor> outputs = {}) {
  te::TeProgram p;
  p.name = "p";
  p.inputs = std::move(inputs);
  p.outputs = outputs.empty() ? std::vector<te::Tensor>{ops.back()->output} : std::move(outputs);
  p.ops = std::move(ops);
  te::verify(p);
  return p;
}

/// Uniform values in [-2, 2) for every input of `p`.
inline std::vector<ConstTensorPtr> random_inputs(const te::TeProgram& p, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-2.0, 2.0);
  std::vector<ConstTensorPtr> out;
  for (const te::Tensor& t : p.inputs) {
    auto d = std::make_shared<TensorData>(t->dtype, t->shape);
    for (int64_t i = 0; i < d->numel(); ++i) d->set_f64(i, u(rng));
    out.push_back(d);
  }
  return out;
}

/// Relative L2 error of b against a, over all outputs (the worst one).
inline double worst_rel_l2(const std::vector<ConstTensorPtr>& a,
                           const std::vector<ConstTensorPtr>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (size_t k = 0; k < a.size() && k < b.size(); ++k) {
    EXPECT_EQ(a[k]->shape(), b[k]->shape());
    double num = 0, den = 0;
    for (int64_t i = 0; i < a[k]->numel(); ++i) {
      double x = a[k]->get_f64(i), y = b[k]->get_f64(i);
      num += (x - y) * (x - y);
      den += x * x;
    }
    worst = std::max(worst, std::sqrt(num) / std::max(std::sqrt(den), 1e-30));
  }
  return worst;
}

/// Runs both programs in f64 on the same random inputs and expects equal outputs.
inline void expect_same_outputs(const te::TeProgram& a, const te::TeProgram& b, unsigned seed = 7) {
  auto in = random_inputs(a, seed);
  interp::InterpOptions o;
  o.f64 = true;
  EXPECT_LE(worst_rel_l2(interp::run(a, in, o), interp::run(b, in, o)), 1e-12);
}

}  // namespace souffle::plan::testing
