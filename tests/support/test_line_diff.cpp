// The line diff: shortest (its kept lines are a longest common subsequence, checked against a
// dynamic-programming LCS on random texts), consistent (kept lines match in order), and cheap
// on unrelated texts (it gives up past its edit limit and says so).
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "core/support/line_diff.h"

namespace souffle {
namespace {

size_t lcs(const std::vector<std::string_view>& a, const std::vector<std::string_view>& b) {
  std::vector<std::vector<size_t>> t(a.size() + 1, std::vector<size_t>(b.size() + 1, 0));
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j)
      t[i][j] = a[i - 1] == b[j - 1] ? t[i - 1][j - 1] + 1 : std::max(t[i - 1][j], t[i][j - 1]);
  return t[a.size()][b.size()];
}

/// The kept lines of both sides, in order, must be the same sequence.
bool keptAlike(const std::vector<std::string_view>& a, const std::vector<std::string_view>& b,
               const LineDiff& d) {
  std::vector<std::string_view> ka, kb;
  for (size_t i = 0; i < a.size(); ++i)
    if (!d.removed[i]) ka.push_back(a[i]);
  for (size_t j = 0; j < b.size(); ++j)
    if (!d.added[j]) kb.push_back(b[j]);
  return ka == kb && ka.size() == d.common;
}

TEST(LineDiff, SplitsLines) {
  EXPECT_TRUE(split_lines("").empty());
  EXPECT_EQ(split_lines("a\nb\n"), (std::vector<std::string_view>{"a", "b"}));
  EXPECT_EQ(split_lines("a\n\nb"), (std::vector<std::string_view>{"a", "", "b"}));
}

TEST(LineDiff, MarksWhatAStepChanged) {
  const std::string before = "T0 = A * B\nT1 = T0 + C\nT2 = relu(T1)\nout = T2\n";
  const std::string after = "T0 = A * B\nT2 = relu(T0 + C)\nout = T2\n";
  LineDiff d = diff_texts(before, after);
  EXPECT_TRUE(d.exact);
  EXPECT_EQ(d.removed, (std::vector<bool>{false, true, true, false}));
  EXPECT_EQ(d.added, (std::vector<bool>{false, true, false}));
  EXPECT_EQ(d.common, 2u);
  EXPECT_EQ(d.removed_count(), 2u);
  EXPECT_EQ(d.added_count(), 1u);
}

TEST(LineDiff, EqualAndEmptyTexts) {
  LineDiff same = diff_texts("x\ny\n", "x\ny\n");
  EXPECT_EQ(same.common, 2u);
  EXPECT_EQ(same.removed_count() + same.added_count(), 0u);
  LineDiff grown = diff_texts("", "x\ny\n");
  EXPECT_EQ(grown.added_count(), 2u);
  LineDiff gone = diff_texts("x\ny\n", "");
  EXPECT_EQ(gone.removed_count(), 2u);
}

TEST(LineDiff, IsShortestOnRandomTexts) {
  std::mt19937 rng(7);
  const std::vector<std::string> alphabet = {"a", "b", "c", "d", "e"};
  for (int round = 0; round < 300; ++round) {
    std::vector<std::string> sa(rng() % 14), sb(rng() % 14);
    for (std::string& s : sa) s = alphabet[rng() % alphabet.size()];
    for (std::string& s : sb) s = alphabet[rng() % alphabet.size()];
    std::vector<std::string_view> a(sa.begin(), sa.end()), b(sb.begin(), sb.end());
    LineDiff d = diff_lines(a, b);
    ASSERT_TRUE(d.exact);
    ASSERT_EQ(d.common, lcs(a, b)) << "round " << round;
    ASSERT_TRUE(keptAlike(a, b, d)) << "round " << round;
    ASSERT_EQ(d.removed_count(), a.size() - d.common);
    ASSERT_EQ(d.added_count(), b.size() - d.common);
  }
}

TEST(LineDiff, GivesUpOnUnrelatedTextsPastItsLimit) {
  std::string a, b;
  for (int i = 0; i < 3000; ++i) {
    a += "left " + std::to_string(i) + "\n";
    b += "right " + std::to_string(i) + "\n";
  }
  a = "head\n" + a + "tail\n";
  b = "head\n" + b + "tail\n";
  LineDiff d = diff_texts(a, b, 100);
  EXPECT_FALSE(d.exact);
  EXPECT_EQ(d.common, 2u);  // the common first and last lines still count
  EXPECT_FALSE(d.removed.front());
  EXPECT_FALSE(d.added.back());
  EXPECT_EQ(d.removed_count(), 3000u);
  // Within the limit the same texts diff exactly.
  LineDiff full = diff_texts(a, b, 7000);
  EXPECT_TRUE(full.exact);
  EXPECT_EQ(full.common, 2u);
}

}  // namespace
}  // namespace souffle
