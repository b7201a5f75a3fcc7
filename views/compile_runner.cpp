#include "views/compile_runner.h"

#include <QElapsedTimer>
#include <QPromise>
#include <QtConcurrent>
#include <algorithm>
#include <thread>

#include "core/codegen/codegen_cuda.h"
#include "core/gpu/nvrtc.h"
#include "core/session/verify_kernels.h"
#include "core/support/error.h"

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

/// The partition a built kernel belongs to: kernels are named after partition ids.
int partitionOf(const plan::FusionPlan& p, const std::string& kernelName) {
  for (size_t i = 0; i < p.partitions.size(); ++i)
    if (kernelName == "kernel" + std::to_string(p.partitions[i].id)) return static_cast<int>(i);
  return -1;
}

}  // namespace

CompileRunner::CompileRunner(QObject* parent)
    : QObject(parent), m_watcher(new QFutureWatcher<CompileDataPtr>(this)) {
  connect(m_watcher, &QFutureWatcher<CompileDataPtr>::progressValueChanged, this, [this](int v) {
    if (m_watcher->property("generation").toULongLong() == m_generation)
      emit progress(v, m_watcher->progressMaximum());
  });
  connect(m_watcher, &QFutureWatcher<CompileDataPtr>::finished, this, [this] {
    if (m_watcher->property("generation").toULongLong() != m_generation) return;  // stale
    m_busy = false;
    const QFuture<CompileDataPtr> f = m_watcher->future();
    if (f.isCanceled() || f.resultCount() == 0 || !f.result()) {
      emit cancelled();
      return;
    }
    emit finished(f.result());
  });
}

CompileRunner::~CompileRunner() {
  m_watcher->cancel();
  m_watcher->waitForFinished();
}

void CompileRunner::start(PlanDataPtr plan, const QStringList& archs) {
  if (m_busy) m_watcher->cancel();
  ++m_generation;
  m_busy = true;
  m_watcher->setProperty("generation", m_generation);
  SourceFilter filter = m_filter;
  m_watcher->setFuture(
      QtConcurrent::run([plan = std::move(plan), archs, filter](QPromise<CompileDataPtr>& promise) {
        CompileDataPtr data = run(
            plan, archs, filter,
            [&promise](int done, int total) {
              promise.setProgressRange(0, total);
              promise.setProgressValue(done);
            },
            [&promise] { return promise.isCanceled(); });
        if (data) promise.addResult(std::move(data));
      }));
}

void CompileRunner::cancel() {
  if (!m_busy) return;
  m_watcher->cancel();
}

CompileDataPtr CompileRunner::run(PlanDataPtr planData, const QStringList& archs,
                                  const SourceFilter& filter,
                                  const std::function<void(int, int)>& progress,
                                  const std::function<bool()>& cancelled) {
  QElapsedTimer timer;
  timer.start();
  auto data = std::make_shared<CompileData>();
  data->plan = planData;
  data->archs = archs;
  if (!planData || !planData->plan) return data;
  const plan::FusionPlan& p = *planData->plan;
  data->kernels.resize(p.partitions.size());

  // Everything the compile needs comes through this one adapter: build the kernels, emit CUDA C,
  // compile each (kernel, arch) pair; a session-level compile can replace it in one place.
  loop::KernelSet ks;
  try {
    ks = build_plan_kernels(p);
  } catch (const KernelBuildError& e) {
    data->error = QString::fromStdString(e.what());
    return data;
  } catch (const std::exception& e) {
    data->error = QString::fromUtf8(e.what());
    return data;
  }
  struct Job {
    int partition;
    std::string function;
    int64_t dynamicShared;
    gpu::CompileJob job;
  };
  std::vector<Job> jobs;
  for (const loop::Kernel& k : ks.kernels) {
    const int part = partitionOf(p, k.name);
    if (part < 0) continue;
    std::string source;
    try {
      source = codegen::emit_cuda(k);
    } catch (const std::exception& e) {
      data->kernels[static_cast<size_t>(part)].name = QString::fromStdString(k.name);
      ArchCompile a;
      a.error = QStringLiteral("emitting CUDA C failed: %1").arg(QString::fromUtf8(e.what()));
      for (const QString& arch : archs) {
        a.arch = arch;
        data->kernels[static_cast<size_t>(part)].archs.push_back(a);
        ++data->failures;
      }
      continue;
    }
    if (filter) source = filter(part, source);
    loop::KernelSet lone;
    lone.kernels = {k};
    const std::string function = codegen::cuda_kernel_names(lone).front();
    KernelCompile& kc = data->kernels[static_cast<size_t>(part)];
    kc.name = QString::fromStdString(function);
    kc.source = QString::fromStdString(source);
    for (const QString& arch : archs) {
      Job j{part, function, k.launch.dynamic_shared_bytes, {}};
      j.job.source = source;
      j.job.name = k.name + ".cu";
      j.job.options.arch = arch.toStdString();
      j.job.options.line_info = true;  // the code view maps PTX back to stages with it
      jobs.push_back(std::move(j));
    }
  }
  const int total = static_cast<int>(jobs.size());
  if (progress) progress(0, total);
  // Batches of a few jobs: NVRTC runs them in parallel, and cancel is checked between batches.
  const size_t batch = std::max<size_t>(2, std::thread::hardware_concurrency());
  for (size_t first = 0; first < jobs.size(); first += batch) {
    if (cancelled && cancelled()) return nullptr;
    const size_t last = std::min(jobs.size(), first + batch);
    std::vector<gpu::CompileJob> chunk;
    for (size_t i = first; i < last; ++i) chunk.push_back(jobs[i].job);
    const std::vector<gpu::CompileResult> results = gpu::compile_cuda_many(chunk);
    for (size_t i = first; i < last; ++i) {
      const Job& j = jobs[i];
      ArchCompile a = fromResult(results[i - first], j.function, j.dynamicShared);
      if (a.arch.isEmpty()) a.arch = QString::fromStdString(j.job.options.arch);
      if (!a.ok) ++data->failures;
      data->kernels[static_cast<size_t>(j.partition)].archs.push_back(std::move(a));
    }
    if (progress) progress(static_cast<int>(last), total);
  }
  data->ms = static_cast<double>(timer.nsecsElapsed()) / 1e6;
  return data;
}

}  // namespace souffle::views
