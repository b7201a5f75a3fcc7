#include "views/kernel_runs.h"

#include <algorithm>
#include <nlohmann/json.hpp>

#include "core/session/profile.h"
#include "views/explorer_session.h"
#include "views/partition_table_model.h"

namespace souffle::views {

KernelRuns::KernelRuns(QObject* parent)
    : QObject(parent), m_compiler(new CompileRunner(this)), m_profiler(new ProfileRunner(this)) {}

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
  return QObject::tr("Profiled %1 kernels, %2: %3 (estimated %4 µs)%5")
      .arg(r.kernels.size())
      .arg(data.label(), measured)
      .arg(r.est_total_us, 0, 'f', 1)
      .arg(verification.empty() ? QString()
                                : QStringLiteral("; ") + QString::fromStdString(verification));
}

}  // namespace souffle::views
