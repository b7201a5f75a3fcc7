#include "core/session/load.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "core/session/pipeline.h"

namespace souffle {
namespace {
/// The top-level Ifs whose condition depends on model inputs, with those inputs in order.
std::vector<std::pair<std::string, std::vector<std::string>>> input_decided_ifs(
    const graph::Graph& g) {
  std::map<std::string, const graph::Node*> producer;
  for (const graph::Node& n : g.nodes)
    for (const std::string& o : n.outputs)
      if (!o.empty()) producer[o] = &n;
  std::set<std::string> inputs(g.inputs.begin(), g.inputs.end());
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  for (const graph::Node& n : g.nodes) {
    if (n.op_type != "If" || n.inputs.empty()) continue;
    std::set<std::string> seen{n.inputs[0]}, found;
    std::vector<std::string> todo{n.inputs[0]};
    while (!todo.empty()) {
      std::string v = todo.back();
      todo.pop_back();
      if (inputs.count(v)) found.insert(v);
      auto it = producer.find(v);
      if (it == producer.end()) continue;
      for (const std::string& in : it->second->inputs)
        if (!in.empty() && seen.insert(in).second) todo.push_back(in);
    }
    if (found.empty()) continue;
    std::vector<std::string> ordered;
    for (const std::string& in : g.inputs)
      if (found.count(in)) ordered.push_back(in);
    out.emplace_back(n.name, std::move(ordered));
  }
  return out;
}

}  // namespace

interp::InferFoldStats infer_and_fold_model(graph::Graph& g) {
  std::vector<std::pair<std::string, std::vector<std::string>>> decided = input_decided_ifs(g);
  // Inputs with dims declared without a size, taken as 1: a likely cause of a failure.
  std::string unsized;
  for (const std::string& in : g.inputs) {
    const graph::Value& v = g.value(in);
    if (std::find(v.free_dims.begin(), v.free_dims.end(), true) == v.free_dims.end()) continue;
    unsized +=
        fmt::format("{}'{}' as {}", unsized.empty() ? "" : ", ", in, shape_str(v.type.shape));
  }
  try {
    return interp::infer_and_fold(g);
  } catch (const UserError& e) {
    // A node inlined from an If's branch is named "<If>/then/..." or "<If>/else/...".
    for (const auto& [name, inputs] : decided) {
      const std::string& node = e.node();
      if (node.compare(0, name.size(), name) != 0 ||
          (node.size() > name.size() && node[name.size()] != '/' && node[name.size()] != ' '))
        continue;
      std::string which, how;
      for (const std::string& in : inputs) {
        which += (which.empty() ? "'" : ", '") + in + "'";
        how += (how.empty() ? "--bind " : " --bind ") + in + "=VALUE";
      }
      std::string branch;
      if (node.compare(name.size(), 6, "/then/") == 0) branch = "its then branch";
      if (node.compare(name.size(), 6, "/else/") == 0) branch = "its else branch";
      throw UnboundControlInputs(
          UserError(e.file(), name + " (If)",
                    fmt::format("If '{}' depends on input{} {}: bind {} with {} (both branches "
                                "are built while the condition is not a constant, and {} fails "
                                "for these shapes: {}{})",
                                name, inputs.size() == 1 ? "" : "s", which,
                                inputs.size() == 1 ? "it" : "them", how,
                                branch.empty() ? "the If" : branch, node.empty() ? "" : node + ": ",
                                e.reason())),
          inputs);
    }
    if (!unsized.empty())
      throw UserError(e.file(), e.node(),
                      e.reason() + " (inputs with dims declared without a size, each taken as " +
                          "1: " + unsized + "; give their shapes with --shape NAME=D0,D1,...)");
    throw;
  }
}

namespace {
onnx_import::ImportOptions with_bindings(const onnx_import::ImportOptions& options,
                                         const InputBindings& bind) {
  onnx_import::ImportOptions o = options;
  for (const auto& [name, value] : bind) o.bind[name] = value;
  return o;
}
}  // namespace

namespace {
/// The pipeline's load steps (import, fold, lower) as load_model runs them.
PipelineOptions load_options(const onnx_import::ImportOptions& options, bool report_unsupported,
                             const InputBindings& bind) {
  PipelineOptions po;
  po.import = with_bindings(options, bind);
  po.until = Step::Lower;
  po.report_unsupported = report_unsupported;
  return po;
}
}  // namespace

LoadedModel load_model(const std::string& path, const onnx_import::ImportOptions& options,
                       bool report_unsupported, const InputBindings& bind) {
  return std::move(run_pipeline(path, load_options(options, report_unsupported, bind)).model);
}

LoadedModel load_model_bytes(std::string_view bytes, const std::string& file,
                             const onnx_import::ImportOptions& options, bool report_unsupported,
                             const InputBindings& bind) {
  return std::move(
      run_pipeline_bytes(bytes, file, load_options(options, report_unsupported, bind)).model);
}

InputBindings bind_from_data(const std::vector<std::string>& model_inputs,
                             const std::vector<std::string>& names, TestDataSet& ds) {
  if (ds.input_values.size() != model_inputs.size())
    throw UserError(
        ds.dir, "",
        fmt::format("{} inputs, the model takes {}", ds.input_values.size(), model_inputs.size()));
  InputBindings bind;
  std::vector<graph::DataValue> kept;
  for (size_t k = 0; k < model_inputs.size(); ++k) {
    if (std::find(names.begin(), names.end(), model_inputs[k]) != names.end())
      bind[model_inputs[k]] = ds.input_values[k];
    else
      kept.push_back(ds.input_values[k]);
  }
  for (const std::string& n : names)
    if (!bind.count(n)) throw UserError(ds.dir, "", "the model has no input '" + n + "'");
  ds.input_values = std::move(kept);
  ds.inputs.clear();
  for (const graph::DataValue& v : ds.input_values)
    ds.inputs.insert(ds.inputs.end(), v.tensors.begin(), v.tensors.end());
  return bind;
}

std::vector<ModelForData> load_for_data(const std::string& path,
                                        const onnx_import::ImportOptions& options,
                                        std::vector<TestDataSet> sets) {
  onnx_import::ImportOptions plain = options;
  plain.bind.clear();
  const graph::Graph file = onnx_import::import_model(path, plain).graph;
  std::vector<std::string> given;
  for (const auto& [name, value] : options.bind) given.push_back(name);
  if (!given.empty())
    for (TestDataSet& ds : sets) bind_from_data(file.inputs, given, ds);
  // The data's inputs left, in the file's order.
  std::vector<std::string> rest;
  for (const std::string& in : file.inputs)
    if (!options.bind.count(in)) rest.push_back(in);
  // Dims declared without a size take the data's (sets of the same shapes load together).
  std::vector<std::pair<std::map<std::string, Shape>, std::vector<TestDataSet>>> groups;
  for (TestDataSet& ds : sets) {
    std::map<std::string, Shape> shapes;
    for (size_t k = 0; k < rest.size() && k < ds.input_values.size(); ++k) {
      const graph::Value& v = file.value(rest[k]);
      const graph::DataValue& d = ds.input_values[k];
      if (std::find(v.free_dims.begin(), v.free_dims.end(), true) == v.free_dims.end() ||
          !d.is_tensor() || d.tensors.size() != 1 ||
          d.tensors[0]->shape().size() != v.type.shape.size())
        continue;
      shapes[rest[k]] = d.tensors[0]->shape();
    }
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& g) { return g.first == shapes; });
    if (it == groups.end()) it = groups.insert(groups.end(), {shapes, {}});
    it->second.push_back(std::move(ds));
  }
  std::vector<ModelForData> out;
  for (auto& [shapes, group] : groups) {
    onnx_import::ImportOptions o = options;
    for (const auto& [name, shape] : shapes) o.shapes[name] = shape;
    try {
      out.push_back({load_model(path, o), std::move(group), {}});
    } catch (const UnboundControlInputs& e) {
      for (TestDataSet& ds : group) {
        InputBindings bind = bind_from_data(rest, e.inputs(), ds);
        out.push_back({load_model(path, o, false, bind), {ds}, e.inputs()});
      }
    }
  }
  return out;
}

}  // namespace souffle
