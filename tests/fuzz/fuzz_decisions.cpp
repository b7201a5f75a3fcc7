// libFuzzer entry point: a decisions file (the user's or a colleague's) parsed, then applied to a
// real plan: every edit is applied or refused with a reason, and the plan stays valid.
#include "core/plan/decisions.h"
#include "core/plan/plan.h"
#include "core/session/pipeline.h"
#include "core/support/error.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace souffle;
  plan::Decisions d;
  try {
    d = plan::parse_decisions(fuzz::text_of(data, size), "fuzz-input/decisions.json");
  } catch (const UserError&) {
    return 0;
  }
  // What was read writes back to the same value.
  if (!(plan::parse_decisions(plan::to_json(d), "round-trip") == d)) __builtin_trap();
  if (d.edits.size() > 64) return 0;
  PipelineOptions o;
  o.gpu = gpu::gpu_spec("a100");
  o.decisions = d;
  try {
    plan::FusionPlan p = plan::plan(fuzz::sample_model().program, plan_options(o));
    plan::verify(p);
    if (p.applied.size() + p.refused.size() < d.edits.size()) __builtin_trap();  // an edit lost
  } catch (const UserError&) {
  }
  return 0;
}
