#include "views/heat_colouring.h"

#include <QAction>
#include <QActionGroup>
#include <QFileInfo>
#include <QMenu>

#include "views/explorer_session.h"
#include "views/graph_page.h"
#include "views/imported_profile.h"
#include "views/kernel_runs.h"
#include "views/plan_toolbar.h"
#include "views/timeline_panel.h"

namespace souffle::views {

HeatColouring::HeatColouring(ExplorerSession* session, GraphPage* graph, KernelRuns* runs,
                             TimelinePanel* timeline, ImportedProfilePanel* imported,
                             QObject* parent)
    : QObject(parent),
      m_session(session),
      m_graph(graph),
      m_runs(runs),
      m_timeline(timeline),
      m_imported(imported) {}

void HeatColouring::addMenu(QMenu* menu) {
  QMenu* colour = menu->addMenu(tr("&Colour boxes by"));
  auto* group = new QActionGroup(parent());
  int key = 0;
  for (HeatMetric m : heatMetrics()) {
    QAction* a = colour->addAction(heatMetricName(m));
    a->setCheckable(true);
    a->setChecked(m == HeatMetric::None);
    a->setData(static_cast<int>(m));
    a->setShortcut(QKeySequence(QStringLiteral("Alt+Shift+%1").arg(key++)));
    group->addAction(a);
    m_actions << a;
    connect(a, &QAction::triggered, this, [this, m] { setMetric(m); });
  }
}

void HeatColouring::setMetric(HeatMetric metric) {
  m_metric = metric;
  m_bar->setHeatMetric(metric);
  for (QAction* a : m_actions) a->setChecked(a->data().toInt() == static_cast<int>(metric));
  m_graph->setHeatMetric(metric);
}

bool HeatColouring::importProfile(const QString& given, const QString& dir) {
  // The panel and the kernel table follow the session's imported profile.
  if (!m_session->plan() || !m_imported->importFile(m_session, given, dir)) return false;
  raiseDockOf(m_imported);
  setMetric(HeatMetric::MeasuredTime);
  m_session->say(m_imported->summary().remove(QStringLiteral("<b>")).remove(QStringLiteral("</b>")),
                 15000);
  return true;
}

QAction* HeatColouring::importAction() {
  auto* import = new QAction(tr("&Import a profile…"), this);
  import->setShortcut(QKeySequence(tr("Ctrl+I")));
  import->setStatusTip(
      tr("Measured times from another tool on the graph: a CSV of name and time, "
         "Nsight Compute's CSV export, or a PyTorch profiler trace"));
  connect(import, &QAction::triggered, this,
          [this] { importProfile({}, QFileInfo(m_session->modelPath()).absolutePath()); });
  return import;
}

MeasuredTimes HeatColouring::measuredTimes() const {
  MeasuredTimes m;
  if (ExternalProfileDataPtr x = m_session->importedData(); x && x->plan == m_session->plan()) {
    m.nodeUs = x->nodeUs;
    m.partitionUs = x->partitionUs;
    m.source = x->source;
    m.gpu = true;
  } else if (ProfileDataPtr p = m_runs->profileData(); p && p->plan == m_session->plan()) {
    m.partitionUs = p->partitionUs;
    m.source = p->label();
    m.gpu = p->gpuTime();
  }
  if (TimelineDataPtr t = m_timeline->data(); t && t->plan == m_session->plan()) {
    m.stageUs = t->nodeStageUs;
    m.waitUs = t->nodeWaitUs;
    m.timelineSource = t->source;
  }
  return m;
}

}  // namespace souffle::views
