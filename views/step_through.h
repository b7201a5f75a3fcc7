/// \file The step-through teaching mode: walks the pipeline (import … emit) one step at a time,
/// with the text before and after each step and one sentence on what the step decided.
#pragma once

#include <QFutureWatcher>
#include <QStringList>
#include <QWidget>
#include <vector>

#include "core/session/pipeline_steps.h"

class QAction;
class QLabel;
class QListWidget;
class QPlainTextEdit;
class QPushButton;

namespace souffle::views {

class StepThroughPanel : public QWidget {
  Q_OBJECT
 public:
  explicit StepThroughPanel(QWidget* parent = nullptr);
  ~StepThroughPanel() override;

  /// Runs the pipeline on `modelPath` step by step, off the GUI thread (a run in progress
  /// becomes stale). `gpu` names a built-in GPU; the precision and decisions are the plan's, so
  /// that the steps show the kernels compile builds.
  void start(const QString& modelPath, const QString& strategy, const QString& gpu,
             const QString& precision = QStringLiteral("fp32"),
             const plan::Decisions& decisions = {});
  /// The run key of start()'s arguments (what runKey() holds after such a start).
  static QString keyOf(const QString& modelPath, const QString& strategy, const QString& gpu,
                       const QString& precision, const plan::Decisions& decisions);
  /// Shows the given steps (what a run delivers), at the first step.
  void setSteps(std::vector<PipelineStep> steps);
  void clear();
  bool isBusy() const { return m_busy; }
  /// What start() last ran for (empty before the first run).
  QString runKey() const { return m_key; }

  int stepCount() const { return static_cast<int>(m_steps.size()); }
  int currentStep() const { return m_current; }
  const PipelineStep* step(int i) const;
  QString sentence() const;
  QString beforeText() const;
  QString afterText() const;

  QAction* previousAction() const { return m_prevAction; }
  QAction* nextAction() const { return m_nextAction; }

 public slots:
  void setCurrentStep(int index);
  void next() { setCurrentStep(m_current + 1); }
  void previous() { setCurrentStep(m_current - 1); }

 signals:
  /// A step is on screen; `nodes` are the ONNX nodes it changed or decided about.
  void stepShown(int index, const QStringList& nodes);
  void ready();
  void failed(const QString& reason);

 private:
  struct Outcome {
    std::vector<PipelineStep> steps;
    QString error;
  };
  void updateButtons();

  QFutureWatcher<Outcome>* m_watcher;
  quint64 m_generation = 0;
  bool m_busy = false;
  QString m_key;
  std::vector<PipelineStep> m_steps;
  int m_current = -1;

  QListWidget* m_list;
  QLabel* m_title;
  QLabel* m_sentence;
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
