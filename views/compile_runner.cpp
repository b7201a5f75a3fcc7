#include "views/compile_runner.h"

#include <QElapsedTimer>
#include <QPromise>
#include <QtConcurrent>
#include <algorithm>
#include <thread>

#include "core/codegen/codegen_cuda.h"
#include "core/gpu/nvrtc.h"
#include "core/session/compile.h"
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

  // The session's compile_plan builds and emits the kernels (archs empty: nothing compiled
  // yet); the compile half then runs in batches so progress shows and cancel takes effect.
  CompileOptions options;
  std::vector<CompiledKernel> kernels;
  try {
    options.archs.clear();
    kernels = compile_plan(p, options).kernels;
    for (const QString& arch : archs) options.archs.push_back(arch.toStdString());
    for (const std::string& a : options.archs) check_arch(a);
  } catch (const std::exception& e) {
    data->error = QString::fromUtf8(e.what());
    return data;
  }
  gpu::GpuSpec spec;
  try {
    spec = gpu::gpu_spec(p.gpu);
  } catch (const std::exception&) {
    // Co-residency cannot be judged without the GPU; the compile itself still runs.
  }
  std::vector<int> partOf(kernels.size(), -1);
  for (size_t i = 0; i < kernels.size(); ++i) {
    for (size_t j = 0; j < p.partitions.size(); ++j)
      if (p.partitions[j].id == kernels[i].partition) partOf[i] = static_cast<int>(j);
    if (filter && partOf[i] >= 0) kernels[i].cuda = filter(partOf[i], kernels[i].cuda);
  }
  const int total = static_cast<int>(kernels.size() * options.archs.size());
  if (progress) progress(0, total);
  const size_t batch = std::max<size_t>(1, std::thread::hardware_concurrency() / 2);
  for (size_t first = 0; first < kernels.size(); first += batch) {
    if (cancelled && cancelled()) return nullptr;
    const size_t last = std::min(kernels.size(), first + batch);
    std::vector<CompiledKernel> chunk(kernels.begin() + static_cast<std::ptrdiff_t>(first),
                                      kernels.begin() + static_cast<std::ptrdiff_t>(last));
    compile_kernels(chunk, spec, options);
    for (size_t i = first; i < last; ++i) {
      CompiledKernel& ck = kernels[i];
      ck = std::move(chunk[i - first]);
      if (partOf[i] < 0) continue;
      KernelCompile& kc = data->kernels[static_cast<size_t>(partOf[i])];
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
    if (progress) progress(static_cast<int>(last * options.archs.size()), total);
  }
  data->ms = static_cast<double>(timer.nsecsElapsed()) / 1e6;
  return data;
}

}  // namespace souffle::views
