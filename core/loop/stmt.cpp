#include "core/loop/stmt.h"

namespace souffle::loop {

const char* for_kind_name(ForKind k) {
  switch (k) {
    case ForKind::Serial:
      return "serial";
    case ForKind::Unrolled:
      return "unrolled";
    case ForKind::Vectorized:
      return "vectorized";
    case ForKind::BlockIdxX:
      return "blockIdx.x";
    case ForKind::ThreadIdxX:
      return "threadIdx.x";
  }
  return "?";
}

bool is_thread_binding(ForKind k) {
  return k == ForKind::BlockIdxX || k == ForKind::ThreadIdxX;
}

const char* scope_name(MemScope s) {
  switch (s) {
    case MemScope::Global:
      return "global";
    case MemScope::Shared:
      return "shared";
    case MemScope::Local:
      return "local";
  }
  return "?";
}

namespace {

void check_index_expr(const Expr& e, const char* what) {
  SOUFFLE_CHECK(e.defined(), std::string(what) + " is undefined");
  SOUFFLE_CHECK(e.dtype() == DType::Int64, std::string(what) + " must be i64");
}

void check_access(const Tensor& buffer, const std::vector<Expr>& indices, const Expr& value,
                  const char* what) {
  SOUFFLE_CHECK(buffer != nullptr, std::string(what) + ": no buffer");
  SOUFFLE_CHECK(indices.size() == buffer->shape.size(),
                std::string(what) + " to " + buffer->name + ": " + std::to_string(indices.size()) +
                    " indices for rank " + std::to_string(buffer->shape.size()));
  for (const Expr& i : indices) check_index_expr(i, what);
  SOUFFLE_CHECK(value.defined(), std::string(what) + ": undefined value");
  SOUFFLE_CHECK(value.dtype() == buffer->dtype, std::string(what) + " to " + buffer->name +
                                                    ": value is " + dtype_name(value.dtype()) +
                                                    ", buffer is " + dtype_name(buffer->dtype));
}

}  // namespace

Stmt make_for(Expr var, Expr min, Expr extent, ForKind kind, Stmt body) {
  SOUFFLE_CHECK(var.as<te::Var>() != nullptr, "for: loop var must be a Var");
  check_index_expr(min, "for min");
  check_index_expr(extent, "for extent");
  SOUFFLE_CHECK(body.defined(), "for: undefined body");
  return Stmt(std::make_shared<For>(std::move(var), std::move(min), std::move(extent), kind,
                                    std::move(body)));
}

Stmt make_for(Expr var, int64_t extent, ForKind kind, Stmt body) {
  return make_for(std::move(var), te::int_imm(0), te::int_imm(extent), kind, std::move(body));
}

Stmt let_stmt(Expr var, Expr value, Stmt body) {
  SOUFFLE_CHECK(var.as<te::Var>() != nullptr, "let: must bind a Var");
  check_index_expr(value, "let value");
  SOUFFLE_CHECK(body.defined(), "let: undefined body");
  return Stmt(std::make_shared<LetStmt>(std::move(var), std::move(value), std::move(body)));
}

Stmt allocate(Tensor buffer, MemScope scope, Stmt body) {
  SOUFFLE_CHECK(buffer != nullptr, "allocate: no buffer");
  SOUFFLE_CHECK(body.defined(), "allocate: undefined body");
  return Stmt(std::make_shared<Allocate>(std::move(buffer), scope, std::move(body)));
}

Stmt store(Tensor buffer, std::vector<Expr> indices, Expr value) {
  check_access(buffer, indices, value, "store");
  return Stmt(std::make_shared<Store>(std::move(buffer), std::move(indices), std::move(value)));
}

Stmt atomic_add(Tensor buffer, std::vector<Expr> indices, Expr value) {
  check_access(buffer, indices, value, "atomic_add");
  return Stmt(std::make_shared<AtomicAdd>(std::move(buffer), std::move(indices), std::move(value)));
}

Stmt if_then_else(Expr cond, Stmt then_case, Stmt else_case) {
  SOUFFLE_CHECK(cond.defined() && cond.dtype() == DType::Bool, "if: condition must be bool");
  SOUFFLE_CHECK(then_case.defined(), "if: undefined then branch");
  return Stmt(
      std::make_shared<IfThenElse>(std::move(cond), std::move(then_case), std::move(else_case)));
}

Stmt seq(std::vector<Stmt> stmts) {
  std::vector<Stmt> flat;
  for (Stmt& s : stmts) {
    if (!s.defined()) continue;
    if (const Seq* inner = s.as<Seq>()) {
      for (const Stmt& t : inner->stmts) flat.push_back(t);
    } else {
      flat.push_back(std::move(s));
    }
  }
  if (flat.size() == 1) return flat[0];
  return Stmt(std::make_shared<Seq>(std::move(flat)));
}

Stmt block_barrier() {
  return Stmt(std::make_shared<BlockBarrier>());
}

Stmt grid_barrier() {
  return Stmt(std::make_shared<GridBarrier>());
}

Stmt stage(int index, Stmt body) {
  SOUFFLE_CHECK(index >= 0, "stage: negative index");
  SOUFFLE_CHECK(body.defined(), "stage: undefined body");
  return Stmt(std::make_shared<Stage>(index, std::move(body)));
}

Stmt evaluate(Expr value) {
  SOUFFLE_CHECK(value.defined(), "evaluate: undefined value");
  return Stmt(std::make_shared<Evaluate>(std::move(value)));
}

Stmt comment(std::string text) {
  return Stmt(std::make_shared<Comment>(std::move(text)));
}

Tensor make_buffer(std::string name, Shape shape, DType dtype) {
  return te::make_compute_tensor(std::move(name), std::move(shape), dtype);
}

}  // namespace souffle::loop
