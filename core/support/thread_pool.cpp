#include "core/support/thread_pool.h"

#include <algorithm>

namespace souffle {
namespace {
// Set while a thread runs a chunk of some pool's job: a nested parallel_for then runs inline
// instead of waiting on the (non-re-entrant) job lock.
thread_local bool t_in_pool_job = false;

struct InJob {
  bool saved = t_in_pool_job;
  InJob() { t_in_pool_job = true; }
  ~InJob() { t_in_pool_job = saved; }
};
}  // namespace

ThreadPool::ThreadPool(int threads) {
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i < threads; ++i) m_workers.emplace_back([this] { worker_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_stop = true;
  }
  m_wake.notify_all();
  for (auto& t : m_workers) t.join();
}

ThreadPool& ThreadPool::global() {
  static ThreadPool pool(0);
  return pool;
}

void ThreadPool::run_chunks() {
  for (;;) {
    int64_t begin, end;
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      if (m_next >= m_n || m_error) return;
      begin = m_next;
      end = std::min(m_n, m_next + m_chunk);
      m_next = end;
    }
    try {
      InJob in_job;
      (*m_fn)(begin, end);
    } catch (...) {
      std::lock_guard<std::mutex> lock(m_mutex);
      if (!m_error) m_error = std::current_exception();
    }
  }
}

void ThreadPool::worker_loop() {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(m_mutex);
      m_wake.wait(lock, [&] { return m_stop || m_generation != seen; });
      if (m_stop) return;
      seen = m_generation;
      ++m_active;
    }
    run_chunks();
    {
      std::lock_guard<std::mutex> lock(m_mutex);
      --m_active;
    }
    m_done.notify_all();
  }
}

void ThreadPool::parallel_for(int64_t n, int64_t grain,
                              const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<int64_t>(1, grain);
  if (m_workers.empty() || n <= grain || t_in_pool_job) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> job(m_job_mutex);
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    m_fn = &fn;
    m_n = n;
    int64_t pieces = static_cast<int64_t>(size()) * 4;
    m_chunk = std::max(grain, (n + pieces - 1) / pieces);
    m_next = 0;
    m_error = nullptr;
    ++m_generation;
  }
  m_wake.notify_all();
  run_chunks();
  std::exception_ptr error;
  {
    std::unique_lock<std::mutex> lock(m_mutex);
    m_done.wait(lock, [&] { return m_active == 0 && (m_next >= m_n || m_error); });
    // No chunk is left for a worker that wakes only now (it saw this job's generation but had
    // not started): after an error chunks remain, and m_fn is about to go.
    m_next = m_n;
    m_fn = nullptr;
    error = m_error;
    m_error = nullptr;
  }
  if (error) std::rethrow_exception(error);
}

void side_by_side(const std::function<void()>& a, const std::function<void()>& b, bool apart) {
  if (!apart || std::thread::hardware_concurrency() < 2) {
    a();
    b();
    return;
  }
  std::exception_ptr b_error;
  std::thread other([&] {
    try {
      b();
    } catch (...) {
      b_error = std::current_exception();
    }
  });
  std::exception_ptr a_error;
  try {
    a();
  } catch (...) {
    a_error = std::current_exception();
  }
  other.join();
  if (a_error) std::rethrow_exception(a_error);
  if (b_error) std::rethrow_exception(b_error);
}

}  // namespace souffle
