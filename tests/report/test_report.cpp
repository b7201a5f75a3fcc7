// The report model and its writers: what each format says, that they agree, and the errors.
#include <gtest/gtest.h>

#include <zlib.h>
#include <filesystem>
#include <fstream>
#include <regex>

#include "core/report/csv.h"
#include "core/report/dot.h"
#include "core/report/graphviz.h"
#include "core/report/html.h"
#include "core/report/json.h"
#include "core/report/report_model.h"
#include "core/report/steps.h"
#include "core/report/svg.h"
#include "core/report/timeline_html.h"
#include "core/support/error.h"
#include "tests/sample_model.h"

namespace souffle::report {
namespace {

namespace fs = std::filesystem;

ReportOptions options(std::vector<plan::Strategy> strategies) {
  ReportOptions o;
  o.strategies = std::move(strategies);
  o.gpu = gpu::gpu_spec("a100");
  return o;
}

const Report& mmoe_all() {
  static const Report r =
      gather_report(test::sample_model_path("mmoe"), options(plan::all_strategies()));
  return r;
}

fs::path scratch(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("souffle_report_test_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(ReportModel, EveryPlanKernelAndLaunch) {
  const Report& r = mmoe_all();
  EXPECT_EQ(r.schema_version, kSchemaVersion);
  ASSERT_EQ(r.plans.size(), 3u);
  EXPECT_EQ(r.model.name, "mmoe");
  EXPECT_GT(r.model.nodes, 0u);
  EXPECT_EQ(r.graph.nodes.size(), r.model.nodes + r.model.inputs.size() + r.model.outputs.size());
  for (const ReportPlan& p : r.plans) {
    ASSERT_FALSE(p.kernels.empty()) << p.label;
    double total = 0;
    int launches = 0;
    for (const ReportKernel& k : p.kernels) {
      total += k.est_time_us;
      EXPECT_FALSE(k.reasons.empty()) << p.label << " K" << k.id;
      // The roofline parts add up to the estimate.
      EXPECT_NEAR(std::max(k.cost.compute_us, k.cost.memory_us) + k.cost.launch_us + k.cost.sync_us,
                  k.est_time_us, 1e-6);
      for (const ReportLaunch& l : k.launches) {
        EXPECT_TRUE(l.error.empty()) << l.error;
        EXPECT_NE(l.cuda.find("__global__"), std::string::npos) << l.name;
        ++launches;
      }
      EXPECT_FALSE(k.measured.has_value());
    }
    EXPECT_NEAR(total, p.est_time_us, 1e-6 * std::max(1.0, total)) << p.label;
    EXPECT_EQ(launches, p.launches);
    EXPECT_FALSE(p.measurement.has_value());
    // Every ONNX node with TEs is in a kernel (a node the transformations fused away too).
    for (const ReportGraph::Node& n : r.graph.nodes)
      if (n.kind == "op" && n.op_type != "Constant") {
        EXPECT_TRUE(p.node_kernels.count(n.name)) << p.label << ": " << n.name;
      }
  }
  EXPECT_EQ(r.environment.gpu.name, "A100-SXM4-40GB");
  EXPECT_FALSE(r.environment.generated.empty());
  EXPECT_FALSE(r.comparison.has_value());
}

TEST(ReportModel, ReasonKinds) {
  // The report's kind of a reason is the plan's typed kind, by name; a refusal reads as a cut.
  using plan::ReasonKind;
  EXPECT_STREQ(plan::reason_kind_name(ReasonKind::Cut), "cut");
  EXPECT_STREQ(plan::reason_kind_name(ReasonKind::Refused), "cut");
  EXPECT_STREQ(plan::reason_kind_name(ReasonKind::Start), "start");
  EXPECT_STREQ(plan::reason_kind_name(ReasonKind::Epilogue), "epilogue");
  EXPECT_STREQ(plan::reason_kind_name(ReasonKind::View), "view");
  EXPECT_STREQ(plan::reason_kind_name(ReasonKind::Join), "join");
  EXPECT_STREQ(plan::reason_kind_name(ReasonKind::Decision), "decision");
  size_t cuts = 0;
  for (const ReportPlan& p : mmoe_all().plans)
    for (const ReportKernel& k : p.kernels)
      for (const ReportReason& why : k.reasons) cuts += why.kind == "cut";
  EXPECT_GT(cuts, 0u);
}

TEST(ReportModel, CompareStrategiesGroupsKernelsSharingNodes) {
  ReportOptions o = options({plan::Strategy::Unfused});
  o.compare = plan::Strategy::Souffle;
  Report r = gather_report(test::sample_model_path("mmoe"), o);
  ASSERT_EQ(r.plans.size(), 2u);
  ASSERT_TRUE(r.comparison.has_value());
  EXPECT_EQ(r.comparison->basis, "strategies");
  // Every kernel of both plans is in exactly one row.
  size_t a = 0, b = 0;
  double a_us = 0, b_us = 0;
  for (const KernelDelta& d : r.comparison->rows) {
    a += d.a.size();
    b += d.b.size();
    a_us += d.a_us;
    b_us += d.b_us;
  }
  EXPECT_EQ(a, r.plans[0].kernels.size());
  EXPECT_EQ(b, r.plans[1].kernels.size());
  EXPECT_NEAR(a_us, r.plans[0].est_time_us, 1e-6 * a_us);
  EXPECT_NEAR(b_us, r.plans[1].est_time_us, 1e-6 * std::max(1.0, b_us));
}

TEST(ReportModel, DecisionsBeforeAndAfter) {
  ReportOptions o = options({plan::Strategy::Souffle});
  o.decisions = std::string(SOUFFLE_SOURCE_DIR) + "/tests/report/bert_split.json";
  Report r = gather_report(test::sample_model_path("bert"), o);
  ASSERT_EQ(r.plans.size(), 2u);
  EXPECT_EQ(r.plans[1].label, "souffle + bert_split.json");
  EXPECT_EQ(r.plans[1].kernels.size(), r.plans[0].kernels.size() + 1);
  ASSERT_EQ(r.plans[1].applied.size(), 1u);
  ASSERT_TRUE(r.comparison.has_value());
  EXPECT_EQ(r.comparison->basis, "decisions");
  bool changed = false;
  for (const KernelDelta& d : r.comparison->rows) changed |= !d.same;
  EXPECT_TRUE(changed);
  // The split kernel's first reason says it was the user's decision.
  bool decided = false;
  for (const ReportKernel& k : r.plans[1].kernels)
    for (const ReportReason& why : k.reasons) decided |= why.kind == "decision";
  EXPECT_TRUE(decided);
}

TEST(ReportModel, MeasurementsFillOnlyTheirPlan) {
  fs::path d = scratch("measure");
  std::ofstream(d / "m.json") << R"({"device": "NVIDIA H200", "driver": "13.0",
    "date": "2026-01-01T00:00:00Z", "strategy": "rules",
    "kernels": [{"kernel": 0, "time_us": 3.5}, {"kernel": 1, "time_us": 1.5}]})";
  ReportOptions o = options(plan::all_strategies());
  o.measurements = (d / "m.json").string();
  Report r = gather_report(test::sample_model_path("mmoe"), o);
  for (const ReportPlan& p : r.plans) {
    if (p.strategy != plan::Strategy::Rules) {
      EXPECT_FALSE(p.measurement.has_value()) << p.label;
      continue;
    }
    ASSERT_TRUE(p.measurement.has_value());
    EXPECT_EQ(p.measurement->device, "NVIDIA H200");
    EXPECT_DOUBLE_EQ(p.measurement->total_us, 5.0);
    ASSERT_TRUE(p.kernels[0].measured.has_value());
    EXPECT_DOUBLE_EQ(p.kernels[0].measured->time_us, 3.5);
    EXPECT_FALSE(p.kernels[2].measured.has_value());
  }
  std::string html = report_html(r);
  EXPECT_NE(html.find("3.50 µs measured"), std::string::npos);
  EXPECT_NE(html.find("NVIDIA H200"), std::string::npos);
}

// Kernels profiled with per-tile flags are not the plan's grid-barrier kernels: the measurement
// says how they were built.
TEST(ReportModel, MeasurementsOfFlagKernelsSaySo) {
  std::vector<ReportPlan> plans(1);
  plans[0].strategy = plan::Strategy::Souffle;
  plans[0].kernels.resize(1);
  plans[0].kernels[0].id = 0;
  parse_measurements(R"({"strategies": [{"strategy": "souffle", "device": "NVIDIA H200",
    "gpu_time": true, "sync": "flags", "kernels": [{"partition": 0, "time_us": {"median": 2}}]}]})",
                     "runs/profile.json", plans);
  ASSERT_TRUE(plans[0].measurement.has_value());
  EXPECT_EQ(plans[0].measurement->device, "NVIDIA H200 (kernels built with --sync flags)");
  parse_measurements(R"({"strategies": [{"strategy": "souffle", "device": "NVIDIA H200",
    "gpu_time": true, "kernels": [{"partition": 0, "time_us": {"median": 2}}]}]})",
                     "runs/profile.json", plans);
  EXPECT_EQ(plans[0].measurement->device, "NVIDIA H200");
}

// Hardware counters in a profile run: a kernel's measured DRAM bytes (its launches summed) and
// achieved occupancy (weighted by their times) travel into the HTML and JSON reports.
TEST(ReportModel, MeasurementsCarryHardwareCounters) {
  std::vector<ReportPlan> plans(1);
  plans[0].strategy = plan::Strategy::Rules;
  plans[0].label = "rules";
  plans[0].kernels.resize(2);
  plans[0].kernels[0].id = 0;
  plans[0].kernels[1].id = 1;
  parse_measurements(R"({"strategies": [{"strategy": "rules", "device": "NVIDIA H200",
    "gpu_time": true, "kernels": [
      {"partition": 0, "time_us": {"median": 1}, "dram_read_bytes": 3e6, "dram_write_bytes": 1e6,
       "achieved_occupancy": 0.8},
      {"partition": 0, "time_us": {"median": 3}, "dram_read_bytes": 2e6, "dram_write_bytes": 0,
       "achieved_occupancy": 0.4},
      {"partition": 1, "time_us": {"median": 2}, "dram_read_bytes": -1, "dram_write_bytes": -1,
       "achieved_occupancy": -1}]}]})",
                     "runs/profile.json", plans);
  const ReportKernel& k0 = plans[0].kernels[0];
  ASSERT_TRUE(k0.measured.has_value());
  EXPECT_DOUBLE_EQ(k0.measured->time_us, 4.0);
  EXPECT_DOUBLE_EQ(k0.measured->dram_bytes, 6e6);
  EXPECT_DOUBLE_EQ(k0.measured->occupancy, (1 * 0.8 + 3 * 0.4) / 4);
  ASSERT_TRUE(plans[0].kernels[1].measured.has_value());
  EXPECT_LT(plans[0].kernels[1].measured->dram_bytes, 0);
  EXPECT_LT(plans[0].kernels[1].measured->occupancy, 0);
  // Through a real report of the sample MMoE.
  fs::path d = scratch("counters");
  std::ofstream(d / "profile.json") << R"({"strategies": [{"strategy": "rules",
    "device": "NVIDIA H200", "gpu_time": true, "kernels": [
      {"partition": 0, "time_us": {"median": 2}, "dram_read_bytes": 1.5e6,
       "dram_write_bytes": 5e5, "achieved_occupancy": 0.625}]}]})";
  ReportOptions o = options({plan::Strategy::Rules});
  o.measurements = (d / "profile.json").string();
  Report r = gather_report(test::sample_model_path("mmoe"), o);
  nlohmann::json j = report_json(r);
  const nlohmann::json& m = j["plans"][0]["partitions"][0]["measured"];
  EXPECT_DOUBLE_EQ(m["dram_bytes"].get<double>(), 2e6);
  EXPECT_DOUBLE_EQ(m["achieved_occupancy"].get<double>(), 0.625);
  std::string html = report_html(r);
  EXPECT_NE(html.find(" µs measured</b>, 2.00 MB DRAM measured, achieved occupancy 62%"),
            std::string::npos);
}

// A profile run's field of the wrong type (found by fuzz_measurements: a boolean device) is a
// refusal naming the file, not an exception from the JSON library ending the process.
TEST(ReportModel, MeasurementsWithAWrongFieldTypeAreRefused) {
  std::vector<ReportPlan> plans(1);
  plans[0].strategy = plan::Strategy::Souffle;
  try {
    parse_measurements(R"({"strategies": [{"strategy": "souffle", "device": false,
      "kernels": [{"partition": 0, "time_us": {"median": 2}}]}]})",
                       "runs/profile.json", plans);
    ADD_FAILURE() << "accepted";
  } catch (const UserError& e) {
    EXPECT_EQ(e.file(), "runs/profile.json");
    EXPECT_NE(e.reason().find("wrong type"), std::string::npos) << e.reason();
  }
  // A driver version no int holds (found by fuzz_measurements: 1.4e55) is refused, not converted.
  EXPECT_THROW(parse_measurements(R"({"strategies": [{"strategy": "souffle", "driver_version":
      1.36667e55, "kernels": [{"partition": 0, "time_us": {"median": 2}}]}]})",
                                  "runs/profile.json", plans),
               UserError);
}

// ONNX Runtime's profile given as measurements: refused as a trace of another runtime, naming
// the file and what --measurements takes (it used to say only that "kernels" was missing).
TEST(ReportModel, AnotherRuntimesTraceIsRefusedAsMeasurements) {
  std::vector<ReportPlan> plans(1);
  plans[0].strategy = plan::Strategy::Souffle;
  try {
    parse_measurements(R"([{"cat": "Node", "name": "/layers.0/Softmax_kernel_time", "ph": "X",
      "ts": 10, "dur": 4, "args": {"provider": "CPUExecutionProvider"}}])",
                       "ort_profile.json", plans);
    ADD_FAILURE() << "accepted";
  } catch (const UserError& e) {
    EXPECT_EQ(e.file(), "ort_profile.json");
    EXPECT_NE(e.reason().find("ONNX Runtime profile"), std::string::npos) << e.reason();
    EXPECT_NE(e.reason().find("souffle-cli profile --json"), std::string::npos) << e.reason();
  }
}

TEST(ReportModel, CalibrationIsRecorded) {
  fs::path d = scratch("calibration");
  gpu::Calibration c;
  c.device = "NVIDIA H200";
  c.compute_capability = "9.0";
  c.sm_count = 132;
  c.driver_version = 13000;
  c.date = "2026-01-02T03:04:05Z";
  c.launch_overhead_us = 2.5;
  c.dram_bandwidth_gbps = 4200;
  std::ofstream(d / "cal.json") << gpu::calibration_json(c);
  ReportOptions o = options({plan::Strategy::Souffle});
  o.calibration = (d / "cal.json").string();
  Report r = gather_report(test::sample_model_path("mmoe"), o);
  ASSERT_TRUE(r.environment.calibration.has_value());
  EXPECT_EQ(r.environment.calibration->device, "NVIDIA H200");
  EXPECT_EQ(report_json(r)["environment"]["calibration"]["driver_version"], 13000);
  EXPECT_NE(report_html(r).find("NVIDIA H200 (cc 9.0, driver 13.0)"), std::string::npos);
  std::ofstream(d / "bad.json") << R"({"version": 99})";
  o.calibration = (d / "bad.json").string();
  EXPECT_THROW(gather_report(test::sample_model_path("mmoe"), o), UserError);
}

TEST(ReportModel, BadInputsNameTheFile) {
  fs::path d = scratch("bad");
  std::ofstream(d / "m.json") << R"({"kernels": [{"kernel": 999, "time_us": 1}]})";
  ReportOptions o = options({plan::Strategy::Rules});
  o.measurements = (d / "m.json").string();
  try {
    gather_report(test::sample_model_path("mmoe"), o);
    FAIL() << "a measurement of a kernel that does not exist was taken";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("m.json"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("999"), std::string::npos) << e.what();
  }
  std::ofstream(d / "junk.json") << "not json";
  o.measurements = (d / "junk.json").string();
  EXPECT_THROW(gather_report(test::sample_model_path("mmoe"), o), UserError);
  o.measurements.clear();
  o.decisions = (d / "junk.json").string();
  EXPECT_THROW(gather_report(test::sample_model_path("mmoe"), o), UserError);
  o.decisions.clear();
  EXPECT_THROW(gather_report((d / "missing.onnx").string(), o), UserError);
  o.compare = plan::Strategy::Rules;
  EXPECT_THROW(gather_report(test::sample_model_path("mmoe"), o), UserError);
}

TEST(ReportModel, KernelsSayWhichGemmsKeepTheirWeightsOnChip) {
  const Report r =
      gather_report(test::sample_model_path("lstm"), options({plan::Strategy::Souffle}));
  ASSERT_EQ(r.plans.size(), 1u);
  ASSERT_EQ(r.plans[0].kernels.size(), 1u);
  const ReportKernel& k = r.plans[0].kernels[0];
  EXPECT_EQ(k.weight_panel_loads, 2);
  EXPECT_EQ(k.weight_panel_reads, 30);
  EXPECT_NE(report_html(r).find("weights kept in shared memory for the whole kernel: 2 GEMM "
                                "stages load them, 30 read them there"),
            std::string::npos);
  const nlohmann::json j = report_json(r);
  EXPECT_EQ(j["plans"][0]["partitions"][0]["weight_panels"]["reads"], 30);
  // MMoE's GEMMs each read weights of their own.
  EXPECT_EQ(mmoe_all().plans[0].kernels[0].weight_panel_loads, 0);
}

TEST(ReportJson, SaysWhatTheModelSays) {
  const Report& r = mmoe_all();
  nlohmann::json j = report_json(r);
  EXPECT_EQ(j["schema_version"], kSchemaVersion);
  ASSERT_EQ(j["plans"].size(), r.plans.size());
  for (size_t i = 0; i < r.plans.size(); ++i) {
    EXPECT_EQ(j["plans"][i]["partitions"].size(), r.plans[i].kernels.size());
    EXPECT_DOUBLE_EQ(j["plans"][i]["est_time_us"].get<double>(), r.plans[i].est_time_us);
    EXPECT_TRUE(j["plans"][i]["partitions"][0]["measured"].is_null());
  }
  EXPECT_TRUE(j["comparison"].is_null());
}

TEST(ReportCsv, OneRowPerKernelPerPlan) {
  const Report& r = mmoe_all();
  std::string csv = report_csv(r);
  size_t kernels = 0;
  for (const ReportPlan& p : r.plans) kernels += p.kernels.size();
  EXPECT_EQ(static_cast<size_t>(std::count(csv.begin(), csv.end(), '\n')), kernels + 1);
  EXPECT_EQ(csv.rfind("model,plan,strategy,", 0), 0u);
}

TEST(ReportDot, KernelsAreClustersAndGraphvizReadsIt) {
  const Report& r = mmoe_all();
  std::string dot = report_dot(r, 1);  // rules
  size_t clusters = 0;
  for (size_t at = dot.find("subgraph cluster_"); at != std::string::npos;
       at = dot.find("subgraph cluster_", at + 1))
    ++clusters;
  EXPECT_EQ(clusters, r.plans[1].kernels.size());
  std::string svg = dot_to_svg(dot);
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("</svg>"), std::string::npos);
  EXPECT_EQ(svg.find("<!--"), std::string::npos);
}

TEST(ReportDot, ClustersKeepTheOrderOfTheTextFromRunToRun) {
  // Graphviz's own discipline orders subgraphs by the address of their interned names: a name
  // interned earlier (here "cluster_2", as a label before either subgraph) sorted first, and
  // the heap decided the stage clusters' order in a walk-through from run to run. The project's
  // graphs order them as their text does.
  const std::string dot =
      "digraph g { x [label=\"cluster_2\"]; subgraph cluster_1 { a; } subgraph cluster_2 { b; } "
      "subgraph cluster_0 { c; } a -> b; b -> c; }";
  std::vector<std::string> order;
  with_graphviz([&](GVC_t*) {
    Agraph_t* g = read_dot(dot);
    ASSERT_NE(g, nullptr);
    for (Agraph_t* sub = agfstsubg(g); sub; sub = agnxtsubg(sub)) order.emplace_back(agnameof(sub));
    EXPECT_EQ(agnameof(agfstnode(g)), std::string("x"));
    agclose(g);
  });
  EXPECT_EQ(order, (std::vector<std::string>{"cluster_1", "cluster_2", "cluster_0"}));
  // The same text lays out the same, byte for byte, whatever ran before it.
  const std::string first = dot_to_svg(dot);
  std::vector<std::unique_ptr<char[]>> churn;
  churn.reserve(2000);
  for (int i = 0; i < 2000; ++i) churn.emplace_back(new char[static_cast<size_t>(16 + i % 48)]);
  for (size_t i = 0; i < churn.size(); i += 2) churn[i].reset();
  EXPECT_EQ(dot_to_svg(dot), first);
  with_graphviz([](GVC_t*) { EXPECT_EQ(read_dot("not a graph {"), nullptr); });
}

TEST(ReportHtml, StandsAlone) {
  const Report& r = mmoe_all();
  std::string html = report_html(r);
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  // No file or address outside the page: the only URLs are XML namespaces.
  std::regex outside(R"((src|href)\s*=\s*["'](?!#)[^"']*)", std::regex::icase);
  std::smatch m;
  EXPECT_FALSE(std::regex_search(html, m, outside)) << m.str();
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
  std::string rest = html;
  for (const char* ns : {"http://www.w3.org/2000/svg", "http://www.w3.org/1999/xlink"})
    for (size_t at = rest.find(ns); at != std::string::npos; at = rest.find(ns))
      rest.erase(at, std::strlen(ns));
  EXPECT_EQ(rest.find("http://"), std::string::npos);
  EXPECT_EQ(rest.find("https://"), std::string::npos);
  // Estimates are called estimates; code is collapsible; every kernel has its section.
  EXPECT_NE(html.find("est."), std::string::npos);
  EXPECT_NE(html.find("<details class=\"code\">"), std::string::npos);
  for (size_t pi = 0; pi < r.plans.size(); ++pi)
    for (const ReportKernel& k : r.plans[pi].kernels)
      EXPECT_NE(html.find("id=\"p" + std::to_string(pi) + "-k" + std::to_string(k.id) + "\""),
                std::string::npos);
  EXPECT_NE(html.find("Roofline"), std::string::npos);
  EXPECT_EQ(html.find("\"#nan"), std::string::npos);
  EXPECT_EQ(html.find("nan\""), std::string::npos);
}

TEST(ReportHtml, PackedListingsHoldEveryKernelsCuda) {
  const Report& r = mmoe_all();
  HtmlOptions o;
  o.pack_code_over = 0;
  std::string html = report_html(r, o);
  const std::string open = "<script type=\"application/octet-stream\" id=\"packed-code\">";
  size_t at = html.find(open);
  ASSERT_NE(at, std::string::npos);
  at += open.size();
  std::string b64 = html.substr(at, html.find("</script>", at) - at);
  // base64, then zlib.
  std::string bytes;
  int bits = 0;
  uint32_t acc = 0;
  for (char c : b64) {
    const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const char* p = std::strchr(t, c);
    if (c == '=' || !p) continue;
    acc = (acc << 6) | static_cast<uint32_t>(p - t);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      bytes += static_cast<char>((acc >> bits) & 0xff);
    }
  }
  std::vector<std::string> expect;
  for (const ReportPlan& p : r.plans)
    for (const ReportKernel& k : p.kernels)
      for (const ReportLaunch& l : k.launches) expect.push_back(highlight_cuda(l.cuda));
  std::string joined;
  for (size_t i = 0; i < expect.size(); ++i) joined += (i ? "\x01" : "") + expect[i];
  std::string out(joined.size() + 16, '\0');
  uLongf size = static_cast<uLongf>(out.size());
  ASSERT_EQ(
      uncompress(reinterpret_cast<Bytef*>(out.data()), &size,
                 reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uLong>(bytes.size())),
      Z_OK);
  out.resize(size);
  EXPECT_EQ(out, joined);
  EXPECT_NE(html.find("data-code=\"" + std::to_string(expect.size() - 1) + "\""),
            std::string::npos);
  // Unpacked by default for a report this small.
  EXPECT_EQ(report_html(r).find("packed-code\">"), std::string::npos);
}

TEST(ReportHtml, HighlightEscapes) {
  std::string h =
      highlight_cuda("// a < b\n#include <x.h>\nif (a < 1.5f && b > 2) { s = \"<\"; }\n");
  EXPECT_NE(h.find("<span class=\"c\">// a &lt; b</span>"), std::string::npos) << h;
  EXPECT_NE(h.find("<span class=\"p\">#include &lt;x.h&gt;</span>"), std::string::npos) << h;
  EXPECT_NE(h.find("<span class=\"k\">if</span>"), std::string::npos) << h;
  EXPECT_NE(h.find("<span class=\"n\">1.5f</span>"), std::string::npos) << h;
  EXPECT_NE(h.find("&amp;&amp;"), std::string::npos) << h;
  EXPECT_NE(h.find("<span class=\"s\">&quot;&lt;&quot;</span>"), std::string::npos) << h;
  EXPECT_EQ(h.find(" < "), std::string::npos) << h;
}

TEST(ReportSteps, OnePagePerStepLinkedByName) {
  StepsOptions o;
  o.gpu = gpu::gpu_spec("a100");
  std::vector<StepPage> pages = walkthrough(test::sample_model_path("bert"), o, "walk");
  // The index, then one page per step run_pipeline runs (import ... emit).
  ASSERT_EQ(pages.size(), 13u);
  EXPECT_EQ(pages[0].file, "walk.html");
  EXPECT_EQ(pages[1].file, "walk-1-import.html");
  EXPECT_EQ(pages[11].file, "walk-11-build-kernels.html");
  EXPECT_EQ(pages[12].file, "walk-12-emit.html");
  for (const StepPage& p : pages) {
    EXPECT_EQ(p.html.rfind("<!DOCTYPE html>", 0), 0u) << p.file;
    for (const StepPage& q : pages)
      if (&q != &p) {
        EXPECT_NE(p.html.find("href=\"" + q.file + "\""), std::string::npos) << p.file;
      }
  }
  EXPECT_NE(pages[5].html.find("class=\"sentence\""), std::string::npos);
  EXPECT_NE(pages[5].html.find("<svg"), std::string::npos);   // horizontal: graphs
  EXPECT_NE(pages[11].html.find("<svg"), std::string::npos);  // the kernel's stages
  EXPECT_NE(pages[12].html.find("__global__"), std::string::npos);
}

TEST(ReportSteps, LessonIsOnePageWithQuestions) {
  StepsOptions o;
  o.gpu = gpu::gpu_spec("a100");
  o.lesson = true;
  std::vector<StepPage> pages = walkthrough(test::sample_model_path("bert"), o, "lesson");
  ASSERT_EQ(pages.size(), 1u);
  const std::string& h = pages[0].html;
  EXPECT_EQ(pages[0].file, "lesson.html");
  // Self-contained: no link to another file, no script or style sheet from outside.
  EXPECT_EQ(h.find("href=\"lesson-"), std::string::npos);
  EXPECT_EQ(h.find("<link"), std::string::npos);
  EXPECT_EQ(h.find("src=\"http"), std::string::npos);
  // Every step, its changes, marked lines, and the grid barrier question with its answer folded.
  for (int i = 1; i <= 12; ++i)
    EXPECT_NE(h.find("id=\"step-" + std::to_string(i) + "\""), std::string::npos) << i;
  EXPECT_NE(h.find("→ batched"), std::string::npos);
  EXPECT_NE(h.find("<span class=\"del\">"), std::string::npos);
  EXPECT_NE(h.find("<span class=\"ins\">"), std::string::npos);
  const size_t q = h.find("<summary>Why does this boundary need a grid barrier");
  ASSERT_NE(q, std::string::npos);
  EXPECT_LT(h.find("reads", q), h.find("</details>", q));
  EXPECT_NE(h.find("<details class=\"answer\">"), std::string::npos);
  // The partition step's memory picture: inline SVG after the bytes before and after.
  const size_t mem = h.find("<div class=\"mempic\"><h3>What kernel");
  ASSERT_NE(mem, std::string::npos);
  const size_t partition = h.find("Partition the TEs into kernels");
  EXPECT_GT(mem, partition);
  EXPECT_LT(mem, h.find("</section>", partition));
  EXPECT_NE(h.find("separate kernels", mem), std::string::npos);
  EXPECT_NE(h.find("<svg", mem), std::string::npos);
  EXPECT_NE(h.find("coloured by block", mem), std::string::npos);
  // The vertical step's bytes, from the TE shapes.
  const size_t vertical = h.find("Vertical transformation");
  ASSERT_NE(vertical, std::string::npos);
  EXPECT_LT(h.find("if each TE ran as its own kernel", vertical), partition);
}

TEST(ReportSteps, OneLayer) {
  StepsOptions o;
  o.gpu = gpu::gpu_spec("a100");
  o.layer = "layers.1";
  std::vector<StepPage> pages = walkthrough(test::sample_model_path("bert"), o, "w");
  ASSERT_EQ(pages.size(), 13u);
  // The lowered text lists the layer's TEs only.
  EXPECT_NE(pages[3].html.find("/layers.1/"), std::string::npos);
  EXPECT_EQ(pages[3].html.find("/layers.0/query"), std::string::npos);
  o.layer = "no-such-layer";
  EXPECT_THROW(walkthrough(test::sample_model_path("bert"), o, "w"), UserError);
}

// A kernel of many blocks: the timeline chart draws the first kTimelineMaxRows rows and says
// how many there are; a GPU clock is not labelled emulated.
TEST(ReportTimeline, CapsRowsAndSaysSo) {
  ReportTimeline rt;
  KernelTimeline& t = rt.records;
  t.kernel = "kernel0";
  t.timer = "globaltimer";
  t.time_base = "GPU global timer (ns)";
  t.grid = t.rows = 100;
  t.stage_names = {"a", "b"};
  t.stage_est_us = {1, 1};
  t.stage_waves = {-1, -1};
  for (int64_t b = 0; b < 100; ++b) {
    const double d = 0.01 * static_cast<double>(b);
    t.spans.push_back({b, b, 0, loop::TimelineWait::None, 0, 1 + d});
    t.spans.push_back({b, b, 1, loop::TimelineWait::GridBarrier, 1 + d, 2});
    t.spans.push_back({b, b, 1, loop::TimelineWait::None, 2, 3});
  }
  rt.analysis = analyse_timeline(t);
  const std::string svg = timeline_svg(rt, 0);
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = svg.find(what); at != std::string::npos; at = svg.find(what, at + 1)) ++n;
    return n;
  };
  EXPECT_EQ(count("class=\"tl-stage\""), 2 * kTimelineMaxRows);
  EXPECT_EQ(count("class=\"tl-wait\""), kTimelineMaxRows);
  EXPECT_EQ(count("class=\"tl-barrier\""), 1u);
  EXPECT_NE(svg.find("one row per SM; 64 of 100 rows shown"), std::string::npos);
  EXPECT_EQ(svg.find("emulated"), std::string::npos);
  const std::string html = timeline_html(rt, 0);
  ASSERT_EQ(rt.analysis.stages.size(), 2u);
  EXPECT_NE(html.find("class=\"grid tl-stages\""), std::string::npos);
  EXPECT_NE(html.find("block 99 (stage 0)"), std::string::npos) << "the straggler of the wait";
}

}  // namespace
}  // namespace souffle::report
