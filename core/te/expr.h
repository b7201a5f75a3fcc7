/// \file Tensor-expression IR: immutable expression nodes, tensors, compute ops and programs.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/support/dtype.h"
#include "core/support/error.h"
#include "core/support/tensor_data.h"

namespace souffle::te {

/// The one list of expression node kinds; it generates the kind enum, the visitor and mutator
/// hooks, the printer and structural equality (forgetting a kind is a compile error there).
#define SOUFFLE_TE_EXPR_NODES(X) \
  X(IntImm)                      \
  X(FloatImm)                    \
  X(Var)                         \
  X(Unary)                       \
  X(Binary)                      \
  X(Call)                        \
  X(Select)                      \
  X(Cast)                        \
  X(Read)

enum class ExprKind : uint8_t {
#define SOUFFLE_X(N) N,
  SOUFFLE_TE_EXPR_NODES(SOUFFLE_X)
#undef SOUFFLE_X
};

enum class UnaryOp : uint8_t { Neg, Not };
/// Arithmetic on ints follows C (Div truncates, Mod keeps the dividend's sign); FloorDiv/FloorMod
/// round toward -inf (index maps and Python-style Mod). Comparisons and logic yield Bool.
enum class BinaryOp : uint8_t {
  Add,
  Sub,
  Mul,
  Div,
  Mod,
  FloorDiv,
  FloorMod,
  Min,
  Max,
  EQ,
  NE,
  LT,
  LE,
  GT,
  GE,
  And,
  Or,
  Xor,
  BitAnd,
  BitOr,
  BitXor,
  Shl,
  Shr
};
/// Named functions. Round is round-half-to-even (ONNX Round). Pow takes two arguments.
enum class CallFn : uint8_t {
  Exp,
  Log,
  Sqrt,
  Rsqrt,
  Erf,
  Tanh,
  Sigmoid,
  Abs,
  Floor,
  Ceil,
  Round,
  Sign,
  Sin,
  Cos,
  Tan,
  Asin,
  Acos,
  Atan,
  Sinh,
  Cosh,
  Asinh,
  Acosh,
  Atanh,
  IsNaN,
  IsInf,
  IsPosInf,
  IsNegInf,
  Pow,
  Fmod
};

const char* unary_name(UnaryOp op);
const char* binary_name(BinaryOp op);  ///< "+", "-", "min", "==", "&&", ...
const char* call_name(CallFn fn);      ///< "exp", "erf", ...
bool is_comparison(BinaryOp op);
bool is_logical(BinaryOp op);

struct ExprNode;
struct TensorNode;

/// A reference-counted handle to an immutable expression node.
class Expr {
 public:
  Expr() = default;
  explicit Expr(std::shared_ptr<const ExprNode> n) : m_node(std::move(n)) {}
  bool defined() const { return m_node != nullptr; }
  const ExprNode* get() const { return m_node.get(); }
  const ExprNode* operator->() const { return m_node.get(); }
  ExprKind kind() const;
  DType dtype() const;
  /// Downcast; nullptr when the node is of another kind.
  template <typename T>
  const T* as() const;
  bool same_as(const Expr& o) const { return m_node == o.m_node; }
  /// Whether another handle may hold this node too (the node is shared, or held elsewhere);
  /// false: this handle is its only owner, so a walk from any root meets it by one path.
  bool shared() const { return m_node.use_count() > 1; }

 private:
  std::shared_ptr<const ExprNode> m_node;
};

struct ExprNode {
  ExprKind kind;
  DType dtype;
  ExprNode(ExprKind k, DType t) : kind(k), dtype(t) {}
  virtual ~ExprNode() = default;
};

/// A tensor: a program input (placeholder), a constant, or the output of one ComputeOp.
struct TensorNode {
  enum class Source : uint8_t { Input, Constant, Compute };
  std::string name;
  Shape shape;
  DType dtype = DType::Float32;
  Source source = Source::Compute;
  ConstTensorPtr data;  ///< Source::Constant only
};
using Tensor = std::shared_ptr<const TensorNode>;

Tensor make_input(std::string name, Shape shape, DType dtype);
Tensor make_constant(std::string name, ConstTensorPtr data);
Tensor make_compute_tensor(std::string name, Shape shape, DType dtype);

struct IntImm : ExprNode {
  static constexpr ExprKind kKind = ExprKind::IntImm;
  int64_t value;
  IntImm(DType t, int64_t v) : ExprNode(kKind, t), value(v) {}
};
struct FloatImm : ExprNode {
  static constexpr ExprKind kKind = ExprKind::FloatImm;
  double value;
  FloatImm(DType t, double v) : ExprNode(kKind, t), value(v) {}
};
/// An index variable (always Int64). Identity is the node itself; `name` is for printing.
struct Var : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Var;
  std::string name;
  explicit Var(std::string n) : ExprNode(kKind, DType::Int64), name(std::move(n)) {}
};
struct Unary : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Unary;
  UnaryOp op;
  Expr a;
  Unary(DType t, UnaryOp o, Expr x) : ExprNode(kKind, t), op(o), a(std::move(x)) {}
};
struct Binary : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Binary;
  BinaryOp op;
  Expr a, b;
  Binary(DType t, BinaryOp o, Expr x, Expr y)
      : ExprNode(kKind, t), op(o), a(std::move(x)), b(std::move(y)) {}
};
struct Call : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Call;
  CallFn fn;
  std::vector<Expr> args;
  Call(DType t, CallFn f, std::vector<Expr> xs) : ExprNode(kKind, t), fn(f), args(std::move(xs)) {}
};
/// cond ? t : f, evaluated lazily (only the chosen side is read), so guarded reads are safe.
struct Select : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Select;
  Expr cond, t, f;
  Select(DType ty, Expr c, Expr x, Expr y)
      : ExprNode(kKind, ty), cond(std::move(c)), t(std::move(x)), f(std::move(y)) {}
};
/// Conversion with ONNX Cast semantics (float->int truncates toward zero; ->bool is != 0).
struct Cast : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Cast;
  Expr a;
  Cast(DType t, Expr x) : ExprNode(kKind, t), a(std::move(x)) {}
};
/// tensor[indices...]; indices are Int64 expressions, one per dimension, always in bounds.
struct Read : ExprNode {
  static constexpr ExprKind kKind = ExprKind::Read;
  Tensor tensor;
  std::vector<Expr> indices;
  Read(Tensor t, std::vector<Expr> idx)
      : ExprNode(kKind, t->dtype), tensor(std::move(t)), indices(std::move(idx)) {}
};

inline ExprKind Expr::kind() const {
  return m_node->kind;
}
inline DType Expr::dtype() const {
  return m_node->dtype;
}
template <typename T>
const T* Expr::as() const {
  return m_node && m_node->kind == T::kKind ? static_cast<const T*>(m_node.get()) : nullptr;
}

// ---- validating constructors (throw InternalError on ill-typed input) ----
Expr int_imm(int64_t v, DType t = DType::Int64);
Expr float_imm(double v, DType t = DType::Float32);
/// A constant of dtype t holding v (float or int immediate as the type requires).
Expr imm(DType t, double v);
Expr var(std::string name);
Expr unary(UnaryOp op, Expr a);
/// Operands must have the same dtype (lowering inserts casts); comparisons/logic yield Bool.
Expr binary(BinaryOp op, Expr a, Expr b);
Expr call(CallFn fn, std::vector<Expr> args);
Expr select(Expr cond, Expr t, Expr f);
Expr cast(DType t, Expr a);  ///< returns `a` unchanged when it already has type t
Expr read(Tensor t, std::vector<Expr> indices);

// Convenience operators; an int64_t or double on one side becomes an immediate of the other's type.
Expr operator+(Expr a, Expr b);
Expr operator-(Expr a, Expr b);
Expr operator*(Expr a, Expr b);
Expr operator/(Expr a, Expr b);
Expr operator%(Expr a, Expr b);
Expr operator-(Expr a);
Expr operator+(Expr a, double b);
Expr operator-(Expr a, double b);
Expr operator*(Expr a, double b);
Expr operator/(Expr a, double b);
Expr operator+(double a, Expr b);
Expr operator-(double a, Expr b);
Expr operator*(double a, Expr b);
Expr operator/(double a, Expr b);
Expr min(Expr a, Expr b);
Expr max(Expr a, Expr b);
Expr floordiv(Expr a, Expr b);
Expr floormod(Expr a, Expr b);
Expr eq(Expr a, Expr b);
Expr ne(Expr a, Expr b);
Expr lt(Expr a, Expr b);
Expr le(Expr a, Expr b);
Expr gt(Expr a, Expr b);
Expr ge(Expr a, Expr b);
Expr logical_and(Expr a, Expr b);
Expr logical_or(Expr a, Expr b);
Expr logical_not(Expr a);
Expr exp(Expr a);
Expr log(Expr a);
Expr sqrt(Expr a);
Expr tanh(Expr a);
Expr erf(Expr a);
Expr sigmoid(Expr a);
Expr abs(Expr a);
Expr pow(Expr a, Expr b);

// ---- compute ops and programs ----

struct IterVar {
  Expr var;  ///< a Var
  int64_t extent = 0;
};

enum class ReduceKind : uint8_t { None, Sum, Prod, Max, Min };
const char* reduce_name(ReduceKind k);

/// Where a compute op came from in the model, for explanations and code comments.
struct Origin {
  std::string node;     ///< ONNX node name
  std::string op_type;  ///< ONNX op type
};

/// out[axes...] = body                              (reduce == None)
/// out[axes...] = fold(reduce, init, body over reduce_axes)  (a reduction)
struct ComputeOp {
  std::string name;
  Tensor output;  ///< Source::Compute; its shape = the axes' extents
  std::vector<IterVar> axes;
  ReduceKind reduce = ReduceKind::None;
  std::vector<IterVar> reduce_axes;
  Expr init;  ///< the reduction's starting value, of the output dtype (reductions only)
  Expr body;  ///< of the output dtype
  Origin origin;
};
using Op = std::shared_ptr<const ComputeOp>;

/// A DAG of compute ops in topological order.
struct TeProgram {
  std::string name;
  std::vector<Tensor> inputs;   ///< Source::Input tensors, in model-input order
  std::vector<Tensor> outputs;  ///< in model-output order (may be inputs or constants)
  std::vector<Op> ops;
};

}  // namespace souffle::te
