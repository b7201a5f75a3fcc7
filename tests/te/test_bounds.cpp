#include "core/te/bounds.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "core/support/int_math.h"

namespace souffle::te {
namespace {

constexpr int64_t kInf = kBoundInf;

TEST(Interval, ArithmeticSaturatesAtTheUnknownBound) {
  const Interval a{2, 5}, b{-3, 4};
  EXPECT_EQ(a.plus(b), (Interval{-1, 9}));
  EXPECT_EQ(a.times(-2), (Interval{-10, -4}));
  EXPECT_EQ(a.times(b), (Interval{-15, 20}));
  EXPECT_EQ(b.negated(), (Interval{-4, 3}));
  EXPECT_EQ(a.min_with(b), (Interval{-3, 4}));
  EXPECT_EQ(a.max_with(b), (Interval{2, 5}));
  EXPECT_EQ(a.meet(b), (Interval{2, 4}));
  EXPECT_EQ(a.hull(Interval{7, 8}), (Interval{2, 8}));
  // Past 2^60 a bound becomes unknown, and an unknown bound stays unknown.
  EXPECT_EQ((Interval{0, kInf / 2 + 1}).times(2), (Interval{0, kInf}));
  EXPECT_FALSE((Interval{0, kInf / 2 + 1}).times(2).bounded());
  EXPECT_EQ(Interval::everything().plus(Interval::point(5)), Interval::everything());
  EXPECT_EQ(Interval::at_least(0).plus(Interval{-3, 3}), Interval::at_least(-3));
  EXPECT_FALSE(Interval::at_least(0).plus(Interval{-3, 3}).bounded());
  EXPECT_EQ(Interval::at_least(3).floor_div(2), (Interval{1, kInf}));
  EXPECT_TRUE(Interval::at_least(0).nonnegative());
  EXPECT_FALSE(Interval::at_least(0).bounded());
}

TEST(Interval, EmptyPropagates) {
  const Interval none;
  EXPECT_TRUE(none.empty());
  EXPECT_FALSE(none.nonnegative());
  EXPECT_TRUE(none.plus(Interval{1, 2}).empty());
  EXPECT_TRUE(none.times(Interval{1, 2}).empty());
  EXPECT_TRUE(none.min_with(Interval{-5, -3}).empty());
  EXPECT_TRUE((Interval{0, 3}).meet(Interval{5, 6}).empty());
  EXPECT_EQ(none.hull(Interval{1, 2}), (Interval{1, 2}));
}

TEST(Interval, FloorDivAndModAgreeWithEveryValue) {
  // The interval of floor(x / d) and x mod d holds every value and is reached at both ends.
  std::mt19937 rng(7);
  std::uniform_int_distribution<int64_t> v(-40, 40), dd(1, 9);
  for (int trial = 0; trial < 2000; ++trial) {
    int64_t lo = v(rng), hi = v(rng), d = dd(rng);
    if (lo > hi) std::swap(lo, hi);
    const Interval q = Interval{lo, hi}.floor_div(d), m = Interval{lo, hi}.floor_mod(d);
    int64_t qlo = kInf, qhi = -kInf, mlo = kInf, mhi = -kInf;
    for (int64_t x = lo; x <= hi; ++x) {
      qlo = std::min(qlo, floor_div(x, d));
      qhi = std::max(qhi, floor_div(x, d));
      mlo = std::min(mlo, floor_mod(x, d));
      mhi = std::max(mhi, floor_mod(x, d));
    }
    EXPECT_EQ(q, (Interval{qlo, qhi})) << lo << ".." << hi << " / " << d;
    EXPECT_LE(m.lo, mlo);
    EXPECT_GE(m.hi, mhi);
    // Within one period the remainder interval is exact.
    if (floor_div(lo, d) == floor_div(hi, d)) {
      EXPECT_EQ(m, (Interval{mlo, mhi}));
    }
  }
  EXPECT_EQ((Interval{5, 6}).floor_mod(4), (Interval{1, 2}));
  EXPECT_EQ((Interval{3, 4}).floor_mod(4), (Interval{0, 3}));
  EXPECT_EQ(Interval::everything().floor_mod(8), (Interval{0, 7}));
}

TEST(FoldInt, CAndFloorSemantics) {
  EXPECT_EQ(fold_int(BinaryOp::Div, -7, 2), -3);
  EXPECT_EQ(fold_int(BinaryOp::Mod, -7, 2), -1);
  EXPECT_EQ(fold_int(BinaryOp::FloorDiv, -7, 2), -4);
  EXPECT_EQ(fold_int(BinaryOp::FloorMod, -7, 2), 1);
  EXPECT_EQ(fold_int(BinaryOp::Min, -7, 2), -7);
  EXPECT_EQ(fold_int(BinaryOp::Max, -7, 2), 2);
  EXPECT_EQ(fold_int(BinaryOp::LE, 2, 2), 1);
  EXPECT_EQ(fold_int(BinaryOp::NE, 2, 2), 0);
  EXPECT_EQ(fold_int(BinaryOp::And, 1, 0), 0);
  EXPECT_EQ(fold_int(BinaryOp::Or, 1, 0), 1);
  EXPECT_FALSE(fold_int(BinaryOp::FloorDiv, 3, 0).has_value());
  EXPECT_FALSE(fold_int(BinaryOp::Mod, 3, 0).has_value());
  EXPECT_FALSE(fold_int(BinaryOp::BitAnd, 3, 1).has_value());
}

TEST(DecideCompare, FromTheDifference) {
  EXPECT_EQ(decide_compare(BinaryOp::LT, Interval{-5, -1}), 1);
  EXPECT_EQ(decide_compare(BinaryOp::LT, Interval{0, 3}), 0);
  EXPECT_EQ(decide_compare(BinaryOp::LT, Interval{-1, 0}), -1);
  EXPECT_EQ(decide_compare(BinaryOp::LE, Interval{-3, 0}), 1);
  EXPECT_EQ(decide_compare(BinaryOp::GT, Interval{1, 9}), 1);
  EXPECT_EQ(decide_compare(BinaryOp::GE, Interval{-9, -1}), 0);
  EXPECT_EQ(decide_compare(BinaryOp::EQ, Interval::point(0)), 1);
  EXPECT_EQ(decide_compare(BinaryOp::EQ, Interval{1, 2}), 0);
  EXPECT_EQ(decide_compare(BinaryOp::NE, Interval::point(0)), 0);
  EXPECT_EQ(decide_compare(BinaryOp::NE, Interval{-2, -1}), 1);
  EXPECT_EQ(decide_compare(BinaryOp::NE, Interval{-1, 1}), -1);
  EXPECT_EQ(decide_compare(BinaryOp::Add, Interval{1, 1}), -1);
  EXPECT_EQ(*holds_for(BinaryOp::GE), Interval::at_least(0));
  EXPECT_FALSE(holds_for(BinaryOp::NE).has_value());
}

TEST(LoopVarRange, FromMinAndExtent) {
  EXPECT_EQ(loop_var_range(Interval{2, 4}, Interval{3, 5}), (Interval{2, 8}));
  EXPECT_EQ(loop_var_range(Interval::point(0), Interval::point(16)), (Interval{0, 15}));
  EXPECT_TRUE(loop_var_range(Interval::point(0), Interval{-2, 0}).empty());  // never runs
  EXPECT_TRUE(loop_var_range(Interval{}, Interval::point(4)).empty());
  EXPECT_EQ(loop_var_range(Interval::at_least(1), Interval::point(4)), Interval::at_least(1));
}

TEST(MixedRadix, InjectiveWhenEachDigitDominates) {
  // i*16 + j, i in [0, 8), j in [0, 16): every value once.
  EXPECT_TRUE(mixed_radix_injective({{16, 7}, {1, 15}}));
  EXPECT_TRUE(mixed_radix_injective({{-16, 7}, {1, 15}}));  // the sign does not matter
  // i*8 + j with j in [0, 16): j = 8 at i = 0 meets j = 0 at i = 1.
  EXPECT_FALSE(mixed_radix_injective({{8, 7}, {1, 15}}));
  EXPECT_FALSE(mixed_radix_injective({{4, 3}, {4, 3}}));  // two vars with one stride
  EXPECT_TRUE(mixed_radix_injective({{4, 0}, {4, 3}}));   // ... unless one never moves
  EXPECT_FALSE(mixed_radix_injective({{0, 3}}));
  EXPECT_TRUE(mixed_radix_injective({}));
  // Checked against every point of small boxes.
  std::mt19937 rng(11);
  std::uniform_int_distribution<int64_t> cd(-9, 9), sd(0, 3);
  for (int trial = 0; trial < 500; ++trial) {
    std::vector<std::pair<int64_t, int64_t>> digits;
    for (int k = 0; k < 3; ++k) digits.push_back({cd(rng), sd(rng)});
    if (!mixed_radix_injective(digits)) continue;
    std::set<int64_t> seen;
    size_t points = 0;
    for (int64_t a = 0; a <= digits[0].second; ++a)
      for (int64_t b = 0; b <= digits[1].second; ++b)
        for (int64_t c = 0; c <= digits[2].second; ++c, ++points)
          seen.insert(digits[0].first * a + digits[1].first * b + digits[2].first * c);
    EXPECT_EQ(seen.size(), points);
  }
}

TEST(BoundsOf, IndexExpressions) {
  const Expr i = var("i"), j = var("j"), k = var("k");
  const Scope scope = {{i.get(), {0, 15}}, {j.get(), {0, 3}}};
  EXPECT_EQ(bounds_of(i * int_imm(4) + j, scope), (Interval{0, 63}));
  EXPECT_EQ(bounds_of(i - j, scope), (Interval{-3, 15}));
  EXPECT_EQ(bounds_of(floordiv(i, int_imm(4)), scope), (Interval{0, 3}));
  EXPECT_EQ(bounds_of(floormod(i + int_imm(16), int_imm(32)), scope), (Interval{16, 31}));
  EXPECT_EQ(bounds_of(floormod(i, int_imm(4)), scope), (Interval{0, 3}));
  EXPECT_EQ(bounds_of(min(i, j * int_imm(2)), scope), (Interval{0, 6}));
  EXPECT_EQ(bounds_of(max(i - int_imm(20), j), scope), (Interval{0, 3}));
  EXPECT_EQ(bounds_of(select(lt(i, j), i, j + int_imm(100)), scope), (Interval{0, 103}));
  EXPECT_EQ(bounds_of(lt(i, j), scope), (Interval{0, 1}));
  EXPECT_EQ(bounds_of(-i, scope), (Interval{-15, 0}));
  // C division truncates toward zero.
  EXPECT_EQ(bounds_of((i - int_imm(7)) / int_imm(2), scope), (Interval{-3, 4}));
  EXPECT_EQ(bounds_of((i - int_imm(7)) % int_imm(4), scope), Interval::everything());
  // A variable the scope does not know, a read, a float: unknown.
  EXPECT_EQ(bounds_of(k, scope), Interval::everything());
  EXPECT_EQ(bounds_of(k + i, scope), Interval::everything());
  EXPECT_EQ(bounds_of(floormod(k, int_imm(8)), scope), (Interval{0, 7}));
  EXPECT_EQ(bounds_of(cast(DType::Float32, i), scope), Interval::everything());
  EXPECT_EQ(bounds_of(cast(DType::Int64, cast(DType::Int32, i)), scope), Interval::everything());
}

TEST(BoundsOf, SignProofs) {
  // The C emitter's question: may floordiv(a, d) be printed as a / d?
  const Expr i = var("i"), j = var("j"), n = var("n");
  const Scope scope = {{i.get(), Interval::at_least(0)}, {j.get(), Interval::at_least(0)}};
  EXPECT_TRUE(provably_nonnegative(i * j + int_imm(3), scope));
  EXPECT_TRUE(provably_nonnegative(i / j, scope));  // a zero divisor gives 0 in the helpers
  EXPECT_TRUE(provably_nonnegative(floormod(i, j), scope));
  EXPECT_TRUE(provably_nonnegative(max(n, i), scope));   // either side non-negative
  EXPECT_FALSE(provably_nonnegative(min(n, i), scope));  // both sides must be
  EXPECT_FALSE(provably_nonnegative(i - j, scope));
  EXPECT_FALSE(provably_nonnegative(n, scope));
  EXPECT_FALSE(provably_nonnegative(i * int_imm(-1), scope));
  EXPECT_TRUE(provably_nonnegative(select(lt(n, i), i, int_imm(0)), scope));
}

}  // namespace
}  // namespace souffle::te
