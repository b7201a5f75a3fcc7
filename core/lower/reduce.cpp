// Lowering of reductions: Reduce*, Softmax/LogSoftmax/Hardmax and ArgMax/ArgMin.
//
// Each op becomes a few simple TEs rather than one opaque kernel (softmax = reduce-max,
// exp(x - max), reduce-sum, divide), so the planner can fuse and schedule the stages separately.
#include <algorithm>
#include <functional>
#include <optional>

#include "core/lower/lower.h"

namespace souffle::lower {
namespace {

using te::Expr;
using Idx = std::vector<Expr>;

/// Which input dimensions a reduction folds, and how output/reduce indices map to input ones.
struct ReducePlan {
  Shape in;
  std::vector<bool> reduced;  ///< per input dim
  bool keepdims = true;
  Shape out;      ///< output shape (reduced dims are 1 with keepdims, dropped without)
  Shape extents;  ///< extents of the reduced dims, in input order

  /// The input index read at output index i and reduce index k.
  Idx input_index(const Idx& i, const Idx& k) const {
    Idx idx;
    size_t oi = 0, ki = 0;
    for (size_t d = 0; d < in.size(); ++d) {
      if (reduced[d]) {
        idx.push_back(k[ki++]);
        if (keepdims) ++oi;
      } else {
        idx.push_back(i[oi++]);
      }
    }
    return idx;
  }
  /// The index of a keepdims-reduced tensor that belongs to input index j (the broadcast back).
  Idx kept_index(const Idx& j) const {
    Idx idx;
    for (size_t d = 0; d < in.size(); ++d) idx.push_back(reduced[d] ? te::int_imm(0) : j[d]);
    return idx;
  }
  /// Row-major position of the reduced coordinates taken from `coords` (one per reduced dim).
  Expr flat(const Idx& coords) const {
    Expr f = te::int_imm(0);
    for (size_t r = 0; r < extents.size(); ++r) f = f * te::int_imm(extents[r]) + coords[r];
    return f;
  }
  /// The reduced coordinates of input index j.
  Idx reduced_coords(const Idx& j) const {
    Idx c;
    for (size_t d = 0; d < in.size(); ++d)
      if (reduced[d]) c.push_back(j[d]);
    return c;
  }
  int64_t count() const { return shape_numel(extents); }
};

ReducePlan make_plan(const LowerCtx& ctx, const Shape& in, const std::vector<int64_t>& axes,
                     bool keepdims) {
  ReducePlan p;
  p.in = in;
  p.keepdims = keepdims;
  p.reduced.assign(in.size(), false);
  for (int64_t a : axes) {
    int64_t n = normalize_axis(ctx, a, static_cast<int64_t>(in.size()));
    if (in.empty()) continue;  // a scalar "reduces" over nothing
    if (p.reduced[n]) throw ctx.error("axis " + std::to_string(a) + " is repeated");
    p.reduced[n] = true;
  }
  for (size_t d = 0; d < in.size(); ++d) {
    if (p.reduced[d]) {
      p.extents.push_back(in[d]);
      if (keepdims) p.out.push_back(1);
    } else {
      p.out.push_back(in[d]);
    }
  }
  return p;
}

std::vector<int64_t> all_axes(size_t rank) {
  std::vector<int64_t> v(rank);
  for (size_t d = 0; d < rank; ++d) v[d] = static_cast<int64_t>(d);
  return v;
}

/// A reduction of fn(input index) over the plan; with nothing to reduce (a scalar input) it is
/// a plain compute of fn, so every op still has a well-formed body.
te::Tensor reduce_over(LowerCtx& ctx, const std::string& suffix, const ReducePlan& p, DType dt,
                       te::ReduceKind kind, const std::function<Expr(const Idx&)>& fn) {
  if (p.extents.empty())
    return ctx.compute(suffix, p.out, dt, [&](const Idx& i) { return fn(p.input_index(i, {})); });
  return ctx.reduce(suffix, p.out, dt, kind, p.extents,
                    [&](const Idx& i, const Idx& k) { return fn(p.input_index(i, k)); });
}

enum class RK { Sum, Mean, Max, Min, Prod, L1, L2, LogSum, LogSumExp, SumSquare };

std::vector<te::Tensor> lower_reduce(LowerCtx& ctx, RK rk) {
  te::Tensor x = ctx.required(0);
  const graph::Node& n = ctx.node();
  std::vector<int64_t> axes;
  if (ctx.has_input(1)) {
    axes = ctx.constant_ints(1, "axes");
  } else {
    axes = n.attr_ints("axes", {});
  }
  bool keepdims = n.attr_int("keepdims", 1) != 0;
  if (axes.empty()) {
    if (n.attr_int("noop_with_empty_axes", 0) != 0) return {x};
    axes = all_axes(x->shape.size());
  }
  ReducePlan p = make_plan(ctx, x->shape, axes, keepdims);
  DType dt = x->dtype;
  bool float_post = rk == RK::L2 || rk == RK::LogSum || rk == RK::LogSumExp;
  DType acc = float_post ? math_type(dt) : compute_type(dt);
  auto xin = [&](const Idx& j) { return te::cast(acc, te::read(x, j)); };

  te::ReduceKind kind = te::ReduceKind::Sum;
  std::function<Expr(const Idx&)> body = xin;
  std::function<Expr(const Expr&, const Idx&)> post;  // (reduced value, output index)
  switch (rk) {
    case RK::Sum:
      break;
    case RK::Mean: {
      double cnt = static_cast<double>(p.count());
      post = [cnt](const Expr& s, const Idx&) { return s / te::imm(s.dtype(), cnt); };
      break;
    }
    case RK::Max:
      kind = te::ReduceKind::Max;
      break;
    case RK::Min:
      kind = te::ReduceKind::Min;
      break;
    case RK::Prod:
      kind = te::ReduceKind::Prod;
      break;
    case RK::L1:
      body = [&](const Idx& j) { return te::abs(xin(j)); };
      break;
    case RK::SumSquare:
      body = [&](const Idx& j) {
        Expr v = xin(j);
        return v * v;
      };
      break;
    case RK::L2:
      body = [&](const Idx& j) {
        Expr v = xin(j);
        return v * v;
      };
      post = [](const Expr& s, const Idx&) { return te::sqrt(s); };
      break;
    case RK::LogSum:
      post = [](const Expr& s, const Idx&) { return te::log(s); };
      break;
    case RK::LogSumExp: {
      // log(sum(exp(x))) = m + log(sum(exp(x - m))) with m the max: no overflow.
      te::Tensor m = reduce_over(ctx, "max", p, acc, te::ReduceKind::Max, xin);
      body = [&, m](const Idx& j) {
        // The max sits at the output index, which is the input index without reduced dims.
        Idx oi;
        for (size_t d = 0; d < p.in.size(); ++d) {
          if (!p.reduced[d])
            oi.push_back(j[d]);
          else if (p.keepdims)
            oi.push_back(te::int_imm(0));
        }
        return te::exp(xin(j) - te::read(m, oi));
      };
      post = [m](const Expr& s, const Idx& i) { return te::read(m, i) + te::log(s); };
      break;
    }
  }
  if (!post && acc == dt) return {reduce_over(ctx, "", p, dt, kind, body)};
  te::Tensor r = reduce_over(ctx, "acc", p, acc, kind, body);
  return {ctx.compute("", p.out, dt, [&](const Idx& i) {
    Expr v = te::read(r, i);
    return te::cast(dt, post ? post(v, i) : v);
  })};
}

enum class SM { Softmax, LogSoftmax, Hardmax };

std::vector<te::Tensor> lower_softmax(LowerCtx& ctx, SM mode) {
  te::Tensor x = ctx.required(0);
  int64_t rank = static_cast<int64_t>(x->shape.size());
  bool coerce_2d = ctx.opset() < 13;
  int64_t axis = ctx.node().attr_int("axis", coerce_2d ? 1 : -1);
  if (rank == 0) throw ctx.error("input must have rank >= 1");
  // Before opset 13 the input is viewed as 2-D [prod(dims < axis), prod(dims >= axis)].
  int64_t a = normalize_axis(ctx, axis, rank);
  std::vector<int64_t> axes;
  if (coerce_2d)
    for (int64_t d = a; d < rank; ++d) axes.push_back(d);
  else
    axes.push_back(a);
  ReducePlan p = make_plan(ctx, x->shape, axes, true);
  DType dt = x->dtype;
  if (mode != SM::Hardmax && !is_float(dt))
    throw ctx.error(std::string("expects a floating-point input, got ") + dtype_name(dt));
  DType calc = mode == SM::Hardmax ? compute_type(dt) : math_type(dt);
  auto xin = [&](const Idx& j) { return te::cast(calc, te::read(x, j)); };

  te::Tensor m = reduce_over(ctx, "max", p, calc, te::ReduceKind::Max, xin);
  if (mode == SM::Softmax) {
    te::Tensor e = ctx.compute("exp", x->shape, calc, [&](const Idx& j) {
      return te::exp(xin(j) - te::read(m, p.kept_index(j)));
    });
    te::Tensor s = reduce_over(ctx, "sum", p, calc, te::ReduceKind::Sum,
                               [&](const Idx& j) { return te::read(e, j); });
    return {ctx.compute("", x->shape, dt, [&](const Idx& j) {
      return te::cast(dt, te::read(e, j) / te::read(s, p.kept_index(j)));
    })};
  }
  if (mode == SM::LogSoftmax) {
    te::Tensor s = reduce_over(ctx, "sum", p, calc, te::ReduceKind::Sum, [&](const Idx& j) {
      return te::exp(xin(j) - te::read(m, p.kept_index(j)));
    });
    return {ctx.compute("", x->shape, dt, [&](const Idx& j) {
      Idx kj = p.kept_index(j);
      return te::cast(dt, (xin(j) - te::read(m, kj)) - te::log(te::read(s, kj)));
    })};
  }
  // Hardmax: 1 at the first position (row-major over the reduced dims) holding the max.
  Expr none = te::int_imm(p.count());
  te::Tensor first =
      reduce_over(ctx, "argmax", p, DType::Int64, te::ReduceKind::Min, [&](const Idx& j) {
        return te::select(te::eq(xin(j), te::read(m, p.kept_index(j))), p.flat(p.reduced_coords(j)),
                          none);
      });
  return {ctx.compute("", x->shape, dt, [&](const Idx& j) {
    return te::cast(dt, te::eq(p.flat(p.reduced_coords(j)), te::read(first, p.kept_index(j))));
  })};
}

std::vector<te::Tensor> lower_arg(LowerCtx& ctx, bool is_max) {
  te::Tensor x = ctx.required(0);
  const graph::Node& n = ctx.node();
  int64_t rank = static_cast<int64_t>(x->shape.size());
  if (rank == 0) throw ctx.error("input must have rank >= 1");
  int64_t axis = normalize_axis(ctx, n.attr_int("axis", 0), rank);
  bool keepdims = n.attr_int("keepdims", 1) != 0;
  bool last = n.attr_int("select_last_index", 0) != 0;
  ReducePlan p = make_plan(ctx, x->shape, {axis}, keepdims);
  DType calc = compute_type(x->dtype);
  auto xin = [&](const Idx& j) { return te::cast(calc, te::read(x, j)); };
  te::Tensor m = ctx.reduce(is_max ? "max" : "min", p.out, calc,
                            is_max ? te::ReduceKind::Max : te::ReduceKind::Min, p.extents,
                            [&](const Idx& i, const Idx& k) { return xin(p.input_index(i, k)); });
  // Second pass: the smallest (or, with select_last_index, largest) index holding the extreme.
  Expr none = te::int_imm(last ? -1 : x->shape[axis]);
  return {ctx.reduce("", p.out, DType::Int64, last ? te::ReduceKind::Max : te::ReduceKind::Min,
                     p.extents, [&](const Idx& i, const Idx& k) {
                       return te::select(te::eq(xin(p.input_index(i, k)), te::read(m, i)), k[0],
                                         none);
                     })};
}

}  // namespace

void register_reduce(Registry& r) {
  struct Entry {
    const char* op;
    RK kind;
  };
  static const Entry kReduce[] = {
      {"ReduceSum", RK::Sum},
      {"ReduceMean", RK::Mean},
      {"ReduceMax", RK::Max},
      {"ReduceMin", RK::Min},
      {"ReduceProd", RK::Prod},
      {"ReduceL1", RK::L1},
      {"ReduceL2", RK::L2},
      {"ReduceLogSum", RK::LogSum},
      {"ReduceLogSumExp", RK::LogSumExp},
      {"ReduceSumSquare", RK::SumSquare},
  };
  for (const Entry& e : kReduce) {
    RK k = e.kind;
    r.add(e.op, [k](LowerCtx& ctx) { return lower_reduce(ctx, k); });
  }
  r.add("Softmax", [](LowerCtx& ctx) { return lower_softmax(ctx, SM::Softmax); });
  r.add("LogSoftmax", [](LowerCtx& ctx) { return lower_softmax(ctx, SM::LogSoftmax); });
  r.add("Hardmax", [](LowerCtx& ctx) { return lower_softmax(ctx, SM::Hardmax); });
  r.add("ArgMax", [](LowerCtx& ctx) { return lower_arg(ctx, true); });
  r.add("ArgMin", [](LowerCtx& ctx) { return lower_arg(ctx, false); });
}

}  // namespace souffle::lower
