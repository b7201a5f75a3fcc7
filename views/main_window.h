/// \file The explorer's main window: it places the pages (a table of docks), builds the menu
/// bar from what the pages and parts offer (a table of menu offers) and wires them to the
/// session; the state of the model open is the session's (ExplorerSession).
#pragma once

#include <QFileInfo>
#include <QMainWindow>
#include <QPalette>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "views/activity.h"
#include "views/compile_runner.h"
#include "views/edit_actions.h"
#include "views/explorer_session.h"
#include "views/export_actions.h"
#include "views/graph_page.h"
#include "views/heat_colouring.h"
#include "views/heat_map.h"
#include "views/imported_profile.h"
#include "views/kernel_runs.h"
#include "views/kernels_page.h"
#include "views/model_lifecycle.h"
#include "views/model_loader.h"
#include "views/nodes_page.h"
#include "views/plan_controller.h"
#include "views/plan_runner.h"
#include "views/plan_toolbar.h"
#include "views/profile_runner.h"
#include "views/recent_files.h"
#include "views/scene_graph.h"
#include "views/status_line.h"
#include "views/step_through_mode.h"
#include "views/strategies_page.h"
#include "views/theme_chooser.h"

class QAction;
class QDockWidget;
class QLabel;
class QMenu;
class QStackedWidget;
class QTableView;

namespace souffle::views {

class ChartsPanel;
class CodePanel;
class ComparisonView;
class DecisionEditor;
class EditPreview;
class MemoryPanel;
struct EditRequest;
class ErrorPanel;
class GraphPage;
class GraphPanel;
class NodeTableModel;
class PartitionTableModel;
class PlanController;
class PlanToolBar;
class ProjectController;
class PropertiesPanel;
class RecentFiles;
class StatusLine;
class StepThroughPanel;
class StrategyTableModel;
class TeTextPanel;
class TimelinePanel;
class TransformsPanel;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);
  ~MainWindow() override;

  /// Starts loading `path` (off the GUI thread); a load in progress is dropped. Another model
  /// than the one open first asks to save its unsaved edits (Cancel keeps it) and starts a new
  /// session: nothing of the model before (edits, imported profile, step-through, kept
  /// measurements) carries over.
  void openModel(const QString& path) { m_models->openModel(path); }
  /// How the model's inputs are given, each as on the command line (NAME=VALUE): symbolic dims,
  /// inputs fixed as constants (one that decides an If), input shapes. Used by the next load
  /// (Model inputs… sets them and reloads); a project keeps them.
  void setInputOptions(const QStringList& dims, const QStringList& binds,
                       const QStringList& shapes) {
    m_session->setInputOptions(dims, binds, shapes);
  }
  QStringList inputDims() const { return m_session->inputDims(); }
  QStringList inputBinds() const { return m_session->inputBinds(); }
  QStringList inputShapes() const { return m_session->inputShapes(); }
  /// The dialog of Model inputs…: one "--dim|--bind|--shape NAME=VALUE" a line; reloads.
  void editInputOptions() { m_models->editInputOptions(); }
  /// Ends the session of the model open and starts one for `modelPath` (empty: no model),
  /// unless it is that model's and `fresh` is false. Asks nothing (see openModel).
  void beginSession(const QString& modelPath, bool fresh = false) {
    m_models->beginSession(modelPath, fresh);
  }
  /// What belongs to the model open (never null).
  ExplorerSession* session() const { return m_session; }
  /// Restores geometry, dock layout and theme saved by the last session.
  void restoreSettings();

  ModelDataPtr modelData() const { return m_session->model(); }
  bool isLoading() const { return m_models->isLoading(); }
  bool isTeLevel() const { return m_graphPage->isTeLevel(); }
  bool isErrorShown() const;
  QStringList recentFiles() const { return m_models->recentFiles(); }
  /// The plan on screen (null before the first plan of a model arrives).
  PlanDataPtr planData() const { return m_session->plan(); }
  bool isPlanning() const { return m_plans->isPlanning(); }
  QString strategy() const { return m_planBar->strategy(); }
  QString gpu() const { return m_planBar->gpu(); }
  /// "fp32", "tf32", "fp16" or "bf16": the compute type plans are made for.
  QString precision() const { return m_planBar->precision(); }
  gpu::Precision precisionValue() const { return m_planBar->precisionValue(); }
  /// The sync mode of the toolbar ("grid", "auto", "flags"): the plan is made with it.
  QString sync() const { return m_planBar->sync(); }
  SyncMode syncValue() const { return m_planBar->syncValue(); }

  GraphPanel* graphPanel() const { return m_graphPage->panel(); }
  ErrorPanel* errorPanel() const { return m_error; }
  NodeTableModel* nodeModel() const { return m_nodes->model(); }
  QTableView* nodeTable() const { return m_nodes->table(); }
  PropertiesPanel* propertiesPanel() const { return m_properties; }
  TeTextPanel* teTextPanel() const { return m_teText; }
  PartitionTableModel* partitionModel() const { return m_kernels->model(); }
  /// The model file opened last (also while it loads or after it failed to load).
  QString modelPath() const { return m_models->lastPath(); }
  DecisionEditor* decisionEditor() const { return m_session->editor(); }
  /// What hovering an edit would do, before it is applied.
  EditPreview* editPreview() const { return m_edits->preview(); }
  /// The Memory panel (docs/teaching.md) and its dock.
  MemoryPanel* memoryPanel() const { return m_memory; }
  QDockWidget* memoryDock() const;
  ProjectController* project() const { return m_project; }
  TransformsPanel* transformsPanel() const { return m_transforms; }
  ComparisonView* comparisonView() const { return m_compare; }
  /// Shows `error` in the problems panel (the window stays usable).
  void showError(const LoadError& error) { m_models->showError(error); }
  /// Shows `error` once the model being opened has loaded (a load clears the problems panel):
  /// a project's part that could not be used while the rest opens.
  void showErrorAfterLoad(const LoadError& error) { m_models->showErrorAfterLoad(error); }
  QTableView* partitionTable() const { return m_kernels->table(); }
  StrategyTableModel* strategyModel() const { return m_strategies->model(); }
  QTableView* strategyTable() const { return m_strategies->table(); }
  QDockWidget* strategyDock() const { return dockOf(m_strategies); }
  StepThroughPanel* stepThrough() const { return m_stepMode->panel(); }
  /// The step-through mode (F6): a page of its own in front of the graph, the docks put away
  /// until it ends; it belongs to the model and ends when another model opens.
  QAction* stepThroughAction() const { return m_stepMode->action(); }
  bool isStepThroughShown() const { return m_stepMode && m_stepMode->isShown(); }
  void setStepThroughShown(bool on) { m_stepMode->setShown(on); }
  CodePanel* codePanel() const { return m_code; }
  ChartsPanel* chartsPanel() const { return m_charts; }
  CompileRunner* compileRunner() const { return m_runs->compiler(); }
  ProfileRunner* profileRunner() const { return m_runs->profiler(); }
  QAction* profileEmulatorAction() const { return m_runs->profileEmulatorAction(); }
  /// The measurements shown (null before a profile of the plan on screen).
  ProfileDataPtr profileData() const { return m_runs->profileData(); }
  /// Every profile run kept for this session's plans (profile_report_json texts), which a
  /// project saves; setMeasurements replaces them (a project being opened).
  std::vector<std::string> measurements() const { return m_session->measurements(); }
  void setMeasurements(const std::vector<std::string>& reports) {
    m_session->setMeasurements(reports);
  }
  /// The last compile of the plan on screen (null before one, or after the plan changed).
  CompileDataPtr compileData() const { return m_runs->compileData(); }
  /// The summary of the last compile the user asked for.
  QString lastCompileSummary() const { return m_runs->lastCompileSummary(); }
  /// The status bar's message, whole (it may be shown elided).
  QString message() const { return m_status->message(); }
  QAction* compileAction() const { return m_runs->compileAction(); }
  QAction* profileAction() const { return m_runs->profileAction(); }
  HeatMetric heatMetric() const { return m_heat->metric(); }
  /// The imported profile mapped onto the plan on screen (null: none).
  ExternalProfileDataPtr importedProfile() const { return m_session->importedData(); }
  ImportedProfilePanel* importedProfilePanel() const { return m_importedPanel; }
  /// The Timeline panel (docs/timeline.md) and its dock.
  TimelinePanel* timelinePanel() const { return m_timeline; }
  QDockWidget* timelineDock() const;

 public slots:
  void openDialog() { m_models->openDialog(); }
  void reload() { m_models->reload(); }
  void closeModel() { m_models->closeModel(); }
  void cancelLoad() { m_activity->cancel(); }
  void setTeLevel(bool on) { m_graphPage->setTeLevel(on); }
  /// "system", "light" or "dark".
  void setTheme(const QString& theme) { m_themes->setTheme(theme); }
  void exportSvg(const QString& path = {}) { m_graphPage->exportSvg(path); }
  void exportPng(const QString& path = {}) { m_graphPage->exportPng(path); }
  /// "unfused", "rules" or "souffle"; re-plans the open model.
  void setStrategy(const QString& strategy) { m_planBar->setStrategy(strategy); }
  /// A GPU by name (see the GPU box); re-plans the open model.
  void setGpu(const QString& gpu) { m_planBar->setGpu(gpu); }
  /// "fp32", "tf32", "fp16" or "bf16"; re-plans the open model.
  void setPrecision(const QString& precision) { m_planBar->setPrecision(precision); }
  /// Prices every plan from now on with the calibration file `file` (souffle-runner's
  /// `calibrate`) and re-plans; false and `error` (the file and the field named) for a file
  /// that cannot be read, the constants in use kept.
  bool loadCalibration(const QString& file, QString* error = nullptr) {
    return m_planBar->loadCalibration(file, error);
  }
  /// Back to the GPU spec's constants; re-plans.
  void clearCalibration() { m_planBar->clearCalibration(); }
  void setSync(const QString& sync) { m_planBar->setSync(sync); }
  /// Opens a model (.onnx) or a project (.souffle).
  void openFile(const QString& path) { m_models->openFile(path); }
  /// Merges the kernels of the selected kernel-table rows (or of the selected graph nodes).
  void mergeSelected() { m_edits->mergeSelected(); }
  /// Starts a new kernel at the selected graph node.
  void splitAtSelected() { m_edits->splitAtSelected(); }
  /// Gives the selected graph node a kernel of its own.
  void pinSelected() { m_edits->pinSelected(); }
  /// A decision that orders the selected node's stage after the stages before it by `kind`.
  void orderSelected(BoundaryKind kind) { m_edits->orderSelected(kind); }
  /// Writes the plan on screen as the JSON `souffle-cli plan --json` prints.
  bool exportPlanJson(const QString& path = {}) { return m_exports->exportPlanJson(path); }
  /// Compiles the plan's kernels and writes them as a bundle (.cu, .ptx, weights, data, host
  /// harness, CMakeLists.txt) into `dir` (asked for when empty), off the GUI thread; false when
  /// nothing was started. bundleExported reports the outcome.
  bool exportBundle(const QString& dir = {}) { return m_exports->exportBundle(dir); }
  /// Writes a report of the plan on screen (HTML, JSON, CSV or DOT by the file's extension; with
  /// the user's edits, the plan before and after them), off the GUI thread; false when nothing
  /// was started. reportExported reports the outcome.
  bool exportReport(const QString& path = {}) { return m_exports->exportReport(path); }
  /// Writes the teaching walk-through (one HTML page per pipeline step) beside `path`.
  bool exportWalkthrough(const QString& path = {}) { return m_exports->exportWalkthrough(path); }
  /// Compiles every kernel of the plan for sm_80 and sm_90 (off the GUI thread).
  void compileKernels() { m_runs->compile(); }
  void cancelCompile() { m_runs->cancelCompile(); }
  /// Profiles the plan's kernels on the GPU (only enabled when the profiler says it can).
  void profileKernels() { m_runs->profile(QStringLiteral("cuda")); }
  /// Colours the graph's boxes by op type (None) or as a heat map of `metric`.
  void setHeatMetric(HeatMetric metric) { m_heat->setMetric(metric); }
  /// Reads a timing file (CSV of name and time, Nsight Compute CSV, PyTorch profiler trace),
  /// asked for when `path` is empty, maps it onto the plan and colours by measured time; false
  /// (with the reason in the problems panel) when it cannot be read.
  bool importProfile(const QString& path = {}) {
    return m_heat->importProfile(path, QFileInfo(m_models->lastPath()).absolutePath());
  }

 signals:
  void modelLoaded();
  void loadFailed(const souffle::views::LoadError& error);
  /// The graph is on screen; `final` once dot's layout has replaced any preliminary one.
  void graphDrawn(bool final);
  /// A plan arrived and its partitions are drawn.
  void planned();
  void planFailed(const QString& reason);
  /// A compile of the plan's kernels finished (errors included) or was cancelled.
  void compiled();
  /// A bundle export finished: `message` says where and what, or why it failed.
  void bundleExported(bool ok, const QString& message);
  /// A report or walk-through export finished: `message` says where, or why it failed.
  void reportExported(bool ok, const QString& message);

 protected:
  void dragEnterEvent(QDragEnterEvent* event) override;
  void dropEvent(QDropEvent* event) override;
  void changeEvent(QEvent* event) override;
  void closeEvent(QCloseEvent* event) override;

 private:
  /// Every page, its dock placed from the table of pages, and the parts that act on them.
  void createPages();
  /// The menu bar from the table of what pages and parts offer, and the tool bars.
  void createMenus();
  /// The one place that connects the pages and parts to the session and the window.
  void wire();
  /// A model was loaded (in `ms`): its page, title and entries, and its graph drawn.
  void onShown(double ms);
  /// The model was closed: the welcome page.
  void onClosed();
  void showCurrentGraph();
  void setBusy(bool busy, const QString& what = {}) { m_activity->setBusy(busy, what); }
  /// A status-bar message, elided in the middle when long (a click on it shows all of it).
  void say(const QString& text, int ms = 0) { m_status->say(text, ms); }
  void updateStatus();
  void updateColors();

  ExplorerSession* m_session = nullptr;
  ModelLifecycle* m_models = nullptr;
  PlanController* m_plans = nullptr;
  ThemeChooser* m_themes;
  Activity* m_activity = nullptr;
  StatusLine* m_status = nullptr;
  QList<QAction*> m_modelActions;  ///< enabled only with a model open

  // The pages: the central stack's, then the docks'.
  QStackedWidget* m_stack;
  QLabel* m_welcome;
  GraphPage* m_graphPage;
  StepThroughMode* m_stepMode = nullptr;
  PropertiesPanel* m_properties;
  TeTextPanel* m_teText;
  ErrorPanel* m_error;
  NodesPage* m_nodes;
  KernelsPage* m_kernels;
  CodePanel* m_code = nullptr;
  ChartsPanel* m_charts = nullptr;
  ImportedProfilePanel* m_importedPanel = nullptr;
  TimelinePanel* m_timeline = nullptr;
  MemoryPanel* m_memory = nullptr;
  TransformsPanel* m_transforms = nullptr;
  ComparisonView* m_compare = nullptr;
  StrategiesPage* m_strategies = nullptr;

  // The parts that act on the session for the menus and tool bars.
  KernelRuns* m_runs = nullptr;
  PlanToolBar* m_planBar = nullptr;
  HeatColouring* m_heat = nullptr;
  EditActions* m_edits = nullptr;
  ExportActions* m_exports = nullptr;
  ProjectController* m_project = nullptr;
};

}  // namespace souffle::views
