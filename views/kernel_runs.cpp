#include "views/kernel_runs.h"

#include <QAction>
#include <QMenu>
#include <QToolBar>
#include <QToolTip>
#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>

#include "core/session/profile.h"
#include "views/explorer_session.h"
#include "views/partition_table_model.h"

namespace souffle::views {

KernelRuns::KernelRuns(QObject* parent)
    : QObject(parent), m_compiler(new CompileRunner(this)), m_profiler(new ProfileRunner(this)) {
  ProfileOptions gpuOptions;
  gpuOptions.backend = "cuda";
  m_gpuOff = QString::fromStdString(profile_unavailable_reason(gpuOptions));
  // The partition being compiled, and after each distinct program its count, the time so far
  // and the slowest (kept on the line until the next program is done).
  auto programLine = std::make_shared<QString>();
  connect(m_compiler, &CompileRunner::progress, this,
          [this, programLine](int done, int total, const QString& current) {
            if (done == 0) programLine->clear();
            if (programLine->isEmpty()) emit progress(done, total);
            const QString where =
                current.isEmpty()
                    ? tr("Compiling with NVRTC… %1 of %2 kernels").arg(done).arg(total)
                    : tr("Compiling with NVRTC: %1, %2 of %3 kernels done")
                          .arg(current)
                          .arg(done)
                          .arg(total);
            m_session->say(programLine->isEmpty() ? where
                                                  : where + QStringLiteral("; ") + *programLine);
          });
  connect(m_compiler, &CompileRunner::programProgress, this,
          [this, programLine](int done, int total, const QString& line) {
            *programLine = line;
            emit progress(done, total);
            m_session->say(tr("Compiling with NVRTC: %1").arg(line));
          });
  connect(m_compiler, &CompileRunner::finished, this, &KernelRuns::onCompiled);
  connect(m_compiler, &CompileRunner::cancelled, this, [this] {
    m_cancelCompileAction->setEnabled(false);
    emit busyChanged(false, {});
    m_session->say(
        tr("Compile cancelled; the kernels compiled so far are kept for the next compile"), 8000);
    emit compiled();
  });
  connect(m_profiler, &ProfileRunner::progress, this,
          [this](const QString& what) { m_session->say(tr("Profiling: %1").arg(what)); });
  connect(m_profiler, &ProfileRunner::finished, this, &KernelRuns::onProfiled);
  connect(m_profiler, &ProfileRunner::cancelled, this, [this] {
    m_cancelProfileAction->setEnabled(false);
    m_session->say(tr("Profile cancelled"), 5000);
  });
}

QList<QAction*> KernelRuns::addActions(QMenu* menu, QToolBar* bar) {
  m_bar = bar;
  m_compileAction = menu->addAction(tr("&Compile"), this, &KernelRuns::compile);
  m_compileAction->setShortcut(QKeySequence(tr("Ctrl+B")));
  m_compileAction->setToolTip(
      tr("Compile every kernel with NVRTC for sm_80 and sm_90: registers, shared memory, spills "
         "(Ctrl+B)"));
  m_cancelCompileAction = menu->addAction(tr("C&ancel compile"), this, &KernelRuns::cancelCompile);
  m_cancelCompileAction->setShortcut(QKeySequence(tr("Ctrl+Shift+B")));
  m_cancelCompileAction->setEnabled(false);
  m_profileAction =
      menu->addAction(tr("&Profile on the GPU"), this, [this] { profile(QStringLiteral("cuda")); });
  m_profileAction->setShortcut(QKeySequence(tr("Ctrl+Alt+P")));
  const bool gpu = m_gpuOff.isEmpty();
  m_profileAction->setProperty("gpuAvailable", gpu);
  m_profileAction->setEnabled(false);
  const QString profileTip =
      gpu ? tr("Run, verify and time every kernel on the GPU through souffle-runner (Ctrl+Alt+P)")
          : tr("Profiling on a GPU is off: %1. Estimated times come from the cost model.")
                .arg(m_gpuOff);
  m_profileAction->setToolTip(profileTip);
  m_profileAction->setStatusTip(profileTip);
  m_profileEmuAction = menu->addAction(tr("Profile on the &emulator"), this,
                                       [this] { profile(QStringLiteral("emulator")); });
  m_profileEmuAction->setToolTip(
      tr("Run and verify every kernel in the CPU emulator through souffle-runner; its times are "
         "CPU times, not GPU times"));
  m_profileEmuAction->setEnabled(false);
  m_cancelProfileAction =
      menu->addAction(tr("Cancel p&rofile"), m_profiler, &ProfileRunner::cancel);
  m_cancelProfileAction->setEnabled(false);
  m_compileAction->setEnabled(false);
  if (bar) {
    bar->addSeparator();
    bar->addAction(m_compileAction);
    bar->addAction(m_cancelCompileAction);
    bar->addAction(m_profileAction);
  }
  QList<QAction*> needModel{m_profileEmuAction, m_compileAction};
  if (gpu) needModel << m_profileAction;
  return needModel;
}

void KernelRuns::compile() {
  const PlanDataPtr plan = m_session->plan();
  if (!plan) return;
  m_compiler->start(plan);
  m_cancelCompileAction->setEnabled(true);
  const int n = static_cast<int>(plan->plan->partitions.size());
  emit progress(0, n);
  emit busyChanged(true, tr("Compiling %1 kernel%2 with NVRTC for sm_80 and sm_90…")
                             .arg(n)
                             .arg(n == 1 ? QString() : QStringLiteral("s")));
}

void KernelRuns::onCompiled(CompileDataPtr data) {
  const bool quiet = data && data->cachedOnly;  // figures carried over a new plan, unasked
  if (!quiet) {
    m_cancelCompileAction->setEnabled(false);
    emit busyChanged(false, {});
  }
  if (!data || data->plan != m_session->plan()) {  // compiled a plan no longer on screen
    if (!quiet) emit compiled();
    return;
  }
  keepCompile(data);
  m_session->announceCompile(data, !quiet);  // the kernel table, charts and code follow
  if (quiet) return;
  // The summary, where the user pressed the button and in the status bar; the first failure,
  // with the NVRTC log and the kernel, in the problems panel.
  const QString summary = compileSummary(*data);
  m_lastCompileSummary = summary;
  if (const CompileFailure failure = firstCompileFailure(*data); !failure.reason.isEmpty()) {
    LoadError e;
    e.title = tr("Compile failed");
    e.file = m_session->modelPath();
    e.node = failure.node;
    e.reason = failure.reason;
    m_session->reportProblem(e);
  }
  m_session->say(summary, 15000);
  if (QWidget* button = m_bar ? m_bar->widgetForAction(m_compileAction) : nullptr;
      button && button->isVisible())
    QToolTip::showText(button->mapToGlobal(QPoint(0, button->height())), summary, button);
  emit compiled();
}

void KernelRuns::profile(const QString& backend) {
  const PlanDataPtr plan = m_session->plan();
  if (!plan) return;
  m_cancelProfileAction->setEnabled(true);
  m_session->say(tr("Profiling %1 kernels on the %2…")
                     .arg(plan->plan->kernels())
                     .arg(backend == QLatin1String("cuda") ? tr("GPU") : tr("emulator")));
  m_profiler->start(plan, backend, m_session->inputDims(), m_session->inputBinds(),
                    m_session->inputShapes());
}

void KernelRuns::onProfiled(ProfileDataPtr data) {
  m_cancelProfileAction->setEnabled(false);
  if (!data) return;
  const ProfileReport& r = data->report;
  if (!r.error.empty()) {
    // The runner's failure (a dead or hung runner, a faulting kernel, a mismatch) in the
    // problems panel with the kernel named; the window and the user's edits stay as they are.
    LoadError e;
    e.title = tr("Profiling failed");
    e.file = m_session->modelPath();
    e.node = r.error_kernel.empty() ? QString() : QString::fromStdString(r.error_kernel);
    e.reason = tr("profiling on %1 failed: %2")
                   .arg(QString::fromStdString(r.backend), QString::fromStdString(r.error));
    m_session->reportProblem(e);
    m_session->say(e.message(), 8000);
  }
  if (data->plan != m_session->plan()) return;  // measured a plan no longer on screen
  if (r.kernels.empty()) return;
  keepProfile(data);
  m_session->announceProfile(data);  // the project, the kernel table and the charts follow
  m_session->say(profileSummary(*data), 15000);
}

QString KernelRuns::setPlan(const PlanDataPtr& plan) {
  dropCompile();
  m_profile.reset();
  if (!plan || !m_session) return {};
  const std::string key = plan_key(*plan->plan);
  const std::optional<std::string> kept = m_session->measurement(key);
  if (!kept) return {};
  try {
    m_profile = makeProfileData(plan, profile_report_from_json(nlohmann::json::parse(*kept)));
  } catch (const std::exception& ex) {
    // A kept run this build cannot read (a colleague's project, a hand edit) is dropped; the
    // plan and the user's edits stay.
    m_session->dropMeasurement(key);
    return QString::fromUtf8(ex.what());
  }
  return {};
}

void KernelRuns::dropCompile() {
  m_compiler->cancel();
  m_compile.reset();
}

void KernelRuns::keepProfile(ProfileDataPtr data) {
  m_profile = std::move(data);
  if (m_session)
    m_session->keepMeasurement(m_profile->report.plan_key,
                               profile_report_json(m_profile->report).dump());
}

CompileFailure firstCompileFailure(const CompileData& data) {
  CompileFailure f;
  if (!data.error.isEmpty()) {
    f.reason = QObject::tr("the kernels could not be built: %1").arg(data.error);
    return f;
  }
  for (size_t i = 0; i < data.kernels.size(); ++i)
    for (const ArchCompile& a : data.kernels[i].archs) {
      if (a.ok) continue;
      const plan::Partition& p = data.plan->plan->partitions[i];
      f.partition = int(i);
      f.node = QObject::tr("K%1 (%2) for %3").arg(p.id).arg(data.kernels[i].name, a.arch);
      QString log = a.log.trimmed().isEmpty() ? a.error : a.log.trimmed();
      if (log.size() > 4000) log = log.left(4000) + QObject::tr(" …");
      f.reason = QObject::tr("NVRTC could not compile the kernel (%1 of %2 compiles failed):\n%3")
                     .arg(data.failures)
                     .arg(data.kernels.size() * static_cast<size_t>(data.archs.size()))
                     .arg(log);
      return f;
    }
  return f;
}

QString compileSummary(const CompileData& data) {
  int maxRegs = 0;
  qint64 spills = 0;
  for (const KernelCompile& k : data.kernels)
    for (const ArchCompile& a : k.archs) {
      maxRegs = std::max(maxRegs, a.registers);
      spills += a.spillBytes;
    }
  QString summary =
      data.failures > 0
          ? QObject::tr("Compile: %1 of %2 compiles failed (Problems panel)")
                .arg(data.failures)
                .arg(data.kernels.size() * static_cast<size_t>(data.archs.size()))
          : QObject::tr("Compiled %1 kernel%2 for %3 in %4 s: up to %5 registers, %6 spilled")
                .arg(data.compiled + data.reused)
                .arg(data.compiled + data.reused == 1 ? QString() : QStringLiteral("s"))
                .arg(data.archs.join(QStringLiteral(" and ")))
                .arg(data.ms / 1000, 0, 'f', 1)
                .arg(maxRegs)
                .arg(compactBytes(static_cast<double>(spills)));
  if (data.reused > 0)
    summary += QObject::tr(" (%1 compiled now, %2 unchanged since their last compile)")
                   .arg(data.compiled)
                   .arg(data.reused);
  if (data.programs > 0)
    summary += QObject::tr("; %1 distinct program%2, %3 from the cache")
                   .arg(data.programs)
                   .arg(data.programs == 1 ? QString() : QStringLiteral("s"))
                   .arg(data.programsFromCache);
  return summary;
}

QString profileSummary(const ProfileData& data) {
  const ProfileReport& r = data.report;
  const QString measured = r.gpu_time()
                               ? QObject::tr("%1 µs").arg(r.kernels_us, 0, 'f', 1)
                               : QObject::tr("%1 of CPU time").arg(timeWithUnit(r.kernels_us));
  // How the outputs compared: element-wise, with the tolerance and the largest errors.
  const std::string verification = verification_summary(r);
  return QObject::tr("Profiled %1, %2: %3 (estimated %4 µs)%5")
      .arg(r.kernels.size() == 1 ? QObject::tr("1 kernel")
                                 : QObject::tr("%1 kernels").arg(r.kernels.size()))
      .arg(data.label(), measured)
      .arg(r.est_total_us, 0, 'f', 1)
      .arg(verification.empty() ? QString()
                                : QStringLiteral("; ") + QString::fromStdString(verification));
}

}  // namespace souffle::views
