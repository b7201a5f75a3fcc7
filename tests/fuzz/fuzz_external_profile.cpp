// libFuzzer entry point: a timing file from another tool (a CSV of name and time, Nsight
// Compute's CSV, a PyTorch profiler Chrome trace), read and matched to the sample BERT model's
// ONNX nodes and to the kernels of its souffle plan, as the explorer's Import a profile does.
#include "core/plan/plan.h"
#include "core/session/external_profile.h"
#include "core/session/pipeline.h"
#include "core/support/error.h"
#include "tests/fuzz/fuzz_util.h"

namespace {

struct Bert {
  souffle::LoadedModel model;
  std::vector<std::string> nodes;
  souffle::plan::FusionPlan plan;
};

const Bert& bert() {
  using namespace souffle;
  static const Bert b = [] {
    Bert out{load_model(SOUFFLE_SOURCE_DIR "/sample_models/bert/model.onnx"), {}, {}};
    for (const graph::Node& n : out.model.graph.nodes) out.nodes.push_back(n.name);
    PipelineOptions o;
    o.gpu = gpu::gpu_spec("a100");
    out.plan = plan::plan(out.model.program, plan_options(o));
    return out;
  }();
  return b;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace souffle;
  const Bert& b = bert();
  ExternalProfile p;
  try {
    p = parse_external_profile(fuzz::text_of(data, size), "fuzz-input/profile.csv");
  } catch (const UserError&) {
    return 0;
  }
  const ExternalMatch m = match_external_profile(p, b.nodes, &b.plan);
  // Every entry is accounted for: matched, or listed with why not.
  if (m.entries.size() != p.entries.size()) __builtin_trap();
  if (m.matched + m.unmatched != p.entries.size()) __builtin_trap();
  // (a module that matched may hold no nodes itself: its children hold them)
  for (const MatchedEntry& e : m.entries)
    if (e.nodes.empty() && e.kernel < 0 && e.why.empty() && e.entry->kind != "module")
      __builtin_trap();
  return 0;
}
