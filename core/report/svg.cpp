// Charts are drawn by hand as SVG (a few rectangles, lines and texts each); the graph goes through
// Graphviz, the project's layout engine, rendered to SVG by its own renderer.
#include "core/report/svg.h"

#include <fmt/format.h>
#include <graphviz/cgraph.h>
#include <graphviz/gvc.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <functional>

#include "core/report/graphviz.h"
#include "core/support/error.h"

namespace souffle::report {

namespace {

const char* plan_colour(size_t i) {
  static const char* c[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"};
  return c[i % 6];
}

std::string num(double v) {
  if (v == 0) return "0";
  double a = std::fabs(v);
  if (a >= 1e15) return fmt::format("{:.3g}P", v / 1e15);
  if (a >= 1e12) return fmt::format("{:.3g}T", v / 1e12);
  if (a >= 1e9) return fmt::format("{:.3g}G", v / 1e9);
  if (a >= 1e6) return fmt::format("{:.3g}M", v / 1e6);
  if (a >= 1e4) return fmt::format("{:.3g}k", v / 1e3);
  if (a >= 100) return fmt::format("{:.0f}", v);
  return fmt::format("{:.3g}", v);
}

/// Text element; `anchor` is start, middle or end.
std::string text(double x, double y, const std::string& s, const char* anchor = "start",
                 int size = 11, const char* extra = "") {
  return fmt::format(
      "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"{}\" text-anchor=\"{}\"{}>{}</text>\n", x, y,
      size, anchor, extra, xml_escape(s));
}

std::string svg_open(double w, double h, const std::string& label) {
  return fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" viewBox=\"0 0 {:.0f} {:.0f}\" "
      "width=\"{:.0f}\" height=\"{:.0f}\" role=\"img\" aria-label=\"{}\" "
      "font-family=\"Helvetica, Arial, sans-serif\">\n",
      w, h, w, h, xml_escape(label));
}

}  // namespace

std::string xml_escape(const std::string& s) {
  std::string out;
  out.reserve(s.size() + s.size() / 8);
  for (char c : s) switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  return out;
}

std::string dot_to_svg(const std::string& dot) {
  std::string svg;
  bool read = true;
  with_graphviz([&](GVC_t* gvc) {
    Agraph_t* g = read_dot(dot);
    if (!g) {
      read = false;
      return;
    }
    // Spline routing dominates dot's time on big graphs; polylines keep it near-linear.
    if (agnnodes(g) > 1500) {
      agattr(g, AGRAPH, const_cast<char*>("splines"), const_cast<char*>("polyline"));
      agattr(g, AGRAPH, const_cast<char*>("nslimit"), const_cast<char*>("2"));
      agattr(g, AGRAPH, const_cast<char*>("mclimit"), const_cast<char*>("0.3"));
    }
    if (gvLayout(gvc, g, "dot") == 0) {
      char* data = nullptr;
      unsigned int length = 0;
      if (gvRenderData(gvc, g, "svg", &data, &length) == 0 && data) svg.assign(data, length);
      if (data) gvFreeRenderData(data);
      gvFreeLayout(gvc, g);
    }
    agclose(g);
  });
  if (!read) throw InternalError("Graphviz could not read the report's DOT text");
  if (svg.empty()) throw InternalError("Graphviz could not lay out the report's graph");
  // Inline SVG needs neither the XML prolog, the DOCTYPE nor Graphviz's comments.
  size_t at = svg.find("<svg");
  if (at != std::string::npos) svg.erase(0, at);
  std::string out;
  out.reserve(svg.size());
  for (size_t i = 0; i < svg.size();) {
    if (svg.compare(i, 4, "<!--") == 0) {
      size_t end = svg.find("-->", i);
      if (end == std::string::npos) break;
      i = end + 3;
      while (i < svg.size() && svg[i] == '\n') ++i;
      continue;
    }
    out += svg[i++];
  }
  return out;
}

std::string roofline_svg(const Report& r) {
  const double W = 760, H = 430, L = 70, R = 170, T = 30, B = 50;
  const gpu::GpuSpec& spec = r.environment.gpu;
  const gpu::Precision prec = r.plans.empty() ? gpu::Precision::FP32 : r.plans.front().precision;
  const double peak = gpu::peak_flops(spec, prec);
  const double peak32 = gpu::peak_flops(spec, gpu::Precision::FP32);
  const double bw = spec.dram_bandwidth_gbps * 1e9;
  // Axis ranges from the points, within the roofs' interesting part.
  double xmin = 1e-2, xmax = 1e4;
  double ymin = 1e8, ymax = std::max(peak, 1e9) * 2;
  size_t skipped = 0;
  struct Point {
    double x, y;
    size_t plan;
    const ReportKernel* k;
  };
  std::vector<Point> points;
  for (size_t pi = 0; pi < r.plans.size(); ++pi)
    for (const ReportKernel& k : r.plans[pi].kernels) {
      if (k.flops <= 0 || k.dram_bytes <= 0 || k.est_time_us <= 0) {
        ++skipped;
        continue;
      }
      Point p{static_cast<double>(k.flops) / k.dram_bytes, k.flops / (k.est_time_us * 1e-6), pi,
              &k};
      if (k.measured && k.measured->time_us > 0)
        ymin = std::min(ymin, k.flops / (k.measured->time_us * 1e-6));
      if (k.measured && k.measured->dram_bytes > 0) {
        xmin = std::min(xmin, k.flops / k.measured->dram_bytes / 2);
        xmax = std::max(xmax, k.flops / k.measured->dram_bytes * 2);
      }
      points.push_back(p);
      xmin = std::min(xmin, p.x / 2);
      xmax = std::max(xmax, p.x * 2);
      ymin = std::min(ymin, p.y / 2);
    }
  xmin = std::pow(10, std::floor(std::log10(xmin)));
  xmax = std::pow(10, std::ceil(std::log10(xmax)));
  ymin = std::pow(10, std::floor(std::log10(ymin)));
  ymax = std::pow(10, std::ceil(std::log10(ymax)));
  auto X = [&](double v) {
    return L +
           (std::log10(v) - std::log10(xmin)) / (std::log10(xmax) - std::log10(xmin)) * (W - L - R);
  };
  auto Y = [&](double v) {
    return H - B -
           (std::log10(v) - std::log10(ymin)) / (std::log10(ymax) - std::log10(ymin)) * (H - T - B);
  };
  std::string s = svg_open(W, H, "Roofline");
  s += text(L, 18,
            fmt::format("Roofline on {} ({}): estimated FLOP/s per kernel", spec.name,
                        gpu::precision_name(prec)),
            "start", 13, " font-weight=\"bold\"");
  // Grid and ticks at powers of ten.
  for (double v = xmin; v <= xmax * 1.001; v *= 10) {
    s += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" "
        "stroke=\"#e5e5e5\"/>\n",
        X(v), T, H - B);
    s += text(X(v), H - B + 15, num(v), "middle", 10);
  }
  for (double v = ymin; v <= ymax * 1.001; v *= 10) {
    s += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{2:.1f}\" y2=\"{1:.1f}\" "
        "stroke=\"#e5e5e5\"/>\n",
        L, Y(v), W - R);
    s += text(L - 5, Y(v) + 3, num(v), "end", 10);
  }
  s += fmt::format(
      "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\" fill=\"none\" "
      "stroke=\"#999\"/>\n",
      L, T, W - L - R, H - T - B);
  s += text((L + W - R) / 2, H - 12, "arithmetic intensity (FLOP per DRAM byte)", "middle", 11);
  s += fmt::format(
      "<text x=\"16\" y=\"{:.1f}\" font-size=\"11\" text-anchor=\"middle\" "
      "transform=\"rotate(-90 16 {:.1f})\">FLOP/s (estimated)</text>\n",
      (T + H - B) / 2, (T + H - B) / 2);
  // Roofs: bandwidth slope up to the ridge, then flat at the peak.
  auto roof = [&](double p, const char* colour, const char* dash, const std::string& label) {
    if (p <= 0 || bw <= 0) return;
    double ridge = p / bw;
    double x0 = std::max(xmin, ymin / bw);
    std::string path = fmt::format("M{:.1f},{:.1f}", X(x0), Y(std::max(ymin, bw * x0)));
    if (ridge < xmax) path += fmt::format(" L{:.1f},{:.1f}", X(ridge), Y(p));
    path += fmt::format(" L{:.1f},{:.1f}", X(xmax), Y(std::min(p, bw * xmax)));
    s += fmt::format(
        "<path d=\"{}\" fill=\"none\" stroke=\"{}\" stroke-width=\"2\" "
        "stroke-dasharray=\"{}\"><title>{}</title></path>\n",
        path, colour, dash, xml_escape(label));
    s += text(W - R - 4, Y(p) - 5, label, "end", 10);
  };
  roof(peak, "#333", "none",
       fmt::format("peak {:.1f} TFLOP/s, DRAM {:.0f} GB/s", peak / 1e12, spec.dram_bandwidth_gbps));
  if (prec != gpu::Precision::FP32 && peak32 != peak)
    roof(peak32, "#999", "5,3", fmt::format("fp32 peak {:.1f} TFLOP/s", peak32 / 1e12));
  for (const Point& p : points) {
    const ReportKernel& k = *p.k;
    std::string tip =
        fmt::format("{} K{} ({}): {} FLOPs, {} DRAM bytes, {:.2f} µs est.{}", r.plans[p.plan].label,
                    k.id, k.ops.empty() ? k.kind : k.ops.front(), num(static_cast<double>(k.flops)),
                    num(static_cast<double>(k.dram_bytes)), k.est_time_us,
                    k.measured ? fmt::format(", {:.2f} µs measured", k.measured->time_us) : "");
    s += fmt::format(
        "<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"4\" fill=\"{}\" fill-opacity=\"0.75\" "
        "stroke=\"#fff\" stroke-width=\"0.8\"><title>{}</title></circle>\n",
        X(p.x), Y(p.y), plan_colour(p.plan), xml_escape(tip));
    if (k.measured && k.measured->time_us > 0) {
      double my = k.flops / (k.measured->time_us * 1e-6);
      // At the intensity of the bytes the counters saw, where they were read.
      double mx = k.measured->dram_bytes > 0 ? k.flops / k.measured->dram_bytes : p.x;
      s += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"7\" height=\"7\" fill=\"none\" stroke=\"{}\" "
          "stroke-width=\"1.5\"><title>{} (measured)</title></rect>\n",
          X(mx) - 3.5, Y(my) - 3.5, plan_colour(p.plan), xml_escape(tip));
    }
  }
  // Legend.
  double ly = T + 10;
  for (size_t pi = 0; pi < r.plans.size(); ++pi, ly += 18) {
    s += fmt::format("<circle cx=\"{:.1f}\" cy=\"{:.1f}\" r=\"5\" fill=\"{}\"/>\n", W - R + 18, ly,
                     plan_colour(pi));
    s += text(W - R + 28, ly + 4, r.plans[pi].label, "start", 11);
  }
  s += text(W - R + 12, ly + 8, "circles: estimates", "start", 10);
  s += text(W - R + 12, ly + 22, "squares: measured", "start", 10);
  if (skipped > 0)
    s += text(W - R + 12, ly + 40, fmt::format("{} kernels without", skipped), "start", 10) +
         text(W - R + 12, ly + 53, "FLOPs or DRAM not shown", "start", 10);
  s += "</svg>\n";
  return s;
}

std::string strategy_chart_svg(const Report& r) {
  const double W = 760, panel = 240, row = 22, top = 44;
  struct Metric {
    std::string title;
    std::function<double(const ReportPlan&)> value;
    std::function<std::string(double)> fmt;
  };
  bool measured = false;
  for (const ReportPlan& p : r.plans) measured |= p.measurement.has_value();
  std::vector<Metric> metrics = {
      {"estimated time (µs)", [](const ReportPlan& p) { return p.est_time_us; },
       [](double v) { return fmt::format("{:.1f}", v); }},
      {"kernels (launches)",
       [](const ReportPlan& p) {
         return static_cast<double>(p.launches > 0 ? p.launches : int(p.kernels.size()));
       },
       [](double v) { return fmt::format("{:.0f}", v); }},
      {"DRAM traffic (MB, est.)", [](const ReportPlan& p) { return p.dram_bytes / 1e6; },
       [](double v) { return fmt::format("{:.2f}", v); }}};
  if (measured)
    metrics[1] = {"measured time (µs)",
                  [](const ReportPlan& p) { return p.measurement ? p.measurement->total_us : 0; },
                  [](double v) { return fmt::format("{:.1f}", v); }};
  const double H = top + row * static_cast<double>(r.plans.size()) + 16;
  std::string s = svg_open(W, H, "Strategy comparison");
  s += text(8, 18, "Plans compared (estimates from the cost model unless marked measured)", "start",
            13, " font-weight=\"bold\"");
  for (size_t m = 0; m < metrics.size(); ++m) {
    const double x0 = 8 + panel * static_cast<double>(m) + 4;
    s += text(x0, 36, metrics[m].title, "start", 11, " font-weight=\"bold\"");
    double most = 0;
    for (const ReportPlan& p : r.plans) most = std::max(most, metrics[m].value(p));
    const double label_w = 90, bar_w = panel - label_w - 50;
    for (size_t pi = 0; pi < r.plans.size(); ++pi) {
      const double y = top + row * static_cast<double>(pi);
      const double v = metrics[m].value(r.plans[pi]);
      const double w = most > 0 ? v / most * bar_w : 0;
      std::string label = r.plans[pi].label;
      if (label.size() > 14) label = label.substr(0, 13) + "…";
      s += text(x0, y + 14, label, "start", 10);
      s += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"15\" fill=\"{}\">"
          "<title>{}: {}</title></rect>\n",
          x0 + label_w, y + 3, std::max(w, 0.5), plan_colour(pi), xml_escape(r.plans[pi].label),
          metrics[m].fmt(v));
      s += text(x0 + label_w + w + 4, y + 14, metrics[m].fmt(v), "start", 10);
    }
  }
  s += "</svg>\n";
  return s;
}

std::string kernel_time_svg(const ReportPlan& p, size_t max_kernels) {
  std::vector<const ReportKernel*> ks;
  for (const ReportKernel& k : p.kernels) ks.push_back(&k);
  std::stable_sort(ks.begin(), ks.end(), [](const ReportKernel* a, const ReportKernel* b) {
    return a->est_time_us > b->est_time_us;
  });
  const size_t shown = std::min(ks.size(), max_kernels);
  const double W = 760, row = 16, top = 30, label_w = 250;
  const double H = top + row * static_cast<double>(shown) + 24;
  double most = 0;
  for (size_t i = 0; i < shown; ++i) {
    most = std::max(most, ks[i]->est_time_us);
    if (ks[i]->measured) most = std::max(most, ks[i]->measured->time_us);
  }
  std::string s = svg_open(W, H, "Time per kernel");
  s += text(8, 18,
            fmt::format("Time per kernel, {} ({}{} slowest of {} by estimate)", p.label,
                        shown < ks.size() ? "the " : "", shown, ks.size()),
            "start", 13, " font-weight=\"bold\"");
  const double bar_w = W - label_w - 90;
  for (size_t i = 0; i < shown; ++i) {
    const ReportKernel& k = *ks[i];
    const double y = top + row * static_cast<double>(i);
    std::string name = fmt::format("K{} {}", k.id, k.ops.empty() ? k.kind : k.ops.front());
    if (name.size() > 44) name = name.substr(0, 20) + "…" + name.substr(name.size() - 22);
    s += text(label_w - 6, y + 11, name, "end", 10);
    const double w = most > 0 ? k.est_time_us / most * bar_w : 0;
    s += fmt::format(
        "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"12\" fill=\"{}\" "
        "stroke=\"#888\" stroke-width=\"0.5\"><title>K{}: {:.2f} µs estimated ({}-bound)</title>"
        "</rect>\n",
        label_w, y + 1, std::max(w, 0.5), kernel_colour(k.id), k.id, k.est_time_us, k.cost.bound);
    std::string value = fmt::format("{:.2f} est.", k.est_time_us);
    if (k.measured) {
      const double mw = most > 0 ? k.measured->time_us / most * bar_w : 0;
      s += fmt::format(
          "<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"4\" fill=\"#222\">"
          "<title>K{}: {:.2f} µs measured</title></rect>\n",
          label_w, y + 5, std::max(mw, 0.5), k.id, k.measured->time_us);
      value += fmt::format(", {:.2f} meas.", k.measured->time_us);
    }
    s += text(label_w + w + 4, y + 11, value, "start", 9);
  }
  s += text(label_w, H - 6, "µs; bars: estimate (cost model), black line: measured", "start", 9);
  s += "</svg>\n";
  return s;
}

}  // namespace souffle::report
