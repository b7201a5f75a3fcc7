#include "core/te/verify.h"

#include <unordered_map>
#include <unordered_set>

#include "core/te/mutator.h"

namespace souffle::te {
namespace {

[[noreturn]] void fail(const std::string& op, const std::string& why) {
  throw InternalError("verify: op " + op + ": " + why);
}

bool is_bitwise(BinaryOp op) {
  return op == BinaryOp::BitAnd || op == BinaryOp::BitOr || op == BinaryOp::BitXor ||
         op == BinaryOp::Shl || op == BinaryOp::Shr;
}

/// Checks every node of `e`; `vars` are the vars it may use.
void check_expr(const std::string& op, const Expr& e,
                const std::unordered_set<const ExprNode*>& vars, const char* where) {
  if (!e.defined()) fail(op, std::string(where) + " is undefined");
  for_each_node(e, [&](const Expr& n) {
    switch (n.kind()) {
      case ExprKind::IntImm:
        if (is_float(n.dtype())) fail(op, "integer immediate of float type");
        break;
      case ExprKind::FloatImm:
        if (!is_float(n.dtype())) fail(op, "float immediate of non-float type");
        break;
      case ExprKind::Var:
        if (!vars.count(n.get()))
          fail(op, "variable " + n.as<Var>()->name + " in the " + where +
                       " is not one of the op's axes");
        if (n.dtype() != DType::Int64) fail(op, "variable of non-i64 type");
        break;
      case ExprKind::Unary: {
        const auto* u = n.as<Unary>();
        if (!u->a.defined()) fail(op, "unary with an undefined operand");
        DType want = u->op == UnaryOp::Not ? DType::Bool : u->a.dtype();
        if (n.dtype() != want)
          fail(op, std::string("unary ") + unary_name(u->op) + " has the wrong type");
        break;
      }
      case ExprKind::Binary: {
        const auto* b = n.as<Binary>();
        if (!b->a.defined() || !b->b.defined()) fail(op, "binary with an undefined operand");
        if (b->a.dtype() != b->b.dtype())
          fail(op, std::string("binary ") + binary_name(b->op) + " operand types differ (" +
                       dtype_name(b->a.dtype()) + " vs " + dtype_name(b->b.dtype()) + ")");
        DType want = is_comparison(b->op) || is_logical(b->op) ? DType::Bool : b->a.dtype();
        if (n.dtype() != want)
          fail(op, std::string("binary ") + binary_name(b->op) + " has the wrong result type");
        if (is_bitwise(b->op) && is_float(b->a.dtype()))
          fail(op, std::string("bitwise ") + binary_name(b->op) + " on a float type");
        break;
      }
      case ExprKind::Call: {
        const auto* c = n.as<Call>();
        size_t want = c->fn == CallFn::Pow || c->fn == CallFn::Fmod ? 2 : 1;
        if (c->args.size() != want)
          fail(op, std::string("call ") + call_name(c->fn) + ": wrong arity");
        for (const Expr& a : c->args)
          if (!a.defined() || a.dtype() != c->args[0].dtype())
            fail(op, std::string("call ") + call_name(c->fn) + ": bad argument");
        break;
      }
      case ExprKind::Select: {
        const auto* s = n.as<Select>();
        if (!s->cond.defined() || !s->t.defined() || !s->f.defined())
          fail(op, "select with an undefined operand");
        if (s->cond.dtype() != DType::Bool) fail(op, "select condition is not bool");
        if (s->t.dtype() != n.dtype() || s->f.dtype() != n.dtype())
          fail(op, "select branch types differ");
        break;
      }
      case ExprKind::Cast:
        if (!n.as<Cast>()->a.defined()) fail(op, "cast of an undefined operand");
        break;
      case ExprKind::Read: {
        const auto* r = n.as<Read>();
        if (!r->tensor) fail(op, "read of a null tensor");
        const Tensor& t = r->tensor;
        if (r->indices.size() != t->shape.size())
          fail(op, "read of " + t->name + " has " + std::to_string(r->indices.size()) +
                       " indices for rank " + std::to_string(t->shape.size()));
        if (n.dtype() != t->dtype) fail(op, "read of " + t->name + " has the wrong type");
        if (t->source == TensorNode::Source::Constant) {
          if (!t->data) fail(op, "constant " + t->name + " has no data");
          if (t->data->shape() != t->shape)
            fail(op, "constant " + t->name + " data shape differs from its tensor");
        }
        for (size_t d = 0; d < r->indices.size(); ++d) {
          const Expr& i = r->indices[d];
          if (!i.defined() || i.dtype() != DType::Int64)
            fail(op, "read of " + t->name + ": index " + std::to_string(d) + " is not i64");
          if (const auto* c = i.as<IntImm>())
            if (c->value < 0 || c->value >= t->shape[d])
              fail(op, "read of " + t->name + ": constant index " + std::to_string(c->value) +
                           " out of bounds in dimension " + std::to_string(d) + " (extent " +
                           std::to_string(t->shape[d]) + ")");
        }
        break;
      }
    }
  });
}

void add_axes(const std::string& op, const std::vector<IterVar>& axes,
              std::unordered_set<const ExprNode*>& vars) {
  for (const IterVar& iv : axes) {
    if (!iv.var.as<Var>()) fail(op, "an axis is not a variable");
    if (iv.extent < 0) fail(op, "negative extent");
    if (!vars.insert(iv.var.get()).second)
      fail(op, "axis variable " + iv.var.as<Var>()->name + " appears twice");
  }
}

}  // namespace

void verify(const ComputeOp& op) {
  const std::string& name = op.name;
  if (!op.output) fail(name, "no output tensor");
  if (op.output->source != TensorNode::Source::Compute)
    fail(name, "output tensor " + op.output->name + " is not a compute tensor");
  Shape extents;
  for (const IterVar& iv : op.axes) extents.push_back(iv.extent);
  if (extents != op.output->shape)
    fail(name, "axis extents " + shape_str(extents) + " differ from the output shape " +
                   shape_str(op.output->shape));
  std::unordered_set<const ExprNode*> out_vars;
  add_axes(name, op.axes, out_vars);
  std::unordered_set<const ExprNode*> all_vars = out_vars;
  add_axes(name, op.reduce_axes, all_vars);
  if (all_vars.size() != out_vars.size() + op.reduce_axes.size())
    fail(name, "a reduce axis is also an output axis");
  check_expr(name, op.body, all_vars, "body");
  if (op.body.dtype() != op.output->dtype)
    fail(name, std::string("body type ") + dtype_name(op.body.dtype()) +
                   " differs from the output type " + dtype_name(op.output->dtype));
  if (op.reduce == ReduceKind::None) {
    if (!op.reduce_axes.empty()) fail(name, "reduce axes without a reduction");
    if (op.init.defined()) fail(name, "init without a reduction");
  } else {
    check_expr(name, op.init, out_vars, "init");
    if (op.init.dtype() != op.output->dtype)
      fail(name, std::string("init type ") + dtype_name(op.init.dtype()) +
                     " differs from the output type " + dtype_name(op.output->dtype));
  }
}

void verify(const TeProgram& p) {
  std::unordered_set<const TensorNode*> available;
  for (const Tensor& t : p.inputs) {
    if (!t) throw InternalError("verify: program " + p.name + ": null input");
    if (t->source != TensorNode::Source::Input)
      throw InternalError("verify: program " + p.name + ": input " + t->name +
                          " is not a placeholder");
    available.insert(t.get());
  }
  std::unordered_set<std::string> names;
  for (const Op& op : p.ops) {
    if (!op) throw InternalError("verify: program " + p.name + ": null op");
    verify(*op);
    auto check_reads = [&](const Expr& e) {
      if (!e.defined()) return;
      for_each_node(e, [&](const Expr& n) {
        const auto* r = n.as<Read>();
        if (!r || r->tensor->source == TensorNode::Source::Constant) return;
        if (!available.count(r->tensor.get()))
          fail(op->name, "reads " + r->tensor->name +
                             ", which is neither an input nor produced by an earlier op");
      });
    };
    check_reads(op->body);
    check_reads(op->init);
    if (!names.insert(op->output->name).second)
      fail(op->name, "output name " + op->output->name + " is not unique");
    available.insert(op->output.get());
  }
  for (const Tensor& t : p.outputs) {
    if (!t) throw InternalError("verify: program " + p.name + ": undefined output");
    if (t->source == TensorNode::Source::Constant) {
      if (!t->data)
        throw InternalError("verify: program " + p.name + ": constant output " + t->name +
                            " has no data");
      continue;
    }
    if (!available.count(t.get()))
      throw InternalError("verify: program " + p.name + ": output " + t->name +
                          " is never computed");
  }
}

}  // namespace souffle::te
