#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <fstream>

#include "core/onnx/importer.h"
#include "core/session/load.h"
#include "core/session/test_data.h"
#include "core/session/verify.h"
#include "core/support/error.h"

namespace souffle::onnx_import {
namespace {

namespace fs = std::filesystem;
const std::string kNode = "/usr/share/libonnx-testdata/data/node/";

// ---- helpers building small models with the protobuf classes

onnx::ModelProto new_model(int64_t opset = 13) {
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* op = m.add_opset_import();
  op->set_domain("");
  op->set_version(opset);
  m.mutable_graph()->set_name("t");
  return m;
}

onnx::ValueInfoProto* add_io(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list,
                             const std::string& name, std::vector<int64_t> dims, int elem = 1) {
  auto* vi = list->Add();
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(elem);
  auto* shape = tt->mutable_shape();
  for (int64_t d : dims) shape->add_dim()->set_dim_value(d);
  return vi;
}

onnx::NodeProto* add_node(onnx::ModelProto& m, const std::string& op, std::vector<std::string> in,
                          std::vector<std::string> out, const std::string& name = "") {
  auto* n = m.mutable_graph()->add_node();
  n->set_op_type(op);
  if (!name.empty()) n->set_name(name);
  for (auto& i : in) n->add_input(i);
  for (auto& o : out) n->add_output(o);
  return n;
}

// x[2,3] -> Relu -> y
onnx::ModelProto relu_model() {
  auto m = new_model();
  add_io(m.mutable_graph()->mutable_input(), "x", {2, 3});
  add_io(m.mutable_graph()->mutable_output(), "y", {2, 3});
  add_node(m, "Relu", {"x"}, {"y"});
  return m;
}

ImportResult import_proto(const onnx::ModelProto& m, const std::string& file = "mem/model.onnx",
                          const ImportOptions& opt = {}) {
  return import_model_bytes(m.SerializeAsString(), file, opt);
}

/// Runs the import expecting a UserError; returns it for inspection.
UserError expect_error(const onnx::ModelProto& m, const std::string& file = "mem/model.onnx",
                       const ImportOptions& opt = {}) {
  try {
    import_proto(m, file, opt);
  } catch (const UserError& e) {
    return e;
  }
  ADD_FAILURE() << "import succeeded";
  return UserError("none");
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() /
           ("souffle_import_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
            "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() { fs::remove_all(path); }
};

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out << bytes;
}

// ---- real files

TEST(ImportTestdata, AddModelAndItsData) {
  auto r = import_model(kNode + "test_add/model.onnx");
  const auto& g = r.graph;
  ASSERT_EQ(g.inputs.size(), 2u);
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].op_type, "Add");
  EXPECT_FALSE(g.nodes[0].name.empty());
  EXPECT_GT(g.opset, 0);
  EXPECT_TRUE(g.value("x").type_known);
  EXPECT_EQ(graph::type_str(g.value("x").type), "f32[3, 4, 5]");
  EXPECT_FALSE(g.value(g.outputs[0]).type_known);
  auto t = read_tensor_pb(kNode + "test_add/test_data_set_0/input_0.pb");
  EXPECT_EQ(t->shape(), (Shape{3, 4, 5}));
  EXPECT_EQ(t->dtype(), DType::Float32);
}

TEST(ImportTestdata, OldOpsetInitializersListedAsInputsAreConstants) {
  auto r =
      import_model("/usr/share/libonnx-testdata/data/pytorch-converted/test_Conv2d/model.onnx");
  const auto& g = r.graph;
  ASSERT_EQ(g.inputs.size(), 1u);
  EXPECT_EQ(g.inputs[0], "0");
  EXPECT_TRUE(g.value("1").constant);
  EXPECT_TRUE(g.value("1").type_known);
  EXPECT_EQ(g.opset, 6);
}

TEST(ImportTestdata, SubgraphsAreKept) {
  auto r = import_model(kNode + "test_if/model.onnx");
  const auto& n = r.graph.nodes.at(0);
  EXPECT_EQ(n.op_type, "If");
  ASSERT_TRUE(n.has_attr("then_branch"));
  ASSERT_TRUE(n.attrs.at("then_branch").g);
  EXPECT_FALSE(n.attrs.at("then_branch").g->nodes.empty());
  auto loop = import_model(kNode + "test_loop11/model.onnx");
  EXPECT_TRUE(loop.graph.nodes.back().attrs.at("body").g);
}

TEST(ImportTestdata, ConstantNodesStayNodes) {
  auto r = import_model(kNode + "test_constant/model.onnx");
  ASSERT_EQ(r.graph.nodes.size(), 1u);
  EXPECT_EQ(r.graph.nodes[0].op_type, "Constant");
  auto t = r.graph.nodes[0].attr_tensor("value");
  ASSERT_TRUE(t);
  EXPECT_EQ(t->shape(), (Shape{5, 5}));
}

TEST(ImportTestdata, StringTypesGiveAClearError) {
  try {
    import_model(kNode + "test_strnormalizer_export_monday_casesensintive_lower/model.onnx");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_TRUE(contains(e.what(), "string")) << e.what();
    EXPECT_TRUE(contains(e.file(), "model.onnx"));
  }
}

TEST(ImportTestdata, MissingFile) {
  EXPECT_THROW(import_model("/nonexistent/model.onnx"), UserError);
  EXPECT_THROW(read_tensor_pb("/nonexistent/input_0.pb"), UserError);
}

// ---- built models: good cases

TEST(Import, NamesUnnamedNodesAndTypesOnlyInputs) {
  auto r = import_proto(relu_model());
  const auto& g = r.graph;
  ASSERT_EQ(g.nodes.size(), 1u);
  EXPECT_EQ(g.nodes[0].name, "Relu_0");
  EXPECT_EQ(g.opset, 13);
  EXPECT_EQ(g.source_file, "mem/model.onnx");
  EXPECT_TRUE(g.value("x").type_known);
  EXPECT_FALSE(g.value("y").type_known);
  EXPECT_TRUE(r.warnings.empty());
}

TEST(Import, NodesAreSorted) {
  auto m = new_model();
  add_io(m.mutable_graph()->mutable_input(), "x", {4});
  add_io(m.mutable_graph()->mutable_output(), "z", {4});
  add_node(m, "Neg", {"y"}, {"z"}, "second");
  add_node(m, "Relu", {"x"}, {"y"}, "first");
  auto r = import_proto(m);
  EXPECT_EQ(r.graph.nodes[0].name, "first");
  EXPECT_EQ(r.graph.nodes[1].name, "second");
}

TEST(Import, SymbolicDimensions) {
  auto m = relu_model();
  auto* shape =
      m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->mutable_shape();
  shape->mutable_dim(0)->set_dim_param("batch");
  shape->mutable_dim(1)->clear_dim_value();
  auto r = import_proto(m);
  EXPECT_EQ(r.graph.value("x").type.shape, (Shape{1, 1}));
  EXPECT_EQ(r.warnings.size(), 2u);
  ImportOptions opt;
  opt.dims["batch"] = 8;
  auto r2 = import_proto(m, "mem/model.onnx", opt);
  EXPECT_EQ(r2.graph.value("x").type.shape, (Shape{8, 1}));
  EXPECT_EQ(r2.warnings.size(), 1u);
}

TEST(Import, InitializerEncodings) {
  auto m = relu_model();
  auto* g = m.mutable_graph();
  auto* h = g->add_initializer();
  h->set_name("half");
  h->set_data_type(10);
  h->add_dims(2);
  h->add_int32_data(float_to_half(1.5f));
  h->add_int32_data(float_to_half(-2.0f));
  auto* b = g->add_initializer();
  b->set_name("flag");
  b->set_data_type(9);
  b->add_dims(3);
  for (int v : {1, 0, 1}) b->add_int32_data(v);
  auto* d = g->add_initializer();
  d->set_name("dbl");
  d->set_data_type(11);
  d->add_double_data(0.25);  // a scalar: no dims, one value
  auto* u = g->add_initializer();
  u->set_name("big");
  u->set_data_type(13);
  u->add_dims(1);
  u->add_uint64_data(uint64_t{1} << 63);
  auto* raw = g->add_initializer();
  raw->set_name("raw");
  raw->set_data_type(7);
  raw->add_dims(2);
  int64_t vals[2] = {-3, 9};
  raw->set_raw_data(std::string(reinterpret_cast<const char*>(vals), sizeof vals));
  auto r = import_proto(m);
  const auto& gr = r.graph;
  EXPECT_FLOAT_EQ(static_cast<float>(gr.value("half").constant->get_f64(0)), 1.5f);
  EXPECT_FLOAT_EQ(static_cast<float>(gr.value("half").constant->get_f64(1)), -2.0f);
  EXPECT_EQ(gr.value("flag").constant->to_i64(), (std::vector<int64_t>{1, 0, 1}));
  EXPECT_EQ(gr.value("dbl").constant->shape(), Shape{});
  EXPECT_DOUBLE_EQ(gr.value("dbl").constant->get_f64(0), 0.25);
  EXPECT_EQ(gr.value("big").constant->as<uint64_t>()[0], uint64_t{1} << 63);
  EXPECT_EQ(gr.value("raw").constant->to_i64(), (std::vector<int64_t>{-3, 9}));
  EXPECT_EQ(graph::type_str(gr.value("raw").type), "i64[2]");
  EXPECT_EQ(gr.inputs.size(), 1u);
}

TEST(Import, ExternalDataInsideTheFolder) {
  TempDir dir;
  float vals[4] = {1, 2, 3, 4};
  std::string blob(8, 'x');
  blob += std::string(reinterpret_cast<const char*>(vals), sizeof vals);
  fs::create_directories(dir.path / "weights");
  write_file(dir.path / "weights" / "w.bin", blob);
  auto m = relu_model();
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name("w");
  t->set_data_type(1);
  t->add_dims(4);
  t->set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
  auto kv = [&](const std::string& k, const std::string& v) {
    auto* e = t->add_external_data();
    e->set_key(k);
    e->set_value(v);
  };
  kv("location", "weights/w.bin");
  kv("offset", "8");
  kv("length", "16");
  write_file(dir.path / "model.onnx", m.SerializeAsString());
  auto r = import_model((dir.path / "model.onnx").string());
  EXPECT_EQ(r.graph.value("w").constant->to_f64(), (std::vector<double>{1, 2, 3, 4}));

  t->mutable_external_data(2)->set_value("12");  // wrong length
  write_file(dir.path / "model.onnx", m.SerializeAsString());
  EXPECT_THROW(import_model((dir.path / "model.onnx").string()), UserError);
  t->mutable_external_data(2)->set_value("16");
  t->mutable_external_data(1)->set_value("100");  // past the end
  write_file(dir.path / "model.onnx", m.SerializeAsString());
  EXPECT_THROW(import_model((dir.path / "model.onnx").string()), UserError);
}

// ---- built models: bad input

TEST(ImportBad, TruncatedAndGarbageBytes) {
  auto m = relu_model();
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name("w");
  t->set_data_type(1);
  t->add_dims(64);
  t->set_raw_data(std::string(256, '\1'));
  std::string bytes = m.SerializeAsString();
  try {
    import_model_bytes(bytes.substr(0, bytes.size() / 2), "cut.onnx");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_EQ(e.file(), "cut.onnx");
    EXPECT_EQ(e.reason().rfind("not a valid ONNX model (protobuf parse failed", 0), 0u)
        << e.reason();
  }
  // Every other cut point is a clean UserError too (or a smaller valid model), never a crash.
  for (size_t cut = 0; cut < bytes.size(); cut += 7) {
    try {
      import_model_bytes(bytes.substr(0, cut), "cut.onnx");
    } catch (const UserError&) {
    }
  }
  EXPECT_THROW(import_model_bytes(std::string("\xff\xff\xff\xff\x0f garbage", 14), "g.onnx"),
               UserError);
  EXPECT_THROW(import_model_bytes("", "empty.onnx"), UserError);
}

TEST(ImportBad, CycleNamesANode) {
  auto m = new_model();
  add_io(m.mutable_graph()->mutable_input(), "x", {4});
  add_io(m.mutable_graph()->mutable_output(), "b", {4});
  add_node(m, "Add", {"x", "b"}, {"a"}, "A");
  add_node(m, "Relu", {"a"}, {"b"}, "B");
  auto e = expect_error(m, "cyc.onnx");
  EXPECT_EQ(e.file(), "cyc.onnx");
  EXPECT_TRUE(e.node() == "A" || e.node() == "B") << e.what();
  EXPECT_TRUE(contains(e.reason(), "cycle")) << e.what();
}

TEST(ImportBad, DanglingInputNamesTheNode) {
  auto m = relu_model();
  add_node(m, "Neg", {"missing"}, {"q"}, "neg");
  auto e = expect_error(m);
  EXPECT_EQ(e.node(), "neg");
  EXPECT_TRUE(contains(e.reason(), "missing")) << e.what();
}

TEST(ImportBad, OutputNeverProduced) {
  auto m = relu_model();
  add_io(m.mutable_graph()->mutable_output(), "ghost", {1});
  EXPECT_TRUE(contains(expect_error(m).what(), "ghost"));
}

TEST(ImportBad, ExternalDataEscapingTheFolder) {
  TempDir dir;
  fs::create_directories(dir.path / "model");
  fs::create_directories(dir.path / "outside");
  write_file(dir.path / "outside" / "secret.bin", std::string(16, 'a'));
  fs::create_symlink(dir.path / "outside", dir.path / "model" / "link");
  auto m = relu_model();
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name("w");
  t->set_data_type(1);
  t->add_dims(4);
  t->set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
  auto* loc = t->add_external_data();
  loc->set_key("location");
  const std::string file = (dir.path / "model" / "model.onnx").string();
  for (std::string bad :
       {std::string("../outside/secret.bin"), (dir.path / "outside" / "secret.bin").string(),
        std::string("link/secret.bin"), std::string("a/../../outside/secret.bin"),
        std::string("")}) {
    loc->set_value(bad);
    auto e = expect_error(m, file);
    EXPECT_EQ(e.file(), file);
    EXPECT_TRUE(contains(e.reason(), "'w'")) << e.what();
  }
  // The same bytes inside the folder are accepted, so the refusals above are about the location.
  write_file(dir.path / "model" / "ok.bin", std::string(16, 'a'));
  loc->set_value("ok.bin");
  EXPECT_NO_THROW(import_proto(m, file));
}

TEST(ImportBad, AbsurdDims) {
  auto m = relu_model();
  m.mutable_graph()
      ->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->set_dim_value(-5);
  EXPECT_TRUE(contains(expect_error(m).what(), "negative"));

  auto huge = relu_model();
  auto* shape = huge.mutable_graph()
                    ->mutable_input(0)
                    ->mutable_type()
                    ->mutable_tensor_type()
                    ->mutable_shape();
  shape->mutable_dim(0)->set_dim_value(int64_t{1} << 40);
  shape->mutable_dim(1)->set_dim_value(int64_t{1} << 40);
  EXPECT_TRUE(contains(expect_error(huge).what(), "elements"));

  // An initializer declaring 2^40 elements with no data is refused before any allocation.
  auto init = relu_model();
  auto* t = init.mutable_graph()->add_initializer();
  t->set_name("w");
  t->set_data_type(1);
  t->add_dims(int64_t{1} << 40);
  auto e = expect_error(init);
  EXPECT_TRUE(contains(e.reason(), "'w'")) << e.what();

  ImportOptions small;
  small.max_elements = 5;
  EXPECT_THROW(import_proto(relu_model(), "m.onnx", small), UserError);
}

TEST(ImportBad, WrongDataLength) {
  auto m = relu_model();
  auto* t = m.mutable_graph()->add_initializer();
  t->set_name("w");
  t->set_data_type(1);
  t->add_dims(4);
  t->set_raw_data(std::string(8, '\0'));
  auto e = expect_error(m);
  EXPECT_TRUE(contains(e.reason(), "'w'")) << e.what();
  t->clear_raw_data();
  for (int i = 0; i < 3; ++i) t->add_float_data(1.0f);
  EXPECT_TRUE(contains(expect_error(m).reason(), "'w'"));
}

TEST(ImportBad, DuplicateNames) {
  auto m = relu_model();
  add_node(m, "Neg", {"x"}, {"y"}, "again");  // y produced twice
  auto e = expect_error(m);
  EXPECT_EQ(e.node(), "again");
  EXPECT_TRUE(contains(e.reason(), "'y'"));

  auto dup_init = relu_model();
  for (int k = 0; k < 2; ++k) {
    auto* t = dup_init.mutable_graph()->add_initializer();
    t->set_name("w");
    t->set_data_type(1);
    t->add_float_data(1.0f);
  }
  EXPECT_TRUE(contains(expect_error(dup_init).what(), "'w'"));

  // Repeated node names are made unique (with a warning) rather than refused.
  auto nodes = relu_model();
  nodes.mutable_graph()->mutable_node(0)->set_name("n");
  add_node(nodes, "Neg", {"y"}, {"z"}, "n");
  add_io(nodes.mutable_graph()->mutable_output(), "z", {2, 3});
  auto r = import_proto(nodes);
  EXPECT_EQ(r.graph.nodes[0].name, "n");
  EXPECT_EQ(r.graph.nodes[1].name, "n_1");
  EXPECT_EQ(r.warnings.size(), 1u);
}

TEST(ImportBad, UnsupportedTypesAndMissingShape) {
  auto m = relu_model();
  m.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->set_elem_type(8);
  EXPECT_TRUE(contains(expect_error(m).what(), "string"));
  auto s = relu_model();
  s.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  EXPECT_TRUE(contains(expect_error(s).what(), "'x'"));
  auto noop = relu_model();
  noop.mutable_graph()->mutable_node(0)->clear_op_type();
  EXPECT_EQ(expect_error(noop).node(), "_0");
}

TEST(ReadTensorPb, CorruptAndSequenceFiles) {
  TempDir dir;
  write_file(dir.path / "bad.pb", std::string("\x0a\xff\xff", 3));
  EXPECT_THROW(read_tensor_pb((dir.path / "bad.pb").string()), UserError);
  onnx::TensorProto t;
  t.set_data_type(7);
  t.add_dims(2);
  t.add_int64_data(5);
  t.add_int64_data(-6);
  write_file(dir.path / "ok.pb", t.SerializeAsString());
  EXPECT_EQ(read_tensor_pb((dir.path / "ok.pb").string())->to_i64(), (std::vector<int64_t>{5, -6}));
  const std::string seq = kNode + "test_sequence_insert_at_back/test_data_set_0/input_0.pb";
  if (fs::exists(seq)) {
    try {
      read_tensor_pb(seq);
      FAIL();
    } catch (const UserError& e) {
      EXPECT_TRUE(contains(e.reason(), "sequence")) << e.what();
    }
  }
}

}  // namespace
}  // namespace souffle::onnx_import

namespace souffle::onnx_import {
namespace {

onnx::SparseTensorProto sparse(std::vector<int64_t> dims, std::vector<int64_t> idx,
                               std::vector<float> vals) {
  onnx::SparseTensorProto sp;
  for (int64_t d : dims) sp.add_dims(d);
  auto* v = sp.mutable_values();
  v->set_name("s");
  v->set_data_type(1);
  v->add_dims(static_cast<int64_t>(vals.size()));
  for (float f : vals) v->add_float_data(f);
  auto* i = sp.mutable_indices();
  i->set_data_type(7);
  i->add_dims(static_cast<int64_t>(idx.size()));
  for (int64_t k : idx) i->add_int64_data(k);
  return sp;
}

TEST(Import, SparseInitializersAndConstantsBecomeDense) {
  auto m = relu_model();
  *m.mutable_graph()->add_sparse_initializer() = sparse({2, 3}, {1, 5}, {7, 8});
  auto* c = add_node(m, "Constant", {}, {"c"}, "const");
  auto* a = c->add_attribute();
  a->set_name("sparse_value");
  a->set_type(onnx::AttributeProto_AttributeType_SPARSE_TENSOR);
  *a->mutable_sparse_tensor() = sparse({4}, {3}, {2});
  auto r = import_proto(m);
  EXPECT_EQ(r.graph.value("s").constant->to_f64(), (std::vector<double>{0, 7, 0, 0, 0, 8}));
  EXPECT_EQ(r.graph.nodes.at(1).attr_tensor("sparse_value")->to_f64(),
            (std::vector<double>{0, 0, 0, 2}));

  auto bad = relu_model();
  *bad.mutable_graph()->add_sparse_initializer() = sparse({2, 3}, {6}, {1});
  EXPECT_TRUE(contains(expect_error(bad).reason(), "out of range"));
  // One stored value must not make the importer allocate a huge dense tensor.
  auto huge = relu_model();
  *huge.mutable_graph()->add_sparse_initializer() = sparse({int64_t{1} << 33}, {0}, {1});
  EXPECT_TRUE(contains(expect_error(huge).reason(), "too large"));
}

// ---- declared shapes are claims: Paddle2ONNX's -1

const std::string kPaddleOut = "save_infer_model/scale_0.tmp_1";

// x[-1,4] -> MatMul -> Relu -> out[-1,3], with value_info [-1,-1]: Paddle2ONNX's habits.
onnx::ModelProto paddle_style_model() {
  auto m = new_model();
  add_io(m.mutable_graph()->mutable_input(), "x", {-1, 4});
  add_io(m.mutable_graph()->mutable_output(), kPaddleOut, {-1, 3});
  add_io(m.mutable_graph()->mutable_value_info(), "fc.tmp_0", {-1, -1});
  auto* w = m.mutable_graph()->add_initializer();
  w->set_name("fc.w_0");
  w->set_data_type(1);
  w->add_dims(4);
  w->add_dims(3);
  for (int i = 0; i < 12; ++i) w->add_float_data(0.1f * static_cast<float>(i - 6));
  add_node(m, "MatMul", {"x", "fc.w_0"}, {"fc.tmp_0"});
  add_node(m, "Relu", {"fc.tmp_0"}, {kPaddleOut});
  return m;
}

bool any_warning(const std::vector<std::string>& ws, const std::string& a, const std::string& b) {
  for (const std::string& w : ws)
    if (contains(w, a) && contains(w, b)) return true;
  return false;
}

TEST(DeclaredShapes, UnknownOutputDimIsInferredWithAWarningNamingIt) {
  ImportResult r = import_proto(paddle_style_model());
  EXPECT_TRUE(any_warning(r.warnings, "output '" + kPaddleOut + "'", "inferred"));
  EXPECT_TRUE(any_warning(r.warnings, "input 'x'", "-1"));
  EXPECT_TRUE(any_warning(r.warnings, "value_info", "'fc.tmp_0'"));
  LoadedModel m = load_model_bytes(paddle_style_model().SerializeAsString(), "mem/model.onnx");
  EXPECT_EQ(m.graph.value(kPaddleOut).type.shape, (Shape{1, 3}));
  EXPECT_EQ(m.graph.value("x").type.shape, (Shape{1, 4}));
}

TEST(DeclaredShapes, UnknownInputDimTakesTheBoundValuesSize) {
  ImportOptions o;
  auto x = std::make_shared<TensorData>(DType::Float32, Shape{5, 4});
  o.bind["x"] = graph::DataValue(x);
  LoadedModel m = load_model_bytes(paddle_style_model().SerializeAsString(), "mem/model.onnx", o);
  EXPECT_EQ(m.graph.value(kPaddleOut).type.shape, (Shape{5, 3}));
}

TEST(DeclaredShapes, OtherNegativeInputDimsStayRefused) {
  auto m = paddle_style_model();
  m.mutable_graph()
      ->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(0)
      ->set_dim_value(-2);
  EXPECT_TRUE(contains(expect_error(m).reason(), "negative"));
}

TEST(DeclaredShapes, PaddleFixtureVerifiesAgainstOnnxRuntime) {
  const std::string dir =
      std::string(SOUFFLE_SOURCE_DIR) + "/tests/data/exporters/paddle_unknown_dims";
  LoadedModel m = load_model(dir + "/model.onnx");
  VerifyReport rep = verify_program(m, read_test_data(dir), VerifyOptions{});
  ASSERT_EQ(rep.checks.size(), 1u);
  EXPECT_TRUE(rep.ok) << rep.checks[0].cmp.describe();
}

// ---- inputs bound as constants (--bind)

TEST(Bind, ParsesNumbersAndRefusesTheRest) {
  auto [name, v] = parse_binding("sr=16000");
  EXPECT_EQ(name, "sr");
  ASSERT_TRUE(v.is_tensor());
  EXPECT_EQ(v.tensors[0]->dtype(), DType::Int64);
  EXPECT_EQ(v.tensors[0]->shape(), Shape{});
  EXPECT_EQ(v.tensors[0]->get_i64(0), 16000);
  auto [n2, v2] = parse_binding("scale=0.5,2");
  EXPECT_EQ(v2.tensors[0]->dtype(), DType::Float64);
  EXPECT_EQ(v2.tensors[0]->shape(), Shape{2});
  EXPECT_DOUBLE_EQ(v2.tensors[0]->get_f64(0), 0.5);
  EXPECT_EQ(parse_binding("flag=true").second.tensors[0]->get_i64(0), 1);
  for (const char* bad : {"sr", "=1", "sr=", "sr=abc", "sr=1,,2"})
    EXPECT_THROW(parse_binding(bad), UserError) << bad;
}

TEST(Bind, AScalarFillsTheDeclaredShapeInTheDeclaredType) {
  auto m = new_model();
  add_io(m.mutable_graph()->mutable_input(), "x", {2, 3});
  add_io(m.mutable_graph()->mutable_input(), "s", {1});
  add_io(m.mutable_graph()->mutable_output(), "y", {2, 3});
  add_node(m, "Mul", {"x", "s"}, {"y"});
  ImportOptions o;
  o.bind.insert(parse_binding("s=3"));
  ImportResult r = import_proto(m, "mem/model.onnx", o);
  EXPECT_EQ(r.graph.inputs, std::vector<std::string>{"x"});
  ASSERT_TRUE(r.graph.value("s").constant);
  EXPECT_EQ(r.graph.value("s").constant->dtype(), DType::Float32);
  EXPECT_EQ(r.graph.value("s").constant->shape(), Shape{1});
  EXPECT_EQ(r.graph.value("s").constant->get_f64(0), 3.0);

  o.bind.clear();
  o.bind.insert(parse_binding("s=1,2"));
  EXPECT_TRUE(contains(expect_error(m, "mem/model.onnx", o).reason(), "the value bound to it"));
  o.bind.clear();
  o.bind.insert(parse_binding("t=1"));
  UserError e = expect_error(m, "mem/model.onnx", o);
  EXPECT_TRUE(contains(e.reason(), "no model input") && contains(e.reason(), "'x', 's'"))
      << e.reason();
}

// ---- an If decided by a model input (tests/data/exporters/handwritten_models.py)

const std::string kIfModel =
    std::string(SOUFFLE_SOURCE_DIR) + "/tests/data/exporters/if_on_input/model.onnx";

TEST(InputDecidedIf, UnboundIsRefusedNamingTheIfTheInputAndTheBinding) {
  try {
    load_model(kIfModel);
    ADD_FAILURE() << "loaded";
  } catch (const UnboundControlInputs& e) {
    EXPECT_EQ(e.inputs(), std::vector<std::string>{"sr"});
    EXPECT_TRUE(contains(e.reason(),
                         "If 'If_0' depends on input 'sr': bind it with --bind "
                         "sr=VALUE"))
        << e.reason();
    // The failure of the branch that made it necessary, named.
    EXPECT_TRUE(contains(e.reason(), "else branch") && contains(e.reason(), "decoder/Reshape"))
        << e.reason();
    EXPECT_EQ(e.file(), kIfModel);
  }
}

TEST(InputDecidedIf, BoundItLoadsTheTakenBranchOnly) {
  ImportOptions o;
  o.bind.insert(parse_binding("sr=16000"));
  LoadedModel m = load_model(kIfModel, o);
  EXPECT_EQ(m.graph.inputs, std::vector<std::string>{"x"});
  for (const graph::Node& n : m.graph.nodes) EXPECT_FALSE(contains(n.name, "decoder")) << n.name;
  // The other rate takes the invalid branch: its error, no longer about binding.
  o.bind.clear();
  o.bind.insert(parse_binding("sr=8000"));
  try {
    load_model(kIfModel, o);
    ADD_FAILURE() << "loaded";
  } catch (const UnboundControlInputs&) {
    ADD_FAILURE() << "asks to bind what is bound";
  } catch (const UserError& e) {
    EXPECT_TRUE(contains(e.node(), "decoder/Reshape")) << e.what();
  }
}

TEST(InputDecidedIf, DataSetsBindTheDecidingInput) {
  const std::string dir = std::string(SOUFFLE_SOURCE_DIR) + "/tests/data/exporters/if_on_input";
  std::vector<ModelForData> runs = load_for_data(kIfModel, {}, read_test_data(dir));
  ASSERT_EQ(runs.size(), 2u);  // one model per data set
  for (const ModelForData& r : runs) {
    EXPECT_EQ(r.bound, std::vector<std::string>{"sr"});
    ASSERT_EQ(r.sets.size(), 1u);
    EXPECT_EQ(r.sets[0].inputs.size(), 1u);  // x; sr became a constant
    VerifyReport rep = verify_program(r.model, r.sets, VerifyOptions{});
    EXPECT_TRUE(rep.ok);
  }
}

// ---- input dims declared without a size: --shape, or the data's (Paddle2ONNX's habits)

// x[-1,3,?,?] (no dim_value, no dim_param) -> MaxPool 2x2 -> y: fails when ? is taken as 1.
onnx::ModelProto unsized_pool_model() {
  auto m = new_model();
  auto* x = add_io(m.mutable_graph()->mutable_input(), "x", {-1, 3});
  auto* shape = x->mutable_type()->mutable_tensor_type()->mutable_shape();
  shape->add_dim();
  shape->add_dim();
  add_io(m.mutable_graph()->mutable_output(), "y", {-1, 3, -1, -1});
  auto* n = add_node(m, "MaxPool", {"x"}, {"y"}, "pool");
  auto* k = n->add_attribute();
  k->set_name("kernel_shape");
  k->set_type(onnx::AttributeProto::INTS);
  k->add_ints(2);
  k->add_ints(2);
  return m;
}

TEST(InputShapes, AShapeSizesTheUnsizedDimsAndMustAgreeWithTheRest) {
  ImportOptions o;
  o.shapes.insert(parse_shape("x=2,3,8,6"));
  LoadedModel m = load_model_bytes(unsized_pool_model().SerializeAsString(), "mem/model.onnx", o);
  EXPECT_EQ(m.graph.value("y").type.shape, (Shape{2, 3, 7, 5}));  // 2x2 window, stride 1
  EXPECT_TRUE(m.warnings.empty() || !any_warning(m.warnings, "input 'x'", "using 1"));
  o.shapes["x"] = {2, 4, 8, 6};  // dim 1 is declared 3
  EXPECT_TRUE(contains(expect_error(unsized_pool_model(), "mem/model.onnx", o).reason(),
                       "dimension 1 is 3"));
  o.shapes["x"] = {2, 3, 8};
  EXPECT_TRUE(contains(expect_error(unsized_pool_model(), "mem/model.onnx", o).reason(), "rank"));
  o.shapes.clear();
  o.shapes["z"] = {1};
  EXPECT_TRUE(
      contains(expect_error(unsized_pool_model(), "mem/model.onnx", o).reason(), "no model input"));
  EXPECT_EQ(parse_shape("x=1,3,48,192").second, (Shape{1, 3, 48, 192}));
  EXPECT_EQ(parse_shape("s=").second, Shape{});
  for (const char* bad : {"x", "=1", "x=1,", "x=a", "x=-1"})
    EXPECT_THROW(parse_shape(bad), UserError) << bad;
}

TEST(InputShapes, AFailureNamesTheUnsizedInputsAndHowToSizeThem) {
  try {
    load_model_bytes(unsized_pool_model().SerializeAsString(), "mem/model.onnx");
    ADD_FAILURE() << "loaded";
  } catch (const UserError& e) {
    EXPECT_TRUE(contains(e.reason(), "'x' as [1, 3, 1, 1]") && contains(e.reason(), "--shape"))
        << e.reason();
  }
}

TEST(InputShapes, DataSetsSizeTheUnsizedDims) {
  TempDir dir;
  {
    std::ofstream f(dir.path / "model.onnx", std::ios::binary);
    f << unsized_pool_model().SerializeAsString();
  }
  TestDataSet ds;
  ds.dir = (dir.path / "test_data_set_0").string();
  auto x = std::make_shared<TensorData>(DType::Float32, Shape{1, 3, 4, 4});
  for (int64_t i = 0; i < x->numel(); ++i) x->set_f64(i, static_cast<double>(i % 7));
  ds.input_values = {graph::DataValue(x)};
  ds.inputs = {x};
  std::vector<ModelForData> runs = load_for_data((dir.path / "model.onnx").string(), {}, {ds});
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].model.graph.value("y").type.shape, (Shape{1, 3, 3, 3}));
}

}  // namespace
}  // namespace souffle::onnx_import
