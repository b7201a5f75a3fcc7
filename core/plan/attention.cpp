// Attention chains found in the TEs: QK^T -> softmax (max, sum of exp, divide) -> x V.
#include "core/plan/attention.h"

#include <algorithm>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "core/plan/vertical.h"
#include "core/te/equal.h"
#include "core/te/mutator.h"

namespace souffle::plan {

namespace {

using te::Expr;
using VarMap = std::unordered_map<const te::ExprNode*, Expr>;

bool fail(std::string* why, const std::string& text) {
  if (why) *why = text;
  return false;
}

Expr strip_cast(const Expr& e) {
  const te::Cast* c = e.as<te::Cast>();
  return c ? c->a : e;
}

std::unordered_set<const te::ExprNode*> vars_in(const Expr& e) {
  std::unordered_set<const te::ExprNode*> out;
  te::for_each_node(e, [&](const Expr& n) {
    if (n.as<te::Var>()) out.insert(n.get());
  });
  return out;
}

bool reads_tensor(const Expr& e, const te::TensorNode* t) {
  bool found = false;
  te::for_each_node(e, [&](const Expr& n) {
    if (const te::Read* r = n.as<te::Read>()) found |= r->tensor.get() == t;
  });
  return found;
}

bool is_zero(const Expr& e) {
  const te::IntImm* i = e.as<te::IntImm>();
  return i && i->value == 0;
}

/// P's body: [cast] (exp(x - M[row]) / L[row]); the parts, or false.
bool split_probs(const te::ComputeOp& p, Expr& num, Expr& x, const te::Read*& rm,
                 const te::Read*& rl) {
  const te::Binary* div = strip_cast(p.body).as<te::Binary>();
  if (!div || div->op != te::BinaryOp::Div) return false;
  rl = div->b.as<te::Read>();
  const te::Call* ex = div->a.as<te::Call>();
  if (!rl || !ex || ex->fn != te::CallFn::Exp || ex->args.size() != 1) return false;
  const te::Binary* sub = ex->args[0].as<te::Binary>();
  if (!sub || sub->op != te::BinaryOp::Sub) return false;
  rm = sub->b.as<te::Read>();
  if (!rm) return false;
  num = div->a;
  x = sub->a;
  return true;
}

/// Whether a read of a row statistic from P's element names P's row: P's own vars off the key
/// axis (or 0 on an axis of extent 1), 0 on it.
bool reads_row(const te::ComputeOp& p, const te::Read& r, int key) {
  if (r.indices.size() != p.axes.size()) return false;
  for (size_t d = 0; d < p.axes.size(); ++d) {
    const Expr& i = r.indices[d];
    if (static_cast<int>(d) == key) {
      if (!is_zero(i) || r.tensor->shape[d] != 1) return false;
    } else if (!i.same_as(p.axes[d].var) && !(is_zero(i) && p.axes[d].extent == 1)) {
      return false;
    }
  }
  return true;
}

/// A row statistic's vars mapped into S's frame: its axes to S's (0 on the key axis), its
/// reduce var to S's key var.
VarMap stat_map(const te::ComputeOp& stat, const te::ComputeOp& s, int key) {
  VarMap m;
  for (size_t d = 0; d < stat.axes.size(); ++d)
    m[stat.axes[d].var.get()] = static_cast<int>(d) == key ? te::int_imm(0) : s.axes[d].var;
  m[stat.reduce_axes[0].var.get()] = s.axes[static_cast<size_t>(key)].var;
  return m;
}

}  // namespace

int64_t AttentionMatch::score_bytes() const {
  if (!s || !p) return 0;
  return shape_numel(s->output->shape) * dtype_size(s->output->dtype) +
         shape_numel(p->output->shape) * dtype_size(p->output->dtype);
}

std::optional<AttentionMatch> match_attention(const te::ComputeOp& s, const te::ComputeOp& m,
                                              const te::ComputeOp& l, const te::ComputeOp& p,
                                              const te::ComputeOp& o, std::string* why) {
  auto no = [&](const std::string& text) -> std::optional<AttentionMatch> {
    fail(why, text);
    return std::nullopt;
  };
  if (s.reduce != te::ReduceKind::Sum || m.reduce != te::ReduceKind::Max ||
      l.reduce != te::ReduceKind::Sum || p.reduce != te::ReduceKind::None ||
      o.reduce != te::ReduceKind::Sum)
    return no("not a contraction, a max, a sum, an element-wise TE and a contraction");
  if (m.reduce_axes.size() != 1 || l.reduce_axes.size() != 1 || o.reduce_axes.size() != 1)
    return no("the softmax and the product with V reduce over more than one axis");
  if (s.output->shape != p.output->shape || s.axes.size() != p.axes.size() ||
      m.axes.size() != p.axes.size() || l.axes.size() != p.axes.size())
    return no("the scores and the probabilities differ in shape");
  if (!is_float(s.output->dtype) || !is_float(p.output->dtype) || !is_float(o.output->dtype))
    return no("not floating point");
  Expr num, xp;
  const te::Read *rm = nullptr, *rl = nullptr;
  if (!split_probs(p, num, xp, rm, rl) || rm->tensor != m.output || rl->tensor != l.output)
    return no("the probabilities are not exp(x - max) / sum");
  // The key axis: where the max reads S at its reduce var.
  int key = -1;
  bool s_read_ok = true;
  te::for_each_node(m.body, [&](const Expr& n) {
    const te::Read* r = n.as<te::Read>();
    if (!r || r->tensor != s.output) return;
    int at = -1;
    for (size_t d = 0; d < r->indices.size(); ++d)
      if (r->indices[d].same_as(m.reduce_axes[0].var)) at = static_cast<int>(d);
    if (at < 0 || (key >= 0 && key != at)) s_read_ok = false;
    key = at;
  });
  if (key < 0 || !s_read_ok) return no("the row max does not reduce the scores along one axis");
  const size_t kd = static_cast<size_t>(key);
  if (m.output->shape[kd] != 1 || l.output->shape[kd] != 1)
    return no("the row statistics do not keep the key axis");
  if (!reads_row(p, *rm, key) || !reads_row(p, *rl, key))
    return no("the probabilities read the row statistics elsewhere than at their row");
  if (m.reduce_axes[0].extent != s.axes[kd].extent || l.reduce_axes[0].extent != s.axes[kd].extent)
    return no("the softmax reduces another extent than the keys'");
  // Everything in S's frame.
  VarMap p_to_s;
  for (size_t d = 0; d < p.axes.size(); ++d) p_to_s[p.axes[d].var.get()] = s.axes[d].var;
  const Expr x = te::substitute(xp, p_to_s);
  if (!te::equal(x, te::substitute(m.body, stat_map(m, s, key))))
    return no("the row max takes another function of the scores than the probabilities");
  if (!te::equal(te::substitute(num, p_to_s), te::substitute(l.body, stat_map(l, s, key))))
    return no("the row sum takes another function of the scores than the probabilities");
  // x reads S only at S's own element, and no other TE of the chain.
  bool x_ok = true;
  te::for_each_node(x, [&](const Expr& n) {
    const te::Read* r = n.as<te::Read>();
    if (!r) return;
    if (r->tensor == m.output || r->tensor == l.output || r->tensor == p.output ||
        r->tensor == o.output) {
      x_ok = false;
      return;
    }
    if (r->tensor != s.output) return;
    for (size_t d = 0; d < s.axes.size(); ++d)
      if (!r->indices[d].same_as(s.axes[d].var) &&
          !(is_zero(r->indices[d]) && s.axes[d].extent == 1))
        x_ok = false;
  });
  if (!x_ok || !reads_tensor(x, s.output.get()))
    return no("the softmax's input reads the scores elsewhere than at its own element");

  AttentionMatch a;
  a.s = &s;
  a.m = &m;
  a.l = &l;
  a.p = &p;
  a.o = &o;
  a.ops = {&s, &m, &l, &p, &o};
  a.key_axis = key;
  a.x = x;
  // S = q * k: q gives the query rows, k the key axis.
  const te::Binary* mul = s.body.as<te::Binary>();
  if (!mul || mul->op != te::BinaryOp::Mul)
    return no("the scores are not a product of two factors");
  auto va = vars_in(mul->a), vb = vars_in(mul->b);
  const te::ExprNode* kv = s.axes[kd].var.get();
  if (va.count(kv) == vb.count(kv)) return no("the key axis is read by both factors or neither");
  a.q = va.count(kv) ? mul->b : mul->a;
  a.k = va.count(kv) ? mul->a : mul->b;
  const auto& vq = va.count(kv) ? vb : va;
  const auto& vk = va.count(kv) ? va : vb;
  for (size_t d = 0; d < s.axes.size(); ++d) {
    const te::ExprNode* v = s.axes[d].var.get();
    const bool in_q = vq.count(v) > 0, in_k = vk.count(v) > 0;
    if (static_cast<int>(d) == key) {
      a.keys.push_back(s.axes[d]);
    } else if (in_q && !in_k) {
      a.rows.push_back(s.axes[d]);
    } else if (in_k && !in_q) {
      return no("a second axis of the scores is read by the key factor only");
    } else {
      a.batch.push_back(s.axes[d]);
    }
  }
  if (a.rows.empty()) return no("the scores have no query axis");
  bool q_d = false, k_d = false;
  for (const te::IterVar& r : s.reduce_axes) {
    q_d |= vq.count(r.var.get()) > 0;
    k_d |= vk.count(r.var.get()) > 0;
    a.head_dim *= r.extent;
  }
  if (!q_d || !k_d) return no("the scores are no contraction of both factors");
  // O = P[.., i, j] * v(j, ..), j O's reduce var.
  const te::Binary* omul = o.body.as<te::Binary>();
  if (!omul || omul->op != te::BinaryOp::Mul) return no("the output is not a product");
  const bool p_first = reads_tensor(omul->a, p.output.get());
  const Expr pf = p_first ? omul->a : omul->b, vf = p_first ? omul->b : omul->a;
  const te::Read* rp = strip_cast(pf).as<te::Read>();
  if (!rp || rp->tensor != p.output) return no("the output reads the probabilities through math");
  for (const te::Tensor& t : {s.output, m.output, l.output, p.output})
    if (reads_tensor(vf, t.get())) return no("V reads the chain");
  if (o.reduce_axes[0].extent != s.axes[kd].extent)
    return no("the output reduces another extent than the keys'");
  VarMap o_to_s;
  for (size_t d = 0; d < p.axes.size(); ++d) {
    const Expr& i = rp->indices[d];
    if (static_cast<int>(d) == key) {
      if (!i.same_as(o.reduce_axes[0].var)) return no("the output does not sum over the keys");
      o_to_s[i.get()] = s.axes[d].var;
      continue;
    }
    if (is_zero(i) && p.axes[d].extent == 1) continue;
    bool is_axis = false;
    for (const te::IterVar& ax : o.axes) is_axis |= ax.var.same_as(i);
    if (!is_axis || o_to_s.count(i.get())) return no("the output reads the probabilities oddly");
    o_to_s[i.get()] = s.axes[d].var;
  }
  std::vector<Expr> row_vars;
  for (const te::IterVar& r : a.rows) row_vars.push_back(r.var);
  for (const te::IterVar& ax : o.axes) {
    auto it = o_to_s.find(ax.var.get());
    if (it != o_to_s.end()) {
      a.out_index.push_back(it->second);
    } else {
      a.out_index.push_back(ax.var);
      a.value_axes.push_back(ax);
      a.value_dim *= ax.extent;
    }
  }
  a.v = te::substitute(vf, o_to_s);
  const auto vv = vars_in(a.v);
  for (const Expr& r : row_vars)
    if (vv.count(r.get())) return no("V depends on the query row");
  for (const te::IterVar& r : a.rows) a.rows_n *= r.extent;
  for (const te::IterVar& b : a.batch) a.batch_n *= b.extent;
  a.keys_n = s.axes[kd].extent;
  return a;
}

std::optional<AttentionMatch> match_attention_ops(const std::vector<const te::ComputeOp*>& ops,
                                                  std::string* why) {
  if (ops.size() == 5) return match_attention(*ops[0], *ops[1], *ops[2], *ops[3], *ops[4], why);
  if (ops.size() != 6) {
    fail(why, "an attention chain has five or six TEs");
    return std::nullopt;
  }
  const te::ComputeOp& e = *ops[2];
  if (e.reduce != te::ReduceKind::None || e.output->shape != ops[4]->output->shape) {
    fail(why, "the exp TE is not element-wise over the scores' shape");
    return std::nullopt;
  }
  const std::unordered_map<const te::TensorNode*, const te::ComputeOp*> from{{e.output.get(), &e}};
  const te::Op l = inline_reads(std::make_shared<const te::ComputeOp>(*ops[3]), from);
  const te::Op p = inline_reads(std::make_shared<const te::ComputeOp>(*ops[4]), from);
  std::optional<AttentionMatch> a = match_attention(*ops[0], *ops[1], *l, *p, *ops[5], why);
  if (!a) return a;
  a->ops = ops;
  a->inlined = {l, p};
  return a;
}

std::vector<AttentionChain> find_attention_chains(const te::TeProgram& program,
                                                  const te::ProgramIndex& index) {
  std::vector<AttentionChain> out;
  auto producer_of = [&](const te::Tensor& t) { return index.producer(t.get()); };
  auto op = [&](int i) -> const te::ComputeOp& { return *program.ops[static_cast<size_t>(i)]; };
  for (size_t oi = 0; oi < program.ops.size(); ++oi) {
    const te::ComputeOp& o = *program.ops[oi];
    if (o.reduce != te::ReduceKind::Sum) continue;
    const te::Binary* omul = o.body.as<te::Binary>();
    if (!omul || omul->op != te::BinaryOp::Mul) continue;
    for (const Expr& f : {omul->a, omul->b}) {
      const te::Read* rp = strip_cast(f).as<te::Read>();
      if (!rp) continue;
      const int pi = producer_of(rp->tensor);
      if (pi < 0) continue;
      // P = E / L with E = exp(x - M) a TE of its own, or exp(x - M) / L.
      int ei = -1;
      te::Op p_eff = program.ops[static_cast<size_t>(pi)];
      if (const te::Binary* div = strip_cast(p_eff->body).as<te::Binary>();
          div && div->op == te::BinaryOp::Div)
        if (const te::Read* re = div->a.as<te::Read>()) {
          ei = producer_of(re->tensor);
          if (ei < 0 || op(ei).reduce != te::ReduceKind::None) continue;
          p_eff = inline_reads(p_eff, {{op(ei).output.get(), &op(ei)}});
        }
      Expr num, x;
      const te::Read *rm = nullptr, *rl = nullptr;
      if (!split_probs(*p_eff, num, x, rm, rl)) continue;
      const int mi = producer_of(rm->tensor), li = producer_of(rl->tensor);
      if (mi < 0 || li < 0) continue;
      // S: the contraction the max reads, of the probabilities' shape.
      int si = -1;
      te::for_each_node(op(mi).body, [&](const Expr& n) {
        if (const te::Read* r = n.as<te::Read>()) {
          const int pr = producer_of(r->tensor);
          if (pr >= 0 && op(pr).reduce == te::ReduceKind::Sum &&
              r->tensor->shape == op(pi).output->shape)
            si = pr;
        }
      });
      if (si < 0) continue;
      AttentionChain c{si, mi, ei, li, pi, static_cast<int>(oi)};
      const std::vector<int> tes = c.tes();
      if (!std::is_sorted(tes.begin(), tes.end()) ||
          std::adjacent_find(tes.begin(), tes.end()) != tes.end())
        continue;
      std::vector<const te::ComputeOp*> ops;
      for (int te : tes) ops.push_back(&op(te));
      if (!match_attention_ops(ops)) continue;
      // The intermediates are read by the chain only and are no outputs.
      const std::set<int> chain(tes.begin(), tes.end());
      bool closed = true;
      for (int te : tes) {
        if (te == c.out) continue;
        closed &= !index.is_output(op(te).output.get());
        for (int r : index.readers(static_cast<size_t>(te))) closed &= chain.count(r) > 0;
      }
      if (!closed) continue;
      out.push_back(c);
      break;
    }
  }
  return out;
}

std::string attention_site_key(const te::TeProgram& program, const AttentionChain& c) {
  return "attn:" + program.ops[static_cast<size_t>(c.out)]->name;
}

}  // namespace souffle::plan
