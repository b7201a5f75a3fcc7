/// \file The step-through teaching mode: walks the pipeline (import … emit) one step at a time
/// in a page of its own: the graph before and after each step side by side (what the step
/// removed ringed in the first, what it made in the second), the changes it made one per line
/// with their reasons and prices, and its texts before and after with the changed lines marked.
#pragma once

#include <QFutureWatcher>
#include <QStringList>
#include <QWidget>
#include <map>
#include <memory>
#include <vector>

#include "core/session/pipeline_steps.h"
#include "core/support/line_diff.h"
#include "views/model_inputs.h"

class QAction;
class QCheckBox;
class QLabel;
class QListWidget;
class QPlainTextEdit;
class QPushButton;

namespace souffle::views {

class GraphPanel;
struct GraphColors;
struct SceneGraph;

class StepThroughPanel : public QWidget {
  Q_OBJECT
 public:
  explicit StepThroughPanel(QWidget* parent = nullptr);
  ~StepThroughPanel() override;

  /// Runs the pipeline on `modelPath` step by step, off the GUI thread (a run in progress
  /// becomes stale). `gpu` names a built-in GPU; the precision and decisions are the plan's, so
  /// that the steps show the kernels compile builds.
  /// `inputs` are the model's input options as the session holds them (File > Model inputs:
  /// dims, bound inputs, shapes); the model is imported with them, as it was loaded.
  void start(const QString& modelPath, const QString& strategy, const QString& gpu,
             const QString& precision = QStringLiteral("fp32"),
             const plan::Decisions& decisions = {}, const ModelInputs& inputs = {});
  /// The run key of start()'s arguments (what runKey() holds after such a start).
  static QString keyOf(const QString& modelPath, const QString& strategy, const QString& gpu,
                       const QString& precision, const plan::Decisions& decisions,
                       const ModelInputs& inputs = {});
  /// Shows the given steps (what a run delivers, without graphs), at the first step shown.
  void setSteps(std::vector<PipelineStep> steps);
  void clear();
  bool isBusy() const { return m_busy; }
  /// What start() last ran for (empty before the first run).
  QString runKey() const { return m_key; }

  int stepCount() const { return static_cast<int>(m_steps.size()); }
  int currentStep() const { return m_current; }
  const PipelineStep* step(int i) const;
  /// The run's model, plan and programs (null before a run, or after setSteps).
  const PipelineWalk* walk() const { return m_walk.get(); }
  QString sentence() const;
  QString beforeText() const;
  QString afterText() const;

  /// Steps that change nothing are left out of the list unless shown.
  void setShowUnchanged(bool on);
  bool showsUnchanged() const { return m_showAll; }
  /// The steps the list shows, in order (indices into the steps).
  const std::vector<int>& listedSteps() const { return m_listed; }
  /// The current step's changes as listed, one line each.
  QStringList siteLines() const;
  /// Selects the current step's change `i` in both graphs (as a click on its line does).
  void selectSite(int i);
  /// Line numbers (0-based) the text panes mark: removed before, added after.
  std::vector<int> markedLines(bool after) const;
  /// Names of the boxes ringed in a graph: removed by the step (before), made by it (after).
  QStringList ringedBoxes(bool after) const;
  /// Names of the boxes selected in a graph.
  QStringList selectedBoxes(bool after) const;
  GraphPanel* graph(bool after) const { return after ? m_afterGraph : m_beforeGraph; }
  /// The graphs' colours (the window's theme).
  void setColors(const GraphColors& colors);
  /// Both graphs of the step on screen have their final layout (or the step has none).
  bool isDrawn() const;
  QListWidget* stepList() const { return m_list; }
  /// Puts the keyboard on the step list (arrow keys walk the steps).
  void focusSteps();

  QAction* previousAction() const { return m_prevAction; }
  QAction* nextAction() const { return m_nextAction; }

 public slots:
  void setCurrentStep(int index);
  /// The next / previous step the list shows.
  void next();
  void previous();

 signals:
  /// A step is on screen; `nodes` are the ONNX nodes it changed or decided about.
  void stepShown(int index, const QStringList& nodes);
  void ready();
  void failed(const QString& reason);

 private:
  struct Outcome {
    std::shared_ptr<const PipelineWalk> walk;
    std::map<StepGraph, std::shared_ptr<const SceneGraph>> graphs;
    std::vector<LineDiff> diffs;  ///< per step, before against after
    QString error;
  };
  void fillList();
  void updateButtons();
  void showGraphs();
  void applyMarks();
  void showDiff();
  int neighbour(int direction) const;

  QFutureWatcher<Outcome>* m_watcher;
  quint64 m_generation = 0;
  bool m_busy = false;
  QString m_key;
  std::vector<PipelineStep> m_steps;
  std::shared_ptr<const PipelineWalk> m_walk;
  std::map<StepGraph, std::shared_ptr<const SceneGraph>> m_graphs;
  std::vector<LineDiff> m_diffs;
  std::vector<int> m_listed;
  bool m_showAll = false;
  int m_current = -1;
  QStringList m_removed, m_added;  ///< box names of the current step

  QListWidget* m_list;
  QCheckBox* m_showAllBox;
  QLabel* m_title;
  QLabel* m_sentence;
  QLabel* m_beforeGraphLabel;
  QLabel* m_afterGraphLabel;
  GraphPanel* m_beforeGraph;
  GraphPanel* m_afterGraph;
  QLabel* m_sitesLabel;
  QListWidget* m_sites;
  QLabel* m_beforeLabel;
  QLabel* m_afterLabel;
  QPlainTextEdit* m_before;
  QPlainTextEdit* m_after;
  QPushButton* m_prev;
  QPushButton* m_next;
  QLabel* m_position;
  QAction* m_prevAction;
  QAction* m_nextAction;
};

}  // namespace souffle::views
