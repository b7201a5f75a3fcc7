#include "core/schedule/template_util.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "core/loop/arena.h"
#include "core/loop/mutator.h"
#include "core/loop/simplify.h"
#include "core/loop/verify.h"
#include "core/support/int_math.h"
#include "core/te/builder.h"
#include "core/te/mutator.h"

namespace souffle::schedule::detail {

using loop::ForKind;
using loop::Kernel;
using loop::MemScope;
using loop::Stmt;
using te::Expr;
using te::Tensor;

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

const char* const kTileRoundVar = "round";

int64_t strided_grid(const ScheduleConfig& c) {
  return c.grid_cap > 0 ? std::min(c.max_grid, c.grid_cap) : c.max_grid;
}

TileGrid::TileGrid(int64_t n, const ScheduleConfig& c)
    : tiles(n), grid(c.grid_cap > 0 ? std::min(n, c.grid_cap) : n), iters(ceil_div(n, grid)) {}

Stmt TileGrid::wrap(const Frame& f, const Expr& tile, Stmt body) const {
  if (iters == 1) return loop::substitute(body, {{tile.get(), f.bx}});
  Expr round = te::var(kTileRoundVar);
  if (tiles % grid != 0) body = loop::if_then_else(te::lt(tile, ic(tiles)), body);
  return loop::make_for(round, iters, ForKind::Serial,
                        loop::let_stmt(tile, round * ic(grid) + f.bx, body));
}

std::string TileGrid::describe() const {
  if (iters == 1) return "";
  return ", " + std::to_string(tiles) + " tiles in " + std::to_string(iters) + " rounds of " +
         std::to_string(grid) + " blocks";
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

Kernel finish(const te::ComputeOp& op, const Frame& f, Stmt inner, int64_t grid, int64_t block,
              std::string schedule) {
  return finish({&op}, {op.output}, f, std::move(inner), grid, block, std::move(schedule));
}

Kernel finish(const std::vector<const te::ComputeOp*>& ops, std::vector<Tensor> outputs,
              const Frame& f, Stmt inner, int64_t grid, int64_t block, std::string schedule) {
  SOUFFLE_CHECK(!ops.empty(), "finish: no ops");
  const te::ComputeOp& op = *ops.front();
  Kernel k;
  k.name = op.name;
  std::set<const te::TensorNode*> produced;
  for (const te::ComputeOp* o : ops) produced.insert(o->output.get());
  for (const te::ComputeOp* o : ops)
    for (const Tensor& t : reads_of(*o))
      if (!produced.count(t.get()) &&
          std::find(k.inputs.begin(), k.inputs.end(), t) == k.inputs.end())
        k.inputs.push_back(t);
  k.outputs = std::move(outputs);
  k.launch.grid_x = grid;
  k.launch.block_x = block;
  loop::StageInfo st;
  st.name = op.name;
  st.schedule = std::move(schedule);
  for (const te::ComputeOp* o : ops) {
    st.tes.push_back(o->name);
    st.origins.push_back(o->origin);
  }
  st.grid_x = grid;
  st.block_x = block;
  k.stages.push_back(st);
  Stmt body = loop::stage(0, loop::simplify(inner));
  k.body = loop::make_for(f.bx, grid, ForKind::BlockIdxX,
                          loop::make_for(f.tx, block, ForKind::ThreadIdxX, body));
  loop::verify(k);
  return loop::plan_shared_arena(k);
}

Kernel finish_gemm_tc(const te::ComputeOp& op, const std::vector<const te::ComputeOp*>& epilogue,
                      std::vector<Tensor> outputs, const Frame& f, Stmt inner, int64_t grid,
                      int64_t block, std::string schedule, const TensorCoreTile& tile) {
  if (!epilogue.empty()) {
    schedule += ", epilogue";
    for (const te::ComputeOp* ep : epilogue) schedule += " " + ep->name;
  }
  std::vector<const te::ComputeOp*> ops{&op};
  ops.insert(ops.end(), epilogue.begin(), epilogue.end());
  Kernel k = finish(ops, std::move(outputs), f, std::move(inner), grid, block, std::move(schedule));
  k.stages.front().tensor_core = tile;
  return k;
}

Kernel finish_phases(const te::ComputeOp& op, const Frame& f, std::vector<Stmt> phases,
                     int64_t grid, int64_t block, std::string schedule,
                     std::vector<Tensor> scratch) {
  SOUFFLE_CHECK(!phases.empty(), "finish_phases: no phase");
  Kernel k;
  k.name = op.name;
  k.inputs = reads_of(op);
  k.outputs = {op.output};
  k.launch.grid_x = grid;
  k.launch.block_x = block;
  k.stages.push_back({op.name, std::move(schedule), {op.name}, {op.origin}, grid, block});
  std::vector<Stmt> body;
  for (size_t i = 0; i < phases.size(); ++i) {
    if (i) {
      body.push_back(loop::grid_barrier());
      StageBoundary b;
      b.before = b.after = 0;
      b.kind = BoundaryKind::Grid;
      b.reason = BoundaryReason::SplitRows;
      b.tensor = op.output->name;
      b.producer = 0;
      b.grid = grid;
      k.boundaries.push_back(b);
    }
    body.push_back(loop::stage(0, loop::simplify(phases[i])));
  }
  for (Tensor& t : scratch) k.outputs.push_back(std::move(t));
  k.launch.cooperative = phases.size() > 1;
  k.body = loop::make_for(f.bx, grid, ForKind::BlockIdxX,
                          loop::make_for(f.tx, block, ForKind::ThreadIdxX, loop::seq(body)));
  loop::verify(k);
  return loop::plan_shared_arena(k);
}

bool split_product(const Expr& body, Expr& a, Expr& b) {
  if (const te::Binary* mul = body.as<te::Binary>()) {
    if (mul->op != te::BinaryOp::Mul) return false;
    a = mul->a;
    b = mul->b;
    return true;
  }
  auto zero = [](const Expr& e) {
    const te::FloatImm* f = e.as<te::FloatImm>();
    const te::IntImm* i = e.as<te::IntImm>();
    return (f && f->value == 0.0) || (i && i->value == 0);
  };
  const te::Select* sel = body.as<te::Select>();
  if (!sel) return false;
  Expr ta, tb, fa, fb;
  const bool tz = zero(sel->t), fz = zero(sel->f);
  if (tz && fz) return false;
  if (!tz && !split_product(sel->t, ta, tb)) return false;
  if (!fz && !split_product(sel->f, fa, fb)) return false;
  if (tz) {
    ta = tb = sel->t;
  } else if (fz) {
    fa = fb = sel->f;
  } else {
    // Line the branches' factors up by the variables they share, so that the rows of one
    // branch's first factor are the rows of the other's (x*W beside R*h).
    auto shared = [](const Expr& x, const Expr& y) {
      size_t n = 0;
      auto vy = vars_of(y);
      for (const te::ExprNode* v : vars_of(x)) n += vy.count(v);
      return n;
    };
    if (shared(ta, fb) + shared(tb, fa) > shared(ta, fa) + shared(tb, fb)) std::swap(fa, fb);
  }
  auto same_type = [](Expr& x, const Expr& y) {
    if (x.dtype() != y.dtype()) x = te::cast(y.dtype(), x);
  };
  same_type(fa, ta);
  same_type(fb, tb);
  if (ta.dtype() != fa.dtype() || tb.dtype() != fb.dtype()) return false;
  a = te::select(sel->cond, ta, fa);
  b = te::select(sel->cond, tb, fb);
  return true;
}

bool is_elementwise_follower(const te::ComputeOp& main,
                             const std::vector<const te::ComputeOp*>& group,
                             const te::ComputeOp& consumer) {
  if (consumer.reduce != te::ReduceKind::None || consumer.axes.size() != main.axes.size())
    return false;
  for (size_t d = 0; d < main.axes.size(); ++d)
    if (consumer.axes[d].extent != main.axes[d].extent) return false;
  std::set<const te::TensorNode*> mine{main.output.get()};
  for (const te::ComputeOp* e : group) mine.insert(e->output.get());
  // Each read of the group's tensors must be at the consumer's own index: the thread storing
  // that element holds exactly that value and no other.
  bool reads_group = false, elementwise = true;
  te::for_each_node(consumer.body, [&](const te::Expr& n) {
    const te::Read* r = n.as<te::Read>();
    if (!r || !mine.count(r->tensor.get())) return;
    reads_group = true;
    if (r->indices.size() != consumer.axes.size()) {
      elementwise = false;
      return;
    }
    for (size_t d = 0; d < r->indices.size(); ++d) {
      // Lowering writes 0 for an axis of extent 1: the same element.
      const te::IntImm* zero = r->indices[d].as<te::IntImm>();
      bool same = r->indices[d].same_as(consumer.axes[d].var) ||
                  (consumer.axes[d].extent == 1 && zero && zero->value == 0);
      elementwise &= same;
    }
  });
  return reads_group && elementwise;
}

TcBlockTile tc_block_tile(const ScheduleConfig& c, int64_t ks, const std::string& who) {
  constexpr int64_t kFrag = 16;
  TcBlockTile t;
  if (c.tc_tile.bm > 0) {
    t.bm = c.tc_tile.bm;
    t.bn = c.tc_tile.bn;
    t.bk = c.tc_tile.bk;
    t.fm = c.tc_tile.tm;
    t.fn = c.tc_tile.tn;
    SOUFFLE_CHECK(t.fm > 0 && t.fn > 0 && t.bm % (kFrag * t.fm) == 0 && t.bn % (kFrag * t.fn) == 0,
                  who + ": the block tile must divide into warps of whole fragments");
    t.wr = t.bm / (kFrag * t.fm);
    t.wc = t.bn / (kFrag * t.fn);
  } else {
    const int64_t warps = c.block >= 4 * loop::kWarpSize   ? 4
                          : c.block >= 2 * loop::kWarpSize ? 2
                                                           : 1;
    t.wr = warps >= 2 ? 2 : 1;
    t.wc = warps / t.wr;
    t.fm = t.fn = 2;
    t.bm = t.wr * t.fm * kFrag;
    t.bn = t.wc * t.fn * kFrag;
    t.bk = 32;
  }
  SOUFFLE_CHECK(t.bk > 0 && t.bk % ks == 0, who + ": BK must be a multiple of the MMA's k");
  return t;
}

ElementStores gemm_element_stores(const te::ComputeOp& op, const te::Expr& value,
                                  const std::vector<const te::ComputeOp*>& epilogue,
                                  const std::vector<te::Tensor>& on_chip, const std::string& who) {
  auto kept = [&](const te::Tensor& x) {
    return std::find(on_chip.begin(), on_chip.end(), x) == on_chip.end();
  };
  ElementStores out;
  std::unordered_map<const te::TensorNode*, te::Expr> in_regs;
  in_regs[op.output.get()] = with_init(op, value);
  if (kept(op.output)) {
    out.stores.push_back(loop::store(op.output, axis_vars(op), in_regs[op.output.get()]));
    out.outputs.push_back(op.output);
  }
  for (const te::ComputeOp* e : epilogue) {
    SOUFFLE_CHECK(e->axes.size() == op.axes.size(), "epilogue " + e->name + " has another rank");
    std::unordered_map<const te::ExprNode*, te::Expr> axes;
    for (size_t d = 0; d < op.axes.size(); ++d) axes[e->axes[d].var.get()] = op.axes[d].var;
    te::Expr v =
        te::rewrite_reads(te::substitute(e->body, axes),
                          [&](const te::Read& rd, const std::vector<te::Expr>&) -> te::Expr {
                            auto it = in_regs.find(rd.tensor.get());
                            return it == in_regs.end() ? te::Expr() : it->second;
                          });
    te::Tensor reg = loop::make_buffer(e->name + "_v", {1}, e->output->dtype);
    out.scalars.push_back(reg);
    out.stores.push_back(loop::store(reg, {ic(0)}, v));
    in_regs[e->output.get()] = te::read(reg, {ic(0)});
    if (kept(e->output)) {
      out.stores.push_back(loop::store(e->output, axis_vars(op), in_regs[e->output.get()]));
      out.outputs.push_back(e->output);
    }
  }
  SOUFFLE_CHECK(!out.outputs.empty(), who + " " + op.name + " stores nothing");
  return out;
}

}  // namespace souffle::schedule::detail
