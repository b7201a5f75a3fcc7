// The HTML page: sections in reading order (model, environment, plans compared, comparison,
// each plan with its graph, tables and kernels), everything inline so the file stands alone.
#include "core/report/html.h"

#include <fmt/format.h>

#include <zlib.h>
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>

#include "core/report/dot.h"
#include "core/report/svg.h"
#include "core/report/timeline_html.h"
#include "core/support/error.h"
#include "embedded/report_resources.h"

namespace souffle::report {

namespace {

/// Beyond this many boxes the graph is left out (its layout would take too long to be worth it);
/// the DOT export still has it.
constexpr size_t kMaxGraphNodes = 5000;

std::string esc(const std::string& s) {
  return xml_escape(s);
}

/// Where the CUDA listings go: inline, or kept aside to be packed at the end of the page.
struct CodeSink {
  bool pack = false;
  std::vector<std::string> packed;  ///< highlighted listings, in order of their data-code index
};

std::string base64(const std::string& in) {
  static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((in.size() + 2) / 3 * 4);
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v =
        (uint32_t(uint8_t(in[i])) << 16) | (uint32_t(uint8_t(in[i + 1])) << 8) | uint8_t(in[i + 2]);
    out += t[v >> 18];
    out += t[(v >> 12) & 63];
    out += t[(v >> 6) & 63];
    out += t[v & 63];
  }
  if (i < in.size()) {
    uint32_t v = uint32_t(uint8_t(in[i])) << 16;
    if (i + 1 < in.size()) v |= uint32_t(uint8_t(in[i + 1])) << 8;
    out += t[v >> 18];
    out += t[(v >> 12) & 63];
    out += i + 1 < in.size() ? t[(v >> 6) & 63] : '=';
    out += '=';
  }
  return out;
}

/// `in` compressed in the zlib format (what a browser's DecompressionStream("deflate") reads).
std::string deflate(const std::string& in) {
  uLongf size = compressBound(static_cast<uLong>(in.size()));
  std::string out(size, '\0');
  if (compress2(reinterpret_cast<Bytef*>(out.data()), &size,
                reinterpret_cast<const Bytef*>(in.data()), static_cast<uLong>(in.size()),
                Z_BEST_COMPRESSION) != Z_OK)
    throw InternalError("zlib could not compress the report's CUDA listings");
  out.resize(size);
  return out;
}

std::string bytes_text(int64_t b) {
  double v = static_cast<double>(b);
  if (v >= 1e9) return fmt::format("{:.2f} GB", v / 1e9);
  if (v >= 1e6) return fmt::format("{:.2f} MB", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.1f} kB", v / 1e3);
  return fmt::format("{} B", b);
}

std::string flops_text(int64_t f) {
  double v = static_cast<double>(f);
  if (v >= 1e9) return fmt::format("{:.2f} G", v / 1e9);
  if (v >= 1e6) return fmt::format("{:.2f} M", v / 1e6);
  if (v >= 1e3) return fmt::format("{:.1f} k", v / 1e3);
  return fmt::format("{}", f);
}

std::string us_text(double us) {
  return us >= 100 ? fmt::format("{:.1f}", us) : fmt::format("{:.2f}", us);
}

std::string driver_text(int v) {
  if (v <= 0) return "none";
  return fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
}

std::string row(std::initializer_list<std::string> cells, const char* tag = "td") {
  std::string out = "<tr>";
  for (const std::string& c : cells) out += fmt::format("<{0}>{1}</{0}>", tag, c);
  return out + "</tr>\n";
}

std::string kv(const std::string& k, const std::string& v) {
  return "<tr><th>" + esc(k) + "</th><td>" + v + "</td></tr>\n";
}

std::string plan_anchor(size_t i) {
  return fmt::format("plan-{}", i);
}

std::string kernel_anchor(size_t plan, int k) {
  return fmt::format("p{}-k{}", plan, k);
}

std::string swatch(int kernel) {
  return fmt::format("<span class=\"sw\" style=\"background:{}\"></span>", kernel_colour(kernel));
}

std::string ops_cell(const std::vector<std::string>& ops, size_t shown = 3) {
  std::string out;
  for (size_t i = 0; i < ops.size() && i < shown; ++i)
    out += (i ? ", " : "") + std::string("<code>") + esc(ops[i]) + "</code>";
  if (ops.size() > shown)
    out += fmt::format(" <span class=\"dim\">+{} more</span>", ops.size() - shown);
  return out;
}

bool is_ident(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

const std::set<std::string>& cuda_keywords() {
  static const std::set<std::string> k = {"if",
                                          "else",
                                          "for",
                                          "while",
                                          "do",
                                          "return",
                                          "break",
                                          "continue",
                                          "switch",
                                          "case",
                                          "default",
                                          "goto",
                                          "const",
                                          "static",
                                          "extern",
                                          "inline",
                                          "volatile",
                                          "struct",
                                          "typedef",
                                          "sizeof",
                                          "namespace",
                                          "using",
                                          "template",
                                          "typename",
                                          "__global__",
                                          "__device__",
                                          "__shared__",
                                          "__constant__",
                                          "__restrict__",
                                          "__noinline__",
                                          "__forceinline__",
                                          "__launch_bounds__",
                                          "__maxnreg__",
                                          "constexpr",
                                          "auto",
                                          "union"};
  return k;
}

const std::set<std::string>& cuda_types() {
  static const std::set<std::string> t = {
      "void",     "float",    "double",   "int",     "unsigned",      "long",    "short",
      "char",     "bool",     "int8_t",   "int16_t", "int32_t",       "int64_t", "uint8_t",
      "uint16_t", "uint32_t", "uint64_t", "size_t",  "float2",        "float4",  "int4",
      "uint4",    "uint2",    "__half",   "__half2", "__nv_bfloat16", "half"};
  return t;
}

const std::set<std::string>& cuda_builtins() {
  static const std::set<std::string> b = {"threadIdx",
                                          "blockIdx",
                                          "blockDim",
                                          "gridDim",
                                          "warpSize",
                                          "__syncthreads",
                                          "__shfl_xor_sync",
                                          "__shfl_down_sync",
                                          "__shfl_sync",
                                          "atomicAdd",
                                          "cooperative_groups",
                                          "grid_group",
                                          "this_grid",
                                          "sync",
                                          "wmma",
                                          "nvcuda"};
  return b;
}

std::string section_open(const std::string& id, const std::string& title) {
  return "<section id=\"" + id + "\">\n<h2>" + esc(title) + "</h2>\n";
}

std::string model_section(const Report& r) {
  const ReportSummary& m = r.model;
  std::string s = section_open("model", "Model");
  s += "<table class=\"kv\">\n";
  s += kv("file", "<code>" + esc(m.path) + "</code> (" + bytes_text(m.file_bytes) + ")");
  s += kv("opset", std::to_string(m.opset));
  s += kv("nodes", fmt::format("{} in the file; {} after inference and folding ({} folded or dead)",
                               m.onnx_nodes, m.nodes, m.folded));
  s += kv("tensor expressions", std::to_string(m.tes));
  s += kv("constants", fmt::format("{} tensors, {}", m.constants, bytes_text(m.constant_bytes)));
  s += kv("FLOPs", flops_text(m.flops) + " (one inference, lowered program)");
  std::string ins, outs;
  for (const ReportTensor& t : m.inputs)
    ins += "<code>" + esc(t.name) + "</code> " + esc(t.type) + "<br>";
  for (const ReportTensor& t : m.outputs)
    outs += "<code>" + esc(t.name) + "</code> " + esc(t.type) + "<br>";
  s += kv("inputs", ins);
  s += kv("outputs", outs);
  s += kv("load time", fmt::format("{:.0f} ms", m.load_ms));
  if (!m.warnings.empty()) {
    std::string w;
    for (const std::string& x : m.warnings) w += esc(x) + "<br>";
    s += kv("warnings", w);
  }
  std::vector<std::pair<int, std::string>> ops;
  for (const auto& [op, c] : m.op_counts) ops.push_back({-c, op});
  std::sort(ops.begin(), ops.end());
  std::string list;
  for (const auto& [c, op] : ops)
    list += fmt::format("<span class=\"op\">{} ×{}</span> ", esc(op), -c);
  s += kv("operators", list);
  s += "</table>\n</section>\n";
  return s;
}

std::string environment_section(const Report& r) {
  const ReportEnvironment& e = r.environment;
  const gpu::GpuSpec& g = e.gpu;
  std::string s = section_open("environment", "Environment");
  s += "<p class=\"note\">Times marked <b>est.</b> are estimates of the cost model over the "
       "kernels actually built (per stage: FLOPs at the rate the stage reaches, bytes at DRAM or "
       "L2 bandwidth, waves and occupancy of its real block; plus a launch per kernel and a "
       "grid-barrier cost that grows with the grid) with the constants of the GPU spec below, or "
       "of the calibration file when one is named; they are not measurements.";
  bool measured = false;
  for (const ReportPlan& p : r.plans) measured |= p.measurement.has_value();
  s += measured ? " Measured times are shown where a measurement was given, with its device.</p>\n"
                : " No measured times were given.</p>\n";
  s += "<table class=\"kv\">\n";
  s += kv("GPU spec", fmt::format("<b>{}</b>, compute capability {}, {} SMs", esc(g.name),
                                  esc(g.compute_capability), g.sm_count));
  s += kv("peak rates", fmt::format("fp32 {:.1f} TFLOP/s, tf32 {:.1f}, fp16 {:.1f} (tensor cores); "
                                    "DRAM {:.0f} GB/s",
                                    g.peak_fp32_tflops, g.peak_tf32_tflops, g.peak_fp16_tflops,
                                    g.dram_bandwidth_gbps));
  s += kv("memory",
          fmt::format("{} shared per SM, {} per block, L2 {}, DRAM {}",
                      bytes_text(g.shared_memory_per_sm), bytes_text(g.max_shared_memory_per_block),
                      bytes_text(g.l2_bytes), bytes_text(g.dram_bytes)));
  s += kv("overheads", fmt::format("launch {:.1f} µs, grid sync {:.1f} µs", g.launch_overhead_us,
                                   g.grid_sync_overhead_us));
  if (!g.source.empty()) s += kv("spec source", esc(g.source));
  s += kv("device here", e.device.empty() ? esc("none: " + e.device_reason) : esc(e.device));
  s += kv("CUDA driver", driver_text(e.driver_version));
  s += kv("NVRTC (CUDA)", e.nvrtc.empty() ? "not in this build" : esc(e.nvrtc));
  for (const auto& [k, v] : e.options) s += kv("option: " + k, esc(v));
  if (e.calibration) {
    const gpu::Calibration& c = *e.calibration;
    s += kv("calibration",
            fmt::format("{} (cc {}, driver {}), measured {}: launch {:.2f} µs, DRAM {:.0f} GB/s, "
                        "{} grid-barrier samples; from <code>{}</code>. The estimates above use "
                        "the spec's figures.",
                        esc(c.device), esc(c.compute_capability), driver_text(c.driver_version),
                        esc(c.date), c.launch_overhead_us, c.dram_bandwidth_gbps,
                        c.grid_barrier.size(), esc(c.file)));
  } else {
    s += kv("calibration", "none");
  }
  s += kv("generated", esc(e.generated) + " by " + esc(e.generator));
  s += "</table>\n</section>\n";
  return s;
}

std::string plans_section(const Report& r) {
  std::string s = section_open("plans", "Plans compared");
  s += "<table class=\"grid\">\n";
  s += row({"plan", "kernels", "launches", "grid syncs", "TEs", "FLOPs", "DRAM (est.)",
            "time (est.)", "time (measured)"},
           "th");
  for (size_t i = 0; i < r.plans.size(); ++i) {
    const ReportPlan& p = r.plans[i];
    s += row({"<a href=\"#" + plan_anchor(i) + "\">" + esc(p.label) + "</a>",
              std::to_string(p.kernels.size()), std::to_string(p.launches),
              std::to_string(p.grid_syncs), fmt::format("{} → {}", p.input_tes, p.tes),
              flops_text(p.flops), bytes_text(p.dram_bytes), us_text(p.est_time_us) + " µs",
              p.measurement
                  ? us_text(p.measurement->total_us) + " µs on " + esc(p.measurement->device)
                  : "<span class=\"dim\">—</span>"});
  }
  s += "</table>\n";
  s += "<div class=\"chart\">" + strategy_chart_svg(r) + "</div>\n";
  s += "<div class=\"chart\">" + roofline_svg(r) + "</div>\n";
  s += "</section>\n";
  return s;
}

std::string kernels_cell(const std::vector<int>& ks, size_t plan) {
  if (ks.empty()) return "<span class=\"dim\">—</span>";
  std::string out;
  for (size_t i = 0; i < ks.size(); ++i) {
    if (i == 6) {
      out += fmt::format(" +{}", ks.size() - 6);
      break;
    }
    out +=
        fmt::format("{}<a href=\"#{}\">K{}</a> ", swatch(ks[i]), kernel_anchor(plan, ks[i]), ks[i]);
  }
  return out;
}

std::string comparison_section(const Report& r) {
  if (!r.comparison) return "";
  const ReportComparison& c = *r.comparison;
  const ReportPlan& a = r.plans[c.a];
  const ReportPlan& b = r.plans[c.b];
  std::string s = section_open("comparison", "Comparison: " + a.label + " vs " + b.label);
  size_t changed = 0;
  for (const KernelDelta& d : c.rows) changed += d.same ? 0 : 1;
  s += fmt::format(
      "<p>{}: kernels of the two plans grouped by the ONNX nodes they share (a kernel split in "
      "one plan and fused in the other is one row). {} {}, {} changed. Total estimated time "
      "{} → {} µs (Δ {:+.2f} µs), DRAM {} → {}, kernels {} → {}.</p>\n",
      c.basis == "decisions" ? "Before and after the decisions file" : "Two strategies",
      c.rows.size(), c.rows.size() == 1 ? "group" : "groups", changed, us_text(a.est_time_us),
      us_text(b.est_time_us), b.est_time_us - a.est_time_us, bytes_text(a.dram_bytes),
      bytes_text(b.dram_bytes), a.kernels.size(), b.kernels.size());
  if (!b.applied.empty() || !b.refused.empty()) {
    s += "<ul>";
    for (const ReportEdit& e : b.applied) s += "<li>applied: " + esc(e.text) + "</li>";
    for (const ReportEdit& e : b.refused)
      s += "<li>refused: " + esc(e.text) + " — " + esc(e.reason) + "</li>";
    s += "</ul>\n";
  }
  s += "<table class=\"grid\">\n";
  s += row({"#", "first ONNX node", "nodes", esc(a.label), esc(b.label), "est. µs " + esc(a.label),
            "est. µs " + esc(b.label), "Δ µs", "DRAM Δ", "syncs"},
           "th");
  for (size_t i = 0; i < c.rows.size(); ++i) {
    const KernelDelta& d = c.rows[i];
    const double delta = d.b_us - d.a_us;
    std::string cls =
        d.same ? " class=\"dim\""
               : (delta < 0 ? " class=\"better\"" : (delta > 0 ? " class=\"worse\"" : ""));
    s += fmt::format(
        "<tr{}><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{:+.2f}</td><td>{}{}</td><td>{} → {}</td></tr>\n",
        cls, i, esc(d.first_op), d.ops, kernels_cell(d.a, c.a), kernels_cell(d.b, c.b),
        us_text(d.a_us), us_text(d.b_us), delta, d.b_bytes >= d.a_bytes ? "+" : "−",
        bytes_text(std::llabs(d.b_bytes - d.a_bytes)), d.a_syncs, d.b_syncs);
  }
  s += "</table>\n</section>\n";
  return s;
}

std::string reason_badge(const std::string& kind) {
  return "<span class=\"badge r-" + kind + "\">" + esc(kind) + "</span>";
}

std::string kernel_block(const ReportPlan& p, size_t pi, const ReportKernel& k, CodeSink& code) {
  std::string s =
      fmt::format("<div class=\"kernel\" id=\"{}\">\n<h4>{} K{} · {} · {}</h4>\n",
                  kernel_anchor(pi, k.id), swatch(k.id), k.id, esc(k.kind), ops_cell(k.ops, 2));
  s += fmt::format(
      "<p class=\"figs\">{} TEs in {} stages, {} grid syncs{}; grid {} × {} threads{}; {} FLOPs, "
      "{} DRAM (est.), intensity {:.2f} FLOP/B; <b>{} µs est.</b> ({}-bound: compute {:.2f}, "
      "memory {:.2f}, launch {:.2f}, syncs {:.2f}){}</p>\n",
      k.tes.size(), k.stages.size(), k.grid_syncs, k.cooperative ? ", cooperative" : "", k.blocks,
      k.threads, k.co_resident > 0 ? fmt::format(" ({} co-resident)", k.co_resident) : "",
      flops_text(k.flops), bytes_text(k.dram_bytes), k.intensity, us_text(k.est_time_us),
      k.cost.bound, k.cost.compute_us, k.cost.memory_us, k.cost.launch_us, k.cost.sync_us,
      k.measured
          ? fmt::format(
                "; <b>{} µs measured</b>{}{}", us_text(k.measured->time_us),
                k.measured->dram_bytes >= 0
                    ? fmt::format(", {} DRAM measured", bytes_text(static_cast<int64_t>(
                                                            std::llround(k.measured->dram_bytes))))
                    : "",
                k.measured->occupancy >= 0
                    ? fmt::format(", achieved occupancy {:.0f}%", 100 * k.measured->occupancy)
                    : "")
          : "");
  // Long lists (a recurrent model's kernel of thousands of stages) are folded after the first
  // entries, so the page lays out quickly; opening them shows the rest.
  constexpr size_t kShown = 40;
  if (!k.reasons.empty()) {
    s += "<ul class=\"reasons\">\n";
    for (size_t r = 0; r < k.reasons.size(); ++r) {
      const ReportReason& why = k.reasons[r];
      if (r == kShown)
        s += fmt::format(
            "</ul><details class=\"sites\"><summary>{} more reasons</summary>"
            "<ul class=\"reasons\">\n",
            k.reasons.size() - kShown);
      s += "<li>" + reason_badge(why.kind) + " " + esc(why.text);
      if (!why.prices.empty()) {
        s += " <span class=\"prices\">(";
        for (size_t i = 0; i < why.prices.size(); ++i)
          s += fmt::format("{}{}: {:.2f} µs", i ? ", " : "", esc(why.prices[i].first),
                           why.prices[i].second);
        s += ")</span>";
      }
      s += "</li>\n";
    }
    s += k.reasons.size() > kShown ? "</ul></details>\n" : "</ul>\n";
  }
  const bool fold_stages = k.stages.size() > kShown;
  if (fold_stages)
    s += fmt::format("<details class=\"sites\"><summary>{} stages</summary>\n", k.stages.size());
  s += "<table class=\"grid stages\">\n";
  s += row({"stage", "kind", "TEs", "ONNX nodes", "blocks × threads", "schedule", "sync before"},
           "th");
  for (size_t i = 0; i < k.stages.size(); ++i) {
    const ReportStage& st = k.stages[i];
    s += row({std::to_string(i), esc(st.kind), ops_cell(st.tes, 3), ops_cell(st.ops, 2),
              fmt::format("{} × {}", st.blocks, st.threads), esc(st.schedule),
              st.sync_before ? "grid sync" : ""});
  }
  s += "</table>\n";
  if (fold_stages) s += "</details>\n";
  if (!k.on_chip.empty())
    s += "<p class=\"figs\">kept on chip across syncs: " + ops_cell(k.on_chip, 8) + "</p>\n";
  if (k.weight_panel_loads > 0)
    s += fmt::format(
        "<p class=\"figs\">weights kept in shared memory for the whole kernel: {} GEMM stages "
        "load them, {} read them there</p>\n",
        k.weight_panel_loads, k.weight_panel_reads);
  for (const ReportTimeline& t : k.timelines) s += timeline_html(t, k.id);
  for (const ReportLaunch& l : k.launches) {
    if (!l.error.empty()) {
      s += "<p class=\"error\">" + esc(l.name) + ": " + esc(l.error) + "</p>\n";
      continue;
    }
    size_t lines = static_cast<size_t>(std::count(l.cuda.begin(), l.cuda.end(), '\n'));
    s += fmt::format(
        "<details class=\"code\"{}><summary>CUDA C <code>{}</code>: {} lines; grid {} × {} "
        "threads, {} shared bytes{}, {} grid / {} block barriers</summary>\n<pre><code>",
        code.pack ? fmt::format(" data-code=\"{}\"", code.packed.size()) : "", esc(l.name), lines,
        l.grid, l.block, l.smem_bytes, l.cooperative ? ", cooperative" : "", l.grid_barriers,
        l.block_barriers);
    if (code.pack)
      code.packed.push_back(highlight_cuda(l.cuda));
    else
      s += highlight_cuda(l.cuda);
    s += "</code></pre></details>\n";
    // With report --sass: the instruction mix of the launch and of each stage, per arch.
    for (const KernelSass& x : l.sass) {
      if (!x.ok) {
        s += "<p class=\"error\">SASS " + esc(x.arch) + ": " + esc(x.error) + "</p>\n";
        continue;
      }
      s += fmt::format(
          "<details class=\"code\"><summary>SASS {}: {} instructions, {} MMA, {} async copies, "
          "{} ldmatrix, {} barriers, {} local loads / {} stores; {} registers, {} spill "
          "bytes</summary>\n<table>\n<tr><th>stage</th><th>instructions</th><th>MMA</th>"
          "<th>async</th><th>LDSM</th><th>BAR</th><th>LDL</th><th>STL</th></tr>\n",
          esc(x.arch), x.mix.total, x.mix.mma, x.mix.async_copy, x.mix.ldsm, x.mix.bar,
          x.mix.local_load, x.mix.local_store, x.registers, x.spill_bytes);
      for (const StageSass& st : x.stages)
        s += fmt::format(
            "<tr><td>{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
            "<td>{}</td></tr>\n",
            esc(st.name), st.tensor_core ? " (tensor cores)" : "", st.mix.total, st.mix.mma,
            st.mix.async_copy, st.mix.ldsm, st.mix.bar, st.mix.local_load, st.mix.local_store);
      s += "</table></details>\n";
    }
  }
  s += "</div>\n";
  (void)p;
  return s;
}

std::string plan_section(const Report& r, size_t pi, CodeSink& code) {
  const ReportPlan& p = r.plans[pi];
  std::string s = section_open(plan_anchor(pi), "Plan: " + p.label);
  s += fmt::format(
      "<p>{} kernels ({} launches), {} grid syncs, {} TEs ({} before transformation); {} FLOPs, "
      "{} DRAM, <b>{} µs est.</b> on {} ({}). Planned in {:.1f} ms; kernels built and emitted in "
      "{:.0f} ms{}.</p>\n",
      p.kernels.size(), p.launches, p.grid_syncs, p.tes, p.input_tes, flops_text(p.flops),
      bytes_text(p.dram_bytes), us_text(p.est_time_us), esc(p.gpu),
      gpu::precision_name(p.precision), p.plan_ms, p.build_ms,
      p.build_errors
          ? fmt::format(", <span class=\"error\">{} could not be built</span>", p.build_errors)
          : "");
  if (p.measurement) {
    const Measurement& m = *p.measurement;
    s += fmt::format("<p>Measured: {} µs in all on {} (driver {}, {}), from <code>{}</code>.</p>\n",
                     us_text(m.total_us), esc(m.device), esc(m.driver), esc(m.date), esc(m.source));
  }
  // Transformations (souffle): each site and why.
  size_t applied = 0;
  for (const ReportTransform& t : p.transforms) applied += t.applied;
  if (!p.transforms.empty()) {
    s += fmt::format(
        "<details class=\"sites\"><summary>Transformations: {} of {} sites applied"
        "</summary>\n<table class=\"grid\">\n",
        applied, p.transforms.size());
    s += row({"kind", "TEs", "result", "applied", "reason"}, "th");
    for (const ReportTransform& t : p.transforms)
      s += row({esc(t.kind), ops_cell(t.ops, 4), "<code>" + esc(t.result) + "</code>",
                t.applied ? "yes" : "no", esc(t.reason)});
    s += "</table></details>\n";
  }
  if (!p.applied.empty() || !p.refused.empty()) {
    s += "<p>Decisions (" + esc(p.decisions) + "):</p><ul>";
    for (const ReportEdit& e : p.applied) s += "<li>applied: " + esc(e.text) + "</li>";
    for (const ReportEdit& e : p.refused)
      s += "<li>refused: " + esc(e.text) + " — " + esc(e.reason) + "</li>";
    s += "</ul>\n";
  }
  s += "<h3>Graph</h3>\n";
  if (r.graph.nodes.size() > kMaxGraphNodes) {
    s += fmt::format(
        "<p class=\"note\">The graph has {} boxes, too many to lay out here; the DOT "
        "export (<code>--out FILE.dot</code>) has it.</p>\n",
        r.graph.nodes.size());
  } else {
    s += "<p class=\"note\">Each box is an ONNX node, filled with the colour of its kernel; each "
         "kernel is a cluster. Hover a box for its name and kernels.</p>\n";
    s += "<div class=\"graph\">" + dot_to_svg(to_dot(plan_graph(r, &p), false)) + "</div>\n";
  }
  s += "<h3>Kernels</h3>\n<table class=\"grid kernels\">\n";
  s += row({"kernel", "kind", "ONNX nodes", "TEs", "stages", "syncs", "grid × block", "FLOPs",
            "DRAM (est.)", "FLOP/B", "time (est.)", "bound", "time (measured)"},
           "th");
  for (const ReportKernel& k : p.kernels)
    s += row({swatch(k.id) + fmt::format("<a href=\"#{}\">K{}</a>", kernel_anchor(pi, k.id), k.id),
              esc(k.kind), ops_cell(k.ops, 2), std::to_string(k.tes.size()),
              std::to_string(k.stages.size()), std::to_string(k.grid_syncs),
              fmt::format("{} × {}", k.blocks, k.threads), flops_text(k.flops),
              bytes_text(k.dram_bytes), fmt::format("{:.2f}", k.intensity),
              us_text(k.est_time_us) + " µs", esc(k.cost.bound),
              k.measured ? us_text(k.measured->time_us) + " µs" : "<span class=\"dim\">—</span>"});
  s += row({"<b>total</b>", "", "", std::to_string(p.tes), "", std::to_string(p.grid_syncs), "",
            flops_text(p.flops), bytes_text(p.dram_bytes), "",
            "<b>" + us_text(p.est_time_us) + " µs</b>", "",
            p.measurement ? us_text(p.measurement->total_us) + " µs" : ""});
  s += "</table>\n";
  s += "<div class=\"chart\">" + kernel_time_svg(p) + "</div>\n";
  s += "<h3>Kernel by kernel</h3>\n<p class=\"note\">Why each kernel starts where it does and why "
       "each TE joined it (cuts, fusions, epilogues, views, decisions), its stages, and its CUDA "
       "C (click to open).</p>\n";
  for (const ReportKernel& k : p.kernels) s += kernel_block(p, pi, k, code);
  s += "</section>\n";
  return s;
}

}  // namespace

const std::string& report_css() {
  static const std::string css = "\n" + std::string(resources::report_css);
  return css;
}

std::string highlight_cuda(const std::string& src) {
  std::string out;
  out.reserve(src.size() * 5 / 4);
  auto span = [&](const char* cls, const std::string& text) {
    out += "<span class=\"";
    out += cls;
    out += "\">";
    out += esc(text);
    out += "</span>";
  };
  const size_t n = src.size();
  bool line_start = true;
  for (size_t i = 0; i < n;) {
    char c = src[i];
    if (c == '\n') {
      out += c;
      ++i;
      line_start = true;
      continue;
    }
    if (line_start && (c == ' ' || c == '\t')) {
      out += c;
      ++i;
      continue;
    }
    if (line_start && c == '#') {
      size_t end = src.find('\n', i);
      if (end == std::string::npos) end = n;
      span("p", src.substr(i, end - i));
      i = end;
      continue;
    }
    line_start = false;
    if (c == '/' && i + 1 < n && src[i + 1] == '/') {
      size_t end = src.find('\n', i);
      if (end == std::string::npos) end = n;
      span("c", src.substr(i, end - i));
      i = end;
      continue;
    }
    if (c == '/' && i + 1 < n && src[i + 1] == '*') {
      size_t end = src.find("*/", i + 2);
      end = end == std::string::npos ? n : end + 2;
      span("c", src.substr(i, end - i));
      i = end;
      continue;
    }
    if (c == '"' || c == '\'') {
      size_t j = i + 1;
      while (j < n && src[j] != c && src[j] != '\n') j += src[j] == '\\' ? 2 : 1;
      j = std::min(n, j + 1);
      span("s", src.substr(i, j - i));
      i = j;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c)) ||
        (c == '.' && i + 1 < n && std::isdigit(static_cast<unsigned char>(src[i + 1])))) {
      size_t j = i;
      while (j < n &&
             (is_ident(src[j]) || src[j] == '.' ||
              ((src[j] == '+' || src[j] == '-') && (src[j - 1] == 'e' || src[j - 1] == 'E'))))
        ++j;
      span("n", src.substr(i, j - i));
      i = j;
      continue;
    }
    if (is_ident(c)) {
      size_t j = i;
      while (j < n && is_ident(src[j])) ++j;
      std::string word = src.substr(i, j - i);
      if (cuda_keywords().count(word))
        span("k", word);
      else if (cuda_types().count(word))
        span("t", word);
      else if (cuda_builtins().count(word))
        span("b", word);
      else
        out += word;  // identifiers need no escaping
      i = j;
      continue;
    }
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      default:
        out += c;
    }
    ++i;
  }
  return out;
}

std::string report_html(const Report& r, const HtmlOptions& options) {
  CodeSink code;
  size_t cuda_bytes = 0;
  for (const ReportPlan& p : r.plans)
    for (const ReportKernel& k : p.kernels)
      for (const ReportLaunch& l : k.launches) cuda_bytes += l.cuda.size();
  code.pack = cuda_bytes > options.pack_code_over;
  std::string title = r.model.name + " — Souffle Explorer report";
  std::string s = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  s += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n";
  s += "<title>" + esc(title) + "</title>\n<style>" + report_css() + "</style>\n</head>\n<body>\n";
  s += "<header>\n<h1>" + esc(title) + "</h1>\n";
  std::string labels;
  for (const ReportPlan& p : r.plans) labels += (labels.empty() ? "" : ", ") + esc(p.label);
  s += fmt::format("<p>Plans: {} · GPU spec {} · {} · generated {}</p>\n", labels,
                   esc(r.environment.gpu.name), esc(r.environment.generator),
                   esc(r.environment.generated));
  s += "</header>\n<nav class=\"toc\"><a href=\"#model\">Model</a><a href=\"#environment\">"
       "Environment</a><a href=\"#plans\">Plans compared</a>";
  if (r.comparison) s += "<a href=\"#comparison\">Comparison</a>";
  for (size_t i = 0; i < r.plans.size(); ++i)
    s += "<a href=\"#" + plan_anchor(i) + "\">" + esc(r.plans[i].label) + "</a>";
  s += "<button class=\"tool\" type=\"button\" id=\"open-code\">open all CUDA</button>"
       "<button class=\"tool\" type=\"button\" id=\"close-code\">close all CUDA</button>";
  s += "</nav>\n";
  s += model_section(r);
  s += environment_section(r);
  s += plans_section(r);
  s += comparison_section(r);
  for (size_t i = 0; i < r.plans.size(); ++i) s += plan_section(r, i, code);
  s += "<footer class=\"note\"><p>Made by " + esc(r.environment.generator) +
       ". This page needs no network and no other file.";
  if (code.pack)
    s += fmt::format(
        " Its {} CUDA listings ({:.1f} MB) are packed into the page and unpacked when opened "
        "(open them all before printing).",
        code.packed.size(), cuda_bytes / 1e6);
  s += "</p></footer>\n";
  if (code.pack) {
    std::string joined;
    for (size_t i = 0; i < code.packed.size(); ++i) joined += (i ? "\x01" : "") + code.packed[i];
    s += "<script type=\"application/octet-stream\" id=\"packed-code\">" + base64(deflate(joined)) +
         "</script>\n";
  }
  // The only script: opens or closes every CUDA listing at once, and unpacks packed listings
  // (a location hash of #open-all-code opens them all on load).
  s += "<script>\n";
  s += resources::report_js;
  s += "</script>\n";
  s += "</body>\n</html>\n";
  return s;
}

}  // namespace souffle::report
