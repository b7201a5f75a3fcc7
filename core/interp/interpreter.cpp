#include "core/interp/interpreter.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <optional>
#include <unordered_map>

#include "core/interp/scalar_ops.h"
#include "core/support/thread_pool.h"

// Execution model: each op's body is compiled once into a tree of nodes that evaluate a *batch*
// of up to kLanes consecutive values of one "lane" variable at a time (the innermost output axis
// for element-wise ops, the innermost reduce axis for reductions). Dispatch and index arithmetic
// are paid once per batch instead of once per element. Select is lazy per lane: the lanes are
// split into runs of equal condition and each branch is evaluated only on its own runs.

namespace souffle::interp {
namespace {

using te::BinaryOp;
using te::CallFn;
using te::Expr;
using te::ExprKind;
using te::UnaryOp;

constexpr int kLanes = 64;

struct Node;

/// Per-thread evaluation state of one op.
struct Frame {
  std::vector<int64_t> vars;  // current values; vars[lane] is the first lane's value
  std::vector<Val> scratch;
  std::vector<uint64_t> cache_batch;  // per shared node: the batch its cache holds
  uint64_t batch = 0;                 // identifies (vars, lane range) of the current evaluation
  uint64_t next_batch = 0;
  Val* slot(int64_t offset) { return scratch.data() + offset; }
};

using EvalFn = void (*)(const Node& nd, Frame& fr, int n, Val* out);

struct DimIndex {
  bool affine = false;
  int64_t constant = 0;
  std::vector<std::pair<int, int64_t>> terms;  // (var slot, coefficient)
  int64_t lane_coef = 0;
  int64_t extent = 0;
  int64_t stride = 0;
};

struct Node {
  EvalFn fn = nullptr;
  DType dtype = DType::Float32;
  std::vector<const Node*> kids;
  std::vector<int64_t> kid_slot;  // scratch offset of each kid's output
  int64_t cache_slot = -1;        // shared nodes: scratch offset of the cached batch
  int cache_index = -1;
  int code = 0;  // UnaryOp / BinaryOp / CallFn
  Val imm{};
  int var = -1;
  bool lane = false;
  // Cast: source and target
  DType from = DType::Float32;
  bool round_float = true;
  // Read
  const uint8_t* data = nullptr;
  DType tdtype = DType::Float32;
  std::vector<DimIndex> dims;
  bool all_affine = false;
  const std::string* tensor_name = nullptr;
  const std::string* op_name = nullptr;
};

inline void eval(const Node& nd, Frame& fr, int n, Val* out) {
  if (nd.cache_index < 0) {
    nd.fn(nd, fr, n, out);
    return;
  }
  Val* cache = fr.slot(nd.cache_slot);
  uint64_t& held = fr.cache_batch[static_cast<size_t>(nd.cache_index)];
  if (held != fr.batch) {
    nd.fn(nd, fr, n, cache);
    held = fr.batch;
  }
  std::memcpy(out, cache, sizeof(Val) * static_cast<size_t>(n));
}

inline Val* eval_kid(const Node& nd, Frame& fr, size_t k, int n) {
  Val* buf = fr.slot(nd.kid_slot[k]);
  eval(*nd.kids[k], fr, n, buf);
  return buf;
}

// ---- leaves ----

void eval_imm(const Node& nd, Frame&, int n, Val* out) {
  for (int t = 0; t < n; ++t) out[t] = nd.imm;
}

void eval_var(const Node& nd, Frame& fr, int n, Val* out) {
  int64_t v = fr.vars[static_cast<size_t>(nd.var)];
  if (nd.lane) {
    for (int t = 0; t < n; ++t) out[t].i = v + t;
  } else {
    for (int t = 0; t < n; ++t) out[t].i = v;
  }
}

// ---- loads ----

template <typename T>
inline void gather_strided(const uint8_t* data, int64_t off, int64_t step, int n, Val* out,
                           bool fp) {
  const T* p = reinterpret_cast<const T*>(data);
  if (fp) {
    for (int t = 0; t < n; ++t) out[t].f = static_cast<double>(p[off + step * t]);
  } else {
    for (int t = 0; t < n; ++t) out[t].i = static_cast<int64_t>(p[off + step * t]);
  }
}

void load_strided(DType dt, const uint8_t* data, int64_t off, int64_t step, int n, Val* out) {
  switch (dt) {
    case DType::Float32:
      gather_strided<float>(data, off, step, n, out, true);
      return;
    case DType::Float64:
      gather_strided<double>(data, off, step, n, out, true);
      return;
    case DType::Int8:
      gather_strided<int8_t>(data, off, step, n, out, false);
      return;
    case DType::Int16:
      gather_strided<int16_t>(data, off, step, n, out, false);
      return;
    case DType::Int32:
      gather_strided<int32_t>(data, off, step, n, out, false);
      return;
    case DType::Int64:
      gather_strided<int64_t>(data, off, step, n, out, false);
      return;
    case DType::UInt8:
    case DType::Bool:
      gather_strided<uint8_t>(data, off, step, n, out, false);
      return;
    case DType::UInt16:
      gather_strided<uint16_t>(data, off, step, n, out, false);
      return;
    case DType::UInt32:
      gather_strided<uint32_t>(data, off, step, n, out, false);
      return;
    case DType::UInt64: {
      const uint64_t* p = reinterpret_cast<const uint64_t*>(data);
      for (int t = 0; t < n; ++t) out[t].i = static_cast<int64_t>(p[off + step * t]);
      return;
    }
    case DType::Float16: {
      const uint16_t* p = reinterpret_cast<const uint16_t*>(data);
      for (int t = 0; t < n; ++t) out[t].f = half_to_float(p[off + step * t]);
      return;
    }
    case DType::BFloat16: {
      const uint16_t* p = reinterpret_cast<const uint16_t*>(data);
      for (int t = 0; t < n; ++t) out[t].f = bfloat16_to_float(p[off + step * t]);
      return;
    }
  }
}

[[noreturn]] void out_of_bounds(const Node& nd, size_t d, int64_t v) {
  throw InternalError("op " + *nd.op_name + ": read of " + *nd.tensor_name +
                      " out of bounds: index " + std::to_string(v) + " in dimension " +
                      std::to_string(d) + " of extent " + std::to_string(nd.dims[d].extent));
}

inline int64_t affine_value(const DimIndex& di, const Frame& fr) {
  int64_t v = di.constant;
  for (const auto& [slot, coef] : di.terms) v += coef * fr.vars[static_cast<size_t>(slot)];
  return v;
}

void eval_read(const Node& nd, Frame& fr, int n, Val* out) {
  if (nd.all_affine) {
    int64_t off = 0, step = 0;
    for (size_t d = 0; d < nd.dims.size(); ++d) {
      const DimIndex& di = nd.dims[d];
      int64_t first = affine_value(di, fr);
      int64_t last = first + di.lane_coef * (n - 1);
      if (first < 0 || first >= di.extent) out_of_bounds(nd, d, first);
      if (last < 0 || last >= di.extent) out_of_bounds(nd, d, last);
      off += first * di.stride;
      step += di.lane_coef * di.stride;
    }
    load_strided(nd.tdtype, nd.data, off, step, n, out);
    return;
  }
  // General path: some index is data-dependent; compute each lane's offset.
  int64_t offs[kLanes];
  for (int t = 0; t < n; ++t) offs[t] = 0;
  size_t kid = 0;
  for (size_t d = 0; d < nd.dims.size(); ++d) {
    const DimIndex& di = nd.dims[d];
    if (di.affine) {
      int64_t first = affine_value(di, fr);
      for (int t = 0; t < n; ++t) {
        int64_t v = first + di.lane_coef * t;
        if (v < 0 || v >= di.extent) out_of_bounds(nd, d, v);
        offs[t] += v * di.stride;
      }
    } else {
      const Val* idx = eval_kid(nd, fr, kid++, n);
      for (int t = 0; t < n; ++t) {
        int64_t v = idx[t].i;
        if (v < 0 || v >= di.extent) out_of_bounds(nd, d, v);
        offs[t] += v * di.stride;
      }
    }
  }
  for (int t = 0; t < n; ++t) load_strided(nd.tdtype, nd.data, offs[t], 0, 1, out + t);
}

// ---- index arithmetic: affine forms of the op's vars, one node instead of a tree ----

void eval_affine(const Node& nd, Frame& fr, int n, Val* out) {
  const DimIndex& di = nd.dims[0];
  int64_t first = affine_value(di, fr);
  for (int t = 0; t < n; ++t) out[t].i = first + di.lane_coef * t;
}

/// A comparison of two affine forms, as the sign of their difference (dims[0]).
template <BinaryOp Op>
void eval_affine_cmp(const Node& nd, Frame& fr, int n, Val* out) {
  const DimIndex& di = nd.dims[0];
  int64_t first = affine_value(di, fr);
  for (int t = 0; t < n; ++t) out[t].i = binary_i(Op, DType::Int64, first + di.lane_coef * t, 0);
}

// ---- arithmetic ----

template <BinaryOp Op>
void eval_binary_f(const Node& nd, Frame& fr, int n, Val* out) {
  const Val* a = eval_kid(nd, fr, 0, n);
  const Val* b = eval_kid(nd, fr, 1, n);
  for (int t = 0; t < n; ++t) out[t] = binary_f(Op, a[t].f, b[t].f);
}

template <BinaryOp Op>
void eval_binary_i(const Node& nd, Frame& fr, int n, Val* out) {
  const Val* a = eval_kid(nd, fr, 0, n);
  const Val* b = eval_kid(nd, fr, 1, n);
  DType t0 = nd.kids[0]->dtype;
  for (int t = 0; t < n; ++t) out[t].i = binary_i(Op, t0, a[t].i, b[t].i);
}

template <CallFn Fn>
void eval_call1_f(const Node& nd, Frame& fr, int n, Val* out) {
  const Val* a = eval_kid(nd, fr, 0, n);
  for (int t = 0; t < n; ++t) out[t] = call_f(Fn, a[t].f, 0.0);
}

void eval_call_f(const Node& nd, Frame& fr, int n, Val* out) {
  const Val* a = eval_kid(nd, fr, 0, n);
  const Val* b = nd.kids.size() > 1 ? eval_kid(nd, fr, 1, n) : a;
  CallFn fn = static_cast<CallFn>(nd.code);
  for (int t = 0; t < n; ++t) out[t] = call_f(fn, a[t].f, b[t].f);
}

void eval_call_i(const Node& nd, Frame& fr, int n, Val* out) {
  const Val* a = eval_kid(nd, fr, 0, n);
  const Val* b = nd.kids.size() > 1 ? eval_kid(nd, fr, 1, n) : a;
  CallFn fn = static_cast<CallFn>(nd.code);
  DType t0 = nd.kids[0]->dtype;
  for (int t = 0; t < n; ++t) out[t] = call_i(fn, t0, a[t].i, b[t].i);
}

void eval_unary(const Node& nd, Frame& fr, int n, Val* out) {
  const Val* a = eval_kid(nd, fr, 0, n);
  DType t0 = nd.kids[0]->dtype;
  UnaryOp op = static_cast<UnaryOp>(nd.code);
  if (op == UnaryOp::Not) {
    if (is_float(t0)) {
      for (int t = 0; t < n; ++t) out[t].i = a[t].f == 0.0;
    } else {
      for (int t = 0; t < n; ++t) out[t].i = a[t].i == 0;
    }
  } else if (is_float(t0)) {
    for (int t = 0; t < n; ++t) out[t].f = -a[t].f;
  } else {
    for (int t = 0; t < n; ++t) out[t].i = wrap_int(t0, 0 - static_cast<uint64_t>(a[t].i));
  }
}

void eval_cast(const Node& nd, Frame& fr, int n, Val* out) {
  const Val* a = eval_kid(nd, fr, 0, n);
  for (int t = 0; t < n; ++t) out[t] = cast_value(nd.from, nd.dtype, a[t], nd.round_float);
}

void eval_select(const Node& nd, Frame& fr, int n, Val* out) {
  const Val* c = eval_kid(nd, fr, 0, n);
  bool cfp = is_float(nd.kids[0]->dtype);
  auto truth = [&](int t) { return cfp ? c[t].f != 0.0 : c[t].i != 0; };
  int t0 = 0;
  while (t0 < n) {
    bool v = truth(t0);
    int t1 = t0 + 1;
    while (t1 < n && truth(t1) == v) ++t1;
    const Node& branch = *nd.kids[v ? 1 : 2];
    if (t0 == 0 && t1 == n) {
      eval(branch, fr, n, out);
      return;
    }
    // A sub-batch: the lane var starts later, so it is a new batch for the shared-node caches.
    int lane = nd.var;
    uint64_t saved_batch = fr.batch;
    if (lane >= 0) fr.vars[static_cast<size_t>(lane)] += t0;
    fr.batch = ++fr.next_batch;
    eval(branch, fr, t1 - t0, out + t0);
    if (lane >= 0) fr.vars[static_cast<size_t>(lane)] -= t0;
    fr.batch = saved_batch;
    t0 = t1;
  }
}

// ---- compilation ----

/// An affine form sum(coef[v] * var_v) + constant over the op's var slots.
struct Affine {
  int64_t constant = 0;
  std::vector<int64_t> coef;
};

class Compiler {
 public:
  Compiler(const std::unordered_map<const te::ExprNode*, int>& var_slots, int lane, bool f64,
           const std::unordered_map<const te::TensorNode*, std::shared_ptr<TensorData>>& buffers,
           const std::string* op_name)
      : m_var_slots(var_slots),
        m_lane(lane),
        m_f64(f64),
        m_buffers(buffers),
        m_op_name(op_name),
        m_nvars(var_slots.size()) {}

  /// Compiles `e`; nodes shared in the expression DAG are compiled once and cached per batch.
  const Node* compile(const Expr& e) {
    count_uses(e);
    return build(e);
  }

  int64_t scratch_size() const { return m_scratch; }
  int shared_count() const { return m_shared; }
  std::vector<std::unique_ptr<Node>> take_nodes() { return std::move(m_nodes); }

 private:
  void count_uses(const Expr& e) {
    int& uses = m_uses[e.get()];
    if (++uses > 1) return;
    switch (e.kind()) {
      case ExprKind::Unary:
        count_uses(e.as<te::Unary>()->a);
        break;
      case ExprKind::Binary:
        count_uses(e.as<te::Binary>()->a);
        count_uses(e.as<te::Binary>()->b);
        break;
      case ExprKind::Call:
        for (const Expr& a : e.as<te::Call>()->args) count_uses(a);
        break;
      case ExprKind::Select: {
        const auto* s = e.as<te::Select>();
        count_uses(s->cond);
        count_uses(s->t);
        count_uses(s->f);
        break;
      }
      case ExprKind::Cast:
        count_uses(e.as<te::Cast>()->a);
        break;
      case ExprKind::Read:
        for (const Expr& a : e.as<te::Read>()->indices) count_uses(a);
        break;
      default:
        break;
    }
  }

  int64_t alloc_slot() {
    int64_t s = m_scratch;
    m_scratch += kLanes;
    return s;
  }

  Node* new_node(const Expr& e) {
    m_nodes.push_back(std::make_unique<Node>());
    Node* nd = m_nodes.back().get();
    nd->dtype = e.dtype();
    return nd;
  }

  void add_kid(Node* nd, const Expr& e) {
    nd->kids.push_back(build(e));
    nd->kid_slot.push_back(alloc_slot());
  }

  std::optional<Affine> affine(const Expr& e) {
    switch (e.kind()) {
      case ExprKind::IntImm: {
        Affine a;
        a.coef.assign(m_nvars, 0);
        a.constant = e.as<te::IntImm>()->value;
        return a;
      }
      case ExprKind::Var: {
        auto it = m_var_slots.find(e.get());
        if (it == m_var_slots.end())
          throw InternalError("op " + *m_op_name + ": variable " + e.as<te::Var>()->name +
                              " is not an axis of the op");
        Affine a;
        a.coef.assign(m_nvars, 0);
        a.coef[static_cast<size_t>(it->second)] = 1;
        return a;
      }
      case ExprKind::Unary: {
        const auto* u = e.as<te::Unary>();
        if (u->op != UnaryOp::Neg || u->dtype != DType::Int64) return std::nullopt;
        auto a = affine(u->a);
        if (!a) return a;
        a->constant = -a->constant;
        for (auto& c : a->coef) c = -c;
        return a;
      }
      case ExprKind::Binary: {
        const auto* b = e.as<te::Binary>();
        if (b->dtype != DType::Int64) return std::nullopt;
        if (b->op != BinaryOp::Add && b->op != BinaryOp::Sub && b->op != BinaryOp::Mul)
          return std::nullopt;
        auto x = affine(b->a);
        if (!x) return x;
        auto y = affine(b->b);
        if (!y) return y;
        if (b->op == BinaryOp::Mul) {
          bool xc = std::all_of(x->coef.begin(), x->coef.end(), [](int64_t c) { return c == 0; });
          bool yc = std::all_of(y->coef.begin(), y->coef.end(), [](int64_t c) { return c == 0; });
          if (!xc && !yc) return std::nullopt;
          if (xc) std::swap(x, y);  // now y is the constant factor
          int64_t k = y->constant;
          x->constant *= k;
          for (auto& c : x->coef) c *= k;
          return x;
        }
        int64_t sign = b->op == BinaryOp::Add ? 1 : -1;
        x->constant += sign * y->constant;
        for (size_t i = 0; i < m_nvars; ++i) x->coef[i] += sign * y->coef[i];
        return x;
      }
      default:
        return std::nullopt;
    }
  }

  const Node* build(const Expr& e) {
    SOUFFLE_CHECK(e.defined(), "op " + *m_op_name + ": undefined expression");
    auto memo = m_built.find(e.get());
    if (memo != m_built.end()) return memo->second;
    Node* nd = new_node(e);
    switch (e.kind()) {
      case ExprKind::IntImm:
        nd->fn = eval_imm;
        nd->imm.i = is_float(e.dtype())
                        ? 0
                        : wrap_int(e.dtype(), static_cast<uint64_t>(e.as<te::IntImm>()->value));
        if (e.dtype() == DType::Bool) nd->imm.i = e.as<te::IntImm>()->value != 0;
        break;
      case ExprKind::FloatImm:
        nd->fn = eval_imm;
        nd->imm.f = round_to(e.dtype(), e.as<te::FloatImm>()->value, !m_f64);
        break;
      case ExprKind::Var: {
        auto it = m_var_slots.find(e.get());
        if (it == m_var_slots.end())
          throw InternalError("op " + *m_op_name + ": variable " + e.as<te::Var>()->name +
                              " is not an axis of the op");
        nd->fn = eval_var;
        nd->var = it->second;
        nd->lane = it->second == m_lane;
        break;
      }
      case ExprKind::Unary:
        nd->fn = eval_unary;
        nd->code = static_cast<int>(e.as<te::Unary>()->op);
        add_kid(nd, e.as<te::Unary>()->a);
        break;
      case ExprKind::Binary: {
        const auto* b = e.as<te::Binary>();
        nd->code = static_cast<int>(b->op);
        if (build_affine(nd, *b, e)) break;
        add_kid(nd, b->a);
        add_kid(nd, b->b);
        nd->fn = pick_binary(b->op, is_float(b->a.dtype()));
        break;
      }
      case ExprKind::Call: {
        const auto* c = e.as<te::Call>();
        nd->code = static_cast<int>(c->fn);
        for (const Expr& a : c->args) add_kid(nd, a);
        if (!is_float(c->args[0].dtype()))
          nd->fn = eval_call_i;
        else
          nd->fn = c->args.size() == 1 ? pick_call1(c->fn) : eval_call_f;
        break;
      }
      case ExprKind::Select: {
        const auto* s = e.as<te::Select>();
        nd->fn = eval_select;
        nd->var = m_lane;
        add_kid(nd, s->cond);
        add_kid(nd, s->t);
        add_kid(nd, s->f);
        break;
      }
      case ExprKind::Cast: {
        const auto* c = e.as<te::Cast>();
        nd->fn = eval_cast;
        nd->from = c->a.dtype();
        // With the f64 option float intermediates are never rounded, casts included, so that
        // fused and unfused programs agree.
        nd->round_float = !m_f64;
        add_kid(nd, c->a);
        break;
      }
      case ExprKind::Read:
        build_read(nd, *e.as<te::Read>());
        break;
    }
    if (m_uses[e.get()] > 1 && e.kind() != ExprKind::IntImm && e.kind() != ExprKind::FloatImm) {
      nd->cache_index = m_shared++;
      nd->cache_slot = alloc_slot();
    }
    m_built.emplace(e.get(), nd);
    return nd;
  }

  DimIndex index_of(const Affine& a) const {
    DimIndex di;
    di.affine = true;
    di.constant = a.constant;
    for (size_t v = 0; v < m_nvars; ++v) {
      if (a.coef[v] == 0) continue;
      // vars[lane] holds the first lane's value, so the lane var is a term too.
      if (static_cast<int>(v) == m_lane) di.lane_coef = a.coef[v];
      di.terms.emplace_back(static_cast<int>(v), a.coef[v]);
    }
    return di;
  }

  /// Integer index arithmetic (a padded convolution's bounds checks, a gather's offsets) that
  /// is affine in the op's vars becomes one node: an affine form, or a comparison of two.
  bool build_affine(Node* nd, const te::Binary& b, const Expr& e) {
    if (b.a.dtype() != DType::Int64 || b.b.dtype() != DType::Int64) return false;
    switch (b.op) {
      case BinaryOp::Add:
      case BinaryOp::Sub:
      case BinaryOp::Mul: {
        auto a = affine(e);
        if (!a) return false;
        nd->dims.push_back(index_of(*a));
        nd->fn = eval_affine;
        return true;
      }
      case BinaryOp::LT:
      case BinaryOp::LE:
      case BinaryOp::GT:
      case BinaryOp::GE:
      case BinaryOp::EQ:
      case BinaryOp::NE: {
        auto x = affine(b.a);
        if (!x) return false;
        auto y = affine(b.b);
        if (!y) return false;
        x->constant -= y->constant;
        for (size_t i = 0; i < m_nvars; ++i) x->coef[i] -= y->coef[i];
        nd->dims.push_back(index_of(*x));
        nd->fn = pick_affine_cmp(b.op);
        return true;
      }
      default:
        return false;
    }
  }

  static EvalFn pick_affine_cmp(BinaryOp op) {
    switch (op) {
      case BinaryOp::LT:
        return eval_affine_cmp<BinaryOp::LT>;
      case BinaryOp::LE:
        return eval_affine_cmp<BinaryOp::LE>;
      case BinaryOp::GT:
        return eval_affine_cmp<BinaryOp::GT>;
      case BinaryOp::GE:
        return eval_affine_cmp<BinaryOp::GE>;
      case BinaryOp::EQ:
        return eval_affine_cmp<BinaryOp::EQ>;
      default:
        return eval_affine_cmp<BinaryOp::NE>;
    }
  }

  void build_read(Node* nd, const te::Read& r) {
    nd->fn = eval_read;
    nd->op_name = m_op_name;
    nd->tensor_name = &r.tensor->name;
    const TensorData* data = nullptr;
    if (r.tensor->source == te::TensorNode::Source::Constant) {
      SOUFFLE_CHECK(r.tensor->data != nullptr, "constant " + r.tensor->name + " has no data");
      data = r.tensor->data.get();
    } else {
      auto it = m_buffers.find(r.tensor.get());
      if (it == m_buffers.end())
        throw InternalError("op " + *m_op_name + " reads " + r.tensor->name +
                            ", which is not computed yet");
      data = it->second.get();
    }
    const Shape& shape = data->shape();
    SOUFFLE_CHECK(shape.size() == r.indices.size(),
                  "op " + *m_op_name + ": read of " + r.tensor->name + " has the wrong rank");
    nd->data = data->raw();
    nd->tdtype = data->dtype();
    nd->dims.resize(shape.size());
    int64_t stride = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      nd->dims[d].extent = shape[d];
      nd->dims[d].stride = stride;
      stride *= shape[d];
    }
    nd->all_affine = true;
    for (size_t d = 0; d < shape.size(); ++d) {
      DimIndex& di = nd->dims[d];
      auto a = affine(r.indices[d]);
      if (!a) {
        nd->all_affine = false;
        add_kid(nd, r.indices[d]);
        continue;
      }
      int64_t extent = di.extent, stride = di.stride;
      di = index_of(*a);
      di.extent = extent;
      di.stride = stride;
    }
  }

  static EvalFn pick_binary(BinaryOp op, bool fp) {
    switch (op) {
#define SOUFFLE_BIN(N) \
  case BinaryOp::N:    \
    return fp ? eval_binary_f<BinaryOp::N> : eval_binary_i<BinaryOp::N>;
      SOUFFLE_BIN(Add)
      SOUFFLE_BIN(Sub)
      SOUFFLE_BIN(Mul)
      SOUFFLE_BIN(Div)
      SOUFFLE_BIN(Mod)
      SOUFFLE_BIN(FloorDiv)
      SOUFFLE_BIN(FloorMod)
      SOUFFLE_BIN(Min)
      SOUFFLE_BIN(Max)
      SOUFFLE_BIN(EQ)
      SOUFFLE_BIN(NE)
      SOUFFLE_BIN(LT)
      SOUFFLE_BIN(LE)
      SOUFFLE_BIN(GT)
      SOUFFLE_BIN(GE)
      SOUFFLE_BIN(And)
      SOUFFLE_BIN(Or)
      SOUFFLE_BIN(Xor)
      SOUFFLE_BIN(BitAnd)
      SOUFFLE_BIN(BitOr)
      SOUFFLE_BIN(BitXor)
      SOUFFLE_BIN(Shl)
      SOUFFLE_BIN(Shr)
#undef SOUFFLE_BIN
    }
    return nullptr;
  }

  static EvalFn pick_call1(CallFn fn) {
    switch (fn) {
      case CallFn::Exp:
        return eval_call1_f<CallFn::Exp>;
      case CallFn::Erf:
        return eval_call1_f<CallFn::Erf>;
      case CallFn::Tanh:
        return eval_call1_f<CallFn::Tanh>;
      case CallFn::Sqrt:
        return eval_call1_f<CallFn::Sqrt>;
      case CallFn::Rsqrt:
        return eval_call1_f<CallFn::Rsqrt>;
      case CallFn::Sigmoid:
        return eval_call1_f<CallFn::Sigmoid>;
      case CallFn::Abs:
        return eval_call1_f<CallFn::Abs>;
      default:
        return eval_call_f;
    }
  }

  const std::unordered_map<const te::ExprNode*, int>& m_var_slots;
  int m_lane;
  bool m_f64;
  const std::unordered_map<const te::TensorNode*, std::shared_ptr<TensorData>>& m_buffers;
  const std::string* m_op_name;
  size_t m_nvars;
  std::vector<std::unique_ptr<Node>> m_nodes;
  std::unordered_map<const te::ExprNode*, int> m_uses;
  std::unordered_map<const te::ExprNode*, const Node*> m_built;
  int64_t m_scratch = 0;
  int m_shared = 0;
};

// ---- stores ----

void store_values(TensorData& out, int64_t off, const Val* v, int n) {
  uint8_t* raw = out.raw();
  switch (out.dtype()) {
    case DType::Float32: {
      float* p = reinterpret_cast<float*>(raw) + off;
      for (int t = 0; t < n; ++t) p[t] = static_cast<float>(v[t].f);
      return;
    }
    case DType::Float64: {
      double* p = reinterpret_cast<double*>(raw) + off;
      for (int t = 0; t < n; ++t) p[t] = v[t].f;
      return;
    }
    case DType::Float16: {
      uint16_t* p = reinterpret_cast<uint16_t*>(raw) + off;
      for (int t = 0; t < n; ++t) p[t] = double_to_half(v[t].f);
      return;
    }
    case DType::BFloat16: {
      uint16_t* p = reinterpret_cast<uint16_t*>(raw) + off;
      for (int t = 0; t < n; ++t) p[t] = double_to_bfloat16(v[t].f);
      return;
    }
    case DType::Int8: {
      auto* p = reinterpret_cast<int8_t*>(raw) + off;
      for (int t = 0; t < n; ++t) p[t] = static_cast<int8_t>(v[t].i);
      return;
    }
    case DType::Int16: {
      auto* p = reinterpret_cast<int16_t*>(raw) + off;
      for (int t = 0; t < n; ++t) p[t] = static_cast<int16_t>(v[t].i);
      return;
    }
    case DType::Int32: {
      auto* p = reinterpret_cast<int32_t*>(raw) + off;
      for (int t = 0; t < n; ++t) p[t] = static_cast<int32_t>(v[t].i);
      return;
    }
    case DType::Int64:
    case DType::UInt64: {
      auto* p = reinterpret_cast<int64_t*>(raw) + off;
      for (int t = 0; t < n; ++t) p[t] = v[t].i;
      return;
    }
    case DType::UInt8: {
      auto* p = raw + off;
      for (int t = 0; t < n; ++t) p[t] = static_cast<uint8_t>(v[t].i);
      return;
    }
    case DType::Bool: {
      auto* p = raw + off;
      for (int t = 0; t < n; ++t) p[t] = v[t].i != 0;
      return;
    }
    case DType::UInt16: {
      auto* p = reinterpret_cast<uint16_t*>(raw) + off;
      for (int t = 0; t < n; ++t) p[t] = static_cast<uint16_t>(v[t].i);
      return;
    }
    case DType::UInt32: {
      auto* p = reinterpret_cast<uint32_t*>(raw) + off;
      for (int t = 0; t < n; ++t) p[t] = static_cast<uint32_t>(v[t].i);
      return;
    }
  }
}

Val load_one(const TensorData& t, int64_t i) {
  Val v;
  load_strided(t.dtype(), t.raw(), i, 0, 1, &v);
  return v;
}

/// A copy of `src` in dtype `to`, with Cast semantics.
std::shared_ptr<TensorData> convert(const TensorData& src, DType to) {
  auto out = std::make_shared<TensorData>(to, src.shape());
  for (int64_t i = 0; i < src.numel(); ++i) {
    Val v = cast_value(src.dtype(), to, load_one(src, i), true);
    store_values(*out, i, &v, 1);
  }
  return out;
}

// ---- running one op ----

class OpRunner {
 public:
  OpRunner(const te::ComputeOp& op, TensorData& out,
           const std::unordered_map<const te::TensorNode*, std::shared_ptr<TensorData>>& buffers,
           bool f64)
      : m_op(op), m_out(out) {
    int slot = 0;
    for (const te::IterVar& iv : op.axes) m_slots[iv.var.get()] = slot++;
    for (const te::IterVar& iv : op.reduce_axes) m_slots[iv.var.get()] = slot++;
    m_nvars = slot;
    m_reducing = op.reduce != te::ReduceKind::None;
    // Reductions batch over the innermost output axis when it is wide enough: every lane then
    // folds its own reduce points in order (exact), loads are contiguous along the output, and
    // the lanes' accumulations are independent. Otherwise they batch over their widest reduce
    // axis (a convolution's input channels rather than its 3-wide kernel row: a batch's dispatch
    // and index arithmetic are paid per batch), which the reduction walks innermost.
    m_out_lane =
        !op.axes.empty() && (!m_reducing || op.axes.back().extent >= 8 || op.reduce_axes.empty());
    int lane = -1;
    for (size_t d = 0; d < op.reduce_axes.size(); ++d) m_reduce_order.push_back(d);
    if (m_out_lane) {
      lane = static_cast<int>(op.axes.size()) - 1;
    } else if (!op.reduce_axes.empty()) {
      size_t widest = op.reduce_axes.size() - 1;
      for (size_t d = 0; d < op.reduce_axes.size(); ++d)
        if (op.reduce_axes[d].extent > op.reduce_axes[widest].extent) widest = d;
      m_reduce_order.erase(m_reduce_order.begin() + static_cast<std::ptrdiff_t>(widest));
      m_reduce_order.push_back(widest);
      lane = static_cast<int>(op.axes.size() + widest);
    }
    m_lane = lane;
    Compiler body(m_slots, lane, f64, buffers, &op.name);
    m_body = body.compile(op.body);
    m_body_scratch = body.scratch_size();
    m_body_shared = body.shared_count();
    m_nodes = body.take_nodes();
    if (m_reducing) {
      SOUFFLE_CHECK(op.init.defined(), "op " + op.name + ": reduction without init");
      Compiler init(m_slots, m_out_lane ? lane : -1, f64, buffers, &op.name);
      m_init = init.compile(op.init);
      m_init_scratch = init.scratch_size();
      m_init_shared = init.shared_count();
      auto more = init.take_nodes();
      for (auto& n : more) m_nodes.push_back(std::move(n));
    }
  }

  void run(ThreadPool* pool) {
    const auto& axes = m_op.axes;
    int64_t outer = axes.empty() ? 1 : axes[0].extent;
    int64_t inner = 1;  // elements per outer index
    for (size_t d = 1; d < axes.size(); ++d) inner *= axes[d].extent;
    int64_t red = 1;
    for (const auto& iv : m_op.reduce_axes) red *= iv.extent;
    if (outer == 0 || inner == 0) return;
    int64_t work = inner * (m_reducing ? std::max<int64_t>(red, 1) : 1);
    int64_t grain = std::max<int64_t>(1, (int64_t{1} << 14) / std::max<int64_t>(work, 1));
    auto chunk = [&](int64_t b, int64_t e) { run_range(b, e); };
    if (pool == nullptr)
      chunk(0, outer);
    else
      pool->parallel_for(outer, grain, chunk);
  }

 private:
  Frame make_frame(int64_t scratch, int shared) const {
    Frame fr;
    fr.vars.assign(static_cast<size_t>(std::max(m_nvars, 1)), 0);
    fr.scratch.resize(static_cast<size_t>(std::max<int64_t>(scratch, kLanes)));
    fr.cache_batch.assign(static_cast<size_t>(shared), ~uint64_t{0});
    return fr;
  }

  /// Output points with first index in [b, e).
  void run_range(int64_t b, int64_t e) {
    const auto& axes = m_op.axes;
    size_t rank = axes.size();
    Frame fr = make_frame(m_body_scratch, m_body_shared);
    Frame init_fr;
    if (m_reducing) init_fr = make_frame(m_init_scratch, m_init_shared);
    Val buf[kLanes];
    if (rank == 0) {
      if (m_reducing) {
        Val acc = reduce_point(fr, init_fr, {});
        store_values(m_out, 0, &acc, 1);
      } else {
        fr.batch = ++fr.next_batch;
        eval(*m_body, fr, 1, buf);
        store_values(m_out, 0, buf, 1);
      }
      return;
    }
    // Odometer over the output axes; in lane mode the last axis advances by batches (for rank 1
    // it is also the parallel axis, bounded by e).
    std::vector<int64_t> idx(rank, 0);
    idx[0] = b;
    int64_t last_limit = rank == 1 ? e : axes[rank - 1].extent;
    while (idx[0] < e) {
      int64_t off = 0;
      for (size_t d = 0; d < rank; ++d) off = off * axes[d].extent + idx[d];
      for (size_t d = 0; d < rank; ++d) fr.vars[d] = idx[d];
      if (m_out_lane) {
        int n = static_cast<int>(std::min<int64_t>(kLanes, last_limit - idx[rank - 1]));
        if (m_reducing) {
          reduce_lanes(fr, init_fr, n, buf);
        } else {
          fr.batch = ++fr.next_batch;
          eval(*m_body, fr, n, buf);
        }
        store_values(m_out, off, buf, n);
        idx[rank - 1] += n;
      } else {
        Val acc = reduce_point(fr, init_fr, idx);
        store_values(m_out, off, &acc, 1);
        idx[rank - 1] += 1;
      }
      for (size_t d = rank; d-- > 1;) {
        if (idx[d] < axes[d].extent) break;
        idx[d] = 0;
        idx[d - 1] += 1;
      }
    }
  }

  /// Reduces n consecutive output points (fr.vars holds the first one) into acc.
  void reduce_lanes(Frame& fr, Frame& init_fr, int n, Val* acc) {
    size_t base = m_op.axes.size();
    for (size_t d = 0; d < base; ++d) init_fr.vars[d] = fr.vars[d];
    init_fr.batch = ++init_fr.next_batch;
    eval(*m_init, init_fr, n, acc);
    const auto& raxes = m_op.reduce_axes;
    size_t nr = raxes.size();
    for (const auto& iv : raxes)
      if (iv.extent == 0) return;
    DType dt = m_op.output->dtype;
    bool fp = is_float(dt);
    te::ReduceKind kind = m_op.reduce;
    Val buf[kLanes];
    std::vector<int64_t> k(nr, 0);
    for (;;) {
      for (size_t d = 0; d < nr; ++d) fr.vars[base + d] = k[d];
      fr.batch = ++fr.next_batch;
      eval(*m_body, fr, n, buf);
      combine_lanes(kind, dt, fp, acc, buf, n);
      if (nr == 0) return;
      size_t d = nr - 1;
      k[d] += 1;
      while (d > 0 && k[d] >= raxes[d].extent) {
        k[d] = 0;
        k[--d] += 1;
      }
      if (k[0] >= raxes[0].extent) return;
    }
  }

  static void combine_lanes(te::ReduceKind kind, DType dt, bool fp, Val* acc, const Val* v, int n) {
    if (fp) {
      switch (kind) {
        case te::ReduceKind::Sum:
          for (int t = 0; t < n; ++t) acc[t].f += v[t].f;
          return;
        case te::ReduceKind::Prod:
          for (int t = 0; t < n; ++t) acc[t].f *= v[t].f;
          return;
        case te::ReduceKind::Max:
          for (int t = 0; t < n; ++t) acc[t].f = nan_max(acc[t].f, v[t].f);
          return;
        case te::ReduceKind::Min:
          for (int t = 0; t < n; ++t) acc[t].f = nan_min(acc[t].f, v[t].f);
          return;
        case te::ReduceKind::None:
          return;
      }
    }
    for (int t = 0; t < n; ++t) acc[t] = combine(kind, dt, false, acc[t], v + t, 1);
  }

  Val reduce_point(Frame& fr, Frame& init_fr, const std::vector<int64_t>& idx) {
    for (size_t d = 0; d < idx.size(); ++d) init_fr.vars[d] = idx[d];
    init_fr.batch = ++init_fr.next_batch;
    Val acc;
    eval(*m_init, init_fr, 1, &acc);
    const auto& raxes = m_op.reduce_axes;
    size_t nr = raxes.size();
    size_t base = m_op.axes.size();
    bool fp = is_float(m_op.output->dtype);
    DType dt = m_op.output->dtype;
    te::ReduceKind kind = m_op.reduce;
    Val buf[kLanes];
    if (nr == 0) {
      fr.batch = ++fr.next_batch;
      eval(*m_body, fr, 1, buf);
      return combine(kind, dt, fp, acc, buf, 1);
    }
    for (const auto& iv : raxes)
      if (iv.extent == 0) return acc;
    // An odometer over the reduce axes in m_reduce_order: the lane axis last, by batches.
    const std::vector<size_t>& ord = m_reduce_order;
    std::vector<int64_t> k(nr, 0);
    int64_t last = raxes[ord[nr - 1]].extent;
    for (;;) {
      for (size_t d = 0; d < nr; ++d) fr.vars[base + ord[d]] = k[d];
      int n = static_cast<int>(std::min<int64_t>(kLanes, last - k[nr - 1]));
      fr.batch = ++fr.next_batch;
      eval(*m_body, fr, n, buf);
      acc = combine(kind, dt, fp, acc, buf, n);
      k[nr - 1] += n;
      size_t d = nr - 1;
      while (d > 0 && k[d] >= raxes[ord[d]].extent) {
        k[d] = 0;
        k[--d] += 1;
      }
      if (k[0] >= raxes[ord[0]].extent) break;
    }
    return acc;
  }

  static Val combine(te::ReduceKind kind, DType dt, bool fp, Val acc, const Val* v, int n) {
    if (fp) {
      double a = acc.f;
      switch (kind) {
        case te::ReduceKind::Sum:
          for (int t = 0; t < n; ++t) a += v[t].f;
          break;
        case te::ReduceKind::Prod:
          for (int t = 0; t < n; ++t) a *= v[t].f;
          break;
        case te::ReduceKind::Max:
          for (int t = 0; t < n; ++t) a = binary_f(BinaryOp::Max, a, v[t].f).f;
          break;
        case te::ReduceKind::Min:
          for (int t = 0; t < n; ++t) a = binary_f(BinaryOp::Min, a, v[t].f).f;
          break;
        case te::ReduceKind::None:
          break;
      }
      acc.f = a;
      return acc;
    }
    BinaryOp op = BinaryOp::Add;
    switch (kind) {
      case te::ReduceKind::Sum:
        op = BinaryOp::Add;
        break;
      case te::ReduceKind::Prod:
        op = BinaryOp::Mul;
        break;
      case te::ReduceKind::Max:
        op = BinaryOp::Max;
        break;
      case te::ReduceKind::Min:
        op = BinaryOp::Min;
        break;
      case te::ReduceKind::None:
        break;
    }
    int64_t a = acc.i;
    for (int t = 0; t < n; ++t) a = binary_i(op, dt, a, v[t].i);
    acc.i = a;
    return acc;
  }

  const te::ComputeOp& m_op;
  TensorData& m_out;
  std::unordered_map<const te::ExprNode*, int> m_slots;
  int m_nvars = 0;
  int m_lane = -1;
  std::vector<size_t> m_reduce_order;  ///< reduce axes in the order reduce_point walks them
  bool m_reducing = false;
  bool m_out_lane = false;
  std::vector<std::unique_ptr<Node>> m_nodes;
  const Node* m_body = nullptr;
  const Node* m_init = nullptr;
  int64_t m_body_scratch = 0, m_init_scratch = 0;
  int m_body_shared = 0, m_init_shared = 0;
};

/// Every tensor an expression reads.
void collect_reads(const Expr& e, std::unordered_map<const te::ExprNode*, bool>& seen,
                   std::vector<const te::TensorNode*>& out) {
  if (!e.defined() || !seen.emplace(e.get(), true).second) return;
  switch (e.kind()) {
    case ExprKind::Unary:
      collect_reads(e.as<te::Unary>()->a, seen, out);
      break;
    case ExprKind::Binary:
      collect_reads(e.as<te::Binary>()->a, seen, out);
      collect_reads(e.as<te::Binary>()->b, seen, out);
      break;
    case ExprKind::Call:
      for (const Expr& a : e.as<te::Call>()->args) collect_reads(a, seen, out);
      break;
    case ExprKind::Select:
      collect_reads(e.as<te::Select>()->cond, seen, out);
      collect_reads(e.as<te::Select>()->t, seen, out);
      collect_reads(e.as<te::Select>()->f, seen, out);
      break;
    case ExprKind::Cast:
      collect_reads(e.as<te::Cast>()->a, seen, out);
      break;
    case ExprKind::Read:
      out.push_back(e.as<te::Read>()->tensor.get());
      for (const Expr& a : e.as<te::Read>()->indices) collect_reads(a, seen, out);
      break;
    default:
      break;
  }
}

}  // namespace

std::vector<ConstTensorPtr> run(const te::TeProgram& prog,
                                const std::vector<ConstTensorPtr>& inputs,
                                const InterpOptions& options) {
  if (inputs.size() != prog.inputs.size())
    throw UserError("", prog.name,
                    "expected " + std::to_string(prog.inputs.size()) + " inputs, got " +
                        std::to_string(inputs.size()));
  std::unordered_map<const te::TensorNode*, std::shared_ptr<TensorData>> buffers;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const te::Tensor& t = prog.inputs[i];
    if (inputs[i] == nullptr) throw UserError("", t->name, "input is missing");
    if (inputs[i]->shape() != t->shape)
      throw UserError("", t->name,
                      "input has shape " + shape_str(inputs[i]->shape()) + ", the model expects " +
                          shape_str(t->shape));
    if (inputs[i]->dtype() == t->dtype)
      buffers[t.get()] = std::const_pointer_cast<TensorData>(inputs[i]);  // only ever read
    else
      buffers[t.get()] = convert(*inputs[i], t->dtype);
  }

  // Last op reading each tensor, so intermediates are freed as soon as possible.
  std::unordered_map<const te::TensorNode*, size_t> last_use;
  std::vector<std::vector<const te::TensorNode*>> reads(prog.ops.size());
  for (size_t j = 0; j < prog.ops.size(); ++j) {
    std::unordered_map<const te::ExprNode*, bool> seen;
    collect_reads(prog.ops[j]->body, seen, reads[j]);
    collect_reads(prog.ops[j]->init, seen, reads[j]);
    for (const auto* t : reads[j]) last_use[t] = j;
  }
  std::unordered_map<const te::TensorNode*, bool> is_output;
  for (const auto& t : prog.outputs) {
    SOUFFLE_CHECK(t != nullptr, "program " + prog.name + " has an undefined output");
    is_output[t.get()] = true;
  }

  std::unique_ptr<ThreadPool> own_pool;
  ThreadPool* pool = nullptr;
  if (options.threads == 0) {
    pool = &ThreadPool::global();
  } else if (options.threads > 1) {
    own_pool = std::make_unique<ThreadPool>(options.threads);
    pool = own_pool.get();
  }
  if (pool != nullptr && pool->size() <= 1) pool = nullptr;

  for (size_t j = 0; j < prog.ops.size(); ++j) {
    const te::ComputeOp& op = *prog.ops[j];
    SOUFFLE_CHECK(op.output != nullptr, "op " + op.name + " has no output tensor");
    SOUFFLE_CHECK(op.body.defined(), "op " + op.name + " has no body");
    Shape extents;
    for (const auto& iv : op.axes) extents.push_back(iv.extent);
    SOUFFLE_CHECK(extents == op.output->shape, "op " + op.name + ": axes do not match its shape");
    DType storage = options.f64 && is_float(op.output->dtype) ? DType::Float64 : op.output->dtype;
    auto out = std::make_shared<TensorData>(storage, op.output->shape);
    {
      OpRunner runner(op, *out, buffers, options.f64);
      runner.run(pool);
    }
    // An output nobody reads (a dead op) is dropped at once.
    if (last_use.count(op.output.get()) || is_output.count(op.output.get()))
      buffers[op.output.get()] = std::move(out);
    for (const auto* t : reads[j]) {
      auto lu = last_use.find(t);
      if (lu != last_use.end() && lu->second == j && !is_output.count(t)) buffers.erase(t);
    }
  }

  std::vector<ConstTensorPtr> results;
  results.reserve(prog.outputs.size());
  for (const auto& t : prog.outputs) {
    std::shared_ptr<const TensorData> data;
    if (t->source == te::TensorNode::Source::Constant) {
      SOUFFLE_CHECK(t->data != nullptr, "constant " + t->name + " has no data");
      data = t->data;
    } else {
      auto it = buffers.find(t.get());
      if (it == buffers.end())
        throw InternalError("program " + prog.name + ": output " + t->name + " is never computed");
      data = it->second;
    }
    if (data->dtype() != t->dtype) data = convert(*data, t->dtype);
    results.push_back(std::move(data));
  }
  return results;
}

}  // namespace souffle::interp
