// The walk-through pages: the step-through's texts and sentences (session/pipeline_steps), and
// for each step the graph it read and the graph it produced, drawn by Graphviz.
#include "core/report/steps.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <unordered_map>

#include "core/analysis/analysis.h"
#include "core/plan/horizontal.h"
#include "core/report/dot.h"
#include "core/report/html.h"
#include "core/report/lesson.h"
#include "core/report/report_model.h"
#include "core/report/svg.h"
#include "core/session/load.h"
#include "core/session/pipeline_steps.h"
#include "core/support/error.h"
#include "core/te/mutator.h"
#include "core/te/printer.h"

namespace souffle::report {

namespace {

std::string esc(const std::string& s) {
  return xml_escape(s);
}

bool in_layer(const std::string& node, const std::string& layer) {
  return layer.empty() || node.find(layer) != std::string::npos;
}

/// The op graph of `g`, only the nodes of the layer; `highlight` nodes outlined.
DrawGraph op_draw(const graph::Graph& g, const std::string& layer,
                  const std::set<std::string>& highlight) {
  DrawGraph d;
  std::unordered_map<std::string, int> producer;
  if (layer.empty())
    for (const std::string& in : g.inputs) {
      producer[in] = static_cast<int>(d.nodes.size());
      DrawGraph::Node n;
      n.title = "input";
      n.subtitle = in;
      n.shape = "ellipse";
      n.fill = "#e8f0fe";
      d.nodes.push_back(n);
    }
  for (const graph::Node& node : g.nodes) {
    if (!in_layer(node.name, layer)) continue;
    const int box = static_cast<int>(d.nodes.size());
    DrawGraph::Node n;
    n.title = node.op_type;
    n.subtitle = node.name;
    n.tooltip = node.name;
    n.fill = node.op_type == "Constant" ? "#f1f1f1" : "#ffffff";
    n.highlight = highlight.count(node.name) != 0;
    d.nodes.push_back(n);
    std::set<int> seen;
    for (const std::string& in : node.inputs) {
      auto it = producer.find(in);
      if (in.empty() || it == producer.end() || !seen.insert(it->second).second) continue;
      d.edges.push_back({it->second, box, ""});
    }
    for (const std::string& o : node.outputs)
      if (!o.empty()) producer[o] = box;
  }
  return d;
}

struct TeStyle {
  std::function<std::string(size_t)> fill;  ///< per op index
  std::function<int(size_t)> cluster;       ///< per op index, -1 for none
  std::vector<DrawGraph::Cluster> clusters;
  std::set<std::string> highlight;  ///< TE names
  std::set<size_t> only;            ///< when not empty, only these ops
};

/// The TE graph of `p` (ops of the layer; program inputs as ellipses for the whole model).
DrawGraph te_draw(const te::TeProgram& p, const std::string& layer, const TeStyle& style) {
  DrawGraph d;
  d.clusters = style.clusters;
  std::unordered_map<const te::TensorNode*, int> producer;
  if (layer.empty() && style.only.empty())
    for (const te::Tensor& in : p.inputs) {
      producer[in.get()] = static_cast<int>(d.nodes.size());
      DrawGraph::Node n;
      n.title = "input";
      n.subtitle = in->name;
      n.shape = "ellipse";
      n.fill = "#e8f0fe";
      d.nodes.push_back(n);
    }
  for (size_t i = 0; i < p.ops.size(); ++i) {
    const te::ComputeOp& op = *p.ops[i];
    if (!style.only.empty() && style.only.count(i) == 0) continue;
    if (!in_layer(op.origin.node, layer)) continue;
    const int box = static_cast<int>(d.nodes.size());
    DrawGraph::Node n;
    n.title = op.origin.op_type.empty() ? std::string("TE") : op.origin.op_type;
    if (op.reduce != te::ReduceKind::None)
      n.title += std::string(" · ") + te::reduce_name(op.reduce);
    n.subtitle = op.name;
    n.tooltip = op.name + " (from " + op.origin.node + ")";
    n.fill = style.fill ? style.fill(i) : "#ffffff";
    n.cluster = style.cluster ? style.cluster(i) : -1;
    n.highlight = style.highlight.count(op.name) != 0;
    d.nodes.push_back(n);
    std::set<int> sources;
    auto collect = [&](const te::Expr& root) {
      if (!root.defined()) return;
      te::for_each_node(root, [&](const te::Expr& e) {
        if (const te::Read* r = e.as<te::Read>()) {
          auto it = producer.find(r->tensor.get());
          if (it != producer.end()) sources.insert(it->second);
        }
      });
    };
    collect(op.body);
    collect(op.init);
    for (int s : sources) d.edges.push_back({s, box, ""});
    producer[op.output.get()] = box;
  }
  return d;
}

std::string graph_block(const DrawGraph& g, size_t max_nodes, const std::string& what) {
  if (g.nodes.empty()) return "<p class=\"note\">" + esc(what) + ": nothing to draw.</p>\n";
  if (g.nodes.size() > max_nodes)
    return fmt::format(
        "<p class=\"note\">{}: {} boxes, too many to draw here; choose a layer "
        "(<code>--layer NAME</code>).</p>\n",
        esc(what), g.nodes.size());
  return "<div class=\"graph\">" + dot_to_svg(to_dot(g, false)) + "</div>\n";
}

std::string text_block(const std::string& text, bool cuda) {
  if (text.empty()) return "<p class=\"note\">(none)</p>\n";
  return "<pre><code>" + (cuda ? highlight_cuda(text) : esc(text)) + "</code></pre>\n";
}

/// The TEs of `p` whose ONNX node is in the layer, printed one after another.
std::string layer_text(const te::TeProgram& p, const std::string& layer, size_t max) {
  std::string out = fmt::format("TEs of the nodes matching \"{}\":\n\n", layer);
  for (const te::Op& op : p.ops)
    if (in_layer(op->origin.node, layer)) {
      out += te::print(*op) + "\n";
      if (out.size() > max) {
        out += "… (cut here)\n";
        break;
      }
    }
  return out;
}

/// A printed graph's headings and the lines that name the layer (its nodes, constants and
/// values).
std::string layer_graph_text(const std::string& printed, const std::string& layer) {
  std::string out = fmt::format("the lines naming \"{}\":\n\n", layer);
  size_t at = 0;
  while (at < printed.size()) {
    size_t end = printed.find('\n', at);
    if (end == std::string::npos) end = printed.size();
    const std::string line = printed.substr(at, end - at);
    if (line.rfind("  ", 0) != 0 || line.find(layer) != std::string::npos) out += line + "\n";
    at = end + 1;
  }
  return out;
}

std::string page_head(const std::string& title) {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
         esc(title) + "</title>\n<style>" + report_css() + "</style>\n</head>\n<body>\n";
}

std::string steps_nav(const std::vector<StepPage>& pages, size_t here) {
  std::string s = "<nav class=\"steps-nav\">";
  for (size_t i = 0; i < pages.size(); ++i) {
    std::string label = i == 0 ? std::string("overview") : fmt::format("{} {}", i, pages[i].name);
    if (i == here)
      s += "<span class=\"here\">" + esc(label) + "</span>";
    else
      s += "<a href=\"" + esc(pages[i].file) + "\">" + esc(label) + "</a>";
  }
  return s + "</nav>\n";
}

std::string intensity_fill(analysis::Intensity k, bool view) {
  if (view) return "#eeeeee";
  return k == analysis::Intensity::Compute ? "#fbb4ae" : "#b3cde3";
}

std::string context_of(const std::string& path, const StepsOptions& o) {
  const std::string model = std::filesystem::path(path).parent_path().filename().string();
  const std::string scope =
      o.layer.empty() ? std::string("the whole model") : "layer \"" + o.layer + "\"";
  return fmt::format("{} · {} strategy · GPU spec {} · {}", esc(model.empty() ? path : model),
                     plan::strategy_name(o.strategy), esc(o.gpu.name), esc(scope));
}

/// The lesson: one page, every step in turn with what it changed, its graphs, its texts with
/// the changed lines marked, and questions whose answers are folded.
StepPage lesson_page(const PipelineWalk& walk,
                     const std::map<std::string, std::pair<std::string, std::string>>& graphs,
                     const std::string& path, const std::string& context, const std::string& base) {
  const std::string model = std::filesystem::path(path).parent_path().filename().string();
  const std::vector<PipelineStep>& steps = walk.steps;
  std::string s = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
                  esc(model + ": a lesson on the Souffle pipeline") + "</title>\n<style>" +
                  report_css() + lesson_css() + "</style>\n</head>\n<body>\n";
  s += "<header><h1>" + esc(model) + ": a lesson on the Souffle pipeline</h1><p>" + context +
       "</p></header>\n";
  s += "<p>Each step of the compiler ran for real on this model. For each: what it decided, what "
       "it changed (one line per change, with the reason and the prices it compared), the graph "
       "before and after (changed boxes outlined in red), the text before and after with the "
       "changed lines marked, and questions to discuss; open an answer once you have "
       "yours.</p>\n<nav class=\"steps-nav\">";
  for (size_t i = 0; i < steps.size(); ++i)
    s += fmt::format("<a href=\"#step-{}\">{} {}</a>", i + 1, i + 1, esc(steps[i].name));
  s += "</nav>\n";
  for (size_t i = 0; i < steps.size(); ++i) {
    const PipelineStep& st = steps[i];
    s += fmt::format("<section class=\"step\" id=\"step-{}\"><h2>Step {} of {}: {}</h2>\n", i + 1,
                     i + 1, steps.size(), esc(st.title));
    s += "<div class=\"sentence\">" + esc(st.sentence) + "</div>\n";
    if (!st.changed) s += "<p class=\"note\">This step changed nothing on this model.</p>\n";
    if (!st.sites.empty()) {
      s += fmt::format("<h3>What it changed ({})</h3>\n<ul class=\"sites\">\n", st.sites.size());
      const size_t shown = std::min<size_t>(st.sites.size(), 40);
      for (size_t k = 0; k < shown; ++k)
        s += "<li><b>" + esc(st.sites[k].label) + "</b> — " + esc(st.sites[k].reason) + "</li>\n";
      if (st.sites.size() > shown)
        s += fmt::format("<li>… and {} more</li>\n", st.sites.size() - shown);
      s += "</ul>\n";
    }
    auto g = graphs.find(st.name);
    if (!st.changed)
      s += "<p class=\"note\">(Its graphs are the step before's.)</p>\n";
    else if (g != graphs.end() && !(g->second.first.empty() && g->second.second.empty()))
      s += "<div class=\"pair\"><div><h3>graph before</h3>\n" +
           (g->second.first.empty() ? std::string("<p class=\"note\">the ONNX file on disk</p>\n")
                                    : g->second.first) +
           "</div><div><h3>graph after</h3>\n" +
           (g->second.second.empty() ? std::string("<p class=\"note\">CUDA C (below)</p>\n")
                                     : g->second.second) +
           "</div></div>\n";
    s += diff_pair_html(st.before, st.after);
    s += lesson_memory_html(st, walk);
    for (const LessonQuestion& q : lesson_questions(st, walk))
      s += "<details class=\"answer\"><summary>" + esc(q.question) + "</summary><p>" +
           esc(q.answer) + "</p></details>\n";
    s += "</section>\n";
  }
  s += "</body>\n</html>\n";
  return {"lesson", base + ".html", std::move(s)};
}

}  // namespace

std::vector<StepPage> walkthrough(const std::string& path, const StepsOptions& o,
                                  const std::string& base) {
  if (o.gpu.sm_count == 0) throw UserError("no GPU spec given for the walk-through");
  const std::string& layer = o.layer;
  // The steps, and the model and plan they describe: one run of the pipeline.
  PipelineStepOptions so;
  so.strategy = o.strategy;
  so.gpu = o.gpu;
  so.precision = o.precision;
  so.decisions = o.decisions;
  so.import = o.import;
  so.max_text = 200000;
  so.programs = true;  // the import and horizontal drawings read what those steps made
  // The kernel the build kernels and emit steps show: one of the layer's when a layer is chosen.
  so.choose = [&](const plan::FusionPlan& p) {
    if (o.partition >= static_cast<int>(p.partitions.size()))
      throw UserError(fmt::format("--kernel {}: the {} plan has {} kernels", o.partition,
                                  plan::strategy_name(o.strategy), p.partitions.size()));
    if (o.partition >= 0) return o.partition;
    int partition = -1;
    if (!layer.empty()) {
      for (const plan::Partition& k : p.partitions) {
        bool mine = std::any_of(k.ops.begin(), k.ops.end(),
                                [&](const std::string& n) { return in_layer(n, layer); });
        if (!mine) continue;
        if (partition < 0) partition = k.id;
        if (k.kind == plan::PartitionKind::Compute && k.tes.size() > 1) return k.id;
      }
    }
    return partition < 0 ? default_step_partition(p) : partition;
  };
  PipelineWalk walk = walk_pipeline(path, so);
  const LoadedModel& m = walk.result.model;
  const plan::FusionPlan& p = walk.result.plan;
  const int partition = walk.partition;
  std::vector<PipelineStep>& steps = walk.steps;
  if (!layer.empty()) {
    bool any = false;
    for (const graph::Node& n : m.graph.nodes) any |= in_layer(n.name, layer);
    if (!any)
      throw UserError(path, "",
                      "--layer " + layer + ": no ONNX node of the model has this in its name");
  }
  // The graphs and programs between the steps, for their drawings, as the pipeline made them:
  // the graph as imported (before folding), the analysis of the lowered program and the
  // program after the horizontal transformation (the lowered one where nothing transforms).
  const graph::Graph& imported = *walk.graph_of(StepGraph::Imported);
  const analysis::Analysis& a0 = p.steps->input_analysis;
  const te::TeProgram& after_h = *walk.program_of(StepGraph::Horizontal);
  std::set<std::string> h_results, v_results;
  for (const plan::TransformSite& s : p.transforms)
    if (s.applied)
      (s.kind == plan::TransformKind::Horizontal ? h_results : v_results).insert(s.result);

  std::vector<int> kernel_of(p.program.ops.size(), -1);
  TeStyle kernels;
  for (const plan::Partition& k : p.partitions) {
    for (int te : k.tes)
      kernel_of[static_cast<size_t>(te)] = static_cast<int>(kernels.clusters.size());
    kernels.clusters.push_back(
        {fmt::format("K{} · {}", k.id, plan::partition_kind_name(k.kind)), kernel_colour(k.id)});
  }
  kernels.cluster = [&](size_t i) { return kernel_of[i]; };
  kernels.fill = [&](size_t i) {
    return kernel_of[i] < 0 ? std::string("#ffffff")
                            : kernel_colour(p.partitions[static_cast<size_t>(kernel_of[i])].id);
  };

  const plan::Partition* shown =
      partition >= 0 ? &p.partitions[static_cast<size_t>(partition)] : nullptr;
  TeStyle stages;
  std::vector<int> stage_of(p.program.ops.size(), -1);
  if (shown) {
    for (size_t si = 0; si < shown->stages.size(); ++si) {
      const plan::Stage& st = shown->stages[si];
      for (int te : st.tes) stage_of[static_cast<size_t>(te)] = static_cast<int>(si);
      stages.clusters.push_back({fmt::format("stage {} · {}{}", si, plan::stage_kind_name(st.kind),
                                             st.sync_before ? " · grid sync before" : ""),
                                 kernel_colour(static_cast<int>(si))});
    }
    for (int te : shown->tes) stages.only.insert(static_cast<size_t>(te));
    stages.cluster = [&](size_t i) { return stage_of[i]; };
    stages.fill = [&](size_t i) {
      return stage_of[i] < 0 ? std::string("#ffffff") : kernel_colour(stage_of[i]);
    };
  }
  TeStyle kernel_only = stages;
  kernel_only.clusters.clear();
  kernel_only.cluster = nullptr;
  kernel_only.fill = nullptr;

  const size_t maxn = o.max_graph_nodes;
  std::map<std::string, std::pair<std::string, std::string>> graphs;  // step -> before, after
  std::set<std::string> none;
  {
    graphs["import"] = {"", graph_block(op_draw(imported, layer, none), maxn, "imported graph")};
    std::set<std::string> folded_away;
    std::set<std::string> kept;
    for (const graph::Node& n : m.graph.nodes) kept.insert(n.name);
    for (const graph::Node& n : imported.nodes)
      if (!kept.count(n.name)) folded_away.insert(n.name);
    graphs["fold"] = {graph_block(op_draw(imported, layer, folded_away), maxn,
                                  "imported graph (nodes outlined in red are folded or dead)"),
                      graph_block(op_draw(m.graph, layer, none), maxn, "folded graph")};
    TeStyle plain;
    graphs["lower"] = {graph_block(op_draw(m.graph, layer, none), maxn, "folded graph"),
                       graph_block(te_draw(m.program, layer, plain), maxn, "TE graph")};
    TeStyle by_kind;
    by_kind.fill = [&](size_t i) { return intensity_fill(a0.tes[i].kind, a0.tes[i].is_pure_view); };
    graphs["analyze"] = {graph_block(te_draw(m.program, layer, plain), maxn, "TE graph"),
                         graph_block(te_draw(m.program, layer, by_kind), maxn,
                                     "TE graph (red: compute-intensive, blue: "
                                     "memory-intensive, grey: views)")};
    TeStyle by_kind_after;
    by_kind_after.fill = [&](size_t i) {
      return intensity_fill(p.analysis.tes[i].kind, p.analysis.tes[i].is_pure_view);
    };
    graphs["re-analyze"] = {graph_block(te_draw(p.program, layer, plain), maxn, "TE graph"),
                            graph_block(te_draw(p.program, layer, by_kind_after), maxn,
                                        "TE graph (red: compute-intensive, blue: "
                                        "memory-intensive, grey: views)")};
    TeStyle hl_h;
    hl_h.highlight = h_results;
    TeStyle hl_v;
    hl_v.highlight = v_results;
    graphs["horizontal"] = {
        graph_block(te_draw(m.program, layer, plain), maxn, "TE graph"),
        graph_block(te_draw(after_h, layer, hl_h), maxn, "TE graph after (merged TEs outlined)")};
    graphs["vertical"] = {
        graph_block(te_draw(after_h, layer, plain), maxn, "TE graph"),
        graph_block(te_draw(p.program, layer, hl_v), maxn, "TE graph after (fused TEs outlined)")};
    graphs["partition"] = {
        graph_block(te_draw(p.program, layer, plain), maxn, "TE graph"),
        graph_block(te_draw(p.program, layer, kernels), maxn, "TE graph, each kernel a cluster")};
    if (shown) {
      std::string k = fmt::format("kernel {}", shown->id);
      if (!layer.empty()) k += " (the layer's part)";
      graphs["build kernels"] = {
          graph_block(te_draw(p.program, layer, kernel_only), maxn, k + "'s TEs"),
          graph_block(te_draw(p.program, layer, stages), maxn,
                      k + "'s stages (clusters) between grid syncs")};
      graphs["emit"] = {graph_block(te_draw(p.program, layer, stages), maxn, k + "'s stages"), ""};
    }
  }

  // Texts of the TE steps, the layer's TEs only when a layer is chosen.
  if (!layer.empty()) {
    const size_t max = 200000;
    for (PipelineStep& s : steps) {
      if (s.step == plan::Step::Import) s.after = layer_graph_text(s.after, layer);
      if (s.step == plan::Step::Fold) {
        s.before = layer_graph_text(s.before, layer);
        s.after = layer_graph_text(s.after, layer);
      }
      if (s.step == plan::Step::Lower) {
        s.before = layer_graph_text(s.before, layer);
        s.after = layer_text(m.program, layer, max);
      }
      if (s.step == plan::Step::Analyze) s.before = layer_text(m.program, layer, max);
      if (s.step == plan::Step::Horizontal) {
        s.before = layer_text(m.program, layer, max);
        s.after = layer_text(after_h, layer, max);
      }
      if (s.step == plan::Step::Vertical) {
        s.before = layer_text(after_h, layer, max);
        s.after = layer_text(p.program, layer, max);
      }
      if (s.step == plan::Step::Reanalyze || s.step == plan::Step::Partition)
        s.before = layer_text(p.program, layer, max);
    }
  }

  const std::string model = std::filesystem::path(path).parent_path().filename().string();
  std::string scope = layer.empty() ? std::string("the whole model") : "layer \"" + layer + "\"";
  if (o.lesson) return {lesson_page(walk, graphs, path, context_of(path, o), base)};
  std::vector<StepPage> pages;
  pages.push_back({"index", base + ".html", ""});
  for (size_t i = 0; i < steps.size(); ++i) {
    std::string slug = steps[i].name;  // "build kernels" -> "build-kernels"
    std::replace(slug.begin(), slug.end(), ' ', '-');
    pages.push_back({steps[i].name, fmt::format("{}-{}-{}.html", base, i + 1, slug), ""});
  }

  const std::string context =
      fmt::format("{} · {} strategy · GPU spec {} · {}", esc(model.empty() ? path : model),
                  plan::strategy_name(o.strategy), esc(o.gpu.name), esc(scope));
  // Index.
  {
    std::string s = page_head(model + " — the Souffle pipeline, step by step");
    s += "<header><h1>" + esc(model) + ": the Souffle pipeline, step by step</h1><p>" + context +
         "</p></header>\n";
    s += steps_nav(pages, 0);
    s += "<p>Each step of the compiler runs for real on this model; its page shows what it read "
         "and what it produced, as a graph and as text, and one sentence generated from what it "
         "decided.</p>\n<ol>\n";
    for (size_t i = 0; i < steps.size(); ++i)
      s += fmt::format("<li><a href=\"{}\"><b>{}</b></a> ({:.1f} ms): {}</li>\n",
                       esc(pages[i + 1].file), esc(steps[i].title), steps[i].ms,
                       esc(steps[i].sentence));
    s += "</ol>\n";
    if (shown)
      s += fmt::format(
          "<p class=\"note\">The build kernels and emit steps show kernel {} ({} TEs, "
          "{} stages, ONNX nodes {}{}).</p>\n",
          shown->id, shown->tes.size(), shown->stages.size(),
          esc(shown->ops.empty() ? std::string() : shown->ops.front()),
          shown->ops.size() > 1 ? fmt::format(" and {} more", shown->ops.size() - 1) : "");
    s += "</body>\n</html>\n";
    pages[0].html = std::move(s);
  }
  for (size_t i = 0; i < steps.size(); ++i) {
    const PipelineStep& st = steps[i];
    StepPage& page = pages[i + 1];
    std::string s = page_head(fmt::format("{} {}: {}", model, i + 1, st.title));
    s += fmt::format("<header><h1>Step {} of {}: {}</h1><p>{}</p></header>\n", i + 1, steps.size(),
                     esc(st.title), context);
    s += steps_nav(pages, i + 1);
    s += "<div class=\"sentence\">" + esc(st.sentence) + "</div>\n";
    s += fmt::format("<p class=\"note\">The step took {:.1f} ms.", st.ms);
    if (!st.nodes.empty()) {
      s += " ONNX nodes it decided about: ";
      for (size_t k = 0; k < st.nodes.size() && k < 8; ++k)
        s += (k ? ", " : "") + std::string("<code>") + esc(st.nodes[k]) + "</code>";
      if (st.nodes.size() > 8) s += fmt::format(" and {} more", st.nodes.size() - 8);
      s += ".";
    }
    s += "</p>\n";
    auto g = graphs.find(st.name);
    if (g != graphs.end()) {
      s += "<h2>Graph</h2>\n<div class=\"pair\"><div><h3>before</h3>\n" +
           (g->second.first.empty() ? std::string("<p class=\"note\">the ONNX file on disk</p>\n")
                                    : g->second.first) +
           "</div><div><h3>after</h3>\n" +
           (g->second.second.empty() ? std::string("<p class=\"note\">CUDA C (below)</p>\n")
                                     : g->second.second) +
           "</div></div>\n";
    }
    s += "<h2>Text</h2>\n<div class=\"pair\"><div><h3>before</h3>\n" +
         text_block(st.before, false) + "</div><div><h3>after</h3>\n" +
         text_block(st.after, st.step == plan::Step::Emit) + "</div></div>\n";
    s += steps_nav(pages, i + 1);
    s += "</body>\n</html>\n";
    page.html = std::move(s);
  }
  return pages;
}

}  // namespace souffle::report
