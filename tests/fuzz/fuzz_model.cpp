// libFuzzer entry point: arbitrary bytes through the whole front half and the planner — import,
// infer and fold, lower, verify the TE program, then plan under souffle with kernels priced from
// their built loop IR, and check the plan's invariants.
#include "core/plan/plan.h"
#include "core/session/pipeline.h"
#include "core/support/error.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace souffle;
  onnx_import::ImportOptions import;
  // Small declared sizes: an accepted model never asks for a large allocation, and folding or
  // building its kernels stays fast enough to explore.
  import.max_elements = int64_t{1} << 16;
  try {
    LoadedModel m = load_model_bytes(fuzz::text_of(data, size), "fuzz-input/model.onnx", import);
    PipelineOptions o;
    o.gpu = gpu::gpu_spec("a100");
    for (plan::Strategy s : {plan::Strategy::Rules, plan::Strategy::Souffle}) {
      o.strategy = s;
      plan::FusionPlan p = plan::plan(m.program, plan_options(o));
      plan::verify(p);
      if (!(p.est_time_us >= 0)) __builtin_trap();  // NaN or negative estimate
    }
  } catch (const UserError&) {
  }
  return 0;
}
