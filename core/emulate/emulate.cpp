#include "core/emulate/emulate.h"

#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <exception>
#include <mutex>
#include <thread>
#include <unordered_map>

#include "core/emulate/access_recorder.h"
#include "core/emulate/mma_sync.h"
#include "core/emulate/timeline_clock.h"
#include "core/emulate/wgmma.h"
#include "core/interp/scalar_ops.h"
#include "core/te/printer.h"

namespace souffle::emulate {

EmulationError::EmulationError(std::string kernel, std::string stage, std::string detail)
    : std::runtime_error("kernel " + kernel + (stage.empty() ? "" : ", stage " + stage) + ": " +
                         detail),
      m_kernel(std::move(kernel)),
      m_stage(std::move(stage)),
      m_detail(std::move(detail)) {}

namespace {

using interp::Val;
using loop::MemScope;
using te::Expr;
using te::Tensor;
using Lanes = std::vector<int32_t>;

/// An allocator that default-initializes: every lane of an expression's values is written
/// before it is read, and value-initializing (zero-filling) each intermediate of each expression
/// for every lane of the grid was a fifth of the emulator's time.
template <typename T>
struct DefaultInit : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = DefaultInit<U>;
  };
  DefaultInit() = default;
  template <typename U>
  explicit DefaultInit(const DefaultInit<U>&) noexcept {}
  template <typename U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
using Vals = std::vector<Val, DefaultInit<Val>>;

/// One buffer in one scope: `copies` instances (1 global, one per block shared, one per thread
/// local), with written bits and the last accesses for race detection.
struct Mem {
  std::string name;
  DType dtype = DType::Float32;
  Shape shape;
  int64_t numel = 1;
  MemScope scope = MemScope::Global;
  int64_t copies = 1;
  int64_t base = 0;  ///< shared: the buffer's byte offset in the kernel's arena (bank model)
  std::vector<Val> data;
  std::vector<uint8_t> written;
  /// Epoch and accessor (thread for shared, block for global) of the last write / reads;
  /// reader -2 means several.
  std::vector<int32_t> w_epoch, w_who, r_epoch, r_who;
  /// Global memory only: the thread (global lane) of the last write / reads and the block
  /// epoch they happened in, so threads of one block that exchange data through global memory
  /// without a block barrier are caught too; reader -2 means several.
  std::vector<int32_t> tw_lane, tw_epoch, tr_lane, tr_block, tr_epoch, tr_grid;
  /// Kernels with flags only: how many releases the last writer / reader block had made when
  /// it accessed the element (see Machine::ordered).
  std::vector<int32_t> w_rel, r_rel;
  /// Access recording: the buffer's slot in the recorder of kernel run `rec_run` (see
  /// Machine::record).
  int32_t rec_slot = -1;
  int64_t rec_run = -1;

  void init(bool track) {
    data.assign(static_cast<size_t>(numel * copies), Val{});
    written.assign(data.size(), 0);
    if (track) {
      w_epoch.assign(data.size(), -1);
      w_who.assign(data.size(), -1);
      r_epoch.assign(data.size(), -1);
      r_who.assign(data.size(), -1);
      if (scope == MemScope::Global) {
        tw_lane.assign(data.size(), -1);
        tw_epoch.assign(data.size(), -1);
        tr_lane.assign(data.size(), -1);
        tr_block.assign(data.size(), -1);
        tr_epoch.assign(data.size(), -1);
        tr_grid.assign(data.size(), -1);
        w_rel.assign(data.size(), 0);
        r_rel.assign(data.size(), 0);
      }
    }
  }
};

Val to_val(DType t, const TensorData& d, int64_t i) {
  Val v;
  if (is_float(t))
    v.f = d.get_f64(i);
  else
    v.i = d.get_i64(i);
  return v;
}

Val store_round(DType t, Val v) {
  if (is_float(t))
    v.f = interp::round_to(t, v.f, true);
  else
    v.i = interp::wrap_int(t, static_cast<uint64_t>(v.i));
  return v;
}

class Machine {
 public:
  Machine(const EmulateOptions& o) : m_opt(o) {}

  /// Global buffers persist across kernels.
  std::unordered_map<std::string, std::unique_ptr<Mem>> globals;

  Mem& global_for(const Tensor& t, bool create) {
    auto it = globals.find(t->name);
    if (it != globals.end()) {
      if (it->second->shape != t->shape || it->second->dtype != t->dtype)
        throw UserError("", t->name,
                        "buffer has type " + std::string(dtype_name(it->second->dtype)) +
                            shape_str(it->second->shape) + ", the kernel wants " +
                            dtype_name(t->dtype) + shape_str(t->shape));
      return *it->second;
    }
    if (t->source == te::TensorNode::Source::Constant && t->data) {
      Mem& m = add_global(t);
      for (int64_t i = 0; i < m.numel; ++i) m.data[i] = to_val(t->dtype, *t->data, i);
      std::fill(m.written.begin(), m.written.end(), 1);
      return m;
    }
    if (!create) throw UserError("", t->name, "kernel input not provided");
    return add_global(t);
  }

  Mem& add_global(const Tensor& t) {
    auto m = std::make_unique<Mem>();
    m->name = t->name;
    m->dtype = t->dtype;
    m->shape = t->shape;
    m->numel = shape_numel(t->shape);
    m->init(m_opt.check_races);
    Mem& ref = *m;
    globals[t->name] = std::move(m);
    return ref;
  }

  void run(const loop::Kernel& k) {
    m_kernel = &k;
    m_stage.clear();
    m_grid = k.launch.grid_x;
    m_block = k.launch.block_x;
    m_lanes = m_grid * m_block;
    m_mems.clear();
    m_vars.clear();
    for (const Tensor& t : k.inputs) m_mems[t.get()] = &global_for(t, false);
    for (const Tensor& t : k.outputs) m_mems[t.get()] = &global_for(t, true);
    for (const Tensor& t : k.flags) {
      // Counters are zeroed once, when first allocated, and never reset (see FlagRelease).
      const bool fresh = !globals.count(t->name);
      Mem& f = global_for(t, true);
      if (fresh) std::fill(f.written.begin(), f.written.end(), 1);
      m_mems[t.get()] = &f;
    }
    m_block_epoch.assign(static_cast<size_t>(m_grid), 0);
    m_open_copies.clear();
    m_copy_groups.clear();
    m_pending_copies = 0;
    m_wgmma.reset(0);
    // A kernel boundary orders everything before it: start a fresh grid epoch.
    ++m_grid_epoch;
    m_tl.reset();
    if (loop::has_timeline(k)) m_tl = std::make_unique<TimelineClock>(m_grid, m_block);
    start_recording(k);
    if (!k.flags.empty()) {
      run_tasks();
    } else {
      Lanes all = m_rec ? m_rec->sample_lanes() : Lanes();  // some blocks only
      if (all.empty()) {
        all.resize(static_cast<size_t>(m_lanes));
        for (int64_t l = 0; l < m_lanes; ++l) all[l] = static_cast<int32_t>(l);
      }
      m_run_lanes = static_cast<int64_t>(all.size());
      exec(k.body, all);
    }
    if (m_rec) {
      m_opt.access_record->kernels.push_back(m_rec->finish(m_grid_epoch - m_rec_epoch0));
      m_rec.reset();
    }
  }

 private:
  [[noreturn]] void fail(const std::string& what) {
    throw EmulationError(m_kernel->name, m_stage, what);
  }
  std::string who(int32_t lane) const {
    return "block " + std::to_string(lane / m_block) + " thread " + std::to_string(lane % m_block);
  }

  Mem& mem(const Tensor& t) {
    auto it = m_mems.find(t.get());
    if (it != m_mems.end()) return *it->second;
    if (t->source == te::TensorNode::Source::Constant) {
      Mem& m = global_for(t, false);
      m_mems[t.get()] = &m;
      return m;
    }
    fail("access to " + t->name + ", which is neither a param nor allocated");
  }

  // ---- expressions ----

  /// The value of an immediate, as eval gives it to every lane; false for other expressions.
  static bool immediate(const Expr& e, Val& v) {
    if (e.kind() == te::ExprKind::IntImm) {
      v.i = e.as<te::IntImm>()->value;
      return true;
    }
    if (e.kind() == te::ExprKind::FloatImm) {
      v.f = interp::round_to(e.dtype(), e.as<te::FloatImm>()->value, true);
      return true;
    }
    return false;
  }

  /// Expressions have no side effects on the values other lanes see (reads only record who read
  /// what, in any order), so a grid's lanes are evaluated a chunk at a time: the intermediates
  /// of an expression tree then stay in the cache instead of being grid-sized arrays.
  static constexpr size_t kChunk = 2048;

  Vals eval(const Expr& e, const Lanes& lanes) {
    if (lanes.size() <= kChunk) return eval_lanes(e, lanes);
    Vals out(lanes.size());
    Lanes part;
    for (size_t b = 0; b < lanes.size(); b += kChunk) {
      size_t end = std::min(lanes.size(), b + kChunk);
      part.assign(lanes.begin() + static_cast<std::ptrdiff_t>(b),
                  lanes.begin() + static_cast<std::ptrdiff_t>(end));
      Vals v = eval_lanes(e, part);
      std::copy(v.begin(), v.end(), out.begin() + static_cast<std::ptrdiff_t>(b));
    }
    return out;
  }

  Vals eval_lanes(const Expr& e, const Lanes& lanes) {
    const size_t n = lanes.size();
    Vals out(n);
    switch (e.kind()) {
      case te::ExprKind::IntImm: {
        Val v;
        v.i = e.as<te::IntImm>()->value;
        std::fill(out.begin(), out.end(), v);
        return out;
      }
      case te::ExprKind::FloatImm: {
        Val v;
        v.f = interp::round_to(e.dtype(), e.as<te::FloatImm>()->value, true);
        std::fill(out.begin(), out.end(), v);
        return out;
      }
      case te::ExprKind::Var: {
        auto it = m_vars.find(e.get());
        if (it == m_vars.end()) fail("unbound var " + e.as<te::Var>()->name);
        const Vals& v = it->second.vals;
        if (v.empty()) fail("unbound var " + e.as<te::Var>()->name);
        for (size_t i = 0; i < n; ++i) out[i] = v[lanes[i]];
        return out;
      }
      case te::ExprKind::Unary: {
        const te::Unary* u = e.as<te::Unary>();
        Vals a = eval(u->a, lanes);
        for (size_t i = 0; i < n; ++i) {
          if (u->op == te::UnaryOp::Not)
            out[i].i = a[i].i == 0;
          else if (is_float(e.dtype()))
            out[i].f = -a[i].f;
          else
            out[i].i = interp::wrap_int(e.dtype(), 0 - static_cast<uint64_t>(a[i].i));
        }
        return out;
      }
      case te::ExprKind::Binary: {
        const te::Binary* b = e.as<te::Binary>();
        // An immediate operand (an index's stride or offset, a scale) is taken once instead of
        // being filled into every lane: most of an index computation's operands are.
        Val xc, yc;
        const bool xi = immediate(b->a, xc), yi = immediate(b->b, yc);
        Vals x = xi ? Vals() : eval(b->a, lanes), y = yi ? Vals() : eval(b->b, lanes);
        const Val* xp = xi ? &xc : x.data();
        const Val* yp = yi ? &yc : y.data();
        const size_t xs = xi ? 0 : 1, ys = yi ? 0 : 1;
        DType t = b->a.dtype();
        if (is_float(t)) {
          for (size_t i = 0; i < n; ++i) {
            out[i] = interp::binary_f(b->op, xp[i * xs].f, yp[i * ys].f);
            if (is_float(e.dtype())) out[i].f = interp::round_to(e.dtype(), out[i].f, true);
          }
        } else {
          for (size_t i = 0; i < n; ++i)
            out[i].i = interp::binary_i(b->op, t, xp[i * xs].i, yp[i * ys].i);
        }
        return out;
      }
      case te::ExprKind::Call: {
        const te::Call* c = e.as<te::Call>();
        DType t = c->args[0].dtype();
        Vals x = eval(c->args[0], lanes);
        Vals y = c->args.size() > 1 ? eval(c->args[1], lanes) : Vals(n, Val{});
        for (size_t i = 0; i < n; ++i) {
          if (is_float(t)) {
            out[i] = interp::call_f(c->fn, x[i].f, y[i].f);
            if (is_float(e.dtype())) out[i].f = interp::round_to(e.dtype(), out[i].f, true);
          } else {
            out[i] = interp::call_i(c->fn, t, x[i].i, y[i].i);
          }
        }
        return out;
      }
      case te::ExprKind::Select: {
        const te::Select* s = e.as<te::Select>();
        Vals c = eval(s->cond, lanes);
        Lanes lt, lf;
        for (size_t i = 0; i < n; ++i) (c[i].i ? lt : lf).push_back(lanes[i]);
        // Only the chosen side is evaluated, so guarded reads stay in bounds.
        Vals vt = lt.empty() ? Vals() : eval(s->t, lt);
        Vals vf = lf.empty() ? Vals() : eval(s->f, lf);
        size_t it = 0, jf = 0;
        for (size_t i = 0; i < n; ++i) out[i] = c[i].i ? vt[it++] : vf[jf++];
        return out;
      }
      case te::ExprKind::Cast: {
        const te::Cast* c = e.as<te::Cast>();
        Vals a = eval(c->a, lanes);
        for (size_t i = 0; i < n; ++i)
          out[i] = interp::cast_value(c->a.dtype(), e.dtype(), a[i], true);
        return out;
      }
      case te::ExprKind::Read: {
        const te::Read* r = e.as<te::Read>();
        Mem& m = mem(r->tensor);
        std::vector<int64_t> flat = addresses(m, r->indices, lanes, "read");
        if (m_opt.bank_conflicts && m.scope == MemScope::Shared)
          count_banks(m, flat, lanes, "ld.shared");
        for (size_t i = 0; i < n; ++i) {
          int64_t a = flat[i];
          if (m_opt.check_uninitialized && !m.written[a])
            fail("read of never-written " + m.name + element(m, a) + " by " + who(lanes[i]));
          track(m, a, lanes[i], false);
          out[i] = m.data[a];
        }
        return out;
      }
    }
    return out;
  }

  std::string element(const Mem& m, int64_t addr) const {
    int64_t e = addr % m.numel;
    std::vector<int64_t> idx(m.shape.size());
    for (size_t d = m.shape.size(); d-- > 0;) {
      idx[d] = e % m.shape[d];
      e /= m.shape[d];
    }
    std::string s = "[";
    for (size_t d = 0; d < idx.size(); ++d) s += (d ? ", " : "") + std::to_string(idx[d]);
    return s + "]";
  }

  int64_t copy_of(const Mem& m, int32_t lane) const {
    switch (m.scope) {
      case MemScope::Global:
        return 0;
      case MemScope::Shared:
        return lane / m_block;
      case MemScope::Local:
        return lane;
    }
    return 0;
  }

  [[noreturn]] void out_of_bounds(const Mem& m, const std::vector<Expr>& indices, size_t d,
                                  int64_t value, int32_t lane, const char* what) {
    std::string idx = "[";
    for (size_t k = 0; k < indices.size(); ++k) {
      if (k) idx += ", ";
      idx += k == d ? std::to_string(value) : te::print(indices[k]);
    }
    fail(std::string("out-of-bounds ") + what + " of " + scope_name(m.scope) + " " + m.name + idx +
         "] (shape " + shape_str(m.shape) + ") by " + who(lane));
  }

  /// Flat addresses (copy * numel + element) with a bounds check per dimension.
  std::vector<int64_t> addresses(const Mem& m, const std::vector<Expr>& indices, const Lanes& lanes,
                                 const char* what) {
    std::vector<int64_t> flat(lanes.size(), 0);
    for (size_t d = 0; d < indices.size(); ++d) {
      Val c;
      if (immediate(indices[d], c)) {  // the same index in every lane
        if (c.i < 0 || c.i >= m.shape[d]) out_of_bounds(m, indices, d, c.i, lanes[0], what);
        for (size_t i = 0; i < lanes.size(); ++i) flat[i] = flat[i] * m.shape[d] + c.i;
        continue;
      }
      Vals v = eval(indices[d], lanes);
      for (size_t i = 0; i < lanes.size(); ++i) {
        if (v[i].i < 0 || v[i].i >= m.shape[d])
          out_of_bounds(m, indices, d, v[i].i, lanes[i], what);
        flat[i] = flat[i] * m.shape[d] + v[i].i;
      }
    }
    for (size_t i = 0; i < lanes.size(); ++i) flat[i] += copy_of(m, lanes[i]) * m.numel;
    return flat;
  }

  void track(Mem& m, int64_t a, int32_t lane, bool write) {
    if (m_rec) record(m, a, lane, write);
    if (!m_opt.check_races || m.scope == MemScope::Local || m.w_epoch.empty()) return;
    int32_t epoch, me;
    if (m.scope == MemScope::Shared) {
      epoch = m_block_epoch[lane / m_block];
      me = lane % m_block;
    } else {
      epoch = m_grid_epoch;
      me = lane / m_block;
    }
    const char* unit = m.scope == MemScope::Shared ? "threads" : "blocks";
    const bool flags = m_tasks_on && m.scope == MemScope::Global;
    const char* sync = m.scope == MemScope::Shared ? "block barrier"
                       : flags                     ? "grid barrier or an awaited flag"
                                                   : "grid barrier";
    auto race = [&](const char* kind, int32_t other) {
      fail(std::string("data race (") + kind + ") on " + scope_name(m.scope) + " " + m.name +
           element(m, a) + ": " + unit + " " + (other >= 0 ? std::to_string(other) : "several") +
           " and " + std::to_string(me) + " without a " + sync + " between (" + who(lane) + ")");
    };
    if (m.w_epoch[a] == epoch && m.w_who[a] != me &&
        !(flags && ordered(me, m.w_who[a], m.w_rel[a])))
      race(write ? "write-write" : "write-read", m.w_who[a]);
    if (m.scope == MemScope::Global && !m.tw_lane.empty()) track_in_block(m, a, lane, write);
    // With flags, a read by several blocks is not kept per reader: a later write by another
    // block in the same grid epoch then counts as a race even when awaited releases order it.
    if (write) {
      if (m.r_epoch[a] == epoch && m.r_who[a] != me &&
          !(flags && m.r_who[a] >= 0 && ordered(me, m.r_who[a], m.r_rel[a])))
        race("read-write", m.r_who[a]);
      m.w_epoch[a] = epoch;
      m.w_who[a] = me;
      if (flags) m.w_rel[a] = releases(me);
    } else if (m.r_epoch[a] == epoch) {
      if (m.r_who[a] != me) m.r_who[a] = -2;
    } else {
      m.r_epoch[a] = epoch;
      m.r_who[a] = me;
      if (flags) m.r_rel[a] = releases(me);
    }
  }

  /// Threads of one block on one global element between two block barriers (the block-level
  /// tracking above sees one accessor there): what a stage that relies on each thread reading
  /// only what it wrote itself would get wrong.
  void track_in_block(Mem& m, int64_t a, int32_t lane, bool write) {
    const int32_t b = lane / static_cast<int32_t>(m_block);
    const int32_t be = m_block_epoch[static_cast<size_t>(b)];
    auto race = [&](const char* kind, int32_t other) {
      fail(std::string("data race (") + kind + ") on global " + m.name + element(m, a) +
           ": threads " + (other >= 0 ? std::to_string(other % m_block) : "several") + " and " +
           std::to_string(lane % m_block) + " of block " + std::to_string(b) +
           " without a block barrier between (" + who(lane) + ")");
    };
    const bool same_w = m.w_epoch[a] == m_grid_epoch && m.w_who[a] == b && m.tw_epoch[a] == be;
    if (same_w && m.tw_lane[a] != lane) race(write ? "write-write" : "write-read", m.tw_lane[a]);
    const bool same_r = m.tr_grid[a] == m_grid_epoch && m.tr_block[a] == b && m.tr_epoch[a] == be;
    if (write) {
      if (same_r && m.tr_lane[a] != lane) race("read-write", m.tr_lane[a]);
      m.tw_lane[a] = lane;
      m.tw_epoch[a] = be;
    } else if (same_r) {
      if (m.tr_lane[a] != lane) m.tr_lane[a] = -2;
    } else {
      m.tr_lane[a] = lane;
      m.tr_block[a] = b;
      m.tr_epoch[a] = be;
      m.tr_grid[a] = m_grid_epoch;
    }
  }

  // ---- statements ----

  /// A bound var's value per lane (grid-sized once assigned) and the bindings of it running.
  struct VarSlot {
    Vals vals;
    int open = 0;
  };

  Vals& var_slot(const Expr& var) {
    Vals& v = m_vars[var.get()].vals;
    if (v.size() != static_cast<size_t>(m_lanes)) v.assign(static_cast<size_t>(m_lanes), Val{});
    return v;
  }

  /// A For or LetStmt binding `var` while its body runs. A var's lane values are one grid-sized
  /// array (8 bytes a thread); it is freed when the last binding of it that is running ends, so
  /// a kernel keeps the arrays of the loops it is inside, not of every loop it has run (a
  /// kernel of 3,003 stages on 320 blocks otherwise held some 16 GB of them). Counted, since
  /// blocks run as tasks (per-tile flags) can be inside one binding at once; references into
  /// m_vars stay valid while other vars come and go (a node-based map). Tasks unwinding at
  /// once because the run is abandoned (m_abort) leave m_vars alone; the next run clears it.
  class Binding {
   public:
    Binding(Machine& m, const Expr& var) : m_m(m), m_key(var.get()) { ++m.m_vars[m_key].open; }
    ~Binding() {
      if (m_m.m_abort) return;
      auto it = m_m.m_vars.find(m_key);
      if (it != m_m.m_vars.end() && --it->second.open == 0) m_m.m_vars.erase(it);
    }
    Binding(const Binding&) = delete;
    Binding& operator=(const Binding&) = delete;

   private:
    Machine& m_m;
    const te::ExprNode* m_key;
  };

  void exec(const loop::Stmt& s, const Lanes& lanes) {
    if (!s.defined() || lanes.empty()) return;
    using namespace loop;
    if (m_tl && TimelineClock::is_work(s.kind())) m_tl->tick(lanes);
    switch (s.kind()) {
      case StmtKind::For: {
        const For* f = s.as<For>();
        Binding bound(*this, f->var);
        if (f->for_kind == ForKind::BlockIdxX || f->for_kind == ForKind::ThreadIdxX) {
          Vals& v = var_slot(f->var);
          for (int32_t l : lanes)
            v[l].i = f->for_kind == ForKind::BlockIdxX ? l / m_block : l % m_block;
          exec(f->body, lanes);
          return;
        }
        // Bounds are mostly immediates: then every lane runs the same iterations.
        Val mn_c, ext_c;
        const bool mn_imm = immediate(f->min, mn_c), ext_imm = immediate(f->extent, ext_c);
        Vals mn = mn_imm ? Vals() : eval(f->min, lanes);
        Vals ext = ext_imm ? Vals() : eval(f->extent, lanes);
        int64_t most = ext_imm ? ext_c.i : 0;
        bool uniform = true;
        for (size_t i = 0; !ext_imm && i < lanes.size(); ++i) {
          most = std::max(most, ext[i].i);
          uniform &= ext[i].i == ext[0].i;
        }
        for (int64_t it = 0; it < most; ++it) {
          Lanes act;
          const Lanes* run = &lanes;
          if (!uniform) {
            for (size_t i = 0; i < lanes.size(); ++i)
              if (it < ext[i].i) act.push_back(lanes[i]);
            run = &act;
          }
          Vals& v = var_slot(f->var);
          for (size_t i = 0; i < lanes.size(); ++i)
            if (uniform || it < ext[i].i) v[lanes[i]].i = (mn_imm ? mn_c.i : mn[i].i) + it;
          exec(f->body, *run);
        }
        return;
      }
      case StmtKind::LetStmt: {
        const LetStmt* l = s.as<LetStmt>();
        Vals val = eval(l->value, lanes);
        Binding bound(*this, l->var);
        Vals& v = var_slot(l->var);
        for (size_t i = 0; i < lanes.size(); ++i) v[lanes[i]] = val[i];
        exec(l->body, lanes);
        return;
      }
      case StmtKind::Allocate: {
        const Allocate* a = s.as<Allocate>();
        if (m_tl && a->scope == MemScope::Global &&
            a->buffer->name == m_kernel->name + "_timeline") {
          exec(a->body, lanes);  // records go to the timeline clock, not to memory
          return;
        }
        // Blocks run one at a time with flags: they share one instance of each allocation (a
        // global one is one buffer for the grid; shared and local ones have a copy per block
        // or thread inside it).
        std::unique_ptr<Mem> own;
        std::unique_ptr<Mem>* slot = m_tasks_on ? &m_task_allocs[a] : &own;
        if (!*slot) {
          auto m = std::make_unique<Mem>();
          m->name = a->buffer->name;
          m->dtype = a->buffer->dtype;
          m->shape = a->buffer->shape;
          m->numel = shape_numel(a->buffer->shape);
          m->scope = a->scope;
          m->copies = a->scope == MemScope::Shared  ? m_grid
                      : a->scope == MemScope::Local ? m_lanes
                                                    : 1;
          m->init(m_opt.check_races && a->scope != MemScope::Local);
          for (const loop::SharedSlot& sl : m_kernel->shared)
            if (sl.buffer == a->buffer) m->base = sl.offset;
          *slot = std::move(m);
        }
        Mem* m = slot->get();
        Mem* prev = m_mems.count(a->buffer.get()) ? m_mems[a->buffer.get()] : nullptr;
        m_mems[a->buffer.get()] = m;
        exec(a->body, lanes);
        if (m_pending_copies > 0) check_no_pending(*m);
        if (m_wgmma.active() && m_wgmma.in_flight(m))
          fail("wgmma into " + m->name + " never waited for before the buffer's end");
        if (prev)
          m_mems[a->buffer.get()] = prev;
        else
          m_mems.erase(a->buffer.get());
        return;
      }
      case StmtKind::Store:
      case StmtKind::AtomicAdd: {
        bool atomic = s.kind() == StmtKind::AtomicAdd;
        const Tensor& buf = atomic ? s.as<AtomicAdd>()->buffer : s.as<Store>()->buffer;
        const auto& idx = atomic ? s.as<AtomicAdd>()->indices : s.as<Store>()->indices;
        const Expr& value = atomic ? s.as<AtomicAdd>()->value : s.as<Store>()->value;
        Mem& m = mem(buf);
        // All lanes evaluate before any writes, as one warp-wide instruction does.
        Vals v = eval(value, lanes);
        std::vector<int64_t> flat = addresses(m, idx, lanes, atomic ? "atomic add" : "store");
        if (m_opt.bank_conflicts && m.scope == MemScope::Shared && !atomic)
          count_banks(m, flat, lanes, "st.shared");
        for (size_t i = 0; i < lanes.size(); ++i) {
          int64_t a = flat[i];
          if (atomic) {
            if (m_rec) {
              record(m, a, lanes[i], false);
              record(m, a, lanes[i], true);
            }
            if (m_opt.check_uninitialized && !m.written[a])
              fail("atomic add to never-written " + m.name + element(m, a) + " by " +
                   who(lanes[i]));
            Val r;
            if (is_float(m.dtype))
              r.f = m.data[a].f + v[i].f;
            else
              r.i = static_cast<int64_t>(static_cast<uint64_t>(m.data[a].i) +
                                         static_cast<uint64_t>(v[i].i));
            m.data[a] = store_round(m.dtype, r);
          } else {
            track(m, a, lanes[i], true);
            m.data[a] = store_round(m.dtype, v[i]);
          }
          m.written[a] = 1;
        }
        return;
      }
      case StmtKind::Shuffle:
        exec_shuffle(*s.as<Shuffle>(), lanes);
        return;
      case StmtKind::IfThenElse: {
        const IfThenElse* n = s.as<IfThenElse>();
        Vals c = eval(n->cond, lanes);
        Lanes lt, lf;
        for (size_t i = 0; i < lanes.size(); ++i) (c[i].i ? lt : lf).push_back(lanes[i]);
        exec(n->then_case, lt);
        exec(n->else_case, lf);
        return;
      }
      case StmtKind::Seq:
        for (const Stmt& x : s.as<Seq>()->stmts) exec(x, lanes);
        return;
      case StmtKind::BlockBarrier: {
        std::vector<int64_t> count(static_cast<size_t>(m_grid), 0);
        for (int32_t l : lanes) ++count[l / m_block];
        for (int64_t b = 0; b < m_grid; ++b) {
          if (count[b] != 0 && count[b] != m_block)
            fail("block barrier in divergent code: block " + std::to_string(b) +
                 " reaches it with " + std::to_string(count[b]) + " of " + std::to_string(m_block) +
                 " threads");
          if (count[b]) ++m_block_epoch[b];
        }
        if (m_tl) m_tl->block_barrier(lanes);
        return;
      }
      case StmtKind::GridBarrier:
        if (m_tasks_on) {
          task_grid_barrier(lanes);
          return;
        }
        if (static_cast<int64_t>(lanes.size()) != m_run_lanes)
          fail("grid barrier in divergent code: " + std::to_string(lanes.size()) + " of " +
               std::to_string(m_run_lanes) + " threads reach it");
        if (!m_kernel->launch.cooperative) fail("grid barrier in a non-cooperative launch");
        ++m_grid_epoch;
        for (auto& e : m_block_epoch) ++e;
        if (m_tl) m_tl->grid_barrier();
        return;
      case StmtKind::FlagRelease:
        flag_release(*s.as<FlagRelease>(), lanes);
        return;
      case StmtKind::FlagWait:
        flag_wait(*s.as<FlagWait>(), lanes);
        return;
      case StmtKind::Stage: {
        const Stage* g = s.as<Stage>();
        if (m_rec && !m_tasks_on && m_opt.access_record->options.only_stage &&
            m_opt.access_record->options.stage >= 0 &&
            g->index != m_opt.access_record->options.stage)
          return;  // recording one stage only (AccessRecordOptions::only_stage)
        if (m_opt.progress)
          m_opt.progress(m_kernel->name, g->index, static_cast<int>(m_kernel->stages.size()));
        std::string saved = m_stage;
        const int saved_index = m_stage_index;
        m_stage = g->index < static_cast<int>(m_kernel->stages.size())
                      ? m_kernel->stages[g->index].name
                      : std::to_string(g->index);
        m_stage_index = g->index;
        exec(g->body, lanes);
        m_stage = saved;
        m_stage_index = saved_index;
        return;
      }
      case StmtKind::Evaluate:
        eval(s.as<Evaluate>()->value, lanes);
        return;
      case StmtKind::Comment:
        return;
      case StmtKind::TimelineRecord:
        if (m_tl) m_tl->record(*s.as<TimelineRecord>(), lanes);
        return;
      case StmtKind::FragmentAlloc:
        exec_fragment_alloc(*s.as<FragmentAlloc>(), lanes);
        return;
      case StmtKind::FragmentFill:
        exec_fragment_fill(*s.as<FragmentFill>(), lanes);
        return;
      case StmtKind::FragmentLoad:
        exec_fragment_load(*s.as<FragmentLoad>(), lanes);
        return;
      case StmtKind::FragmentMma:
        exec_fragment_mma(*s.as<FragmentMma>(), lanes);
        return;
      case StmtKind::FragmentStore:
        exec_fragment_store(*s.as<FragmentStore>(), lanes);
        return;
      case StmtKind::AsyncCopy:
        exec_async_copy(*s.as<AsyncCopy>(), lanes);
        return;
      case StmtKind::AsyncCommit:
        exec_async_commit(lanes);
        return;
      case StmtKind::AsyncWait:
        exec_async_wait(s.as<AsyncWait>()->pending, lanes);
        return;
      case StmtKind::MatrixLoad:
        exec_matrix_load(*s.as<MatrixLoad>(), lanes);
        return;
      case StmtKind::MmaSync:
        exec_mma_sync(*s.as<MmaSync>(), lanes);
        return;
      case StmtKind::WgmmaFence:
      case StmtKind::WgmmaCommit:
      case StmtKind::WgmmaWait:
      case StmtKind::WgmmaMma:
        exec_wgmma(s, lanes);
        return;
    }
  }

  /// All lanes of each warp present exchange at once; a warp reaching the shuffle with only some
  /// of its lanes is an error, as a full-mask __shfl_*_sync there is undefined on a GPU.
  void exec_shuffle(const loop::Shuffle& sh, const Lanes& lanes) {
    const int64_t w = loop::kWarpSize;
    if (m_block % w != 0)
      fail("warp shuffle in a block of " + std::to_string(m_block) + " threads, not whole warps");
    for (size_t i = 0; i < lanes.size();) {
      // Lanes are in ascending order: a whole warp is 32 consecutive entries from its lane 0.
      int32_t first = lanes[i];
      int64_t base = first - first % w;
      size_t n = 0;
      while (i + n < lanes.size() && lanes[i + n] < base + w) ++n;
      if (first != base || static_cast<int64_t>(n) != w)
        fail("warp shuffle in divergent code: warp " + std::to_string((base % m_block) / w) +
             " of block " + std::to_string(base / m_block) + " reaches it with " +
             std::to_string(n) + " of " + std::to_string(w) + " lanes");
      i += n;
    }
    Vals v = eval(sh.value, lanes), arg = eval(sh.arg, lanes);
    Vals got(lanes.size());
    for (size_t i = 0; i < lanes.size(); ++i) {
      const int64_t lane = lanes[i] % w, a = arg[i].i;
      int64_t src = lane;
      switch (sh.shuffle) {
        case loop::ShuffleKind::Xor:
          if (a < 0 || a >= w) fail("warp shuffle xor with lane mask " + std::to_string(a));
          src = lane ^ a;
          break;
        case loop::ShuffleKind::Down:
          if (a < 0 || a >= w) fail("warp shuffle down by " + std::to_string(a));
          src = lane + a < w ? lane + a : lane;
          break;
        case loop::ShuffleKind::Idx:
          if (a < 0) fail("warp shuffle from lane " + std::to_string(a));
          src = a % w;
          break;
      }
      got[i] = v[i - static_cast<size_t>(lane) + static_cast<size_t>(src)];
    }
    Mem& m = mem(sh.buffer);
    std::vector<int64_t> flat = addresses(m, sh.indices, lanes, "shuffle");
    for (size_t i = 0; i < lanes.size(); ++i) {
      track(m, flat[i], lanes[i], true);
      m.data[flat[i]] = store_round(m.dtype, got[i]);
      m.written[flat[i]] = 1;
    }
  }

  // ---- warp-collective matrix fragments ----

  /// One fragment array: a copy per warp of the grid, rows x cols elements per fragment.
  struct Frag {
    const loop::FragmentAlloc* node = nullptr;
    Mem mem;
    int64_t tile = 0;  ///< rows x cols
  };

  int64_t warp_copy(int32_t lane) const {
    return (lane / m_block) * (m_block / loop::kWarpSize) + (lane % m_block) / loop::kWarpSize;
  }

  /// The positions in `lanes` where each warp's 32 lanes start. Every warp present must be
  /// whole: a fragment operation is one instruction of the whole warp on a GPU.
  std::vector<size_t> whole_warps(const Lanes& lanes, const char* what) {
    const int64_t w = loop::kWarpSize;
    if (m_block % w != 0)
      fail(std::string(what) + " in a block of " + std::to_string(m_block) +
           " threads, not whole warps");
    std::vector<size_t> starts;
    for (size_t i = 0; i < lanes.size();) {
      int32_t first = lanes[i];
      int64_t base = first - first % w;
      size_t n = 0;
      while (i + n < lanes.size() && lanes[i + n] < base + w) ++n;
      if (first != base || static_cast<int64_t>(n) != w)
        fail(std::string(what) + " in divergent code: warp " +
             std::to_string((base % m_block) / w) + " of block " + std::to_string(base / m_block) +
             " reaches it with " + std::to_string(n) + " of " + std::to_string(w) + " lanes");
      starts.push_back(i);
      i += n;
    }
    return starts;
  }

  /// The value all 32 lanes of the warp starting at `at` agree on; an error when they differ.
  int64_t warp_uniform(const Vals& v, size_t at, const char* what, const std::string& operand) {
    for (size_t i = at; i < at + loop::kWarpSize; ++i)
      if (v[i].i != v[at].i)
        fail(std::string(what) + ": " + operand + " differs between the lanes of one warp (" +
             std::to_string(v[at].i) + " and " + std::to_string(v[i].i) + ")");
    return v[at].i;
  }

  Frag& frag(const Tensor& t, const char* what) {
    auto it = m_frags.find(t.get());
    if (it == m_frags.end()) fail(std::string(what) + " on " + t->name + ", not a fragment");
    return *it->second;
  }

  /// Flat element address of fragment `index` of the warp of `lane`, bounds-checked.
  int64_t frag_base(Frag& f, int64_t index, int32_t lane, const char* what) {
    if (index < 0 || index >= f.mem.shape[0])
      fail(std::string("out-of-bounds ") + what + " of fragment " + f.mem.name + "[" +
           std::to_string(index) + "] (" + std::to_string(f.mem.shape[0]) + " fragments) by " +
           who(lane));
    return warp_copy(lane) * f.mem.numel + index * f.tile;
  }

  /// tf32 keeps a 10-bit mantissa: round the f32 to nearest, ties away from zero, as
  /// wmma::__float_to_tf32 (cvt.rna.tf32.f32) does.
  static double round_tf32(double x) {
    float f = static_cast<float>(x);
    if (!std::isfinite(f)) return f;
    uint32_t bits;
    std::memcpy(&bits, &f, sizeof bits);
    bits = (bits + 0x1000u) & ~0x1fffu;
    std::memcpy(&f, &bits, sizeof bits);
    return f;
  }

  /// The flat addresses of a rows x cols tile of `m` from `origin` (one per element, row-major),
  /// bounds-checked per element, and the 32-byte alignment of the tile's first element that
  /// load_matrix_sync and store_matrix_sync require.
  std::vector<int64_t> tile_addresses(Mem& m, const std::vector<int64_t>& origin, int64_t rows,
                                      int64_t cols, int32_t lane, const char* what) {
    const size_t r = m.shape.size();
    std::vector<int64_t> out;
    out.reserve(static_cast<size_t>(rows * cols));
    std::vector<int64_t> idx = origin;
    for (int64_t i = 0; i < rows; ++i)
      for (int64_t j = 0; j < cols; ++j) {
        idx[r - 2] = origin[r - 2] + i;
        idx[r - 1] = origin[r - 1] + j;
        int64_t a = 0;
        for (size_t d = 0; d < r; ++d) {
          if (idx[d] < 0 || idx[d] >= m.shape[d]) {
            std::string s = "[";
            for (size_t k = 0; k < r; ++k) s += (k ? ", " : "") + std::to_string(idx[k]);
            fail(std::string("out-of-bounds ") + what + " of " + scope_name(m.scope) + " " +
                 m.name + s + "] (shape " + shape_str(m.shape) + ", tile " + std::to_string(rows) +
                 "x" + std::to_string(cols) + ") by warp of " + who(lane));
          }
          a = a * m.shape[d] + idx[d];
        }
        out.push_back(a + copy_of(m, lane) * m.numel);
      }
    int64_t byte = (out[0] % m.numel) * dtype_size(m.dtype) + arena_offset(m);
    if (byte % 32 != 0)
      fail(std::string(what) + " of " + m.name + ": tile address is " + std::to_string(byte) +
           " bytes from the buffer's base, not 32-byte aligned (" + who(lane) + ")");
    return out;
  }

  /// Where a shared buffer starts in the kernel's arena (the arena itself is aligned).
  int64_t arena_offset(const Mem& m) const {
    if (m.scope != MemScope::Shared) return 0;
    for (const loop::SharedSlot& slot : m_kernel->shared)
      if (slot.buffer->name == m.name) return slot.offset;
    return 0;
  }

  std::vector<int64_t> eval_origin(const std::vector<Expr>& origin, const Lanes& lanes, size_t at,
                                   const char* what, std::vector<Vals>& cache) {
    if (cache.empty())
      for (const Expr& e : origin) cache.push_back(eval(e, lanes));
    std::vector<int64_t> o;
    for (size_t d = 0; d < origin.size(); ++d)
      o.push_back(warp_uniform(cache[d], at, what, "tile origin " + te::print(origin[d])));
    return o;
  }

  void exec_fragment_alloc(const loop::FragmentAlloc& a, const Lanes& lanes) {
    // One instance per allocation shared by the blocks when they run as tasks (see Allocate).
    std::unique_ptr<Frag> own;
    std::unique_ptr<Frag>* slot = m_tasks_on ? &m_task_frags[&a] : &own;
    if (!*slot) {
      auto f = std::make_unique<Frag>();
      f->node = &a;
      f->tile = a.rows() * a.cols();
      Mem& m = f->mem;
      m.name = a.buffer->name;
      m.dtype = a.buffer->dtype;
      m.shape = a.buffer->shape;
      m.numel = a.buffer->shape[0] * f->tile;
      m.scope = MemScope::Local;
      m.copies = m_grid * std::max<int64_t>(m_block / loop::kWarpSize, 1);
      m.init(false);
      *slot = std::move(f);
    }
    auto prev = m_frags.find(a.buffer.get());
    Frag* saved = prev != m_frags.end() ? prev->second : nullptr;
    m_frags[a.buffer.get()] = slot->get();
    exec(a.body, lanes);
    if (saved)
      m_frags[a.buffer.get()] = saved;
    else
      m_frags.erase(a.buffer.get());
  }

  void exec_fragment_fill(const loop::FragmentFill& n, const Lanes& lanes) {
    const char* what = "fill_fragment";
    std::vector<size_t> warps = whole_warps(lanes, what);
    Frag& f = frag(n.fragment, what);
    Vals idx = eval(n.index, lanes), val = eval(n.value, lanes);
    for (size_t at : warps) {
      int64_t base = frag_base(f, warp_uniform(idx, at, what, "fragment index"), lanes[at], what);
      Val v = store_round(f.mem.dtype, val[at]);
      for (int64_t e = 0; e < f.tile; ++e) {
        f.mem.data[base + e] = v;
        f.mem.written[base + e] = 1;
      }
    }
  }

  void exec_fragment_load(const loop::FragmentLoad& n, const Lanes& lanes) {
    const char* what = "load_matrix_sync";
    std::vector<size_t> warps = whole_warps(lanes, what);
    Frag& f = frag(n.fragment, what);
    Mem& src = mem(n.source);
    Vals idx = eval(n.index, lanes);
    std::vector<Vals> cache;
    const bool tf32 = f.node->type == loop::MmaType::TF32;
    for (size_t at : warps) {
      int32_t lane0 = lanes[at];
      int64_t base = frag_base(f, warp_uniform(idx, at, what, "fragment index"), lane0, what);
      std::vector<int64_t> origin = eval_origin(n.origin, lanes, at, what, cache);
      std::vector<int64_t> addr =
          tile_addresses(src, origin, f.node->rows(), f.node->cols(), lane0, what);
      for (size_t e = 0; e < addr.size(); ++e) {
        const int32_t lane = lane0 + static_cast<int32_t>(e % loop::kWarpSize);
        if (m_opt.check_uninitialized && !src.written[addr[e]])
          fail("read of never-written " + src.name + element(src, addr[e]) + " by " + what +
               " of " + who(lane));
        track(src, addr[e], lane, false);
        Val v = src.data[addr[e]];
        if (tf32) v.f = round_tf32(v.f);
        f.mem.data[base + static_cast<int64_t>(e)] = v;
        f.mem.written[base + static_cast<int64_t>(e)] = 1;
      }
    }
  }

  void exec_fragment_mma(const loop::FragmentMma& n, const Lanes& lanes) {
    const char* what = "mma_sync";
    std::vector<size_t> warps = whole_warps(lanes, what);
    Frag &d = frag(n.d, what), &a = frag(n.a, what), &b = frag(n.b, what), &c = frag(n.c, what);
    Vals di = eval(n.di, lanes), ai = eval(n.ai, lanes), bi = eval(n.bi, lanes),
         ci = eval(n.ci, lanes);
    const int64_t M = a.node->m, N = a.node->n, K = a.node->k;
    std::vector<float> out(static_cast<size_t>(M * N));
    for (size_t at : warps) {
      int32_t lane = lanes[at];
      int64_t pa = frag_base(a, warp_uniform(ai, at, what, "a index"), lane, what);
      int64_t pb = frag_base(b, warp_uniform(bi, at, what, "b index"), lane, what);
      int64_t pc = frag_base(c, warp_uniform(ci, at, what, "c index"), lane, what);
      int64_t pd = frag_base(d, warp_uniform(di, at, what, "d index"), lane, what);
      auto check = [&](Frag& f, int64_t p, int64_t count) {
        if (!m_opt.check_uninitialized) return;
        for (int64_t e = 0; e < count; ++e)
          if (!f.mem.written[p + e])
            fail(std::string(what) + " reads fragment " + f.mem.name +
                 " before it was loaded or filled (" + who(lane) + ")");
      };
      check(a, pa, M * K);
      check(b, pb, K * N);
      check(c, pc, M * N);
      // Operands are exact in f32 (f16, bf16 and tf32 products fit its mantissa); the sums
      // round in f32, in k order.
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          float acc = static_cast<float>(c.mem.data[pc + i * N + j].f);
          for (int64_t k = 0; k < K; ++k) {
            float prod = static_cast<float>(a.mem.data[pa + i * K + k].f) *
                         static_cast<float>(b.mem.data[pb + k * N + j].f);
            acc = acc + prod;
          }
          out[static_cast<size_t>(i * N + j)] = acc;
        }
      for (int64_t e = 0; e < M * N; ++e) {
        d.mem.data[pd + e].f = out[static_cast<size_t>(e)];
        d.mem.written[pd + e] = 1;
      }
    }
  }

  // ---- Ampere-class warp statements (semantics in emulate/mma_sync.cpp) ----

  /// One cp.async in flight: the values read at issue, written to dst when its group completes.
  struct PendingCopy {
    Mem* dst;
    int64_t addr;
    int32_t lane;
    std::vector<Val> values;
  };
  std::vector<std::vector<PendingCopy>> m_open_copies;  ///< per lane: not yet committed
  std::vector<std::vector<std::vector<PendingCopy>>> m_copy_groups;  ///< per lane: committed
  int64_t m_pending_copies = 0;

  /// Counts the bank wavefronts of a warp-wide shared access (flat addresses per lane).
  void count_banks(const Mem& m, const std::vector<int64_t>& flat, const Lanes& lanes,
                   const char* kind, int64_t elements = 1) {
    const int64_t es = dtype_size(m.dtype);
    BankStats& st =
        (*m_opt.bank_conflicts)[m_kernel->name + "/" + m_stage][std::string(kind) + " " + m.name];
    for (size_t i = 0; i < lanes.size();) {
      const int32_t warp = lanes[i] / static_cast<int32_t>(loop::kWarpSize);
      std::vector<int64_t> addr(loop::kWarpSize, -1);
      for (; i < lanes.size() && lanes[i] / loop::kWarpSize == warp; ++i)
        addr[lanes[i] % loop::kWarpSize] = m.base + (flat[i] % m.numel) * es;
      int64_t ideal = 0;
      const int64_t w = mma::wavefronts(addr, es * elements, ideal);
      ++st.accesses;
      st.wavefronts += w;
      st.conflicts += w - ideal;
    }
  }

  void check_no_pending(const Mem& m) {
    for (size_t l = 0; l < m_copy_groups.size(); ++l) {
      bool hit = false;
      for (const PendingCopy& c : m_open_copies[l]) hit |= c.dst == &m;
      for (const auto& g : m_copy_groups[l])
        for (const PendingCopy& c : g) hit |= c.dst == &m;
      if (hit)
        fail("cp.async into " + m.name + " by " + who(static_cast<int32_t>(l)) +
             " never waited for before the buffer's end");
    }
  }

  void exec_async_copy(const loop::AsyncCopy& n, const Lanes& lanes) {
    if (m_open_copies.empty()) {
      m_open_copies.resize(static_cast<size_t>(m_lanes));
      m_copy_groups.resize(static_cast<size_t>(m_lanes));
    }
    Mem &dst = mem(n.dst), &src = mem(n.src);
    const int64_t k = n.elements();
    Lanes on = lanes, off;
    if (n.pred.defined()) {
      Vals p = eval(n.pred, lanes);
      on.clear();
      for (size_t i = 0; i < lanes.size(); ++i) (p[i].i ? on : off).push_back(lanes[i]);
    }
    auto aligned = [&](const Mem& m, int64_t a, int32_t lane, const char* side) {
      if (((a % m.numel) * dtype_size(m.dtype) + m.base) % n.bytes != 0 ||
          a % m.numel + k > m.numel)
        fail("cp.async " + std::string(side) + " " + m.name + element(m, a) + " by " + who(lane) +
             " is not " + std::to_string(n.bytes) + "-byte aligned or runs past the buffer");
    };
    std::vector<int64_t> sa =
        on.empty() ? std::vector<int64_t>() : addresses(src, n.src_index, on, "cp.async read");
    std::vector<int64_t> da = addresses(dst, n.dst_index, lanes, "cp.async write");
    if (m_opt.bank_conflicts) count_banks(dst, da, lanes, "cp.async", k);
    size_t j = 0;
    for (size_t i = 0; i < lanes.size(); ++i) {
      const int32_t lane = lanes[i];
      aligned(dst, da[i], lane, "to");
      PendingCopy c{&dst, da[i], lane, std::vector<Val>(static_cast<size_t>(k), Val{})};
      if (j < on.size() && on[j] == lane) {
        const int64_t a = sa[j++];
        aligned(src, a, lane, "from");
        for (int64_t e = 0; e < k; ++e) {
          if (m_opt.check_uninitialized && !src.written[a + e])
            fail("cp.async of never-written " + src.name + element(src, a + e) + " by " +
                 who(lane));
          track(src, a + e, lane, false);
          c.values[static_cast<size_t>(e)] = src.data[a + e];
        }
      }
      m_open_copies[static_cast<size_t>(lane)].push_back(std::move(c));
      ++m_pending_copies;
    }
  }

  void exec_async_commit(const Lanes& lanes) {
    if (m_open_copies.empty()) return;
    for (int32_t l : lanes) {
      // An empty group still counts for wait_group, as on the GPU.
      m_copy_groups[static_cast<size_t>(l)].push_back(
          std::move(m_open_copies[static_cast<size_t>(l)]));
      m_open_copies[static_cast<size_t>(l)].clear();
    }
  }

  void exec_async_wait(int64_t pending, const Lanes& lanes) {
    if (m_copy_groups.empty()) return;
    for (int32_t l : lanes) {
      auto& groups = m_copy_groups[static_cast<size_t>(l)];
      while (static_cast<int64_t>(groups.size()) > pending) {
        for (const PendingCopy& c : groups.front()) {
          for (size_t e = 0; e < c.values.size(); ++e) {
            const int64_t a = c.addr + static_cast<int64_t>(e);
            track(*c.dst, a, c.lane, true);
            c.dst->data[a] = c.values[e];
            c.dst->written[a] = 1;
          }
          --m_pending_copies;
        }
        groups.erase(groups.begin());
      }
    }
  }

  /// The flat address of a Local register buffer's element `off` for `lane`, bounds-checked.
  int64_t reg(const Mem& m, int64_t off, int32_t lane, const char* what) {
    if (off < 0 || off >= m.numel)
      fail(std::string(what) + ": register " + m.name + "[" + std::to_string(off) +
           "] outside its " + std::to_string(m.numel) + " elements (" + who(lane) + ")");
    return static_cast<int64_t>(lane) * m.numel + off;
  }

  void exec_matrix_load(const loop::MatrixLoad& n, const Lanes& lanes) {
    const char* what = "ldmatrix";
    std::vector<size_t> warps = whole_warps(lanes, what);
    Mem &src = mem(n.src), &dst = mem(n.dst);
    const int64_t es = dtype_size(src.dtype), per_row = 16 / es;
    Vals off = eval(n.dst_offset, lanes);
    std::vector<int64_t> sa = addresses(src, n.src_index, lanes, what);
    for (size_t at : warps) {
      const int64_t o = warp_uniform(off, at, what, "register offset");
      std::vector<int64_t> rows(static_cast<size_t>(n.count * 8));
      for (int64_t r = 0; r < n.count * 8; ++r) {
        const int64_t a = sa[at + static_cast<size_t>(r)];
        const int32_t lane = lanes[at + static_cast<size_t>(r)];
        rows[static_cast<size_t>(r)] = src.base + (a % src.numel) * es;
        if (rows[static_cast<size_t>(r)] % 16 != 0 || a % src.numel + per_row > src.numel)
          fail("ldmatrix row " + src.name + element(src, a) + " of " + who(lane) +
               " is not 16-byte aligned or runs past the buffer");
        for (int64_t e = 0; e < per_row; ++e) {
          if (m_opt.check_uninitialized && !src.written[a + e])
            fail("ldmatrix of never-written " + src.name + element(src, a + e) + " by " +
                 who(lane));
          track(src, a + e, lane, false);
        }
      }
      if (m_opt.bank_conflicts) {
        int64_t ideal = 0;
        const int64_t w = mma::ldmatrix_wavefronts(rows, n.count, ideal);
        BankStats& st =
            (*m_opt.bank_conflicts)[m_kernel->name + "/" + m_stage]["ldmatrix " + src.name];
        ++st.accesses;
        st.wavefronts += w;
        st.conflicts += w - ideal;
      }
      const int halves = es == 2 ? 2 : 1;
      for (int l = 0; l < 32; ++l) {
        const int32_t lane = lanes[at + static_cast<size_t>(l)];
        for (int64_t i = 0; i < n.count; ++i)
          for (int h = 0; h < halves; ++h) {
            auto [r, c] = mma::ldmatrix_source(l, h, n.trans, static_cast<int>(es));
            const int64_t a = sa[at + static_cast<size_t>(i * 8 + r)] + c;
            const int64_t d = reg(dst, o + i * halves + h, lane, what);
            dst.data[d] = src.data[a];
            dst.written[d] = 1;
          }
      }
    }
  }

  void exec_mma_sync(const loop::MmaSync& n, const Lanes& lanes) {
    const char* what = "mma.sync";
    std::vector<size_t> warps = whole_warps(lanes, what);
    using loop::FragmentRole;
    struct Op {
      Mem* m;
      Vals off;
      int64_t count;
    };
    auto op = [&](const Tensor& t, const Expr& o, FragmentRole role) {
      return Op{&mem(t), eval(o, lanes), loop::mma_sync_elements(n.type, role)};
    };
    Op a = op(n.a, n.a_offset, FragmentRole::MatrixA),
       b = op(n.b, n.b_offset, FragmentRole::MatrixB),
       c = op(n.c, n.c_offset, FragmentRole::Accumulator),
       d = op(n.d, n.d_offset, FragmentRole::Accumulator);
    std::vector<double> va, vb, vc, vd;
    for (size_t at : warps) {
      auto gather = [&](const Op& x, std::vector<double>& v, const char* name) {
        const int64_t o = warp_uniform(x.off, at, what, std::string(name) + " offset");
        v.assign(static_cast<size_t>(32 * x.count), 0.0);
        for (int l = 0; l < 32; ++l)
          for (int64_t i = 0; i < x.count; ++i) {
            const int32_t lane = lanes[at + static_cast<size_t>(l)];
            const int64_t r = reg(*x.m, o + i, lane, what);
            if (m_opt.check_uninitialized && !x.m->written[r])
              fail("mma.sync reads register " + x.m->name + "[" + std::to_string(o + i) +
                   "] before it was written (" + who(lane) + ")");
            v[static_cast<size_t>(l * x.count + i)] = x.m->data[r].f;
          }
        return o;
      };
      gather(a, va, "a");
      gather(b, vb, "b");
      gather(c, vc, "c");
      const int64_t od = warp_uniform(d.off, at, what, "d offset");
      mma::warp_mma(n.type, va, vb, vc, vd);
      for (int l = 0; l < 32; ++l)
        for (int64_t i = 0; i < 4; ++i) {
          const int64_t r = reg(*d.m, od + i, lanes[at + static_cast<size_t>(l)], what);
          d.m->data[r].f = vd[static_cast<size_t>(l * 4 + i)];
          d.m->written[r] = 1;
        }
    }
  }

  // ---- Hopper warpgroup MMA: semantics in wgmma.h ----
  wgmma::Queue m_wgmma;

  /// The positions in `lanes` where each warpgroup's 128 threads start; all four warps whole.
  std::vector<size_t> whole_warpgroups(const Lanes& lanes, const char* what) {
    if (m_block % wgmma::kWarpgroup != 0)
      fail(std::string(what) + " in a block of " + std::to_string(m_block) +
           " threads, not whole warpgroups");
    std::vector<size_t> warps = whole_warps(lanes, what), starts;
    for (size_t i = 0; i < warps.size(); i += 4) {
      const int32_t first = lanes[warps[i]];
      if ((first % m_block) % wgmma::kWarpgroup != 0 || i + 3 >= warps.size() ||
          lanes[warps[i + 3]] != first + 3 * loop::kWarpSize)
        fail(std::string(what) + " reached by only some warps of a warpgroup (" + who(first) + ")");
      starts.push_back(warps[i]);
    }
    if (!m_wgmma.active()) m_wgmma.reset(static_cast<size_t>(m_lanes));
    return starts;
  }

  void exec_wgmma(const loop::Stmt& s, const Lanes& lanes) {
    const char* what = "wgmma";
    std::vector<size_t> groups = whole_warpgroups(lanes, what);
    if (const loop::WgmmaMma* n = s.as<loop::WgmmaMma>()) return exec_wgmma_mma(*n, lanes, groups);
    for (int32_t l : lanes) {
      if (s.kind() == loop::StmtKind::WgmmaFence) m_wgmma.set_fenced(l, true);
      if (s.kind() == loop::StmtKind::WgmmaCommit) m_wgmma.commit(l);
      if (s.kind() != loop::StmtKind::WgmmaWait) continue;
      for (const wgmma::Queue::Write& w : m_wgmma.wait(l, s.as<loop::WgmmaWait>()->pending)) {
        Mem* m = const_cast<Mem*>(static_cast<const Mem*>(w.buffer));
        m->data[w.reg].f = w.value;
        m->written[w.reg] = 1;
      }
      m_wgmma.set_fenced(l, false);  // ordinary code may touch the registers now
    }
  }

  /// One warpgroup operand (64 x 16 of A, or n x 16 of B seen K-major) read through its
  /// descriptor: out[row * 16 + k].
  void wgmma_operand(Mem& m, const std::vector<int64_t>& flat, size_t at, int32_t lane0,
                     int64_t rows, int64_t lbo, int64_t sbo, std::vector<double>& out) {
    const char* what = "wgmma";
    for (size_t j = at; j < at + wgmma::kWarpgroup; ++j)
      if (flat[j] != flat[at]) fail("wgmma: the descriptor of " + m.name + " differs by thread");
    const int64_t start = flat[at], es = dtype_size(m.dtype);
    if ((m.base + (start % m.numel) * es) % 16 != 0)
      fail("wgmma descriptor start " + m.name + element(m, start) + " is not 16-byte aligned");
    out.assign(static_cast<size_t>(rows * 16), 0.0);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < 16; ++k) {
        const int64_t off = wgmma::operand_byte_offset(r, k, lbo, sbo) / es;
        if (start % m.numel + off >= m.numel)
          fail(std::string(what) + " operand " + m.name + " read past the buffer (row " +
               std::to_string(r) + ", k " + std::to_string(k) + ")");
        const int64_t a = start + off;
        if (m_opt.check_uninitialized && !m.written[a])
          fail("wgmma of never-written " + m.name + element(m, a));
        track(m, a, lane0, false);
        out[static_cast<size_t>(r * 16 + k)] = m.data[a].f;
      }
  }

  void exec_wgmma_mma(const loop::WgmmaMma& n, const Lanes& lanes,
                      const std::vector<size_t>& groups) {
    const char* what = "wgmma.mma_async";
    Mem &d = mem(n.d), &a = mem(n.a), &b = mem(n.b);
    Vals off = eval(n.d_offset, lanes);
    std::vector<int64_t> fa = addresses(a, n.a_index, lanes, what),
                         fb = addresses(b, n.b_index, lanes, what);
    const int64_t per = n.n / 2;
    std::vector<double> va, vbt, vb(static_cast<size_t>(16 * n.n)), vc, vd;
    for (size_t at : groups) {
      for (size_t j = at; j < at + wgmma::kWarpgroup; ++j)
        if (!m_wgmma.fenced(lanes[j]))
          fail(std::string(what) + " without a wgmma.fence after the start or the last " +
               "wgmma.wait_group (" + who(lanes[j]) + ")");
      int64_t o = warp_uniform(off, at, what, "d offset");
      for (size_t w = 1; w < 4; ++w)
        if (warp_uniform(off, at + w * loop::kWarpSize, what, "d offset") != o)
          fail(std::string(what) + ": d offset differs between the warps of a warpgroup");
      wgmma_operand(a, fa, at, lanes[at], 64, n.a_lbo, n.a_sbo, va);
      wgmma_operand(b, fb, at, lanes[at], n.n, n.b_lbo, n.b_sbo, vbt);
      for (int64_t c = 0; c < n.n; ++c)
        for (int64_t k = 0; k < 16; ++k)
          vb[static_cast<size_t>(k * n.n + c)] = vbt[static_cast<size_t>(c * 16 + k)];
      vc.assign(static_cast<size_t>(wgmma::kWarpgroup * per), 0.0);
      for (int t = 0; t < wgmma::kWarpgroup && n.accumulate; ++t)
        for (int64_t i = 0; i < per; ++i) {
          const int32_t lane = lanes[at + static_cast<size_t>(t)];
          const int64_t r = reg(d, o + i, lane, what);
          const double* p = m_wgmma.latest(lane, &d, r);
          if (!p && m_opt.check_uninitialized && !d.written[r])
            fail(std::string(what) + " accumulates into register " + d.name + "[" +
                 std::to_string(o + i) + "] before it was written (" + who(lane) + ")");
          vc[static_cast<size_t>(t * per + i)] = p ? *p : d.data[r].f;
        }
      wgmma::warpgroup_mma(n.n, va, vb, vc, vd);
      for (int t = 0; t < wgmma::kWarpgroup; ++t)
        for (int64_t i = 0; i < per; ++i) {
          const int32_t lane = lanes[at + static_cast<size_t>(t)];
          m_wgmma.issue(lane,
                        {&d, reg(d, o + i, lane, what), vd[static_cast<size_t>(t * per + i)]});
        }
    }
  }

  void exec_fragment_store(const loop::FragmentStore& n, const Lanes& lanes) {
    const char* what = "store_matrix_sync";
    std::vector<size_t> warps = whole_warps(lanes, what);
    Frag& f = frag(n.fragment, what);
    Mem& dst = mem(n.dest);
    Vals idx = eval(n.index, lanes);
    std::vector<Vals> cache;
    for (size_t at : warps) {
      int32_t lane0 = lanes[at];
      int64_t base = frag_base(f, warp_uniform(idx, at, what, "fragment index"), lane0, what);
      std::vector<int64_t> origin = eval_origin(n.origin, lanes, at, what, cache);
      std::vector<int64_t> addr =
          tile_addresses(dst, origin, f.node->rows(), f.node->cols(), lane0, what);
      for (size_t e = 0; e < addr.size(); ++e) {
        const int32_t lane = lane0 + static_cast<int32_t>(e % loop::kWarpSize);
        if (m_opt.check_uninitialized && !f.mem.written[base + static_cast<int64_t>(e)])
          fail(std::string(what) + " of fragment " + f.mem.name + " before it was computed (" +
               who(lane) + ")");
        track(dst, addr[e], lane, true);
        dst.data[addr[e]] = store_round(dst.dtype, f.mem.data[base + static_cast<int64_t>(e)]);
        dst.written[addr[e]] = 1;
      }
    }
  }

 public:
  /// The clock of the running kernel's timeline records; null when it has none.
  std::unique_ptr<TimelineClock> m_tl;

 private:
  const EmulateOptions& m_opt;
  const loop::Kernel* m_kernel = nullptr;
  std::string m_stage;
  int m_stage_index = -1;  ///< the running Stage's index, -1 outside one

  // ---- access recording (emulate/access_record.h) ----
  std::unique_ptr<AccessRecorder> m_rec;  ///< null: not recording this kernel
  int64_t m_rec_run = 0;                  ///< kernel runs recorded (Mem::rec_run)
  int32_t m_rec_epoch0 = 0;               ///< m_grid_epoch when the kernel started

  void start_recording(const loop::Kernel& k) {
    m_rec.reset();
    m_stage_index = -1;
    AccessRecord* r = m_opt.access_record;
    if (!r || (!r->options.kernel.empty() && r->options.kernel != k.name)) return;
    std::vector<std::string> names, schedules;
    for (const loop::StageInfo& st : k.stages) {
      names.push_back(st.name);
      schedules.push_back(st.schedule);
    }
    m_rec = std::make_unique<AccessRecorder>(r->options, k.name, m_grid, m_block, std::move(names),
                                             std::move(schedules));
    ++m_rec_run;
    m_rec_epoch0 = m_grid_epoch;
    // Kernel tensors in kernel order (inputs, then outputs), so the record lists them so.
    for (const Tensor& t : k.inputs) record_slot(*m_mems.at(t.get()));
    for (const Tensor& t : k.outputs) record_slot(*m_mems.at(t.get()));
  }

  int32_t record_slot(Mem& m) {
    if (m.rec_run == m_rec_run) return m.rec_slot;
    TensorRole role = TensorRole::Scratch;
    int64_t shared_bytes = 0;
    if (m.scope == MemScope::Shared) {
      role = TensorRole::Shared;
      shared_bytes = m.numel * dtype_size(m.dtype);
      for (const loop::SharedSlot& sl : m_kernel->shared)
        if (sl.buffer->name == m.name) shared_bytes = sl.bytes;
    } else {
      for (const Tensor& t : m_kernel->inputs)
        if (t->name == m.name) role = TensorRole::Input;
      for (const Tensor& t : m_kernel->outputs)
        if (t->name == m.name) role = TensorRole::Output;
      if (role == TensorRole::Scratch && globals.count(m.name)) role = TensorRole::Input;
    }
    m.rec_slot = m_rec->add_tensor(m.name, m.shape, m.dtype, role, m.numel, shared_bytes);
    m.rec_run = m_rec_run;
    return m.rec_slot;
  }

  /// One element access for the recorder (local memory and the timeline buffer are not
  /// recorded). Out of line, so that the accesses' paths stay as small as without recording.
  [[gnu::noinline, gnu::cold]] void record(Mem& m, int64_t a, int32_t lane, bool write) {
    if (m.scope == MemScope::Local || !m_rec->records(m_stage_index)) return;
    const int32_t slot = record_slot(m);
    m_rec->access(slot, a % m.numel, lane, write, m_grid_epoch - m_rec_epoch0, m_stage_index);
  }
  int64_t m_grid = 1, m_block = 1, m_lanes = 1;
  int64_t m_run_lanes = 1;  ///< the threads that run (m_lanes unless recording some blocks)
  std::unordered_map<const te::TensorNode*, Mem*> m_mems;
  std::unordered_map<const te::ExprNode*, VarSlot> m_vars;
  std::unordered_map<const te::TensorNode*, Frag*> m_frags;
  std::vector<int32_t> m_block_epoch;
  int32_t m_grid_epoch = 0;

  // ---- blocks as cooperative tasks (kernels with per-tile flags) ----
  //
  // Each block runs on a thread of its own, but only one runs at a time: the scheduler hands
  // the machine to a block, which runs until it releases a counter (then the next block in
  // order gets a turn, so blocks advance stage by stage as in lockstep), waits on a counter
  // that is not met or at a grid barrier (it is resumed once that is met), or finishes. The
  // handover goes through m_mu, which orders every access to the machine's state.
  //
  // Deadlock freedom of what the compiler emits: all blocks of a cooperative launch are
  // co-resident (its grid is checked against the device's occupancy), so a waiting block never
  // keeps a producer from being scheduled; and every counter a stage waits on is released by
  // earlier stages only (loop::verify checks it), so the waits-for relation follows stage order
  // and has no cycle: some block can always run until all are done. A wait that can never be
  // met (a missing release, a target above the releases a run makes) leaves every block waiting
  // or done, which the scheduler reports as a deadlock.
  //
  // Happens-before through counters is tracked with vector clocks: a block's own entry counts
  // its releases; a release joins the block's clock into the counter's, a met wait joins the
  // counters' clocks into the waiting block's. A store by block p made after r of p's releases
  // is ordered before a read by block b when b's clock has more than r releases of p.

  enum class TaskState : uint8_t { Fresh, Ready, Waiting, Done };
  struct Task {
    int32_t block = 0;
    TaskState state = TaskState::Fresh;
    std::thread thread;
    std::condition_variable cv;
    // What a Waiting task waits for: counters [first, first + count) of `flags` reaching
    // `target`, or (barrier_gen >= 0) the grid barrier of that generation to complete.
    Mem* flags = nullptr;
    int64_t first = 0, count = 0, target = 0;
    int64_t barrier_gen = -1;
    // Its part of the machine's state while another block runs.
    std::unordered_map<const te::TensorNode*, Mem*> mems;
    std::unordered_map<const te::TensorNode*, Frag*> frags;
    std::string stage;
    int stage_index = -1;
    std::exception_ptr error;
  };
  struct Abort {};  ///< unwinds a parked block's thread when the run ends early

  bool m_tasks_on = false;
  std::vector<std::unique_ptr<Task>> m_tasks;
  int32_t m_current = -1;  ///< the block holding the machine, -1 the scheduler
  bool m_abort = false;
  std::mutex m_mu;
  std::condition_variable m_sched_cv;
  std::unordered_map<const loop::Allocate*, std::unique_ptr<Mem>> m_task_allocs;
  std::unordered_map<const loop::FragmentAlloc*, std::unique_ptr<Frag>> m_task_frags;
  std::vector<std::vector<int32_t>> m_clock;  ///< per block: releases of each block it saw
  /// This run's releases of one counter in order: the value each left and the join of the
  /// releasing blocks' clocks up to it. A wait for a count T acquires the releases up to the
  /// one that made the count T (an acquire load that reads T synchronizes with it and, through
  /// the atomic adds before it, with those), nothing later, and nothing from counts left by an
  /// earlier run: a stale epoch then shows as a race.
  struct FlagHistory {
    std::vector<int64_t> value;
    std::vector<std::vector<int32_t>> clock;
  };
  std::unordered_map<const Mem*, std::vector<FlagHistory>> m_flag_clock;
  int64_t m_barrier_arrived = 0, m_barrier_gen = 0;

  int32_t releases(int32_t block) const { return m_clock[block][block]; }
  /// Whether block b has acquired a release of block p made after p's first `rel` releases.
  bool ordered(int32_t b, int32_t p, int32_t rel) const { return m_clock[b][p] > rel; }

  void run_tasks() {
    m_tasks_on = true;
    m_clock.assign(static_cast<size_t>(m_grid), std::vector<int32_t>(m_grid, 0));
    m_flag_clock.clear();
    m_barrier_arrived = m_barrier_gen = 0;
    m_tasks.clear();
    for (int64_t b = 0; b < m_grid; ++b) {
      auto t = std::make_unique<Task>();
      t->block = static_cast<int32_t>(b);
      t->mems = m_mems;
      m_tasks.push_back(std::move(t));
    }
    struct Cleanup {
      Machine& m;
      ~Cleanup() { m.end_tasks(); }
    } cleanup{*this};
    size_t next = 0;
    for (;;) {
      int64_t pick = -1;
      bool all_done = true;
      for (size_t i = 0; i < m_tasks.size() && pick < 0; ++i) {
        Task& t = *m_tasks[(next + i) % m_tasks.size()];
        all_done &= t.state == TaskState::Done;
        if (t.state == TaskState::Fresh || t.state == TaskState::Ready ||
            (t.state == TaskState::Waiting && met(t)))
          pick = t.block;
      }
      if (pick < 0) {
        for (const auto& t : m_tasks) all_done &= t->state == TaskState::Done;
        if (all_done) return;
        deadlock();
      }
      resume(*m_tasks[pick]);
      if (m_tasks[pick]->error) std::rethrow_exception(m_tasks[pick]->error);
      next = static_cast<size_t>(pick) + 1;
    }
  }

  void end_tasks() {
    {
      std::lock_guard<std::mutex> lk(m_mu);
      m_abort = true;
      for (auto& t : m_tasks) t->cv.notify_one();
    }
    for (auto& t : m_tasks)
      if (t->thread.joinable()) t->thread.join();
    m_tasks.clear();
    m_task_allocs.clear();
    m_task_frags.clear();
    m_abort = false;
    m_tasks_on = false;
    m_current = -1;
  }

  bool met(const Task& t) const {
    if (t.barrier_gen >= 0) return m_barrier_gen > t.barrier_gen;
    for (int64_t i = t.first; i < t.first + t.count; ++i)
      if (t.flags->data[i].i < t.target) return false;
    return true;
  }

  /// Hands the machine to t and waits until it yields or finishes.
  void resume(Task& t) {
    std::unique_lock<std::mutex> lk(m_mu);
    m_current = t.block;
    if (t.state == TaskState::Fresh) {
      t.state = TaskState::Ready;
      t.thread = std::thread([this, &t] { task_main(t); });
    } else {
      t.cv.notify_one();
    }
    m_sched_cv.wait(lk, [&] { return m_current == -1; });
  }

  void task_main(Task& t) {
    {
      std::unique_lock<std::mutex> lk(m_mu);
      t.cv.wait(lk, [&] { return m_current == t.block || m_abort; });
      if (m_abort) return;
    }
    load(t);
    try {
      Lanes lanes(static_cast<size_t>(m_block));
      for (int64_t i = 0; i < m_block; ++i) lanes[i] = static_cast<int32_t>(t.block * m_block + i);
      exec(m_kernel->body, lanes);
    } catch (const Abort&) {
      return;
    } catch (...) {
      t.error = std::current_exception();
    }
    std::lock_guard<std::mutex> lk(m_mu);
    t.state = TaskState::Done;
    m_current = -1;
    m_sched_cv.notify_one();
  }

  void load(Task& t) {
    m_mems = std::move(t.mems);
    m_frags = std::move(t.frags);
    m_stage = std::move(t.stage);
    m_stage_index = t.stage_index;
    t.state = TaskState::Ready;
    t.barrier_gen = -1;
  }

  /// The running block gives the machine back to the scheduler as `state` and returns when it
  /// is resumed.
  void yield(TaskState state) {
    Task& t = *m_tasks[m_current];
    t.mems = std::move(m_mems);
    t.frags = std::move(m_frags);
    t.stage = std::move(m_stage);
    t.stage_index = m_stage_index;
    {
      std::unique_lock<std::mutex> lk(m_mu);
      t.state = state;
      m_current = -1;
      m_sched_cv.notify_one();
      t.cv.wait(lk, [&] { return m_current == t.block || m_abort; });
      if (m_abort) throw Abort{};
    }
    load(t);
  }

  [[noreturn]] void deadlock() {
    std::string detail = "deadlock: no block can run;";
    std::string stage;
    int64_t done = 0, shown = 0;
    for (const auto& t : m_tasks) {
      if (t->state == TaskState::Done) {
        ++done;
        continue;
      }
      if (stage.empty()) stage = t->stage;
      if (shown++ == 4) {
        detail += " ...";
        continue;
      }
      if (shown > 5) continue;
      detail +=
          " block " + std::to_string(t->block) + (t->stage.empty() ? "" : " (" + t->stage + ")");
      if (t->barrier_gen >= 0) {
        detail += " waits at a grid barrier;";
        continue;
      }
      for (int64_t i = t->first; i < t->first + t->count; ++i)
        if (t->flags->data[i].i < t->target) {
          detail += " waits for " + t->flags->name + "[" + std::to_string(i) + "] to reach " +
                    std::to_string(t->target) + " (it is " + std::to_string(t->flags->data[i].i) +
                    ");";
          break;
        }
    }
    detail += " " + std::to_string(done) + " of " + std::to_string(m_grid) + " blocks finished";
    throw EmulationError(m_kernel->name, stage, detail);
  }

  /// The block running `lanes` as a task; every thread of it must be there (block-collective).
  int32_t whole_block(const Lanes& lanes, const char* what) {
    const int32_t b = lanes[0] / static_cast<int32_t>(m_block);
    if (static_cast<int64_t>(lanes.size()) != m_block)
      fail(std::string(what) + " in divergent code: block " + std::to_string(b) +
           " reaches it with " + std::to_string(lanes.size()) + " of " + std::to_string(m_block) +
           " threads");
    return b;
  }

  int64_t flag_index(Mem& f, const Expr& e, const Lanes& lanes, const char* what) {
    // Thread 0 of the block computes the index (it alone touches the counter).
    int64_t i = eval(e, Lanes{lanes[0]})[0].i;
    if (i < 0 || i >= f.numel)
      fail(std::string("out-of-bounds ") + what + " of " + f.name + "[" + std::to_string(i) +
           "] (shape " + shape_str(f.shape) + ") by " + who(lanes[0]));
    return i;
  }

  std::vector<FlagHistory>& flag_history(const Mem& f) {
    auto& h = m_flag_clock[&f];
    if (h.empty()) h.resize(static_cast<size_t>(f.numel));
    return h;
  }

  void flag_release(const loop::FlagRelease& r, const Lanes& lanes) {
    const int32_t b = whole_block(lanes, "flag release");
    ++m_block_epoch[b];  // the block barrier before the release
    Mem& f = mem(r.flags);
    const int64_t i = flag_index(f, r.index, lanes, "flag release");
    ++m_clock[b][b];
    FlagHistory& h = flag_history(f)[i];
    std::vector<int32_t> joined = h.clock.empty() ? m_clock[b] : h.clock.back();
    for (int64_t p = 0; p < m_grid; ++p) joined[p] = std::max(joined[p], m_clock[b][p]);
    Val v;
    v.i = f.data[i].i + 1;
    f.data[i] = store_round(f.dtype, v);
    h.value.push_back(f.data[i].i);
    h.clock.push_back(std::move(joined));
    if (m_tl) m_tl->flag_release(&f, i, f.data[i].i, b);
    yield(TaskState::Ready);
  }

  void flag_wait(const loop::FlagWait& w, const Lanes& lanes) {
    const int32_t b = whole_block(lanes, "flag wait");
    Mem& f = mem(w.flags);
    Task& t = *m_tasks[m_current];
    t.flags = &f;
    t.first = flag_index(f, w.first, lanes, "flag wait");
    t.count = eval(w.count, Lanes{lanes[0]})[0].i;
    if (t.count < 0 || t.first + t.count > f.numel)
      fail("out-of-bounds flag wait on " + f.name + "[" + std::to_string(t.first) + " +: " +
           std::to_string(t.count) + "] (shape " + shape_str(f.shape) + ") by " + who(lanes[0]));
    t.target = m_opt.flag_epoch * w.per_run;
    if (!met(t)) yield(TaskState::Waiting);
    std::vector<FlagHistory>& hist = flag_history(f);
    for (int64_t i = t.first; i < t.first + t.count; ++i) {
      const FlagHistory& h = hist[i];
      size_t n = 0;
      while (n < h.value.size() && h.value[n] <= t.target) ++n;
      if (n == 0) continue;
      for (int64_t p = 0; p < m_grid; ++p)
        m_clock[b][p] = std::max(m_clock[b][p], h.clock[n - 1][p]);
    }
    ++m_block_epoch[b];  // the block barrier after the wait
    if (m_tl) m_tl->flag_wait(&f, t.first, t.count, t.target, b);
  }

  void task_grid_barrier(const Lanes& lanes) {
    const int32_t b = whole_block(lanes, "grid barrier");
    if (!m_kernel->launch.cooperative) fail("grid barrier in a non-cooperative launch");
    const int64_t gen = m_barrier_gen;
    if (m_tl) m_tl->grid_arrive(b, gen);
    if (++m_barrier_arrived == m_grid) {
      m_barrier_arrived = 0;
      ++m_barrier_gen;
      ++m_grid_epoch;
      for (auto& e : m_block_epoch) ++e;
      if (m_tl) m_tl->grid_leave(b, gen);
      return;
    }
    m_tasks[m_current]->barrier_gen = gen;
    yield(TaskState::Waiting);
    if (m_tl) m_tl->grid_leave(b, gen);
  }
};

void load(Machine& m, const Buffers& buffers) {
  for (const auto& [name, data] : buffers) {
    auto t = te::make_compute_tensor(name, data->shape(), data->dtype());
    Mem& g = m.add_global(t);
    for (int64_t i = 0; i < g.numel; ++i) g.data[i] = to_val(g.dtype, *data, i);
    std::fill(g.written.begin(), g.written.end(), 1);
  }
}

std::shared_ptr<TensorData> unload(const Mem& g) {
  auto d = std::make_shared<TensorData>(g.dtype, g.shape);
  for (int64_t i = 0; i < g.numel; ++i) {
    if (is_float(g.dtype))
      d->set_f64(i, g.data[i].f);
    else
      d->set_i64(i, g.data[i].i);
  }
  return d;
}

}  // namespace

void run_kernel(const loop::Kernel& kernel, Buffers& buffers, const EmulateOptions& options) {
  Machine m(options);
  load(m, buffers);
  m.run(kernel);
  for (const Tensor& t : kernel.outputs) buffers[t->name] = unload(*m.globals.at(t->name));
  for (const Tensor& t : kernel.flags) buffers[t->name] = unload(*m.globals.at(t->name));
  if (m.m_tl) {
    for (const auto& [name, b] : m.m_tl->buffers()) {
      auto d = std::make_shared<TensorData>(DType::Int64, b.shape);
      for (size_t i = 0; i < b.words.size(); ++i) d->set_i64(static_cast<int64_t>(i), b.words[i]);
      buffers[name] = d;
    }
    if (options.timeline) {
      options.timeline->barrier_wait_cycles += m.m_tl->barrier_wait_cycles();
      ++options.timeline->kernels;
    }
  }
}

Buffers run_kernels(const loop::KernelSet& kernels, const Buffers& inputs,
                    const EmulateOptions& options) {
  Machine m(options);
  load(m, inputs);
  for (const loop::Kernel& k : kernels.kernels) m.run(k);
  Buffers out;
  for (const auto& [name, g] : m.globals) out[name] = unload(*g);
  return out;
}

}  // namespace souffle::emulate
