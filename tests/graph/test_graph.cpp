#include <gtest/gtest.h>

#include "core/graph/graph.h"
#include "core/support/error.h"

namespace souffle::graph {
namespace {

Value typed_value(const std::string& name, Shape shape, DType dtype = DType::Float32) {
  Value v;
  v.name = name;
  v.type = {dtype, std::move(shape)};
  v.type_known = true;
  return v;
}

Node make_node(const std::string& name, const std::string& op, std::vector<std::string> in,
               std::vector<std::string> out) {
  Node n;
  n.name = name;
  n.op_type = op;
  n.inputs = std::move(in);
  n.outputs = std::move(out);
  return n;
}

// x -> Relu -> r -> Add(r, w) -> y, plus a dead Neg(x) -> d; nodes given out of order.
Graph sample() {
  Graph g;
  g.name = "g";
  g.opset = 13;
  g.values["x"] = typed_value("x", {2, 3});
  Value w = typed_value("w", {3});
  w.constant = TensorData::from_f64(DType::Float32, {3}, {1, 2, 3});
  g.values["w"] = w;
  g.values["r"] = typed_value("r", {2, 3});
  g.values["y"] = typed_value("y", {2, 3});
  g.values["d"] = typed_value("d", {2, 3});
  g.inputs = {"x"};
  g.outputs = {"y"};
  g.nodes.push_back(make_node("add", "Add", {"r", "w"}, {"y"}));
  g.nodes.push_back(make_node("relu", "Relu", {"x"}, {"r"}));
  g.nodes.push_back(make_node("neg", "Neg", {"x"}, {"d"}));
  return g;
}

TEST(Graph, TypeStr) {
  EXPECT_EQ(type_str({DType::Float32, {1, 3, 224, 224}}), "f32[1, 3, 224, 224]");
  EXPECT_EQ(type_str({DType::Int64, {}}), "i64[]");
}

TEST(Graph, TopoSortIsStableAndPrints) {
  Graph g = sample();
  EXPECT_THROW(verify(g), UserError);  // "add" reads r before relu defines it
  topo_sort(g);
  ASSERT_EQ(g.nodes.size(), 3u);
  EXPECT_EQ(g.nodes[0].name, "relu");
  EXPECT_EQ(g.nodes[1].name, "add");
  EXPECT_EQ(g.nodes[2].name, "neg");
  Attribute alpha;
  alpha.kind = Attribute::Kind::Float;
  alpha.f = 0.5;
  g.nodes[1].attrs["alpha"] = alpha;
  verify(g);
  EXPECT_EQ(print(g),
            "graph g opset 13\n"
            "  input x: f32[2, 3]\n"
            "  const w: f32[3]\n"
            "  relu = Relu(x) -> r: f32[2, 3]\n"
            "  add = Add(r, w) {alpha=0.5} -> y: f32[2, 3]\n"
            "  neg = Neg(x) -> d: f32[2, 3]\n"
            "  output y: f32[2, 3]\n");
}

TEST(Graph, ProducerAndInputs) {
  Graph g = sample();
  topo_sort(g);
  EXPECT_EQ(g.producer("y"), std::optional<size_t>(1));
  EXPECT_EQ(g.producer("x"), std::nullopt);
  EXPECT_EQ(g.value("w").constant->numel(), 3);
  EXPECT_THROW(g.value("missing"), InternalError);
  Node n = make_node("n", "Clip", {"a", "", ""}, {"b"});
  EXPECT_EQ(n.num_inputs(), 1u);
  EXPECT_TRUE(n.has_input(0));
  EXPECT_FALSE(n.has_input(1));
  EXPECT_FALSE(n.has_input(7));
}

TEST(Graph, RemoveDeadNodes) {
  Graph g = sample();
  topo_sort(g);
  remove_dead_nodes(g);
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_FALSE(g.has_value("d"));
  EXPECT_TRUE(g.has_value("x"));  // inputs stay even if unused
  EXPECT_TRUE(g.has_value("w"));
  verify(g);
}

TEST(Graph, CycleNamesANode) {
  Graph g = sample();
  g.nodes[1].inputs = {"y"};  // relu(y) and add(r) -> y form a cycle
  try {
    topo_sort(g);
    FAIL() << "cycle not detected";
  } catch (const UserError& e) {
    EXPECT_TRUE(e.node() == "add" || e.node() == "relu") << e.what();
    EXPECT_NE(std::string(e.what()).find("cycle"), std::string::npos);
  }
}

TEST(Graph, DanglingInputNamesTheNode) {
  Graph g = sample();
  g.nodes[2].inputs = {"nowhere"};
  try {
    topo_sort(g);
    FAIL() << "dangling input not detected";
  } catch (const UserError& e) {
    EXPECT_EQ(e.node(), "neg");
    EXPECT_NE(std::string(e.what()).find("nowhere"), std::string::npos);
  }
}

TEST(Graph, VerifyCatchesBrokenGraphs) {
  Graph base = sample();
  topo_sort(base);
  verify(base);
  {
    Graph g = base;
    g.nodes[2].name = "relu";
    EXPECT_THROW(verify(g), UserError);
  }
  {
    Graph g = base;
    g.values["r"].type_known = false;
    EXPECT_THROW(verify(g), UserError);
  }
  {
    Graph g = base;
    g.outputs.push_back("ghost");
    EXPECT_THROW(verify(g), UserError);
  }
  {
    Graph g = base;
    g.nodes[2].outputs = {"y"};  // y defined twice
    EXPECT_THROW(verify(g), UserError);
  }
}

TEST(Graph, SubgraphCapturesCountAsDependencies) {
  Graph g = sample();
  topo_sort(g);
  remove_dead_nodes(g);
  // An If whose branch reads "r" from the outer scope must come after relu, and keeps it alive.
  auto branch = std::make_shared<Graph>();
  branch->name = "then";
  branch->nodes.push_back(make_node("inner", "Identity", {"r"}, {"z"}));
  Value z;
  z.name = "z";
  branch->values["z"] = z;
  branch->outputs = {"z"};
  Node iff = make_node("if", "If", {"x"}, {"o"});
  Attribute a;
  a.kind = Attribute::Kind::Graph;
  a.g = branch;
  iff.attrs["then_branch"] = a;
  g.nodes.insert(g.nodes.begin(), iff);
  g.values["o"] = typed_value("o", {2, 3});
  g.outputs = {"o"};
  topo_sort(g);
  ASSERT_EQ(g.nodes.size(), 3u);
  EXPECT_EQ(g.nodes[0].name, "relu");
  EXPECT_EQ(g.nodes[1].name, "if");
  remove_dead_nodes(g);
  ASSERT_EQ(g.nodes.size(), 2u);
  EXPECT_EQ(g.nodes[0].name, "relu");
}

TEST(Graph, AttributeAccessors) {
  Node n;
  n.name = "conv";
  Attribute group;
  group.kind = Attribute::Kind::Int;
  group.i = 2;
  n.attrs["group"] = group;
  Attribute pads;
  pads.kind = Attribute::Kind::Ints;
  pads.ints = {1, 1, 1, 1};
  n.attrs["pads"] = pads;
  Attribute mode;
  mode.kind = Attribute::Kind::String;
  mode.s = "NOTSET";
  n.attrs["auto_pad"] = mode;
  EXPECT_EQ(n.attr_int("group", 1), 2);
  EXPECT_EQ(n.attr_int("missing", 7), 7);
  EXPECT_EQ(n.attr_ints("pads"), (std::vector<int64_t>{1, 1, 1, 1}));
  EXPECT_EQ(n.attr_string("auto_pad", ""), "NOTSET");
  EXPECT_DOUBLE_EQ(n.attr_float("group", 0), 2.0);  // an int is taken where a float is wanted
  EXPECT_EQ(n.attr_tensor("value"), nullptr);
  try {
    n.attr_ints("group");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.node(), "conv");
  }
  EXPECT_THROW(n.attr_int("pads", 0), UserError);
  EXPECT_THROW(n.attr_string("group", ""), UserError);
  EXPECT_THROW(n.attr_tensor("group"), UserError);
  EXPECT_THROW(n.attr_floats("group"), UserError);
}

}  // namespace
}  // namespace souffle::graph
