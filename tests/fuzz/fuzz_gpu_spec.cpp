// libFuzzer entry point: a GPU spec file, then a real model planned on each GPU it describes
// (absurd sizes must be refused by the reader, not divide by zero or loop in the planner).
#include <cmath>

#include "core/gpu/spec.h"
#include "core/plan/plan.h"
#include "core/session/pipeline.h"
#include "core/support/error.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace souffle;
  std::vector<gpu::GpuSpec> specs;
  try {
    specs = gpu::parse_gpu_specs(fuzz::text_of(data, size), "fuzz-input/gpus.json");
  } catch (const UserError&) {
    return 0;
  }
  for (size_t i = 0; i < specs.size() && i < 2; ++i) {
    PipelineOptions o;
    o.gpu = specs[i];
    for (plan::Strategy s : {plan::Strategy::Rules, plan::Strategy::Souffle}) {
      o.strategy = s;
      try {
        plan::FusionPlan p = plan::plan(fuzz::sample_model().program, plan_options(o));
        plan::verify(p);
        if (!std::isfinite(p.est_time_us) || p.est_time_us < 0) __builtin_trap();
      } catch (const UserError&) {
      }
    }
  }
  return 0;
}
