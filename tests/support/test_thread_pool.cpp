#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>
#include <thread>
#include <vector>

#include "core/support/thread_pool.h"

namespace souffle {

TEST(ThreadPool, CoversRangeOnce) {
  ThreadPool pool(4);
  std::vector<std::atomic<int>> hits(10007);
  for (int rep = 0; rep < 20; ++rep) {
    pool.parallel_for(static_cast<int64_t>(hits.size()), 16, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[static_cast<size_t>(i)]++;
    });
  }
  for (auto& h : hits) ASSERT_EQ(h.load(), 20);
}

TEST(ThreadPool, PropagatesException) {
  ThreadPool pool(3);
  EXPECT_THROW(pool.parallel_for(1000, 1,
                                 [&](int64_t b, int64_t) {
                                   if (b > 500) throw std::runtime_error("boom");
                                 }),
               std::runtime_error);
  // Still usable afterwards.
  std::atomic<int64_t> sum{0};
  pool.parallel_for(100, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) sum += i;
  });
  EXPECT_EQ(sum.load(), 4950);
}

}  // namespace souffle

namespace souffle {
TEST(ThreadPool, NestedParallelForRunsInline) {
  ThreadPool pool(3);
  std::atomic<int64_t> sum{0};
  pool.parallel_for(8, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      pool.parallel_for(10, 1, [&](int64_t b2, int64_t e2) { sum += e2 - b2; });
  });
  EXPECT_EQ(sum.load(), 80);
}

// Both tasks run, on two threads where asked; the first one's exception wins, and the other
// task still finishes before it is rethrown.
TEST(SideBySide, RunsBothAndRethrowsTheFirstError) {
  std::atomic<int> ran{0};
  std::thread::id a_on, b_on;
  side_by_side(
      [&] {
        a_on = std::this_thread::get_id();
        ++ran;
      },
      [&] {
        b_on = std::this_thread::get_id();
        ++ran;
      });
  EXPECT_EQ(ran.load(), 2);
  EXPECT_EQ(a_on, std::this_thread::get_id());
  if (std::thread::hardware_concurrency() >= 2) {
    EXPECT_NE(b_on, a_on);
  }

  std::atomic<bool> b_done{false};
  try {
    side_by_side([] { throw std::runtime_error("a"); },
                 [&] {
                   b_done = true;
                   throw std::logic_error("b");
                 });
    ADD_FAILURE() << "nothing thrown";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "a");
  }
  EXPECT_TRUE(b_done.load());
  EXPECT_THROW(side_by_side([] {}, [] { throw std::logic_error("b"); }), std::logic_error);

  // Not apart: a, then b, on this thread.
  std::vector<char> order;
  side_by_side([&] { order.push_back('a'); }, [&] { order.push_back('b'); }, false);
  EXPECT_EQ(order, (std::vector<char>{'a', 'b'}));
}

}  // namespace souffle
