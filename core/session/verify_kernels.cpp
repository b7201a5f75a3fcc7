#include "core/session/verify_kernels.h"

#include <fmt/format.h>

#include <chrono>
#include <filesystem>

#include "core/emulate/emulate.h"
#include "core/loop/mutator.h"
#include "core/session/pipeline.h"

namespace souffle {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

KernelVerifyReport verify_kernels(const LoadedModel& model, const std::vector<TestDataSet>& sets,
                                  const PipelineOptions& pipeline, const VerifyOptions& options) {
  KernelVerifyReport rep;
  VerifyReport& out = rep.outputs;
  // The kernels compile ships: the pipeline's build-kernels step over its plan, which takes those
  // the plan's pricing built for its partitions (or, with measured tiles, builds them so).
  PipelineOptions po = pipeline;
  po.until = plan::Step::BuildKernels;
  PipelineResult r = run_pipeline(model, po);
  for (const plan::PassRecord& pass : r.passes)
    (pass.step == plan::Step::BuildKernels ? rep.build_ms : rep.plan_ms) += pass.ms;
  const te::TeProgram& prog = r.plan.program;
  const bool quantized = is_quantized(model.graph);

  auto t0 = std::chrono::steady_clock::now();
  loop::KernelSet ks;
  ks.name = prog.name;
  ks.inputs = prog.inputs;
  ks.outputs = prog.outputs;
  for (CompiledKernel& ck : r.kernels.kernels) {
    if (!ck.ok()) {
      rep.error = ck.error;
      out.ok = false;
      return rep;
    }
    ks.kernels.push_back(std::move(ck.kernel));
  }
  if (options.timeline) {
    loop::TimelineOptions to;
    to.enabled = true;
    for (loop::Kernel& k : ks.kernels) loop::instrument_timeline(k, to);
  }
  rep.build_ms += ms_since(t0);
  rep.kernels = ks.kernels.size();
  rep.built = ks;
  for (const loop::Kernel& k : ks.kernels)
    loop::for_each_stmt(k.body, [&](const loop::Stmt& s) {
      if (s.as<loop::GridBarrier>()) ++rep.grid_barriers;
      if (s.as<loop::FlagWait>()) ++rep.flag_waits;
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
    emulate::EmulateOptions eo;
    // At most every 200 ms: a stage of a small kernel takes microseconds. (Lives as long as
    // the run that reports through it.)
    auto said = std::chrono::steady_clock::now() - std::chrono::seconds(1);
    if (options.progress) {
      eo.progress = [&options, &said, set_name](const std::string& kernel, int stage, int stages) {
        const auto now = std::chrono::steady_clock::now();
        if (now - said < std::chrono::milliseconds(200)) return;
        said = now;
        options.progress(
            fmt::format("{}: emulating {}, stage {} of {}", set_name, kernel, stage + 1, stages));
      };
    }
    try {
      if (!options.timeline) {
        got = emulate::run_kernels(ks, inputs, eo);
      } else {
        // Kernel by kernel, so that each one's records come back (docs/timeline.md).
        got = inputs;
        for (const loop::Kernel& k : ks.kernels) emulate::run_kernel(k, got, eo);
        for (const loop::Kernel& k : ks.kernels) {
          std::optional<loop::TimelineLayout> tl = loop::timeline_layout(k);
          auto it = tl ? got.find(tl->buffer) : got.end();
          if (it == got.end() || rep.timelines.size() == ks.kernels.size()) continue;
          const std::string words(reinterpret_cast<const char*>(it->second->raw()),
                                  static_cast<size_t>(it->second->byte_size()));
          KernelTimeline t =
              decode_timeline(timeline_file_bytes(*tl, "emulator", 1000, words), k.name);
          t.kernel = k.name;
          for (const loop::StageInfo& s : k.stages) {
            t.stage_names.push_back(s.name);
            t.stage_waves.push_back(s.wave);
          }
          rep.timelines.push_back(std::move(t));
        }
      }
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
      judge_output(c, *want, *have,
                   output_tolerance(options, r.plan.precision, want->dtype(), quantized));
      out.add(std::move(c));
    }
  }
  return rep;
}

}  // namespace souffle
