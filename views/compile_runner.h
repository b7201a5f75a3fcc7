/// \file Compiles every kernel of a plan with NVRTC for several architectures on a worker thread,
/// with progress and cancel; results (registers, shared memory, spills, logs) as plain values.
#pragma once

#include <QFutureWatcher>
#include <QObject>
#include <QStringList>
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "views/plan_runner.h"

namespace souffle::views {

/// One kernel compiled for one architecture.
struct ArchCompile {
  QString arch;  ///< "sm_80"
  bool ok = false;
  int registers = 0;
  qint64 sharedBytes = 0;  ///< static + dynamic shared memory per block
  qint64 spillBytes = 0;   ///< spill stores + loads
  QString log;             ///< NVRTC's log (ptxas lines included)
  QString error;           ///< log + numbered source when !ok
  double ms = 0;
  bool fromCache = false;
};

/// A partition's kernel and its per-arch results.
struct KernelCompile {
  QString name;    ///< the CUDA function name
  QString source;  ///< the CUDA C that was compiled
  std::vector<ArchCompile> archs;
  /// Compiled for this compile; false: the same kernel's results were found (compiled before,
  /// also under another kernel number), or it was not compiled (cancelled).
  bool compiledNow = false;
  bool ok() const;
};

struct CompileData {
  PlanDataPtr plan;
  QStringList archs;
  /// Indexed like plan->plan->partitions; a partition without a kernel has no archs.
  std::vector<KernelCompile> kernels;
  /// Set when the kernels could not even be built (names the kernel and the TE).
  QString error;
  int failures = 0;  ///< (kernel, arch) pairs that did not compile
  int compiled = 0;  ///< partitions compiled by this compile
  int reused = 0;    ///< partitions whose results were found (unchanged since compiled)
  /// Only results found in the cache (a new plan shows what was compiled before its edit);
  /// partitions never compiled have no archs.
  bool cachedOnly = false;
  /// Distinct programs (launches of the same code count once, kernel_dedup.h) and, of them,
  /// those taken from the compile cache (compiled before, in this process or an earlier one).
  int programs = 0, programsFromCache = 0;
  double ms = 0;
  const ArchCompile* find(int partition, const QString& arch) const;
};
using CompileDataPtr = std::shared_ptr<const CompileData>;

class CompileRunner : public QObject {
  Q_OBJECT
 public:
  /// Rewrites a kernel's CUDA source before it is compiled (tests plant errors with it).
  using SourceFilter = std::function<std::string(int partition, const std::string& source)>;

  explicit CompileRunner(QObject* parent = nullptr);
  ~CompileRunner() override;

  /// Starts compiling `plan`'s kernels; a compile in progress is cancelled and dropped.
  void start(PlanDataPtr plan,
             const QStringList& archs = {QStringLiteral("sm_80"), QStringLiteral("sm_90")});
  /// Fills the results of `plan`'s partitions whose kernels were compiled before (by content),
  /// compiling nothing; `finished` only when there are any. Not busy meanwhile; a start()
  /// makes it stale.
  void startCachedOnly(PlanDataPtr plan, const QStringList& archs = {QStringLiteral("sm_80"),
                                                                     QStringLiteral("sm_90")});
  void cancel();
  bool isBusy() const { return m_busy; }
  void setSourceFilter(SourceFilter filter) { m_filter = std::move(filter); }

  /// The synchronous body: each partition's kernels from the session's kernel cache (built and
  /// emitted there when missing), compiled there unless the same kernels were compiled before;
  /// `progress(done, total, name)` before each partition, naming it; stops early (returning
  /// null) when `cancelled()` turns true. With a source filter every kernel is compiled here,
  /// from its filtered source, bypassing the cache. Never throws.
  /// `programLine(done, total, line)` after each distinct program, its line "program n of N,
  /// t s, slowest: X (u s)".
  static CompileDataPtr run(PlanDataPtr plan, const QStringList& archs, const SourceFilter& filter,
                            const std::function<void(int, int, const QString&)>& progress = {},
                            const std::function<bool()>& cancelled = {}, bool cachedOnly = false,
                            const std::function<void(int, int, const QString&)>& programLine = {});

 signals:
  /// `done` of `total` partitions; `current` names the one being built or compiled.
  void progress(int done, int total, const QString& current);
  /// `done` of `total` distinct programs compiled or taken from the cache; `line` says so with
  /// the time so far and the slowest program ("program 3 of 7, 4.2 s, slowest: kernel5 (2.1 s)").
  /// Queued from the worker thread.
  void programProgress(int done, int total, const QString& line);
  void finished(souffle::views::CompileDataPtr data);
  void cancelled();

 private:
  QFutureWatcher<CompileDataPtr>* m_watcher;
  QFutureWatcher<CompileDataPtr>* m_cachedWatcher;
  std::shared_ptr<std::atomic<bool>> m_cancel;
  quint64 m_generation = 0;
  bool m_busy = false;
  SourceFilter m_filter;
};

}  // namespace souffle::views
