#include "core/session/load.h"

#include <algorithm>
#include <chrono>

#include "core/lower/lower.h"
#include "core/te/verify.h"

namespace souffle {
namespace {
ConstTensorPtr convert(const TensorData& d, DType to) {
  auto t = std::make_shared<TensorData>(to, d.shape());
  for (int64_t i = 0; i < d.numel(); ++i)
    if (is_float(to))
      t->set_f64(i, d.get_f64(i));
    else
      t->set_i64(i, d.get_i64(i));
  return t;
}

/// The half of loading after the importer: bind inputs, infer and fold, lower, verify.
LoadedModel finish_load(onnx_import::ImportResult r, const std::string& path,
                        bool report_unsupported, const InputBindings& bind,
                        std::chrono::steady_clock::time_point t0) {
  LoadedModel m;
  m.path = path;
  m.onnx_nodes = r.graph.nodes.size();
  m.warnings = std::move(r.warnings);
  m.graph = std::move(r.graph);
  for (const auto& [name, data] : bind) {
    auto it = std::find(m.graph.inputs.begin(), m.graph.inputs.end(), name);
    if (it == m.graph.inputs.end())
      throw UserError(path, "", "no model input named '" + name + "'");
    graph::Value& v = m.graph.value(name);
    if (v.type.shape != data->shape())
      throw UserError(path, "",
                      "input '" + name + "' is " + graph::type_str(v.type) +
                          ", the value bound to it " + shape_str(data->shape()));
    v.constant = data->dtype() == v.type.dtype ? data : convert(*data, v.type.dtype);
    m.graph.inputs.erase(it);
  }
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

}  // namespace

LoadedModel load_model(const std::string& path, const onnx_import::ImportOptions& options,
                       bool report_unsupported, const InputBindings& bind) {
  auto t0 = std::chrono::steady_clock::now();
  return finish_load(onnx_import::import_model(path, options), path, report_unsupported, bind, t0);
}

LoadedModel load_model_bytes(std::string_view bytes, const std::string& file,
                             const onnx_import::ImportOptions& options, bool report_unsupported,
                             const InputBindings& bind) {
  auto t0 = std::chrono::steady_clock::now();
  return finish_load(onnx_import::import_model_bytes(bytes, file, options), file,
                     report_unsupported, bind, t0);
}

}  // namespace souffle
