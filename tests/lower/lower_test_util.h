/// \file Helpers the lowering tests share: attributes, nodes, lowering and running a node.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/interp/interpreter.h"
#include "core/lower/lower.h"

namespace souffle::lower::testing {

inline graph::Attribute int_attr(int64_t v) {
  graph::Attribute a;
  a.kind = graph::Attribute::Kind::Int;
  a.i = v;
  return a;
}
inline graph::Attribute float_attr(double v) {
  graph::Attribute a;
  a.kind = graph::Attribute::Kind::Float;
  a.f = v;
  return a;
}
inline graph::Attribute string_attr(std::string v) {
  graph::Attribute a;
  a.kind = graph::Attribute::Kind::String;
  a.s = std::move(v);
  return a;
}
inline graph::Attribute ints_attr(std::vector<int64_t> v) {
  graph::Attribute a;
  a.kind = graph::Attribute::Kind::Ints;
  a.ints = std::move(v);
  return a;
}

/// A node `op` reading in0..in{inputs-1} and writing out0..out{outputs-1}.
inline graph::Node make_node(const std::string& op, size_t inputs,
                             std::map<std::string, graph::Attribute> attrs = {},
                             size_t outputs = 1) {
  graph::Node n;
  n.name = op + "_0";
  n.op_type = op;
  for (size_t i = 0; i < inputs; ++i) n.inputs.push_back("in" + std::to_string(i));
  for (size_t i = 0; i < outputs; ++i) n.outputs.push_back("out" + std::to_string(i));
  n.attrs = std::move(attrs);
  return n;
}

inline ConstTensorPtr values(const Shape& s, const std::vector<double>& v,
                             DType t = DType::Float32) {
  return TensorData::from_f64(t, s, v);
}

/// Deterministic, non-trivial f32 values: (i * 7 + 3) mod 13, scaled and shifted.
inline std::shared_ptr<TensorData> iota(const Shape& s, double scale = 0.25, double offset = -1) {
  std::vector<double> v(shape_numel(s));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = std::fmod(static_cast<double>(i) * 7 + 3, 13) * scale + offset;
  return TensorData::from_f64(DType::Float32, s, v);
}

/// Inputs for a lowering: constants where `constant[i]`, placeholders otherwise.
struct Lowered {
  NodeLowering nl;
  std::vector<te::Tensor> inputs;
  std::vector<ConstTensorPtr> input_values;
};

inline Lowered lower(const graph::Node& node, const std::vector<ConstTensorPtr>& vals,
                     int64_t opset = 17, const std::vector<bool>& constant = {}) {
  Lowered l;
  std::vector<te::Tensor> ins;
  for (size_t i = 0; i < vals.size(); ++i) {
    if (!vals[i]) {
      ins.push_back(nullptr);
      continue;
    }
    std::string name = "in" + std::to_string(i);
    if (i < constant.size() && constant[i]) {
      ins.push_back(te::make_constant(name, vals[i]));
    } else {
      te::Tensor t = te::make_input(name, vals[i]->shape(), vals[i]->dtype());
      ins.push_back(t);
      l.inputs.push_back(t);
      l.input_values.push_back(vals[i]);
    }
  }
  l.nl = lower_node(node, opset, ins);
  return l;
}

/// Lowers `node` and runs it in the interpreter; returns every produced output.
inline std::vector<ConstTensorPtr> run_all(const graph::Node& node,
                                           const std::vector<ConstTensorPtr>& vals,
                                           int64_t opset = 17,
                                           const std::vector<bool>& constant = {},
                                           NodeLowering* out = nullptr) {
  Lowered l = lower(node, vals, opset, constant);
  std::vector<te::Tensor> outs;
  for (const te::Tensor& t : l.nl.outputs)
    if (t) outs.push_back(t);
  te::TeProgram prog{"p", l.inputs, outs, l.nl.ops};
  if (out) *out = l.nl;
  return interp::run(prog, l.input_values);
}

/// Lowers `node` and runs it in the interpreter; returns the first output.
inline ConstTensorPtr run(const graph::Node& node, const std::vector<ConstTensorPtr>& vals,
                          int64_t opset = 17, const std::vector<bool>& constant = {},
                          NodeLowering* out = nullptr) {
  return run_all(node, vals, opset, constant, out)[0];
}

/// Expects `got` to have this shape, dtype and values (NaN matches NaN).
inline void expect_values(const ConstTensorPtr& got, const Shape& shape, DType dtype,
                          const std::vector<double>& want, double tol = 1e-5) {
  ASSERT_TRUE(got);
  ASSERT_EQ(got->shape(), shape);
  ASSERT_EQ(got->dtype(), dtype);
  ASSERT_EQ(static_cast<size_t>(got->numel()), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got->get_f64(i))) << "at " << i;
    } else {
      EXPECT_NEAR(got->get_f64(i), want[i], tol) << "at " << i;
    }
  }
}

/// Expects `got` to have this shape and values within 1e-4.
inline void expect_near(const TensorData& got, const Shape& shape,
                        const std::vector<double>& want) {
  ASSERT_EQ(got.shape(), shape);
  ASSERT_EQ(static_cast<size_t>(got.numel()), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got.get_f64(i), want[i], 1e-4) << "at " << i;
}

}  // namespace souffle::lower::testing
