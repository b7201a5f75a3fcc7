#include "core/session/load.h"

#include <chrono>

#include "core/lower/lower.h"
#include "core/te/verify.h"

namespace souffle {

LoadedModel load_model(const std::string& path, const onnx_import::ImportOptions& options,
                       bool report_unsupported) {
  auto t0 = std::chrono::steady_clock::now();
  LoadedModel m;
  m.path = path;
  onnx_import::ImportResult r = onnx_import::import_model(path, options);
  m.onnx_nodes = r.graph.nodes.size();
  m.warnings = std::move(r.warnings);
  m.graph = std::move(r.graph);
  if (report_unsupported) {
    m.unsupported = interp::find_unsupported(m.graph);
    if (!m.unsupported.empty()) return m;
  }
  m.stats = interp::infer_and_fold(m.graph);
  graph::verify(m.graph);
  try {
    m.program = lower::lower_graph(m.graph);
  } catch (const UserError& e) {
    throw e.with_file(path);
  }
  te::verify(m.program);
  m.load_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return m;
}

}  // namespace souffle
