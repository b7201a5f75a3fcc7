#include "views/main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileInfo>
#include <QLabel>
#include <QMenu>
#include <QMimeData>
#include <QSettings>
#include <QStackedWidget>
#include <QTableView>
#include <QToolBar>
#include <QUndoView>

#include "views/charts_panel.h"
#include "views/code_panel.h"
#include "views/comparison_view.h"
#include "views/graph_page.h"
#include "views/graph_view.h"
#include "views/memory_panel.h"
#include "views/menu_builder.h"
#include "views/page_docks.h"
#include "views/panels.h"
#include "views/project_controller.h"
#include "views/selection_sync.h"
#include "views/step_through.h"
#include "views/timeline_panel.h"
#include "views/transforms_panel.h"
#include "views/window_menus.h"

namespace souffle::views {

namespace {

bool isModelFile(const QUrl& url) {
  return url.isLocalFile() &&
         (url.toLocalFile().endsWith(QLatin1String(".onnx"), Qt::CaseInsensitive) ||
          url.toLocalFile().endsWith(QLatin1String(".souffle"), Qt::CaseInsensitive));
}

}  // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent),
      m_session(new ExplorerSession(this)),
      m_models(new ModelLifecycle(m_session, this)),
      m_plans(new PlanController(m_session, this)),
      m_themes(new ThemeChooser(this)) {
  setWindowTitle(tr("Souffle Explorer"));
  setAcceptDrops(true);
  setDockNestingEnabled(true);
  resize(1600, 1000);
  createPages();
  createMenus();
  updateColors();
  wire();
  beginSession(QString(), true);
  updateStatus();
}

MainWindow::~MainWindow() = default;

QDockWidget* MainWindow::memoryDock() const {
  return dockOf(m_memory);
}
QDockWidget* MainWindow::timelineDock() const {
  return dockOf(m_timeline);
}
bool MainWindow::isErrorShown() const {
  return dockOf(m_error)->isVisible();
}

void MainWindow::wire() {
  // Loading and planning.
  m_models->attach({m_project, m_plans, m_runs, m_kernels, m_importedPanel, m_stepMode, m_error,
                    m_graphPage, this});
  connect(m_models, &ModelLifecycle::busyChanged, this, &MainWindow::setBusy);
  connect(m_models, &ModelLifecycle::shown, this, &MainWindow::onShown);
  connect(m_models, &ModelLifecycle::closed, this, &MainWindow::onClosed);
  connect(m_models, &ModelLifecycle::modelLoaded, this, &MainWindow::modelLoaded);
  connect(m_models, &ModelLifecycle::loadFailed, this, &MainWindow::loadFailed);
  m_plans->attach({m_planBar, m_kernels, m_runs, m_charts, m_graphPage, m_strategies, m_compare,
                   m_stepMode, m_project, [this] { return m_models->lastPath(); }});
  connect(m_plans, &PlanController::busyChanged, this, &MainWindow::setBusy);
  connect(m_plans, &PlanController::statusChanged, this, &MainWindow::updateStatus);
  connect(m_plans, &PlanController::planned, this, &MainWindow::planned);
  connect(m_plans, &PlanController::planFailed, this, &MainWindow::planFailed);
  connect(m_planBar, &PlanToolBar::heatMetricChosen, this, &MainWindow::setHeatMetric);
  connect(m_themes, &ThemeChooser::changed, this, &MainWindow::updateColors);
  connect(m_graphPage, &GraphPage::teLevelChanged, this, [this] {
    if (m_session->model()) {
      setBusy(true, tr("Laying out the graph…"));
      showCurrentGraph();
    }
    updateStatus();
  });

  connect(m_timeline, &TimelinePanel::busyChanged, this, &MainWindow::setBusy);
  connect(m_error, &ErrorPanel::retryRequested, this, &MainWindow::reload);

  // Selections: graph, nodes, kernels, code and charts follow one another through the session.
  new SelectionSync(m_session, m_graphPage, m_nodes, m_kernels, m_properties, m_teText, this);
  connect(graphPanel(), &GraphPanel::drawn, this, [this](bool final) {
    m_status->setLayoutInfo(graphPanel()->layoutInfo());
    m_graphPage->applyPlan();
    if (final) setBusy(false);
    emit graphDrawn(final);
  });
  // The pages follow the session (Properties before the graph page: it shows the selected box
  // with the new plan before a collapsed graph is redrawn; the graph page before the others: a
  // timeline span selects its nodes before the code shows its lines).
  const auto attach = [this](auto*... pages) { (pages->attach(m_session), ...); };
  attach(m_nodes, m_teText, m_properties, m_transforms, m_graphPage, m_charts, m_kernels, m_code,
         m_memory, m_importedPanel, m_timeline, m_error);
  connect(m_session, &ExplorerSession::message, m_status, &StatusLine::say);

  // Compile, profile and export: the activity and progress they report, their outcomes.
  connect(m_runs, &KernelRuns::busyChanged, this, &MainWindow::setBusy);
  connect(m_runs, &KernelRuns::progress, m_status, &StatusLine::setProgress);
  connect(m_runs, &KernelRuns::compiled, this, &MainWindow::compiled);
  connect(m_exports, &ExportActions::bundleExported, this, &MainWindow::bundleExported);
  connect(m_exports, &ExportActions::reportExported, this, &MainWindow::reportExported);
}

void MainWindow::createPages() {
  // The centre: the welcome page, the graph and (StepThroughMode's) the step-through.
  m_stack = new QStackedWidget(this);
  m_welcome = new QLabel(m_stack);
  m_welcome->setAlignment(Qt::AlignCenter);
  m_welcome->setText(
      tr("<h2>Souffle Explorer</h2><p>Open an ONNX model with <b>Ctrl+O</b>, drop a file here, "
         "or pick one from <i>File › Open Recent</i>.</p>"));
  m_graphPage = new GraphPage(m_stack);
  m_graphPage->setMeasuredTimes(
      [this] { return m_heat ? m_heat->measuredTimes() : MeasuredTimes{}; });
  m_stack->addWidget(m_welcome);
  m_stack->addWidget(m_graphPage);
  setCentralWidget(m_stack);

  DecisionEditor* editor = m_session->editor();
  m_properties = new PropertiesPanel(this);
  m_nodes = new NodesPage(this);
  m_teText = new TeTextPanel(this);
  m_kernels = new KernelsPage(this);
  m_error = new ErrorPanel(this);
  m_transforms = new TransformsPanel(editor, this);
  auto* history = new QUndoView(editor->undoStack(), this);
  history->setEmptyLabel(tr("<plan of the strategy>"));
  m_compare = new ComparisonView(this);
  m_strategies = new StrategiesPage(this);
  m_code = new CodePanel(this);
  m_charts = new ChartsPanel(this);
  m_importedPanel = new ImportedProfilePanel(this);
  m_timeline = new TimelinePanel(this);
  m_memory = new MemoryPanel(this);

  // Where each page goes: its area, its toggle's shortcut, the dock it is tabbed with (or split
  // from) and the one in front afterwards, in the order they are placed.
  using P = PageDock;
  const Qt::DockWidgetArea left = Qt::LeftDockWidgetArea, right = Qt::RightDockWidgetArea,
                           bottom = Qt::BottomDockWidgetArea;
  placePages(this, {{m_properties, "propertiesDock", tr("Properties"), right, "Alt+2"},
                    {m_nodes, "nodesDock", tr("Nodes"), left, "Alt+1"},
                    {m_teText, "teDock", tr("TE program"), bottom, "Alt+3"},
                    {m_kernels, "kernelsDock", tr("Kernels"), bottom, "Alt+4"},
                    {m_error, "errorDock", tr("Problems"), bottom, "Alt+5", P::Alone, nullptr,
                     nullptr, true}});
  // The sizes of the first docks, and the kernel table beside the TE text under the graph.
  resizeDocks({dockOf(m_nodes), dockOf(m_properties)}, {430, 440}, Qt::Horizontal);
  splitDockWidget(dockOf(m_teText), dockOf(m_kernels), Qt::Horizontal);
  resizeDocks({dockOf(m_teText), dockOf(m_kernels)}, {560, 640}, Qt::Horizontal);
  resizeDocks({dockOf(m_teText)}, {250}, Qt::Vertical);
  placePages(
      this,
      {
          {m_transforms, "transformsDock", tr("Transformations"), right, nullptr, P::Tabbed,
           m_properties, m_properties},
          {history, "historyDock", tr("Edit history"), left, nullptr, P::Tabbed, m_nodes, m_nodes},
          {m_compare, "compareDock", tr("Compare plans"), bottom, nullptr, P::Tabbed, m_kernels,
           m_kernels},
          {m_strategies, "strategiesDock", tr("Strategies"), bottom, "Ctrl+Alt+S", P::Tabbed,
           m_kernels, m_kernels},
          {m_code, "codeDock", tr("Code"), bottom, "Alt+C", P::Tabbed, m_teText, m_teText},
          {m_charts, "chartsDock", tr("Charts"), right, "Alt+G", P::Below, m_properties},
          {m_importedPanel, "importedProfileDock", tr("Imported profile"), bottom, nullptr,
           P::Tabbed, m_kernels, m_kernels, true},
          {m_timeline, "timelineDock", tr("Timeline"), bottom, "Alt+T", P::Tabbed, m_code, m_teText,
           true},
          {m_memory, "memoryDock", tr("Memory (emulator)"), bottom, "Alt+M", P::Tabbed, m_code,
           m_teText, true},
      });
  dockOf(m_strategies)->toggleViewAction()->setText(tr("Strategies side by side"));
  dockOf(m_memory)->toggleViewAction()->setToolTip(
      tr("What the selected kernel's stage reads and writes, recorded on the CPU emulator"));

  // The parts that act on the pages for the menus and tool bars.
  m_runs = new KernelRuns(this);
  m_runs->setSession(m_session);
  m_planBar = new PlanToolBar(this);
  m_heat = new HeatColouring(m_session, m_graphPage, m_runs, m_timeline, m_importedPanel, this);
  m_heat->setToolBar(m_planBar);
  m_edits = new EditActions(
      m_session, editor, m_kernels, m_graphPage, m_transforms, [this] { return isPlanning(); },
      this);
  m_exports = new ExportActions(m_session, editor, m_runs, this);
  m_project = new ProjectController(
      {this, m_session, m_models, m_plans, m_planBar, m_graphPage, m_timeline});
  // The step-through teaching mode: a page of the central stack (F6).
  m_stepMode = new StepThroughMode(
      this, m_stack, m_session,
      [this] { return m_session->model() ? static_cast<QWidget*>(m_graphPage) : m_welcome; },
      [this] { m_plans->refreshExplorerViews(); });
  m_status = new StatusLine(statusBar());
  m_activity = new Activity(m_status, m_models, m_plans, m_runs, m_timeline, this);
  setBusy(false);
}

void MainWindow::createMenus() {
  // What each page and part offers, menu by menu in the order of their entries (a fill that
  // returns entries returns those that need a model open).
  using M = MenuOffer;
  const M::Spacing apart = M::Separated;
  const auto added = [](QMenu* menu, const QList<QAction*>& actions) {
    menu->addActions(actions);
    return actions;
  };
  QWidget* history = findChild<QDockWidget*>(QStringLiteral("historyDock"))->widget();
  QAction* kernelsCsv = addCsvExport(m_kernels->table(), tr("kernels"));
  kernelsCsv->setText(tr("&Kernel table as CSV…"));
  addCsvExport(m_compare->table(), tr("comparison"));
  m_modelActions = buildMenuBar(
      this,
      {
          {M::File, [this](QMenu* m) { m_models->addOpenActions(m); }},
          {M::File, [this](QMenu* m) { return m_project->addActions(m); }, apart},
          {M::File,
           [this, kernelsCsv](QMenu* m) {
             QMenu* exports = m->addMenu(tr("&Export"));
             const QList<QAction*> needModel = m_exports->addTo(exports);
             exports->addAction(kernelsCsv);
             return needModel;
           }},
          {M::File, [this](QMenu* m) { return QList<QAction*>{m_models->addCloseAction(m)}; }},
          {M::File, [=, this](QMenu* m) { return added(m, m_graphPage->exportActions()); }, apart},
          {M::File, [this](QMenu* m) { m->addAction(m_activity->cancelAction()); }, apart},
          {M::File,
           [this](QMenu* m) {
             m->addAction(tr("&Quit"), this, &QWidget::close)->setShortcut(QKeySequence::Quit);
           },
           apart},
          {M::Edit, [this](QMenu* m) { return m_edits->fillMenu(m); }},
          {M::View,
           [=, this](QMenu* m) {
             return added(m, m_graphPage->findActions() << m_teText->findAction());
           }},
          {M::View,
           [=, this](QMenu* m) {
             const QList<QAction*> needModel =
                 added(m, m_graphPage->zoomActions() << m_graphPage->teLevelAction());
             m->addAction(m_graphPage->minimapAction());
             m_heat->addMenu(m);
             return needModel;
           },
           apart},
          {M::View,
           [=, this](QMenu* m) {
             addDockToggles(m->addMenu(tr("&Panels")),
                            {m_nodes, m_properties, m_teText, m_kernels, m_error});
             m_themes->addMenu(m);
             addDockToggles(m, {m_transforms, m_compare, history});
           },
           apart},
          {M::View, [=, this](QMenu* m) { return added(m, m_graphPage->clusterActions()).mid(1); },
           apart},
          {M::View,
           [this](QMenu* m) {
             m->addActions({m_stepMode->action(), stepThrough()->previousAction(),
                            stepThrough()->nextAction()});
             addDockToggles(m, {m_strategies});
           },
           apart},
          {M::Plan, [this](QMenu* m) { m_planBar->fillMenu(m); }},
          {M::Plan, [this](QMenu* m) { addDockToggles(m, {m_kernels}); }, apart},
          {M::Kernels,
           [=, this](QMenu* m) {
             return m_runs->addActions(m, m_planBar) << added(m, {m_heat->importAction()});
           }},
          {M::Kernels,
           [this](QMenu* m) {
             addDockToggles(m, {m_code, m_importedPanel, m_charts});
             const QList<QAction*> timeline = m_timeline->menuActions();
             m->addActions(timeline);
             addDockToggles(m, {m_timeline, m_memory});
             return timeline.mid(0, 1);
           },
           apart},
          {M::Help, [this](QMenu* m) { fillHelpMenu(this, m); }},
      });
  for (QAction* a : std::as_const(m_modelActions)) a->setEnabled(false);

  addToolBar(m_planBar);
  QToolBar* bar = addToolBar(tr("Edit"));
  bar->setObjectName(QStringLiteral("editToolBar"));
  bar->setMovable(false);
  bar->setToolButtonStyle(Qt::ToolButtonTextOnly);
  m_edits->fillToolBar(bar);
  const QString offReason = m_runs->gpuOffReason();
  m_charts->setMeasuredNote(offReason.isEmpty() ? tr("not profiled yet") : offReason);
  if (!offReason.isEmpty()) say(tr("Profiling on a GPU is off: %1").arg(offReason), 8000);
}

void MainWindow::onClosed() {
  m_stack->setCurrentWidget(m_welcome);
  for (QAction* a : std::as_const(m_modelActions)) a->setEnabled(false);
  setWindowTitle(tr("Souffle Explorer"));
  setBusy(false);
  updateStatus();
}

void MainWindow::onShown(double ms) {
  m_stack->setCurrentWidget(isStepThroughShown() ? static_cast<QWidget*>(stepThrough())
                                                 : m_graphPage);
  for (QAction* a : std::as_const(m_modelActions)) a->setEnabled(true);
  const QString name =
      QFileInfo(QString::fromStdString(m_session->model()->model->path)).fileName();
  setWindowTitle(tr("%1 — Souffle Explorer").arg(name));
  m_status->setLoadTime(ms);
  setBusy(true, tr("Laying out the graph…"));
  updateStatus();
  showCurrentGraph();
}

void MainWindow::showCurrentGraph() {
  if (!m_session->model()) return;
  m_properties->showBox(nullptr, -1);
  m_graphPage->showGraph(m_session->model());
}

void MainWindow::updateStatus() {
  m_status->showModel(m_session->model() ? m_session->model()->model.get() : nullptr, isTeLevel());
  if (m_session->model())
    m_status->showPlan(m_session->plan().get(), isPlanning(), strategy(), gpu());
}

void MainWindow::updateColors() {
  graphPanel()->setColors(GraphColors::from(qApp->palette()));
  if (m_stepMode) stepThrough()->setColors(GraphColors::from(qApp->palette()));
  if (m_code) m_code->setDark(isDark(qApp->palette()));
  if (m_charts) m_charts->setDark(isDark(qApp->palette()));
  if (m_timeline) m_timeline->setDark(isDark(qApp->palette()));
}

void MainWindow::changeEvent(QEvent* event) {
  // The system switched between light and dark: follow it unless the user chose a theme.
  if (event->type() == QEvent::PaletteChange || event->type() == QEvent::ApplicationPaletteChange)
    updateColors();
  QMainWindow::changeEvent(event);
}

void MainWindow::dragEnterEvent(QDragEnterEvent* event) {
  const QList<QUrl> urls = event->mimeData()->urls();
  if (!urls.isEmpty() && isModelFile(urls.front())) event->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* event) {
  const QList<QUrl> urls = event->mimeData()->urls();
  if (urls.isEmpty() || !isModelFile(urls.front())) return;
  event->acceptProposedAction();
  openFile(urls.front().toLocalFile());
}

void MainWindow::restoreSettings() {
  QSettings s;
  if (s.contains(QStringLiteral("geometry"))) restoreGeometry(s.value("geometry").toByteArray());
  if (s.contains(QStringLiteral("windowState"))) restoreState(s.value("windowState").toByteArray());
  m_themes->restore(s);
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (!m_project->closing()) {
    event->ignore();
    return;
  }
  QSettings s;
  s.setValue(QStringLiteral("geometry"), saveGeometry());
  s.setValue(QStringLiteral("windowState"), saveState());
  m_themes->save(s);
  QMainWindow::closeEvent(event);
}

}  // namespace souffle::views
