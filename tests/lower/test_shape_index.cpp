// Tests of the shape/index family lowering: inferred shapes, index maps and values computed by
// hand.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/interp/interpreter.h"
#include "core/lower/lower.h"
#include "core/te/printer.h"
#include "core/te/verify.h"
#include "tests/lower/lower_test_util.h"

namespace souffle::lower {
namespace {

using testing::int_attr;
using testing::ints_attr;
using testing::string_attr;

/// An operand: its value and whether the lowering sees it as a constant or as a placeholder.
struct Arg {
  ConstTensorPtr data;
  bool constant = false;
};
Arg in(ConstTensorPtr d) {
  return {std::move(d), false};
}
Arg cst(ConstTensorPtr d) {
  return {std::move(d), true};
}

ConstTensorPtr f32(Shape s, std::vector<double> v) {
  return TensorData::from_f64(DType::Float32, std::move(s), v);
}
ConstTensorPtr i64(Shape s, std::vector<int64_t> v) {
  return TensorData::from_i64(DType::Int64, std::move(s), v);
}
/// 0, 1, 2, ... as f32.
ConstTensorPtr iota(Shape s) {
  std::vector<double> v(static_cast<size_t>(shape_numel(s)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(i);
  return f32(std::move(s), v);
}

graph::Node make_node(const std::string& op, size_t inputs, size_t outputs = 1,
                      std::map<std::string, graph::Attribute> attrs = {}) {
  graph::Node n;
  n.name = op + "_0";
  n.op_type = op;
  for (size_t i = 0; i < inputs; ++i) n.inputs.push_back("in" + std::to_string(i));
  for (size_t i = 0; i < outputs; ++i) n.outputs.push_back("out" + std::to_string(i));
  n.attrs = std::move(attrs);
  return n;
}

NodeLowering lower(const graph::Node& node, const std::vector<Arg>& args, int64_t opset) {
  std::vector<te::Tensor> ins;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = "in" + std::to_string(i);
    if (!args[i].data)
      ins.push_back(nullptr);
    else if (args[i].constant)
      ins.push_back(te::make_constant(name, args[i].data));
    else
      ins.push_back(te::make_input(name, args[i].data->shape(), args[i].data->dtype()));
  }
  return lower_node(node, opset, ins);
}

/// Lowers and runs the node; returns every output.
std::vector<ConstTensorPtr> run(const graph::Node& node, const std::vector<Arg>& args,
                                int64_t opset = 18) {
  te::TeProgram prog;
  prog.name = "p";
  std::vector<te::Tensor> ins;
  std::vector<ConstTensorPtr> values;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = "in" + std::to_string(i);
    if (!args[i].data) {
      ins.push_back(nullptr);
    } else if (args[i].constant) {
      ins.push_back(te::make_constant(name, args[i].data));
    } else {
      ins.push_back(te::make_input(name, args[i].data->shape(), args[i].data->dtype()));
      prog.inputs.push_back(ins.back());
      values.push_back(args[i].data);
    }
  }
  NodeLowering nl = lower_node(node, opset, ins);
  prog.outputs = nl.outputs;
  prog.ops = nl.ops;
  te::verify(prog);
  return interp::run(prog, values);
}

std::vector<double> vals(const ConstTensorPtr& t) {
  return t->to_f64();
}

// ---------------------------------------------------------------- views

TEST(ShapeIndexLower, ReshapeCopiesZeroAndInfersMinusOne) {
  auto x = iota({2, 3, 4});
  auto out = run(make_node("Reshape", 2), {in(x), cst(i64({3}, {0, -1, 2}))});
  EXPECT_EQ(out[0]->shape(), (Shape{2, 6, 2}));
  EXPECT_EQ(vals(out[0]), vals(x));  // row-major order is kept
}

TEST(ShapeIndexLower, ReshapeKeepsMatchingLeadingDimsInTheIndexMap) {
  auto x = iota({2, 3, 4});
  NodeLowering nl = lower(make_node("Reshape", 2), {in(x), cst(i64({2}, {2, 12}))}, 18);
  ASSERT_EQ(nl.ops.size(), 1u);
  const auto* r = nl.ops[0]->body.as<te::Read>();
  ASSERT_NE(r, nullptr);
  // The batch dimension is read with the output's own index var, untouched.
  EXPECT_TRUE(r->indices[0].same_as(nl.ops[0]->axes[0].var));
}

TEST(ShapeIndexLower, ReshapeAllowZeroAndErrors) {
  auto x = iota({0, 3});
  std::map<std::string, graph::Attribute> az{{"allowzero", int_attr(1)}};
  NodeLowering nl = lower(make_node("Reshape", 2, 1, az), {in(x), cst(i64({2}, {3, 0}))}, 14);
  EXPECT_EQ(nl.outputs[0]->shape, (Shape{3, 0}));
  EXPECT_THROW(lower(make_node("Reshape", 2), {in(iota({2, 3})), cst(i64({1}, {4}))}, 14),
               UserError);
  EXPECT_THROW(lower(make_node("Reshape", 2), {in(iota({2, 3})), in(i64({1}, {6}))}, 14),
               UserError);
}

TEST(ShapeIndexLower, SqueezeUnsqueezeAttributeAndInputForms) {
  auto x = iota({1, 3, 1});
  std::map<std::string, graph::Attribute> ax{{"axes", ints_attr({0})}};
  EXPECT_EQ(lower(make_node("Squeeze", 1, 1, ax), {in(x)}, 11).outputs[0]->shape, (Shape{3, 1}));
  EXPECT_EQ(lower(make_node("Squeeze", 1), {in(x)}, 13).outputs[0]->shape, (Shape{3}));
  EXPECT_EQ(lower(make_node("Squeeze", 2), {in(x), cst(i64({1}, {-1}))}, 13).outputs[0]->shape,
            (Shape{1, 3}));
  EXPECT_THROW(lower(make_node("Squeeze", 2), {in(x), cst(i64({1}, {1}))}, 13), UserError);
  auto u = run(make_node("Unsqueeze", 2), {in(iota({3, 2})), cst(i64({2}, {0, -1}))});
  EXPECT_EQ(u[0]->shape(), (Shape{1, 3, 2, 1}));
  EXPECT_EQ(vals(u[0]), vals(iota({3, 2})));
}

TEST(ShapeIndexLower, FlattenAndTranspose) {
  std::map<std::string, graph::Attribute> ax{{"axis", int_attr(-1)}};
  EXPECT_EQ(lower(make_node("Flatten", 1, 1, ax), {in(iota({2, 3, 4}))}, 13).outputs[0]->shape,
            (Shape{6, 4}));
  auto t = run(make_node("Transpose", 1), {in(iota({2, 3}))});
  EXPECT_EQ(t[0]->shape(), (Shape{3, 2}));
  EXPECT_EQ(vals(t[0]), (std::vector<double>{0, 3, 1, 4, 2, 5}));
}

TEST(ShapeIndexLower, IndexMapsPrintAsSingleReads) {
  auto x = te::make_input("x", {2, 3, 4}, DType::Float32);
  graph::Node t = make_node("Transpose", 1);
  EXPECT_EQ(te::print(*lower_node(t, 13, {x}).ops[0]),
            "Transpose_0[i0 < 4, i1 < 3, i2 < 2] = x[i2, i1, i0]   # Transpose_0 (Transpose)");
  auto shape = te::make_constant("s", i64({2}, {2, 12}));
  EXPECT_EQ(te::print(*lower_node(make_node("Reshape", 2), 13, {x, shape}).ops[0]),
            "Reshape_0[i0 < 2, i1 < 12] = x[i0, floordiv(i1, 4), floormod(i1, 4)]   "
            "# Reshape_0 (Reshape)");
  std::map<std::string, graph::Attribute> reflect{{"mode", string_attr("reflect")}};
  auto pads = te::make_constant("p", i64({6}, {0, 0, 1, 0, 0, 2}));
  EXPECT_EQ(te::print(*lower_node(make_node("Pad", 2, 1, reflect), 13, {x, pads}).ops[0]),
            "Pad_0[i0 < 2, i1 < 3, i2 < 7] = x[i0, i1, select((floormod((i2 - 1), 6) < 4), "
            "floormod((i2 - 1), 6), (6 - floormod((i2 - 1), 6)))]   # Pad_0 (Pad)");
}

// ---------------------------------------------------------------- concat / split / slice

TEST(ShapeIndexLower, ConcatAlongAxis) {
  std::map<std::string, graph::Attribute> ax{{"axis", int_attr(1)}};
  auto out = run(make_node("Concat", 2, 1, ax), {in(iota({2, 1})), in(f32({2, 2}, {5, 6, 7, 8}))});
  EXPECT_EQ(out[0]->shape(), (Shape{2, 3}));
  EXPECT_EQ(vals(out[0]), (std::vector<double>{0, 5, 6, 1, 7, 8}));
}

TEST(ShapeIndexLower, SplitNumOutputsUneven) {
  std::map<std::string, graph::Attribute> at{{"num_outputs", int_attr(3)}};
  auto out = run(make_node("Split", 1, 3, at), {in(iota({7}))});
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(vals(out[0]), (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(vals(out[1]), (std::vector<double>{3, 4, 5}));
  EXPECT_EQ(vals(out[2]), (std::vector<double>{6}));
  auto s = run(make_node("Split", 2, 2), {in(iota({5})), cst(i64({2}, {1, 4}))}, 13);
  EXPECT_EQ(vals(s[1]), (std::vector<double>{1, 2, 3, 4}));
}

TEST(ShapeIndexLower, SliceNegativeStepAndClampedEnds) {
  int64_t big = std::numeric_limits<int64_t>::max();
  auto x = iota({3, 4});
  auto out = run(make_node("Slice", 5), {in(x), cst(i64({2}, {-1, 0})), cst(i64({2}, {-big, big})),
                                         cst(i64({2}, {1, 0})), cst(i64({2}, {-2, 2}))});
  EXPECT_EQ(out[0]->shape(), (Shape{2, 2}));
  EXPECT_EQ(vals(out[0]), (std::vector<double>{3, 1, 11, 9}));
  std::map<std::string, graph::Attribute> at{{"starts", ints_attr({1})},
                                             {"ends", ints_attr({100})}};
  auto old = run(make_node("Slice", 1, 1, at), {in(iota({4}))}, 9);
  EXPECT_EQ(vals(old[0]), (std::vector<double>{1, 2, 3}));
}

// ---------------------------------------------------------------- gathers and scatters

TEST(ShapeIndexLower, GatherNegativeIndicesConstantAndRuntime) {
  std::map<std::string, graph::Attribute> ax{{"axis", int_attr(1)}};
  auto x = iota({2, 3});
  auto ind = i64({2}, {-1, 0});
  for (bool c : {true, false}) {
    auto out = run(make_node("Gather", 2, 1, ax), {in(x), c ? cst(ind) : in(ind)});
    EXPECT_EQ(out[0]->shape(), (Shape{2, 2}));
    EXPECT_EQ(vals(out[0]), (std::vector<double>{2, 0, 5, 3}));
  }
  EXPECT_THROW(lower(make_node("Gather", 2), {in(x), cst(i64({1}, {2}))}, 13), UserError);
  auto scalar = run(make_node("Gather", 2), {in(x), cst(i64({}, {1}))});
  EXPECT_EQ(scalar[0]->shape(), (Shape{3}));
  EXPECT_EQ(vals(scalar[0]), (std::vector<double>{3, 4, 5}));
}

TEST(ShapeIndexLower, GatherElementsAndGatherNDBatch) {
  std::map<std::string, graph::Attribute> ax{{"axis", int_attr(1)}};
  auto ge = run(make_node("GatherElements", 2, 1, ax),
                {in(f32({2, 2}, {1, 2, 3, 4})), in(i64({2, 2}, {0, 0, 1, 0}))});
  EXPECT_EQ(vals(ge[0]), (std::vector<double>{1, 1, 4, 3}));
  std::map<std::string, graph::Attribute> bd{{"batch_dims", int_attr(1)}};
  auto nd = run(make_node("GatherND", 2, 1, bd), {in(iota({2, 2, 2})), cst(i64({2, 1}, {1, 0}))});
  EXPECT_EQ(nd[0]->shape(), (Shape{2, 2}));
  EXPECT_EQ(vals(nd[0]), (std::vector<double>{2, 3, 4, 5}));
}

TEST(ShapeIndexLower, ScatterNDReductions) {
  auto data = f32({4}, {1, 2, 3, 4});
  auto ind = i64({3, 1}, {1, 3, 1});
  auto upd = f32({3}, {10, 20, 30});
  for (bool c : {true, false}) {
    Arg ia = c ? cst(ind) : in(ind);
    EXPECT_EQ(vals(run(make_node("ScatterND", 3), {in(data), ia, in(upd)})[0]),
              (std::vector<double>{1, 30, 3, 20}));
    std::map<std::string, graph::Attribute> add{{"reduction", string_attr("add")}};
    EXPECT_EQ(vals(run(make_node("ScatterND", 3, 1, add), {in(data), ia, in(upd)})[0]),
              (std::vector<double>{1, 42, 3, 24}));
    std::map<std::string, graph::Attribute> mx{{"reduction", string_attr("max")}};
    EXPECT_EQ(vals(run(make_node("ScatterND", 3, 1, mx), {in(data), ia, in(upd)})[0]),
              (std::vector<double>{1, 30, 3, 20}));
  }
}

TEST(ShapeIndexLower, ScatterElementsAxis1WithSmallerIndices) {
  std::map<std::string, graph::Attribute> ax{{"axis", int_attr(1)}};
  auto out =
      run(make_node("ScatterElements", 3, 1, ax),
          {in(f32({2, 3}, {0, 0, 0, 0, 0, 0})), in(i64({1, 2}, {2, -3})), in(f32({1, 2}, {7, 8}))});
  EXPECT_EQ(vals(out[0]), (std::vector<double>{8, 0, 7, 0, 0, 0}));
}

// ---------------------------------------------------------------- broadcast / tile / pad

TEST(ShapeIndexLower, ExpandAndTile) {
  auto e = run(make_node("Expand", 2), {in(f32({2, 1}, {1, 2})), cst(i64({3}, {2, 1, 3}))});
  EXPECT_EQ(e[0]->shape(), (Shape{2, 2, 3}));
  EXPECT_EQ(vals(e[0]), (std::vector<double>{1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2}));
  auto t = run(make_node("Tile", 2), {in(f32({1, 2}, {1, 2})), cst(i64({2}, {2, 2}))});
  EXPECT_EQ(vals(t[0]), (std::vector<double>{1, 2, 1, 2, 1, 2, 1, 2}));
}

TEST(ShapeIndexLower, PadModes) {
  auto x = f32({3}, {1, 2, 3});
  auto pads = cst(i64({2}, {2, 3}));
  auto mode = [](const char* m) {
    return std::map<std::string, graph::Attribute>{{"mode", string_attr(m)}};
  };
  EXPECT_EQ(vals(run(make_node("Pad", 3), {in(x), pads, cst(f32({}, {9}))})[0]),
            (std::vector<double>{9, 9, 1, 2, 3, 9, 9, 9}));
  EXPECT_EQ(vals(run(make_node("Pad", 2, 1, mode("reflect")), {in(x), pads})[0]),
            (std::vector<double>{3, 2, 1, 2, 3, 2, 1, 2}));
  EXPECT_EQ(vals(run(make_node("Pad", 2, 1, mode("edge")), {in(x), pads})[0]),
            (std::vector<double>{1, 1, 1, 2, 3, 3, 3, 3}));
  EXPECT_EQ(vals(run(make_node("Pad", 2, 1, mode("wrap")), {in(x), pads})[0]),
            (std::vector<double>{2, 3, 1, 2, 3, 1, 2, 3}));
  // Negative pads crop; the opset-2 form takes pads and value as attributes.
  std::map<std::string, graph::Attribute> old{{"pads", ints_attr({-1, 1})}};
  EXPECT_EQ(vals(run(make_node("Pad", 1, 1, old), {in(x)}, 2)[0]), (std::vector<double>{2, 3, 0}));
}

TEST(ShapeIndexLower, DepthToSpaceModesAndSpaceToDepthInverse) {
  auto x = iota({1, 8, 1, 1});
  std::map<std::string, graph::Attribute> dcr{{"blocksize", int_attr(2)}};
  auto d = run(make_node("DepthToSpace", 1, 1, dcr), {in(x)});
  EXPECT_EQ(d[0]->shape(), (Shape{1, 2, 2, 2}));
  // DCR: out[c, bh, bw] = in[bh*4 + bw*2 + c]
  EXPECT_EQ(vals(d[0]), (std::vector<double>{0, 2, 4, 6, 1, 3, 5, 7}));
  auto crd = dcr;
  crd["mode"] = string_attr("CRD");
  auto c = run(make_node("DepthToSpace", 1, 1, crd), {in(x)});
  EXPECT_EQ(vals(c[0]), (std::vector<double>{0, 1, 2, 3, 4, 5, 6, 7}));
  auto back = run(make_node("SpaceToDepth", 1, 1, dcr), {in(d[0])});
  EXPECT_EQ(vals(back[0]), vals(x));
}

// ---------------------------------------------------------------- resize

TEST(ShapeIndexLower, ResizeNearestAndLinear) {
  auto x = f32({1, 1, 2, 2}, {1, 2, 3, 4});
  std::map<std::string, graph::Attribute> nn{{"mode", string_attr("nearest")}};
  auto n = run(make_node("Resize", 3, 1, nn), {in(x), {}, cst(f32({4}, {1, 1, 2, 3}))}, 13);
  EXPECT_EQ(n[0]->shape(), (Shape{1, 1, 4, 6}));
  EXPECT_EQ(vals(n[0]), (std::vector<double>{1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2,
                                             3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}));
  std::map<std::string, graph::Attribute> lin{{"mode", string_attr("linear")}};
  auto l = run(make_node("Resize", 3, 1, lin), {in(x), {}, cst(f32({4}, {1, 1, 2, 2}))}, 13);
  // The ONNX reference values of test_resize_upsample_scales_linear.
  std::vector<double> want{1,   1.25, 1.75, 2,   1.5, 1.75, 2.25, 2.5,
                           2.5, 2.75, 3.25, 3.5, 3,   3.25, 3.75, 4};
  std::vector<double> got = vals(l[0]);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-6) << i;
}

TEST(ShapeIndexLower, ResizeSizesAspectPolicyAndCropExtrapolation) {
  auto x = iota({1, 1, 4, 4});
  std::map<std::string, graph::Attribute> keep{
      {"mode", string_attr("nearest")},
      {"keep_aspect_ratio_policy", string_attr("not_larger")},
      {"axes", ints_attr({2, 3})}};
  NodeLowering nl =
      lower(make_node("Resize", 4, 1, keep), {in(x), {}, {}, cst(i64({2}, {2, 8}))}, 18);
  EXPECT_EQ(nl.outputs[0]->shape, (Shape{1, 1, 2, 2}));
  std::map<std::string, graph::Attribute> crop{
      {"mode", string_attr("linear")},
      {"coordinate_transformation_mode", string_attr("tf_crop_and_resize")}};
  crop["extrapolation_value"].kind = graph::Attribute::Kind::Float;
  crop["extrapolation_value"].f = 10;
  auto roi = cst(f32({8}, {0, 0, 0.4, 0.6, 1, 1, 1.2, 1.7}));
  auto out = run(make_node("Resize", 4, 1, crop),
                 {in(f32({1, 1, 4, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16})),
                  roi,
                  {},
                  cst(i64({4}, {1, 1, 3, 3}))},
                 13);
  // test_resize_tf_crop_and_resize_extrapolation_value's reference output.
  std::vector<double> want{7.6, 10, 10, 12.4, 10, 10, 10, 10, 10};
  std::vector<double> got = vals(out[0]);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
  std::map<std::string, graph::Attribute> aa{{"antialias", int_attr(1)}};
  EXPECT_THROW(lower(make_node("Resize", 3, 1, aa), {in(x), {}, cst(f32({4}, {1, 1, 2, 2}))}, 18),
               UserError);
}

// ---------------------------------------------------------------- the rest

TEST(ShapeIndexLower, ShapeSizeRangeAndConstantOfShapeAreStatic) {
  auto x = iota({2, 3, 4});
  std::map<std::string, graph::Attribute> se{{"start", int_attr(1)}, {"end", int_attr(-1)}};
  NodeLowering s = lower(make_node("Shape", 1, 1, se), {in(x)}, 15);
  EXPECT_TRUE(s.ops.empty());
  ASSERT_TRUE(s.outputs[0]->data);
  EXPECT_EQ(s.outputs[0]->data->to_i64(), (std::vector<int64_t>{3}));
  NodeLowering z = lower(make_node("Size", 1), {in(x)}, 13);
  EXPECT_EQ(z.outputs[0]->data->to_i64(), (std::vector<int64_t>{24}));
  auto r = run(make_node("Range", 3), {cst(i64({}, {10})), cst(i64({}, {4})), cst(i64({}, {-3}))});
  EXPECT_EQ(r[0]->to_i64(), (std::vector<int64_t>{10, 7}));
  auto c = run(make_node("ConstantOfShape", 1), {cst(i64({2}, {2, 2}))});
  EXPECT_EQ(vals(c[0]), (std::vector<double>{0, 0, 0, 0}));
}

TEST(ShapeIndexLower, TriluCumSumOneHotEyeLike) {
  std::map<std::string, graph::Attribute> lower_attr{{"upper", int_attr(0)}};
  auto t = run(make_node("Trilu", 2, 1, lower_attr), {in(iota({2, 3})), cst(i64({}, {1}))});
  EXPECT_EQ(vals(t[0]), (std::vector<double>{0, 1, 0, 3, 4, 5}));
  std::map<std::string, graph::Attribute> ex{{"exclusive", int_attr(1)}, {"reverse", int_attr(1)}};
  auto cs = run(make_node("CumSum", 2, 1, ex), {in(f32({4}, {1, 2, 3, 4})), cst(i64({}, {0}))});
  EXPECT_EQ(vals(cs[0]), (std::vector<double>{9, 7, 4, 0}));
  auto oh =
      run(make_node("OneHot", 3), {in(i64({2}, {1, -1})), cst(i64({}, {3})), in(f32({2}, {0, 5}))});
  EXPECT_EQ(oh[0]->shape(), (Shape{2, 3}));
  EXPECT_EQ(vals(oh[0]), (std::vector<double>{0, 5, 0, 0, 0, 5}));
  std::map<std::string, graph::Attribute> k{{"k", int_attr(1)}};
  auto e = run(make_node("EyeLike", 1, 1, k), {in(iota({2, 3}))});
  EXPECT_EQ(vals(e[0]), (std::vector<double>{0, 1, 0, 0, 0, 1}));
}

TEST(ShapeIndexLower, DataDependentSizesNeedConstants) {
  auto cond = TensorData::from_i64(DType::Bool, {3}, {1, 0, 1});
  std::map<std::string, graph::Attribute> ax{{"axis", int_attr(1)}};
  auto c = run(make_node("Compress", 2, 1, ax), {in(iota({2, 3})), cst(cond)});
  EXPECT_EQ(vals(c[0]), (std::vector<double>{0, 2, 3, 5}));
  EXPECT_THROW(lower(make_node("Compress", 2), {in(iota({3})), in(cond)}, 13), UserError);
  NodeLowering nz = lower(make_node("NonZero", 1), {cst(f32({2, 2}, {1, 0, 0, 3}))}, 13);
  EXPECT_EQ(nz.outputs[0]->data->to_i64(), (std::vector<int64_t>{0, 1, 0, 1}));
  EXPECT_THROW(lower(make_node("NonZero", 1), {in(iota({3}))}, 13), UserError);
}

}  // namespace
}  // namespace souffle::lower
