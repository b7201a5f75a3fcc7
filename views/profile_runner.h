/// \file Profiles a plan through souffle-runner on a worker thread (GPU or emulator backend),
/// with progress in words and cancel; the measurements as a plain value tied to the plan.
#pragma once

#include <QFutureWatcher>
#include <QObject>
#include <QString>
#include <atomic>
#include <memory>
#include <vector>

#include "core/session/profile.h"
#include "views/plan_runner.h"

namespace souffle::views {

struct ProfileData {
  PlanDataPtr plan;  ///< the plan that was measured
  ProfileReport report;
  /// Per partition (indexed like plan->plan->partitions): the sum of the medians of its
  /// launches, -1 where nothing was measured.
  std::vector<double> partitionUs;
  /// Per partition: DRAM bytes read and written by its launches in one run, from the hardware
  /// counters; -1 where any of its launches has none.
  std::vector<double> partitionDramBytes;
  /// Per partition: achieved occupancy (0..1) of its launches, weighted by their times; -1
  /// where none was counted.
  std::vector<double> partitionOccupancy;
  /// "measured on NVIDIA H200 (cupti)" or "emulator: CPU time, not a GPU time".
  QString label() const;
  bool gpuTime() const { return report.gpu_time(); }
};
using ProfileDataPtr = std::shared_ptr<const ProfileData>;

/// `report` tied to `plan`: the per-partition sums of its launches' medians.
ProfileDataPtr makeProfileData(PlanDataPtr plan, ProfileReport report);

class ProfileRunner : public QObject {
  Q_OBJECT
 public:
  explicit ProfileRunner(QObject* parent = nullptr);
  ~ProfileRunner() override;

  /// Starts profiling `plan` on `backend` ("cuda" or "emulator"); a run in progress is
  /// cancelled and its result dropped.
  /// `inputs` is how the model was imported (--dim, --bind, --shape as text, each NAME=VALUE):
  /// the bundle records it, so the emulator loads the model the same way.
  void start(PlanDataPtr plan, const QString& backend, const QStringList& dims = {},
             const QStringList& binds = {}, const QStringList& shapes = {});
  void cancel();
  bool isBusy() const { return m_busy; }

  /// The synchronous body (never throws): the report's error says what failed.
  static ProfileDataPtr run(PlanDataPtr plan, ProfileOptions options,
                            std::vector<std::string> dims = {}, std::vector<std::string> binds = {},
                            std::vector<std::string> shapes = {});

 signals:
  void progress(const QString& what);
  void finished(souffle::views::ProfileDataPtr data);
  void cancelled();

 private:
  QFutureWatcher<ProfileDataPtr>* m_watcher;
  std::shared_ptr<std::atomic<bool>> m_cancel;
  quint64 m_generation = 0;
  bool m_busy = false;
};

}  // namespace souffle::views
