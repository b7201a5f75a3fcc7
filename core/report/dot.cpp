#include "core/report/dot.h"

#include <fmt/format.h>

namespace souffle::report {

namespace {

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

/// Long ONNX names ("/encoder/layer.0/attention/self/query/MatMul") keep their last parts.
std::string shorten(const std::string& s, size_t max = 40) {
  if (s.size() <= max) return s;
  return "…" + s.substr(s.size() - (max - 1));
}

void write_node(std::string& out, size_t i, const DrawGraph::Node& n, const char* indent) {
  std::string label = n.subtitle.empty() ? n.title : n.title + "\n" + shorten(n.subtitle);
  out += fmt::format("{}n{} [label={}, fillcolor={}, shape={}", indent, i, quote(label),
                     quote(n.fill), n.shape);
  if (n.dashed) out += ", style=\"dashed,filled\"";
  if (!n.tooltip.empty()) out += ", tooltip=" + quote(n.tooltip);
  if (n.highlight) out += ", color=\"#d62728\", penwidth=3";
  out += "];\n";
}

}  // namespace

DrawGraph plan_graph(const Report& r, const ReportPlan* plan) {
  DrawGraph g;
  std::map<int, int> cluster_of;
  if (plan)
    for (const ReportKernel& k : plan->kernels) {
      cluster_of[k.id] = static_cast<int>(g.clusters.size());
      std::string label = fmt::format("K{} · {} · {:.1f} µs est.", k.id, k.kind, k.est_time_us);
      if (k.grid_syncs > 0) label += fmt::format(" · {} syncs", k.grid_syncs);
      g.clusters.push_back({label, kernel_colour(k.id)});
    }
  // Which kernel's cluster each split node sits in: single-kernel nodes first, then a split
  // node goes to one of its kernels that has no box yet.
  std::map<std::string, int> home;
  std::map<int, int> boxes;
  if (plan) {
    for (const auto& [node, ks] : plan->node_kernels)
      if (ks.size() == 1) {
        home[node] = ks.front();
        ++boxes[ks.front()];
      }
    for (const ReportGraph::Node& n : r.graph.nodes) {
      auto it = plan->node_kernels.find(n.name);
      if (n.kind != "op" || it == plan->node_kernels.end() || it->second.size() < 2) continue;
      int pick = it->second.front();
      for (int k : it->second)
        if (boxes[k] == 0) {
          pick = k;
          break;
        }
      home[n.name] = pick;
      ++boxes[pick];
    }
  }
  std::map<int, int> stand_in_for;  // kernel without a box -> the box of a node it computes
  for (const ReportGraph::Node& n : r.graph.nodes) {
    DrawGraph::Node d;
    const int box = static_cast<int>(g.nodes.size());
    if (n.kind == "op") {
      d.title = n.op_type;
      d.subtitle = n.name;
      d.tooltip = n.name + (n.type.empty() ? "" : " → " + n.type);
      if (plan) {
        auto it = plan->node_kernels.find(n.name);
        if (it != plan->node_kernels.end() && !it->second.empty()) {
          const int k = home.count(n.name) ? home[n.name] : it->second.front();
          d.cluster = cluster_of[k];
          d.fill = kernel_colour(k);
          std::string ks;
          for (int x : it->second) {
            ks += (ks.empty() ? "" : ", ") + fmt::format("K{}", x);
            if (boxes[x] == 0 && !stand_in_for.count(x)) stand_in_for[x] = box;
          }
          d.tooltip += " · kernel" + std::string(it->second.size() > 1 ? "s " : " ") + ks;
        } else {
          d.fill = "#f4f4f4";
          d.tooltip += " · no kernel (folded into its readers or a constant)";
        }
      }
    } else {
      d.title = n.kind;
      d.subtitle = n.name;
      d.tooltip = n.name + (n.type.empty() ? "" : ": " + n.type);
      d.shape = "ellipse";
      d.fill = n.kind == "input" ? "#e8f0fe" : "#fdecea";
    }
    g.nodes.push_back(std::move(d));
  }
  for (const ReportGraph::Edge& e : r.graph.edges) g.edges.push_back({e.from, e.to, e.label});
  for (const auto& [k, box] : stand_in_for) {
    DrawGraph::Node d;
    d.title = fmt::format("K{}", k);
    d.subtitle = "part of " + g.nodes[static_cast<size_t>(box)].subtitle;
    d.tooltip = fmt::format("kernel K{} computes part of {}", k,
                            g.nodes[static_cast<size_t>(box)].subtitle);
    d.fill = kernel_colour(k);
    d.cluster = cluster_of[k];
    d.dashed = true;
    g.edges.push_back({box, static_cast<int>(g.nodes.size()), "", true});
    g.nodes.push_back(std::move(d));
  }
  return g;
}

std::string to_dot(const DrawGraph& g, bool edge_labels) {
  std::string out = "digraph G {\n";
  out +=
      "  graph [rankdir=TB, nodesep=0.25, ranksep=0.35, fontname=\"Helvetica\", "
      "fontsize=10];\n";
  out +=
      "  node [style=\"filled\", fontname=\"Helvetica\", fontsize=9, margin=\"0.08,0.03\", "
      "height=0.3];\n";
  out += "  edge [fontname=\"Helvetica\", fontsize=7, color=\"#777777\", arrowsize=0.5];\n";
  std::vector<std::vector<size_t>> members(g.clusters.size());
  for (size_t i = 0; i < g.nodes.size(); ++i) {
    int c = g.nodes[i].cluster;
    if (c >= 0 && static_cast<size_t>(c) < g.clusters.size())
      members[static_cast<size_t>(c)].push_back(i);
    else
      write_node(out, i, g.nodes[i], "  ");
  }
  for (size_t c = 0; c < g.clusters.size(); ++c) {
    if (members[c].empty()) continue;
    out += fmt::format(
        "  subgraph cluster_{} {{\n    label={}; style=\"rounded,filled\"; color={}; "
        "fillcolor=\"#fbfbfb\"; penwidth=2; fontsize=9; labeljust=l;\n",
        c, quote(g.clusters[c].label), quote(g.clusters[c].colour));
    for (size_t i : members[c]) write_node(out, i, g.nodes[i], "    ");
    out += "  }\n";
  }
  for (const DrawGraph::Edge& e : g.edges) {
    out += fmt::format("  n{} -> n{}", e.from, e.to);
    if (e.dashed)
      out += " [style=dashed]";
    else if (edge_labels && !e.label.empty())
      out += " [label=" + quote(e.label) + "]";
    out += ";\n";
  }
  return out + "}\n";
}

std::string report_dot(const Report& r, size_t plan_index) {
  const ReportPlan* p = plan_index < r.plans.size() ? &r.plans[plan_index] : nullptr;
  std::string head =
      fmt::format("// {} — op graph{}\n", r.model.path,
                  p ? fmt::format(", kernels of the {} plan on {} as clusters", p->label, p->gpu)
                    : std::string());
  return head + to_dot(plan_graph(r, p));
}

}  // namespace souffle::report
