/// \file What the graph's boxes are coloured by (View > Colour boxes by, the Plan tool bar's
/// box, --colour), the measured times the heat map reads (an imported profile, else a profile
/// run; a timeline's stage times), and importing a profile, which colours by measured time.
#pragma once

#include <QList>
#include <QObject>
#include <QString>

#include "views/heat_map.h"

class QAction;
class QMenu;

namespace souffle::views {

class ExplorerSession;
class GraphPage;
class ImportedProfilePanel;
class KernelRuns;
class PlanToolBar;
class TimelinePanel;

class HeatColouring : public QObject {
  Q_OBJECT
 public:
  HeatColouring(ExplorerSession* session, GraphPage* graph, KernelRuns* runs,
                TimelinePanel* timeline, ImportedProfilePanel* imported, QObject* parent);
  /// The Plan tool bar's colour box, which follows the metric (made after the View menu).
  void setToolBar(PlanToolBar* bar) { m_bar = bar; }

  HeatMetric metric() const { return m_metric; }
  /// Colours the graph's boxes by op type (None) or as a heat map of `metric`; the menu and the
  /// tool bar's box follow.
  void setMetric(HeatMetric metric);
  /// Adds the Colour boxes by menu (Alt+Shift+0..) to `menu`.
  void addMenu(QMenu* menu);
  /// The measured times of the plan on screen: an imported profile, else a profile run; the
  /// timeline's stage and wait times.
  MeasuredTimes measuredTimes() const;
  /// Reads a timing file (asked for in `dir` when `path` is empty), maps it onto the plan and
  /// colours by measured time; false (the reason in the problems panel) when it cannot be read.
  bool importProfile(const QString& path, const QString& dir);
  /// Kernels menu entry: Import a profile… (Ctrl+I), asked for beside the model.
  QAction* importAction();

 private:
  ExplorerSession* m_session;
  GraphPage* m_graph;
  PlanToolBar* m_bar = nullptr;
  KernelRuns* m_runs;
  TimelinePanel* m_timeline;
  ImportedProfilePanel* m_imported;
  HeatMetric m_metric = HeatMetric::None;
  QList<QAction*> m_actions;
};

}  // namespace souffle::views
