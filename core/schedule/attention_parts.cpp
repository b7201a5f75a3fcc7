#include "core/schedule/attention_parts.h"

#include "core/schedule/template_util.h"
#include "core/te/builder.h"

namespace souffle::schedule::detail {

using loop::ForKind;
using loop::Stmt;
using te::Expr;

Stmt per_thread_elements(const std::string& tag, int64_t count, int64_t threads, const Expr& tx,
                         const std::function<Stmt(const Expr& l, const Expr& e)>& body) {
  Expr l = te::var("l_" + tag), e = te::var("e_" + tag);
  Stmt st = body(l, e);
  if (count % threads != 0) st = loop::if_then_else(te::lt(e, ic(count)), st);
  return loop::make_for(l, ceil_div(count, threads), ForKind::Serial,
                        loop::let_stmt(e, l * ic(threads) + tx, st));
}

Stmt bind_row_col(const Expr& e, const Expr& row, const Expr& col, int64_t cols, Stmt body) {
  return loop::let_stmt(row, te::floordiv(e, ic(cols)),
                        loop::let_stmt(col, te::floormod(e, ic(cols)), std::move(body)));
}

Stmt online_softmax_row(const Expr& e, int64_t keys, const OnlineSoftmax& s) {
  const DType f32 = DType::Float32;
  const Expr neg_inf = te::reduce_identity(te::ReduceKind::Max, f32);
  const Expr zero = te::float_imm(0.0, f32);
  const Expr c0 = ic(0);
  auto read1 = [](const te::Tensor& b) { return te::read(b, {ic(0)}); };
  Expr cj = te::var("rj"), cj2 = te::var("rj2");
  Expr mu = te::select(te::eq(read1(s.row_max), neg_inf), zero, read1(s.row_max));
  // In place: the probability overwrites its score and the sum reads it back; else it goes to
  // `probs`, converted, and the sum takes it in f32.
  Stmt prob;
  if (!s.probs) {
    Expr pv = te::read(s.scores, {e, cj2});
    prob = loop::seq({loop::store(s.scores, {e, cj2}, te::exp(pv - mu)),
                      loop::store(s.row_sum, {c0}, read1(s.row_sum) + pv)});
  } else {
    Expr pv = te::exp(te::read(s.scores, {e, cj2}) - mu);
    prob = loop::seq({loop::store(s.probs, {e, cj2}, te::cast(s.probs->dtype, pv)),
                      loop::store(s.row_sum, {c0}, read1(s.row_sum) + pv)});
  }
  return loop::seq(
      {loop::store(s.row_max, {c0}, te::read(s.max, {e})),
       loop::make_for(
           cj, keys, ForKind::Serial,
           loop::store(s.row_max, {c0}, te::max(read1(s.row_max), te::read(s.scores, {e, cj})))),
       loop::store(s.alpha, {e}, te::exp(te::read(s.max, {e}) - mu)),
       loop::store(s.row_sum, {c0}, zero), loop::make_for(cj2, keys, ForKind::Serial, prob),
       loop::store(s.sum, {e}, te::read(s.sum, {e}) * te::read(s.alpha, {e}) + read1(s.row_sum)),
       loop::store(s.max, {e}, read1(s.row_max))});
}

}  // namespace souffle::schedule::detail
