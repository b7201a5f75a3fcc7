#include "views/profile_runner.h"

#include "core/onnx/importer.h"

#include <QMetaObject>
#include <QPointer>
#include <QtConcurrent>

#include "core/support/error.h"

namespace souffle::views {

QString ProfileData::label() const {
  if (!report.gpu_time()) return QObject::tr("emulator: CPU time, not a GPU time");
  return QObject::tr("measured on %1 (%2)")
      .arg(QString::fromStdString(report.device), QString::fromStdString(report.timer));
}

ProfileRunner::ProfileRunner(QObject* parent)
    : QObject(parent), m_watcher(new QFutureWatcher<ProfileDataPtr>(this)) {
  connect(m_watcher, &QFutureWatcher<ProfileDataPtr>::finished, this, [this] {
    if (m_watcher->property("generation").toULongLong() != m_generation) return;  // stale
    m_busy = false;
    const QFuture<ProfileDataPtr> f = m_watcher->future();
    if (f.resultCount() == 0 || !f.result()) {
      emit cancelled();
      return;
    }
    ProfileDataPtr d = f.result();
    if (d->report.error.rfind("cancelled", 0) == 0) {
      emit cancelled();
      return;
    }
    emit finished(d);
  });
}

ProfileRunner::~ProfileRunner() {
  if (m_cancel) m_cancel->store(true);
  m_watcher->waitForFinished();
}

void ProfileRunner::cancel() {
  if (m_cancel) m_cancel->store(true);
}

void ProfileRunner::start(PlanDataPtr plan, const QString& backend, const QStringList& dims,
                          const QStringList& binds, const QStringList& shapes) {
  if (m_busy) cancel();
  ++m_generation;
  m_busy = true;
  m_cancel = std::make_shared<std::atomic<bool>>(false);
  m_watcher->setProperty("generation", m_generation);
  ProfileOptions o;
  o.backend = backend.toStdString();
  if (plan && plan->plan) o.sync = plan->plan->sync;
  if (o.backend == "emulator") {
    o.runs = 1;
    o.warmup = 0;
  }
  std::shared_ptr<std::atomic<bool>> cancel = m_cancel;
  const quint64 generation = m_generation;
  QPointer<ProfileRunner> self(this);
  o.cancel = cancel.get();
  o.progress = [self, generation](const std::string& s) {
    QMetaObject::invokeMethod(
        self.data(),
        [self, generation, text = QString::fromStdString(s)] {
          if (self && self->m_generation == generation) emit self->progress(text);
        },
        Qt::QueuedConnection);
  };
  auto strings = [](const QStringList& l) {
    std::vector<std::string> out;
    for (const QString& s : l) out.push_back(s.toStdString());
    return out;
  };
  m_watcher->setFuture(QtConcurrent::run([plan = std::move(plan), o, cancel, d = strings(dims),
                                          b = strings(binds), sh = strings(shapes)] {
    return run(plan, o, d, b, sh);  // `cancel` is kept alive until the run returns
  }));
}

ProfileDataPtr ProfileRunner::run(PlanDataPtr plan, ProfileOptions options,
                                  std::vector<std::string> dims, std::vector<std::string> binds,
                                  std::vector<std::string> shapes) {
  auto d = std::make_shared<ProfileData>();
  d->plan = plan;
  d->report.backend = options.backend;
  if (!plan || !plan->model || !plan->model->model) {
    d->report.error = "no plan to profile";
    return d;
  }
  const LoadedModel& m = *plan->model->model;
  try {
    ProfileSession s(options);
    d->report = s.profile(m.path, *plan->plan, onnx_import::import_options(dims, {}, {}).dims,
                          binds, shapes);
  } catch (const UserError& e) {
    d->report.backend = options.backend;
    d->report.error = e.what();
  } catch (const std::exception& e) {
    d->report.backend = options.backend;
    d->report.error = std::string("internal error: ") + e.what();
  }
  if (options.cancel && options.cancel->load() && d->report.error.empty())
    d->report.error = "cancelled";
  return makeProfileData(plan, std::move(d->report));
}

ProfileDataPtr makeProfileData(PlanDataPtr plan, ProfileReport report) {
  auto d = std::make_shared<ProfileData>();
  d->plan = plan;
  d->report = std::move(report);
  if (!plan || !plan->plan) return d;
  const size_t n = plan->plan->partitions.size();
  d->partitionUs.assign(n, -1);
  d->partitionDramBytes.assign(n, -1);
  d->partitionOccupancy.assign(n, -1);
  std::vector<bool> uncounted(n, false);
  std::vector<double> weight(n, 0), weighted(n, 0);
  for (const KernelMeasurement& k : d->report.kernels)
    for (size_t i = 0; i < n; ++i)
      if (plan->plan->partitions[i].id == k.partition) {
        d->partitionUs[i] = std::max(0.0, d->partitionUs[i]) + k.time_us.median;
        if (k.achieved_occupancy >= 0) {
          const double w = std::max(k.time_us.median, 1e-9);
          weight[i] += w;
          weighted[i] += w * k.achieved_occupancy;
        }
        if (k.dram_read_bytes < 0 || k.dram_write_bytes < 0)
          uncounted[i] = true;
        else
          d->partitionDramBytes[i] =
              std::max(0.0, d->partitionDramBytes[i]) + k.dram_read_bytes + k.dram_write_bytes;
      }
  for (size_t i = 0; i < n; ++i) {
    if (uncounted[i]) d->partitionDramBytes[i] = -1;
    if (weight[i] > 0) d->partitionOccupancy[i] = weighted[i] / weight[i];
  }
  return d;
}

}  // namespace souffle::views
