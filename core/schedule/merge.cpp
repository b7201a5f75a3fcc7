#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "core/loop/arena.h"
#include "core/loop/equal.h"
#include "core/loop/mutator.h"
#include "core/loop/verify.h"
#include "core/schedule/dependence.h"
#include "core/schedule/ownership.h"
#include "core/schedule/proof_memo.h"
#include "core/schedule/template_util.h"
#include "core/te/builder.h"
#include "core/te/mutator.h"

namespace souffle::schedule {

using namespace detail;
using loop::ForKind;
using loop::Kernel;
using loop::MemScope;
using loop::Stmt;
using te::Expr;
using te::Tensor;

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

/// Drops the allocations of `buffers` (their bodies stay): buffers the merged kernel allocates
/// once around all its stages (MergeOptions::kernel_shared).
class DropAllocations : public loop::StmtMutator {
 public:
  explicit DropAllocations(const std::vector<Tensor>& buffers) : m_buffers(buffers) {}
  bool dropped = false;

 protected:
  Stmt mutate_Allocate(const loop::Allocate& n, const Stmt& s) override {
    if (std::find(m_buffers.begin(), m_buffers.end(), n.buffer) == m_buffers.end())
      return loop::StmtMutator::mutate_Allocate(n, s);
    dropped = true;
    return mutate(n.body);
  }

 private:
  const std::vector<Tensor>& m_buffers;
};

/// Binds `var` to `value` at the top of every Stage node's body.
class BindStageBlock : public loop::StmtMutator {
 public:
  BindStageBlock(Expr var, Expr value) : m_var(std::move(var)), m_value(std::move(value)) {}

 protected:
  Stmt mutate_Stage(const loop::Stage& n, const Stmt&) override {
    return loop::stage(n.index, loop::let_stmt(m_var, m_value, n.body));
  }

 private:
  Expr m_var, m_value;
};

bool has_block_barrier(const Stmt& s) {
  bool found = false;
  loop::for_each_stmt(s, [&](const Stmt& x) { found |= x.as<loop::BlockBarrier>() != nullptr; });
  return found;
}

/// Guards a stage's statements; a stage of several phases (a cross-block reduction: Stage
/// nodes with grid barriers between) is guarded phase by phase, so every thread of the grid
/// still reaches its barriers.
Stmt guard_phases(const Stmt& inner, const Expr& guard) {
  const loop::Seq* q = inner.as<loop::Seq>();
  bool phased = false;
  if (q)
    for (const Stmt& s : q->stmts) phased |= s.as<loop::GridBarrier>() != nullptr;
  if (!phased) return loop::if_then_else(guard, inner);
  std::vector<Stmt> out;
  for (const Stmt& s : q->stmts)
    out.push_back(s.as<loop::GridBarrier>() ? s : loop::if_then_else(guard, s));
  return loop::seq(std::move(out));
}

/// A tensor kept in shared memory: its per-block buffer and the origin of the block's range.
struct Resident {
  Tensor t, smem;
  Expr origin;
};

/// Rewrites every access of each resident tensor `t` into `smem[flat - (base + bx * step)]`:
/// the block's own range of the tensor, rebased to the start of a per-block buffer. All the
/// residents in one walk of the kernel body (a walk per resident would cost the body's size
/// times their number: quadratic in a kernel of many stages).
class Rebase : public loop::StmtMutator {
 public:
  explicit Rebase(const std::vector<Resident>& residents) {
    for (const Resident& r : residents) m_residents.emplace(r.t.get(), &r);
  }
  Expr mutate_expr(const Expr& e) override {
    return te::rewrite_reads(e, [&](const te::Read& r, const std::vector<Expr>& idx) -> Expr {
      auto it = m_residents.find(r.tensor.get());
      if (it == m_residents.end()) return Expr();
      return te::read(it->second->smem, {local(*it->second, idx)});
    });
  }

 protected:
  Stmt mutate_Store(const loop::Store& n, const Stmt& s) override {
    auto it = m_residents.find(n.buffer.get());
    if (it == m_residents.end()) return loop::StmtMutator::mutate_Store(n, s);
    std::vector<Expr> idx;
    for (const Expr& i : n.indices) idx.push_back(mutate_expr(i));
    return loop::store(it->second->smem, {local(*it->second, idx)}, mutate_expr(n.value));
  }
  // A cp.async from a resident tensor becomes plain shared-to-shared stores of its elements
  // (zeros where the predicate is off): they complete before any wait that would have.
  Stmt mutate_AsyncCopy(const loop::AsyncCopy& n, const Stmt& s) override {
    auto it = m_residents.find(n.src.get());
    if (it == m_residents.end()) return loop::StmtMutator::mutate_AsyncCopy(n, s);
    std::vector<Expr> src, dst;
    for (const Expr& i : n.src_index) src.push_back(mutate_expr(i));
    for (const Expr& i : n.dst_index) dst.push_back(mutate_expr(i));
    std::vector<Stmt> stores;
    for (int64_t k = 0; k < n.elements(); ++k) {
      std::vector<Expr> si = src, di = dst;
      si.back() = si.back() + ic(k);
      di.back() = di.back() + ic(k);
      Expr v = te::read(it->second->smem, {local(*it->second, si)});
      if (n.pred.defined())
        v = te::select(te::ne(mutate_expr(n.pred), ic(0)), v, te::imm(n.dst->dtype, 0));
      stores.push_back(loop::store(n.dst, di, v));
    }
    return loop::seq(std::move(stores));
  }

 private:
  std::unordered_map<const te::TensorNode*, const Resident*> m_residents;
  static Expr local(const Resident& r, const std::vector<Expr>& idx) {
    if (idx.empty()) return te::int_imm(0) - r.origin;  // a 0-d tensor (a loss, a scale)
    Expr flat = idx[0];
    for (size_t d = 1; d < idx.size(); ++d) flat = flat * ic(r.t->shape[d]) + idx[d];
    return flat - r.origin;
  }
};

/// The per-block origin of a resident tensor: base + bx * step for every block that touches it
/// (false when the blocks' ranges do not start on such a line), and the largest range.
bool affine_origin(const OwnershipProof& p, int64_t& base, int64_t& step, int64_t& extent) {
  std::vector<int64_t> blocks;
  extent = 0;
  for (size_t b = 0; b < p.lo.size(); ++b)
    if (p.lo[b] <= p.hi[b]) {
      blocks.push_back(static_cast<int64_t>(b));
      extent = std::max(extent, p.hi[b] - p.lo[b] + 1);
    }
  if (blocks.empty()) return false;
  const int64_t b0 = blocks[0];
  step = 0;
  if (blocks.size() > 1) {
    const int64_t b1 = blocks[1], d = p.lo[static_cast<size_t>(b1)] - p.lo[static_cast<size_t>(b0)];
    if (d % (b1 - b0) != 0) return false;
    step = d / (b1 - b0);
  }
  base = p.lo[static_cast<size_t>(b0)] - b0 * step;
  for (int64_t b : blocks)
    if (p.lo[static_cast<size_t>(b)] != base + b * step) return false;
  return true;
}

/// Reads any tensor in e?
bool reads_tensor(const Expr& e) {
  bool found = false;
  if (e.defined())
    te::for_each_node(e, [&](const Expr& n) { found |= n.as<te::Read>() != nullptr; });
  return found;
}

/// Splits a stage into the loads of its GEMM's first K tiles of weights (operands that read no
/// tensor the kernel writes), issued before a grid barrier, and the rest after it. The shared
/// tiles those loads fill are allocated around both, as a sibling of the stages before, so the
/// arena places them beside (not over) what those stages still use. A GEMM whose blocks loop
/// over rounds of tiles prefetches its first round's tile; the later rounds load in the loop.
/// Undefined when the stage has no such load.
Stmt hoist_weight_tiles(const Stmt& stage, const std::set<const te::TensorNode*>& produced,
                        std::vector<std::string>& tags) {
  // The wrappers down to the GEMM's statement list: the guard, the Stage, allocations, lets.
  std::vector<Stmt> chain;
  Stmt cur = stage;
  std::set<const te::TensorNode*> allocated;
  // A GEMM whose blocks loop over rounds of tiles: the first round's tile is prefetched, the
  // later rounds load theirs in the loop as before.
  Expr round;
  while (true) {
    if (const loop::IfThenElse* i = cur.as<loop::IfThenElse>()) {
      if (i->else_case.defined() || reads_tensor(i->cond)) return {};
      chain.push_back(cur);
      cur = i->then_case;
    } else if (const loop::Stage* g = cur.as<loop::Stage>()) {
      chain.push_back(cur);
      cur = g->body;
    } else if (const loop::Allocate* a = cur.as<loop::Allocate>()) {
      allocated.insert(a->buffer.get());
      chain.push_back(cur);
      cur = a->body;
    } else if (const loop::LetStmt* l = cur.as<loop::LetStmt>()) {
      if (reads_tensor(l->value)) return {};
      chain.push_back(cur);
      cur = l->body;
    } else if (const loop::FragmentAlloc* fa = cur.as<loop::FragmentAlloc>()) {
      // The tensor-core GEMM's fragments: registers the tile loads do not touch.
      chain.push_back(cur);
      cur = fa->body;
    } else if (const loop::For* fr = cur.as<loop::For>();
               fr && !round.defined() && fr->for_kind == ForKind::Serial &&
               fr->var.as<te::Var>()->name == kTileRoundVar && !reads_tensor(fr->extent)) {
      round = fr->var;
      chain.push_back(cur);
      cur = fr->body;
    } else {
      break;
    }
  }
  const loop::Seq* q = cur.as<loop::Seq>();
  if (!q) return {};
  const std::string marker = kFirstTileMarker;
  std::vector<Stmt> early, rest;
  std::set<const te::TensorNode*> tiles;
  for (size_t i = 0; i < q->stmts.size(); ++i) {
    const loop::Comment* c = q->stmts[i].as<loop::Comment>();
    if (!c || c->text.rfind(marker, 0) != 0 || i + 1 == q->stmts.size()) {
      rest.push_back(q->stmts[i]);
      continue;
    }
    const Stmt& load = q->stmts[i + 1];
    // A weight: every tensor it reads comes from outside the kernel (and is no buffer of the
    // stage); it stores only to shared tiles the chain allocates.
    bool weight = true;
    std::set<const te::TensorNode*> stored;
    loop::for_each_expr(load, [&](const Expr& e) {
      te::for_each_node(e, [&](const Expr& n) {
        if (const te::Read* r = n.as<te::Read>())
          weight &= !produced.count(r->tensor.get()) && !allocated.count(r->tensor.get());
      });
    });
    loop::for_each_stmt(load, [&](const Stmt& x) {
      if (const loop::Store* st = x.as<loop::Store>()) stored.insert(st->buffer.get());
      weight &= !x.as<loop::AtomicAdd>() && !x.as<loop::BlockBarrier>() &&
                !x.as<loop::GridBarrier>() && !x.as<loop::Allocate>();
    });
    for (const te::TensorNode* t : stored) weight &= allocated.count(t) > 0;
    if (!weight) {
      rest.push_back(q->stmts[i]);
      continue;
    }
    const std::string tag = c->text.substr(marker.size());
    tags.push_back(tag);
    early.push_back(loop::comment(marker + tag + ", prefetched before the grid barrier" +
                                  (round.defined() ? " (first round of tiles)" : "")));
    early.push_back(load);
    if (round.defined())
      rest.push_back(loop::if_then_else(te::lt(ic(0), round), loop::seq({q->stmts[i], load})));
    tiles.insert(stored.begin(), stored.end());
    ++i;
  }
  if (early.empty()) return {};
  Stmt pre = loop::seq(std::move(early)), post = loop::seq(std::move(rest));
  std::vector<Tensor> hoisted;
  for (size_t w = chain.size(); w-- > 0;) {
    const Stmt& x = chain[w];
    if (const loop::IfThenElse* i = x.as<loop::IfThenElse>()) {
      pre = loop::if_then_else(i->cond, pre);
      post = loop::if_then_else(i->cond, post);
    } else if (const loop::Stage* g = x.as<loop::Stage>()) {
      pre = loop::stage(g->index, pre);
      post = loop::stage(g->index, post);
    } else if (const loop::Allocate* a = x.as<loop::Allocate>()) {
      if (tiles.count(a->buffer.get()))
        hoisted.push_back(a->buffer);
      else
        post = loop::allocate(a->buffer, a->scope, post);
    } else if (const loop::LetStmt* l = x.as<loop::LetStmt>()) {
      pre = loop::let_stmt(l->var, l->value, pre);
      post = loop::let_stmt(l->var, l->value, post);
    } else if (const loop::FragmentAlloc* fa = x.as<loop::FragmentAlloc>()) {
      post = loop::fragment_alloc(fa->buffer, fa->role, fa->type, fa->m, fa->n, fa->k, post);
    } else if (const loop::For* fr = x.as<loop::For>()) {
      // The rounds loop: the prefetch is round 0's load.
      pre = loop::let_stmt(fr->var, ic(0), pre);
      post = loop::make_for(fr->var, fr->min, fr->extent, fr->for_kind, post);
    }
  }
  Stmt out = loop::seq({pre, loop::grid_barrier(), post});
  for (const Tensor& t : hoisted) out = loop::allocate(t, MemScope::Shared, out);
  return out;
}

/// The dependence proofs of one kernel. A query whose statements run the same code as an
/// earlier one's on other tensors (one LSTM step's stages and the next step's, one BERT layer's
/// and the next's), the queried tensor in the same place, gets the earlier answer: the proof
/// would evaluate the same index maps to the same result. Reused answers spend no steps.
class ProofCache {
 public:
  DependenceProof prove(const OwnershipQuery& q) {
    std::vector<Stmt> all = q.writers;
    all.push_back(q.reader);
    // The tensors the statements touch, the queried one first and the others in first-use
    // order (what the statements are compared up to), and a hash that equal queries share:
    // each statement's, and where its tensors sit in that order.
    std::vector<Tensor> params = {q.tensor};
    uint64_t hash = 1469598103934665603ull;
    auto mix = [&hash](uint64_t x) { hash = (hash ^ x) * 1099511628211ull; };
    for (const Stmt& x : all) {
      const loop::StmtShape& sx = shape_of(x);
      mix(sx.hash);
      for (const Tensor& t : sx.touched) {
        auto at = std::find(params.begin(), params.end(), t);
        mix(static_cast<uint64_t>(at - params.begin()));
        if (at == params.end()) params.push_back(t);
      }
    }
    std::string key = std::to_string(q.grid) + "x" + std::to_string(q.block) + " " +
                      std::to_string(q.writers.size()) + ":";
    for (const Tensor& t : params) {
      key += " " + std::string(dtype_name(t->dtype));
      for (int64_t d : t->shape) key += "," + std::to_string(d);
    }
    // Statements that can match share the hash: a query compares only with those (one LSTM
    // step's stages read another row of the sequence than the next step's, so without it each
    // of 1,000 steps was compared with every step before).
    key += fmt::format(" #{:016x}", hash);
    // Writers and reader side by side, each wrapped so that the list keeps their boundaries
    // (a Seq would merge nested lists).
    std::vector<Stmt> wrapped;
    for (const Stmt& x : all) wrapped.push_back(loop::if_then_else(te::eq(ic(1), ic(1)), x));
    Stmt together = loop::seq(std::move(wrapped));
    std::vector<Entry>& same = m_entries[key];
    for (const Entry& e : same) {
      if (e.writers != q.writers.size()) continue;
      // The reason names the tensor of the earlier query: reworded where its wording has the
      // name, never by a text search (a short name such as "b" is inside "block"); a wording
      // that cannot be reworded is proven again.
      std::optional<std::string> reason =
          rename_proof_reason(e.proof.reason, e.params.front()->name, q.tensor->name);
      if (!reason || !loop::equal_up_to_params(e.stmts, together, e.params, params)) continue;
      DependenceProof p = e.proof;
      p.steps = 0;
      p.reason = std::move(*reason);
      return p;
    }
    // Not in this kernel: from another merge's proofs (the same stages merged before), else
    // proven now. The block and thread variables, this merge's own, are bound around the
    // statements so that they match those of the other merge.
    const int64_t budget = proof_budget(q.max_steps);
    Stmt bound = loop::let_stmt(q.bx, ic(0), loop::let_stmt(q.tx, ic(0), together));
    ProofMemo& memo = ProofMemo::shared();
    std::optional<DependenceProof> known = memo.find(key, bound, params, budget);
    DependenceProof p = known ? std::move(*known) : prove_dependence(q);
    if (!known) memo.add(key, std::move(bound), params, p, budget);
    same.push_back({together, params, q.writers.size(), p});
    return p;
  }

 private:
  struct Entry {
    Stmt stmts;
    std::vector<Tensor> params;
    size_t writers;
    DependenceProof proof;
  };
  /// Each statement's shape, found once: a stage's statement is the reader of its own queries
  /// and a writer in later ones. The statement is kept with it, so that its address names no
  /// other statement while in the map.
  const loop::StmtShape& shape_of(const Stmt& s) {
    auto it = m_shapes.find(s.get());
    if (it != m_shapes.end()) return it->second.second;
    return m_shapes.emplace(s.get(), std::make_pair(s, loop::shape_of(s))).first->second.second;
  }
  std::map<std::string, std::vector<Entry>> m_entries;
  std::unordered_map<const loop::StmtNode*, std::pair<Stmt, loop::StmtShape>> m_shapes;
};

/// The first cross-block read of a mapped proof: the lowest consumer block that reads what
/// another block wrote, and that block.
void cross_block_example(const DependenceProof& p, int64_t grid, StageBoundary& b) {
  for (int64_t c = 0; c < grid && c + 1 < static_cast<int64_t>(p.offsets.size()); ++c)
    for (const ProducerBlock& w : p.producers_of(c))
      if (w.block != c) {
        b.consumer_block = c;
        b.producer_block = w.block;
        return;
      }
}

}  // namespace

Kernel merge_stages(std::vector<Kernel> stages, const std::string& name) {
  return merge_stages(std::move(stages), name, MergeOptions{});
}

Kernel merge_stages(std::vector<Kernel> stages, const std::string& name,
                    const MergeOptions& options) {
  SOUFFLE_CHECK(!stages.empty(), "merge: no stages");
  int64_t proof_budget = options.max_kernel_proof_steps;
  ProofCache proofs;
  Kernel k;
  k.name = name;
  SOUFFLE_CHECK(options.block_offsets.empty() || options.block_offsets.size() == stages.size(),
                "merge: block offsets for " + std::to_string(options.block_offsets.size()) +
                    " of " + std::to_string(stages.size()) + " stages");
  SOUFFLE_CHECK(options.waves.empty() || options.waves.size() == stages.size(),
                "merge: waves for " + std::to_string(options.waves.size()) + " of " +
                    std::to_string(stages.size()) + " stages");
  auto offset_of = [&](size_t i) {
    return options.block_offsets.empty() ? int64_t{0} : options.block_offsets[i];
  };
  // Kernel-lifetime buffers: out of each stage (whose arena then counts without them), around
  // the whole body below.
  if (!options.kernel_shared.empty())
    for (Kernel& s : stages) {
      DropAllocations drop(options.kernel_shared);
      Stmt body = drop.mutate(s.body);
      if (!drop.dropped) continue;
      s.body = body;
      s = loop::plan_shared_arena(s);
    }
  for (size_t i = 0; i < stages.size(); ++i) {
    const Kernel& s = stages[i];
    SOUFFLE_CHECK(offset_of(i) >= 0, "merge: negative block offset");
    k.launch.grid_x = std::max(k.launch.grid_x, offset_of(i) + s.launch.grid_x);
    k.launch.block_x = std::max(k.launch.block_x, s.launch.block_x);
  }
  Frame f;
  std::set<const te::TensorNode*> produced;
  // Tensors written since the last grid barrier, with the statements that wrote them.
  std::map<const te::TensorNode*, std::vector<Stmt>> dirty;
  std::map<const te::TensorNode*, int> writer_stage;  // the stage that last wrote each tensor
  std::vector<Stmt> body;
  struct Placed {
    Stmt inner;
    Stmt proof;  ///< `inner` as the dependence proofs read it (see proof_inner below)
    size_t first_info;
    std::vector<Tensor> inputs, outputs;
    size_t body_index;  ///< where `inner` sits in body
  };
  std::vector<Placed> placed;
  // Per-tile flags: one counter buffer per kernel, producer stage p's counters (one per block,
  // released after its stores) at [p * grid, (p + 1) * grid); and one table of the producer
  // blocks each wait awaits, wait w's rows at [w * grid, (w + 1) * grid). One parameter each,
  // however many stages wait: a recurrent kernel with a thousand flag boundaries would
  // otherwise pass two thousand pointers, past CUDA's 32 KB of kernel parameters.
  size_t infos = 0;
  for (const Kernel& s : stages) infos += std::max<size_t>(1, s.stages.size());
  Tensor counters;
  std::set<int> releasing;
  auto flags_of = [&](int producer) {
    if (!counters) {
      counters = loop::make_buffer(name + "_flags", {static_cast<int64_t>(infos) * k.launch.grid_x},
                                   DType::Int32);
      k.flags.push_back(counters);
    }
    if (releasing.insert(producer).second)
      for (const Placed& p : placed)
        if (static_cast<int>(p.first_info) == producer)
          body[p.body_index] = loop::seq(
              {body[p.body_index],
               loop::flag_release(counters, ic(producer * k.launch.grid_x) + f.bx, producer)});
    return static_cast<int64_t>(producer) * k.launch.grid_x;
  };
  struct PendingWait {
    size_t body_index;
    int64_t counter_offset;
    std::shared_ptr<TensorData> rows;  ///< [grid, 2]: first awaited producer block, how many
  };
  std::vector<PendingWait> waits;
  // The arena planner stacks the shared buffers of stages with no barrier between them. Merging
  // must not grow the arena beyond the largest stage's (co-residency of cooperative grids
  // depends on it), so removing a barrier or hoisting a tile is limited by what is stacked.
  auto aligned = [](int64_t b) { return (b + 31) / 32 * 32; };
  int64_t largest_arena = 0, stacked = 0;
  for (const Kernel& s : stages)
    largest_arena = std::max(largest_arena, aligned(s.launch.dynamic_shared_bytes));
  largest_arena += options.arena_growth;
  auto note = [&](size_t info, const std::string& text) {
    if (info < k.stages.size()) k.stages[info].schedule += "; " + text;
  };
  // The first block of each stage packed at an offset, in one constant table [n, 1] that the
  // stage reads at its own row: `sbx = blockIdx.x - offsets[row]` is its block index. Read
  // from a table (not folded into the stage) so that stages running the same code at other
  // offsets (an LSTM's layers side by side) stay equal up to their parameters and share one
  // outlined function and one rolled loop; the dependence prover reads the constant.
  Tensor offsets_table;
  {
    std::vector<int64_t> at;
    for (int64_t o : options.block_offsets)
      if (o > 0) at.push_back(o);
    if (!at.empty()) {
      auto rows =
          std::make_shared<TensorData>(DType::Int64, Shape{static_cast<int64_t>(at.size()), 1});
      for (size_t i = 0; i < at.size(); ++i) rows->set_i64(static_cast<int64_t>(i), at[i]);
      offsets_table = te::make_constant(name + "_block_offsets", rows);
      k.inputs.push_back(offsets_table);
      k.tables.push_back(offsets_table);
    }
  }
  int64_t offset_row = 0;
  int previous_wave = -1;
  std::map<int, int> wave_size;
  for (int w : options.waves) ++wave_size[w];
  for (size_t stage_index = 0; stage_index < stages.size(); ++stage_index) {
    Kernel& s = stages[stage_index];
    const int64_t block_offset = offset_of(stage_index);
    const int wave = options.waves.empty() ? -1 : options.waves[stage_index];
    // Beside another stage of its wave (not the wave's first).
    const bool beside = wave >= 0 && wave == previous_wave;
    previous_wave = wave;
    Expr bx, tx;
    Stmt inner;
    unwrap(s, bx, tx, inner);
    // A stage at an offset runs as its own block `blockIdx.x - offset`, bound in each of its
    // Stage nodes from its row of the offsets table.
    const Expr own_bx = block_offset > 0 ? te::var("sbx") : f.bx;
    inner = loop::substitute(inner, {{bx.get(), own_bx}, {tx.get(), f.tx}});
    inner = StageRenumber(static_cast<int>(k.stages.size())).mutate(inner);
    // The proofs read the stage with its offset as a number: stages that run the same code at
    // the same offset (one layer's step and its next) then pose the same query, which the proof
    // cache answers once; with the table's row in it every query would be new.
    Stmt proof_inner = inner;
    if (block_offset > 0) {
      proof_inner = BindStageBlock(own_bx, f.bx - ic(block_offset)).mutate(inner);
      inner = BindStageBlock(own_bx, f.bx - te::read(offsets_table, {ic(offset_row++), ic(0)}))
                  .mutate(inner);
    }
    Expr guard;
    auto conj = [&](Expr c) { guard = guard.defined() ? te::logical_and(guard, c) : c; };
    if (block_offset > 0) conj(te::ge(f.bx, ic(block_offset)));
    if (block_offset + s.launch.grid_x < k.launch.grid_x)
      conj(te::lt(f.bx, ic(block_offset + s.launch.grid_x)));
    if (s.launch.block_x < k.launch.block_x) {
      SOUFFLE_CHECK(!has_block_barrier(inner),
                    "merge: stage " + s.name + " has block barriers and a smaller block");
      conj(te::lt(f.tx, ic(s.launch.block_x)));
    }
    if (guard.defined()) {
      inner = guard_phases(inner, guard);
      proof_inner = guard_phases(proof_inner, guard);
    }
    k.launch.cooperative |= s.launch.cooperative;
    const size_t first_info = k.stages.size();
    for (loop::StageInfo si : s.stages) {
      si.block_offset = block_offset;
      si.wave = wave;
      k.stages.push_back(si);
    }
    // The weakest order that makes this stage see what earlier stages wrote: a grid barrier
    // unless every dirty tensor it reads is owned by the reading block (or thread).
    bool grid = false, any = false;
    Ownership level = Ownership::Thread;
    std::string why, owned, awaited;
    // Cross-block reads that per-tile flags order (producer stage, proof).
    std::vector<std::pair<int, DependenceProof>> flag_deps;
    StageBoundary bound;
    bound.before = first_info > 0 ? static_cast<int>(first_info) - 1 : -1;
    bound.after = static_cast<int>(first_info);
    auto writer_of = [&](const Tensor& t) {
      auto w = writer_stage.find(t.get());
      return w == writer_stage.end() ? -1 : w->second;
    };
    // A decision's order for this boundary (by the name of a TE the stage computes).
    std::optional<BoundaryKind> forced;
    if (!options.forced.empty() && first_info > 0)
      for (const loop::StageInfo& si : s.stages)
        for (const std::string& te : si.tes)
          if (auto it = options.forced.find(te); it != options.forced.end() && !forced)
            forced = it->second;
    const bool forced_flags = forced == BoundaryKind::Flags;
    for (const Tensor& t : s.outputs)
      if (!grid && dirty.count(t.get())) {
        grid = true;
        why = "rewrites " + t->name;
        bound.reason = BoundaryReason::Rewrite;
        bound.tensor = t->name;
        bound.producer = writer_of(t);
      }
    for (const Tensor& t : s.inputs) {
      auto it = dirty.find(t.get());
      if (grid || it == dirty.end()) continue;
      any = true;
      if (options.force_ownership) {
        level = Ownership::Block;
        if (bound.reason != BoundaryReason::BlockOwned) {
          bound.reason = BoundaryReason::BlockOwned;
          bound.tensor = t->name;
          bound.producer = writer_of(t);
        }
        continue;
      }
      if (!options.prove_ownership) {
        grid = true;
        why = "reads " + t->name;
        bound.reason = BoundaryReason::NoProofs;
        bound.tensor = t->name;
        bound.producer = writer_of(t);
        continue;
      }
      OwnershipQuery q{t, it->second, proof_inner, f.bx, f.tx, k.launch.grid_x, k.launch.block_x};
      q.max_steps = std::min(options.max_proof_steps, proof_budget);
      DependenceProof p = proofs.prove(q);
      if (options.on_proof) options.on_proof(q, p);
      proof_budget -= p.steps;
      const int64_t tiles = p.mapped ? p.max_producers() : 0;
      if (p.level == Ownership::None && (options.flag_max_tiles > 0 || forced_flags) && p.mapped &&
          writer_of(t) >= 0 && (forced_flags || tiles <= options.flag_max_tiles) &&
          tiles < k.launch.grid_x) {
        // Each consumer block reads a few producer blocks' tiles: it waits on those alone.
        bound.reason = BoundaryReason::CrossBlock;
        bound.tensor = t->name;
        bound.producer = writer_of(t);
        bound.detail = p.reason;
        bound.awaited_tiles = std::max(bound.awaited_tiles, tiles);
        cross_block_example(p, k.launch.grid_x, bound);
        awaited += (awaited.empty() ? "" : ", ") + t->name;
        flag_deps.emplace_back(writer_of(t), std::move(p));
        continue;
      }
      if (p.level == Ownership::None) {
        grid = true;
        why = t->name + ": " + p.reason;
        bound.tensor = t->name;
        bound.producer = writer_of(t);
        bound.detail = p.reason;
        if (p.mapped) {
          bound.reason = BoundaryReason::CrossBlock;
          bound.awaited_tiles = p.max_producers();
          cross_block_example(p, k.launch.grid_x, bound);
        } else {
          bound.reason = BoundaryReason::Unproven;
        }
      } else {
        // The tensor that sets the order: the first one owned only by its block, else the
        // first one owned by its thread.
        if (flag_deps.empty() &&
            (bound.tensor.empty() ||
             (p.level == Ownership::Block && bound.reason != BoundaryReason::BlockOwned))) {
          bound.reason = p.level == Ownership::Block ? BoundaryReason::BlockOwned
                                                     : BoundaryReason::ThreadOwned;
          bound.tensor = t->name;
          bound.producer = writer_of(t);
        }
        level = std::min(level, p.level);
        owned += (owned.empty() ? "" : ", ") + t->name;
      }
    }
    if (!grid && !flag_deps.empty() && !forced_flags && options.grid_price && options.flags_price) {
      // Sync mode auto: the cheaper of the two orders by the cost model's estimates.
      bound.grid_price_us = options.grid_price(k.launch.grid_x);
      bound.flags_price_us =
          options.flags_price(bound.awaited_tiles, static_cast<int>(flag_deps.size()));
      if (bound.grid_price_us <= bound.flags_price_us) {
        grid = true;
        why =
            fmt::format("{}: a grid barrier ({:.2f} us) prices at most per-tile flags ({:.2f} us)",
                        bound.tensor, bound.grid_price_us, bound.flags_price_us);
        flag_deps.clear();
      }
    }
    if (forced == BoundaryKind::Grid && !grid) {
      // The user's grid barrier, where the proofs would have allowed less.
      grid = true;
      why = "a decision orders this stage by a grid barrier";
      flag_deps.clear();
    }
    bound.forced =
        forced.has_value() && (forced == BoundaryKind::Grid ? grid : !grid && !flag_deps.empty());
    if (grid) {
      k.launch.cooperative = true;
      dirty.clear();
      if (options.prove_ownership) note(first_info, "after a grid barrier (" + why + ")");
      std::vector<std::string> tags;
      const bool room = stacked + aligned(s.launch.dynamic_shared_bytes) <= largest_arena;
      Stmt split =
          options.prefetch_weights && room ? hoist_weight_tiles(inner, produced, tags) : Stmt();
      stacked = 0;
      bound.kind = BoundaryKind::Grid;
      bound.grid = k.launch.grid_x;
      if (split.defined()) {
        // The hoisted tiles sit above what is stacked; the rest starts after the barrier.
        stacked = largest_arena;
        inner = split;
        bound.prefetched = true;
        std::string which;
        for (const std::string& t : tags) which += (which.empty() ? "" : " and ") + t;
        note(first_info, "first K tile of " + which + " prefetched before the grid barrier");
      } else {
        body.push_back(loop::grid_barrier());
      }
    } else if (!flag_deps.empty()) {
      // All blocks must be co-resident for a wait on another block to end: a cooperative
      // launch, whose grid is checked against the GPU's occupancy before it starts.
      k.launch.cooperative = true;
      const int64_t grid_x = k.launch.grid_x;
      for (size_t d = 0; d < flag_deps.size(); ++d) {
        const auto& [producer, proof] = flag_deps[d];
        const int64_t offset = flags_of(producer);
        // Consumer block b waits on the producer blocks [first, first + count) that cover
        // those it reads (a superset when they are not contiguous: waiting longer is safe).
        auto table = std::make_shared<TensorData>(DType::Int64, Shape{grid_x, 2});
        for (int64_t b = 0; b < grid_x; ++b) {
          int64_t lo = 0, hi = -1;
          if (b + 1 < static_cast<int64_t>(proof.offsets.size()))
            for (const ProducerBlock& w : proof.producers_of(b)) {
              lo = hi < lo ? w.block : std::min<int64_t>(lo, w.block);
              hi = std::max<int64_t>(hi, w.block);
            }
          table->set_i64(b * 2, hi >= lo ? lo : 0);
          table->set_i64(b * 2 + 1, hi >= lo ? hi - lo + 1 : 0);
        }
        // Written once every wait is known (the table of all of them), see below.
        waits.push_back({body.size(), offset, table});
        body.push_back(Stmt());
      }
      stacked = 0;
      bound.kind = BoundaryKind::Flags;
      bound.grid = grid_x;
      bound.waits = static_cast<int>(flag_deps.size());
      note(first_info,
           "after per-tile flags: each block waits only on the producer blocks it "
           "reads of " +
               awaited + " (at most " + std::to_string(bound.awaited_tiles) + " of " +
               std::to_string(grid_x) + ")");
    } else if (any && level == Ownership::Block) {
      body.push_back(loop::block_barrier());
      stacked = 0;
      bound.kind = BoundaryKind::Block;
      note(first_info, "after a block barrier: each block reads only what it wrote of " + owned);
    } else if (any && stacked > 0 && s.launch.dynamic_shared_bytes > 0 &&
               stacked + aligned(s.launch.dynamic_shared_bytes) > largest_arena) {
      body.push_back(loop::block_barrier());
      stacked = 0;
      bound.kind = BoundaryKind::Block;
      bound.reason = BoundaryReason::SharedArena;
      note(first_info, "after a block barrier (each thread reads only what it wrote of " + owned +
                           "; the barrier lets the stages share the shared arena)");
    } else if (any) {
      note(first_info, "no barrier: each thread reads only what it wrote of " + owned);
    } else if (beside && stacked > 0 && s.launch.dynamic_shared_bytes > 0 &&
               stacked + aligned(s.launch.dynamic_shared_bytes) > largest_arena) {
      // Beside the stages before it on other blocks: no block runs both, but the arena would
      // stack their buffers. A block barrier (which every block passes at once) lets them
      // share it.
      body.push_back(loop::block_barrier());
      stacked = 0;
      bound.kind = BoundaryKind::Block;
      bound.reason = BoundaryReason::SharedArena;
      note(first_info,
           "after a block barrier (it runs beside the stages before it on other blocks; the "
           "barrier lets them share the shared arena)");
    }
    if (wave >= 0 && wave_size[wave] > 1)
      note(first_info,
           fmt::format("wave {}: blocks {}..{} beside {} other stages", wave, block_offset,
                       block_offset + s.launch.grid_x - 1, wave_size[wave] - 1));
    if (first_info > 0) k.boundaries.push_back(bound);
    // The stage's own boundaries (between the phases of a reduction split over blocks).
    for (StageBoundary b : s.boundaries) {
      if (b.kind == BoundaryKind::Launch) continue;
      b.before += b.before >= 0 ? static_cast<int>(first_info) : 0;
      b.after += static_cast<int>(first_info);
      if (b.producer >= 0) b.producer += static_cast<int>(first_info);
      if (b.kind == BoundaryKind::Grid) b.grid = k.launch.grid_x;
      k.boundaries.push_back(b);
    }
    stacked += aligned(s.launch.dynamic_shared_bytes);
    const size_t body_index = body.size();
    body.push_back(inner);
    for (const Tensor& t : s.inputs)
      if (!produced.count(t.get()) &&
          std::find(k.inputs.begin(), k.inputs.end(), t) == k.inputs.end())
        k.inputs.push_back(t);
    for (const Tensor& t : s.outputs) {
      if (produced.insert(t.get()).second) k.outputs.push_back(t);
      dirty[t.get()].push_back(block_offset > 0 ? proof_inner : inner);
      writer_stage[t.get()] = static_cast<int>(first_info);
    }
    placed.push_back({inner, block_offset > 0 ? proof_inner : inner, first_info, s.inputs,
                      s.outputs, body_index});
  }
  if (!waits.empty()) {
    // The awaited ranges of every wait in one constant table.
    const int64_t grid_x = k.launch.grid_x;
    const int64_t n = static_cast<int64_t>(waits.size());
    auto rows = std::make_shared<TensorData>(DType::Int64, Shape{n * grid_x, 2});
    for (int64_t w = 0; w < n; ++w)
      for (int64_t i = 0; i < grid_x * 2; ++i)
        rows->set_i64(w * grid_x * 2 + i, waits[size_t(w)].rows->get_i64(i));
    Tensor table = te::make_constant(name + "_waits", rows);
    k.inputs.push_back(table);
    k.tables.push_back(table);
    for (int64_t w = 0; w < n; ++w) {
      const PendingWait& pw = waits[size_t(w)];
      const Expr row = ic(w * grid_x) + f.bx;
      body[pw.body_index] =
          loop::flag_wait(counters, ic(pw.counter_offset) + te::read(table, {row, ic(0)}),
                          te::read(table, {row, ic(1)}), 1);
    }
  }
  Stmt all = loop::seq(std::move(body));
  for (const Tensor& b : options.kernel_shared) all = loop::allocate(b, MemScope::Shared, all);
  // Intermediates nothing outside the kernel reads, owned by the blocks that touch them and
  // small enough, live in shared memory: no DRAM round trip, and each block's own range only.
  int64_t arena = 0;
  std::vector<Tensor> resident;
  if (!options.local.empty()) {
    Kernel probe = k;
    probe.body = loop::make_for(f.bx, k.launch.grid_x, ForKind::BlockIdxX,
                                loop::make_for(f.tx, k.launch.block_x, ForKind::ThreadIdxX, all));
    arena = loop::plan_shared_arena(probe).launch.dynamic_shared_bytes;
  }
  // The stages writing and reading each tensor, in order (found once, not per local).
  std::unordered_map<const te::TensorNode*, std::vector<size_t>> writes, reads;
  for (size_t i = 0; i < placed.size(); ++i) {
    for (const Tensor& t : placed[i].outputs) {
      std::vector<size_t>& w = writes[t.get()];
      if (w.empty() || w.back() != i) w.push_back(i);
    }
    for (const Tensor& t : placed[i].inputs) {
      std::vector<size_t>& r = reads[t.get()];
      if (r.empty() || r.back() != i) r.push_back(i);
    }
  }
  std::vector<Resident> rebased;
  for (const Tensor& t : options.local) {
    if (!produced.count(t.get())) continue;
    std::vector<Stmt> writers, readers;
    size_t writer_info = 0;
    if (auto w = writes.find(t.get()); w != writes.end()) {
      writer_info = placed[w->second.front()].first_info;
      for (size_t i : w->second) writers.push_back(placed[i].proof);
    }
    if (auto r = reads.find(t.get()); r != reads.end())
      for (size_t i : r->second) readers.push_back(placed[i].proof);
    if (writers.empty() || readers.empty()) continue;
    OwnershipQuery q{t, writers, loop::seq(readers), f.bx, f.tx, k.launch.grid_x, k.launch.block_x};
    q.max_steps = std::min(options.max_proof_steps, proof_budget);
    const OwnershipProof p = proofs.prove(q).as_ownership();
    proof_budget -= p.steps;
    int64_t base = 0, step = 0, extent = 0;
    if (p.level == Ownership::None || p.writers_read || !affine_origin(p, base, step, extent))
      continue;
    const int64_t bytes = extent * dtype_size(t->dtype);
    // 32 bytes of alignment slack per buffer, as the arena pads them.
    if (arena + bytes + 32 > options.shared_budget) continue;
    arena += bytes + 32;
    Tensor smem = loop::make_buffer(t->name + "_smem", {extent}, t->dtype);
    Expr origin = ic(base);
    if (step != 0) origin = origin + f.bx * ic(step);
    rebased.push_back({t, smem, origin});
    resident.push_back(t);
    // Written once and read back once per reading stage, had it stayed in DRAM.
    const int64_t avoided =
        shape_numel(t->shape) * dtype_size(t->dtype) * (1 + static_cast<int64_t>(readers.size()));
    note(writer_info, t->name + " kept in shared memory (" + std::to_string(extent) +
                          " elements per block; " + std::to_string(avoided) +
                          " DRAM bytes avoided)");
  }
  if (!rebased.empty()) {
    all = Rebase(rebased).mutate(all);
    // The first resident's allocation innermost, as when each was rebased in turn.
    for (const Resident& r : rebased) all = loop::allocate(r.smem, MemScope::Shared, all);
  }
  if (!resident.empty())
    k.outputs.erase(std::remove_if(k.outputs.begin(), k.outputs.end(),
                                   [&](const Tensor& t) {
                                     return std::find(resident.begin(), resident.end(), t) !=
                                            resident.end();
                                   }),
                    k.outputs.end());
  k.body = loop::make_for(f.bx, k.launch.grid_x, ForKind::BlockIdxX,
                          loop::make_for(f.tx, k.launch.block_x, ForKind::ThreadIdxX, all));
  loop::verify(k);
  return loop::plan_shared_arena(k);
}

}  // namespace souffle::schedule
