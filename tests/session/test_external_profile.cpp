// External profiles: a PyTorch profiler trace recorded from the sample BERT's PyTorch module
// matches the ONNX nodes by module path; an Nsight Compute CSV (in ncu's layout) matches the
// plan's kernels; a plain CSV matches nodes, module paths and kernels; what matches nothing is
// listed with why; ONNX Runtime's own profile matches the model's nodes (its fused nodes the node
// they start with); bad files are errors naming the file and line.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/schedule/plan_pricer.h"
#include "core/session/external_profile.h"
#include "core/support/error.h"
#include "tests/sample_model.h"

namespace souffle {
namespace {

std::string data(const std::string& name) {
  return std::string(SOUFFLE_SOURCE_DIR) + "/tests/data/" + name;
}

std::vector<std::string> node_names(const LoadedModel& m) {
  std::vector<std::string> out;
  for (const graph::Node& n : m.graph.nodes) out.push_back(n.name);
  return out;
}

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  std::ofstream(path) << text;
  return path;
}

const MatchedEntry* find(const ExternalMatch& m, const std::string& name) {
  for (const MatchedEntry& e : m.entries)
    if (e.entry->name == name) return &e;
  return nullptr;
}

TEST(ExternalProfile, PyTorchTraceMatchesModulesToNodes) {
  const ExternalProfile p = read_external_profile(data("pytorch_trace_bert_sample_cpu.json"));
  EXPECT_EQ(p.format, "pytorch-trace");
  EXPECT_EQ(p.time_kind, "CPU time (PyTorch eager)");
  const LoadedModel& bert = test::sample_model("bert");
  const ExternalMatch m = match_external_profile(p, node_names(bert), nullptr);
  // The second layer's key projection is the second Linear the layer called (the profiler
  // numbers instances per class over the whole model: Linear_7).
  const MatchedEntry* key = find(m, "BertEncoder_0/BertLayer_1/Linear_7");
  ASSERT_NE(key, nullptr);
  EXPECT_TRUE(key->why.empty()) << key->why;
  EXPECT_EQ(key->module_path, "layers.1.key");
  ASSERT_FALSE(key->nodes.empty());
  for (const std::string& n : key->nodes) EXPECT_EQ(n.rfind("/layers.1/key/", 0), 0u) << n;
  EXPECT_EQ(key->entry->calls, 2);  // two forward passes were recorded
  EXPECT_GT(key->entry->time_us, 0);
  // Nodes written by the layer's own forward (the attention scores) take the layer's self time.
  const MatchedEntry* layer = find(m, "BertEncoder_0/BertLayer_0");
  ASSERT_NE(layer, nullptr);
  EXPECT_EQ(layer->module_path, "layers.0");
  EXPECT_NE(std::find(layer->nodes.begin(), layer->nodes.end(), "/layers.0/Softmax"),
            layer->nodes.end());
  EXPECT_GT(m.node_us.at("/layers.0/Softmax"), 0);
  EXPECT_EQ(m.node_us.at("/layers.0/query/MatMul"),
            find(m, "BertEncoder_0/BertLayer_0/Linear_0")->entry->time_us);
  // Every Linear and LayerNorm of both layers matched.
  size_t modules = 0;
  for (const MatchedEntry& e : m.entries) modules += e.why.empty() ? 1 : 0;
  EXPECT_EQ(modules, m.matched);
  EXPECT_GE(m.matched, 2u * 8u + 2u);
}

TEST(ExternalProfile, NsightCsvMatchesKernelsAndListsTheRest) {
  const ExternalProfile p =
      read_external_profile(data("nsight_compute_mmoe_rules_handwritten.csv"));
  EXPECT_EQ(p.format, "nsight-compute");
  EXPECT_EQ(p.time_kind, "GPU kernel time");
  plan::PlanOptions po;
  po.strategy = plan::Strategy::Rules;
  po.gpu = gpu::gpu_spec("a100");
  po.pricer = schedule::shared_pricer(po.gpu, po.precision);
  const LoadedModel& mmoe = test::sample_model("mmoe");
  const plan::FusionPlan plan = plan::plan(mmoe.program, po);
  const ExternalMatch m = match_external_profile(p, node_names(mmoe), &plan);
  EXPECT_EQ(m.kernel_us.size(), plan.partitions.size());
  EXPECT_EQ(m.unmatched, 1u);
  const MatchedEntry* foreign = find(m, "void at::native::vectorized_elementwise_kernel<4>(int)");
  ASSERT_NE(foreign, nullptr);
  EXPECT_NE(foreign->why.find("not a kernel of this plan"), std::string::npos);
  // Two launches of kernel0: their median; a value in nanoseconds with a thousands separator.
  EXPECT_DOUBLE_EQ(m.kernel_us.at(0), 2.05);
  EXPECT_NEAR(m.kernel_us.at(3), 2.0 + (3 * 37 % 11) * 0.75, 1e-9);
}

TEST(ExternalProfile, PlainCsvOfNamesAndTimes) {
  const std::string path = write_temp("souffle_profile.csv",
                                      "name,time_ms\n"
                                      "/layers.0/Softmax,0.25\n"
                                      "layers.1.ffn_in,1.5\n"
                                      "kernel1,0.01\n"
                                      "no_such_thing,2\n");
  const ExternalProfile p = read_external_profile(path);
  EXPECT_EQ(p.format, "csv");
  ASSERT_EQ(p.entries.size(), 4u);
  EXPECT_DOUBLE_EQ(p.entries[0].time_us, 250);
  plan::PlanOptions po;
  po.gpu = gpu::gpu_spec("a100");
  const LoadedModel& bert = test::sample_model("bert");
  const plan::FusionPlan plan = plan::plan(bert.program, po);
  const ExternalMatch m = match_external_profile(p, node_names(bert), &plan);
  EXPECT_DOUBLE_EQ(m.node_us.at("/layers.0/Softmax"), 250);
  EXPECT_DOUBLE_EQ(m.node_us.at("/layers.1/ffn_in/MatMul"), 1500);  // a module path
  EXPECT_EQ(m.matched, plan.partitions.size() > 1 ? 3u : 2u);
  EXPECT_FALSE(find(m, "no_such_thing")->why.empty());
  std::remove(path.c_str());
}

TEST(ExternalProfile, OnnxRuntimeProfileMatchesTheModelsNodes) {
  const std::string path = data("onnxruntime_profile_bert_sample_cpu.json");
  const ExternalProfile p = read_external_profile(path);
  EXPECT_EQ(p.format, "onnxruntime-profile");
  EXPECT_EQ(p.time_kind, "ONNX Runtime node time (CPUExecutionProvider)");
  const LoadedModel& bert = test::sample_model("bert");
  const ExternalMatch m = match_external_profile(p, node_names(bert), nullptr);
  // The softmax of layer 0 by its own name; per run its events summed, the median of the two
  // runs (the mean of two), read here from the file independently.
  std::ifstream in(path);
  const nlohmann::json events = nlohmann::json::parse(in);
  std::vector<std::pair<double, double>> runs;
  for (const nlohmann::json& e : events)
    if (e["name"] == "model_run")
      runs.push_back({e["ts"], e["ts"].get<double>() + e["dur"].get<double>()});
  ASSERT_EQ(runs.size(), 2u);
  std::vector<double> per_run(2, 0);
  for (const nlohmann::json& e : events)
    if (e["cat"] == "Node" && e["name"] == "/layers.0/Softmax_kernel_time")
      for (size_t r = 0; r < 2; ++r)
        if (e["ts"] >= runs[r].first && e["ts"] <= runs[r].second)
          per_run[r] += e["dur"].get<double>();
  ASSERT_GT(per_run[0], 0);
  ASSERT_GT(per_run[1], 0);
  const MatchedEntry* softmax = find(m, "/layers.0/Softmax");
  ASSERT_NE(softmax, nullptr);
  EXPECT_EQ(softmax->entry->calls, 2);
  EXPECT_DOUBLE_EQ(softmax->entry->time_us, (per_run[0] + per_run[1]) / 2);
  EXPECT_EQ(softmax->nodes, std::vector<std::string>{"/layers.0/Softmax"});
  EXPECT_DOUBLE_EQ(m.node_us.at("/layers.0/Softmax"), softmax->entry->time_us);
  // A node ONNX Runtime's optimizer fused keeps the first node's name before the fusion's.
  const MatchedEntry* fused = find(m, "/layers.0/key/MatMul/MatMulAddFusion");
  ASSERT_NE(fused, nullptr);
  EXPECT_EQ(fused->nodes, std::vector<std::string>{"/layers.0/key/MatMul"});
  // A node it inserted matches nothing, and says why.
  const MatchedEntry* inserted = find(m, "gemm_input_reshape");
  ASSERT_NE(inserted, nullptr);
  EXPECT_NE(inserted->why.find("ONNX Runtime's optimizer made it"), std::string::npos);
  EXPECT_GE(m.matched, 20u);
  EXPECT_EQ(m.matched + m.unmatched, p.entries.size());
}

TEST(ExternalProfile, BadFilesSayWhy) {
  auto reason = [](const std::string& text) {
    const std::string path = write_temp("souffle_bad_profile.csv", text);
    try {
      read_external_profile(path);
    } catch (const UserError& e) {
      std::remove(path.c_str());
      EXPECT_EQ(e.file(), path);
      return e.reason();
    }
    std::remove(path.c_str());
    return std::string("no error");
  };
  EXPECT_NE(reason("name,time\na,1\nb,fast\n").find("line 3"), std::string::npos);
  EXPECT_NE(reason("{\"traceEvents\": []}").find("no module calls"), std::string::npos);
  EXPECT_NE(reason("{\"other\": 1}").find("neither a PyTorch profiler trace"), std::string::npos);
  // A JSON array of events but no ONNX Runtime node events: what was expected is named.
  EXPECT_NE(reason("[{\"cat\": \"Session\", \"name\": \"model_run\", \"ph\": \"X\"}]")
                .find("ONNX Runtime profile (an array of events with cat \"Node\""),
            std::string::npos);
  EXPECT_NE(reason("{oops").find("not valid JSON"), std::string::npos);
  EXPECT_NE(reason("just one column\n").find("not a profile CSV"), std::string::npos);
  EXPECT_THROW(read_external_profile("/nonexistent/profile.csv"), UserError);
}

}  // namespace
}  // namespace souffle
