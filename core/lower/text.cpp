// Lowering of text features over integer tokens: TfIdfVectorizer.
//
// The pool of n-grams is an attribute, so it becomes constant tables (each n-gram's tokens,
// length and output column). Counting is one reduction over (pool entry, skip, start position):
// an n-gram of length n with skip distance d matches at start i when x[i + k d] is its k-th
// token for every k < n. Unigrams count once (their skip does not matter). The weighting
// (TF, IDF, TFIDF) is an element-wise TE over the counts.
#include <algorithm>
#include <string>

#include "core/lower/lower.h"

namespace souffle::lower {
namespace {

using te::Expr;
using Idx = std::vector<Expr>;

std::vector<te::Tensor> lower_tfidf(LowerCtx& ctx) {
  te::Tensor x = ctx.required(0);
  const graph::Node& n = ctx.node();
  if (x->dtype != DType::Int32 && x->dtype != DType::Int64)
    throw ctx.error(std::string("only int32 and int64 tokens are supported, got ") +
                    dtype_name(x->dtype));
  if (x->shape.empty() || x->shape.size() > 2)
    throw ctx.error("input must have shape [C] or [N, C], got " + shape_str(x->shape));
  if (n.has_attr("pool_strings")) throw ctx.error("string pools are not supported");
  int64_t min_len = n.attr_int("min_gram_length", 1), max_len = n.attr_int("max_gram_length", 1);
  int64_t max_skip = n.attr_int("max_skip_count", 0);
  std::string mode = n.attr_string("mode", "TF");
  if (mode != "TF" && mode != "IDF" && mode != "TFIDF")
    throw ctx.error("mode must be TF, IDF or TFIDF, got '" + mode + "'");
  if (min_len < 1 || max_len < min_len || max_skip < 0)
    throw ctx.error("needs 1 <= min_gram_length <= max_gram_length and max_skip_count >= 0");
  std::vector<int64_t> counts = n.attr_ints("ngram_counts");
  std::vector<int64_t> indexes = n.attr_ints("ngram_indexes");
  std::vector<int64_t> pool = n.attr_ints("pool_int64s");
  std::vector<double> weights = n.attr_floats("weights");
  if (indexes.empty()) throw ctx.error("ngram_indexes is empty");
  int64_t out_size = *std::max_element(indexes.begin(), indexes.end()) + 1;
  if (!weights.empty() && static_cast<int64_t>(weights.size()) < out_size)
    throw ctx.error("weights has fewer entries than the output has columns");

  // The pool's n-grams of lengths in [min, max], padded to max_len tokens.
  std::vector<int64_t> tokens, lengths, columns;
  int64_t id = 0;
  for (size_t g = 0; g < counts.size(); ++g) {
    int64_t len = static_cast<int64_t>(g) + 1;
    int64_t begin = counts[g];
    int64_t end = g + 1 < counts.size() ? counts[g + 1] : static_cast<int64_t>(pool.size());
    if (begin < 0 || end < begin || end > static_cast<int64_t>(pool.size()) ||
        (end - begin) % len != 0)
      throw ctx.error("ngram_counts does not split the pool into n-grams");
    for (int64_t p = begin; p < end; p += len, ++id) {
      if (id >= static_cast<int64_t>(indexes.size()))
        throw ctx.error("ngram_indexes has fewer entries than the pool has n-grams");
      if (len < min_len || len > max_len) continue;
      for (int64_t k = 0; k < max_len; ++k)
        tokens.push_back(k < len ? pool[static_cast<size_t>(p + k)] : 0);
      lengths.push_back(len);
      columns.push_back(indexes[static_cast<size_t>(id)]);
    }
  }
  int64_t grams = static_cast<int64_t>(lengths.size());
  bool batched = x->shape.size() == 2;
  int64_t row = x->shape.back();
  Shape out_shape = batched ? Shape{x->shape[0], out_size} : Shape{out_size};
  const DType f = DType::Float32;
  te::Tensor freq;
  if (grams == 0) {
    freq = ctx.compute("counts", out_shape, f, [&](const Idx&) { return te::imm(f, 0); });
  } else {
    te::Tensor tok =
        ctx.constant_tensor("pool", TensorData::from_i64(DType::Int64, {grams, max_len}, tokens));
    te::Tensor len_t =
        ctx.constant_tensor("lengths", TensorData::from_i64(DType::Int64, {grams}, lengths));
    te::Tensor col_t =
        ctx.constant_tensor("columns", TensorData::from_i64(DType::Int64, {grams}, columns));
    freq = ctx.reduce(
        "counts", out_shape, f, te::ReduceKind::Sum, {grams, max_skip + 1, row},
        [&](const Idx& i, const Idx& r) {
          Expr j = r[0], d = r[1] + te::int_imm(1), start = r[2];
          Expr len = te::read(len_t, {j});
          Expr last = start + (len - te::int_imm(1)) * d;
          // Unigrams count once, at skip distance 1.
          Expr ok = te::logical_and(te::eq(te::read(col_t, {j}), i.back()),
                                    te::logical_and(te::lt(last, te::int_imm(row)),
                                                    te::logical_or(te::gt(len, te::int_imm(1)),
                                                                   te::eq(d, te::int_imm(1)))));
          for (int64_t k = 0; k < max_len; ++k) {
            Expr pos = te::min(start + te::int_imm(k) * d, te::int_imm(row - 1));
            Idx xi = batched ? Idx{i[0], pos} : Idx{pos};
            Expr same =
                te::eq(te::cast(DType::Int64, te::read(x, xi)), te::read(tok, {j, te::int_imm(k)}));
            ok = te::logical_and(ok, te::logical_or(te::ge(te::int_imm(k), len), same));
          }
          return te::cast(f, ok);
        });
  }
  te::Tensor w;
  if (!weights.empty()) {
    weights.resize(static_cast<size_t>(out_size));
    w = ctx.constant_tensor("weights", TensorData::from_f64(f, {out_size}, weights));
  }
  if (mode == "TF" || (mode == "TFIDF" && !w)) return {freq};
  return {ctx.compute("", out_shape, f, [&](const Idx& i) {
    Expr c = te::read(freq, i);
    Expr weight = w ? te::read(w, {i.back()}) : te::imm(f, 1);
    if (mode == "IDF") return te::select(te::gt(c, te::imm(f, 0)), weight, te::imm(f, 0));
    return weight * c;
  })};
}

}  // namespace

void register_text(Registry& r) {
  r.add("TfIdfVectorizer", lower_tfidf);
}

}  // namespace souffle::lower
