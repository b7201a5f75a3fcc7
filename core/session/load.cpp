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
/// Binds a sequence/optional input: its tensors become constants "<name>[i]" and the input a
/// composite of them. A file cannot tell an optional of one tensor from a sequence of one, so
/// the model's declared kind decides.
void bind_composite(graph::Graph& g, const std::string& name, graph::Composite::Kind declared,
                    const graph::DataValue& value) {
  using Kind = graph::Composite::Kind;
  graph::Composite c;
  c.kind = declared;
  if (value.is_tensor()) {
    if (declared != Kind::Optional)
      throw UserError(g.source_file, "",
                      "input '" + name + "' is a sequence, the value bound to it a tensor");
    c.has_value = true;
  } else if (declared == Kind::Sequence) {
    if (*value.composite != Kind::Sequence)
      throw UserError(
          g.source_file, "",
          "input '" + name + "' is a sequence, the value bound to it an " + value.describe());
  } else if (*value.composite == Kind::Optional) {
    c.has_value = value.has_value;
    c.holds_sequence = value.holds_sequence;
  } else {
    if (value.tensors.size() > 1)
      throw UserError(
          g.source_file, "",
          "input '" + name + "' is an optional, the value bound to it a " + value.describe());
    c.has_value = value.tensors.size() == 1;
  }
  for (size_t i = 0; i < value.tensors.size(); ++i) {
    std::string elem = name + "[" + std::to_string(i) + "]";
    while (g.has_value(elem)) elem += "'";
    graph::Value ev;
    ev.name = elem;
    ev.constant = value.tensors[i];
    ev.type = {value.tensors[i]->dtype(), value.tensors[i]->shape()};
    ev.type_known = true;
    g.values.emplace(elem, std::move(ev));
    c.elements.push_back(elem);
  }
  g.values.erase(name);
  g.composites[name] = std::move(c);
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
  for (const auto& [name, value] : bind) {
    auto it = std::find(m.graph.inputs.begin(), m.graph.inputs.end(), name);
    if (it == m.graph.inputs.end())
      throw UserError(path, "", "no model input named '" + name + "'");
    graph::Value& v = m.graph.value(name);
    if (v.declared_composite) {
      bind_composite(m.graph, name, *v.declared_composite, value);
      m.graph.inputs.erase(it);
      continue;
    }
    if (!value.is_tensor() || value.tensors.size() != 1)
      throw UserError(
          path, "",
          "input '" + name + "' is a tensor, the value bound to it a " + value.describe());
    const ConstTensorPtr& data = value.tensors[0];
    // Dims declared without a size (symbolic) take the bound value's size.
    if (v.type.shape.size() == data->shape().size() && v.free_dims.size() == v.type.shape.size())
      for (size_t d = 0; d < v.type.shape.size(); ++d)
        if (v.free_dims[d]) v.type.shape[d] = data->shape()[d];
    if (v.type.shape != data->shape())
      throw UserError(path, "",
                      "input '" + name + "' is " + graph::type_str(v.type) +
                          ", the value bound to it " + shape_str(data->shape()));
    v.constant = data->dtype() == v.type.dtype ? data : convert(*data, v.type.dtype);
    m.graph.inputs.erase(it);
  }
  for (const std::string& in : m.graph.inputs)
    if (m.graph.value(in).declared_composite)
      throw UserError(path, "",
                      "input '" + in + "' is a " +
                          (*m.graph.value(in).declared_composite == graph::Composite::Kind::Sequence
                               ? "sequence"
                               : "optional") +
                          ": sequences and optionals fold away at compile time, so its value "
                          "must be a constant (bound to the model, as conformance does from the "
                          "test data)");
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
