#include "core/schedule/schedule.h"

#include <algorithm>
#include <set>
#include <unordered_set>

#include "core/loop/arena.h"
#include "core/loop/mutator.h"
#include "core/loop/simplify.h"
#include "core/loop/verify.h"
#include "core/te/builder.h"
#include "core/te/mutator.h"

namespace souffle::schedule {

using loop::ForKind;
using loop::Kernel;
using loop::MemScope;
using loop::Stmt;
using te::Expr;
using te::Tensor;

const char* schedule_kind_name(ScheduleKind k) {
  switch (k) {
    case ScheduleKind::Injective:
      return "injective";
    case ScheduleKind::Reduction:
      return "reduction";
    case ScheduleKind::Gemm:
      return "gemm";
  }
  return "?";
}

namespace {

int64_t ceil_div(int64_t a, int64_t b) {
  return (a + b - 1) / b;
}

Expr ic(int64_t v) {
  return te::int_imm(v);
}

std::unordered_set<const te::ExprNode*> vars_of(const Expr& e) {
  std::unordered_set<const te::ExprNode*> out;
  te::for_each_node(e, [&](const Expr& n) {
    if (n.as<te::Var>()) out.insert(n.get());
  });
  return out;
}

/// Wraps body in lets binding each axis var to its digit of the row-major flat index.
Stmt bind_flat(const std::vector<te::IterVar>& axes, const Expr& flat, Stmt body) {
  int64_t stride = 1;
  std::vector<std::pair<Expr, Expr>> lets(axes.size());
  for (size_t d = axes.size(); d-- > 0;) {
    Expr v = te::floordiv(flat, ic(stride));
    if (d > 0) v = te::floormod(v, ic(axes[d].extent));
    lets[d] = {axes[d].var, v};
    stride *= axes[d].extent;
  }
  for (size_t d = axes.size(); d-- > 0;) body = loop::let_stmt(lets[d].first, lets[d].second, body);
  return body;
}

int64_t extent_product(const std::vector<te::IterVar>& axes) {
  int64_t n = 1;
  for (const te::IterVar& a : axes) n *= a.extent;
  return n;
}

std::vector<Expr> axis_vars(const te::ComputeOp& op) {
  std::vector<Expr> v;
  for (const te::IterVar& a : op.axes) v.push_back(a.var);
  return v;
}

Expr combine(te::ReduceKind k, const Expr& a, const Expr& b) {
  switch (k) {
    case te::ReduceKind::Sum:
      return a + b;
    case te::ReduceKind::Prod:
      return a * b;
    case te::ReduceKind::Max:
      return te::max(a, b);
    case te::ReduceKind::Min:
      return te::min(a, b);
    case te::ReduceKind::None:
      break;
  }
  SOUFFLE_CHECK(false, "combine: not a reduction");
}

/// init (+) value, leaving out an identity init so that the common sum reads as written.
Expr with_init(const te::ComputeOp& op, const Expr& value) {
  if (!op.init.defined()) return value;
  if (const te::FloatImm* f = op.init.as<te::FloatImm>())
    if (op.reduce == te::ReduceKind::Sum && f->value == 0.0) return value;
  if (const te::IntImm* i = op.init.as<te::IntImm>())
    if (op.reduce == te::ReduceKind::Sum && i->value == 0) return value;
  return combine(op.reduce, op.init, value);
}

std::vector<Tensor> reads_of(const te::ComputeOp& op) {
  std::vector<Tensor> out;
  std::set<const te::TensorNode*> seen;
  auto add = [&](const Expr& e) {
    if (!e.defined()) return;
    te::for_each_node(e, [&](const Expr& n) {
      if (const te::Read* r = n.as<te::Read>())
        if (seen.insert(r->tensor.get()).second) out.push_back(r->tensor);
    });
  };
  add(op.body);
  add(op.init);
  return out;
}

struct Frame {
  Expr bx = te::var("bx"), tx = te::var("tx");
};

Kernel finish(const te::ComputeOp& op, const Frame& f, Stmt inner, int64_t grid, int64_t block,
              std::string schedule) {
  Kernel k;
  k.name = op.name;
  k.inputs = reads_of(op);
  k.outputs = {op.output};
  k.launch.grid_x = grid;
  k.launch.block_x = block;
  loop::StageInfo st;
  st.name = op.name;
  st.schedule = std::move(schedule);
  st.tes = {op.name};
  st.origins = {op.origin};
  st.grid_x = grid;
  st.block_x = block;
  k.stages.push_back(st);
  Stmt body = loop::stage(0, loop::simplify(inner));
  k.body = loop::make_for(f.bx, grid, ForKind::BlockIdxX,
                          loop::make_for(f.tx, block, ForKind::ThreadIdxX, body));
  loop::verify(k);
  return loop::plan_shared_arena(k);
}

Kernel schedule_injective(const te::ComputeOp& op, const ScheduleConfig& c) {
  Frame f;
  int64_t n = extent_product(op.axes);
  int64_t block = std::min(c.block, std::max<int64_t>(32, ceil_div(n, 32) * 32));
  int64_t grid = std::min(c.max_grid, ceil_div(n, block));
  int64_t iters = ceil_div(n, grid * block);
  Expr it = te::var("it"), idx = te::var("idx");
  Stmt st = loop::store(op.output, axis_vars(op), op.body);
  Stmt guarded = loop::if_then_else(te::lt(idx, ic(n)), bind_flat(op.axes, idx, st));
  Stmt body =
      loop::make_for(it, iters, ForKind::Serial,
                     loop::let_stmt(idx, (it * ic(grid) + f.bx) * ic(block) + f.tx, guarded));
  return finish(op, f, body, grid, block, "injective grid-stride");
}

Kernel schedule_reduction(const te::ComputeOp& op, const ScheduleConfig& c) {
  Frame f;
  int64_t rows = extent_product(op.axes), r = extent_product(op.reduce_axes);
  int64_t block = 32;
  while (block < c.block && block < r) block *= 2;
  int64_t grid = std::min(c.max_grid, rows);
  DType t = op.output->dtype;
  Tensor red = loop::make_buffer(op.name + "_red", {block}, t);
  Tensor acc = loop::make_buffer(op.name + "_acc", {1}, t);
  Expr ri = te::var("ri"), row = te::var("row"), kk = te::var("kk"), k = te::var("k");
  Expr acc0 = te::read(acc, {ic(0)});

  std::vector<Stmt> per_row;
  per_row.push_back(loop::store(acc, {ic(0)}, te::reduce_identity(op.reduce, t)));
  Stmt fold = loop::store(acc, {ic(0)}, combine(op.reduce, acc0, op.body));
  per_row.push_back(loop::make_for(
      kk, ceil_div(r, block), ForKind::Serial,
      loop::let_stmt(k, kk * ic(block) + f.tx,
                     loop::if_then_else(te::lt(k, ic(r)), bind_flat(op.reduce_axes, k, fold)))));
  per_row.push_back(loop::store(red, {f.tx}, acc0));
  per_row.push_back(loop::block_barrier());
  for (int64_t s = block / 2; s >= 1; s /= 2) {
    Expr other = te::read(red, {f.tx + ic(s)});
    per_row.push_back(loop::if_then_else(
        te::lt(f.tx, ic(s)),
        loop::store(red, {f.tx}, combine(op.reduce, te::read(red, {f.tx}), other))));
    per_row.push_back(loop::block_barrier());
  }
  per_row.push_back(loop::if_then_else(
      te::eq(f.tx, ic(0)),
      loop::store(op.output, axis_vars(op), with_init(op, te::read(red, {ic(0)})))));
  // The next row overwrites red: every thread must be past the final read first.
  per_row.push_back(loop::block_barrier());

  Stmt row_body = loop::if_then_else(te::lt(row, ic(rows)),
                                     bind_flat(op.axes, row, loop::seq(std::move(per_row))));
  Stmt body = loop::make_for(ri, ceil_div(rows, grid), ForKind::Serial,
                             loop::let_stmt(row, ri * ic(grid) + f.bx, row_body));
  body = loop::allocate(red, MemScope::Shared, loop::allocate(acc, MemScope::Local, body));
  return finish(op, f, body, grid, block,
                "reduction, shared tree over " + std::to_string(block) + " threads");
}

/// The operands of a GEMM-like TE and how its output axes split.
struct GemmParts {
  Expr a, b;  ///< body = a * b
  std::vector<te::IterVar> batch, rows, cols;
};

bool match_gemm(const te::ComputeOp& op, GemmParts& g) {
  if (op.reduce != te::ReduceKind::Sum || op.reduce_axes.empty()) return false;
  const te::Binary* mul = op.body.as<te::Binary>();
  if (!mul || mul->op != te::BinaryOp::Mul) return false;
  auto va = vars_of(mul->a), vb = vars_of(mul->b);
  g = {};
  for (const te::IterVar& ax : op.axes) {
    bool in_a = va.count(ax.var.get()), in_b = vb.count(ax.var.get());
    if (in_a && !in_b)
      g.rows.push_back(ax);
    else if (in_b && !in_a)
      g.cols.push_back(ax);
    else
      g.batch.push_back(ax);
  }
  // a provides the rows, b the columns; swap when the product is written the other way round.
  g.a = mul->a;
  g.b = mul->b;
  if (g.rows.empty() || g.cols.empty()) return false;
  for (const te::IterVar& k : op.reduce_axes)
    if (!va.count(k.var.get()) && !vb.count(k.var.get())) return false;
  return true;
}

Kernel schedule_gemm(const te::ComputeOp& op, const GemmParts& g, const ScheduleConfig& c) {
  Frame f;
  const int64_t bm = c.gemm_bm, bn = c.gemm_bn, bk = c.gemm_bk, tm = c.gemm_tm, tn = c.gemm_tn;
  SOUFFLE_CHECK(bm % tm == 0 && bn % tn == 0, "gemm tile must divide by the register tile");
  const int64_t threads = (bm / tm) * (bn / tn);
  const int64_t p = extent_product(g.batch), m = extent_product(g.rows), n = extent_product(g.cols),
                kdim = extent_product(op.reduce_axes);
  const int64_t mt = ceil_div(m, bm), nt = ceil_div(n, bn), grid = p * mt * nt;
  DType t = op.output->dtype;
  Tensor sa = loop::make_buffer(op.name + "_a", {bm, bk}, g.a.dtype());
  Tensor sb = loop::make_buffer(op.name + "_b", {bk, bn}, g.b.dtype());
  Tensor acc = loop::make_buffer(op.name + "_acc", {tm, tn}, t);
  Expr pb = te::var("pb"), mb = te::var("mb"), nb = te::var("nb"), ty = te::var("ty"),
       tc = te::var("tc"), ko = te::var("ko"), kk = te::var("kk"), r = te::var("r"),
       cc = te::var("c");

  // A cooperative tile load: each thread copies elements e = l*threads + tx of the tile.

  auto tile_load = [&](const Tensor& buf, int64_t tr, int64_t tcn, bool is_a) {
    std::string tag = is_a ? "a" : "b";
    Expr l = te::var("l" + tag), e = te::var("e" + tag), ii = te::var("i" + tag),
         jj = te::var("j" + tag), gi = te::var("gi" + tag), gj = te::var("gj" + tag);
    Expr value = is_a ? g.a : g.b;
    // For A the tile is [rows, k]; for B it is [k, cols].
    Expr grow = is_a ? mb * ic(bm) + ii : ko * ic(bk) + ii;
    Expr gcol = is_a ? ko * ic(bk) + jj : nb * ic(bn) + jj;
    int64_t lim_r = is_a ? m : kdim, lim_c = is_a ? kdim : n;
    Expr in = te::logical_and(te::lt(gi, ic(lim_r)), te::lt(gj, ic(lim_c)));
    Stmt st = loop::store(buf, {ii, jj}, te::select(in, value, te::imm(value.dtype(), 0)));
    st = bind_flat(op.reduce_axes, is_a ? gj : gi, st);
    st = bind_flat(is_a ? g.rows : g.cols, is_a ? gi : gj, st);
    st = bind_flat(g.batch, pb, st);
    st = loop::let_stmt(gi, grow, loop::let_stmt(gj, gcol, st));
    st = loop::let_stmt(ii, te::floordiv(e, ic(tcn)),
                        loop::let_stmt(jj, te::floormod(e, ic(tcn)), st));
    st = loop::if_then_else(te::lt(e, ic(tr * tcn)), st);
    return loop::make_for(l, ceil_div(tr * tcn, threads), ForKind::Serial,
                          loop::let_stmt(e, l * ic(threads) + f.tx, st));
  };

  std::vector<Stmt> body;
  body.push_back(loop::make_for(
      r, tm, ForKind::Unrolled,
      loop::make_for(cc, tn, ForKind::Unrolled,
                     loop::store(acc, {r, cc}, te::reduce_identity(te::ReduceKind::Sum, t)))));
  Expr prod = te::read(sa, {ty * ic(tm) + r, kk}) * te::read(sb, {kk, tc * ic(tn) + cc});
  if (prod.dtype() != t) prod = te::cast(t, prod);
  Stmt mac = loop::store(acc, {r, cc}, te::read(acc, {r, cc}) + prod);
  Stmt kstep =
      loop::seq({tile_load(sa, bm, bk, true), tile_load(sb, bk, bn, false), loop::block_barrier(),
                 loop::make_for(kk, bk, ForKind::Serial,
                                loop::make_for(r, tm, ForKind::Unrolled,
                                               loop::make_for(cc, tn, ForKind::Unrolled, mac))),
                 loop::block_barrier()});
  body.push_back(loop::make_for(ko, ceil_div(kdim, bk), ForKind::Serial, kstep));

  Expr gi = te::var("gi"), gj = te::var("gj");
  Stmt out = loop::store(op.output, axis_vars(op), with_init(op, te::read(acc, {r, cc})));
  out = bind_flat(g.cols, gj, out);
  out = bind_flat(g.rows, gi, out);
  out = bind_flat(g.batch, pb, out);
  out = loop::if_then_else(te::logical_and(te::lt(gi, ic(m)), te::lt(gj, ic(n))), out);
  out = loop::let_stmt(gi, mb * ic(bm) + ty * ic(tm) + r,
                       loop::let_stmt(gj, nb * ic(bn) + tc * ic(tn) + cc, out));
  body.push_back(
      loop::make_for(r, tm, ForKind::Unrolled, loop::make_for(cc, tn, ForKind::Unrolled, out)));

  Stmt inner = loop::seq(std::move(body));
  inner = loop::let_stmt(ty, te::floordiv(f.tx, ic(bn / tn)),
                         loop::let_stmt(tc, te::floormod(f.tx, ic(bn / tn)), inner));
  inner = loop::let_stmt(pb, te::floordiv(f.bx, ic(mt * nt)),
                         loop::let_stmt(mb, te::floormod(te::floordiv(f.bx, ic(nt)), ic(mt)),
                                        loop::let_stmt(nb, te::floormod(f.bx, ic(nt)), inner)));
  inner = loop::allocate(
      sa, MemScope::Shared,
      loop::allocate(sb, MemScope::Shared, loop::allocate(acc, MemScope::Local, inner)));
  return finish(op, f, inner, grid, threads,
                "gemm " + std::to_string(bm) + "x" + std::to_string(bn) + "x" + std::to_string(bk) +
                    " tile " + std::to_string(tm) + "x" + std::to_string(tn));
}

}  // namespace

ScheduleKind classify(const te::ComputeOp& op) {
  if (op.reduce == te::ReduceKind::None) return ScheduleKind::Injective;
  GemmParts g;
  return match_gemm(op, g) ? ScheduleKind::Gemm : ScheduleKind::Reduction;
}

Kernel schedule_op(const te::ComputeOp& op, const ScheduleConfig& config) {
  if (op.reduce == te::ReduceKind::None) return schedule_injective(op, config);
  GemmParts g;
  if (match_gemm(op, g)) return schedule_gemm(op, g, config);
  return schedule_reduction(op, config);
}

loop::KernelSet schedule_program(const te::TeProgram& program, const ScheduleConfig& config) {
  loop::KernelSet ks;
  ks.name = program.name;
  ks.inputs = program.inputs;
  ks.outputs = program.outputs;
  for (const te::Op& op : program.ops) ks.kernels.push_back(schedule_op(*op, config));
  return ks;
}

namespace {

/// Splits a scheduled kernel body into its block var, thread var and the statements inside.
void unwrap(const Kernel& k, Expr& bx, Expr& tx, Stmt& inner) {
  const loop::For* fb = k.body.as<loop::For>();
  SOUFFLE_CHECK(fb && fb->for_kind == ForKind::BlockIdxX,
                "merge: " + k.name + " has no block loop");
  const loop::For* ft = fb->body.as<loop::For>();
  SOUFFLE_CHECK(ft && ft->for_kind == ForKind::ThreadIdxX,
                "merge: " + k.name + " has no thread loop");
  bx = fb->var;
  tx = ft->var;
  inner = ft->body;
}

class StageRenumber : public loop::StmtMutator {
 public:
  explicit StageRenumber(int offset) : m_offset(offset) {}

 protected:
  Stmt mutate_Stage(const loop::Stage& n, const Stmt&) override {
    return loop::stage(n.index + m_offset, mutate(n.body));
  }

 private:
  int m_offset;
};

bool has_block_barrier(const Stmt& s) {
  bool found = false;
  loop::for_each_stmt(s, [&](const Stmt& x) { found |= x.as<loop::BlockBarrier>() != nullptr; });
  return found;
}

}  // namespace

Kernel merge_stages(std::vector<Kernel> stages, const std::string& name) {
  SOUFFLE_CHECK(!stages.empty(), "merge: no stages");
  Kernel k;
  k.name = name;
  for (const Kernel& s : stages) {
    k.launch.grid_x = std::max(k.launch.grid_x, s.launch.grid_x);
    k.launch.block_x = std::max(k.launch.block_x, s.launch.block_x);
  }
  Frame f;
  std::set<const te::TensorNode*> produced, dirty;
  std::vector<Stmt> body;
  for (Kernel& s : stages) {
    Expr bx, tx;
    Stmt inner;
    unwrap(s, bx, tx, inner);
    inner = loop::substitute(inner, {{bx.get(), f.bx}, {tx.get(), f.tx}});
    inner = StageRenumber(static_cast<int>(k.stages.size())).mutate(inner);
    Expr guard;
    auto conj = [&](Expr c) { guard = guard.defined() ? te::logical_and(guard, c) : c; };
    if (s.launch.grid_x < k.launch.grid_x) conj(te::lt(f.bx, ic(s.launch.grid_x)));
    if (s.launch.block_x < k.launch.block_x) {
      SOUFFLE_CHECK(!has_block_barrier(inner),
                    "merge: stage " + s.name + " has block barriers and a smaller block");
      conj(te::lt(f.tx, ic(s.launch.block_x)));
    }
    if (guard.defined()) inner = loop::if_then_else(guard, inner);
    bool depends = false;
    for (const Tensor& t : s.inputs) depends |= dirty.count(t.get()) > 0;
    for (const Tensor& t : s.outputs) depends |= dirty.count(t.get()) > 0;
    if (depends) {
      body.push_back(loop::grid_barrier());
      k.launch.cooperative = true;
      dirty.clear();
    }
    body.push_back(inner);
    for (const Tensor& t : s.inputs)
      if (!produced.count(t.get()) &&
          std::find(k.inputs.begin(), k.inputs.end(), t) == k.inputs.end())
        k.inputs.push_back(t);
    for (const Tensor& t : s.outputs) {
      if (produced.insert(t.get()).second) k.outputs.push_back(t);
      dirty.insert(t.get());
    }
    for (const loop::StageInfo& si : s.stages) k.stages.push_back(si);
  }
  k.body = loop::make_for(
      f.bx, k.launch.grid_x, ForKind::BlockIdxX,
      loop::make_for(f.tx, k.launch.block_x, ForKind::ThreadIdxX, loop::seq(std::move(body))));
  loop::verify(k);
  return loop::plan_shared_arena(k);
}

}  // namespace souffle::schedule
