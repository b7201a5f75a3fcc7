#include "core/session/verify.h"

#include <chrono>
#include <cmath>
#include <filesystem>

#include "core/interp/interpreter.h"

namespace souffle {
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

void judge_output(OutputCheck& c, const TensorData& want, const TensorData& got,
                  const VerifyOptions& options) {
  bool exact = !is_float(want.dtype());
  c.cmp = compare_tensors(want, got, options.rtol, options.atol);
  if (!c.cmp.shape_ok || !c.cmp.dtype_ok)
    c.ok = false;
  else if (options.criterion == Criterion::AllClose || exact)
    c.ok = c.cmp.mismatches == 0;
  else
    c.ok = c.cmp.rel_l2_error <= options.tolerance;
  if (options.criterion == Criterion::RelativeL2 && !exact && c.cmp.shape_ok) {
    // Non-finite values must sit where the reference has them; the L2 error ignores them.
    Comparison strict = compare_tensors(want, got, 0, INFINITY);
    if (strict.mismatches > 0) c.ok = false;
  }
}

VerifyReport verify_program(const LoadedModel& model, const std::vector<TestDataSet>& sets,
                            const VerifyOptions& options) {
  VerifyReport rep;
  const te::TeProgram& prog = model.program;
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
      judge_output(c, *want, *got[k], options);
      rep.max_rel_l2 = std::max(rep.max_rel_l2, c.cmp.rel_l2_error);
      rep.ok = rep.ok && c.ok;
      rep.checks.push_back(std::move(c));
    }
  }
  return rep;
}

}  // namespace souffle
