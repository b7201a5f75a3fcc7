// Lowering of AffineGrid (opset 20): the sampling grid of a batch of affine transforms, what a
// spatial transformer feeds GridSample. The output size is a constant input, so every output
// position's normalized base coordinate is a linear function of its index, and the op is one
// element-wise TE: grid[n, ..., r] = sum_k theta[n, r, k] * base_k + theta[n, r, last].
#include "core/lower/lower.h"

namespace souffle::lower {

void register_affine_grid(Registry& r);

namespace {

using te::Expr;

/// The normalized coordinate of index `i` on an axis of `size` points: -1..1 through the
/// corner points with align_corners, else through the centers of `size` cells. A one-point
/// axis sits at 0 either way, as in PyTorch, whose exporter writes this op (ONNX's reference
/// implementation puts it at -1 with align_corners).
Expr base_coord(Expr i, int64_t size, bool align_corners, DType t) {
  Expr x = te::cast(t, i);
  if (size == 1) return te::float_imm(0.0, t);
  if (align_corners) {
    return x * (2.0 / static_cast<double>(size - 1)) - 1.0;
  }
  return (x * 2.0 + 1.0) / static_cast<double>(size) - 1.0;
}

std::vector<te::Tensor> lower_affine_grid(LowerCtx& ctx) {
  te::Tensor theta = ctx.required(0);
  std::vector<int64_t> size = ctx.constant_ints(1, "AffineGrid's size");
  bool align = ctx.node().attr_int("align_corners", 0) != 0;
  if (!is_float(theta->dtype)) throw ctx.error("theta must be a floating-point tensor");
  if (size.size() != 4 && size.size() != 5)
    throw ctx.error("size must have 4 (N, C, H, W) or 5 (N, C, D, H, W) values, got " +
                    std::to_string(size.size()));
  const int64_t spatial = static_cast<int64_t>(size.size()) - 2;  // 2 or 3
  const Shape want{size[0], spatial, spatial + 1};
  if (theta->shape != want)
    throw ctx.error("theta has shape " + shape_str(theta->shape) + ", expected " + shape_str(want) +
                    " for size " + shape_str(size));
  for (int64_t s : size)
    if (s < 1) throw ctx.error("size " + shape_str(size) + " has an empty dimension");

  // Output [N, (D,) H, W, spatial]; the last axis picks the row of theta (x, y(, z)), and base
  // coordinate k belongs to spatial axis spatial - 1 - k (x runs along W, the last axis).
  Shape out{size[0]};
  for (int64_t d = 0; d < spatial; ++d) out.push_back(size[2 + d]);
  out.push_back(spatial);
  const DType t = compute_type(theta->dtype);
  te::Tensor grid = ctx.compute("grid", out, theta->dtype, [&](const std::vector<Expr>& i) {
    Expr n = i[0], r = i.back();
    Expr sum = te::cast(t, te::read(theta, {n, r, te::int_imm(spatial)}));
    for (int64_t k = 0; k < spatial; ++k) {
      int64_t axis = spatial - 1 - k;  // index into the spatial output axes
      Expr coord = base_coord(i[1 + axis], size[2 + axis], align, t);
      sum = sum + te::cast(t, te::read(theta, {n, r, te::int_imm(k)})) * coord;
    }
    return te::cast(theta->dtype, sum);
  });
  return {grid};
}

}  // namespace

void register_affine_grid(Registry& r) {
  r.add("AffineGrid", lower_affine_grid);
}

}  // namespace souffle::lower
