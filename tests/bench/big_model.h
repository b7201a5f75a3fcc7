/// \file A generated ONNX model of about N nodes for the explorer's benchmarks and big-graph tests
/// (a graph as large as a full-size model at TE level, or larger): blocks of ten nodes — a
/// projection, a gated activation, a residual and a normalization — chained, with a skip every
/// eighth block so that the layout is no single column.
#pragma once

#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

namespace souffle::bench {

namespace big_model_detail {
inline void add_io(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto>* list,
                   const std::string& name, const std::vector<int64_t>& dims) {
  auto* vi = list->Add();
  vi->set_name(name);
  auto* tt = vi->mutable_type()->mutable_tensor_type();
  tt->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) tt->mutable_shape()->add_dim()->set_dim_value(d);
}

inline void add_init(onnx::GraphProto* g, const std::string& name, const std::vector<int64_t>& dims,
                     float scale) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto::FLOAT);
  int64_t n = 1;
  for (int64_t d : dims) {
    t->add_dims(d);
    n *= d;
  }
  for (int64_t i = 0; i < n; ++i)
    t->add_float_data(scale * static_cast<float>((i * 7919) % 97 - 48) / 97.0f);
}

inline void add_node(onnx::GraphProto* g, const std::string& op, const std::vector<std::string>& in,
                     const std::string& out, const std::string& name) {
  auto* n = g->add_node();
  n->set_op_type(op);
  n->set_name(name);
  for (const std::string& i : in) n->add_input(i);
  n->add_output(out);
}

}  // namespace big_model_detail

/// The model: nodes / 10 blocks (so nodes rounded down to a multiple of ten), tensors 1 x width.
inline onnx::ModelProto make_big_model(int nodes, int width = 64) {
  using namespace big_model_detail;
  onnx::ModelProto m;
  m.set_ir_version(8);
  auto* opset = m.add_opset_import();
  opset->set_domain("");
  opset->set_version(13);
  onnx::GraphProto* g = m.mutable_graph();
  g->set_name("big");
  add_io(g->mutable_input(), "x", {1, width});
  add_init(g, "w", {width, width}, 0.1f);
  add_init(g, "b", {width}, 0.01f);
  add_init(g, "eps", {1}, 1e-5f);
  std::string x = "x", skip = "x";
  const int blocks = nodes / 10;
  for (int k = 0; k < blocks; ++k) {
    // Names carry a module path, as PyTorch's exporter writes them.
    const std::string p = "/layers." + std::to_string(k) + "/";
    auto v = [&](const std::string& s) { return p + s; };
    add_node(g, "MatMul", {x, "w"}, v("proj_out"), v("proj/MatMul"));
    add_node(g, "Add", {v("proj_out"), "b"}, v("bias_out"), v("proj/Add"));
    add_node(g, "Relu", {v("bias_out")}, v("relu_out"), v("act/Relu"));
    add_node(g, "Sigmoid", {v("bias_out")}, v("gate_out"), v("gate/Sigmoid"));
    add_node(g, "Mul", {v("relu_out"), v("gate_out")}, v("gated_out"), v("gate/Mul"));
    add_node(g, "Add", {v("gated_out"), k % 8 == 7 ? skip : x}, v("res_out"), v("residual/Add"));
    add_node(g, "ReduceMean", {v("res_out")}, v("mean_out"), v("norm/ReduceMean"));
    g->mutable_node(g->node_size() - 1)->add_attribute()->set_name("keepdims");
    {
      auto* a = g->mutable_node(g->node_size() - 1)->mutable_attribute(0);
      a->set_type(onnx::AttributeProto::INT);
      a->set_i(1);
      auto* axes = g->mutable_node(g->node_size() - 1)->add_attribute();
      axes->set_name("axes");
      axes->set_type(onnx::AttributeProto::INTS);
      axes->add_ints(-1);
    }
    add_node(g, "Sub", {v("res_out"), v("mean_out")}, v("centered_out"), v("norm/Sub"));
    add_node(g, "Mul", {v("centered_out"), v("centered_out")}, v("sq_out"), v("norm/Mul"));
    add_node(g, "Add", {v("sq_out"), "eps"}, v("out"), v("norm/Add"));
    if (k % 8 == 7) skip = v("out");
    x = v("out");
  }
  add_io(g->mutable_output(), x, {1, width});
  return m;
}

}  // namespace souffle::bench
