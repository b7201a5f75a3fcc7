/// \file The window's status bar: the model, its figures, the plan, the load time and the
/// layout; a busy indicator with a Cancel button; messages elided in the middle when long (a
/// click on one shows all of it).
#pragma once

#include <QObject>
#include <QString>

class QLabel;
class QProgressBar;
class QStatusBar;
class QToolButton;

namespace souffle {
struct LoadedModel;
}

namespace souffle::views {

struct PlanData;

class StatusLine : public QObject {
  Q_OBJECT
 public:
  explicit StatusLine(QStatusBar* bar);

  /// Shows `text` for `ms` milliseconds (0: until the next message).
  void say(const QString& text, int ms = 0);
  /// The message, whole (it may be shown elided).
  QString message() const { return m_message; }
  void clearMessage();
  /// The model's file and level, its node and TE counts; null: "No model" and nothing else.
  void showModel(const LoadedModel* model, bool teLevel);
  /// The plan's strategy, GPU, precision, sync, kernels and estimate; "planning…" while
  /// `planning` (of `strategy` on `gpu`); nothing when there is no plan.
  void showPlan(const PlanData* plan, bool planning, const QString& strategy, const QString& gpu);
  void setLoadTime(double ms);
  void setLayoutInfo(const QString& text);
  /// The busy indicator and Cancel: shown or not; an indeterminate indicator unless
  /// `determinate` (setProgress counts then).
  void setActivity(bool busy, bool determinate, bool cancellable);
  void setProgress(int done, int total);

 signals:
  void cancelRequested();

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  QStatusBar* m_bar;
  QLabel* m_model;
  QLabel* m_nodes;
  QLabel* m_tes;
  QLabel* m_time;
  QLabel* m_plan;
  QLabel* m_layout;
  QProgressBar* m_progress;
  QToolButton* m_cancel;
  QString m_message;
};

}  // namespace souffle::views
