#include "core/plan/vertical.h"

#include <algorithm>
#include <cstdio>
#include <limits>
#include <map>
#include <unordered_map>
#include <unordered_set>

#include "core/analysis/access.h"
#include "core/support/int_math.h"
#include "core/te/bounds.h"
#include "core/te/equal.h"
#include "core/te/mutator.h"
#include "core/te/verify.h"

namespace souffle::plan {
namespace {

using te::BinaryOp;
using te::Expr;

// ---------------------------------------------------------------- index simplification

/// Ranges come from the bounds engine; this simplifier decides only on bounded ones (both ends
/// below 2^60), treating any other as unknown.
using te::Interval;

/// const + sum(coeff * atom); atoms are vars or non-affine int64 subexpressions, kept unique by
/// structural equality in order of first appearance (so printing is deterministic).
struct Affine {
  int64_t c = 0;
  std::vector<std::pair<Expr, int64_t>> terms;

  void add_term(const Expr& atom, int64_t k) {
    if (k == 0) return;
    for (auto it = terms.begin(); it != terms.end(); ++it) {
      if (te::equal(it->first, atom)) {
        it->second += k;
        if (it->second == 0) terms.erase(it);
        return;
      }
    }
    terms.emplace_back(atom, k);
  }
  void add(const Affine& o, int64_t k) {
    c += o.c * k;
    for (const auto& [a, x] : o.terms) add_term(a, x * k);
  }
  bool is_const() const { return terms.empty(); }
};

class Simplifier : public te::ExprMutator {
 public:
  explicit Simplifier(std::unordered_map<const te::ExprNode*, int64_t> extents)
      : m_extents(std::move(extents)) {}

 protected:
  Expr mutate_Binary(const te::Binary& n, const Expr& e) override {
    Expr r = ExprMutator::mutate_Binary(n, e);
    const auto* b = r.as<te::Binary>();
    if (!b) return r;
    if (r.dtype() == DType::Int64 && is_int_arith(b->op)) return build(linearize(r));
    if (te::is_comparison(b->op) && b->a.dtype() == DType::Int64) return fold_compare(*b, r);
    if (b->op == BinaryOp::And || b->op == BinaryOp::Or) {
      const auto *x = b->a.as<te::IntImm>(), *y = b->b.as<te::IntImm>();
      bool is_and = b->op == BinaryOp::And;
      if (x) return (x->value != 0) == is_and ? b->b : b->a;
      if (y) return (y->value != 0) == is_and ? b->a : b->b;
    }
    return r;
  }
  Expr mutate_Unary(const te::Unary& n, const Expr& e) override {
    Expr r = ExprMutator::mutate_Unary(n, e);
    const auto* u = r.as<te::Unary>();
    if (!u) return r;
    if (u->op == te::UnaryOp::Neg && r.dtype() == DType::Int64) return build(linearize(r));
    if (u->op == te::UnaryOp::Not) {
      if (const auto* x = u->a.as<te::IntImm>()) return te::int_imm(x->value == 0, DType::Bool);
    }
    return r;
  }
  Expr mutate_Select(const te::Select& n, const Expr& e) override {
    Expr c = mutate(n.cond);
    if (const auto* x = c.as<te::IntImm>()) return mutate(x->value != 0 ? n.t : n.f);
    Expr t = mutate(n.t), f = mutate(n.f);
    if (c.same_as(n.cond) && t.same_as(n.t) && f.same_as(n.f)) return e;
    return te::select(c, t, f);
  }

 private:
  static bool is_int_arith(BinaryOp op) {
    switch (op) {
      case BinaryOp::Add:
      case BinaryOp::Sub:
      case BinaryOp::Mul:
      case BinaryOp::Div:
      case BinaryOp::Mod:
      case BinaryOp::FloorDiv:
      case BinaryOp::FloorMod:
      case BinaryOp::Min:
      case BinaryOp::Max:
        return true;
      default:
        return false;
    }
  }

  Interval atom_range(const Expr& a) {
    const Interval unknown = Interval::everything();
    if (const auto* i = a.as<te::IntImm>()) return Interval::point(i->value);
    if (a.as<te::Var>()) {
      auto it = m_extents.find(a.get());
      if (it == m_extents.end() || it->second <= 0) return unknown;
      return {0, it->second - 1};
    }
    const auto* b = a.as<te::Binary>();
    if (!b || a.dtype() != DType::Int64) return unknown;
    const auto* d = b->b.as<te::IntImm>();
    if ((b->op == BinaryOp::FloorDiv || b->op == BinaryOp::FloorMod) && d && d->value > 0) {
      Interval x = range(linearize(b->a));
      if (b->op == BinaryOp::FloorMod) return x.floor_mod(d->value);
      if (!x.bounded()) return unknown;
      return x.floor_div(d->value);
    }
    if (b->op == BinaryOp::Min || b->op == BinaryOp::Max) {
      Interval x = range(linearize(b->a)), y = range(linearize(b->b));
      if (!x.bounded() || !y.bounded()) return unknown;
      return b->op == BinaryOp::Min ? x.min_with(y) : x.max_with(y);
    }
    return unknown;
  }

  Interval range(const Affine& a) {
    Interval r = Interval::point(a.c);
    for (const auto& [atom, k] : a.terms) r = r.plus(atom_range(atom).times(k));
    return r;
  }

  /// floordiv/floormod of `num` by a positive constant, split as num = d*q + rest.
  Affine div_mod(const Affine& num, int64_t d, bool is_div) {
    Affine q, rest;
    q.c = floor_div(num.c, d);
    rest.c = num.c - q.c * d;
    for (const auto& [atom, k] : num.terms) {
      if (k % d == 0)
        q.add_term(atom, k / d);
      else
        rest.add_term(atom, k);
    }
    Affine out;
    if (is_div) out = q;
    Interval rr = range(rest);
    if (rr.bounded() && floor_div(rr.lo, d) == floor_div(rr.hi, d)) {
      int64_t k = floor_div(rr.lo, d);
      if (is_div) {
        out.c += k;
      } else {
        out.add(rest, 1);
        out.c -= k * d;
      }
      return out;
    }
    Expr inner = build(rest);
    // floordiv(floordiv(x, a), d) = floordiv(x, a*d); floormod(floormod(x, a), d) = floormod(x, d)
    // when d divides a.
    if (const auto* b = inner.as<te::Binary>()) {
      const auto* a = b->b.as<te::IntImm>();
      if (a && a->value > 0 && is_div && b->op == BinaryOp::FloorDiv &&
          a->value < te::kBoundInf / d) {
        out.add_term(te::binary(BinaryOp::FloorDiv, b->a, te::int_imm(a->value * d)), 1);
        return out;
      }
      if (a && a->value > 0 && !is_div && b->op == BinaryOp::FloorMod && a->value % d == 0) {
        out.add_term(te::binary(BinaryOp::FloorMod, b->a, te::int_imm(d)), 1);
        return out;
      }
    }
    out.add_term(
        te::binary(is_div ? BinaryOp::FloorDiv : BinaryOp::FloorMod, inner, te::int_imm(d)), 1);
    return out;
  }

  /// x = d*floordiv(x, d) + floormod(x, d): folds such pairs back into x (a reshape composed
  /// with its inverse).
  void recombine(Affine& a) {
    for (bool again = true; again;) {
      again = false;
      for (size_t i = 0; i < a.terms.size() && !again; ++i) {
        const auto* fd = a.terms[i].first.as<te::Binary>();
        if (!fd || fd->op != BinaryOp::FloorDiv) continue;
        const auto* d = fd->b.as<te::IntImm>();
        if (!d || d->value <= 0) continue;
        for (size_t j = 0; j < a.terms.size(); ++j) {
          const auto* fm = a.terms[j].first.as<te::Binary>();
          if (!fm || fm->op != BinaryOp::FloorMod || !te::equal(fm->b, fd->b) ||
              !te::equal(fm->a, fd->a))
            continue;
          int64_t k = a.terms[j].second;
          if (a.terms[i].second != k * d->value) continue;
          Expr x = fd->a, fde = a.terms[i].first, fme = a.terms[j].first;
          a.add_term(fde, -k * d->value);
          a.add_term(fme, -k);
          a.add(linearize(x), k);
          again = true;
          break;
        }
      }
    }
  }

  Affine linearize(const Expr& e) {
    Affine out;
    if (const auto* i = e.as<te::IntImm>(); i && e.dtype() == DType::Int64) {
      out.c = i->value;
      return out;
    }
    if (e.dtype() != DType::Int64) {
      out.add_term(e, 1);
      return out;
    }
    if (const auto* u = e.as<te::Unary>(); u && u->op == te::UnaryOp::Neg) {
      out.add(linearize(u->a), -1);
      return out;
    }
    const auto* b = e.as<te::Binary>();
    if (!b) {
      out.add_term(e, 1);
      return out;
    }
    switch (b->op) {
      case BinaryOp::Add:
        out.add(linearize(b->a), 1);
        out.add(linearize(b->b), 1);
        recombine(out);
        return out;
      case BinaryOp::Sub:
        out.add(linearize(b->a), 1);
        out.add(linearize(b->b), -1);
        recombine(out);
        return out;
      case BinaryOp::Mul: {
        Affine x = linearize(b->a), y = linearize(b->b);
        if (y.is_const()) {
          out.add(x, y.c);
          return out;
        }
        if (x.is_const()) {
          out.add(y, x.c);
          return out;
        }
        break;
      }
      case BinaryOp::FloorDiv:
      case BinaryOp::FloorMod:
      case BinaryOp::Div:
      case BinaryOp::Mod: {
        Affine y = linearize(b->b);
        if (!y.is_const() || y.c <= 0) break;
        Affine x = linearize(b->a);
        bool floor = b->op == BinaryOp::FloorDiv || b->op == BinaryOp::FloorMod;
        // C division equals floor division for a non-negative dividend.
        if (!floor) {
          Interval r = range(x);
          if (!r.bounded() || r.lo < 0) break;
        }
        if (y.c == 1) {
          if (b->op == BinaryOp::FloorDiv || b->op == BinaryOp::Div) return x;
          return out;  // x mod 1 == 0
        }
        return div_mod(x, y.c, b->op == BinaryOp::FloorDiv || b->op == BinaryOp::Div);
      }
      case BinaryOp::Min:
      case BinaryOp::Max: {
        Affine x = linearize(b->a), y = linearize(b->b);
        Affine diff = x;
        diff.add(y, -1);
        Interval r = range(diff);
        bool is_min = b->op == BinaryOp::Min;
        if (r.bounded() && r.hi <= 0) return is_min ? x : y;  // x <= y
        if (r.bounded() && r.lo >= 0) return is_min ? y : x;  // x >= y
        break;
      }
      default:
        break;
    }
    out.add_term(e, 1);
    return out;
  }

  Expr build(const Affine& a) {
    Expr r;
    auto plus = [&](Expr t, bool negative) {
      if (!r.defined())
        r = negative ? te::unary(te::UnaryOp::Neg, t) : t;
      else
        r = te::binary(negative ? BinaryOp::Sub : BinaryOp::Add, r, t);
    };
    for (const auto& [atom, k] : a.terms) {
      int64_t m = k < 0 ? -k : k;
      Expr t = m == 1 ? atom : te::binary(BinaryOp::Mul, atom, te::int_imm(m));
      plus(t, k < 0);
    }
    if (!r.defined()) return te::int_imm(a.c);
    if (a.c != 0) plus(te::int_imm(a.c < 0 ? -a.c : a.c), a.c < 0);
    return r;
  }

  Expr fold_compare(const te::Binary& b, const Expr& e) {
    Affine d = linearize(b.a);
    d.add(linearize(b.b), -1);
    Interval r = range(d);
    if (!r.bounded()) return e;
    const int v = te::decide_compare(b.op, r);  // -1: undecided
    return v < 0 ? e : te::int_imm(v, DType::Bool);
  }

  std::unordered_map<const te::ExprNode*, int64_t> m_extents;
};

/// "2", "0.5", "512": a recompute factor, three significant digits.
std::string factor(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

std::unordered_map<const te::ExprNode*, int64_t> extents_of(const te::ComputeOp& op) {
  std::unordered_map<const te::ExprNode*, int64_t> ext;
  for (const te::IterVar& v : op.axes) ext[v.var.get()] = v.extent;
  for (const te::IterVar& v : op.reduce_axes) ext[v.var.get()] = v.extent;
  return ext;
}

size_t node_count(const Expr& e) {
  size_t n = 0;
  te::for_each_node(e, [&](const Expr&) { ++n; });
  return n;
}

te::Op with_body(const te::ComputeOp& op, Expr body) {
  auto out = std::make_shared<te::ComputeOp>(op);
  out->body = std::move(body);
  return out;
}

}  // namespace

te::Op simplify_index_math(const te::Op& op) {
  Simplifier s(extents_of(*op));
  Expr body = s.mutate(op->body);
  Expr init = op->init.defined() ? s.mutate(op->init) : op->init;
  if (body.same_as(op->body) && init.same_as(op->init)) return op;
  auto out = std::make_shared<te::ComputeOp>(*op);
  out->body = body;
  out->init = init;
  return out;
}

te::Op inline_reads(const te::Op& consumer,
                    const std::unordered_map<const te::TensorNode*, const te::ComputeOp*>& from) {
  // Reads with structurally equal indices share one inlined copy (keeps the body a DAG).
  struct Copy {
    const te::TensorNode* tensor;
    std::vector<Expr> indices;
    Expr value;
  };
  std::vector<Copy> copies;
  auto fn = [&](const te::Read& r, const std::vector<Expr>& idx) -> Expr {
    auto it = from.find(r.tensor.get());
    if (it == from.end()) return {};
    for (const Copy& k : copies) {
      if (k.tensor != r.tensor.get()) continue;
      bool same = true;
      for (size_t d = 0; d < idx.size() && same; ++d) same = te::equal(k.indices[d], idx[d]);
      if (same) return k.value;
    }
    const te::ComputeOp& p = *it->second;
    std::unordered_map<const te::ExprNode*, Expr> sub;
    for (size_t d = 0; d < p.axes.size(); ++d) sub[p.axes[d].var.get()] = idx[d];
    Expr v = te::substitute(p.body, sub);
    copies.push_back({r.tensor.get(), idx, v});
    return v;
  };
  Expr body = te::rewrite_reads(consumer->body, fn);
  if (body.same_as(consumer->body)) return consumer;
  return simplify_index_math(with_body(*consumer, body));
}

// ---------------------------------------------------------------- the transform

TransformResult vertical_transform(const te::TeProgram& program, const analysis::Analysis& an,
                                   const TransformOptions& options) {
  SOUFFLE_CHECK(an.tes.size() == program.ops.size(),
                "vertical_transform: the analysis is not of this program");
  TransformResult res;
  const size_t n = program.ops.size();
  std::unordered_map<const te::TensorNode*, int> producer;  // output tensor -> op index
  for (size_t i = 0; i < n; ++i) producer[program.ops[i]->output.get()] = static_cast<int>(i);
  std::unordered_set<const te::TensorNode*> outputs;
  for (const te::Tensor& t : program.outputs) outputs.insert(t.get());

  std::vector<te::Op> current(n);          // each op after rewriting its body
  std::vector<int> remaining_reads(n, 0);  // consumers that still read op i
  for (size_t i = 0; i < n; ++i) {
    int t = an.tes[i].output_tensor;
    remaining_reads[i] = t >= 0 ? static_cast<int>(an.tensors[t].consumers.size()) : 0;
  }

  for (size_t ci = 0; ci < n; ++ci) {
    const te::Op& c = program.ops[ci];
    const analysis::TeInfo& cinfo = an.tes[ci];
    // Decide each producer -> c edge; `inline_from` maps the tensors to inline to their producers.
    std::unordered_map<const te::TensorNode*, const te::ComputeOp*> inline_from;
    std::vector<size_t> site_of;  // index into res.sites, parallel to the inlined producers
    std::vector<int> inlined_ops;
    for (const analysis::InputAccess& in : cinfo.inputs) {
      const analysis::TensorInfo& tinfo = an.tensors[in.tensor];
      if (tinfo.producer < 0) continue;
      const int pi = tinfo.producer;
      const te::ComputeOp& p = *current[pi];
      const analysis::TeInfo& pinfo = an.tes[pi];
      TransformSite site;
      site.kind = TransformKind::Vertical;
      site.key = "v:" + p.name + ">" + c->name;
      site.ops = {p.name, c->name};
      const bool forced = options.force.count(site.key) > 0;
      const int64_t flops = analysis::count_flops(p.body);
      const double evals = static_cast<double>(cinfo.iterations) *
                           static_cast<double>(in.reads.size()) /
                           static_cast<double>(std::max<int64_t>(tinfo.elements, 1));
      bool ok = false;
      if (pinfo.is_reduction) {
        site.reason = "producer is a reduction";
      } else if (options.forbid.count(site.key)) {
        site.reason = "forbidden by a decision";
      } else if (forced) {
        ok = true;
        site.reason = "forced by a decision";
      } else if (tinfo.is_output) {
        site.reason = "producer is a program output";
      } else if (flops == 0) {
        ok = true;
        site.reason = pinfo.is_pure_view ? "pure view: composed into the consumer's index map"
                                         : "data movement only (0 FLOPs): composed into the "
                                           "consumer's reads";
      } else if (tinfo.consumers.size() == 1 && evals <= 1.0) {
        ok = true;
        site.reason = "one-relies-on-one, only consumer: element-wise chain composed";
      } else if (flops <= kCheapRecomputeFlops && evals <= kMaxRecomputeFactor) {
        ok = true;
        site.reason = "cheap to recompute: " + std::to_string(flops) + " FLOPs x " + factor(evals) +
                      " per element";
      } else {
        site.reason = "would recompute " + std::to_string(flops) + " FLOPs x " + factor(evals) +
                      " per element";
      }
      if (ok) {
        inline_from[p.output.get()] = &p;
        site_of.push_back(res.sites.size());
        inlined_ops.push_back(pi);
      }
      res.sites.push_back(std::move(site));
    }
    if (inline_from.empty()) {
      current[ci] = c;
      continue;
    }
    te::Op next = inline_reads(c, inline_from);
    const bool forced_all = std::all_of(site_of.begin(), site_of.end(), [&](size_t s) {
      return options.force.count(res.sites[s].key) > 0;
    });
    if (!forced_all && node_count(next->body) > kMaxInlinedBodyNodes) {
      for (size_t s : site_of) {
        res.sites[s].applied = false;
        res.sites[s].reason = "the consumer's body would grow past " +
                              std::to_string(kMaxInlinedBodyNodes) + " nodes";
      }
      current[ci] = c;
      continue;
    }
    for (size_t s : site_of) {
      res.sites[s].applied = true;
      res.sites[s].result = c->name;
    }
    for (int pi : inlined_ops) --remaining_reads[pi];
    current[ci] = next;
  }

  res.program.name = program.name;
  res.program.inputs = program.inputs;
  res.program.outputs = program.outputs;
  for (size_t i = 0; i < n; ++i) {
    const bool read_before = an.tensors[an.tes[i].output_tensor].consumers.size() > 0;
    const bool gone =
        read_before && remaining_reads[i] == 0 && !outputs.count(program.ops[i]->output.get());
    if (!gone) res.program.ops.push_back(current[i]);
  }
  te::verify(res.program);
  return res;
}

}  // namespace souffle::plan
