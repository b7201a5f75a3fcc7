/// \file The compile and profile runs of the plan on screen: both runners, the last compile, the
/// measurements shown (the runs kept for the model's plans live in its ExplorerSession), and the
/// texts the window shows of them.
#pragma once

#include <QObject>
#include <map>
#include <string>
#include <vector>

#include "views/compile_runner.h"
#include "views/profile_runner.h"

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

  /// The session whose kept profile runs setPlan and keepProfile use (a new model's).
  void setSession(ExplorerSession* session) { m_session = session; }

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

 private:
  CompileRunner* m_compiler;
  ProfileRunner* m_profiler;
  CompileDataPtr m_compile;
  ProfileDataPtr m_profile;
  ExplorerSession* m_session = nullptr;
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
