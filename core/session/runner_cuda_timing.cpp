// The CUDA backend's runs and profiles: per-kernel times (CUPTI's activity records, else CUDA
// events), end to end, the plan replayed as one CUDA graph (CudaBackend::replay, the one graph
// path, which the calibration uses too) and CUPTI's counters.
#include <string>
#include <vector>

#include "core/session/runner_cuda_backend.h"

namespace souffle::runner::cuda_backend {

void CudaBackend::run(const EventFn& on_event) {
  need_bundle();
  zero();
  for (size_t k = 0; k < m_loaded.size(); ++k) {
    on_event({{"event", "launch"},
              {"kernel", m_loaded[k].k.name},
              {"index", k},
              {"of", m_loaded.size()}});
    launch(k);
    CUresult r = m_api->cuStreamSynchronize(m_stream);
    if (r != CUDA_SUCCESS) fault(r, m_loaded[k].k.name);
  }
}

ProfileData CudaBackend::profile(int runs, int warmup, bool graph, bool counters,
                                 const EventFn& on_event) {
  need_bundle();
  ProfileData p;
  p.runs = runs;
  p.warmup = warmup;
  for (int w = 0; w < warmup; ++w) {
    zero();
    for (size_t k = 0; k < m_loaded.size(); ++k) launch(k);
  }
  sync("the warm-up runs");
  on_event({{"event", "profile"}, {"phase", "timed runs"}, {"runs", runs}});
  std::vector<std::string> order;
  for (const Loaded& l : m_loaded) order.push_back(l.k.name);
  time_kernels(runs, order, p);
  time_end_to_end(runs, p);
  // What follows is optional: a failure there is a note and the timings stand. A fault still
  // loses the context: the answer is given, then the runner exits (dead()).
  if (graph) optional_part("the CUDA graph replay", p.graph_note, [&] { replay_graph(runs, p); });
  if (counters) {
    on_event({{"event", "profile"}, {"phase", "hardware counters"}});
    optional_part("the counted run", p.counters_note, [&] { count(order, p); });
  }
  return p;
}

/// Launches kernel k; one with flags passes an epoch one larger than its last launch's
/// (warm-up and timed runs alike), or `fixed_epoch` when that is not 0 (graph capture).
void CudaBackend::launch(size_t k, long long fixed_epoch) {
  Loaded& l = m_loaded[k];
  if (l.k.flag_epoch) l.epoch = fixed_epoch != 0 ? fixed_epoch : l.epoch + 1;
  const unsigned grid = static_cast<unsigned>(l.k.grid), block = static_cast<unsigned>(l.k.block);
  const unsigned smem = static_cast<unsigned>(l.k.shared_bytes);
  CUresult r = l.k.cooperative ? m_api->cuLaunchCooperativeKernel(l.fn, grid, 1, 1, block, 1, 1,
                                                                  smem, m_stream, l.args.data())
                               : m_api->cuLaunchKernel(l.fn, grid, 1, 1, block, 1, 1, smem,
                                                       m_stream, l.args.data(), nullptr);
  // A launch that was refused released nothing: its epoch is the next launch's again.
  if (r != CUDA_SUCCESS && l.k.flag_epoch && fixed_epoch == 0) --l.epoch;
  check(r, "launching " + l.k.name, l.k.name);
}

/// Per-kernel times over `runs` runs: from CUPTI's activity records (no events between the
/// kernels to perturb them), or from CUDA events around each kernel when CUPTI is missing,
/// refuses, or its records cannot be matched to the launches (dropped ones among them).
void CudaBackend::time_kernels(int runs, const std::vector<std::string>& order, ProfileData& p) {
  std::string why;
  gpu::CuptiKernelTracer* tracer = this->tracer(&why);
  if (tracer) {
    std::string err;
    if (!tracer->start(&err)) {
      why = "CUPTI did not start (" + err + "): kernel times come from CUDA events";
    } else {
      // Tracing stops whatever happens, so that no later run is traced.
      struct Stop {
        gpu::CuptiKernelTracer* t;
        ~Stop() {
          if (t) t->stop(nullptr);
        }
      } stop{tracer};
      for (int r = 0; r < runs; ++r) {
        zero();
        for (size_t k = 0; k < m_loaded.size(); ++k) launch(k);
      }
      sync("the timed runs");
      stop.t = nullptr;
      std::vector<gpu::KernelActivity> records = tracer->stop(&err);
      p.dropped_records = tracer->dropped();
      std::string problem;
      p.kernels = gpu::group_runs(records, order, runs, &problem);
      if (p.dropped_records > 0)
        problem = "CUPTI dropped " + std::to_string(p.dropped_records) +
                  " kernel records (its buffers were full)";
      if (!err.empty()) problem += (problem.empty() ? "" : "; ") + err;
      if (p.dropped_records == 0 && !p.kernels.empty()) {
        p.timer = "cupti";
        p.timer_note = problem;
        return;
      }
      p.kernels.clear();
      why = "CUPTI's records could not be matched to the launches (" + problem +
            "): kernel times come from CUDA events";
    }
  }
  // Events: after the zeroing, then after each kernel.
  const size_t n = m_loaded.size();
  std::vector<EventHandle> ev;
  for (size_t i = 0; i < static_cast<size_t>(runs) * (n + 1); ++i) ev.push_back(make_event());
  for (int r = 0; r < runs; ++r) {
    EventHandle* e = &ev[static_cast<size_t>(r) * (n + 1)];
    zero();
    check(m_api->cuEventRecord(e[0].get(), m_stream), "cuEventRecord");
    for (size_t k = 0; k < n; ++k) {
      launch(k);
      check(m_api->cuEventRecord(e[k + 1].get(), m_stream), "cuEventRecord");
    }
  }
  sync("the timed runs");
  p.timer = "cuda-events";
  p.timer_note = why;
  for (size_t k = 0; k < n; ++k) {
    std::vector<double> t;
    for (int r = 0; r < runs; ++r) {
      EventHandle* e = &ev[static_cast<size_t>(r) * (n + 1)];
      t.push_back(elapsed_us(e[k], e[k + 1]));
    }
    gpu::KernelTimes times;
    times.name = order[k];
    times.duration_us = gpu::stats_of(t);
    p.kernels.push_back(times);
  }
}

/// End to end (first launch to the last kernel's end) and the zeroing before it, over `runs`
/// runs of their own with three events each and CUPTI's tracing off: tracing costs each kernel
/// time, which would weigh against a plan of many small kernels.
void CudaBackend::time_end_to_end(int runs, ProfileData& p) {
  std::vector<EventHandle> ev;
  for (int i = 0; i < runs * 3; ++i) ev.push_back(make_event());
  for (int r = 0; r < runs; ++r) {
    EventHandle* e = &ev[static_cast<size_t>(r) * 3];
    check(m_api->cuEventRecord(e[0].get(), m_stream), "cuEventRecord");
    zero();
    check(m_api->cuEventRecord(e[1].get(), m_stream), "cuEventRecord");
    for (size_t k = 0; k < m_loaded.size(); ++k) launch(k);
    check(m_api->cuEventRecord(e[2].get(), m_stream), "cuEventRecord");
  }
  sync("the end-to-end runs");
  std::vector<double> e2e, zeroing;
  for (int r = 0; r < runs; ++r) {
    EventHandle* e = &ev[static_cast<size_t>(r) * 3];
    zeroing.push_back(elapsed_us(e[0], e[1]));
    e2e.push_back(elapsed_us(e[1], e[2]));
  }
  p.end_to_end_us = gpu::stats_of(e2e);
  p.zeroing_us = gpu::stats_of(zeroing);
}

/// The whole run (zeroing and every launch) captured once as a CUDA graph and replayed.
///
/// Per-tile flags: a captured launch keeps the epoch it was captured with, so replays cannot
/// count epochs up. Instead the graph zeroes the flag counters itself (memset nodes before its
/// first kernel) and every kernel with flags is captured with epoch 1. Each replay then starts
/// from the state of a first run — counters at zero, epoch 1 — and a wait for 1 x releases is
/// met only by that replay's own releases, as in a first run. Replays on one stream do not
/// overlap, so no replay's releases are seen by another. After the replays the counters hold
/// a replay's counts while the kernels' epochs were overwritten, so restart_flags puts both
/// back to the start (zero, next launch epoch 1) for whatever runs next, whether the replay
/// worked or not.
void CudaBackend::replay_graph(int runs, ProfileData& p) {
  struct Restart {
    CudaBackend& b;
    ~Restart() {
      if (b.m_dead) return;
      try {
        b.restart_flags();
      } catch (const RunnerError&) {  // the profile's answer already says what failed
      }
    }
  } restart{*this};
  p.graph_us = gpu::stats_of(replay("the plan as a CUDA graph", 2, runs, [&] {
    zero();
    restart_flags();  // captured: memset nodes at the graph's start
    for (size_t k = 0; k < m_loaded.size(); ++k) launch(k, 1);
  }));
}

/// One more run under CUPTI's range profiler: a range per launch, replayed as the metrics
/// need. Counters that cannot be had leave p.counters empty and say why in counters_note.
void CudaBackend::count(const std::vector<std::string>& order, ProfileData& p) {
  std::string why;
  const gpu::CuptiProfilerApi* api =
      m_profiler ? m_profiler : gpu::cupti_profiler_api(m_cupti_library, &why);
  std::unique_ptr<gpu::CuptiCounterSession> session =
      api ? gpu::CuptiCounterSession::open(*api, *m_api, m_ctx.get(), m_ordinal, &why) : nullptr;
  if (!api) why = "CUPTI's range profiler is not available: " + why;
  if (!session) {
    p.counters_note = why;
    return;
  }
  std::string err;
  if (!session->start(order.size(), &err)) {
    p.counters_note = "the range profiler did not start: " + err;
    return;
  }
  // Kernel replay runs each launch alone anyway: waiting after each names a kernel that fails.
  zero();
  for (size_t k = 0; k < m_loaded.size(); ++k) {
    launch(k);
    sync("the counted run", m_loaded[k].k.name);
  }
  std::vector<gpu::RangeValues> ranges = session->stop(&err);
  if (ranges.empty()) {
    p.counters_note = "the range profiler gave no ranges: " + err;
    return;
  }
  std::string problem;
  p.counters = gpu::counters_from_ranges(ranges, order, &problem);
  if (p.counters.empty())
    p.counters_note = "the counters could not be matched to the launches: " + problem;
  else if (session->passes() > 1)
    p.counters_note = "each kernel replayed " + std::to_string(session->passes()) +
                      " times by CUPTI (" + session->chip() + ")";
}

}  // namespace souffle::runner::cuda_backend
