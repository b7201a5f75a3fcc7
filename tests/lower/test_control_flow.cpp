// Tests of the structured ops resolved at compile time (core/lower/control_flow): If, Loop,
// Scan and sequences, expanded while types are inferred, then lowered and run.
#include <gtest/gtest.h>

#include "core/interp/infer_fold.h"
#include "core/interp/interpreter.h"
#include "core/lower/control_flow.h"
#include "tests/lower/lower_test_util.h"

namespace souffle::lower {
namespace {

using namespace souffle::lower::testing;

/// A small graph built by hand (model graphs and bodies alike).
struct Builder {
  graph::Graph g;
  explicit Builder(int64_t opset = 13) {
    g.name = "g";
    g.opset = opset;
  }
  void input(const std::string& name, DType t, Shape s) {
    graph::Value v;
    v.name = name;
    v.type = {t, std::move(s)};
    v.type_known = true;
    g.values[name] = v;
    g.inputs.push_back(name);
  }
  void body_input(const std::string& name) { g.inputs.push_back(name); }
  void constant(const std::string& name, ConstTensorPtr data) {
    graph::Value v;
    v.name = name;
    v.constant = data;
    v.type = {data->dtype(), data->shape()};
    v.type_known = true;
    g.values[name] = v;
  }
  graph::Node& node(const std::string& op, std::vector<std::string> ins,
                    std::vector<std::string> outs, std::map<std::string, graph::Attribute> a = {}) {
    graph::Node n;
    n.name = op + "_" + std::to_string(g.nodes.size());
    n.op_type = op;
    n.inputs = std::move(ins);
    n.outputs = std::move(outs);
    n.attrs = std::move(a);
    for (const std::string& o : n.outputs) g.values[o].name = o;
    g.nodes.push_back(std::move(n));
    return g.nodes.back();
  }
};

graph::Attribute graph_attr(const graph::Graph& body) {
  graph::Attribute a;
  a.kind = graph::Attribute::Kind::Graph;
  a.g = std::make_shared<const graph::Graph>(body);
  return a;
}

/// Infers, folds, lowers and runs `g` on `inputs`; no structured node may remain.
std::vector<ConstTensorPtr> run_graph(graph::Graph g, const std::vector<ConstTensorPtr>& inputs) {
  interp::infer_and_fold(g);
  for (const graph::Node& n : g.nodes) EXPECT_FALSE(is_structured_op(n)) << n.name;
  te::TeProgram p = lower_graph(g);
  return interp::run(p, inputs);
}

TEST(ControlFlow, LoopUnrollsWithCarriedAndScanOutputs) {
  // body(i, cond, y): y' = y + i; scan output y'.
  Builder body;
  body.body_input("i");
  body.body_input("c");
  body.body_input("y");
  body.node("Cast", {"i"}, {"fi"}, {{"to", int_attr(1)}});
  body.node("Add", {"y", "fi"}, {"y2"});
  body.node("Identity", {"c"}, {"c2"});
  body.g.outputs = {"c2", "y2", "y2"};
  Builder m;
  m.input("y", DType::Float32, {1});
  m.constant("trip", values({}, {4}, DType::Int64));
  m.constant("cond", values({}, {1}, DType::Bool));
  m.node("Loop", {"trip", "cond", "y"}, {"y_final", "ys"}, {{"body", graph_attr(body.g)}});
  m.g.outputs = {"y_final", "ys"};
  auto out = run_graph(m.g, {values({1}, {10})});
  expect_values(out[0], {1}, DType::Float32, {16});  // 10 + 0 + 1 + 2 + 3
  expect_values(out[1], {4, 1}, DType::Float32, {10, 11, 13, 16});
}

TEST(ControlFlow, LoopNeedsAConstantTripCountAndACondition) {
  Builder body;
  body.body_input("i");
  body.body_input("c");
  body.body_input("y");
  // The condition computed from data: y < 100.
  body.constant("hundred", values({1}, {100}));
  body.node("Less", {"y", "hundred"}, {"lt"});
  body.node("Squeeze", {"lt"}, {"c2"});
  body.node("Add", {"y", "y"}, {"y2"});
  body.g.outputs = {"c2", "y2"};
  Builder m;
  m.input("y", DType::Float32, {1});
  m.input("trip", DType::Int64, {});
  m.constant("cond", values({}, {1}, DType::Bool));
  m.node("Loop", {"trip", "cond", "y"}, {"y_final"}, {{"body", graph_attr(body.g)}});
  m.g.outputs = {"y_final"};
  graph::Graph g = m.g;
  try {
    interp::infer_and_fold(g);
    FAIL() << "a trip count from an input must be refused";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("the trip count must be a constant"), std::string::npos)
        << e.what();
  }
  m.g.inputs.pop_back();
  m.g.values.erase("trip");
  m.constant("trip", values({}, {5}, DType::Int64));
  g = m.g;
  try {
    interp::infer_and_fold(g);
    FAIL() << "a data-dependent condition must be refused";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("not supported: the loop condition depends on the input"),
              std::string::npos)
        << e.what();
  }
}

TEST(ControlFlow, IfFoldsAConstantConditionElseSelects) {
  Builder then_b, else_b;
  then_b.constant("t", values({2}, {1, 2}));
  then_b.node("Identity", {"t"}, {"to"});
  then_b.g.outputs = {"to"};
  else_b.node("Neg", {"x"}, {"eo"});  // reads the outer x
  else_b.g.outputs = {"eo"};
  Builder m;
  m.input("c", DType::Bool, {});
  m.input("x", DType::Float32, {2});
  m.node("If", {"c"}, {"r"},
         {{"then_branch", graph_attr(then_b.g)}, {"else_branch", graph_attr(else_b.g)}});
  m.g.outputs = {"r"};
  auto yes = run_graph(m.g, {values({}, {1}, DType::Bool), values({2}, {5, 6})});
  expect_values(yes[0], {2}, DType::Float32, {1, 2});
  auto no = run_graph(m.g, {values({}, {0}, DType::Bool), values({2}, {5, 6})});
  expect_values(no[0], {2}, DType::Float32, {-5, -6});
  // Branches of different shapes cannot be selected between.
  Builder m2 = m;
  m2.g.values["x"].type.shape = {3};
  try {
    graph::Graph g = m2.g;
    interp::infer_and_fold(g);
    FAIL() << "branches of different shapes must be refused";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("shape would depend on the condition"), std::string::npos)
        << e.what();
  }
}

TEST(ControlFlow, ScanSumsRows) {
  // scan9_sum: state s, input rows x[t]: s' = s + x[t], scan output s'.
  Builder body;
  body.body_input("s");
  body.body_input("row");
  body.node("Add", {"s", "row"}, {"s2"});
  body.node("Identity", {"s2"}, {"o"});
  body.g.outputs = {"s2", "o"};
  Builder m(9);
  m.input("init", DType::Float32, {2});
  m.input("x", DType::Float32, {3, 2});
  m.node("Scan", {"init", "x"}, {"s", "z"},
         {{"body", graph_attr(body.g)}, {"num_scan_inputs", int_attr(1)}});
  m.g.outputs = {"s", "z"};
  auto out = run_graph(m.g, {values({2}, {0, 0}), values({3, 2}, {1, 2, 3, 4, 5, 6})});
  expect_values(out[0], {2}, DType::Float32, {9, 12});
  expect_values(out[1], {3, 2}, DType::Float32, {1, 2, 4, 6, 9, 12});
}

TEST(ControlFlow, SequencesFoldAway) {
  Builder m;
  m.input("a", DType::Float32, {2});
  m.input("b", DType::Float32, {2});
  m.constant("zero", values({}, {0}, DType::Int64));
  m.node("SequenceConstruct", {"a", "b"}, {"s"});
  m.node("SequenceInsert", {"s", "b", "zero"}, {"s2"});  // [b, a, b]
  m.node("SequenceLength", {"s2"}, {"len"});
  m.node("ConcatFromSequence", {"s2"}, {"cat"}, {{"axis", int_attr(0)}});
  m.node("SequenceErase", {"s2"}, {"s3"});  // [b, a]
  m.g.outputs = {"cat", "len", "s3"};
  graph::Graph g = m.g;
  interp::infer_and_fold(g);
  // The sequence output becomes its two tensors.
  EXPECT_EQ(g.outputs, (std::vector<std::string>{"cat", "len", "b", "a"}));
  auto out = run_graph(m.g, {values({2}, {1, 2}), values({2}, {3, 4})});
  expect_values(out[0], {6}, DType::Float32, {3, 4, 1, 2, 3, 4});
  expect_values(out[1], {}, DType::Int64, {3});
  expect_values(out[2], {2}, DType::Float32, {3, 4});
  expect_values(out[3], {2}, DType::Float32, {1, 2});
}

}  // namespace
}  // namespace souffle::lower
