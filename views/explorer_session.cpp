#include "views/explorer_session.h"

#include <QFileInfo>
#include <nlohmann/json.hpp>

namespace souffle::views {

ExplorerSession::ExplorerSession(QString modelPath, QObject* parent)
    : QObject(parent), m_modelPath(std::move(modelPath)) {}

bool ExplorerSession::isFor(const QString& path) const {
  if (path.isEmpty() || m_modelPath.isEmpty()) return path.isEmpty() && m_modelPath.isEmpty();
  return QFileInfo(path).absoluteFilePath() == m_modelPath;
}

void ExplorerSession::setImportedProfile(std::shared_ptr<const ExternalProfile> profile) {
  m_imported = std::move(profile);
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
