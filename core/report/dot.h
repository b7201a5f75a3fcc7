/// \file Graphs as Graphviz DOT: the model's op graph with each kernel a cluster, and the small
/// drawable graph type the walk-through also draws.
#pragma once

#include <string>
#include <vector>

#include "core/report/report_model.h"

namespace souffle::report {

/// A graph to draw: boxes, edges, and clusters that group boxes (a kernel, a stage).
struct DrawGraph {
  struct Node {
    std::string title;     ///< first line ("MatMul")
    std::string subtitle;  ///< second line (the node or TE name)
    std::string tooltip;   ///< shown on hover in a browser
    std::string fill = "#ffffff";
    std::string shape = "box";  ///< "box" or "ellipse" (inputs and outputs)
    int cluster = -1;           ///< index into clusters, -1 for none
    bool highlight = false;     ///< drawn with a thick red outline
    bool dashed = false;        ///< a stand-in (a kernel with no box of its own)
  };
  struct Edge {
    int from = 0, to = 0;
    std::string label;
    bool dashed = false;
  };
  struct Cluster {
    std::string label, colour;
  };
  std::vector<Node> nodes;
  std::vector<Edge> edges;
  std::vector<Cluster> clusters;
};

/// The op graph of `r`, each box filled with the colour of its kernel in `plan` and grouped into
/// one cluster per kernel. A node split over kernels sits in one of them (one that has no other
/// box, where there is one) and its tooltip names them all; a kernel left without a box gets a
/// dashed stand-in joined to the node it computes part of. Without a plan, no clusters.
DrawGraph plan_graph(const Report& r, const ReportPlan* plan);

/// DOT text of `g`; `edge_labels` writes each edge's tensor type.
std::string to_dot(const DrawGraph& g, bool edge_labels = true);

/// The report's DOT file: the op graph with the kernels of plan `plan_index` as clusters.
std::string report_dot(const Report& r, size_t plan_index = 0);

}  // namespace souffle::report
