#include <algorithm>
#include <optional>
#include <set>
#include <unordered_map>

#include "core/loop/stmt.h"
#include "core/schedule/template_util.h"
#include "core/te/builder.h"
#include "core/te/mutator.h"

namespace souffle::schedule::detail {

using loop::ForKind;
using loop::Kernel;
using loop::MemScope;
using loop::ShuffleKind;
using loop::Stmt;
using te::Expr;
using te::Tensor;

namespace {

constexpr int64_t kWarp = loop::kWarpSize;
// Cross-block reductions are for launches too small to fill the GPU: fewer rows than it has
// SMs (ScheduleConfig::cross_block_rows). Their grid stays within that many blocks, one per SM,
// which is always co-resident, as the grid barrier needs.
/// A block of a split row reduces at least this many elements per thread, so the extra pass
/// (atomics or partials) stays small against the work.
constexpr int64_t kMinPerThread = 8;

/// A consumer that reads the reduction `main`'s row result through a reshape dropping or adding
/// axes of extent 1 only (a global average pool's division, which the vertical transformation
/// composes into the Flatten after it): the consumer's element in main's vars (its unit axes 0),
/// when every read of main is at the consumer's own element. Nothing otherwise.
std::optional<std::vector<Expr>> reshaped_row(const te::ComputeOp& main,
                                              const te::ComputeOp& consumer) {
  if (consumer.reduce != te::ReduceKind::None) return std::nullopt;
  std::vector<size_t> mu, cu;  // the axes of extent > 1
  for (size_t d = 0; d < main.axes.size(); ++d)
    if (main.axes[d].extent != 1) mu.push_back(d);
  for (size_t d = 0; d < consumer.axes.size(); ++d)
    if (consumer.axes[d].extent != 1) cu.push_back(d);
  if (mu.size() != cu.size()) return std::nullopt;
  std::vector<Expr> in_main(consumer.axes.size(), ic(0));
  for (size_t k = 0; k < mu.size(); ++k) {
    if (main.axes[mu[k]].extent != consumer.axes[cu[k]].extent) return std::nullopt;
    in_main[cu[k]] = main.axes[mu[k]].var;
  }
  bool reads = false, own = true;
  te::for_each_node(consumer.body, [&](const Expr& n) {
    const te::Read* r = n.as<te::Read>();
    if (!r || r->tensor != main.output) return;
    reads = true;
    if (r->indices.size() != main.axes.size()) {
      own = false;
      return;
    }
    for (size_t d = 0, k = 0; d < main.axes.size(); ++d) {
      const Expr& i = r->indices[d];
      if (main.axes[d].extent != 1) {
        own &= i.same_as(consumer.axes[cu[k++]].var);
        continue;
      }
      const te::IntImm* zero = i.as<te::IntImm>();
      bool unit_var = false;
      for (const te::IterVar& ax : consumer.axes) unit_var |= ax.extent == 1 && ax.var.same_as(i);
      own &= (zero && zero->value == 0) || unit_var;
    }
  });
  if (!reads || !own) return std::nullopt;
  return in_main;
}

/// The store of a row result: the reduction's element, then each epilogue TE at the same
/// element, computed by the same thread (the value of each kept in a one-element register so
/// that later epilogue TEs read it there). Tensors in `on_chip` are not written.
class RowStore {
 public:
  RowStore(const te::ComputeOp& op, std::vector<const te::ComputeOp*> epilogue = {},
           std::vector<Tensor> on_chip = {})
      : m_op(op), m_epilogue(std::move(epilogue)), m_on_chip(std::move(on_chip)) {}

  /// The statements storing `value` (the row's combination, before init) and the epilogue.
  Stmt store(const Expr& value) {
    m_outputs.clear();
    m_scalars.clear();
    std::unordered_map<const te::TensorNode*, Expr> in_regs;
    std::vector<Stmt> out;
    Expr v = with_init(m_op, value);
    if (!m_epilogue.empty()) {
      // The row result is read by the epilogue too: computed once, into a register.
      Tensor reg = loop::make_buffer(m_op.name + "_v", {1}, m_op.output->dtype);
      m_scalars.push_back(reg);
      out.push_back(loop::store(reg, {ic(0)}, v));
      v = te::read(reg, {ic(0)});
    }
    in_regs[m_op.output.get()] = v;
    keep(m_op.output, axis_vars(m_op), v, out);
    for (const te::ComputeOp* e : m_epilogue) {
      // e's element in the reduction's vars: the same axes, or a reshape over unit axes.
      std::vector<Expr> index = axis_vars(m_op);
      if (e->axes.size() != m_op.axes.size()) {
        std::optional<std::vector<Expr>> row = reshaped_row(m_op, *e);
        SOUFFLE_CHECK(row.has_value(), "epilogue " + e->name + " does not read its row");
        index = *row;
      }
      std::unordered_map<const te::ExprNode*, Expr> axes;
      for (size_t d = 0; d < e->axes.size(); ++d) axes[e->axes[d].var.get()] = index[d];
      Expr ev = te::rewrite_reads(te::substitute(e->body, axes),
                                  [&](const te::Read& rd, const std::vector<Expr>&) -> Expr {
                                    auto it = in_regs.find(rd.tensor.get());
                                    return it == in_regs.end() ? Expr() : it->second;
                                  });
      Tensor reg = loop::make_buffer(e->name + "_v", {1}, e->output->dtype);
      m_scalars.push_back(reg);
      out.push_back(loop::store(reg, {ic(0)}, ev));
      in_regs[e->output.get()] = te::read(reg, {ic(0)});
      keep(e->output, index, in_regs[e->output.get()], out);
    }
    SOUFFLE_CHECK(!m_outputs.empty(), "reduction " + m_op.name + " stores nothing");
    return loop::seq(std::move(out));
  }

  /// finish() over the reduction and its epilogue, the registers of store() allocated around
  /// `inner`; " , epilogue T..." appended to the schedule text.
  Kernel finish(const Frame& f, Stmt inner, int64_t grid, int64_t block, std::string schedule) {
    SOUFFLE_CHECK(!m_outputs.empty(), "reduction " + m_op.name + ": finish before store");
    for (const Tensor& s : m_scalars) inner = loop::allocate(s, MemScope::Local, inner);
    std::vector<const te::ComputeOp*> ops{&m_op};
    if (!m_epilogue.empty()) schedule += ", epilogue";
    for (const te::ComputeOp* e : m_epilogue) {
      ops.push_back(e);
      schedule += " " + e->name;
    }
    return detail::finish(ops, m_outputs, f, std::move(inner), grid, block, std::move(schedule));
  }

 private:
  void keep(const Tensor& t, std::vector<Expr> index, const Expr& v, std::vector<Stmt>& out) {
    if (std::find(m_on_chip.begin(), m_on_chip.end(), t) != m_on_chip.end()) return;
    out.push_back(loop::store(t, std::move(index), v));
    m_outputs.push_back(t);
  }

  const te::ComputeOp& m_op;
  std::vector<const te::ComputeOp*> m_epilogue;
  std::vector<Tensor> m_on_chip;
  std::vector<Tensor> m_outputs, m_scalars;
};

/// The pieces every reduction variant shares: the op, the frame and the accumulator type.
struct Red {
  const te::ComputeOp& op;
  Frame f;
  DType t;
  Expr lane, warp;  ///< tx % 32, tx / 32
  int64_t r;

  explicit Red(const te::ComputeOp& o)
      : op(o),
        t(o.output->dtype),
        lane(te::floormod(f.tx, ic(kWarp))),
        warp(te::floordiv(f.tx, ic(kWarp))),
        r(extent_product(o.reduce_axes)) {}

  Expr identity() const { return te::reduce_identity(op.reduce, t); }

  /// acc[0] (+)= body over k = base + kk * stride for kk < iters, guarded by k < r.
  Stmt fold(const Tensor& acc, const Expr& base, int64_t stride, int64_t iters) const {
    Expr kk = te::var("kk"), k = te::var("k");
    Stmt st = loop::store(acc, {ic(0)}, combine(op.reduce, te::read(acc, {ic(0)}), op.body));
    Stmt guarded = loop::if_then_else(te::lt(k, ic(r)), bind_flat(op.reduce_axes, k, st));
    return loop::make_for(kk, iters, ForKind::Serial,
                          loop::let_stmt(k, base + kk * ic(stride), guarded));
  }

  /// Butterfly over lanes [0, width): afterwards every lane holds the combination of its group's
  /// width values of acc[0] (width a power of two up to 32), one xor shuffle per halving.
  Stmt warp_reduce(const Tensor& acc, const Tensor& tmp, int64_t width) const {
    std::vector<Stmt> out;
    Expr acc0 = te::read(acc, {ic(0)}), tmp0 = te::read(tmp, {ic(0)});
    for (int64_t m = width / 2; m >= 1; m /= 2) {
      out.push_back(loop::shuffle(tmp, {ic(0)}, acc0, ShuffleKind::Xor, ic(m)));
      out.push_back(loop::store(acc, {ic(0)}, combine(op.reduce, acc0, tmp0)));
    }
    return loop::seq(std::move(out));
  }

  /// The whole block's combination of acc[0] into acc[0] of every thread: a butterfly within
  /// each warp, one value per warp through shared `red`, one barrier, and a butterfly over those
  /// in every warp (so no warp diverges). `reused`: red is written again afterwards.
  Stmt block_reduce(const Tensor& acc, const Tensor& tmp, const Tensor& red, int64_t block,
                    bool reused) const {
    const int64_t warps = block / kWarp;
    std::vector<Stmt> out = {warp_reduce(acc, tmp, kWarp)};
    if (warps == 1) return loop::seq(std::move(out));
    out.push_back(
        loop::if_then_else(te::eq(lane, ic(0)), loop::store(red, {warp}, te::read(acc, {ic(0)}))));
    out.push_back(loop::block_barrier());
    out.push_back(loop::store(
        acc, {ic(0)}, te::select(te::lt(lane, ic(warps)), te::read(red, {lane}), identity())));
    out.push_back(warp_reduce(acc, tmp, warps));
    // The next use overwrites red: every warp must have read it first.
    if (reused) out.push_back(loop::block_barrier());
    return loop::seq(std::move(out));
  }

  Stmt with_buffers(const Tensor& acc, const Tensor& tmp, Stmt body) const {
    return loop::allocate(acc, MemScope::Local, loop::allocate(tmp, MemScope::Local, body));
  }
};

/// Threads per block of the templates that reduce a row with the whole block.
int64_t row_block(int64_t r, const ScheduleConfig& c) {
  if (c.exact_block) return c.block;
  int64_t block = kWarp;
  while (block < c.block && block < r) block *= 2;
  return block;
}

/// The first template: one block per row and a shared-memory tree with a barrier per level.
/// Kept for bool results, which warp shuffles do not exchange.
Kernel shared_tree(const te::ComputeOp& op, const ScheduleConfig& c, RowStore& rs) {
  Frame f;
  int64_t rows = extent_product(op.axes), r = extent_product(op.reduce_axes);
  const int64_t block = row_block(r, c);
  int64_t grid = std::min(strided_grid(c), rows);
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
  per_row.push_back(loop::if_then_else(te::eq(f.tx, ic(0)), rs.store(te::read(red, {ic(0)}))));
  // The next row overwrites red: every thread must be past the final read first.
  per_row.push_back(loop::block_barrier());

  Stmt row_body = loop::if_then_else(te::lt(row, ic(rows)),
                                     bind_flat(op.axes, row, loop::seq(std::move(per_row))));
  Stmt body = loop::make_for(ri, ceil_div(rows, grid), ForKind::Serial,
                             loop::let_stmt(row, ri * ic(grid) + f.bx, row_body));
  body = loop::allocate(red, MemScope::Shared, loop::allocate(acc, MemScope::Local, body));
  return rs.finish(f, body, grid, block,
                   "reduction, shared tree over " + std::to_string(block) + " threads");
}

/// Rows of at most one warp's width: one warp per row, several rows per block, no barrier.
Kernel warp_per_row(const te::ComputeOp& op, const ScheduleConfig& c, int64_t rows, RowStore& rs) {
  Red d(op);
  const int64_t block = std::max(kWarp, std::min(c.block / kWarp, rows) * kWarp);
  const int64_t per_block = block / kWarp;
  const int64_t grid = std::min(strided_grid(c), ceil_div(rows, per_block));
  Tensor acc = loop::make_buffer(op.name + "_acc", {1}, d.t);
  Tensor tmp = loop::make_buffer(op.name + "_shfl", {1}, d.t);
  Expr ri = te::var("ri"), row = te::var("row");
  std::vector<Stmt> per_row = {loop::store(acc, {ic(0)}, d.identity()),
                               d.fold(acc, d.lane, kWarp, ceil_div(d.r, kWarp)),
                               d.warp_reduce(acc, tmp, kWarp)};
  per_row.push_back(loop::if_then_else(te::eq(d.lane, ic(0)), rs.store(te::read(acc, {ic(0)}))));
  // row depends on the warp only, so whole warps take the branch together.
  Stmt row_body = loop::if_then_else(te::lt(row, ic(rows)),
                                     bind_flat(op.axes, row, loop::seq(std::move(per_row))));
  Stmt body = loop::make_for(
      ri, ceil_div(rows, grid * per_block), ForKind::Serial,
      loop::let_stmt(row, (ri * ic(grid) + d.f.bx) * ic(per_block) + d.warp, row_body));
  return rs.finish(d.f, d.with_buffers(acc, tmp, body), grid, block,
                   "reduction, warp shuffles, one warp per row, " + std::to_string(per_block) +
                       " rows per block");
}

/// One block per row: strided partials, then block_reduce.
Kernel block_per_row(const te::ComputeOp& op, const ScheduleConfig& c, int64_t rows, int64_t block,
                     RowStore& rs) {
  Red d(op);
  const int64_t grid = std::min(strided_grid(c), rows);
  const int64_t iters = ceil_div(rows, grid);
  Tensor acc = loop::make_buffer(op.name + "_acc", {1}, d.t);
  Tensor tmp = loop::make_buffer(op.name + "_shfl", {1}, d.t);
  Tensor red = loop::make_buffer(op.name + "_red", {std::max<int64_t>(1, block / kWarp)}, d.t);
  Expr ri = te::var("ri"), row = te::var("row");
  std::vector<Stmt> per_row = {loop::store(acc, {ic(0)}, d.identity()),
                               d.fold(acc, d.f.tx, block, ceil_div(d.r, block)),
                               d.block_reduce(acc, tmp, red, block, iters > 1)};
  per_row.push_back(loop::if_then_else(te::eq(d.f.tx, ic(0)), rs.store(te::read(acc, {ic(0)}))));
  Stmt row_body = loop::if_then_else(te::lt(row, ic(rows)),
                                     bind_flat(op.axes, row, loop::seq(std::move(per_row))));
  Stmt body = loop::make_for(ri, iters, ForKind::Serial,
                             loop::let_stmt(row, ri * ic(grid) + d.f.bx, row_body));
  if (block > kWarp) body = loop::allocate(red, MemScope::Shared, body);
  return rs.finish(d.f, d.with_buffers(acc, tmp, body), grid, block,
                   "reduction, warp shuffles, " + std::to_string(block / kWarp) + " warps per row");
}

/// Few rows, long reductions: each row split over `splits` blocks. A sum in f32/f64 adds the
/// block partials with atomics into the output, which an earlier phase initialises; other
/// reductions store them in a partials tensor and a last phase combines each row's. Phases are
/// separated by grid barriers (a cooperative launch).
Kernel cross_block(const te::ComputeOp& op, int64_t rows, int64_t block, int64_t splits) {
  Red d(op);
  const int64_t grid = rows * splits;
  const int64_t chunk = ceil_div(ceil_div(d.r, splits), block) * block;
  const bool atomic =
      op.reduce == te::ReduceKind::Sum && (d.t == DType::Float32 || d.t == DType::Float64);
  Tensor acc = loop::make_buffer(op.name + "_acc", {1}, d.t);
  Tensor tmp = loop::make_buffer(op.name + "_shfl", {1}, d.t);
  Tensor red = loop::make_buffer(op.name + "_red", {block / kWarp}, d.t);
  Tensor parts = te::make_compute_tensor(op.name + "_partials", {rows, splits}, d.t);
  Expr row = te::var("row"), part = te::var("part");
  Expr first = te::eq(d.f.tx, ic(0));
  auto in_row = [&](Stmt s) {
    return loop::let_stmt(row, te::floordiv(d.f.bx, ic(splits)),
                          loop::let_stmt(part, te::floormod(d.f.bx, ic(splits)),
                                         bind_flat(op.axes, row, std::move(s))));
  };
  Stmt partial = loop::seq({loop::store(acc, {ic(0)}, d.identity()),
                            d.fold(acc, part * ic(chunk) + d.f.tx, block, chunk / block),
                            d.block_reduce(acc, tmp, red, block, false)});
  auto buffered = [&](Stmt s) {
    if (block > kWarp) s = loop::allocate(red, MemScope::Shared, s);
    return d.with_buffers(acc, tmp, s);
  };
  std::vector<Stmt> phases;
  std::string how;
  Expr acc0 = te::read(acc, {ic(0)});
  if (atomic) {
    Expr init = op.init.defined() ? op.init : d.identity();
    phases.push_back(in_row(loop::if_then_else(te::logical_and(first, te::eq(part, ic(0))),
                                               loop::store(op.output, axis_vars(op), init))));
    phases.push_back(buffered(in_row(loop::seq(
        {partial, loop::if_then_else(first, loop::atomic_add(op.output, axis_vars(op), acc0))}))));
    how = "atomics";
  } else {
    phases.push_back(buffered(in_row(
        loop::seq({partial, loop::if_then_else(first, loop::store(parts, {row, part}, acc0))}))));
    Expr s = te::var("s");
    Stmt combine_parts =
        loop::seq({loop::store(acc, {ic(0)}, d.identity()),
                   loop::make_for(s, splits, ForKind::Serial,
                                  loop::store(acc, {ic(0)},
                                              combine(op.reduce, acc0, te::read(parts, {row, s})))),
                   loop::store(op.output, axis_vars(op), with_init(op, acc0))});
    phases.push_back(d.with_buffers(
        acc, tmp,
        in_row(loop::if_then_else(te::logical_and(first, te::eq(part, ic(0))), combine_parts))));
    how = "partials";
  }
  return finish_phases(
      op, d.f, std::move(phases), grid, block,
      "reduction, warp shuffles, each row over " + std::to_string(splits) + " blocks, " + how,
      atomic ? std::vector<Tensor>{} : std::vector<Tensor>{parts});
}

/// Blocks per row when the row is split over blocks, else 1.
int64_t row_splits(const te::ComputeOp& op, const ScheduleConfig& c) {
  const int64_t rows = extent_product(op.axes), r = extent_product(op.reduce_axes);
  if (op.output->dtype == DType::Bool || r <= kWarp || rows >= c.cross_block_rows) return 1;
  const int64_t splits = std::min(ceil_div(r, row_block(r, c) * kMinPerThread),
                                  std::max<int64_t>(1, c.cross_block_rows / rows));
  return splits >= 2 ? splits : 1;
}

Kernel schedule_rows(const te::ComputeOp& op, const ScheduleConfig& c, RowStore& rs) {
  const int64_t rows = extent_product(op.axes), r = extent_product(op.reduce_axes);
  if (op.output->dtype == DType::Bool) return shared_tree(op, c, rs);
  if (r <= kWarp) return warp_per_row(op, c, rows, rs);
  const int64_t block = row_block(r, c);
  const int64_t splits = row_splits(op, c);
  if (splits >= 2) return cross_block(op, rows, block, splits);
  return block_per_row(op, c, rows, block, rs);
}

}  // namespace

Kernel schedule_reduction(const te::ComputeOp& op, const ScheduleConfig& c) {
  RowStore rs(op);
  return schedule_rows(op, c, rs);
}

}  // namespace souffle::schedule::detail

namespace souffle::schedule {

bool is_reduction_epilogue(const te::ComputeOp& main,
                           const std::vector<const te::ComputeOp*>& group,
                           const te::ComputeOp& consumer) {
  if (main.reduce == te::ReduceKind::None || classify(main) != ScheduleKind::Reduction)
    return false;
  if (detail::is_elementwise_follower(main, group, consumer)) return true;
  // The first epilogue TE may read the row through a reshape over unit axes (GAP -> Flatten).
  return group.empty() && consumer.axes.size() != main.axes.size() &&
         detail::reshaped_row(main, consumer).has_value();
}

bool reduction_splits_rows(const te::ComputeOp& op, const ScheduleConfig& config) {
  return classify(op) == ScheduleKind::Reduction && detail::row_splits(op, config) > 1;
}

loop::Kernel schedule_reduction_fused(const te::ComputeOp& main,
                                      const std::vector<const te::ComputeOp*>& epilogue,
                                      const ScheduleConfig& config,
                                      const std::vector<te::Tensor>& on_chip) {
  SOUFFLE_CHECK(classify(main) == ScheduleKind::Reduction,
                "schedule_reduction_fused: " + main.name + " is not a reduction");
  SOUFFLE_CHECK(epilogue.empty() || !reduction_splits_rows(main, config),
                "schedule_reduction_fused: " + main.name + " splits its rows over blocks");
  std::vector<const te::ComputeOp*> group;
  for (const te::ComputeOp* e : epilogue) {
    SOUFFLE_CHECK(is_reduction_epilogue(main, group, *e),
                  "schedule_reduction_fused: " + e->name + " is not an epilogue of " + main.name);
    group.push_back(e);
  }
  detail::RowStore rs(main, epilogue, on_chip);
  return detail::schedule_rows(main, config, rs);
}

}  // namespace souffle::schedule
