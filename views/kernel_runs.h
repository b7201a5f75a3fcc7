/// \file The compile and profile runs of the plan on screen: both runners, the last compile, the
/// measurements shown (the runs kept for the model's plans live in its ExplorerSession), and the
/// texts the window shows of them.
#pragma once

#include <QList>
#include <QObject>
#include <map>
#include <string>
#include <vector>

#include "views/compile_runner.h"
#include "views/profile_runner.h"

class QAction;
class QMenu;
class QToolBar;

namespace souffle::views {

class ExplorerSession;

class KernelRuns : public QObject {
  Q_OBJECT
 public:
  explicit KernelRuns(QObject* parent = nullptr);

  CompileRunner* compiler() const { return m_compiler; }
  ProfileRunner* profiler() const { return m_profiler; }
  /// The last compile of the plan on screen (null before one, or after the plan changed).
  CompileDataPtr compileData() const { return m_compile; }
  /// The measurements shown (null before a profile of the plan on screen).
  ProfileDataPtr profileData() const { return m_profile; }

  /// The session whose plan is compiled and profiled, whose kept profile runs setPlan and
  /// keepProfile use, and through which the outcomes go (kernelsCompiled, profiled, messages,
  /// problems).
  void setSession(ExplorerSession* session) { m_session = session; }

  /// Adds compile, cancel compile, profile on the GPU and on the emulator and cancel profile to
  /// `menu`, the first three to `bar`; returns those that need a model.
  QList<QAction*> addActions(QMenu* menu, QToolBar* bar);
  QAction* compileAction() const { return m_compileAction; }
  QAction* profileAction() const { return m_profileAction; }
  QAction* profileEmulatorAction() const { return m_profileEmuAction; }
  /// Why profiling on a GPU is off (empty when a GPU was found).
  QString gpuOffReason() const { return m_gpuOff; }
  /// Compiles every kernel of the plan for sm_80 and sm_90 (off the GUI thread).
  void compile();
  void cancelCompile() { m_compiler->cancel(); }
  /// Profiles the plan's kernels on `backend` ("cuda" or "emulator") through souffle-runner.
  void profile(const QString& backend);
  /// The summary of the last compile the user asked for.
  QString lastCompileSummary() const { return m_lastCompileSummary; }

  /// A new plan is on screen: a compile in progress is cancelled and the last one dropped (its
  /// results would not match the kernels); a kept profile run of this very plan (same strategy,
  /// GPU, precision and edits) comes back as profileData. A kept run that cannot be read is
  /// dropped: the reason is returned (empty when none was).
  QString setPlan(const PlanDataPtr& plan);
  /// Cancels a compile in progress and drops the last one (the model is closed).
  void dropCompile();
  /// Keeps `data` as the compile of the plan on screen.
  void keepCompile(CompileDataPtr data) { m_compile = std::move(data); }
  /// Keeps `data` as the measurements shown and, in the session, among those kept for its plan.
  void keepProfile(ProfileDataPtr data);

 signals:
  /// A compile started (`what` says so) or ended; the window's activity follows.
  void busyChanged(bool busy, const QString& what);
  /// Kernels compiled of `total` (the status bar's progress).
  void progress(int done, int total);
  /// A compile the user asked for finished (errors included) or was cancelled.
  void compiled();

 private:
  void onCompiled(CompileDataPtr data);
  void onProfiled(ProfileDataPtr data);

  CompileRunner* m_compiler;
  ProfileRunner* m_profiler;
  CompileDataPtr m_compile;
  ProfileDataPtr m_profile;
  ExplorerSession* m_session = nullptr;
  QToolBar* m_bar = nullptr;
  QAction* m_compileAction = nullptr;
  QAction* m_cancelCompileAction = nullptr;
  QAction* m_profileAction = nullptr;
  QAction* m_profileEmuAction = nullptr;
  QAction* m_cancelProfileAction = nullptr;
  QString m_gpuOff;
  QString m_lastCompileSummary;  ///< what the last compile said
};

/// The first failed compile of a compile: the build error, else the first (kernel, arch) that
/// NVRTC refused, with its log. `partition` is -1 when none failed or the kernels were not built.
struct CompileFailure {
  int partition = -1;
  QString node;    ///< "K3 (name) for sm_90"
  QString reason;  ///< empty when nothing failed
};
CompileFailure firstCompileFailure(const CompileData& data);
/// "Compiled 12 kernels for sm_80 and sm_90 in 3.1 s: up to 96 registers, 0 B spilled", or how
/// many compiles failed.
QString compileSummary(const CompileData& data);
/// "Profiled 12 kernels, measured on …: 85.3 µs (estimated 91.0 µs); outputs verified: every
/// element within rtol 0.0001 + atol 1e-05 (max abs error …)" (verification_summary).
QString profileSummary(const ProfileData& data);

}  // namespace souffle::views
