#include "core/report/timeline_html.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "core/report/svg.h"

namespace souffle::report {

namespace {

std::string stage_colour(int stage) {
  // Neighbouring stages far apart on the colour wheel, so adjacent spans stand apart.
  const int hue = (stage * 137) % 360;
  return fmt::format("hsl({},55%,62%)", hue);
}

std::string wait_label(loop::TimelineWait w) {
  switch (w) {
    case loop::TimelineWait::BlockBarrier:
      return "block barrier";
    case loop::TimelineWait::FlagWait:
      return "flag wait";
    case loop::TimelineWait::GridBarrier:
      return "grid barrier";
    default:
      return "wait";
  }
}

std::string anchor_id(const std::string& kernel) {
  std::string id = "tl-";
  for (char c : kernel) id += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
  return id;
}

/// A tick step of 1, 2 or 5 times a power of ten giving about `n` ticks over `span`.
double tick_step(double span, int n) {
  if (span <= 0) return 1;
  const double raw = span / n;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (raw <= m * p) return m * p;
  return 10 * p;
}

std::string fixed(double v) {
  return v >= 100 ? fmt::format("{:.0f}", v)
         : v >= 1 ? fmt::format("{:.2f}", v)
                  : fmt::format("{:.3f}", v);
}

std::string row(std::initializer_list<std::string> cells, const char* tag = "td") {
  std::string s = "<tr>";
  for (const std::string& c : cells) s += fmt::format("<{0}>{1}</{0}>", tag, c);
  return s + "</tr>\n";
}

}  // namespace

std::string timeline_svg(const ReportTimeline& rt, int kernel_id) {
  const KernelTimeline& t = rt.records;
  const TimelineAnalysis& a = rt.analysis;
  const char* row_word = t.emulated ? "block" : "SM";
  // Rows: SMs (blocks on the emulator), in order; spans per row.
  std::map<int64_t, std::vector<const TimelineSpan*>> rows;
  for (const TimelineSpan& sp : t.spans) rows[sp.sm].push_back(&sp);
  size_t per_row = 1;
  for (const auto& [sm, v] : rows) per_row = std::max(per_row, v.size());
  const size_t shown =
      std::min({rows.size(), kTimelineMaxRows, std::max<size_t>(1, kTimelineMaxSpans / per_row)});
  double end = 0;
  for (const TimelineSpan& sp : t.spans) end = std::max(end, sp.end_us);
  if (end <= 0) end = 1;

  const double W = 900, L = 70, R = 16, top = 40;
  const double rh = shown > 32 ? 8 : 14;
  const double plot_w = W - L - R;
  const double H = top + rh * static_cast<double>(shown) + 52;
  auto x_of = [&](double us) { return L + us / end * plot_w; };
  const std::string id = anchor_id(t.kernel);
  const std::string unit = t.emulated ? "emulated µs" : "µs";

  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart timeline\" viewBox=\"0 0 {:.0f} "
      "{:.0f}\" width=\"{:.0f}\" height=\"{:.0f}\" role=\"img\" aria-label=\"Timeline of {}\" "
      "font-family=\"Helvetica, Arial, sans-serif\">\n",
      W, H, W, H, xml_escape(t.kernel));
  s += fmt::format(
      "<defs><pattern id=\"{}-hatch\" patternUnits=\"userSpaceOnUse\" width=\"4\" height=\"4\" "
      "patternTransform=\"rotate(45)\"><rect width=\"4\" height=\"4\" fill=\"#f4f4f4\"/>"
      "<line x1=\"0\" y1=\"0\" x2=\"0\" y2=\"4\" stroke=\"#999\" stroke-width=\"1.5\"/>"
      "</pattern></defs>\n",
      id);
  s += fmt::format(
      "<text x=\"8\" y=\"18\" font-size=\"13\" font-weight=\"bold\">Timeline of K{} "
      "<tspan font-family=\"monospace\">{}</tspan>{}</text>\n",
      kernel_id, xml_escape(t.kernel), t.emulated ? " (emulated: the emulator's cost model)" : "");
  s += fmt::format(
      "<text x=\"8\" y=\"32\" font-size=\"10\" fill=\"#555\">one row per {}; {} of {} rows shown; "
      "{}; hatched: waits; dashed lines: grid barriers and flag waits where the last block "
      "left</text>\n",
      row_word, shown, rows.size(), xml_escape(t.sample_note()));

  // Time axis and grid.
  const double step = tick_step(end, 8);
  const double axis_y = top + rh * static_cast<double>(shown);
  for (double v = 0; v <= end * 1.0001; v += step) {
    const double x = x_of(v);
    s += fmt::format(
        "<line x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" stroke=\"#e4e4e4\"/>"
        "<text x=\"{0:.1f}\" y=\"{3:.1f}\" font-size=\"9\" text-anchor=\"middle\">{4}</text>\n",
        x, top, axis_y + 3, axis_y + 13, fixed(v));
  }
  s += fmt::format(
      "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"10\" text-anchor=\"middle\">{}</text>\n",
      L + plot_w / 2, axis_y + 28,
      xml_escape(t.emulated ? "emulated µs from the kernel's first record (the emulator's cost "
                              "model at a nominal 1 GHz, not GPU time)"
                            : "µs from the kernel's first record (" + t.time_base + ")"));

  // Spans.
  size_t r = 0;
  for (const auto& [sm, spans] : rows) {
    if (r == shown) break;
    const double y = top + rh * static_cast<double>(r);
    s += fmt::format(
        "<text x=\"{:.1f}\" y=\"{:.1f}\" font-size=\"{}\" text-anchor=\"end\">{} {}</text>\n",
        L - 4, y + rh - 2, rh > 10 ? 9 : 7, row_word, sm);
    for (const TimelineSpan* sp : spans) {
      const double x = x_of(sp->begin_us);
      const double w = std::max(0.4, x_of(sp->end_us) - x);
      const bool work = sp->wait == loop::TimelineWait::None;
      const std::string name =
          static_cast<size_t>(sp->stage) < t.stage_names.size() ? t.stage_names[sp->stage] : "";
      const std::string what =
          work ? fmt::format("stage {} {}", sp->stage, name)
               : fmt::format("{} before stage {}", wait_label(sp->wait), sp->stage);
      s += fmt::format(
          "<rect class=\"{}\" data-stage=\"{}\" x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" "
          "height=\"{:.1f}\" fill=\"{}\"><title>{}; block {}: {}–{} {}</title></rect>\n",
          work ? "tl-stage" : "tl-wait", sp->stage, x, y + 1, w, rh - 2,
          work ? stage_colour(sp->stage) : "url(#" + id + "-hatch)", xml_escape(what), sp->block,
          fixed(sp->begin_us), fixed(sp->end_us), unit);
    }
    ++r;
  }
  // Grid barriers and flag waits: where their last waiter left.
  std::map<int, std::pair<loop::TimelineWait, double>> lines;
  for (const TimelineSpan& sp : t.spans)
    if (sp.wait == loop::TimelineWait::GridBarrier || sp.wait == loop::TimelineWait::FlagWait) {
      auto [it, fresh] = lines.try_emplace(sp.stage, sp.wait, sp.end_us);
      it->second.second = std::max(it->second.second, sp.end_us);
    }
  for (const auto& [stage, kw] : lines)
    s += fmt::format(
        "<line class=\"tl-barrier\" x1=\"{0:.1f}\" y1=\"{1:.1f}\" x2=\"{0:.1f}\" y2=\"{2:.1f}\" "
        "stroke=\"#c0392b\" stroke-width=\"1\" stroke-dasharray=\"3,2\"><title>{3} before stage "
        "{4}: the last block left at {5} {6}</title></line>\n",
        x_of(kw.second), top, axis_y, wait_label(kw.first), stage, fixed(kw.second), unit);
  s += "</svg>\n";
  (void)a;
  return s;
}

std::string timeline_html(const ReportTimeline& rt, int kernel_id) {
  const KernelTimeline& t = rt.records;
  const TimelineAnalysis& a = rt.analysis;
  const std::string unit = t.emulated ? "emulated µs" : "µs";
  std::string s = fmt::format("<div class=\"timeline\" id=\"{}\">\n", anchor_id(t.kernel));
  s += fmt::format(
      "<h5>Timeline of <code>{}</code>{}</h5>\n<p class=\"figs\">Clock: {}. {} from "
      "<code>{}</code>; "
      "{} recorded. Span {} {}; of the recorded blocks' time {:.0f}% work, {:.0f}% waiting.</p>\n",
      xml_escape(t.kernel), t.emulated ? " (emulated)" : " (measured)", xml_escape(a.time_base),
      t.emulated ? "Records of the CPU emulator" : "Records of a GPU run", xml_escape(t.file),
      xml_escape(a.sample), fixed(a.span_us), unit, 100 * (1 - a.wait_share()),
      100 * a.wait_share());
  s += timeline_svg(rt, kernel_id);

  constexpr size_t kShown = 40;
  const bool fold = a.stages.size() > kShown;
  s += fmt::format("<details class=\"sites\"{}><summary>{} stages timed ({})</summary>\n",
                   fold ? "" : " open", a.stages.size(), unit);
  s += "<table class=\"grid tl-stages\">\n";
  s += row({"stage", "name", "blocks", "median", "min", "max", "slowest block", "estimate"}, "th");
  for (size_t i = 0; i < a.stages.size(); ++i) {
    const StageTiming& st = a.stages[i];
    const bool slowest = static_cast<int>(i) == a.slowest_stage;
    s += fmt::format(
        "<tr{}><td>{}</td><td><code>{}</code></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>"
        "<td>{}</td><td>{}</td></tr>\n",
        slowest ? " class=\"slowest\"" : "", st.stage, xml_escape(st.name), st.blocks,
        fixed(st.median_us), fixed(st.min_us), fixed(st.max_us), st.slowest_block,
        st.est_us >= 0 ? fixed(st.est_us) : "—");
  }
  s += "</table></details>\n";
  if (!a.waits.empty()) {
    const bool fold_w = a.waits.size() > kShown;
    s += fmt::format("<details class=\"sites\"{}><summary>{} waits between stages ({})</summary>\n",
                     fold_w ? "" : " open", a.waits.size(), unit);
    s += "<table class=\"grid tl-waits\">\n";
    s += row({"before stage", "kind", "blocks", "total", "longest", "straggler (its last stage)"},
             "th");
    for (size_t i = 0; i < a.waits.size(); ++i) {
      const WaitTiming& w = a.waits[i];
      const bool longest = static_cast<int>(i) == a.longest_wait;
      s += fmt::format(
          "<tr{}><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
          longest ? " class=\"slowest\"" : "", w.before_stage, wait_label(w.kind), w.blocks,
          fixed(w.total_us), fixed(w.max_us),
          w.straggler >= 0 ? fmt::format("block {} (stage {})", w.straggler, w.straggler_stage)
                           : "—");
    }
    s += "</table></details>\n";
  }
  s += "</div>\n";
  return s;
}

}  // namespace souffle::report
