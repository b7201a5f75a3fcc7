#include "core/loop/unroll.h"

#include "core/loop/mutator.h"
#include "core/loop/simplify.h"

namespace souffle::loop {

namespace {

bool has_loop(const Stmt& s) {
  bool found = false;
  for_each_stmt(s, [&](const Stmt& x) { found |= x.as<For>() != nullptr; });
  return found;
}

class Unroller : public StmtMutator {
 public:
  explicit Unroller(int64_t max_extent) : m_max(max_extent) {}

 protected:
  Stmt mutate_For(const For& n, const Stmt& s) override {
    Stmt body = mutate(n.body);
    const te::IntImm* mn = n.min.as<te::IntImm>();
    const te::IntImm* ext = n.extent.as<te::IntImm>();
    bool wanted = n.for_kind == ForKind::Unrolled ||
                  (n.for_kind == ForKind::Serial && ext && ext->value <= m_max && !has_loop(body));
    // Bigger explicit requests are kept as loops: the emitted code says #pragma unroll instead.
    if (!wanted || !mn || !ext || ext->value > 64) {
      if (body.same_as(n.body)) return s;
      return make_for(n.var, n.min, n.extent, n.for_kind, body);
    }
    std::vector<Stmt> copies;
    for (int64_t i = 0; i < ext->value; ++i)
      copies.push_back(simplify(substitute(body, {{n.var.get(), te::int_imm(mn->value + i)}})));
    return seq(std::move(copies));
  }

 private:
  int64_t m_max;
};

}  // namespace

Stmt unroll_loops(const Stmt& s, int64_t max_extent) {
  Unroller u(max_extent);
  return u.mutate(s);
}

}  // namespace souffle::loop
