#include "core/session/verify.h"

#include <chrono>
#include <cmath>
#include <filesystem>

#include "core/interp/interpreter.h"

namespace souffle {

nlohmann::json output_checks_json(const std::vector<OutputCheck>& checks) {
  nlohmann::json j = nlohmann::json::array();
  for (const OutputCheck& c : checks)
    j.push_back({{"data_set", c.data_set},
                 {"output", c.name},
                 {"ok", c.ok},
                 {"rtol", c.cmp.rtol},
                 {"atol", c.cmp.atol},
                 {"mismatches", c.cmp.mismatches},
                 {"elements", c.cmp.numel},
                 {"max_abs", c.cmp.max_abs_error},
                 {"max_rel", c.cmp.max_rel_error},
                 {"rel_l2", c.cmp.rel_l2_error},
                 {"detail", c.cmp.describe()}});
  return j;
}
ConstTensorPtr reference_as_declared(const ConstTensorPtr& t, DType declared) {
  if (t->dtype() == DType::UInt16 && declared == DType::BFloat16) {
    std::string bytes(reinterpret_cast<const char*>(t->raw()), static_cast<size_t>(t->byte_size()));
    return std::make_shared<TensorData>(DType::BFloat16, t->shape(), std::move(bytes));
  }
  return t;
}

void check_data_set_fits(const TestDataSet& ds, const te::TeProgram& prog) {
  if (ds.inputs.size() != prog.inputs.size())
    throw UserError(ds.dir, "",
                    "has " + std::to_string(ds.inputs.size()) + " inputs, the model takes " +
                        std::to_string(prog.inputs.size()));
  // A data set without every expected output cannot show the model right: it is an error, not
  // a pass over the outputs it happens to hold.
  if (ds.outputs.size() != prog.outputs.size())
    throw UserError(ds.dir, "",
                    "has " + std::to_string(ds.outputs.size()) +
                        " expected outputs (output_K.pb), the model gives " +
                        std::to_string(prog.outputs.size()));
}

void VerifyReport::add(OutputCheck c) {
  max_rel_l2 = std::max(max_rel_l2, c.cmp.rel_l2_error);
  max_abs_error = std::max(max_abs_error, c.cmp.max_abs_error);
  max_rel_error = std::max(max_rel_error, c.cmp.max_rel_error);
  mismatches += c.cmp.mismatches;
  ok = ok && c.ok;
  checks.push_back(std::move(c));
}

bool is_quantized(const graph::Graph& graph) {
  for (const graph::Node& n : graph.nodes) {
    const std::string& op = n.op_type;
    if (op == "QuantizeLinear" || op == "DequantizeLinear" || op == "DynamicQuantizeLinear" ||
        op == "MatMulInteger" || op == "ConvInteger" || op.rfind("QLinear", 0) == 0)
      return true;
  }
  return false;
}

Tolerance output_tolerance(const VerifyOptions& options, gpu::Precision compute, DType output,
                           bool quantized) {
  Tolerance t = default_tolerance(compute, output, quantized);
  if (options.rtol) t.rtol = *options.rtol;
  if (options.atol) t.atol = *options.atol;
  return t;
}

void judge_output(OutputCheck& c, const TensorData& want, const TensorData& got,
                  const Tolerance& tol) {
  c.cmp = compare_tensors(want, got, tol);
  c.ok = c.cmp.ok();
}

VerifyReport verify_program(const LoadedModel& model, const std::vector<TestDataSet>& sets,
                            const VerifyOptions& options) {
  VerifyReport rep;
  const te::TeProgram& prog = model.program;
  const bool quantized = is_quantized(model.graph);
  for (const TestDataSet& ds : sets) {
    std::string set_name = std::filesystem::path(ds.dir).filename().string();
    check_data_set_fits(ds, prog);
    interp::InterpOptions io;
    io.f64 = options.f64;
    auto t0 = std::chrono::steady_clock::now();
    std::vector<ConstTensorPtr> inputs = ds.inputs;
    for (size_t k = 0; k < inputs.size(); ++k)
      inputs[k] = reference_as_declared(inputs[k], prog.inputs[k]->dtype);
    std::vector<ConstTensorPtr> got = interp::run(prog, inputs, io);
    rep.run_ms +=
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    for (size_t k = 0; k < ds.outputs.size(); ++k) {
      OutputCheck c;
      c.data_set = set_name;
      c.index = k;
      c.name = k < model.graph.outputs.size() ? model.graph.outputs[k] : prog.outputs[k]->name;
      ConstTensorPtr want = reference_as_declared(ds.outputs[k], prog.outputs[k]->dtype);
      // The interpreter computes in fp32 (or float64): only the output's type and quantization
      // loosen the tolerance.
      judge_output(c, *want, *got[k],
                   output_tolerance(options, gpu::Precision::FP32, want->dtype(), quantized));
      rep.add(std::move(c));
    }
  }
  return rep;
}

}  // namespace souffle
