// Every model the repository holds (sample models, the zoo in every variant, the exporter fixtures,
// the corpus), under every strategy, through import, planning, kernel building and emission: a
// model may be refused (a user error naming file, node and reason), but no path may end in an
// internal error. Kernel build and emit errors are kept as strings in the plan and the kernel list,
// so those are searched too.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/gpu/spec.h"
#include "core/onnx/importer.h"
#include "core/plan/plan.h"
#include "core/session/pipeline.h"
#include "core/support/error.h"

namespace souffle {
namespace {

namespace fs = std::filesystem;

struct ModelCase {
  std::string name;  ///< for the test's name: letters, digits and '_'
  std::string path;
  onnx_import::ImportOptions import;  ///< from zoo.json beside it: input shapes and bindings
};

/// The zoo's and the corpus' zoo.json give the input shapes ("inputs") and bound inputs ("bind")
/// their reference data was made with.
onnx_import::ImportOptions import_options(const fs::path& dir) {
  onnx_import::ImportOptions o;
  std::ifstream f(dir / "zoo.json");
  if (!f) return o;
  nlohmann::json j = nlohmann::json::parse(f, nullptr, false);
  if (j.is_discarded()) return o;
  if (j.contains("bind"))
    for (const auto& [name, v] : j["bind"].items())
      o.bind.insert(onnx_import::parse_binding(name + "=" + v.dump()));
  if (j.contains("inputs"))
    for (const auto& [name, shape] : j["inputs"].items())
      if (!o.bind.count(name)) o.shapes[name] = shape.get<Shape>();
  return o;
}

/// Every model.onnx one or two folders below `root` (name/model.onnx, name/variant/model.onnx
/// for the variants listed), named by its folders.
void collect(const fs::path& root, const std::string& prefix,
             const std::vector<std::string>& variants, std::vector<ModelCase>& out) {
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return;
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(root)) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  auto add = [&](const fs::path& model, std::string name) {
    if (!fs::is_regular_file(model, ec)) return;
    for (char& c : name)
      if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    out.push_back({prefix + name, model.string(), import_options(model.parent_path())});
  };
  for (const fs::path& d : dirs) {
    add(d / "model.onnx", d.filename().string());
    for (const std::string& v : variants)
      add(d / v / "model.onnx", d.filename().string() + "_" + v);
  }
}

std::vector<ModelCase> every_model() {
  const fs::path src = SOUFFLE_SOURCE_DIR;
  std::vector<ModelCase> out;
  collect(src / "sample_models", "sample_", {}, out);
  // The zoo in every variant it exports: TorchScript, dynamo, fp16, int8 QDQ.
  collect(src / "tests/zoo/models", "zoo_", {"ts", "dynamo", "fp16", "int8"}, out);
  collect(src / "tests/data/exporters", "exporters_", {}, out);
  collect(src / "tests/corpus/models", "corpus_", {}, out);
  return out;
}

class EveryModel : public ::testing::TestWithParam<ModelCase> {};

TEST_P(EveryModel, NoInternalErrorUnderAnyStrategy) {
  const ModelCase& c = GetParam();
  for (plan::Strategy s : plan::every_strategy()) {
    const std::string where = c.path + " under " + plan::strategy_name(s);
    PipelineOptions po;
    po.strategy = s;
    po.gpu = gpu::gpu_spec("a100");
    po.until = Step::Emit;
    po.import = c.import;
    try {
      PipelineResult r = run_pipeline(c.path, po);
      // The steps ran: kernels were built and their CUDA C emitted.
      size_t emitted = 0;
      for (const CompiledKernel& k : r.kernels.kernels) emitted += !k.cuda.empty();
      EXPECT_GT(emitted, 0u) << where;
      for (const plan::Partition& p : r.plan.partitions)
        EXPECT_EQ(p.build_error.find("internal error"), std::string::npos)
            << where << ": kernel " << p.id << ": " << p.build_error;
      for (const CompiledKernel& k : r.kernels.kernels)
        EXPECT_EQ(k.error.find("internal error"), std::string::npos)
            << where << ": " << k.name << ": " << k.error;
    } catch (const UserError& e) {
      // Refused, naming the reason. The sample models are meant to pass every step.
      EXPECT_FALSE(e.reason().empty()) << where;
      EXPECT_NE(c.name.rfind("sample_", 0), 0u) << where << " refused: " << e.what();
      std::cout << where << ": refused: " << e.what() << "\n";
      return;  // a refused load is refused under every strategy
    } catch (const std::exception& e) {
      ADD_FAILURE() << where << ": " << e.what();
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Repository, EveryModel, ::testing::ValuesIn(every_model()),
                         [](const ::testing::TestParamInfo<ModelCase>& i) { return i.param.name; });

TEST(EveryModelList, FindsTheModels) {
  std::vector<ModelCase> all = every_model();
  auto has = [&](const std::string& name) {
    return std::any_of(all.begin(), all.end(), [&](const ModelCase& c) { return c.name == name; });
  };
  EXPECT_TRUE(has("sample_bert"));
  EXPECT_TRUE(has("zoo_bert_ts"));
  EXPECT_TRUE(has("exporters_tf2onnx_layernorm"));
}

}  // namespace
}  // namespace souffle
