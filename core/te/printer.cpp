#include "core/te/printer.h"

#include <charconv>
#include <cmath>
#include <set>
#include <sstream>

#include "core/te/builder.h"
#include "core/te/equal.h"

namespace souffle::te {
namespace {

const char* float_suffix(DType t) {
  switch (t) {
    case DType::Float32:
      return "f";
    case DType::Float16:
      return "h";
    case DType::BFloat16:
      return "bf";
    default:
      return "";
  }
}

/// Shortest text that parses back to the same value; f32 values print as floats ("0.1f").
std::string float_text(double v, DType t) {
  std::string body;
  if (std::isnan(v)) {
    body = "nan";
  } else if (std::isinf(v)) {
    body = v < 0 ? "-inf" : "inf";
  } else {
    char buf[64];
    float f = static_cast<float>(v);
    std::to_chars_result r;
    if (t != DType::Float64 && static_cast<double>(f) == v)
      r = std::to_chars(buf, buf + sizeof buf, f);
    else
      r = std::to_chars(buf, buf + sizeof buf, v);
    body.assign(buf, r.ptr);
    // f64 has no suffix: keep it distinguishable from an integer.
    if (t == DType::Float64 && body.find_first_of(".en") == std::string::npos) body += ".0";
  }
  return body + float_suffix(t);
}

bool infix(BinaryOp op) {
  switch (op) {
    case BinaryOp::Min:
    case BinaryOp::Max:
    case BinaryOp::FloorDiv:
    case BinaryOp::FloorMod:
    case BinaryOp::Xor:
      return false;
    default:
      return true;
  }
}

class Printer {
 public:
  std::string print(const Expr& e) {
    std::string s;
    emit(e, s);
    return s;
  }

 private:
  void list(const std::vector<Expr>& xs, std::string& s) {
    for (size_t i = 0; i < xs.size(); ++i) {
      if (i) s += ", ";
      emit(xs[i], s);
    }
  }

  void emit(const Expr& e, std::string& s) {
    if (!e.defined()) {
      s += "<undef>";
      return;
    }
    switch (e.kind()) {
      case ExprKind::IntImm: {
        int64_t v = e.as<IntImm>()->value;
        if (e.dtype() == DType::Bool)
          s += v ? "true" : "false";
        else
          s += std::to_string(v);
        return;
      }
      case ExprKind::FloatImm:
        s += float_text(e.as<FloatImm>()->value, e.dtype());
        return;
      case ExprKind::Var:
        s += e.as<Var>()->name;
        return;
      case ExprKind::Unary: {
        const auto* u = e.as<Unary>();
        s += unary_name(u->op);
        emit(u->a, s);
        return;
      }
      case ExprKind::Binary: {
        const auto* b = e.as<Binary>();
        if (infix(b->op)) {
          s += "(";
          emit(b->a, s);
          s += " ";
          s += binary_name(b->op);
          s += " ";
          emit(b->b, s);
          s += ")";
        } else {
          s += binary_name(b->op);
          s += "(";
          emit(b->a, s);
          s += ", ";
          emit(b->b, s);
          s += ")";
        }
        return;
      }
      case ExprKind::Call: {
        const auto* c = e.as<Call>();
        s += call_name(c->fn);
        s += "(";
        list(c->args, s);
        s += ")";
        return;
      }
      case ExprKind::Select: {
        const auto* c = e.as<Select>();
        s += "select(";
        emit(c->cond, s);
        s += ", ";
        emit(c->t, s);
        s += ", ";
        emit(c->f, s);
        s += ")";
        return;
      }
      case ExprKind::Cast:
        s += "cast<";
        s += dtype_name(e.dtype());
        s += ">(";
        emit(e.as<Cast>()->a, s);
        s += ")";
        return;
      case ExprKind::Read: {
        const auto* r = e.as<Read>();
        s += r->tensor ? r->tensor->name : "<null>";
        s += "[";
        list(r->indices, s);
        s += "]";
        return;
      }
    }
  }
};

std::string axes_text(const std::vector<IterVar>& axes) {
  std::string s;
  for (size_t i = 0; i < axes.size(); ++i) {
    if (i) s += ", ";
    s += print(axes[i].var) + " < " + std::to_string(axes[i].extent);
  }
  return s;
}

std::string type_text(const TensorNode& t) {
  return std::string(dtype_name(t.dtype)) + shape_str(t.shape);
}

void collect_constants(const Expr& e, std::set<const TensorNode*>& seen,
                       std::vector<const TensorNode*>& out) {
  if (!e.defined()) return;
  switch (e.kind()) {
    case ExprKind::Unary:
      collect_constants(e.as<Unary>()->a, seen, out);
      return;
    case ExprKind::Binary:
      collect_constants(e.as<Binary>()->a, seen, out);
      collect_constants(e.as<Binary>()->b, seen, out);
      return;
    case ExprKind::Call:
      for (const Expr& a : e.as<Call>()->args) collect_constants(a, seen, out);
      return;
    case ExprKind::Select:
      collect_constants(e.as<Select>()->cond, seen, out);
      collect_constants(e.as<Select>()->t, seen, out);
      collect_constants(e.as<Select>()->f, seen, out);
      return;
    case ExprKind::Cast:
      collect_constants(e.as<Cast>()->a, seen, out);
      return;
    case ExprKind::Read: {
      const auto* r = e.as<Read>();
      if (r->tensor && r->tensor->source == TensorNode::Source::Constant &&
          seen.insert(r->tensor.get()).second)
        out.push_back(r->tensor.get());
      for (const Expr& a : r->indices) collect_constants(a, seen, out);
      return;
    }
    default:
      return;
  }
}

std::string constant_values(const TensorNode& t) {
  // Small constants (shape vectors, scalars) are shown; large ones only by type.
  if (!t.data || t.data->numel() > 8) return "";
  std::string s = " = [";
  for (int64_t i = 0; i < t.data->numel(); ++i) {
    if (i) s += ", ";
    if (is_float(t.data->dtype()))
      s += float_text(t.data->get_f64(i), t.data->dtype());
    else
      s += std::to_string(t.data->get_i64(i));
  }
  return s + "]";
}

}  // namespace

std::string print(const Expr& e) {
  return Printer().print(e);
}

std::string print(const ComputeOp& op) {
  std::string s = op.output ? op.output->name : op.name;
  // Appended piece by piece: `"literal" + std::string` trips a false -Wrestrict in GCC 12.
  s += '[';
  s += axes_text(op.axes);
  s += "] = ";
  if (op.reduce == ReduceKind::None) {
    s += print(op.body);
  } else {
    s += reduce_name(op.reduce);
    s += '(';
    s += axes_text(op.reduce_axes);
    s += "; ";
    s += print(op.body);
    bool identity = false;
    if (op.init.defined() && op.output) {
      Expr id = reduce_identity(op.reduce, op.output->dtype);
      identity = equal(id, op.init);
    }
    if (!identity) s += "; init = " + print(op.init);
    s += ")";
  }
  if (!op.origin.node.empty() || !op.origin.op_type.empty())
    s += "   # " + op.origin.node + " (" + op.origin.op_type + ")";
  return s;
}

std::string print(const TeProgram& p) {
  std::ostringstream os;
  os << "program " << p.name << "\n";
  for (const Tensor& t : p.inputs) os << "  input " << t->name << ": " << type_text(*t) << "\n";
  std::set<const TensorNode*> seen;
  std::vector<const TensorNode*> consts;
  for (const Op& op : p.ops) {
    collect_constants(op->body, seen, consts);
    collect_constants(op->init, seen, consts);
  }
  for (const Tensor& t : p.outputs)
    if (t && t->source == TensorNode::Source::Constant && seen.insert(t.get()).second)
      consts.push_back(t.get());
  for (const TensorNode* t : consts)
    os << "  const " << t->name << ": " << type_text(*t) << constant_values(*t) << "\n";
  for (const Op& op : p.ops) {
    os << "  " << print(*op);
    os << "\n";
  }
  for (const Tensor& t : p.outputs) {
    if (!t)
      os << "  output <null>\n";
    else
      os << "  output " << t->name << ": " << type_text(*t) << "\n";
  }
  return os.str();
}

}  // namespace souffle::te
