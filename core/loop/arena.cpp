#include "core/loop/arena.h"

#include <algorithm>

namespace souffle::loop {

namespace {

// 32 bytes: what tensor-core fragment loads and stores need (and 16-byte vectors get too).
constexpr int64_t kAlign = 32;

int64_t align_up(int64_t v) {
  return (v + kAlign - 1) / kAlign * kAlign;
}

class Planner {
 public:
  std::vector<SharedSlot> slots;

  /// Places the shared buffers of s from `base` on; returns the highest byte used.
  int64_t walk(const Stmt& s, int64_t base) {
    if (!s.defined()) return base;
    if (const Allocate* a = s.as<Allocate>()) {
      if (a->scope != MemScope::Shared) return walk(a->body, base);
      int64_t off = align_up(base);
      int64_t bytes = shape_numel(a->buffer->shape) * dtype_size(a->buffer->dtype);
      slots.push_back({a->buffer, off, bytes});
      return std::max(off + bytes, walk(a->body, off + bytes));
    }
    if (const Seq* q = s.as<Seq>()) {
      int64_t cur = base, peak = base;
      for (const Stmt& x : q->stmts) {
        // A flag release or wait meets the block at a barrier too.
        if (x.as<BlockBarrier>() || x.as<GridBarrier>() || x.as<FlagRelease>() ||
            x.as<FlagWait>()) {
          cur = base;
          continue;
        }
        int64_t end = walk(x, cur);
        peak = std::max(peak, end);
        cur = std::max(cur, end);
      }
      return peak;
    }
    if (const For* f = s.as<For>()) return walk(f->body, base);
    if (const LetStmt* l = s.as<LetStmt>()) return walk(l->body, base);
    if (const Stage* g = s.as<Stage>()) return walk(g->body, base);
    if (const FragmentAlloc* fa = s.as<FragmentAlloc>()) return walk(fa->body, base);
    if (const IfThenElse* i = s.as<IfThenElse>())
      return std::max(walk(i->then_case, base), walk(i->else_case, base));
    return base;
  }
};

}  // namespace

Kernel plan_shared_arena(const Kernel& k) {
  Planner p;
  int64_t total = p.walk(k.body, 0);
  Kernel out = k;
  out.shared = std::move(p.slots);
  out.launch.dynamic_shared_bytes = align_up(total);
  return out;
}

}  // namespace souffle::loop
