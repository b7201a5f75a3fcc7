/// \file What an edit would do before it is applied: hovering merge, split, pin, an order of a
/// stage boundary, or force/forbid of a transformation plans the selection under the edit off
/// the GUI thread and shows the change in estimated time (a cost-model estimate), in kernels and
/// in grid barriers, or the planner's reason for refusing it, in the action's tooltip and in a
/// line of the menu it sits in. Results are kept per (plan on screen, decisions after the edit).
#pragma once

#include <QFutureWatcher>
#include <QHash>
#include <QList>
#include <QObject>
#include <QPointer>
#include <QString>
#include <QWidgetAction>
#include <functional>
#include <memory>

#include "core/plan/decisions.h"
#include "views/plan_runner.h"

class QAbstractButton;
class QAction;

namespace souffle::views {

class DecisionEditor;
struct EditRequest;

/// An edit as the preview plans it: the decisions it would leave, its name, or (no decisions)
/// what to select first.
struct EditProposal {
  plan::Decisions after;
  QString text;
  QString hint;  ///< non-empty: the selection does not make an edit (nothing is planned)
};

/// What planning an edit gave, against the plan on screen.
struct EditPreviewResult {
  enum class State { None, Hint, Busy, Pending, Ready, Refused, Unchanged, Failed };
  State state = State::None;
  QString edit;    ///< the edit's name
  QString reason;  ///< Hint, Refused, Failed: why
  double beforeUs = 0, afterUs = 0;
  int beforeKernels = 0, afterKernels = 0;
  int beforeBarriers = 0, afterBarriers = 0;  ///< grid barriers of the whole plan
  double ms = 0;                              ///< how long planning it took (Ready, Refused)

  double deltaUs() const { return afterUs - beforeUs; }
  int deltaKernels() const { return afterKernels - beforeKernels; }
  int deltaBarriers() const { return afterBarriers - beforeBarriers; }
  /// One or two lines for a tooltip or the menu's preview line.
  QString text() const;
};

class EditPreview : public QObject {
  Q_OBJECT
 public:
  /// `plan` gives the plan on screen (null: none), `busy` whether another plan is in flight.
  EditPreview(DecisionEditor* editor, std::function<PlanDataPtr()> plan, std::function<bool()> busy,
              QObject* parent = nullptr);
  ~EditPreview() override;

  /// The proposal an EditRequest makes with the editor's current decisions.
  EditProposal proposal(const EditRequest& request) const;

  /// Hovering `action` (in a menu or on a tool bar) previews the proposal `make` returns; the
  /// action's tooltip gets the preview (its own tooltip kept above it).
  void watch(QAction* action, std::function<EditProposal()> make);
  /// The same for a push button (entering it).
  void watch(QAbstractButton* button, std::function<EditProposal()> make);

  /// Previews `p` now: the kept result, or Pending while it is planned (updated() follows).
  EditPreviewResult preview(const EditProposal& p);
  /// The last previewed edit's state.
  const EditPreviewResult& current() const { return m_current; }
  /// Plans made for previews (not found kept).
  int planCount() const { return m_planCount; }

  /// A line for a menu showing the hovered edit's preview (one widget per menu it is in).
  QWidgetAction* menuLine() const { return m_line; }

 protected:
  bool eventFilter(QObject* watched, QEvent* event) override;

 signals:
  /// The hovered edit's preview changed (planned, refused, or a new one hovered).
  void updated(const souffle::views::EditPreviewResult& result);

 private:
  struct Timed {
    PlanOutcome outcome;
    double ms = 0;
  };
  struct Job {
    QString key;
    EditProposal proposal;
    plan::Decisions base;  ///< the decisions the plan on screen was made under
    PlanDataPtr plan;
  };
  void hovered(QObject* source, const EditProposal& p);
  void start(Job job);
  void finished();
  EditPreviewResult resultOf(const Job& job, const Timed& timed) const;
  void setCurrent(const EditPreviewResult& r, const QString& key);
  static QString keyOf(const plan::Decisions& d);

  DecisionEditor* m_editor;
  std::function<PlanDataPtr()> m_planOf;
  std::function<bool()> m_busy;
  const PlanData* m_cachePlan = nullptr;
  std::weak_ptr<const PlanData> m_cacheOwner;
  QHash<QString, EditPreviewResult> m_cache;
  QFutureWatcher<Timed>* m_watcher;
  std::shared_ptr<PlanProgress> m_progress;
  std::unique_ptr<Job> m_running, m_pending;
  EditPreviewResult m_current;
  QString m_currentKey;
  QPointer<QObject> m_source;  ///< the action or button hovered last
  QHash<QObject*, std::function<EditProposal()>> m_buttons;
  QWidgetAction* m_line;
  int m_planCount = 0;
};

}  // namespace souffle::views
