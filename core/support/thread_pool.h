/// \file A small fixed thread pool with a blocking parallel_for (interpreter, emulator, NVRTC).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace souffle {

class ThreadPool {
 public:
  /// threads == 0 picks the hardware concurrency.
  explicit ThreadPool(int threads = 0);
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  int size() const { return static_cast<int>(m_workers.size()) + 1; }

  /// Calls fn(begin, end) over [0, n) split into chunks of at least `grain`; the calling thread
  /// works too. Blocks until all chunks finish; the first exception thrown by fn is rethrown.
  /// Called from inside a chunk of any pool's job, it runs inline on the calling thread.
  void parallel_for(int64_t n, int64_t grain, const std::function<void(int64_t, int64_t)>& fn);

  /// A process-wide pool sized to the machine.
  static ThreadPool& global();

 private:
  void worker_loop();
  void run_chunks();

  std::vector<std::thread> m_workers;
  std::mutex m_mutex;
  std::condition_variable m_wake, m_done;
  std::mutex m_job_mutex;  // one parallel_for at a time
  const std::function<void(int64_t, int64_t)>* m_fn = nullptr;
  int64_t m_n = 0, m_chunk = 1, m_next = 0;
  int m_active = 0;
  uint64_t m_generation = 0;
  bool m_stop = false;
  std::exception_ptr m_error;
};

/// Runs `a` on the calling thread and `b` on a thread of its own, and returns when both have
/// finished; the first exception either threw (a's before b's) is rethrown. Where one machine
/// core only, or `apart` is false, they run one after the other (a, then b).
void side_by_side(const std::function<void()>& a, const std::function<void()>& b,
                  bool apart = true);

}  // namespace souffle
