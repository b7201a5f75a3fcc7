/// \file What belongs to one open model, owned in one place and replaced when another model opens:
/// the imported profile, the kept profile runs, the step-through mode.
#pragma once

#include <QObject>
#include <QString>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/session/external_profile.h"

namespace souffle::views {

/// The state of one model in the explorer. MainWindow makes a new one for each model opened
/// (the same model reloaded keeps its session), so nothing of one model reaches the next.
/// Still held by MainWindow and its pages for now: the model and plan data, the edit stack
/// (DecisionEditor, reset when a session starts) and the compile/profile runners.
class ExplorerSession : public QObject {
  Q_OBJECT
 public:
  /// `modelPath` absolute; empty for the session of no model (the welcome page).
  explicit ExplorerSession(QString modelPath, QObject* parent = nullptr);

  QString modelPath() const { return m_modelPath; }
  /// Whether `path` names this session's model (paths compared absolute).
  bool isFor(const QString& path) const;

  /// The profile imported for this model (null: none), as read from its file.
  std::shared_ptr<const ExternalProfile> importedProfile() const { return m_imported; }
  void setImportedProfile(std::shared_ptr<const ExternalProfile> profile);

  /// Every profile run kept for this model's plans, by plan key (profile_report_json texts).
  std::vector<std::string> measurements() const;
  /// Replaces the kept runs (a project being opened); texts that are not JSON are skipped.
  void setMeasurements(const std::vector<std::string>& reports);
  /// The kept run of the plan with `planKey`, if any.
  std::optional<std::string> measurement(const std::string& planKey) const;
  void keepMeasurement(const std::string& planKey, std::string report);
  void dropMeasurement(const std::string& planKey) { m_measurements.erase(planKey); }

  /// The step-through mode is on for this model.
  bool isStepping() const { return m_stepping; }
  void setStepping(bool on);

 signals:
  void importedProfileChanged();
  void steppingChanged(bool on);

 private:
  QString m_modelPath;
  std::shared_ptr<const ExternalProfile> m_imported;
  std::map<std::string, std::string> m_measurements;  ///< by plan_key
  bool m_stepping = false;
};

}  // namespace souffle::views
