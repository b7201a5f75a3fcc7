/// \file The explorer's session: the model open, its plan and everything that belongs to that
/// model (the imported profile, the kept profile runs, the step-through mode, the model's input
/// options), and the signals the pages subscribe to instead of reaching into each other.
#pragma once

#include <QObject>
#include <QString>
#include <QStringList>
#include <QWidget>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/session/external_profile.h"
#include "views/compile_runner.h"
#include "views/imported_profile.h"
#include "views/model_inputs.h"
#include "views/model_loader.h"
#include "views/plan_runner.h"
#include "views/profile_runner.h"

class QDockWidget;

namespace souffle::views {

class DecisionEditor;

/// A node picked in the graph, as the pages that follow it need it.
struct NodeSelection {
  int box = -1;            ///< the box in the graph on screen
  int partition = -1;      ///< its (first) kernel in the plan on screen; -1: none
  QString node;            ///< its ONNX node
  QString te;              ///< its TE op at TE level; empty at op level
  bool byProgram = false;  ///< selected for another page (a code line, a timeline span)
};

/// The dock that holds `page` (null when it is not in one).
QDockWidget* dockOf(QWidget* page);
/// Shows and raises the dock that holds `page` (nothing when it is not in one).
void raiseDockOf(QWidget* page);

/// One per window. Pages subscribe to its signals and ask through it (say, reportProblem, the
/// select* calls); MainWindow starts a model's state with begin() (the same model reloaded keeps
/// it), so nothing of one model reaches the next. It holds the edit stack (reset when a model's
/// state begins); the runners are KernelRuns'.
class ExplorerSession : public QObject {
  Q_OBJECT
 public:
  explicit ExplorerSession(QObject* parent = nullptr);

  /// Forgets everything of the model before and starts the state of `modelPath` (absolute;
  /// empty: no model, the welcome page). The step-through mode is kept only when `keepStepping`.
  void begin(const QString& modelPath, bool keepStepping);
  QString modelPath() const { return m_modelPath; }
  /// Whether `path` names this session's model (paths compared absolute).
  bool isFor(const QString& path) const;

  /// The model on screen (null before one loaded, or after it was closed).
  ModelDataPtr model() const { return m_model; }
  void setModel(ModelDataPtr model);
  /// The plan on screen (null before the first plan of a model arrives).
  PlanDataPtr plan() const { return m_plan; }
  /// The user's edits of the model's plan and their undo stack (never null).
  DecisionEditor* editor() const { return m_editor; }
  /// Replaces the plan on screen and tells the pages (planChanged), also when null.
  void setPlan(PlanDataPtr plan);

  /// How the model's inputs are given, each as on the command line (NAME=VALUE).
  QStringList inputDims() const { return m_inputDims; }
  QStringList inputBinds() const { return m_inputBinds; }
  QStringList inputShapes() const { return m_inputShapes; }
  /// The three together.
  ModelInputs inputs() const { return {m_inputDims, m_inputBinds, m_inputShapes}; }
  void setInputOptions(const QStringList& dims, const QStringList& binds,
                       const QStringList& shapes);

  /// The profile imported for this model (null: none), as read from its file.
  std::shared_ptr<const ExternalProfile> importedProfile() const { return m_imported; }
  /// Imports `profile` for this model (importedProfileChanged).
  void setImportedProfile(std::shared_ptr<const ExternalProfile> profile);
  /// The imported profile mapped onto the plan on screen (null: none); mapped again, with
  /// importedProfileChanged, when the plan changes.
  ExternalProfileDataPtr importedData() const { return m_importedData; }

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

  // What pages ask of the window and of each other.
  /// A status-bar message (`ms` 0: until the next).
  void say(const QString& text, int ms = 0) { emit message(text, ms); }
  /// A problem for the problems panel (shown and raised; the window stays usable).
  void reportProblem(const LoadError& error) { emit problem(error); }
  /// The kernel table's selection changed to partition `k`.
  void selectPartition(int k) { emit partitionSelected(k); }
  /// A page asks the kernel table to select partition `k` (and to come to the front).
  void activatePartition(int k) { emit partitionActivated(k); }
  /// A node was selected in the graph.
  void selectNode(const NodeSelection& selection) { emit nodeSelected(selection); }
  /// A page asks the graph to select the boxes of `nodes` (TEs `tes` at TE level).
  void selectNodes(const QStringList& nodes, const QStringList& tes) {
    emit nodesActivated(nodes, tes);
  }
  /// A timeline span: stage `stage` of partition `partition`, computing `nodes` (`tes`).
  void selectStage(int partition, int stage, const QStringList& nodes, const QStringList& tes) {
    emit stageActivated(partition, stage, nodes, tes);
  }
  /// Kernels of the plan on screen compiled: `asked` by the user, else figures carried over from
  /// the cache to a new plan.
  void announceCompile(CompileDataPtr data, bool asked) { emit kernelsCompiled(data, asked); }
  /// The plan on screen was profiled.
  void announceProfile(ProfileDataPtr data) { emit profiled(data); }
  /// Measured times a page shows changed (the heat map follows).
  void measuredTimesChanged() { emit measuredChanged(); }

 signals:
  void modelChanged(souffle::views::ModelDataPtr model);
  void planChanged(souffle::views::PlanDataPtr plan);
  /// The imported profile or its mapping onto the plan changed (importedData).
  void importedProfileChanged();
  void steppingChanged(bool on);
  void message(const QString& text, int ms);
  void problem(const souffle::views::LoadError& error);
  void partitionSelected(int k);
  void partitionActivated(int k);
  void nodeSelected(const souffle::views::NodeSelection& selection);
  void nodesActivated(const QStringList& nodes, const QStringList& tes);
  void stageActivated(int partition, int stage, const QStringList& nodes, const QStringList& tes);
  void measuredChanged();
  void kernelsCompiled(souffle::views::CompileDataPtr data, bool asked);
  void profiled(souffle::views::ProfileDataPtr data);

 private:
  DecisionEditor* m_editor;
  QString m_modelPath;
  ModelDataPtr m_model;
  PlanDataPtr m_plan;
  QStringList m_inputDims, m_inputBinds, m_inputShapes;
  std::shared_ptr<const ExternalProfile> m_imported;
  ExternalProfileDataPtr m_importedData;
  std::map<std::string, std::string> m_measurements;  ///< by plan_key
  bool m_stepping = false;
};

}  // namespace souffle::views
