#include <filesystem>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "app/cli/commands.h"
#include "core/interp/infer_fold.h"
#include "core/session/load.h"

namespace souffle::cli {

std::map<std::string, int64_t> parse_dims(const std::vector<std::string>& dims) {
  std::map<std::string, int64_t> out;
  for (const std::string& d : dims) {
    auto eq = d.find('=');
    if (eq == std::string::npos || eq == 0)
      throw UserError("--dim expects name=value, got '" + d + "'");
    try {
      size_t used = 0;
      int64_t v = std::stoll(d.substr(eq + 1), &used);
      if (used != d.size() - eq - 1 || v < 0) throw std::invalid_argument("");
      out[d.substr(0, eq)] = v;
    } catch (const std::exception&) {
      throw UserError("--dim " + d + ": the value must be a non-negative integer");
    }
  }
  return out;
}

std::map<std::string, graph::DataValue> parse_binds(const std::vector<std::string>& binds) {
  std::map<std::string, graph::DataValue> out;
  for (const std::string& b : binds) {
    auto [name, value] = onnx_import::parse_binding(b);
    if (!out.emplace(name, std::move(value)).second)
      throw UserError("--bind " + name + " is given twice");
  }
  return out;
}

std::map<std::string, Shape> parse_shapes(const std::vector<std::string>& shapes) {
  std::map<std::string, Shape> out;
  for (const std::string& s : shapes) {
    auto [name, shape] = onnx_import::parse_shape(s);
    if (!out.emplace(name, std::move(shape)).second)
      throw UserError("--shape " + name + " is given twice");
  }
  return out;
}

namespace {

nlohmann::json value_json(const graph::Value& v) {
  return {{"name", v.name}, {"dtype", dtype_name(v.type.dtype)}, {"shape", v.type.shape}};
}

std::string human_bytes(double b) {
  const char* units[] = {"B", "KB", "MB", "GB", "TB"};
  int u = 0;
  while (b >= 1000 && u < 4) {
    b /= 1000;
    ++u;
  }
  return fmt::format("{:.{}f} {}", b, u == 0 ? 0 : 1, units[u]);
}

}  // namespace

int run_inspect(const CommonOptions& o) {
  onnx_import::ImportOptions io;
  io.dims = parse_dims(o.dims);
  io.bind = parse_binds(o.binds);
  io.shapes = parse_shapes(o.shapes);
  LoadedModel m = load_model(o.model, io, /*report_unsupported=*/true);
  const graph::Graph& g = m.graph;

  std::map<std::string, int> counts;
  for (const graph::Node& n : g.nodes) counts[n.op_type]++;
  nlohmann::json j;
  j["model"] = o.model;
  j["opset"] = g.opset;
  j["onnx_nodes"] = m.onnx_nodes;
  j["warnings"] = m.warnings;
  j["op_counts"] = counts;
  nlohmann::json unsup = nlohmann::json::object();
  for (const auto& [op, nodes] : m.unsupported) unsup[op] = nodes;
  j["unsupported"] = unsup;

  if (!m.unsupported.empty()) {
    if (o.json) {
      std::cout << j.dump(2) << "\n";
    } else {
      std::cout << "model        " << o.model << "\nopset        " << g.opset << "\nnodes        "
                << m.onnx_nodes << " in the file\n";
    }
    std::cerr << "error: " << o.model << ": " << interp::describe_unsupported(m.unsupported)
              << "\n";
    return 2;
  }

  int64_t const_count = 0, const_bytes = 0;
  for (const auto& [name, v] : g.values)
    if (v.constant) {
      ++const_count;
      const_bytes += v.constant->byte_size();
    }
  size_t reductions = 0;
  for (const te::Op& op : m.program.ops)
    if (op->reduce != te::ReduceKind::None) ++reductions;

  j["nodes"] = g.nodes.size();
  j["folded"] = m.stats.nodes_folded;
  j["dead"] = m.stats.nodes_dead;
  j["tensors"] = g.values.size();
  j["constants"] = const_count;
  j["constant_bytes"] = const_bytes;
  j["tes"] = m.program.ops.size();
  j["reductions"] = reductions;
  nlohmann::json ins = nlohmann::json::array(), outs = nlohmann::json::array();
  for (const auto& n : g.inputs) ins.push_back(value_json(g.value(n)));
  for (const auto& n : g.outputs) outs.push_back(value_json(g.value(n)));
  j["inputs"] = ins;
  j["outputs"] = outs;
  j["load_ms"] = m.load_ms;

  if (o.json) {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "model        " << o.model << "\n";
  std::cout << "opset        " << g.opset << "\n";
  std::cout << "nodes        " << m.onnx_nodes << " in the file, " << m.stats.nodes_folded
            << " folded, " << m.stats.nodes_dead << " dead, " << g.nodes.size() << " remain\n";
  for (const auto& n : g.inputs)
    std::cout << "input        " << n << ": " << graph::type_str(g.value(n).type) << "\n";
  for (const auto& n : g.outputs)
    std::cout << "output       " << n << ": " << graph::type_str(g.value(n).type) << "\n";
  std::cout << "constants    " << const_count << " (" << human_bytes(double(const_bytes)) << ")\n";
  std::cout << "tensors      " << g.values.size() << "\n";
  std::cout << "TEs          " << m.program.ops.size() << " compute ops (" << reductions
            << " reductions)\n";
  std::cout << "ops         ";
  for (const auto& [op, n] : counts) std::cout << " " << op << " x" << n;
  std::cout << "\nunsupported  none\n";
  for (const auto& w : m.warnings) std::cout << "warning      " << w << "\n";
  std::cout << fmt::format("loaded in    {:.1f} ms\n", m.load_ms);
  return 0;
}

}  // namespace souffle::cli
