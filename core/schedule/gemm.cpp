#include <algorithm>
#include <functional>
#include <set>
#include <unordered_map>

#include "core/loop/stmt.h"
#include "core/schedule/template_util.h"
#include "core/schedule/weight_panel.h"
#include "core/te/builder.h"
#include "core/te/mutator.h"

namespace souffle::schedule::detail {

const char* const kFirstTileMarker = "first K tile of operand ";

using loop::ForKind;
using loop::Kernel;
using loop::MemScope;
using loop::Stmt;
using te::Expr;
using te::Tensor;

bool match_gemm(const te::ComputeOp& op, GemmParts& g) {
  if (op.reduce != te::ReduceKind::Sum || op.reduce_axes.empty()) return false;
  // A product, or a select between products (a K axis concatenated from two operand pairs).
  te::Expr fa, fb;
  if (!split_product(op.body, fa, fb)) return false;
  auto va = vars_of(fa), vb = vars_of(fb);
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
  g.a = fa;
  g.b = fb;
  if (g.rows.empty()) {
    std::swap(g.a, g.b);
    std::swap(g.rows, g.cols);
  }
  // No column axis is a matrix-vector product per batch (N = 1): a depthwise convolution,
  // whose channel is read by both operands.
  if (g.rows.empty()) return false;
  // A contraction: both operands vary along the reduction (a sum of x times a constant, a
  // mean, is not one), and every reduce axis is read by one of them.
  bool a_k = false, b_k = false;
  for (const te::IterVar& k : op.reduce_axes) {
    bool in_a = va.count(k.var.get()) > 0, in_b = vb.count(k.var.get()) > 0;
    if (!in_a && !in_b) return false;
    a_k |= in_a;
    b_k |= in_b;
  }
  return a_k && b_k;
}

namespace {

/// One operand's tile in shared memory: A is [BM, BK] of the rows, B is [BK, BN] of the columns.
struct Operand {
  bool is_a = true;
  std::string tag;
  Expr value;           ///< the operand expression (reads the model tensors)
  int64_t rows = 0;     ///< tile rows
  int64_t cols = 0;     ///< tile columns
  int64_t lim_r = 0;    ///< global extent of the tile rows (M for A, K for B)
  int64_t lim_c = 0;    ///< global extent of the tile columns (K for A, N for B)
  int64_t per_thread;   ///< elements each thread copies
  Tensor smem, staged;  ///< shared tile(s); per-thread registers of the next tile (double buffer)
};

}  // namespace

Kernel schedule_gemm(const te::ComputeOp& op, const GemmParts& g, const ScheduleConfig& c) {
  return schedule_gemm_fused(op, g, {}, {}, c);
}

Kernel schedule_gemm_fused(const te::ComputeOp& op, const GemmParts& g,
                           const std::vector<const te::ComputeOp*>& epilogue,
                           const std::vector<Tensor>& on_chip, const ScheduleConfig& c,
                           const WeightPanel* panel) {
  Frame f;
  const gpu::Tile& config_tile = c.gemm_tile;
  const int64_t bm = config_tile.bm, bn = config_tile.bn, bk = config_tile.bk, tm = config_tile.tm,
                tn = config_tile.tn;
  const bool db = config_tile.double_buffer;
  SOUFFLE_CHECK(bm % tm == 0 && bn % tn == 0, "gemm tile must divide by the register tile");
  const int64_t threads = (bm / tm) * (bn / tn);
  const int64_t p = extent_product(g.batch), m = extent_product(g.rows), n = extent_product(g.cols),
                kdim = extent_product(op.reduce_axes);
  const int64_t mt = ceil_div(m, bm), nt = ceil_div(n, bn);
  const TileGrid tg(p * mt * nt, c);
  const int64_t ksteps = ceil_div(kdim, bk);
  DType t = op.output->dtype;
  Tensor acc = loop::make_buffer(op.name + "_acc", {tm, tn}, t);
  Expr pb = te::var("pb"), mb = te::var("mb"), nb = te::var("nb"), ty = te::var("ty"),
       tc = te::var("tc"), ko = te::var("ko"), kk = te::var("kk"), r = te::var("r"),
       cc = te::var("c"), cur = te::var("cur"), tile = te::var("tile");

  auto operand = [&](bool is_a) {
    Operand o;
    o.is_a = is_a;
    o.tag = is_a ? "a" : "b";
    o.value = is_a ? g.a : g.b;
    o.rows = is_a ? bm : bk;
    o.cols = is_a ? bk : bn;
    o.lim_r = is_a ? m : kdim;
    o.lim_c = is_a ? kdim : n;
    o.per_thread = ceil_div(o.rows * o.cols, threads);
    Shape shape = db ? Shape{2, o.rows, o.cols} : Shape{o.rows, o.cols};
    o.smem = loop::make_buffer(op.name + "_" + o.tag, shape, o.value.dtype());
    if (db)
      o.staged =
          loop::make_buffer(op.name + "_" + o.tag + "_next", {o.per_thread}, o.value.dtype());
    return o;
  };
  const Operand oa = operand(true), ob = operand(false);
  // B from a weight panel: the block's columns of every K chunk, in shared memory for the whole
  // kernel (weight_panel.h). No B tile is loaded in the K loop.
  if (panel) {
    SOUFFLE_CHECK(
        panel->buffer->shape == Shape({ksteps * bk, bn}) &&
            panel->buffer->dtype == ob.value.dtype(),
        "gemm " + op.name + ": weight panel " + panel->buffer->name + " has another shape");
    SOUFFLE_CHECK(tg.iters == 1, "gemm " + op.name + ": a weight panel needs one tile per block");
  }
  // Indices into a shared tile: with two stages the stage comes first.
  auto at = [&](Expr stage, Expr i, Expr j) {
    return db ? std::vector<Expr>{std::move(stage), std::move(i), std::move(j)}
              : std::vector<Expr>{std::move(i), std::move(j)};
  };

  // Each thread handles the elements e = l*threads + tx of a tile (e < rows*cols).
  auto per_element = [&](const Operand& o, const std::function<Stmt(Expr, Expr, Expr)>& body) {
    Expr l = te::var("l" + o.tag), e = te::var("e" + o.tag), ii = te::var("i" + o.tag),
         jj = te::var("j" + o.tag);
    Stmt st = body(l, ii, jj);
    st = loop::let_stmt(ii, te::floordiv(e, ic(o.cols)),
                        loop::let_stmt(jj, te::floormod(e, ic(o.cols)), st));
    st = loop::if_then_else(te::lt(e, ic(o.rows * o.cols)), st);
    return loop::make_for(l, o.per_thread, ForKind::Serial,
                          loop::let_stmt(e, l * ic(threads) + f.tx, st));
  };
  // The operand's value at element (ii, jj) of K chunk `kc`, zero outside the problem; `use`
  // makes the statement consuming it, wrapped here in the lets that bind the TE's axes.
  auto with_global = [&](const Operand& o, Expr kc, Expr ii, Expr jj,
                         const std::function<Stmt(Expr)>& use) {
    Expr gi = te::var("gi" + o.tag), gj = te::var("gj" + o.tag);
    Expr grow = o.is_a ? mb * ic(bm) + ii : kc * ic(bk) + ii;
    Expr gcol = o.is_a ? kc * ic(bk) + jj : nb * ic(bn) + jj;
    Expr in = te::logical_and(te::lt(gi, ic(o.lim_r)), te::lt(gj, ic(o.lim_c)));
    Stmt st = use(te::select(in, o.value, te::imm(o.value.dtype(), 0)));
    st = bind_flat(op.reduce_axes, o.is_a ? gj : gi, st);
    st = bind_flat(o.is_a ? g.rows : g.cols, o.is_a ? gi : gj, st);
    st = bind_flat(g.batch, pb, st);
    return loop::let_stmt(gi, grow, loop::let_stmt(gj, gcol, st));
  };
  // Global -> shared tile `stage` of K chunk kc directly.
  auto load_direct = [&](const Operand& o, Expr kc, Expr stage) {
    return per_element(o, [&](Expr, Expr ii, Expr jj) {
      return with_global(o, kc, ii, jj,
                         [&](Expr v) { return loop::store(o.smem, at(stage, ii, jj), v); });
    });
  };
  // Global -> registers (issued before the compute of the current tile, so it overlaps).
  auto load_staged = [&](const Operand& o, Expr kc) {
    return per_element(o, [&](Expr l, Expr ii, Expr jj) {
      return with_global(o, kc, ii, jj, [&](Expr v) { return loop::store(o.staged, {l}, v); });
    });
  };
  // Registers -> the other shared stage (after the compute of the current tile).
  auto commit_staged = [&](const Operand& o, Expr stage) {
    return per_element(o, [&](Expr l, Expr ii, Expr jj) {
      return loop::store(o.smem, at(stage, ii, jj), te::read(o.staged, {l}));
    });
  };

  std::vector<Stmt> body;
  body.push_back(loop::make_for(
      r, tm, ForKind::Unrolled,
      loop::make_for(cc, tn, ForKind::Unrolled,
                     loop::store(acc, {r, cc}, te::reduce_identity(te::ReduceKind::Sum, t)))));
  Expr b_elem = panel ? te::read(panel->buffer, {ko * ic(bk) + kk, tc * ic(tn) + cc})
                      : te::read(ob.smem, at(cur, kk, tc * ic(tn) + cc));
  Expr prod = te::read(oa.smem, at(cur, ty * ic(tm) + r, kk)) * b_elem;
  if (prod.dtype() != t) prod = te::cast(t, prod);
  Stmt mac = loop::store(acc, {r, cc}, te::read(acc, {r, cc}) + prod);
  Stmt compute = loop::make_for(
      kk, bk, ForKind::Serial,
      loop::make_for(r, tm, ForKind::Unrolled, loop::make_for(cc, tn, ForKind::Unrolled, mac)));
  // Tile 0 of each operand is loaded before the K loop, each load marked so that merge_stages
  // can issue a weight's load before a grid barrier (the load then overlaps the wait).
  auto first_tile = [&](const Operand& o) {
    body.push_back(loop::comment(std::string(kFirstTileMarker) + o.tag));
    body.push_back(load_direct(o, ic(0), ic(0)));
  };
  // The loads of the next K tile in the K loop: no B tile with a panel.
  auto both = [&](Stmt a, const std::function<Stmt()>& b) {
    return panel ? a : loop::seq({std::move(a), b()});
  };
  if (panel && panel->load) {
    // The whole panel once: a barrier first (the blocks' earlier stages are done with what
    // the buffer held), and the barrier before the first K step makes it visible.
    Operand whole = ob;
    whole.rows = ksteps * bk;
    whole.per_thread = ceil_div(whole.rows * whole.cols, threads);
    body.push_back(loop::comment("weight panel " + panel->buffer->name + ": operand b, all of K"));
    body.push_back(loop::block_barrier());
    body.push_back(per_element(whole, [&](Expr, Expr ii, Expr jj) {
      return with_global(whole, ic(0), ii, jj, [&](Expr v) {
        return loop::store(panel->buffer, {ii, jj}, v);
      });
    }));
  }
  if (!db) {
    // Step ko computes tile ko and then loads tile ko+1 (after the barrier that ends the
    // reads of tile ko): two barriers per step, as with the load at the top of the step.
    first_tile(oa);
    if (!panel) first_tile(ob);  // a panel holds all of B
    Expr more = te::lt(ko + ic(1), ic(ksteps));
    Stmt kstep = loop::seq({loop::block_barrier(), compute, loop::block_barrier(),
                            loop::if_then_else(more, both(load_direct(oa, ko + ic(1), Expr()), [&] {
                                                 return load_direct(ob, ko + ic(1), Expr());
                                               }))});
    body.push_back(loop::make_for(ko, ksteps, ForKind::Serial, kstep));
  } else {
    // Tile 0 goes straight to stage 0; step ko computes stage ko%2 while tile ko+1 travels
    // through registers into the other stage. The stage written in step ko was last read in
    // step ko-1, which ended with the barrier, so one barrier per step suffices.
    first_tile(oa);
    if (!panel) first_tile(ob);  // a panel holds all of B
    body.push_back(loop::block_barrier());
    Expr more = te::lt(ko + ic(1), ic(ksteps));
    Stmt kstep =
        loop::seq({loop::if_then_else(more, both(load_staged(oa, ko + ic(1)),
                                                 [&] { return load_staged(ob, ko + ic(1)); })),
                   compute,
                   loop::if_then_else(more, both(commit_staged(oa, ic(1) - cur),
                                                 [&] { return commit_staged(ob, ic(1) - cur); })),
                   loop::block_barrier()});
    body.push_back(loop::make_for(ko, ksteps, ForKind::Serial,
                                  loop::let_stmt(cur, te::floormod(ko, ic(2)), kstep)));
  }

  // The store loop: the GEMM's element, then each epilogue TE at the same element, its value
  // kept in a one-element register buffer so that later epilogue TEs read it there.
  auto [stores, outputs, scalars] =
      gemm_element_stores(op, te::read(acc, {r, cc}), epilogue, on_chip, "gemm");

  Expr gi = te::var("gi"), gj = te::var("gj");
  Stmt out = loop::seq(std::move(stores));
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
  inner = loop::let_stmt(pb, te::floordiv(tile, ic(mt * nt)),
                         loop::let_stmt(mb, te::floormod(te::floordiv(tile, ic(nt)), ic(mt)),
                                        loop::let_stmt(nb, te::floormod(tile, ic(nt)), inner)));
  // The store loop reads registers only, and every K step ends its reads of the shared tiles
  // with a barrier, so a block's next tile may load at once.
  inner = tg.wrap(f, tile, inner);
  for (const Tensor& s : scalars) inner = loop::allocate(s, MemScope::Local, inner);
  inner = loop::allocate(acc, MemScope::Local, inner);
  if (db) {
    if (!panel) inner = loop::allocate(ob.staged, MemScope::Local, inner);
    inner = loop::allocate(oa.staged, MemScope::Local, inner);
  }
  if (!panel) inner = loop::allocate(ob.smem, MemScope::Shared, inner);
  inner = loop::allocate(oa.smem, MemScope::Shared, inner);
  // Outermost, as merge_stages allocates it for the whole kernel.
  if (panel) inner = loop::allocate(panel->buffer, MemScope::Shared, inner);

  std::string schedule = "gemm " + std::to_string(bm) + "x" + std::to_string(bn) + "x" +
                         std::to_string(bk) + " tile " + std::to_string(tm) + "x" +
                         std::to_string(tn) + (db ? ", double-buffered" : "") + tg.describe();
  if (panel)
    schedule += panel->load ? ", weights loaded into the shared panel " + panel->buffer->name
                            : ", weights read from the shared panel " + panel->buffer->name +
                                  " an earlier stage loaded";
  if (!epilogue.empty()) {
    schedule += ", epilogue";
    for (const te::ComputeOp* e : epilogue) schedule += " " + e->name;
  }
  std::vector<const te::ComputeOp*> ops{&op};
  ops.insert(ops.end(), epilogue.begin(), epilogue.end());
  Kernel k = finish(ops, std::move(outputs), f, inner, tg.grid, threads, std::move(schedule));
  if (panel) {
    k.stages.front().weight_panel = panel->buffer->name;
    k.stages.front().weight_panel_load = panel->load;
  }
  return k;
}

}  // namespace souffle::schedule::detail
