#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/te/builder.h"
#include "core/te/equal.h"
#include "core/te/mutator.h"
#include "core/te/printer.h"
#include "core/te/verify.h"

namespace souffle::te {
namespace {

Op matmul(const Tensor& a, const Tensor& b, const std::string& name = "C") {
  return reduce(name, {a->shape[0], b->shape[1]}, DType::Float32, ReduceKind::Sum, {a->shape[1]},
                [&](const std::vector<Expr>& i, const std::vector<Expr>& k) {
                  return read(a, {i[0], k[0]}) * read(b, {k[0], i[1]});
                },
                {}, {"MatMul_3", "MatMul"});
}

// ---- printer ----

TEST(Printer, Expressions) {
  Tensor x = make_input("x", {8}, DType::Float32);
  Expr i = var("i0");
  EXPECT_EQ(print(select(lt(i, int_imm(3)), read(x, {i}), float_imm(0))),
            "select((i0 < 3), x[i0], 0f)");
  EXPECT_EQ(print(cast(DType::Float32, i)), "cast<f32>(i0)");
  EXPECT_EQ(print(min(i, int_imm(-2)) + floordiv(i, int_imm(4))),
            "(min(i0, -2) + floordiv(i0, 4))");
  EXPECT_EQ(print(exp(read(x, {i})) * 0.1), "(exp(x[i0]) * 0.1f)");
  EXPECT_EQ(print(-read(x, {i})), "-x[i0]");
  EXPECT_EQ(print(logical_not(eq(i, int_imm(0)))), "!(i0 == 0)");
  EXPECT_EQ(print(pow(float_imm(2.5, DType::Float64), float_imm(3, DType::Float64))),
            "pow(2.5, 3.0)");
  EXPECT_EQ(print(float_imm(1.5, DType::Float16)), "1.5h");
  EXPECT_EQ(print(float_imm(-std::numeric_limits<double>::infinity())), "-inff");
  EXPECT_EQ(print(int_imm(1, DType::Bool)), "true");
}

TEST(Printer, FloatsRoundTrip) {
  for (double v : {0.1, 1.0 / 3.0, 1e-300, 123456789.125, -2.5e17}) {
    std::string s = print(float_imm(v, DType::Float64));
    EXPECT_EQ(std::stod(s), v) << s;
  }
  float f = 1.0f / 3.0f;
  std::string s = print(float_imm(f, DType::Float32));
  EXPECT_EQ(std::stof(s.substr(0, s.size() - 1)), f) << s;
}

TEST(Printer, ComputeOpGolden) {
  Tensor a = make_input("A", {4, 16}, DType::Float32);
  Tensor b = make_input("B", {16, 8}, DType::Float32);
  Op op = matmul(a, b, "T");
  EXPECT_EQ(print(*op),
            "T[i0 < 4, i1 < 8] = sum(k0 < 16; (A[i0, k0] * B[k0, i1]))   # MatMul_3 (MatMul)");
  Op with_init = reduce(
      "M", {4}, DType::Float32, ReduceKind::Max, {16},
      [&](const std::vector<Expr>& i, const std::vector<Expr>& k) {
        return read(a, {i[0], k[0]});
      },
      float_imm(0));
  EXPECT_EQ(print(*with_init), "M[i0 < 4] = max(k0 < 16; A[i0, k0]; init = 0f)");
}

TEST(Printer, ProgramGolden) {
  Tensor x = make_input("x", {2, 3}, DType::Float32);
  Tensor c = make_constant("c", TensorData::from_i64(DType::Int64, {3}, {1, 2, 3}));
  TeProgram p;
  p.name = "tiny";
  p.inputs = {x};
  Op op = compute("y", {2, 3}, DType::Float32, [&](const std::vector<Expr>& i) {
    return read(x, {i[0], i[1]}) + cast(DType::Float32, read(c, {i[1]}));
  });
  p.ops = {op};
  p.outputs = {op->output};
  EXPECT_EQ(print(p),
            "program tiny\n"
            "  input x: f32[2, 3]\n"
            "  const c: i64[3] = [1, 2, 3]\n"
            "  y[i0 < 2, i1 < 3] = (x[i0, i1] + cast<f32>(c[i1]))\n"
            "  output y: f32[2, 3]\n");
}

// ---- verifier ----

TeProgram good_program() {
  Tensor a = make_input("a", {4, 16}, DType::Float32);
  Tensor b = make_input("b", {16, 8}, DType::Float32);
  TeProgram p;
  p.name = "mm";
  p.inputs = {a, b};
  Op op = matmul(a, b);
  p.ops = {op};
  p.outputs = {op->output};
  return p;
}

void expect_verify_error(const ComputeOp& op, const std::string& fragment) {
  try {
    verify(op);
    ADD_FAILURE() << "no error, expected: " << fragment;
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(op.name), std::string::npos) << e.what();
  }
}

TEST(Verify, AcceptsGoodProgram) {
  EXPECT_NO_THROW(verify(good_program()));
}

TEST(Verify, CatchesBrokenOps) {
  TeProgram p = good_program();
  const ComputeOp& base = *p.ops[0];
  {
    ComputeOp op = base;
    op.body = cast(DType::Float64, op.body);
    expect_verify_error(op, "body type");
  }
  {
    ComputeOp op = base;
    op.init = float_imm(0, DType::Float64);
    expect_verify_error(op, "init type");
  }
  {
    ComputeOp op = base;
    op.body = op.body + cast(DType::Float32, var("stray"));
    expect_verify_error(op, "variable stray");
  }
  {
    ComputeOp op = base;
    op.axes[1].extent = 9;
    expect_verify_error(op, "differ from the output shape");
  }
  {
    ComputeOp op = base;
    // A read with a missing index, built around the validating constructor.
    op.body = Expr(std::make_shared<Read>(p.inputs[0], std::vector<Expr>{op.axes[0].var}));
    expect_verify_error(op, "1 indices for rank 2");
  }
  {
    ComputeOp op = base;
    op.body = read(p.inputs[0], {int_imm(4), op.reduce_axes[0].var});
    expect_verify_error(op, "constant index 4 out of bounds");
  }
  {
    ComputeOp op = base;
    auto t = std::make_shared<TensorNode>();
    t->name = "k";
    t->shape = {2};
    t->source = TensorNode::Source::Constant;
    op.body = read(t, {int_imm(0)});
    expect_verify_error(op, "constant k has no data");
  }
  {
    ComputeOp op = base;
    op.init = Expr();
    expect_verify_error(op, "init is undefined");
  }
  {
    ComputeOp op = base;
    op.reduce_axes[0].var = op.axes[0].var;
    expect_verify_error(op, "appears twice");
  }
  {
    ComputeOp op = base;
    Expr i = cast(DType::Float32, op.axes[0].var);
    op.body = Expr(std::make_shared<Binary>(DType::Float32, BinaryOp::Shl, i, i));
    expect_verify_error(op, "bitwise");
  }
}

TEST(Verify, CatchesBrokenPrograms) {
  TeProgram p = good_program();
  // An op reading a tensor nobody produced.
  Tensor ghost = make_compute_tensor("ghost", {4, 8}, DType::Float32);
  Op reader = compute("r", {4, 8}, DType::Float32, [&](const std::vector<Expr>& i) {
    return read(ghost, {i[0], i[1]});
  });
  TeProgram q = p;
  q.ops.push_back(reader);
  EXPECT_THROW(verify(q), InternalError);
  // Duplicate op names.
  TeProgram d = p;
  d.ops.push_back(matmul(p.inputs[0], p.inputs[1]));
  EXPECT_THROW(verify(d), InternalError);
  // An output that is never computed.
  TeProgram o = p;
  o.outputs.push_back(ghost);
  EXPECT_THROW(verify(o), InternalError);
  TeProgram n = p;
  n.outputs.push_back(nullptr);
  EXPECT_THROW(verify(n), InternalError);
}

// ---- equality ----

TEST(Equal, ExprsAndOpsModuloVarNames) {
  Tensor a = make_input("a", {4, 16}, DType::Float32);
  Tensor b = make_input("b", {16, 8}, DType::Float32);
  Op m1 = matmul(a, b, "X");
  Op m2 = matmul(a, b, "Y");                // fresh vars, another name
  EXPECT_FALSE(equal(m1->body, m2->body));  // vars are only equal to themselves
  EXPECT_TRUE(equal(*m1, *m2));
  EXPECT_EQ(structural_hash(*m1), structural_hash(*m2));
  EXPECT_TRUE(equal(m1->body, m1->body));

  Tensor b2 = make_input("b", {16, 8}, DType::Float32);  // same name, another tensor
  Op m3 = matmul(a, b2);
  EXPECT_FALSE(equal(*m1, *m3));
  // Swapped axes are a different computation.
  Op t1 = compute("t", {4, 4}, DType::Float32, [&](const std::vector<Expr>& i) {
    return read(a, {i[0], i[1]});
  });
  Op t2 = compute("t", {4, 4}, DType::Float32, [&](const std::vector<Expr>& i) {
    return read(a, {i[1], i[0]});
  });
  EXPECT_FALSE(equal(*t1, *t2));
  EXPECT_NE(structural_hash(*t1), structural_hash(*t2));
  // Immediates and dtypes matter.
  EXPECT_FALSE(equal(float_imm(1.0), float_imm(1.0, DType::Float64)));
  EXPECT_FALSE(equal(float_imm(0.0), float_imm(-0.0)));
  EXPECT_TRUE(equal(float_imm(std::nan("")), float_imm(std::nan(""))));
  EXPECT_FALSE(equal(int_imm(1), int_imm(2)));
}

// ---- mutator ----

TEST(Mutator, KeepsSharingAndIdentity) {
  Tensor x = make_input("x", {8}, DType::Float32);
  Expr i = var("i");
  Expr s = read(x, {i}) * 2.0;
  Expr e = s + exp(s);
  // A mutator that changes nothing returns the very same node.
  ExprMutator id;
  EXPECT_TRUE(id.mutate(e).same_as(e));

  Expr j = var("j");
  Expr r = substitute(e, {{i.get(), j}});
  EXPECT_EQ(print(r), "((x[j] * 2f) + exp((x[j] * 2f)))");
  // The shared subexpression stays shared.
  const auto* add = r.as<Binary>();
  ASSERT_NE(add, nullptr);
  EXPECT_TRUE(add->a.same_as(add->b.as<Call>()->args[0]));
  // Untouched subtrees are reused.
  Expr k = var("k");
  Expr mixed = read(x, {i}) + read(x, {k});
  Expr m2 = substitute(mixed, {{i.get(), j}});
  EXPECT_TRUE(m2.as<Binary>()->b.same_as(mixed.as<Binary>()->b));
}

TEST(Mutator, RewriteReadsAndForEachNode) {
  Tensor x = make_input("x", {8}, DType::Float32);
  Tensor y = make_input("y", {8}, DType::Float32);
  Expr i = var("i");
  Expr e = read(x, {i + int_imm(1)}) + read(y, {i});
  int calls = 0;
  Expr r = rewrite_reads(e, [&](const Read& rd, const std::vector<Expr>& idx) -> Expr {
    ++calls;
    if (rd.tensor != x) return {};
    return exp(read(y, idx));
  });
  EXPECT_EQ(print(r), "(exp(y[(i + 1)]) + y[i])");
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(r.as<Binary>()->b.same_as(e.as<Binary>()->b));

  Expr s = read(x, {i});
  Expr dag = s * s + s;
  int count = 0;
  for_each_node(dag, [&](const Expr&) { ++count; });
  EXPECT_EQ(count, 4);  // +, *, x[i], i: shared nodes once
  // A node only its parent holds is met once through a shared parent: (i + 1) under x[i + 1].
  Expr t = read(x, {i + int_imm(1)});
  count = 0;
  for_each_node(t * t + t, [&](const Expr&) { ++count; });
  EXPECT_EQ(count, 6);  // +, *, x[i + 1], i + 1, i, 1
}

class CountReads : public ExprVisitor {
 public:
  int reads = 0;

 protected:
  void visit_Read(const Read& n, const Expr& e) override {
    ++reads;
    ExprVisitor::visit_Read(n, e);
  }
};

TEST(Visitor, VisitsEveryOccurrence) {
  Tensor x = make_input("x", {8}, DType::Float32);
  Expr i = var("i");
  Expr s = read(x, {i});
  CountReads c;
  c.visit(select(lt(i, int_imm(2)), s, s + s));
  EXPECT_EQ(c.reads, 3);
}

}  // namespace
}  // namespace souffle::te
