/// \file Timing files from other tools read as named times and matched to a model's ONNX nodes
/// and a plan's kernels: a CSV of name and time, Nsight Compute's CSV export, a PyTorch
/// profiler Chrome trace (modules matched by the module path the ONNX exporter writes into node
/// names), and ONNX Runtime's profile (its node names are the model's). What matches nothing is
/// listed, never dropped.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/plan/plan.h"

namespace souffle {

/// One named time of an external profile.
struct ExternalEntry {
  std::string name;    ///< as the file names it (a PyTorch module: "BertLayer_0/Linear_1")
  double time_us = 0;  ///< per call: the median over the calls the file holds
  int calls = 1;
  /// "kernel" (a GPU kernel), "node" (an ONNX node or any name of the CSV), "module" (a PyTorch
  /// module: its self time, the time of its children excluded).
  std::string kind;
  /// A PyTorch module: its position among the modules its parent called (in call order),
  /// outermost first, and its class (`Linear`).
  std::vector<int> order;
  std::string cls;
};

struct ExternalProfile {
  std::string path;
  std::string format;  ///< "csv", "nsight-compute", "pytorch-trace", "onnxruntime-profile"
  /// "GPU kernel time", "CPU time (PyTorch eager)", "ONNX Runtime node time (provider)", "as given"
  std::string time_kind;
  std::vector<ExternalEntry> entries;
};

/// Reads `path`: ONNX Runtime's profile (the JSON array of events that
/// SessionOptions.enable_profiling writes: per node its "<node>_kernel_time" summed over each
/// run, the median over the runs), a Chrome trace (JSON with "traceEvents") from the PyTorch
/// profiler, recorded with with_modules=True (module self times; on a GPU run, the kernels each
/// module launched), else Nsight Compute's CSV (`ncu --csv`, long or raw layout:
/// gpu__time_duration.sum or Duration per kernel), else a CSV of name and time (a header may name
/// the unit: time_us, time_ms, time_ns, "time (ms)"; microseconds otherwise). UserError naming the
/// file, the line and the reason for anything else.
ExternalProfile read_external_profile(const std::string& path);
/// The same for the file's contents `text`; `path` names it in errors.
ExternalProfile parse_external_profile(const std::string& text, const std::string& path);

/// An entry matched to what it stands for.
struct MatchedEntry {
  const ExternalEntry* entry = nullptr;
  std::vector<std::string> nodes;  ///< ONNX nodes it covers (a module: its nodes, not children's)
  int kernel = -1;                 ///< a plan partition's id, for a kernel of the plan
  std::string module_path;         ///< a PyTorch module's path in the ONNX names ("layers.0.query")
  std::string why;                 ///< why it matched nothing (empty when it matched)
};

struct ExternalMatch {
  std::vector<MatchedEntry> entries;      ///< in the file's order
  std::map<std::string, double> node_us;  ///< per ONNX node, its entry's time
  std::map<int, double> kernel_us;        ///< per partition id
  size_t matched = 0, unmatched = 0;
};

/// Matches `profile` to the ONNX nodes `nodes` (in graph order) and, when given, the kernels of
/// `plan` ("kernel12", "kernel12_0", "kernel12.0" name partition 12; their launches summed). A
/// CSV name matches a node by its full name, or a module path ("layers.0.query") the nodes
/// under "/layers.0/query/". An ONNX Runtime node its optimizer renamed ("<node>/MatMulAddFusion",
/// "<node>_new_reshape") matches the model node it starts with. PyTorch modules are matched level
/// by level: the children a module called, in call order, to the sub-paths of its path in the order
/// the graph first uses them (so the k-th Linear a layer calls is the k-th module path under the
/// layer). Pure.
ExternalMatch match_external_profile(const ExternalProfile& profile,
                                     const std::vector<std::string>& nodes,
                                     const plan::FusionPlan* plan);

}  // namespace souffle
