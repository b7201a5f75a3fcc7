// Tests of the text-feature lowering: TfIdfVectorizer over integer tokens.
#include <gtest/gtest.h>

#include "tests/lower/lower_test_util.h"

namespace souffle::lower {
namespace {

using namespace souffle::lower::testing;

graph::Attribute floats_attr(std::vector<double> v) {
  graph::Attribute a;
  a.kind = graph::Attribute::Kind::Floats;
  a.floats = std::move(v);
  return a;
}

graph::Node tfidf(const std::string& mode, int64_t max_skip, std::vector<double> weights = {}) {
  // Pool: unigram [1] -> column 0, bigram [1, 2] -> column 1.
  std::map<std::string, graph::Attribute> a = {
      {"mode", string_attr(mode)},          {"min_gram_length", int_attr(1)},
      {"max_gram_length", int_attr(2)},     {"max_skip_count", int_attr(max_skip)},
      {"ngram_counts", ints_attr({0, 1})},  {"ngram_indexes", ints_attr({0, 1})},
      {"pool_int64s", ints_attr({1, 1, 2})}};
  if (!weights.empty()) a["weights"] = floats_attr(weights);
  return make_node("TfIdfVectorizer", 1, a);
}

TEST(LowerText, CountsNgramsWithSkips) {
  auto x = values({5}, {1, 3, 2, 1, 2}, DType::Int64);
  // Without skips: unigram 1 twice, bigram (1, 2) once (positions 3-4).
  expect_values(run(tfidf("TF", 0), {x}, 9), {2}, DType::Float32, {2, 1});
  // Skip 1 adds (1, _, 2) at positions 0-2; unigrams still count once.
  expect_values(run(tfidf("TF", 1), {x}, 9), {2}, DType::Float32, {2, 2});
  // Batched rows.
  auto xb = values({2, 3}, {1, 2, 0, 2, 2, 2}, DType::Int32);
  expect_values(run(tfidf("TF", 0), {xb}, 9), {2, 2}, DType::Float32, {1, 1, 0, 0});
}

TEST(LowerText, Weighting) {
  auto x = values({5}, {1, 3, 2, 1, 2}, DType::Int64);
  expect_values(run(tfidf("IDF", 0, {0.5, 4}), {x}, 9), {2}, DType::Float32, {0.5, 4});
  expect_values(run(tfidf("TFIDF", 0, {0.5, 4}), {x}, 9), {2}, DType::Float32, {1, 4});
  EXPECT_THROW(lower(tfidf("BM25", 0), {x}, 9), UserError);
}

}  // namespace
}  // namespace souffle::lower
