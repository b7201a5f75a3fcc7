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

const char* shuffle_kind_name(ShuffleKind k) {
  switch (k) {
    case ShuffleKind::Xor:
      return "xor";
    case ShuffleKind::Down:
      return "down";
    case ShuffleKind::Idx:
      return "idx";
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

Stmt shuffle(Tensor buffer, std::vector<Expr> indices, Expr value, ShuffleKind kind, Expr arg) {
  check_access(buffer, indices, value, "shuffle");
  check_index_expr(arg, "shuffle lane");
  SOUFFLE_CHECK(value.dtype() != DType::Bool, "shuffle: bool values are not exchanged");
  return Stmt(std::make_shared<Shuffle>(std::move(buffer), std::move(indices), std::move(value),
                                        kind, std::move(arg)));
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

namespace {
void check_flags(const Tensor& flags, const char* what) {
  SOUFFLE_CHECK(flags && flags->dtype == DType::Int32 && flags->shape.size() == 1,
                std::string(what) + ": flags must be an int32 buffer of rank 1");
}
}  // namespace

Stmt flag_release(Tensor flags, Expr index, int stage) {
  check_flags(flags, "flag_release");
  check_index_expr(index, "flag_release index");
  SOUFFLE_CHECK(stage >= 0, "flag_release: negative stage");
  return Stmt(std::make_shared<FlagRelease>(std::move(flags), std::move(index), stage));
}

Stmt flag_wait(Tensor flags, Expr first, Expr count, int64_t per_run) {
  check_flags(flags, "flag_wait");
  check_index_expr(first, "flag_wait first");
  check_index_expr(count, "flag_wait count");
  SOUFFLE_CHECK(per_run >= 1, "flag_wait: per_run must be at least 1");
  return Stmt(
      std::make_shared<FlagWait>(std::move(flags), std::move(first), std::move(count), per_run));
}

const char* timeline_event_name(TimelineEvent e) {
  switch (e) {
    case TimelineEvent::StageBegin:
      return "stage_begin";
    case TimelineEvent::StageEnd:
      return "stage_end";
    case TimelineEvent::WaitBegin:
      return "wait_begin";
    case TimelineEvent::WaitEnd:
      return "wait_end";
  }
  return "?";
}

const char* timeline_wait_name(TimelineWait w) {
  switch (w) {
    case TimelineWait::None:
      return "none";
    case TimelineWait::BlockBarrier:
      return "block_barrier";
    case TimelineWait::FlagWait:
      return "flag_wait";
    case TimelineWait::GridBarrier:
      return "grid_barrier";
  }
  return "?";
}

Stmt timeline_record(Tensor buffer, TimelineEvent event, TimelineWait wait, int stage, int64_t slot,
                     int64_t stride) {
  SOUFFLE_CHECK(
      buffer && buffer->dtype == DType::Int64 && buffer->shape.size() == 3 && buffer->shape[2] == 3,
      "timeline_record: the buffer must be int64 [rows, slots, 3]");
  SOUFFLE_CHECK(slot >= 0 && slot < buffer->shape[1], "timeline_record: slot out of range");
  SOUFFLE_CHECK(stride >= 1 && stage >= 0, "timeline_record: bad stride or stage");
  const bool is_wait = event == TimelineEvent::WaitBegin || event == TimelineEvent::WaitEnd;
  SOUFFLE_CHECK(is_wait == (wait != TimelineWait::None),
                "timeline_record: waits, and only waits, name what they wait for");
  return Stmt(
      std::make_shared<TimelineRecord>(std::move(buffer), event, wait, stage, slot, stride));
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

const char* fragment_role_name(FragmentRole r) {
  switch (r) {
    case FragmentRole::MatrixA:
      return "matrix_a";
    case FragmentRole::MatrixB:
      return "matrix_b";
    case FragmentRole::Accumulator:
      return "accumulator";
  }
  return "?";
}

const char* mma_type_name(MmaType t) {
  switch (t) {
    case MmaType::F16:
      return "f16";
    case MmaType::BF16:
      return "bf16";
    case MmaType::TF32:
      return "tf32";
    case MmaType::F32:
      return "f32";
  }
  return "?";
}

DType mma_storage_dtype(MmaType t) {
  switch (t) {
    case MmaType::F16:
      return DType::Float16;
    case MmaType::BF16:
      return DType::BFloat16;
    case MmaType::TF32:
    case MmaType::F32:
      break;
  }
  return DType::Float32;
}

bool is_supported_mma_shape(MmaType operand, int64_t m, int64_t n, int64_t k) {
  if (m != 16 || n != 16) return false;
  if (operand == MmaType::TF32) return k == 8;
  return (operand == MmaType::F16 || operand == MmaType::BF16) && k == 16;
}

namespace {

void check_fragment_index(const Tensor& f, const Expr& index, const char* what) {
  SOUFFLE_CHECK(f != nullptr && f->shape.size() == 1,
                std::string(what) + ": a fragment buffer is one-dimensional");
  check_index_expr(index, what);
}

void check_tile_origin(const Tensor& t, const std::vector<Expr>& origin, const char* what) {
  SOUFFLE_CHECK(t != nullptr && t->shape.size() >= 2,
                std::string(what) + ": the matrix needs at least two dimensions");
  SOUFFLE_CHECK(origin.size() == t->shape.size(),
                std::string(what) + " of " + t->name + ": " + std::to_string(origin.size()) +
                    " origin indices for rank " + std::to_string(t->shape.size()));
  for (const Expr& e : origin) check_index_expr(e, what);
}

}  // namespace

Stmt fragment_alloc(Tensor buffer, FragmentRole role, MmaType type, int64_t m, int64_t n, int64_t k,
                    Stmt body) {
  SOUFFLE_CHECK(buffer != nullptr && buffer->shape.size() == 1 && buffer->shape[0] > 0,
                "fragment_alloc: the buffer is [count]");
  SOUFFLE_CHECK(buffer->dtype == mma_storage_dtype(type),
                "fragment_alloc: " + buffer->name + " is " + dtype_name(buffer->dtype) + ", a " +
                    mma_type_name(type) + " fragment is stored as " +
                    dtype_name(mma_storage_dtype(type)));
  SOUFFLE_CHECK((role == FragmentRole::Accumulator) == (type == MmaType::F32),
                "fragment_alloc: accumulators (and only they) are f32");
  SOUFFLE_CHECK(m == 16 && n == 16 && (k == 16 || k == 8),
                "fragment_alloc: unsupported MMA shape m" + std::to_string(m) + "n" +
                    std::to_string(n) + "k" + std::to_string(k));
  SOUFFLE_CHECK(role == FragmentRole::Accumulator || is_supported_mma_shape(type, m, n, k),
                std::string("fragment_alloc: ") + mma_type_name(type) + " has no m16n16k" +
                    std::to_string(k) + " MMA");
  SOUFFLE_CHECK(body.defined(), "fragment_alloc: undefined body");
  return Stmt(
      std::make_shared<FragmentAlloc>(std::move(buffer), role, type, m, n, k, std::move(body)));
}

Tensor make_fragment_buffer(std::string name, int64_t count, MmaType type) {
  return make_buffer(std::move(name), {count}, mma_storage_dtype(type));
}

Stmt fragment_fill(Tensor fragment, Expr index, Expr value) {
  check_fragment_index(fragment, index, "fragment_fill");
  SOUFFLE_CHECK(value.defined() && value.dtype() == fragment->dtype,
                "fragment_fill: the value must have the fragment's type");
  return Stmt(
      std::make_shared<FragmentFill>(std::move(fragment), std::move(index), std::move(value)));
}

Stmt fragment_load(Tensor fragment, Expr index, Tensor source, std::vector<Expr> origin) {
  check_fragment_index(fragment, index, "fragment_load");
  check_tile_origin(source, origin, "fragment_load");
  SOUFFLE_CHECK(source->dtype == fragment->dtype,
                "fragment_load: " + source->name + " is " + dtype_name(source->dtype) + ", " +
                    fragment->name + " holds " + dtype_name(fragment->dtype));
  return Stmt(std::make_shared<FragmentLoad>(std::move(fragment), std::move(index),
                                             std::move(source), std::move(origin)));
}

Stmt fragment_mma(Tensor d, Expr di, Tensor a, Expr ai, Tensor b, Expr bi, Tensor c, Expr ci) {
  check_fragment_index(d, di, "fragment_mma d");
  check_fragment_index(a, ai, "fragment_mma a");
  check_fragment_index(b, bi, "fragment_mma b");
  check_fragment_index(c, ci, "fragment_mma c");
  SOUFFLE_CHECK(a->dtype == b->dtype, "fragment_mma: a and b differ in type");
  SOUFFLE_CHECK(c->dtype == DType::Float32 && d->dtype == DType::Float32,
                "fragment_mma: c and d accumulate in f32");
  return Stmt(std::make_shared<FragmentMma>(std::move(d), std::move(di), std::move(a),
                                            std::move(ai), std::move(b), std::move(bi),
                                            std::move(c), std::move(ci)));
}

Stmt fragment_store(Tensor dest, std::vector<Expr> origin, Tensor fragment, Expr index) {
  check_fragment_index(fragment, index, "fragment_store");
  check_tile_origin(dest, origin, "fragment_store");
  SOUFFLE_CHECK(dest->dtype == fragment->dtype,
                "fragment_store: " + dest->name + " is " + dtype_name(dest->dtype) + ", " +
                    fragment->name + " holds " + dtype_name(fragment->dtype));
  return Stmt(std::make_shared<FragmentStore>(std::move(dest), std::move(origin),
                                              std::move(fragment), std::move(index)));
}

Tensor make_buffer(std::string name, Shape shape, DType dtype) {
  return te::make_compute_tensor(std::move(name), std::move(shape), dtype);
}

namespace {

void check_indices(const Tensor& t, const std::vector<Expr>& idx, const char* what) {
  SOUFFLE_CHECK(t != nullptr, std::string(what) + ": no buffer");
  SOUFFLE_CHECK(idx.size() == t->shape.size(),
                std::string(what) + " of " + t->name + ": " + std::to_string(idx.size()) +
                    " indices for rank " + std::to_string(t->shape.size()));
  for (const Expr& i : idx) check_index_expr(i, what);
}

}  // namespace

int64_t mma_sync_k(MmaType type) {
  return type == MmaType::TF32 ? 8 : 16;
}

int64_t mma_sync_elements(MmaType type, FragmentRole role) {
  const int64_t scale = type == MmaType::TF32 ? 1 : 2;
  switch (role) {
    case FragmentRole::MatrixA:
      return 4 * scale;
    case FragmentRole::MatrixB:
      return 2 * scale;
    case FragmentRole::Accumulator:
      return 4;
  }
  return 4;
}

Stmt async_copy(Tensor dst, std::vector<Expr> dst_index, Tensor src, std::vector<Expr> src_index,
                int64_t bytes, Expr pred) {
  check_indices(dst, dst_index, "async_copy dst");
  check_indices(src, src_index, "async_copy src");
  SOUFFLE_CHECK(bytes == 4 || bytes == 8 || bytes == 16,
                "async_copy: cp.async copies 4, 8 or 16 bytes, not " + std::to_string(bytes));
  SOUFFLE_CHECK(dst->dtype == src->dtype,
                "async_copy: " + src->name + " is " + dtype_name(src->dtype) + ", " + dst->name +
                    " " + dtype_name(dst->dtype) + " (a copy converts nothing)");
  SOUFFLE_CHECK(bytes % dtype_size(dst->dtype) == 0, "async_copy: " + std::to_string(bytes) +
                                                         " bytes are no whole number of " +
                                                         dtype_name(dst->dtype) + " elements");
  if (pred.defined()) check_index_expr(pred, "async_copy predicate");
  return Stmt(std::make_shared<AsyncCopy>(std::move(dst), std::move(dst_index), std::move(src),
                                          std::move(src_index), bytes, std::move(pred)));
}

Stmt async_commit() {
  return Stmt(std::make_shared<AsyncCommit>());
}

Stmt async_wait(int64_t pending) {
  SOUFFLE_CHECK(pending >= 0 && pending <= 7, "async_wait: wait_group takes 0..7");
  return Stmt(std::make_shared<AsyncWait>(pending));
}

Stmt matrix_load(Tensor dst, Expr dst_offset, int64_t count, bool trans, Tensor src,
                 std::vector<Expr> src_index) {
  SOUFFLE_CHECK(dst != nullptr && dst->shape.size() == 1, "matrix_load: dst is a [n] buffer");
  check_index_expr(dst_offset, "matrix_load offset");
  check_indices(src, src_index, "matrix_load src");
  SOUFFLE_CHECK(count == 1 || count == 2 || count == 4,
                "matrix_load: ldmatrix takes .x1, .x2, .x4");
  SOUFFLE_CHECK(dst->dtype == src->dtype,
                "matrix_load: " + src->name + " and " + dst->name + " differ in type");
  const int64_t es = dtype_size(src->dtype);
  SOUFFLE_CHECK(es == 2 || (es == 4 && !trans),
                "matrix_load: 16-bit elements, or 32-bit ones without .trans");
  return Stmt(std::make_shared<MatrixLoad>(std::move(dst), std::move(dst_offset), count, trans,
                                           std::move(src), std::move(src_index)));
}

Stmt wgmma_fence() {
  return Stmt(std::make_shared<WgmmaFence>());
}

Stmt wgmma_mma(MmaType type, int64_t n, Tensor d, Expr d_offset, Tensor a,
               std::vector<Expr> a_index, int64_t a_lbo, int64_t a_sbo, Tensor b,
               std::vector<Expr> b_index, int64_t b_lbo, int64_t b_sbo, bool accumulate) {
  SOUFFLE_CHECK(type == MmaType::F16 || type == MmaType::BF16,
                "wgmma_mma: operands are f16 or bf16 (f32 accumulators)");
  SOUFFLE_CHECK(n >= 8 && n <= 256 && n % 8 == 0, "wgmma_mma: n is a multiple of 8 in 8..256");
  SOUFFLE_CHECK(d != nullptr && d->shape.size() == 1 && d->dtype == DType::Float32,
                "wgmma_mma: d is an [n] f32 register buffer");
  check_index_expr(d_offset, "wgmma_mma offset");
  check_indices(a, a_index, "wgmma_mma a");
  check_indices(b, b_index, "wgmma_mma b");
  const DType st = mma_storage_dtype(type);
  SOUFFLE_CHECK(a->dtype == st && b->dtype == st, std::string("wgmma_mma: ") + mma_type_name(type) +
                                                      " operands are stored as " + dtype_name(st));
  for (int64_t o : {a_lbo, a_sbo, b_lbo, b_sbo})
    SOUFFLE_CHECK(o >= 0 && o < (int64_t{1} << 18) && o % 16 == 0,
                  "wgmma_mma: descriptor byte offsets are multiples of 16 below 2^18");
  return Stmt(std::make_shared<WgmmaMma>(type, n, std::move(d), std::move(d_offset), std::move(a),
                                         std::move(a_index), a_lbo, a_sbo, std::move(b),
                                         std::move(b_index), b_lbo, b_sbo, accumulate));
}

Stmt wgmma_commit() {
  return Stmt(std::make_shared<WgmmaCommit>());
}

Stmt wgmma_wait(int64_t pending) {
  SOUFFLE_CHECK(pending >= 0 && pending <= 7, "wgmma_wait: wait_group takes 0..7");
  return Stmt(std::make_shared<WgmmaWait>(pending));
}

Stmt mma_sync(MmaType type, Tensor d, Expr d_offset, Tensor a, Expr a_offset, Tensor b,
              Expr b_offset, Tensor c, Expr c_offset) {
  SOUFFLE_CHECK(type != MmaType::F32, "mma_sync: operands are f16, bf16 or tf32");
  const DType st = mma_storage_dtype(type);
  for (const Tensor* t : {&d, &a, &b, &c})
    SOUFFLE_CHECK(*t != nullptr && (*t)->shape.size() == 1, "mma_sync: registers are [n] buffers");
  SOUFFLE_CHECK(a->dtype == st && b->dtype == st, std::string("mma_sync: ") + mma_type_name(type) +
                                                      " operands are stored as " + dtype_name(st));
  SOUFFLE_CHECK(c->dtype == DType::Float32 && d->dtype == DType::Float32,
                "mma_sync: c and d accumulate in f32");
  for (const Expr* e : {&d_offset, &a_offset, &b_offset, &c_offset})
    check_index_expr(*e, "mma_sync offset");
  return Stmt(std::make_shared<MmaSync>(type, std::move(d), std::move(d_offset), std::move(a),
                                        std::move(a_offset), std::move(b), std::move(b_offset),
                                        std::move(c), std::move(c_offset)));
}

}  // namespace souffle::loop
