// Lowering of the recurrent ops RNN, GRU and LSTM, unrolled over time.
//
// Each time step of each direction becomes one reduction for the gate pre-activations
// (X_t * W^T and H_{t-1} * R^T folded into a single reduction over input + hidden) followed by
// element-wise gate TEs; this is the structure Souffle fuses across steps. Batches whose
// sequence is shorter than the step carry their state unchanged and emit zeros in Y.
//
// An LSTM's pre-activations are laid out with the four gates of a hidden unit side by side
// (column 4 * unit + gate, W and R rows gathered to match): a GEMM tile of the gates then holds
// every gate of its units, so the cell update of a unit reads only the tile that computed it and
// can run on the same block after a block barrier, instead of after a grid barrier (one grid
// barrier per step, as in Souffle's LSTM kernel).
#include <algorithm>
#include <cctype>
#include <functional>
#include <string>

#include "core/lower/lower.h"

namespace souffle::lower {
namespace {

using te::Expr;
using Idx = std::vector<Expr>;

enum class Cell { Rnn, Gru, Lstm };

std::string lower_case(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

/// One activation function of the recurrent-op list, with its resolved alpha/beta.
struct Activation {
  std::string name;  ///< lower-case
  double alpha = 0, beta = 0;

  Expr apply(const Expr& x) const {
    DType t = x.dtype();
    Expr zero = te::imm(t, 0), one = te::imm(t, 1);
    if (name == "sigmoid") return te::sigmoid(x);
    if (name == "tanh") return te::tanh(x);
    if (name == "relu") return te::max(x, zero);
    if (name == "affine") return x * alpha + beta;
    if (name == "leakyrelu") return te::select(te::lt(x, zero), x * alpha, x);
    if (name == "thresholdedrelu") return te::select(te::gt(x, te::imm(t, alpha)), x, zero);
    if (name == "scaledtanh") return te::tanh(x * beta) * alpha;
    if (name == "hardsigmoid") return te::max(zero, te::min(one, x * alpha + beta));
    if (name == "elu") return te::select(te::lt(x, zero), (te::exp(x) - 1.0) * alpha, x);
    if (name == "softsign") return x / (te::abs(x) + 1.0);
    if (name == "softplus") return te::log(te::exp(x) + 1.0);
    SOUFFLE_CHECK(false, "unchecked activation " + name);
    return x;
  }
};

/// Whether an activation takes alpha / beta, and their defaults; false for unknown names.
bool activation_params(const std::string& n, bool& uses_alpha, bool& uses_beta, double& alpha,
                       double& beta) {
  uses_alpha = uses_beta = false;
  alpha = beta = 0;
  if (n == "sigmoid" || n == "tanh" || n == "relu" || n == "softsign" || n == "softplus")
    return true;
  if (n == "affine") return uses_alpha = uses_beta = true, alpha = 1.0, beta = 0.0, true;
  if (n == "leakyrelu") return uses_alpha = true, alpha = 0.01, true;
  if (n == "thresholdedrelu") return uses_alpha = true, alpha = 1.0, true;
  if (n == "scaledtanh") return uses_alpha = uses_beta = true, alpha = 1.0, beta = 1.0, true;
  if (n == "hardsigmoid") return uses_alpha = uses_beta = true, alpha = 0.2, beta = 0.5, true;
  if (n == "elu") return uses_alpha = true, alpha = 1.0, true;
  return false;
}

/// The activations of every direction: num_dirs lists of `per_dir` functions.
std::vector<std::vector<Activation>> parse_activations(const LowerCtx& ctx, Cell cell,
                                                       int64_t num_dirs) {
  std::vector<std::string> defaults;
  if (cell == Cell::Rnn) defaults = {"tanh"};
  if (cell == Cell::Gru) defaults = {"sigmoid", "tanh"};
  if (cell == Cell::Lstm) defaults = {"sigmoid", "tanh", "tanh"};
  size_t per_dir = defaults.size();
  const graph::Node& n = ctx.node();
  std::vector<std::string> names;
  if (n.has_attr("activations")) {
    const graph::Attribute& a = n.attrs.at("activations");
    if (a.kind != graph::Attribute::Kind::Strings && a.kind != graph::Attribute::Kind::String)
      throw ctx.error("activations must be a list of strings");
    names = a.kind == graph::Attribute::Kind::Strings ? a.strings : std::vector<std::string>{a.s};
  }
  if (names.empty()) names = defaults;
  // A single direction's list given for a bidirectional op applies to both directions.
  if (names.size() == per_dir && num_dirs == 2) {
    std::vector<std::string> twice = names;
    twice.insert(twice.end(), names.begin(), names.end());
    names = twice;
  }
  if (names.size() != per_dir * static_cast<size_t>(num_dirs))
    throw ctx.error("expected " + std::to_string(per_dir * num_dirs) + " activations, got " +
                    std::to_string(names.size()));
  std::vector<double> alphas = n.attr_floats("activation_alpha", {});
  std::vector<double> betas = n.attr_floats("activation_beta", {});
  size_t ai = 0, bi = 0;
  std::vector<std::vector<Activation>> out(static_cast<size_t>(num_dirs));
  for (size_t k = 0; k < names.size(); ++k) {
    Activation act;
    act.name = lower_case(names[k]);
    bool ua = false, ub = false;
    if (!activation_params(act.name, ua, ub, act.alpha, act.beta))
      throw ctx.error("unsupported activation '" + names[k] + "'");
    if (ua && ai < alphas.size()) act.alpha = alphas[ai++];
    if (ub && bi < betas.size()) act.beta = betas[bi++];
    out[k / per_dir].push_back(act);
  }
  return out;
}

/// A per-batch state function: (batch index, hidden index) -> value of the calc type.
using StateFn = std::function<Expr(const Expr& b, const Expr& h)>;

struct Rec {
  Cell cell;
  int64_t gates = 1;  ///< 1 / 3 / 4 blocks of `hidden` rows in W and R
  int64_t seq = 0, batch = 0, input = 0, hidden = 0, dirs = 1;
  bool batch_first = false;  ///< layout 1
  bool reverse_only = false;
  DType dt = DType::Float32, calc = DType::Float32;
  te::Tensor X, W, R, B, L, H0, C0, P;
  double clip = 0;  ///< 0: no clipping
  bool input_forget = false, linear_before_reset = false;
  std::vector<std::vector<Activation>> acts;
  int64_t steps = 0;

  Expr c(const Expr& e) const { return te::cast(calc, e); }
  Expr i64(int64_t v) const { return te::int_imm(v); }
  /// X[t, b, k] in either layout.
  Expr x(const Expr& t, const Expr& b, const Expr& k) const {
    return c(batch_first ? te::read(X, {b, t, k}) : te::read(X, {t, b, k}));
  }
  /// The sequence length of batch b, clamped to [0, seq].
  Expr len(const Expr& b) const {
    if (!L) return i64(seq);
    Expr v = te::cast(DType::Int64, te::read(L, {b}));
    return te::max(i64(0), te::min(v, i64(seq)));
  }
  /// Bias element j of the W (or R) half of B, or 0 without B.
  Expr bias(int64_t d, bool r_half, const Expr& j) const {
    if (!B) return te::imm(calc, 0);
    Expr col = r_half ? j + i64(gates * hidden) : j;
    return c(te::read(B, {i64(d), col}));
  }
  Expr clipped(const Expr& v) const {
    if (clip <= 0) return v;
    return te::max(te::imm(calc, -clip), te::min(te::imm(calc, clip), v));
  }
  StateFn initial(const te::Tensor& t, int64_t d) const {
    if (!t) return [this](const Expr&, const Expr&) { return te::imm(calc, 0); };
    return [this, t, d](const Expr& b, const Expr& h) {
      return c(batch_first ? te::read(t, {b, i64(d), h}) : te::read(t, {i64(d), b, h}));
    };
  }
};

void check_shape(const LowerCtx& ctx, const te::Tensor& t, const Shape& want, const char* what) {
  if (t && t->shape != want)
    throw ctx.error(std::string(what) + " has shape " + shape_str(t->shape) + ", expected " +
                    shape_str(want));
}

Rec parse(LowerCtx& ctx, Cell cell) {
  Rec r;
  r.cell = cell;
  r.gates = cell == Cell::Rnn ? 1 : cell == Cell::Gru ? 3 : 4;
  const graph::Node& n = ctx.node();
  r.X = ctx.required(0);
  r.W = ctx.required(1);
  r.R = ctx.required(2);
  r.B = ctx.input(3);
  r.L = ctx.input(4);
  r.H0 = ctx.input(5);
  if (cell == Cell::Lstm) {
    r.C0 = ctx.input(6);
    r.P = ctx.input(7);
  }
  r.batch_first = n.attr_int("layout", 0) != 0;
  if (r.X->shape.size() != 3) throw ctx.error("X must have rank 3");
  if (r.W->shape.size() != 3) throw ctx.error("W must have rank 3");
  if (r.R->shape.size() != 3) throw ctx.error("R must have rank 3");
  r.seq = r.X->shape[r.batch_first ? 1 : 0];
  r.batch = r.X->shape[r.batch_first ? 0 : 1];
  r.input = r.X->shape[2];
  std::string dir = n.attr_string("direction", "forward");
  if (dir == "forward") {
    r.dirs = 1;
  } else if (dir == "reverse") {
    r.dirs = 1;
    r.reverse_only = true;
  } else if (dir == "bidirectional") {
    r.dirs = 2;
  } else {
    throw ctx.error("unknown direction '" + dir + "'");
  }
  r.hidden = n.attr_int("hidden_size", r.R->shape[2]);
  if (r.hidden <= 0) throw ctx.error("hidden_size must be positive");
  check_shape(ctx, r.W, {r.dirs, r.gates * r.hidden, r.input}, "W");
  check_shape(ctx, r.R, {r.dirs, r.gates * r.hidden, r.hidden}, "R");
  check_shape(ctx, r.B, {r.dirs, 2 * r.gates * r.hidden}, "B");
  check_shape(ctx, r.L, {r.batch}, "sequence_lens");
  Shape state = r.batch_first ? Shape{r.batch, r.dirs, r.hidden} : Shape{r.dirs, r.batch, r.hidden};
  check_shape(ctx, r.H0, state, "initial_h");
  check_shape(ctx, r.C0, state, "initial_c");
  check_shape(ctx, r.P, {r.dirs, 3 * r.hidden}, "P");
  r.dt = r.X->dtype;
  if (!is_float(r.dt)) throw ctx.error("X must be a floating-point tensor");
  for (const te::Tensor& t : {r.W, r.R, r.B, r.H0, r.C0, r.P})
    if (t && t->dtype != r.dt) throw ctx.error("inputs must share X's element type");
  if (r.L && is_float(r.L->dtype)) throw ctx.error("sequence_lens must be an integer tensor");
  r.calc = r.dt == DType::Float16 || r.dt == DType::BFloat16 ? DType::Float32 : r.dt;
  r.clip = n.has_attr("clip") ? n.attr_float("clip", 0) : 0;
  if (n.has_attr("clip") && r.clip <= 0) throw ctx.error("clip must be positive");
  r.input_forget = n.attr_int("input_forget", 0) != 0;
  r.linear_before_reset = n.attr_int("linear_before_reset", 0) != 0;
  r.acts = parse_activations(ctx, cell, r.dirs);
  // With constant lengths, steps past the longest sequence only carry state: skip them.
  r.steps = r.seq;
  if (ConstTensorPtr lc = ctx.constant(4)) {
    int64_t mx = 0;
    for (int64_t v : lc->to_i64()) mx = std::max(mx, std::min(v, r.seq));
    r.steps = mx;
  }
  return r;
}

struct DirResult {
  std::vector<te::Tensor> h;  ///< state after each step, [batch, hidden] of the calc type
  te::Tensor c_last;          ///< LSTM cell state after the last step
};

/// Unrolls direction d (reverse when `rev`) of the op.
DirResult unroll(LowerCtx& ctx, const Rec& r, int64_t d, bool rev) {
  DirResult res;
  const std::vector<Activation>& act = r.acts[static_cast<size_t>(d)];
  const int64_t H = r.hidden, I = r.input;
  Shape st{r.batch, H};
  StateFn hprev = r.initial(r.H0, d);
  StateFn cprev = r.initial(r.C0, d);
  for (int64_t s = 0; s < r.steps; ++s) {
    // Op names "d<dir>/t<step>/<stage>" (built by append: g++ 12 misreports operator+ here).
    std::string p = "d";
    p.append(std::to_string(d)).append("/t").append(std::to_string(s)).append("/");
    // The time a step reads: s forward; len_b - 1 - s in reverse (clamped when inactive).
    auto time = [&, s](const Expr& b) -> Expr {
      if (!rev) return r.i64(s);
      Expr t = r.len(b) - r.i64(1 + s);
      return te::max(t, r.i64(0));
    };
    auto active = [&, s](const Expr& b) { return te::lt(r.i64(s), r.len(b)); };
    // Columns of the gate pre-activation tensor: gates*H rows of W/R; a GRU additionally keeps
    // the candidate's recurrent part separate (it is combined with the reset gate later).
    bool gru = r.cell == Cell::Gru;
    const bool interleaved = r.cell == Cell::Lstm;  // column 4 * unit + gate (see the top)
    int64_t cols = r.gates * H + (gru && r.linear_before_reset ? H : 0);
    te::Tensor pre = ctx.reduce(
        p + "gates", {r.batch, cols}, r.calc, te::ReduceKind::Sum, {I + H},
        [&](const Idx& i, const Idx& k) {
          const Expr& b = i[0];
          const Expr& j = i[1];
          Expr kk = k[0];
          Expr row = gru && r.linear_before_reset
                         ? te::select(te::ge(j, r.i64(r.gates * H)), j - r.i64(H), j)
                         : j;
          if (interleaved)
            row = te::floormod(j, r.i64(r.gates)) * r.i64(H) + te::floordiv(j, r.i64(r.gates));
          Expr xw = r.x(time(b), b, te::min(kk, r.i64(I - 1))) *
                    r.c(te::read(r.W, {r.i64(d), row, te::min(kk, r.i64(I - 1))}));
          Expr kh = te::max(kk - r.i64(I), r.i64(0));
          Expr hr = hprev(b, kh) * r.c(te::read(r.R, {r.i64(d), row, kh}));
          Expr zero = te::imm(r.calc, 0);
          if (gru) {
            // In a GRU the candidate block (2H..3H) takes only X*W; with
            // linear_before_reset the extra block (3H..4H) takes only H*R.
            Expr takes_h = te::lt(j, r.i64(2 * H));
            if (r.linear_before_reset) {
              takes_h = te::logical_or(takes_h, te::ge(j, r.i64(3 * H)));
              xw = te::select(te::lt(j, r.i64(3 * H)), xw, zero);
            }
            hr = te::select(takes_h, hr, zero);
          }
          return te::select(te::lt(kk, r.i64(I)), xw, hr);
        });
    auto g = [&](int64_t gate, const Idx& i) {
      Expr j = i[1] + r.i64(gate * H);  // the row of W, R and B
      Expr col = interleaved ? i[1] * r.i64(r.gates) + r.i64(gate) : j;
      return te::read(pre, {i[0], col}) + r.bias(d, false, j) + r.bias(d, true, j);
    };
    if (r.cell == Cell::Rnn) {
      te::Tensor h = ctx.compute(p + "h", st, r.calc, [&](const Idx& i) {
        return te::select(active(i[0]), act[0].apply(r.clipped(g(0, i))), hprev(i[0], i[1]));
      });
      res.h.push_back(h);
      hprev = [h](const Expr& b, const Expr& k) { return te::read(h, {b, k}); };
    } else if (r.cell == Cell::Gru) {
      // Gate order z, r, h.
      te::Tensor rg = ctx.compute(p + "r", st, r.calc,
                                  [&](const Idx& i) { return act[0].apply(r.clipped(g(1, i))); });
      te::Tensor rh;  // (r . H_{t-1}) * Rh^T, without linear_before_reset
      if (!r.linear_before_reset) {
        rh = ctx.reduce(p + "rh", st, r.calc, te::ReduceKind::Sum, {H},
                        [&](const Idx& i, const Idx& k) {
                          return te::read(rg, {i[0], k[0]}) * hprev(i[0], k[0]) *
                                 r.c(te::read(r.R, {r.i64(d), i[1] + r.i64(2 * H), k[0]}));
                        });
      }
      te::Tensor h = ctx.compute(p + "h", st, r.calc, [&](const Idx& i) {
        Expr z = act[0].apply(r.clipped(g(0, i)));
        Expr jh = i[1] + r.i64(2 * H);
        Expr cand;
        if (r.linear_before_reset) {
          Expr hpart = te::read(pre, {i[0], i[1] + r.i64(3 * H)}) + r.bias(d, true, jh);
          cand =
              te::read(pre, {i[0], jh}) + r.bias(d, false, jh) + te::read(rg, {i[0], i[1]}) * hpart;
        } else {
          cand = te::read(pre, {i[0], jh}) + te::read(rh, {i[0], i[1]}) + r.bias(d, false, jh) +
                 r.bias(d, true, jh);
        }
        Expr hh = act[1].apply(r.clipped(cand));
        Expr hp = hprev(i[0], i[1]);
        Expr next = (1.0 - z) * hh + z * hp;
        return te::select(active(i[0]), next, hp);
      });
      res.h.push_back(h);
      hprev = [h](const Expr& b, const Expr& k) { return te::read(h, {b, k}); };
    } else {
      // Gate order i, o, f, c; peepholes P in order i, o, f.
      auto peep = [&](int64_t which, const Expr& h) -> Expr {
        if (!r.P) return te::imm(r.calc, 0);
        return r.c(te::read(r.P, {r.i64(d), h + r.i64(which * H)}));
      };
      te::Tensor cnew = ctx.compute(p + "c", st, r.calc, [&](const Idx& i) {
        Expr cp = cprev(i[0], i[1]);
        Expr ig = act[0].apply(r.clipped(g(0, i) + peep(0, i[1]) * cp));
        Expr fg = r.input_forget ? 1.0 - ig : act[0].apply(r.clipped(g(2, i) + peep(2, i[1]) * cp));
        Expr cc = act[1].apply(r.clipped(g(3, i)));
        return te::select(active(i[0]), fg * cp + ig * cc, cp);
      });
      te::Tensor h = ctx.compute(p + "h", st, r.calc, [&](const Idx& i) {
        Expr cn = te::read(cnew, {i[0], i[1]});
        Expr og = act[0].apply(r.clipped(g(1, i) + peep(1, i[1]) * cn));
        return te::select(active(i[0]), og * act[2].apply(cn), hprev(i[0], i[1]));
      });
      res.h.push_back(h);
      res.c_last = cnew;
      hprev = [h](const Expr& b, const Expr& k) { return te::read(h, {b, k}); };
      cprev = [cnew](const Expr& b, const Expr& k) { return te::read(cnew, {b, k}); };
    }
  }
  return res;
}

std::vector<te::Tensor> lower_recurrent(LowerCtx& ctx, Cell cell) {
  Rec r = parse(ctx, cell);
  std::vector<DirResult> dirs;
  for (int64_t d = 0; d < r.dirs; ++d) dirs.push_back(unroll(ctx, r, d, r.reverse_only || d == 1));
  auto wanted = [&](size_t k) { return k < ctx.num_outputs() && !ctx.node().outputs[k].empty(); };
  std::vector<te::Tensor> outs(ctx.num_outputs());
  const Expr zero = te::imm(r.calc, 0);

  if (wanted(0)) {
    Shape ys = r.batch_first ? Shape{r.batch, r.seq, r.dirs, r.hidden}
                             : Shape{r.seq, r.dirs, r.batch, r.hidden};
    outs[0] = ctx.compute("Y", ys, r.dt, [&](const Idx& i) {
      Expr t = r.batch_first ? i[1] : i[0];
      Expr d = r.batch_first ? i[2] : i[1];
      Expr b = r.batch_first ? i[0] : i[2];
      Expr h = i[3];
      Expr v = zero;
      for (int64_t dd = r.dirs - 1; dd >= 0; --dd) {
        bool rev = r.reverse_only || dd == 1;
        // The step that produced time t: t forward, len_b - 1 - t in reverse.
        Expr step = rev ? r.len(b) - r.i64(1) - t : t;
        Expr per_dir = zero;
        const auto& hs = dirs[static_cast<size_t>(dd)].h;
        for (int64_t s = static_cast<int64_t>(hs.size()) - 1; s >= 0; --s)
          per_dir = te::select(te::eq(step, r.i64(s)), te::read(hs[static_cast<size_t>(s)], {b, h}),
                               per_dir);
        per_dir = te::select(te::lt(t, r.len(b)), per_dir, zero);
        v = r.dirs == 1 ? per_dir : te::select(te::eq(d, r.i64(dd)), per_dir, v);
      }
      return te::cast(r.dt, v);
    });
  }
  // Final states: the last step's state (shorter sequences carried theirs), or the initial one.
  auto final_state = [&](const std::string& suffix, bool cell_state) {
    Shape s = r.batch_first ? Shape{r.batch, r.dirs, r.hidden} : Shape{r.dirs, r.batch, r.hidden};
    return ctx.compute(suffix, s, r.dt, [&](const Idx& i) {
      Expr d = r.batch_first ? i[1] : i[0];
      Expr b = r.batch_first ? i[0] : i[1];
      Expr v;
      for (int64_t dd = r.dirs - 1; dd >= 0; --dd) {
        const DirResult& dr = dirs[static_cast<size_t>(dd)];
        te::Tensor last = cell_state ? dr.c_last : (dr.h.empty() ? nullptr : dr.h.back());
        Expr here =
            last ? te::read(last, {b, i[2]}) : r.initial(cell_state ? r.C0 : r.H0, dd)(b, i[2]);
        v = v.defined() ? te::select(te::eq(d, r.i64(dd)), here, v) : here;
      }
      return te::cast(r.dt, v);
    });
  };
  if (wanted(1)) outs[1] = final_state("Y_h", false);
  if (cell == Cell::Lstm && wanted(2)) outs[2] = final_state("Y_c", true);
  return outs;
}

}  // namespace

void register_recurrent(Registry& r) {
  r.add("RNN", [](LowerCtx& ctx) { return lower_recurrent(ctx, Cell::Rnn); });
  r.add("GRU", [](LowerCtx& ctx) { return lower_recurrent(ctx, Cell::Gru); });
  r.add("LSTM", [](LowerCtx& ctx) { return lower_recurrent(ctx, Cell::Lstm); });
}

}  // namespace souffle::lower
