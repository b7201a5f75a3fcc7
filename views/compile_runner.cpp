#include "views/compile_runner.h"

#include <QElapsedTimer>
#include <QPromise>
#include <QtConcurrent>
#include <algorithm>
#include <set>

#include "core/codegen/codegen_cuda.h"
#include "core/gpu/nvrtc.h"
#include "core/session/compile.h"
#include "core/session/kernel_cache.h"
#include "core/session/kernel_dedup.h"
#include "core/session/pipeline.h"
#include "core/support/error.h"
#include "views/kernel_stages.h"

namespace souffle::views {

bool KernelCompile::ok() const {
  return std::all_of(archs.begin(), archs.end(), [](const ArchCompile& a) { return a.ok; });
}

const ArchCompile* CompileData::find(int partition, const QString& arch) const {
  if (partition < 0 || static_cast<size_t>(partition) >= kernels.size()) return nullptr;
  for (const ArchCompile& a : kernels[static_cast<size_t>(partition)].archs)
    if (a.arch == arch) return &a;
  return nullptr;
}

namespace {

ArchCompile fromResult(const gpu::CompileResult& r, const std::string& function,
                       int64_t dynamicShared) {
  ArchCompile a;
  a.arch = QString::fromStdString(r.arch);
  a.ok = r.ok;
  a.log = QString::fromStdString(r.log);
  a.error = QString::fromStdString(r.error);
  a.ms = r.compile_ms;
  a.fromCache = r.from_cache;
  if (const gpu::KernelResources* k = r.find_kernel(function)) {
    a.registers = k->registers;
    a.sharedBytes = k->shared_bytes + dynamicShared;
    a.spillBytes = k->spill_store_bytes + k->spill_load_bytes;
  }
  return a;
}

}  // namespace

CompileRunner::CompileRunner(QObject* parent)
    : QObject(parent),
      m_watcher(new QFutureWatcher<CompileDataPtr>(this)),
      m_cachedWatcher(new QFutureWatcher<CompileDataPtr>(this)) {
  connect(m_cachedWatcher, &QFutureWatcher<CompileDataPtr>::finished, this, [this] {
    if (m_cachedWatcher->property("generation").toULongLong() != m_generation || m_busy) return;
    const QFuture<CompileDataPtr> f = m_cachedWatcher->future();
    if (f.resultCount() > 0 && f.result() && f.result()->reused > 0) emit finished(f.result());
  });
  connect(m_watcher, &QFutureWatcher<CompileDataPtr>::progressTextChanged, this,
          [this](const QString& text) {
            if (m_watcher->property("generation").toULongLong() != m_generation || !m_busy) return;
            emit progress(m_watcher->progressValue(), m_watcher->progressMaximum(), text);
          });
  connect(m_watcher, &QFutureWatcher<CompileDataPtr>::finished, this, [this] {
    if (m_watcher->property("generation").toULongLong() != m_generation) return;  // stale
    m_busy = false;
    const QFuture<CompileDataPtr> f = m_watcher->future();
    if (f.resultCount() == 0 || !f.result()) {
      emit cancelled();
      return;
    }
    emit finished(f.result());
  });
}

CompileRunner::~CompileRunner() {
  if (m_cancel) *m_cancel = true;
  m_watcher->waitForFinished();
  m_cachedWatcher->waitForFinished();
}

void CompileRunner::startCachedOnly(PlanDataPtr plan, const QStringList& archs) {
  if (m_busy) return;  // a compile in flight delivers its own
  ++m_generation;
  m_cachedWatcher->setProperty("generation", m_generation);
  m_cachedWatcher->setFuture(QtConcurrent::run(
      [plan = std::move(plan), archs] { return run(plan, archs, {}, {}, {}, true); }));
}

void CompileRunner::start(PlanDataPtr plan, const QStringList& archs) {
  if (m_cancel) *m_cancel = true;  // the one in flight stops at its next kernel
  ++m_generation;
  m_busy = true;
  m_cancel = std::make_shared<std::atomic<bool>>(false);
  m_watcher->setProperty("generation", m_generation);
  SourceFilter filter = m_filter;
  const quint64 generation = m_generation;
  m_watcher->setFuture(QtConcurrent::run([this, generation, plan = std::move(plan), archs, filter,
                                          stop = m_cancel](QPromise<CompileDataPtr>& promise) {
    CompileDataPtr data = run(
        plan, archs, filter,
        [&promise](int done, int total, const QString& current) {
          promise.setProgressRange(0, total);
          promise.setProgressValueAndText(done, current);
        },
        [stop] { return stop->load(); }, false,
        [this, generation](int done, int total, const QString& line) {
          // To the GUI thread; dropped there when a later start or a cancel made it stale
          // (and with the runner, which waits for this worker before it goes).
          QMetaObject::invokeMethod(
              this,
              [this, generation, done, total, line] {
                if (generation == m_generation && m_busy) emit programProgress(done, total, line);
              },
              Qt::QueuedConnection);
        });
    if (data) promise.addResult(std::move(data));
  }));
}

void CompileRunner::cancel() {
  if (!m_busy) return;
  // Answered at once: the worker stops before its next kernel (NVRTC cannot be interrupted
  // inside one), and what it still delivers is dropped as stale.
  *m_cancel = true;
  ++m_generation;
  m_busy = false;
  QMetaObject::invokeMethod(this, &CompileRunner::cancelled, Qt::QueuedConnection);
}

CompileDataPtr CompileRunner::run(
    PlanDataPtr planData, const QStringList& archs, const SourceFilter& filter,
    const std::function<void(int, int, const QString&)>& progress,
    const std::function<bool()>& cancelled, bool cachedOnly,
    const std::function<void(int, int, const QString&)>& programLine) {
  QElapsedTimer timer;
  timer.start();
  auto data = std::make_shared<CompileData>();
  data->plan = planData;
  data->archs = archs;
  data->cachedOnly = cachedOnly;
  if (!planData || !planData->plan) return data;
  const plan::FusionPlan& p = *planData->plan;
  data->kernels.resize(p.partitions.size());
  CompileOptions options;
  options.sync = p.sync;  // the plan's: its pricer built these kernels
  options.archs.clear();
  try {
    for (const QString& arch : archs) options.archs.push_back(arch.toStdString());
    for (const std::string& a : options.archs) check_arch(a);
  } catch (const std::exception& e) {
    data->error = QString::fromUtf8(e.what());
    return data;
  }
  gpu::GpuSpec spec;
  try {
    spec = p.gpu_spec.sm_count > 0 ? p.gpu_spec : gpu::gpu_spec(p.gpu);
  } catch (const std::exception&) {
    // Co-residency cannot be judged without the GPU; the compile itself still runs.
  }
  options.gpu = spec;
  KernelCache& cache = shared_kernel_cache();
  const int total = static_cast<int>(p.partitions.size());
  // Distinct programs: the launches' code up to names (kernel_dedup.h), found from the built
  // and emitted kernels (the cache keeps them for the compile below). A partition that cannot
  // be built counts none.
  auto codeOf = [](const CompiledKernel& ck) {
    return canonical_kernel(ck.kernel, ck.name, ck.cuda).entry;
  };
  std::set<std::string> distinct, seen;
  if (!cachedOnly) {
    for (int i = 0; i < total; ++i) {
      if (cancelled && cancelled()) return nullptr;
      try {
        PartitionKernelsPtr pk = cache.kernels(p, static_cast<size_t>(i));
        if (pk->error.empty())
          for (const CompiledKernel& ck : pk->kernels)
            if (!ck.cuda.empty()) distinct.insert(codeOf(ck));
      } catch (const std::exception&) {
        // Its error is reported by the compile below.
      }
    }
  }
  QString slowest;
  double slowestMs = 0;
  for (int i = 0; i < total; ++i) {
    if (cancelled && cancelled()) return nullptr;
    const plan::Partition& part = p.partitions[static_cast<size_t>(i)];
    if (progress)
      progress(i, total,
               QObject::tr("K%1 (%2 stage%3)")
                   .arg(part.id)
                   .arg(kernelStages(part))
                   .arg(kernelStages(part) == 1 ? QString() : QStringLiteral("s")));
    PartitionKernelsPtr pk;
    // Compiled by this run: not in the cache before it. The cache's entry says only whether it
    // was compiled when it was made, which an earlier compile of the same kernels did.
    bool compiledNow = false;
    try {
      const bool had = cache.has_compiled(p, static_cast<size_t>(i), options);
      if (cachedOnly && !had) continue;
      if (filter) {
        // A planted source is this compile's own: built or found, then compiled here.
        auto mine = std::make_shared<PartitionKernels>(*cache.kernels(p, static_cast<size_t>(i)));
        for (CompiledKernel& ck : mine->kernels) {
          std::string planted = filter(i, ck.cuda);
          // Lines of the emitter's no longer: compiled whole, not cut where they were.
          if (planted != ck.cuda) ck.cuda_map.functions = {};
          ck.cuda = std::move(planted);
        }
        if (mine->error.empty() && !mine->kernels.empty()) {
          PipelineOptions o;
          o.until = plan::Step::Compile;
          o.gpu = spec;
          o.compile = options;
          mine->kernels =
              run_pipeline(p, std::move(mine->kernels), plan::Step::Compile, o).kernels.kernels;
          mine->compiled_here = true;
        }
        pk = mine;
        compiledNow = mine->compiled_here;
      } else {
        pk = cache.compiled(p, static_cast<size_t>(i), options);
        compiledNow = !had && pk->compiled_here;
      }
    } catch (const std::exception& e) {
      auto failed = std::make_shared<PartitionKernels>();
      failed->error = e.what();
      pk = failed;
    }
    KernelCompile& kc = data->kernels[static_cast<size_t>(i)];
    kc.compiledNow = compiledNow;
    if (!pk->error.empty()) {
      // The partition's kernels could not be built: every arch fails with the build's error.
      kc.name = QStringLiteral("kernel%1").arg(part.id);
      for (const std::string& a : options.archs) {
        ArchCompile r;
        r.arch = QString::fromStdString(a);
        r.error = r.log = QString::fromStdString(pk->error);
        kc.archs.push_back(std::move(r));
        ++data->failures;
      }
      continue;
    }
    if (pk->kernels.empty()) continue;  // views only: nothing to launch
    (compiledNow ? data->compiled : data->reused) += 1;
    for (const CompiledKernel& ck : pk->kernels) {
      if (!ck.cuda.empty() && seen.insert(codeOf(ck)).second) {
        // From the cache: compiled before this compile (the kernel cache's results), or every
        // arch's image found in the compile cache (memory or disk).
        const bool cached =
            !compiledNow || (!ck.per_arch.empty() &&
                             std::all_of(ck.per_arch.begin(), ck.per_arch.end(),
                                         [](const gpu::CompileResult& r) { return r.from_cache; }));
        ++data->programs;
        if (cached) {
          ++data->programsFromCache;
        } else {
          // Its NVRTC time in this compile, every arch; the slowest named among these.
          double ms = 0;
          for (const gpu::CompileResult& r : ck.per_arch) ms += r.compile_ms;
          if (slowest.isEmpty() || ms > slowestMs) {
            slowestMs = ms;
            slowest = QString::fromStdString(ck.name);
          }
        }
        const int programsTotal = std::max(data->programs, static_cast<int>(distinct.size()));
        if (programLine)
          programLine(data->programs, programsTotal,
                      QObject::tr("program %1 of %2, %3 s, slowest: %4")
                          .arg(data->programs)
                          .arg(programsTotal)
                          .arg(static_cast<double>(timer.nsecsElapsed()) / 1e9, 0, 'f', 1)
                          .arg(slowest.isEmpty() ? QObject::tr("none compiled (%1 from the cache)")
                                                       .arg(data->programsFromCache)
                                                 : QObject::tr("%1 (%2 s)")
                                                       .arg(slowest)
                                                       .arg(slowestMs / 1000, 0, 'f', 1)));
      }
      // A partition split into launches (kernelN.0, kernelN.1, ...) shows them as one row:
      // names and sources joined, per arch the most registers and shared memory, the spills
      // summed, failed when any launch failed.
      const bool more = !kc.archs.empty();
      kc.name = more ? kc.name + " + " + QString::fromStdString(ck.name)
                     : QString::fromStdString(ck.name);
      kc.source = more ? kc.source + "\n" + QString::fromStdString(ck.cuda)
                       : QString::fromStdString(ck.cuda);
      std::vector<ArchCompile> earlier;
      if (more) earlier.swap(kc.archs);
      const QString kernelError = QString::fromStdString(ck.error);
      for (size_t a = 0; a < options.archs.size(); ++a) {
        ArchCompile r = a < ck.per_arch.size()
                            ? fromResult(ck.per_arch[a], ck.name, ck.launch.dynamic_shared_bytes)
                            : ArchCompile{};
        if (r.arch.isEmpty()) r.arch = QString::fromStdString(options.archs[a]);
        // A kernel that compiled but cannot launch (co-residency) fails on every arch.
        if (!kernelError.isEmpty()) {
          r.ok = false;
          if (r.error.isEmpty()) r.error = kernelError;
          if (r.log.trimmed().isEmpty() || r.log.size() < kernelError.size()) r.log = kernelError;
        }
        if (!r.ok) ++data->failures;
        if (a < earlier.size()) {
          const ArchCompile& e = earlier[a];
          r.ok = r.ok && e.ok;
          r.registers = std::max(r.registers, e.registers);
          r.sharedBytes = std::max(r.sharedBytes, e.sharedBytes);
          r.spillBytes += e.spillBytes;
          r.log = e.log + r.log;
          r.error = e.error.isEmpty() ? r.error : e.error + r.error;
          r.ms += e.ms;
          r.fromCache = r.fromCache && e.fromCache;
        }
        kc.archs.push_back(std::move(r));
      }
    }
  }
  if (progress) progress(total, total, QString());
  data->ms = static_cast<double>(timer.nsecsElapsed()) / 1e6;
  return data;
}

}  // namespace souffle::views
