#include "core/lower/control_flow.h"

#include <algorithm>
#include <map>
#include <set>

#include "core/support/error.h"

namespace souffle::lower {
namespace {

using graph::Attribute;
using graph::Composite;
using graph::Node;

// Private attributes of the continuation nodes an expansion leaves behind.
const char* const kIteration = "__souffle_iteration";     // Loop: the next iteration's number
const char* const kPartials = "__souffle_scan_partials";  // Loop: trailing inputs = scan lists
const char* const kSelect = "__souffle_select";           // If: inputs = cond, then..., else...

UserError node_error(const Node& n, const std::string& reason) {
  return UserError("", n.name + " (" + n.op_type + ")", reason);
}

Attribute int_attr(int64_t v) {
  Attribute a;
  a.kind = Attribute::Kind::Int;
  a.i = v;
  return a;
}

Attribute ints_attr(std::vector<int64_t> v) {
  Attribute a;
  a.kind = Attribute::Kind::Ints;
  a.ints = std::move(v);
  return a;
}

/// Builds the plain nodes of an expansion, named after the structured node.
class Builder {
 public:
  Builder(const Node& node, ExpandScope& scope, Expansion& out)
      : m_node(node), m_scope(scope), m_out(out) {}

  ExpandScope& scope() { return m_scope; }
  Expansion& out() { return m_out; }
  const Node& node() const { return m_node; }

  std::string fresh(const std::string& what) {
    return m_scope.fresh_name(m_node.name + "/" + what);
  }

  std::string constant(const std::string& what, ConstTensorPtr data) {
    std::string name = fresh(what);
    m_out.constants.emplace_back(name, std::move(data));
    return name;
  }
  std::string int_scalar(const std::string& what, int64_t v) {
    return constant(what, TensorData::from_i64(DType::Int64, {}, {v}));
  }
  std::string ints(const std::string& what, const std::vector<int64_t>& v) {
    return constant(what, TensorData::from_i64(DType::Int64, {static_cast<int64_t>(v.size())}, v));
  }

  /// Appends a node `op` reading `inputs` and writing `outputs` (fresh names when empty).
  Node& add(const std::string& op, std::vector<std::string> inputs,
            std::vector<std::string> outputs, std::map<std::string, Attribute> attrs = {}) {
    Node n;
    n.name = fresh(op);
    n.op_type = op;
    n.inputs = std::move(inputs);
    n.outputs = std::move(outputs);
    n.attrs = std::move(attrs);
    m_out.nodes.push_back(std::move(n));
    return m_out.nodes.back();
  }
  std::string add1(const std::string& op, std::vector<std::string> inputs,
                   std::map<std::string, Attribute> attrs = {}, std::string output = "") {
    if (output.empty()) output = fresh(op + "_out");
    add(op, std::move(inputs), {output}, std::move(attrs));
    return output;
  }

  void identity(const std::string& from, const std::string& to) {
    add1("Identity", {from}, {}, to);
  }

  /// `to` names the value `from`: a composite is aliased, a tensor copied by an Identity node.
  void forward(const std::string& from, const std::string& to) {
    if (const Composite* c = m_scope.composite(from)) {
      m_out.composites.emplace_back(to, *c);
      return;
    }
    if (from.empty()) throw node_error(m_node, "output '" + to + "' has no value to take");
    identity(from, to);
  }

  std::string unsqueeze(const std::string& x, int64_t axis) {
    if (m_scope.opset() >= 13) return add1("Unsqueeze", {x, ints("axes", {axis})});
    return add1("Unsqueeze", {x}, {{"axes", ints_attr({axis})}});
  }
  std::string squeeze(const std::string& x, int64_t axis) {
    if (m_scope.opset() >= 13) return add1("Squeeze", {x, ints("axes", {axis})});
    return add1("Squeeze", {x}, {{"axes", ints_attr({axis})}});
  }
  /// Concatenates `xs` along `axis` into `output` (an Identity for one tensor).
  void concat(const std::vector<std::string>& xs, int64_t axis, const std::string& output) {
    if (xs.empty()) throw node_error(m_node, "nothing to concatenate into '" + output + "'");
    if (xs.size() == 1) {
      identity(xs[0], output);
      return;
    }
    add1("Concat", xs, {{"axis", int_attr(axis)}}, output);
  }
  /// Stacks `xs` along a new `axis` into `output`.
  void stack(const std::vector<std::string>& xs, int64_t axis, const std::string& output) {
    std::vector<std::string> parts;
    for (const std::string& x : xs) parts.push_back(unsqueeze(x, axis));
    concat(parts, axis, output);
  }
  /// x[..., index, ...] along `axis` (the axis removed).
  std::string take(const std::string& x, int64_t index, int64_t axis) {
    return add1("Gather", {x, int_scalar("index", index)}, {{"axis", int_attr(axis)}});
  }
  std::string slice(const std::string& x, int64_t begin, int64_t end, int64_t axis) {
    return add1("Slice", {x, ints("starts", {begin}), ints("ends", {end}), ints("axes", {axis})});
  }

 private:
  const Node& m_node;
  ExpandScope& m_scope;
  Expansion& m_out;
};

/// A copy of `g` whose references to names in `rename` (from an enclosing scope) are renamed,
/// through nested subgraphs too.
graph::Graph rename_free(const graph::Graph& g, const std::map<std::string, std::string>& rename) {
  graph::Graph c = g;
  auto sub = [&](std::string& name) {
    auto it = rename.find(name);
    if (it != rename.end()) name = it->second;
  };
  for (Node& n : c.nodes) {
    for (std::string& in : n.inputs) sub(in);
    for (auto& [key, a] : n.attrs)
      if (a.kind == Attribute::Kind::Graph && a.g)
        a.g = std::make_shared<const graph::Graph>(rename_free(*a.g, rename));
  }
  for (std::string& o : c.outputs) sub(o);
  return c;
}

/// Inlines `body` once: its inputs bound to `args` (value names; "" for an omitted one), its
/// initializers as fresh constants and its nodes with fresh output names. Returns the names
/// holding its outputs.
std::vector<std::string> inline_body(Builder& b, const graph::Graph& body,
                                     const std::vector<std::string>& args, const std::string& tag) {
  if (args.size() != body.inputs.size())
    throw node_error(b.node(), "its body takes " + std::to_string(body.inputs.size()) +
                                   " inputs, given " + std::to_string(args.size()));
  std::map<std::string, std::string> rename;
  for (size_t i = 0; i < args.size(); ++i) rename[body.inputs[i]] = args[i];
  for (const auto& [name, v] : body.values)
    if (v.constant) rename[name] = b.constant(tag + "/" + name, v.constant);
  for (const Node& n : body.nodes)
    for (const std::string& o : n.outputs)
      if (!o.empty()) rename[o] = b.scope().fresh_name(b.node().name + "/" + tag + "/" + o);
  for (const Node& n : body.nodes) {
    Node c = n;
    c.name = b.scope().fresh_name(b.node().name + "/" + tag + "/" + n.name);
    for (std::string& in : c.inputs) {
      auto it = rename.find(in);
      if (it != rename.end()) in = it->second;
    }
    for (std::string& o : c.outputs)
      if (!o.empty()) o = rename.at(o);
    for (auto& [key, a] : c.attrs)
      if (a.kind == Attribute::Kind::Graph && a.g)
        a.g = std::make_shared<const graph::Graph>(rename_free(*a.g, rename));
    b.out().nodes.push_back(std::move(c));
  }
  std::vector<std::string> outs;
  for (const std::string& o : body.outputs) {
    auto it = rename.find(o);
    outs.push_back(it != rename.end() ? it->second : o);
  }
  return outs;
}

const graph::Graph& graph_attr(const Node& n, const std::string& key) {
  auto it = n.attrs.find(key);
  if (it == n.attrs.end() || it->second.kind != Attribute::Kind::Graph || !it->second.g)
    throw node_error(n, "has no '" + key + "' subgraph");
  return *it->second.g;
}

/// A scalar constant input as int64 / bool; UserError saying it must be a constant.
int64_t constant_int(Builder& b, const std::string& name, const std::string& what) {
  ConstTensorPtr c = b.scope().constant(name);
  if (!c)
    throw node_error(b.node(), what +
                                   " must be a constant (it decides the shape of the "
                                   "unrolled program at compile time)");
  if (c->numel() != 1) throw node_error(b.node(), what + " must hold one value");
  return c->get_i64(0);
}

const Composite& composite_input(Builder& b, size_t i, const char* what) {
  const std::string& name = i < b.node().inputs.size() ? b.node().inputs[i] : std::string();
  const Composite* c = name.empty() ? nullptr : b.scope().composite(name);
  if (!c) throw node_error(b.node(), std::string(what) + " must be a sequence or optional value");
  return *c;
}

const Composite& sequence_input(Builder& b, size_t i) {
  const Composite& c = composite_input(b, i, "input");
  if (c.kind != Composite::Kind::Sequence)
    throw node_error(b.node(), "input " + std::to_string(i) + " must be a sequence");
  return c;
}

/// A position in a sequence of `n` (negative counts from the end); `allow_end` admits n.
size_t position(Builder& b, size_t input, int64_t n, bool allow_end, int64_t def) {
  int64_t p = def;
  if (input < b.node().inputs.size() && !b.node().inputs[input].empty())
    p = constant_int(b, b.node().inputs[input], "the position");
  if (p < 0) p += n;
  if (p < 0 || p > n || (p == n && !allow_end))
    throw node_error(b.node(), "position " + std::to_string(p) + " is outside the sequence of " +
                                   std::to_string(n));
  return static_cast<size_t>(p);
}

// ---- sequences and optionals ----

void expand_sequence_op(Builder& b) {
  const Node& n = b.node();
  const std::string& op = n.op_type;
  const std::string out = n.outputs.empty() ? "" : n.outputs[0];
  auto define = [&](Composite c) { b.out().composites.emplace_back(out, std::move(c)); };
  if (op == "SequenceEmpty") {
    define(Composite{});
  } else if (op == "SequenceConstruct") {
    Composite c;
    for (const std::string& in : n.inputs) {
      if (b.scope().composite(in)) throw node_error(n, "sequences of sequences are not supported");
      c.elements.push_back(in);
    }
    define(c);
  } else if (op == "SequenceInsert") {
    Composite c = sequence_input(b, 0);
    const std::string t = n.inputs.size() > 1 ? n.inputs[1] : "";
    if (t.empty() || b.scope().composite(t)) throw node_error(n, "inserts a tensor");
    int64_t len = static_cast<int64_t>(c.elements.size());
    size_t p = position(b, 2, len, true, len);
    c.elements.insert(c.elements.begin() + static_cast<std::ptrdiff_t>(p), t);
    define(c);
  } else if (op == "SequenceErase") {
    Composite c = sequence_input(b, 0);
    int64_t len = static_cast<int64_t>(c.elements.size());
    size_t p = position(b, 1, len, false, len - 1);
    c.elements.erase(c.elements.begin() + static_cast<std::ptrdiff_t>(p));
    define(c);
  } else if (op == "SequenceAt") {
    const Composite& c = sequence_input(b, 0);
    size_t p = position(b, 1, static_cast<int64_t>(c.elements.size()), false, 0);
    b.identity(c.elements[p], out);
  } else if (op == "SequenceLength") {
    const Composite& c = sequence_input(b, 0);
    b.out().constants.emplace_back(
        out, TensorData::from_i64(DType::Int64, {}, {static_cast<int64_t>(c.elements.size())}));
  } else if (op == "ConcatFromSequence") {
    const Composite& c = sequence_input(b, 0);
    if (c.elements.empty()) throw node_error(n, "cannot concatenate an empty sequence");
    int64_t axis = n.attr_int("axis", 0);
    bool new_axis = n.attr_int("new_axis", 0) != 0;
    const graph::TensorType* t = b.scope().type(c.elements[0]);
    if (!t) throw node_error(n, "the sequence's element type is not known");
    int64_t rank = static_cast<int64_t>(t->shape.size()) + (new_axis ? 1 : 0);
    if (axis < -rank || axis >= rank)
      throw node_error(n, "axis " + std::to_string(axis) + " is out of range");
    if (axis < 0) axis += rank;
    if (new_axis)
      b.stack(c.elements, axis, out);
    else
      b.concat(c.elements, axis, out);
  } else if (op == "SplitToSequence") {
    const std::string x = n.inputs.at(0);
    const graph::TensorType* t = b.scope().type(x);
    if (!t) throw node_error(n, "the input's type is not known");
    int64_t rank = static_cast<int64_t>(t->shape.size());
    int64_t axis = n.attr_int("axis", 0);
    if (axis < -rank || axis >= rank) throw node_error(n, "axis is out of range");
    if (axis < 0) axis += rank;
    int64_t dim = t->shape[static_cast<size_t>(axis)];
    bool keepdims = n.attr_int("keepdims", 1) != 0;
    std::vector<int64_t> sizes;
    bool has_split = n.inputs.size() > 1 && !n.inputs[1].empty();
    if (has_split) {
      ConstTensorPtr s = b.scope().constant(n.inputs[1]);
      if (!s) throw node_error(n, "split must be a constant (the sequence's length depends on it)");
      std::vector<int64_t> v = s->to_i64();
      if (s->shape().empty()) {
        if (v[0] <= 0) throw node_error(n, "split must be positive");
        for (int64_t p = 0; p < dim; p += v[0]) sizes.push_back(std::min(v[0], dim - p));
      } else {
        sizes = v;
      }
    } else {
      sizes.assign(static_cast<size_t>(dim), 1);
    }
    int64_t total = 0;
    for (int64_t s : sizes) total += s;
    if (total != dim) throw node_error(n, "split sizes do not add up to the axis length");
    Composite c;
    int64_t begin = 0;
    for (int64_t s : sizes) {
      std::string piece = b.slice(x, begin, begin + s, axis);
      if (!has_split && !keepdims) piece = b.squeeze(piece, axis);
      c.elements.push_back(piece);
      begin += s;
    }
    define(c);
  } else if (op == "Optional") {
    Composite c;
    c.kind = Composite::Kind::Optional;
    const std::string in = n.inputs.empty() ? "" : n.inputs[0];
    c.has_value = !in.empty();
    if (const Composite* s = in.empty() ? nullptr : b.scope().composite(in)) {
      c.holds_sequence = true;
      c.elements = s->elements;
    } else if (!in.empty()) {
      c.elements = {in};
    }
    define(c);
  } else if (op == "OptionalHasElement") {
    const std::string in = n.inputs.empty() ? "" : n.inputs[0];
    const Composite* c = in.empty() ? nullptr : b.scope().composite(in);
    bool has = !in.empty() && (!c || c->kind == Composite::Kind::Sequence || c->has_value);
    b.out().constants.emplace_back(out, TensorData::from_i64(DType::Bool, {}, {has ? 1 : 0}));
  } else if (op == "OptionalGetElement") {
    const std::string in = n.inputs.empty() ? "" : n.inputs[0];
    const Composite* c = in.empty() ? nullptr : b.scope().composite(in);
    if (!c) {
      b.identity(in, out);  // a tensor is its own element
    } else if (c->kind == Composite::Kind::Sequence) {
      define(*c);
    } else if (!c->has_value) {
      throw node_error(n, "the optional is empty");
    } else if (c->holds_sequence) {
      Composite s;
      s.elements = c->elements;
      define(s);
    } else {
      b.identity(c->elements.at(0), out);
    }
  } else if (op == "Identity") {
    b.forward(n.inputs.at(0), out);
  } else {
    throw node_error(n, "is not a sequence op");
  }
}

/// SequenceMap: the body once per element of the first sequence; outputs are sequences.
void expand_sequence_map(Builder& b) {
  const Node& n = b.node();
  const graph::Graph& body = graph_attr(n, "body");
  const Composite& first = sequence_input(b, 0);
  size_t len = first.elements.size();
  std::vector<Composite> outs(n.outputs.size());
  for (size_t i = 0; i < len; ++i) {
    std::vector<std::string> args;
    for (const std::string& in : n.inputs) {
      const Composite* c = b.scope().composite(in);
      if (c && c->kind != Composite::Kind::Sequence)
        throw node_error(n, "takes sequences and tensors only");
      if (c && c->elements.size() != len) throw node_error(n, "its sequences differ in length");
      args.push_back(c ? c->elements[i] : in);
    }
    std::vector<std::string> res = inline_body(b, body, args, std::to_string(i));
    if (res.size() != outs.size())
      throw node_error(n, "its body gives " + std::to_string(res.size()) + " outputs, the node " +
                              std::to_string(outs.size()));
    for (size_t k = 0; k < res.size(); ++k) outs[k].elements.push_back(res[k]);
  }
  for (size_t k = 0; k < outs.size(); ++k)
    if (!n.outputs[k].empty()) b.out().composites.emplace_back(n.outputs[k], outs[k]);
}

// ---- If ----

void expand_if(Builder& b) {
  const Node& n = b.node();
  const std::string cond = n.inputs.at(0);
  if (n.has_attr(kSelect)) {
    // Both branches ran; pick per output with the condition (same shapes required).
    size_t k = n.outputs.size();
    for (size_t j = 0; j < k; ++j) {
      const std::string& t = n.inputs[1 + j];
      const std::string& e = n.inputs[1 + k + j];
      if (b.scope().composite(t) || b.scope().composite(e))
        throw node_error(n,
                         "the condition of an If whose branches give sequences or optionals "
                         "must be a constant");
      const graph::TensorType* tt = b.scope().type(t);
      const graph::TensorType* et = b.scope().type(e);
      if (!tt || !et || *tt != *et)
        throw node_error(n, "not supported: its branches give output " + std::to_string(j) +
                                " as " + (tt ? graph::type_str(*tt) : "?") + " and " +
                                (et ? graph::type_str(*et) : "?") +
                                ", so its shape would depend on the condition's value");
      if (!n.outputs[j].empty()) b.add1("Where", {cond, t, e}, {}, n.outputs[j]);
    }
    return;
  }
  ConstTensorPtr c = b.scope().constant(cond);
  if (c) {
    bool taken = c->numel() > 0 && c->get_f64(0) != 0;
    std::vector<std::string> res = inline_body(
        b, graph_attr(n, taken ? "then_branch" : "else_branch"), {}, taken ? "then" : "else");
    if (res.size() < n.outputs.size()) throw node_error(n, "its branch gives too few outputs");
    for (size_t j = 0; j < n.outputs.size(); ++j)
      if (!n.outputs[j].empty()) b.forward(res[j], n.outputs[j]);
    return;
  }
  std::vector<std::string> t = inline_body(b, graph_attr(n, "then_branch"), {}, "then");
  std::vector<std::string> e = inline_body(b, graph_attr(n, "else_branch"), {}, "else");
  if (t.size() < n.outputs.size() || e.size() < n.outputs.size())
    throw node_error(n, "a branch gives too few outputs");
  std::vector<std::string> ins{cond};
  ins.insert(ins.end(), t.begin(), t.begin() + static_cast<std::ptrdiff_t>(n.outputs.size()));
  ins.insert(ins.end(), e.begin(), e.begin() + static_cast<std::ptrdiff_t>(n.outputs.size()));
  b.add("If", ins, n.outputs, {{kSelect, int_attr(1)}});
}

// ---- Loop ----

constexpr int64_t kMaxUnrolled = 10000;

void expand_loop(Builder& b) {
  const Node& n = b.node();
  const graph::Graph& body = graph_attr(n, "body");
  int64_t iteration = n.attr_int(kIteration, 0);
  size_t partials = static_cast<size_t>(n.attr_int(kPartials, 0));
  size_t n_in = n.inputs.size() - partials;
  if (n_in < 2) throw node_error(n, "needs the trip count and condition inputs (may be empty)");
  size_t carried = n_in - 2;
  if (n.outputs.size() < carried) throw node_error(n, "has fewer outputs than loop-carried values");
  size_t scans = n.outputs.size() - carried;
  std::vector<std::string> scan_lists(n.inputs.end() - static_cast<std::ptrdiff_t>(partials),
                                      n.inputs.end());
  if (scan_lists.empty()) scan_lists.assign(scans, "");

  const std::string& trip = n.inputs[0];
  const std::string& cond = n.inputs[1];
  bool has_trip = !trip.empty(), has_cond = !cond.empty();
  int64_t trips = has_trip ? constant_int(b, trip, "the trip count") : kMaxUnrolled + 1;
  bool go = true;
  if (has_cond) {
    ConstTensorPtr c = b.scope().constant(cond);
    if (!c) {
      if (iteration == 0)
        throw node_error(n,
                         "the loop condition must be a constant (the trip count must be "
                         "known at compile time)");
      throw node_error(n,
                       "not supported: the loop condition depends on the input's values "
                       "(after iteration " +
                           std::to_string(iteration) +
                           "); only trip counts known at compile time are unrolled");
    }
    go = c->get_f64(0) != 0;
  }
  if (iteration >= trips) go = false;
  if (go && iteration >= kMaxUnrolled)
    throw node_error(n, "not supported: more than " + std::to_string(kMaxUnrolled) +
                            " iterations are not unrolled");
  if (!has_trip && !has_cond) throw node_error(n, "has neither a trip count nor a condition");

  if (!go) {
    for (size_t j = 0; j < carried; ++j)
      if (!n.outputs[j].empty()) b.forward(n.inputs[2 + j], n.outputs[j]);
    for (size_t k = 0; k < scans; ++k) {
      const std::string& out = n.outputs[carried + k];
      if (out.empty()) continue;
      const Composite* list = scan_lists[k].empty() ? nullptr : b.scope().composite(scan_lists[k]);
      if (!list || list->elements.empty())
        throw node_error(n,
                         "not supported: a loop that runs no iteration has scan outputs of "
                         "unknown shape");
      b.stack(list->elements, 0, out);
    }
    return;
  }
  std::vector<std::string> args{b.int_scalar("iteration", iteration)};
  args.push_back(has_cond ? cond : b.constant("cond", TensorData::from_i64(DType::Bool, {}, {1})));
  for (size_t j = 0; j < carried; ++j) args.push_back(n.inputs[2 + j]);
  std::vector<std::string> res = inline_body(b, body, args, std::to_string(iteration));
  if (res.size() != 1 + carried + scans)
    throw node_error(n, "its body gives " + std::to_string(res.size()) + " outputs, expected " +
                            std::to_string(1 + carried + scans));
  // The continuation: the same loop from the next iteration, on this iteration's results.
  std::vector<std::string> ins{trip, has_cond ? res[0] : ""};
  for (size_t j = 0; j < carried; ++j) ins.push_back(res[1 + j]);
  for (size_t k = 0; k < scans; ++k) {
    Composite list;
    if (const Composite* prev =
            scan_lists[k].empty() ? nullptr : b.scope().composite(scan_lists[k]))
      list = *prev;
    list.elements.push_back(res[1 + carried + k]);
    std::string name = b.fresh("scan" + std::to_string(k));
    b.out().composites.emplace_back(name, list);
    ins.push_back(name);
  }
  Node next = n;
  next.name = b.scope().fresh_name(n.name + "/" + std::to_string(iteration + 1));
  next.inputs = ins;
  next.attrs[kIteration] = int_attr(iteration + 1);
  next.attrs[kPartials] = int_attr(static_cast<int64_t>(scans));
  b.out().nodes.push_back(std::move(next));
}

// ---- Scan ----

/// One scan over axis `axes[k]` of each scan input (per-batch for opset 8, see expand_scan).
/// Returns the final states and the per-iteration scan outputs.
void scan_once(Builder& b, const graph::Graph& body, const std::vector<std::string>& states,
               const std::vector<std::string>& xs, const std::vector<Shape>& shapes,
               const std::vector<int64_t>& axes, const std::vector<int64_t>& dirs,
               const std::string& tag, std::vector<std::string>& final_states,
               std::vector<std::vector<std::string>>& scan_outs) {
  const Node& n = b.node();
  int64_t steps = -1;
  for (size_t k = 0; k < xs.size(); ++k) {
    int64_t rank = static_cast<int64_t>(shapes[k].size());
    int64_t axis = axes[k] < 0 ? axes[k] + rank : axes[k];
    if (axis < 0 || axis >= rank) throw node_error(n, "scan input axis is out of range");
    int64_t len = shapes[k][static_cast<size_t>(axis)];
    if (steps >= 0 && len != steps) throw node_error(n, "its scan inputs differ in length");
    steps = len;
  }
  if (steps < 0) throw node_error(n, "has no scan input");
  std::vector<std::string> cur = states;
  for (int64_t s = 0; s < steps; ++s) {
    std::vector<std::string> args = cur;
    for (size_t k = 0; k < xs.size(); ++k) {
      int64_t rank = static_cast<int64_t>(shapes[k].size());
      int64_t axis = axes[k] < 0 ? axes[k] + rank : axes[k];
      args.push_back(b.take(xs[k], dirs[k] ? steps - 1 - s : s, axis));
    }
    std::vector<std::string> res = inline_body(b, body, args, tag + std::to_string(s));
    if (res.size() < cur.size()) throw node_error(n, "its body gives too few outputs");
    std::copy(res.begin(), res.begin() + static_cast<std::ptrdiff_t>(cur.size()), cur.begin());
    scan_outs.resize(res.size() - cur.size());
    for (size_t k = cur.size(); k < res.size(); ++k) scan_outs[k - cur.size()].push_back(res[k]);
  }
  final_states = cur;
}

void expand_scan(Builder& b) {
  const Node& n = b.node();
  const graph::Graph& body = graph_attr(n, "body");
  bool v8 = b.scope().opset() < 9;
  size_t first = v8 ? 1 : 0;
  if (v8 && !n.inputs.empty() && !n.inputs[0].empty())
    throw node_error(n, "not supported: sequence_lens (per-batch scan lengths)");
  int64_t k_in = n.attr_int("num_scan_inputs", -1);
  if (k_in <= 0 || first + static_cast<size_t>(k_in) > n.inputs.size())
    throw node_error(n, "num_scan_inputs is missing or too large");
  size_t n_states = n.inputs.size() - first - static_cast<size_t>(k_in);
  std::vector<std::string> states(n.inputs.begin() + static_cast<std::ptrdiff_t>(first),
                                  n.inputs.begin() + static_cast<std::ptrdiff_t>(first + n_states));
  std::vector<std::string> xs(n.inputs.begin() + static_cast<std::ptrdiff_t>(first + n_states),
                              n.inputs.end());
  size_t k = xs.size();
  std::vector<int64_t> in_axes = n.attr_ints("scan_input_axes", std::vector<int64_t>(k, 0));
  std::vector<int64_t> in_dirs =
      n.attr_ints(v8 ? "directions" : "scan_input_directions", std::vector<int64_t>(k, 0));
  if (in_axes.size() != k || in_dirs.size() != k)
    throw node_error(n, "scan input axes/directions do not match num_scan_inputs");
  size_t n_scan_out = n.outputs.size() - n_states;
  std::vector<int64_t> out_axes =
      n.attr_ints("scan_output_axes", std::vector<int64_t>(n_scan_out, 0));
  std::vector<int64_t> out_dirs =
      n.attr_ints("scan_output_directions", std::vector<int64_t>(n_scan_out, 0));
  if (out_axes.size() != n_scan_out || out_dirs.size() != n_scan_out)
    throw node_error(n, "scan output axes/directions do not match the outputs");

  std::vector<Shape> shapes;
  for (size_t j = 0; j < k; ++j) {
    const graph::TensorType* t = b.scope().type(xs[j]);
    if (!t) throw node_error(n, "scan input " + std::to_string(j) + " has no known type");
    shapes.push_back(t->shape);
  }
  auto collect = [&](std::vector<std::string> elems, int64_t axis, int64_t dir,
                     const std::string& out) {
    if (dir) std::reverse(elems.begin(), elems.end());
    const graph::TensorType* t = elems.empty() ? nullptr : b.scope().type(elems[0]);
    if (axis < 0 && !t)
      throw node_error(n,
                       "not supported: a negative scan output axis of a body output whose "
                       "rank is not known yet");
    if (axis < 0) axis += static_cast<int64_t>(t->shape.size()) + 1;
    b.stack(elems, axis, out);
  };
  if (!v8) {
    std::vector<std::string> fin;
    std::vector<std::vector<std::string>> outs;
    scan_once(b, body, states, xs, shapes, in_axes, in_dirs, "", fin, outs);
    for (size_t j = 0; j < n_states; ++j)
      if (!n.outputs[j].empty()) b.forward(fin[j], n.outputs[j]);
    for (size_t j = 0; j < n_scan_out && j < outs.size(); ++j)
      if (!n.outputs[n_states + j].empty())
        collect(outs[j], out_axes[j], out_dirs[j], n.outputs[n_states + j]);
    return;
  }
  // Opset 8: every input has a leading batch axis; the scan runs per batch entry over axis 1
  // (axis 0 once the batch entry is taken), and results are stacked over the batch.
  std::vector<Shape> row_shapes;
  for (const Shape& sh : shapes) {
    if (sh.empty() || sh[0] != shapes[0][0])
      throw node_error(n, "scan inputs need the same leading batch axis");
    row_shapes.emplace_back(sh.begin() + 1, sh.end());
  }
  int64_t batch = shapes[0][0];
  std::vector<std::vector<std::string>> state_rows(n_states), out_rows(n_scan_out);
  for (int64_t bi = 0; bi < batch; ++bi) {
    std::vector<std::string> st, x;
    for (const std::string& s : states) st.push_back(b.take(s, bi, 0));
    for (const std::string& v : xs) x.push_back(b.take(v, bi, 0));
    std::vector<std::string> fin;
    std::vector<std::vector<std::string>> outs;
    scan_once(b, body, st, x, row_shapes, std::vector<int64_t>(k, 0), in_dirs,
              "b" + std::to_string(bi) + "/", fin, outs);
    for (size_t j = 0; j < n_states; ++j) state_rows[j].push_back(fin[j]);
    for (size_t j = 0; j < n_scan_out && j < outs.size(); ++j) {
      std::string stacked = b.fresh("scan_out");
      collect(outs[j], 0, 0, stacked);
      out_rows[j].push_back(stacked);
    }
  }
  for (size_t j = 0; j < n_states; ++j)
    if (!n.outputs[j].empty()) b.stack(state_rows[j], 0, n.outputs[j]);
  for (size_t j = 0; j < n_scan_out; ++j)
    if (!n.outputs[n_states + j].empty()) b.stack(out_rows[j], 0, n.outputs[n_states + j]);
}

const std::set<std::string>& structured_ops() {
  static const std::set<std::string> ops = {"If",
                                            "Loop",
                                            "Scan",
                                            "SequenceMap",
                                            "SequenceEmpty",
                                            "SequenceConstruct",
                                            "SequenceInsert",
                                            "SequenceErase",
                                            "SequenceAt",
                                            "SequenceLength",
                                            "ConcatFromSequence",
                                            "SplitToSequence",
                                            "Optional",
                                            "OptionalHasElement",
                                            "OptionalGetElement"};
  return ops;
}

}  // namespace

bool is_structured_op(const graph::Node& node) {
  return (node.domain.empty() || node.domain == "ai.onnx") && structured_ops().count(node.op_type);
}

Expansion expand_structured(const graph::Node& node, ExpandScope& scope) {
  Expansion out;
  Builder b(node, scope, out);
  const std::string& op = node.op_type;
  if (op == "If")
    expand_if(b);
  else if (op == "Loop")
    expand_loop(b);
  else if (op == "Scan")
    expand_scan(b);
  else if (op == "SequenceMap")
    expand_sequence_map(b);
  else
    expand_sequence_op(b);
  return out;
}

}  // namespace souffle::lower
