// libFuzzer entry point: measured kernel times a report reads (a hand-written file or the output
// of `souffle-cli profile --json`), laid onto plans of four kernels each.
#include "core/report/report_model.h"
#include "core/support/error.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace souffle;
  std::vector<report::ReportPlan> plans;
  for (plan::Strategy s : plan::every_strategy()) {
    report::ReportPlan p;
    p.strategy = s;
    p.label = plan::strategy_name(s);
    for (int k = 0; k < 4; ++k) p.kernels.emplace_back().id = k;
    plans.push_back(std::move(p));
  }
  try {
    report::parse_measurements(fuzz::text_of(data, size), "fuzz-input/measured.json", plans);
  } catch (const UserError&) {
  }
  return 0;
}
