#include "core/te/expr.h"

namespace souffle::te {

const char* unary_name(UnaryOp op) {
  return op == UnaryOp::Neg ? "-" : "!";
}

const char* binary_name(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add:
      return "+";
    case BinaryOp::Sub:
      return "-";
    case BinaryOp::Mul:
      return "*";
    case BinaryOp::Div:
      return "/";
    case BinaryOp::Mod:
      return "%";
    case BinaryOp::FloorDiv:
      return "floordiv";
    case BinaryOp::FloorMod:
      return "floormod";
    case BinaryOp::Min:
      return "min";
    case BinaryOp::Max:
      return "max";
    case BinaryOp::EQ:
      return "==";
    case BinaryOp::NE:
      return "!=";
    case BinaryOp::LT:
      return "<";
    case BinaryOp::LE:
      return "<=";
    case BinaryOp::GT:
      return ">";
    case BinaryOp::GE:
      return ">=";
    case BinaryOp::And:
      return "&&";
    case BinaryOp::Or:
      return "||";
    case BinaryOp::Xor:
      return "xor";
    case BinaryOp::BitAnd:
      return "&";
    case BinaryOp::BitOr:
      return "|";
    case BinaryOp::BitXor:
      return "^";
    case BinaryOp::Shl:
      return "<<";
    case BinaryOp::Shr:
      return ">>";
  }
  return "?";
}

const char* call_name(CallFn fn) {
  switch (fn) {
    case CallFn::Exp:
      return "exp";
    case CallFn::Log:
      return "log";
    case CallFn::Sqrt:
      return "sqrt";
    case CallFn::Rsqrt:
      return "rsqrt";
    case CallFn::Erf:
      return "erf";
    case CallFn::Tanh:
      return "tanh";
    case CallFn::Sigmoid:
      return "sigmoid";
    case CallFn::Abs:
      return "abs";
    case CallFn::Floor:
      return "floor";
    case CallFn::Ceil:
      return "ceil";
    case CallFn::Round:
      return "round";
    case CallFn::Sign:
      return "sign";
    case CallFn::Sin:
      return "sin";
    case CallFn::Cos:
      return "cos";
    case CallFn::Tan:
      return "tan";
    case CallFn::Asin:
      return "asin";
    case CallFn::Acos:
      return "acos";
    case CallFn::Atan:
      return "atan";
    case CallFn::Sinh:
      return "sinh";
    case CallFn::Cosh:
      return "cosh";
    case CallFn::Asinh:
      return "asinh";
    case CallFn::Acosh:
      return "acosh";
    case CallFn::Atanh:
      return "atanh";
    case CallFn::IsNaN:
      return "isnan";
    case CallFn::IsInf:
      return "isinf";
    case CallFn::IsPosInf:
      return "isposinf";
    case CallFn::IsNegInf:
      return "isneginf";
    case CallFn::Pow:
      return "pow";
    case CallFn::Fmod:
      return "fmod";
  }
  return "?";
}

bool is_comparison(BinaryOp op) {
  return op >= BinaryOp::EQ && op <= BinaryOp::GE;
}
bool is_logical(BinaryOp op) {
  return op >= BinaryOp::And && op <= BinaryOp::Xor;
}

const char* reduce_name(ReduceKind k) {
  switch (k) {
    case ReduceKind::None:
      return "none";
    case ReduceKind::Sum:
      return "sum";
    case ReduceKind::Prod:
      return "prod";
    case ReduceKind::Max:
      return "max";
    case ReduceKind::Min:
      return "min";
  }
  return "?";
}

Tensor make_input(std::string name, Shape shape, DType dtype) {
  auto t = std::make_shared<TensorNode>();
  t->name = std::move(name);
  t->shape = std::move(shape);
  t->dtype = dtype;
  t->source = TensorNode::Source::Input;
  return t;
}

Tensor make_constant(std::string name, ConstTensorPtr data) {
  SOUFFLE_CHECK(data != nullptr, "make_constant: null data");
  auto t = std::make_shared<TensorNode>();
  t->name = std::move(name);
  t->shape = data->shape();
  t->dtype = data->dtype();
  t->source = TensorNode::Source::Constant;
  t->data = std::move(data);
  return t;
}

Tensor make_compute_tensor(std::string name, Shape shape, DType dtype) {
  auto t = std::make_shared<TensorNode>();
  t->name = std::move(name);
  t->shape = std::move(shape);
  t->dtype = dtype;
  t->source = TensorNode::Source::Compute;
  return t;
}

Expr int_imm(int64_t v, DType t) {
  SOUFFLE_CHECK(!is_float(t), "int_imm of a float type");
  return Expr(std::make_shared<IntImm>(t, v));
}

Expr float_imm(double v, DType t) {
  SOUFFLE_CHECK(is_float(t), "float_imm of a non-float type");
  return Expr(std::make_shared<FloatImm>(t, v));
}

Expr imm(DType t, double v) {
  if (is_float(t)) return float_imm(v, t);
  if (t == DType::Bool) return int_imm(v != 0.0 ? 1 : 0, t);
  return int_imm(static_cast<int64_t>(v), t);
}

Expr var(std::string name) {
  return Expr(std::make_shared<Var>(std::move(name)));
}

Expr unary(UnaryOp op, Expr a) {
  SOUFFLE_CHECK(a.defined(), "unary: undefined operand");
  DType t = op == UnaryOp::Not ? DType::Bool : a.dtype();
  return Expr(std::make_shared<Unary>(t, op, std::move(a)));
}

Expr binary(BinaryOp op, Expr a, Expr b) {
  SOUFFLE_CHECK(a.defined() && b.defined(), "binary: undefined operand");
  SOUFFLE_CHECK(a.dtype() == b.dtype(), std::string("binary ") + binary_name(op) +
                                            ": operand types differ (" + dtype_name(a.dtype()) +
                                            " vs " + dtype_name(b.dtype()) + ")");
  DType t = is_comparison(op) || is_logical(op) ? DType::Bool : a.dtype();
  return Expr(std::make_shared<Binary>(t, op, std::move(a), std::move(b)));
}

Expr call(CallFn fn, std::vector<Expr> args) {
  size_t want = (fn == CallFn::Pow || fn == CallFn::Fmod) ? 2 : 1;
  SOUFFLE_CHECK(args.size() == want, std::string("call ") + call_name(fn) + ": wrong arity");
  for (const Expr& e : args) SOUFFLE_CHECK(e.defined(), "call: undefined argument");
  if (want == 2)
    SOUFFLE_CHECK(args[0].dtype() == args[1].dtype(),
                  std::string("call ") + call_name(fn) + ": argument types differ");
  bool predicate = fn == CallFn::IsNaN || fn == CallFn::IsInf || fn == CallFn::IsPosInf ||
                   fn == CallFn::IsNegInf;
  DType t = predicate ? DType::Bool : args[0].dtype();
  return Expr(std::make_shared<Call>(t, fn, std::move(args)));
}

Expr select(Expr cond, Expr t, Expr f) {
  SOUFFLE_CHECK(cond.defined() && t.defined() && f.defined(), "select: undefined operand");
  SOUFFLE_CHECK(cond.dtype() == DType::Bool, "select: condition is not bool");
  SOUFFLE_CHECK(t.dtype() == f.dtype(), "select: branch types differ");
  DType ty = t.dtype();
  return Expr(std::make_shared<Select>(ty, std::move(cond), std::move(t), std::move(f)));
}

Expr cast(DType t, Expr a) {
  SOUFFLE_CHECK(a.defined(), "cast: undefined operand");
  if (a.dtype() == t) return a;
  return Expr(std::make_shared<Cast>(t, std::move(a)));
}

Expr read(Tensor t, std::vector<Expr> indices) {
  SOUFFLE_CHECK(t != nullptr, "read: null tensor");
  SOUFFLE_CHECK(indices.size() == t->shape.size(),
                "read of " + t->name + ": " + std::to_string(indices.size()) +
                    " indices for rank " + std::to_string(t->shape.size()));
  for (const Expr& e : indices)
    SOUFFLE_CHECK(e.defined() && e.dtype() == DType::Int64,
                  "read of " + t->name + ": index is not i64");
  return Expr(std::make_shared<Read>(std::move(t), std::move(indices)));
}

Expr operator+(Expr a, Expr b) {
  return binary(BinaryOp::Add, std::move(a), std::move(b));
}
Expr operator-(Expr a, Expr b) {
  return binary(BinaryOp::Sub, std::move(a), std::move(b));
}
Expr operator*(Expr a, Expr b) {
  return binary(BinaryOp::Mul, std::move(a), std::move(b));
}
Expr operator/(Expr a, Expr b) {
  return binary(BinaryOp::Div, std::move(a), std::move(b));
}
Expr operator%(Expr a, Expr b) {
  return binary(BinaryOp::Mod, std::move(a), std::move(b));
}
Expr operator-(Expr a) {
  return unary(UnaryOp::Neg, std::move(a));
}
Expr operator+(Expr a, double b) {
  DType t = a.dtype();
  return std::move(a) + imm(t, b);
}
Expr operator-(Expr a, double b) {
  DType t = a.dtype();
  return std::move(a) - imm(t, b);
}
Expr operator*(Expr a, double b) {
  DType t = a.dtype();
  return std::move(a) * imm(t, b);
}
Expr operator/(Expr a, double b) {
  DType t = a.dtype();
  return std::move(a) / imm(t, b);
}
Expr operator+(double a, Expr b) {
  DType t = b.dtype();
  return imm(t, a) + std::move(b);
}
Expr operator-(double a, Expr b) {
  DType t = b.dtype();
  return imm(t, a) - std::move(b);
}
Expr operator*(double a, Expr b) {
  DType t = b.dtype();
  return imm(t, a) * std::move(b);
}
Expr operator/(double a, Expr b) {
  DType t = b.dtype();
  return imm(t, a) / std::move(b);
}
Expr min(Expr a, Expr b) {
  return binary(BinaryOp::Min, std::move(a), std::move(b));
}
Expr max(Expr a, Expr b) {
  return binary(BinaryOp::Max, std::move(a), std::move(b));
}
Expr floordiv(Expr a, Expr b) {
  return binary(BinaryOp::FloorDiv, std::move(a), std::move(b));
}
Expr floormod(Expr a, Expr b) {
  return binary(BinaryOp::FloorMod, std::move(a), std::move(b));
}
Expr eq(Expr a, Expr b) {
  return binary(BinaryOp::EQ, std::move(a), std::move(b));
}
Expr ne(Expr a, Expr b) {
  return binary(BinaryOp::NE, std::move(a), std::move(b));
}
Expr lt(Expr a, Expr b) {
  return binary(BinaryOp::LT, std::move(a), std::move(b));
}
Expr le(Expr a, Expr b) {
  return binary(BinaryOp::LE, std::move(a), std::move(b));
}
Expr gt(Expr a, Expr b) {
  return binary(BinaryOp::GT, std::move(a), std::move(b));
}
Expr ge(Expr a, Expr b) {
  return binary(BinaryOp::GE, std::move(a), std::move(b));
}
Expr logical_and(Expr a, Expr b) {
  return binary(BinaryOp::And, std::move(a), std::move(b));
}
Expr logical_or(Expr a, Expr b) {
  return binary(BinaryOp::Or, std::move(a), std::move(b));
}
Expr logical_not(Expr a) {
  return unary(UnaryOp::Not, std::move(a));
}
Expr exp(Expr a) {
  return call(CallFn::Exp, {std::move(a)});
}
Expr log(Expr a) {
  return call(CallFn::Log, {std::move(a)});
}
Expr sqrt(Expr a) {
  return call(CallFn::Sqrt, {std::move(a)});
}
Expr tanh(Expr a) {
  return call(CallFn::Tanh, {std::move(a)});
}
Expr erf(Expr a) {
  return call(CallFn::Erf, {std::move(a)});
}
Expr sigmoid(Expr a) {
  return call(CallFn::Sigmoid, {std::move(a)});
}
Expr abs(Expr a) {
  return call(CallFn::Abs, {std::move(a)});
}
Expr pow(Expr a, Expr b) {
  return call(CallFn::Pow, {std::move(a), std::move(b)});
}

}  // namespace souffle::te
