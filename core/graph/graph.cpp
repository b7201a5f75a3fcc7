#include "core/graph/graph.h"

#include <cstdio>
#include <functional>
#include <set>
#include <sstream>
#include <unordered_set>

#include "core/support/error.h"

namespace souffle::graph {

std::string type_str(const TensorType& t) {
  return dtype_name(t.dtype) + shape_str(t.shape);
}

// ---------------------------------------------------------------- Node attributes

namespace {

const char* kind_name(Attribute::Kind k) {
  switch (k) {
    case Attribute::Kind::Int:
      return "int";
    case Attribute::Kind::Float:
      return "float";
    case Attribute::Kind::String:
      return "string";
    case Attribute::Kind::Ints:
      return "ints";
    case Attribute::Kind::Floats:
      return "floats";
    case Attribute::Kind::Strings:
      return "strings";
    case Attribute::Kind::Tensor:
      return "tensor";
    case Attribute::Kind::Graph:
      return "graph";
  }
  return "?";
}

[[noreturn]] void wrong_kind(const Node& n, const std::string& key, const Attribute& a,
                             const char* wanted) {
  throw UserError("", n.name,
                  "attribute '" + key + "' is " + kind_name(a.kind) + ", expected " + wanted);
}

}  // namespace

int64_t Node::attr_int(const std::string& key, int64_t def) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return def;
  if (it->second.kind != Attribute::Kind::Int) wrong_kind(*this, key, it->second, "int");
  return it->second.i;
}

double Node::attr_float(const std::string& key, double def) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return def;
  // An integer where a float is expected loses nothing, and some exporters write e.g. alpha=1.
  if (it->second.kind == Attribute::Kind::Int) return static_cast<double>(it->second.i);
  if (it->second.kind != Attribute::Kind::Float) wrong_kind(*this, key, it->second, "float");
  return it->second.f;
}

std::string Node::attr_string(const std::string& key, const std::string& def) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return def;
  if (it->second.kind != Attribute::Kind::String) wrong_kind(*this, key, it->second, "string");
  return it->second.s;
}

std::vector<int64_t> Node::attr_ints(const std::string& key, std::vector<int64_t> def) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return def;
  if (it->second.kind != Attribute::Kind::Ints) wrong_kind(*this, key, it->second, "ints");
  return it->second.ints;
}

std::vector<double> Node::attr_floats(const std::string& key, std::vector<double> def) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return def;
  if (it->second.kind != Attribute::Kind::Floats) wrong_kind(*this, key, it->second, "floats");
  return it->second.floats;
}

ConstTensorPtr Node::attr_tensor(const std::string& key) const {
  auto it = attrs.find(key);
  if (it == attrs.end()) return nullptr;
  if (it->second.kind != Attribute::Kind::Tensor) wrong_kind(*this, key, it->second, "tensor");
  return it->second.t;
}

size_t Node::num_inputs() const {
  size_t n = inputs.size();
  while (n > 0 && inputs[n - 1].empty()) --n;
  return n;
}

// ---------------------------------------------------------------- Graph look-ups

const Value& Graph::value(const std::string& n) const {
  auto it = values.find(n);
  SOUFFLE_CHECK(it != values.end(), "graph has no value '" + n + "'");
  return it->second;
}

Value& Graph::value(const std::string& n) {
  auto it = values.find(n);
  SOUFFLE_CHECK(it != values.end(), "graph has no value '" + n + "'");
  return it->second;
}

std::optional<size_t> Graph::producer(const std::string& n) const {
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const auto& o : nodes[i].outputs)
      if (!o.empty() && o == n) return i;
  return std::nullopt;
}

// ---------------------------------------------------------------- Subgraph free names

namespace {

// Names a subgraph reads from the enclosing scopes: used by its nodes (or nested subgraphs) but
// defined neither as its input, nor its initializer, nor a node output inside it. An If/Loop node
// depends on these just as on its explicit inputs.
void collect_free_names(const Graph& g, std::set<std::string>& out) {
  std::unordered_set<std::string> defined(g.inputs.begin(), g.inputs.end());
  for (const auto& [name, v] : g.values)
    if (v.constant) defined.insert(name);
  for (const auto& n : g.nodes)
    for (const auto& o : n.outputs)
      if (!o.empty()) defined.insert(o);
  auto use = [&](const std::string& name) {
    if (!name.empty() && !defined.count(name)) out.insert(name);
  };
  for (const auto& n : g.nodes) {
    for (const auto& i : n.inputs) use(i);
    for (const auto& [key, a] : n.attrs) {
      if (a.kind != Attribute::Kind::Graph || !a.g) continue;
      std::set<std::string> inner;
      collect_free_names(*a.g, inner);
      for (const auto& name : inner) use(name);
    }
  }
  for (const auto& o : g.outputs) use(o);
}

/// Explicit inputs followed by the names the node's subgraphs capture from this scope.
std::vector<std::string> node_uses(const Node& n) {
  std::vector<std::string> uses;
  for (const auto& i : n.inputs)
    if (!i.empty()) uses.push_back(i);
  for (const auto& [key, a] : n.attrs) {
    if (a.kind != Attribute::Kind::Graph || !a.g) continue;
    std::set<std::string> inner;
    collect_free_names(*a.g, inner);
    uses.insert(uses.end(), inner.begin(), inner.end());
  }
  return uses;
}

std::string fmt_double(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", v);
  return buf;
}

std::string attr_str(const Attribute& a) {
  std::ostringstream os;
  auto list = [&](const auto& xs, auto fn) {
    os << "[";
    for (size_t i = 0; i < xs.size(); ++i) os << (i ? ", " : "") << fn(xs[i]);
    os << "]";
  };
  switch (a.kind) {
    case Attribute::Kind::Int:
      os << a.i;
      break;
    case Attribute::Kind::Float:
      os << fmt_double(a.f);
      break;
    case Attribute::Kind::String:
      os << '"' << a.s << '"';
      break;
    case Attribute::Kind::Ints:
      list(a.ints, [](int64_t v) { return std::to_string(v); });
      break;
    case Attribute::Kind::Floats:
      list(a.floats, fmt_double);
      break;
    case Attribute::Kind::Strings:
      list(a.strings, [](const std::string& s) { return '"' + s + '"'; });
      break;
    case Attribute::Kind::Tensor:
      if (!a.t) {
        os << "tensor(null)";
        break;
      }
      os << "tensor " << type_str({a.t->dtype(), a.t->shape()});
      // Small tensors (the usual Constant scalars and shape vectors) are worth seeing.
      if (a.t->numel() <= 8) {
        os << " {";
        for (int64_t i = 0; i < a.t->numel(); ++i)
          os << (i ? ", " : "")
             << (is_float(a.t->dtype()) ? fmt_double(a.t->get_f64(i))
                                        : std::to_string(a.t->get_i64(i)));
        os << "}";
      }
      break;
    case Attribute::Kind::Graph:
      os << "graph " << (a.g ? a.g->name : "") << " (" << (a.g ? a.g->nodes.size() : 0)
         << " nodes)";
      break;
  }
  return os.str();
}

}  // namespace

// ---------------------------------------------------------------- print

std::string print(const Graph& g) {
  std::ostringstream os;
  auto typed = [&](const std::string& name) {
    auto it = g.values.find(name);
    if (it == g.values.end()) return name + ": <undefined>";
    if (!it->second.type_known) return name + ": ?";
    return name + ": " + type_str(it->second.type);
  };
  os << "graph " << g.name << " opset " << g.opset << "\n";
  for (const auto& i : g.inputs) os << "  input " << typed(i) << "\n";
  // Constants in name order so the listing does not depend on hash order.
  std::set<std::string> consts;
  for (const auto& [name, v] : g.values)
    if (v.constant) consts.insert(name);
  for (const auto& c : consts) os << "  const " << typed(c) << "\n";
  for (const auto& n : g.nodes) {
    os << "  " << n.name << " = ";
    if (!n.domain.empty()) os << n.domain << ".";
    os << n.op_type << "(";
    for (size_t i = 0; i < n.inputs.size(); ++i) os << (i ? ", " : "") << n.inputs[i];
    os << ")";
    if (!n.attrs.empty()) {
      os << " {";
      bool first = true;
      for (const auto& [key, a] : n.attrs) {
        os << (first ? "" : ", ") << key << "=" << attr_str(a);
        first = false;
      }
      os << "}";
    }
    os << " -> ";
    for (size_t i = 0; i < n.outputs.size(); ++i)
      os << (i ? ", " : "") << (n.outputs[i].empty() ? std::string("_") : typed(n.outputs[i]));
    os << "\n";
  }
  for (const auto& o : g.outputs) os << "  output " << typed(o) << "\n";
  return os.str();
}

// ---------------------------------------------------------------- verify

std::string DataValue::describe() const {
  if (!composite) return "tensor";
  std::string n = std::to_string(tensors.size());
  std::string seq = "sequence of " + n + (tensors.size() == 1 ? " tensor" : " tensors");
  if (*composite == Composite::Kind::Sequence) return seq;
  if (!has_value) return "empty optional";
  return holds_sequence ? "optional " + seq : "optional tensor";
}

void verify(const Graph& g) {
  for (const auto& [key, v] : g.values)
    if (v.name != key)
      throw UserError(g.source_file, "", "value '" + key + "' is stored under another name");

  std::unordered_set<std::string> defined;
  std::unordered_set<std::string> node_names;
  auto check_typed = [&](const std::string& node, const std::string& name) {
    auto it = g.values.find(name);
    if (it == g.values.end())
      throw UserError(g.source_file, node, "value '" + name + "' has no entry in the graph");
    if (!it->second.type_known)
      throw UserError(g.source_file, node, "value '" + name + "' has no known type");
  };
  for (const auto& i : g.inputs) {
    check_typed("", i);
    if (!defined.insert(i).second)
      throw UserError(g.source_file, "", "graph input '" + i + "' is listed twice");
  }
  for (const auto& [name, v] : g.values) {
    if (!v.constant) continue;
    if (!defined.insert(name).second)
      throw UserError(g.source_file, "", "'" + name + "' is both an input and a constant");
    check_typed("", name);
  }
  for (const auto& n : g.nodes) {
    if (n.name.empty()) throw UserError(g.source_file, "", n.op_type + " node has no name");
    if (!node_names.insert(n.name).second)
      throw UserError(g.source_file, n.name, "node name is not unique");
    for (const auto& in : node_uses(n))
      if (!defined.count(in))
        throw UserError(g.source_file, n.name,
                        "input '" + in + "' is not defined before the node (order or dangling)");
    for (const auto& o : n.outputs) {
      if (o.empty()) continue;
      if (!defined.insert(o).second)
        throw UserError(g.source_file, n.name, "output '" + o + "' is defined more than once");
      check_typed(n.name, o);
    }
  }
  for (const auto& o : g.outputs)
    if (!defined.count(o))
      throw UserError(g.source_file, "", "graph output '" + o + "' is never defined");
}

// ---------------------------------------------------------------- topo_sort

void topo_sort(Graph& g) {
  const size_t n = g.nodes.size();
  std::unordered_map<std::string, size_t> producer_of;
  for (size_t i = 0; i < n; ++i)
    for (const auto& o : g.nodes[i].outputs)
      if (!o.empty()) producer_of.emplace(o, i);

  std::unordered_set<std::string> external(g.inputs.begin(), g.inputs.end());
  for (const auto& [name, v] : g.values)
    if (v.constant) external.insert(name);

  // Kahn's algorithm, always taking the lowest-index ready node, keeps the file order when it is
  // already topological (stable), which keeps printed graphs predictable.
  std::vector<std::vector<size_t>> users(n);
  std::vector<size_t> pending(n, 0);
  for (size_t i = 0; i < n; ++i) {
    std::unordered_set<size_t> deps;
    for (const auto& in : node_uses(g.nodes[i])) {
      auto it = producer_of.find(in);
      if (it != producer_of.end()) {
        deps.insert(it->second);
      } else if (!external.count(in)) {
        throw UserError(g.source_file, g.nodes[i].name,
                        "input '" + in + "' is not produced by any node, input or initializer");
      }
    }
    for (size_t d : deps) {
      users[d].push_back(i);
      ++pending[i];
    }
  }
  std::set<size_t> ready;
  for (size_t i = 0; i < n; ++i)
    if (pending[i] == 0) ready.insert(i);
  std::vector<size_t> order;
  order.reserve(n);
  while (!ready.empty()) {
    size_t i = *ready.begin();
    ready.erase(ready.begin());
    order.push_back(i);
    for (size_t u : users[i])
      if (--pending[u] == 0) ready.insert(u);
  }
  if (order.size() != n) {
    for (size_t i = 0; i < n; ++i)
      if (pending[i] != 0)
        throw UserError(g.source_file, g.nodes[i].name, "node is part of a dependency cycle");
  }
  std::vector<Node> sorted;
  sorted.reserve(n);
  for (size_t i : order) sorted.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(sorted);
}

// ---------------------------------------------------------------- remove_dead_nodes

void remove_dead_nodes(Graph& g) {
  std::unordered_map<std::string, size_t> producer_of;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    for (const auto& o : g.nodes[i].outputs)
      if (!o.empty()) producer_of.emplace(o, i);

  std::vector<bool> live(g.nodes.size(), false);
  std::vector<std::string> work(g.outputs.begin(), g.outputs.end());
  while (!work.empty()) {
    std::string name = std::move(work.back());
    work.pop_back();
    auto it = producer_of.find(name);
    if (it == producer_of.end() || live[it->second]) continue;
    live[it->second] = true;
    for (auto& u : node_uses(g.nodes[it->second])) work.push_back(std::move(u));
  }

  std::vector<Node> kept;
  for (size_t i = 0; i < g.nodes.size(); ++i)
    if (live[i]) kept.push_back(std::move(g.nodes[i]));
  g.nodes = std::move(kept);

  std::unordered_set<std::string> referenced(g.inputs.begin(), g.inputs.end());
  referenced.insert(g.outputs.begin(), g.outputs.end());
  for (const auto& n : g.nodes) {
    for (const auto& u : node_uses(n)) referenced.insert(u);
    for (const auto& o : n.outputs)
      if (!o.empty()) referenced.insert(o);
  }
  for (auto it = g.values.begin(); it != g.values.end();) {
    if (referenced.count(it->first))
      ++it;
    else
      it = g.values.erase(it);
  }
}

}  // namespace souffle::graph
