#include "views/explorer_session.h"

#include <QDockWidget>
#include <QFileInfo>
#include <nlohmann/json.hpp>

#include "views/edit_commands.h"

namespace souffle::views {

QDockWidget* dockOf(QWidget* page) {
  return qobject_cast<QDockWidget*>(page ? page->parentWidget() : nullptr);
}

void raiseDockOf(QWidget* page) {
  if (QDockWidget* dock = dockOf(page)) {
    dock->show();
    dock->raise();
  }
}

ExplorerSession::ExplorerSession(QObject* parent)
    : QObject(parent), m_editor(new DecisionEditor(this)) {}

void ExplorerSession::begin(const QString& modelPath, bool keepStepping) {
  m_modelPath = modelPath;
  m_imported.reset();
  m_importedData.reset();
  emit importedProfileChanged();
  m_measurements.clear();
  setStepping(keepStepping && m_stepping);
}

void ExplorerSession::setModel(ModelDataPtr model) {
  m_model = std::move(model);
  emit modelChanged(m_model);
}

void ExplorerSession::setPlan(PlanDataPtr plan) {
  m_plan = std::move(plan);
  emit planChanged(m_plan);
  if (m_imported) setImportedProfile(m_imported);  // mapped onto this plan
}

void ExplorerSession::setInputOptions(const QStringList& dims, const QStringList& binds,
                                      const QStringList& shapes) {
  m_inputDims = dims;
  m_inputBinds = binds;
  m_inputShapes = shapes;
}

bool ExplorerSession::isFor(const QString& path) const {
  if (path.isEmpty() || m_modelPath.isEmpty()) return path.isEmpty() && m_modelPath.isEmpty();
  return QFileInfo(path).absoluteFilePath() == m_modelPath;
}

void ExplorerSession::setImportedProfile(std::shared_ptr<const ExternalProfile> profile) {
  m_imported = std::move(profile);
  m_importedData = m_imported && m_plan ? mapExternalProfile(m_plan, m_imported) : nullptr;
  emit importedProfileChanged();
}

std::vector<std::string> ExplorerSession::measurements() const {
  std::vector<std::string> out;
  for (const auto& [key, text] : m_measurements) out.push_back(text);
  return out;
}

void ExplorerSession::setMeasurements(const std::vector<std::string>& reports) {
  m_measurements.clear();
  for (const std::string& t : reports) {
    const nlohmann::json j = nlohmann::json::parse(t, nullptr, false);
    if (j.is_object()) m_measurements[j.value("plan_key", std::string())] = t;
  }
}

std::optional<std::string> ExplorerSession::measurement(const std::string& planKey) const {
  auto it = m_measurements.find(planKey);
  if (it == m_measurements.end()) return std::nullopt;
  return it->second;
}

void ExplorerSession::keepMeasurement(const std::string& planKey, std::string report) {
  m_measurements[planKey] = std::move(report);
}

void ExplorerSession::setStepping(bool on) {
  if (on == m_stepping) return;
  m_stepping = on;
  emit steppingChanged(on);
}

}  // namespace souffle::views
