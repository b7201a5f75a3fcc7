#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "app/cli/commands.h"
#include "core/plan/plan.h"
#include "core/session/verify.h"

namespace souffle::cli {

int run_verify(const VerifyOptions& o) {
  onnx_import::ImportOptions io;
  io.dims = parse_dims(o.common.dims);
  LoadedModel m = load_model(o.common.model, io);
  if (!o.strategy.empty())
    m.program = plan::transformed_program(m.program, plan::parse_strategy(o.strategy));
  std::string dir = o.data_dir.empty()
                        ? std::filesystem::path(o.common.model).parent_path().string()
                        : o.data_dir;
  if (dir.empty()) dir = ".";
  std::vector<TestDataSet> sets = read_test_data(dir);
  if (sets.empty())
    throw UserError(dir, "", "no test_data_set_N folders with reference data found");
  souffle::VerifyOptions vo;
  vo.criterion = Criterion::RelativeL2;
  vo.tolerance = o.tolerance;
  vo.f64 = o.f64;
  VerifyReport rep = verify_program(m, sets, vo);

  if (o.common.json) {
    nlohmann::json j;
    j["model"] = o.common.model;
    j["level"] = o.level;
    j["strategy"] = o.strategy.empty() ? "lowered" : o.strategy;
    j["tes"] = m.program.ops.size();
    j["tolerance"] = o.tolerance;
    j["ok"] = rep.ok;
    j["max_rel_l2"] = rep.max_rel_l2;
    j["run_ms"] = rep.run_ms;
    nlohmann::json checks = nlohmann::json::array();
    for (const OutputCheck& c : rep.checks)
      checks.push_back({{"data_set", c.data_set},
                        {"output", c.name},
                        {"ok", c.ok},
                        {"rel_l2", c.cmp.rel_l2_error},
                        {"max_abs", c.cmp.max_abs_error},
                        {"detail", c.cmp.describe()}});
    j["checks"] = checks;
    std::cout << j.dump(2) << "\n";
  } else {
    for (const OutputCheck& c : rep.checks)
      std::cout << fmt::format("{} {} {}: {}\n", c.ok ? "ok  " : "FAIL", c.data_set, c.name,
                               c.cmp.describe());
    std::cout << fmt::format(
        "{}: {} outputs over {} data sets, max relative L2 error {:.3g} (limit {:.0e}), "
        "interpreter {:.0f} ms\n",
        rep.ok ? "verified" : "MISMATCH", rep.checks.size(), sets.size(), rep.max_rel_l2,
        o.tolerance, rep.run_ms);
  }
  return rep.ok ? 0 : 1;
}

}  // namespace souffle::cli
