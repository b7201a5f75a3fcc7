#include <gtest/gtest.h>

#include <atomic>
#include <stdexcept>

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
}  // namespace souffle
