#include "views/main_window.h"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QLabel>
#include <QMenu>
#include <QMenuBar>
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

  m_stack = new QStackedWidget(this);
  m_welcome = new QLabel(m_stack);
  m_welcome->setAlignment(Qt::AlignCenter);
  m_welcome->setText(
      tr("<h2>Souffle Explorer</h2><p>Open an ONNX model with <b>Ctrl+O</b>, drop a file here, "
         "or pick one from <i>File › Open Recent</i>.</p>"));
  m_graphPage = new GraphPage(m_stack);
  m_graph = m_graphPage->panel();
  m_graphPage->setMeasuredTimes(
      [this] { return m_heat ? m_heat->measuredTimes() : MeasuredTimes{}; });
  m_stack->addWidget(m_welcome);
  m_stack->addWidget(m_graphPage);
  setCentralWidget(m_stack);

  createPages();
  createActions();
  createPlanToolBar();
  createStatusBar();
  createEditing();
  createExplorerViews();
  createKernelViews();
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
  m_models->attach({m_editor, m_project, m_plans, m_runs, m_kernels, m_importedPanel, m_stepMode,
                    m_error, m_graphPage, this});
  connect(m_models, &ModelLifecycle::busyChanged, this, &MainWindow::setBusy);
  connect(m_models, &ModelLifecycle::shown, this, &MainWindow::onShown);
  connect(m_models, &ModelLifecycle::closed, this, &MainWindow::onClosed);
  connect(m_models, &ModelLifecycle::modelLoaded, this, &MainWindow::modelLoaded);
  connect(m_models, &ModelLifecycle::loadFailed, this, &MainWindow::loadFailed);
  m_plans->attach({m_editor, m_planBar, m_kernels, m_runs, m_charts, m_graphPage, m_strategies,
                   m_compare, m_stepMode, m_project, [this] { return m_models->lastPath(); }});
  connect(m_plans, &PlanController::busyChanged, this, &MainWindow::setBusy);
  connect(m_plans, &PlanController::statusChanged, this, &MainWindow::updateStatus);
  connect(m_plans, &PlanController::planned, this, &MainWindow::planned);
  connect(m_plans, &PlanController::planFailed, this, &MainWindow::planFailed);
  connect(m_planBar, &PlanToolBar::heatMetricChosen, this, &MainWindow::setHeatMetric);
  connect(m_themes, &ThemeChooser::changed, this, &MainWindow::updateColors);

  connect(m_timeline, &TimelinePanel::busyChanged, this, &MainWindow::setBusy);

  // The problems panel.
  connect(m_error, &ErrorPanel::retryRequested, this, &MainWindow::reload);
  connect(m_error, &ErrorPanel::dismissed, dockOf(m_error), &QDockWidget::hide);

  // Selections: graph, nodes, kernels, code and charts follow one another through the session.
  new SelectionSync(m_session, m_graphPage, m_nodes, m_kernels, m_properties, m_teText, this);
  connect(m_graph, &GraphPanel::drawn, this, [this](bool final) {
    m_status->setLayoutInfo(m_graph->layoutInfo());
    m_graphPage->applyPlan();
    if (final) setBusy(false);
    emit graphDrawn(final);
  });
  // The pages follow the session (Properties before the graph page: it shows the selected box
  // with the new plan before a collapsed graph is redrawn; the graph page before the others: a
  // timeline span selects its nodes before the code shows its lines).
  m_nodes->attach(m_session);
  m_teText->attach(m_session);
  m_properties->attach(m_session);
  m_transforms->attach(m_session);
  m_graphPage->attach(m_session);
  m_charts->attach(m_session);
  m_kernels->attach(m_session);
  m_code->attach(m_session);
  m_memory->attach(m_session);
  m_importedPanel->attach(m_session);
  m_timeline->attach(m_session);
  connect(m_session, &ExplorerSession::message, this,
          [this](const QString& text, int ms) { say(text, ms); });
  connect(m_session, &ExplorerSession::problem, this, [this](const LoadError& e) {
    m_error->showError(e);
    raiseDockOf(m_error);
  });

  // Compile and profile: the activity and progress they report, the project keeps the runs.
  connect(m_runs, &KernelRuns::busyChanged, this,
          [this](bool busy, const QString& what) { setBusy(busy, what); });
  connect(m_runs, &KernelRuns::progress, m_status, &StatusLine::setProgress);
  connect(m_runs, &KernelRuns::compiled, this, &MainWindow::compiled);
  connect(m_session, &ExplorerSession::profiled, m_project, &ProjectController::touch);
}

void MainWindow::createPages() {
  m_editor = new DecisionEditor(this);
  m_project = new ProjectController(this);
  m_properties = new PropertiesPanel(this);
  m_nodes = new NodesPage(this);
  m_teText = new TeTextPanel(this);
  m_kernels = new KernelsPage(this);
  m_error = new ErrorPanel(this);
  m_transforms = new TransformsPanel(m_editor, this);
  auto* history = new QUndoView(m_editor->undoStack(), this);
  history->setEmptyLabel(tr("<plan of the strategy>"));
  m_compare = new ComparisonView(this);
  m_strategies = new StrategiesPage(this);
  m_code = new CodePanel(this);
  m_charts = new ChartsPanel(this);
  m_importedPanel = new ImportedProfilePanel(this);
  m_timeline = new TimelinePanel(this);
  m_memory = new MemoryPanel(this);

  // Where each page goes: its area, the dock it is tabbed with (or split from) and the one in
  // front afterwards, in the order they are placed.
  using P = PageDock;
  const Qt::DockWidgetArea left = Qt::LeftDockWidgetArea, right = Qt::RightDockWidgetArea,
                           bottom = Qt::BottomDockWidgetArea;
  placePages(this,
             {{m_properties, "propertiesDock", tr("Properties"), right},
              {m_nodes, "nodesDock", tr("Nodes"), left},
              {m_teText, "teDock", tr("TE program"), bottom},
              {m_kernels, "kernelsDock", tr("Kernels"), bottom},
              {m_error, "errorDock", tr("Problems"), bottom, P::Alone, nullptr, nullptr, true}});
  // The sizes of the first docks, and the kernel table beside the TE text under the graph.
  resizeDocks({dockOf(m_nodes), dockOf(m_properties)}, {430, 440}, Qt::Horizontal);
  splitDockWidget(dockOf(m_teText), dockOf(m_kernels), Qt::Horizontal);
  resizeDocks({dockOf(m_teText), dockOf(m_kernels)}, {560, 640}, Qt::Horizontal);
  resizeDocks({dockOf(m_teText)}, {250}, Qt::Vertical);
  placePages(
      this,
      {
          {m_transforms, "transformsDock", tr("Transformations"), right, P::Tabbed, m_properties,
           m_properties},
          {history, "historyDock", tr("Edit history"), left, P::Tabbed, m_nodes, m_nodes},
          {m_compare, "compareDock", tr("Compare plans"), bottom, P::Tabbed, m_kernels, m_kernels},
          {m_strategies, "strategiesDock", tr("Strategies"), bottom, P::Tabbed, m_kernels,
           m_kernels},
          {m_code, "codeDock", tr("Code"), bottom, P::Tabbed, m_teText, m_teText},
          {m_charts, "chartsDock", tr("Charts"), right, P::Below, m_properties},
          {m_importedPanel, "importedProfileDock", tr("Imported profile"), bottom, P::Tabbed,
           m_kernels, m_kernels, true},
          {m_timeline, "timelineDock", tr("Timeline"), bottom, P::Tabbed, m_code, m_teText, true},
          {m_memory, "memoryDock", tr("Memory (emulator)"), bottom, P::Tabbed, m_code, m_teText,
           true},
      });
  const std::pair<QWidget*, const char*> keys[] = {
      {m_code, "Alt+C"}, {m_charts, "Alt+G"}, {m_timeline, "Alt+T"}, {m_memory, "Alt+M"}};
  for (auto [page, key] : keys)
    dockOf(page)->toggleViewAction()->setShortcut(QKeySequence(tr(key)));
  dockOf(m_memory)->toggleViewAction()->setToolTip(
      tr("What the selected kernel's stage reads and writes, recorded on the CPU emulator"));

  m_runs = new KernelRuns(this);
  m_runs->setSession(m_session);
  m_compiler = m_runs->compiler();
  m_profiler = m_runs->profiler();
}

void MainWindow::createActions() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  m_closeAction = m_models->addFileActions(file);
  file->addSeparator();
  QAction* svg = file->addAction(tr("Export graph as &SVG…"), this, [this] { exportSvg(); });
  svg->setShortcut(QKeySequence(tr("Ctrl+E")));
  QAction* png = file->addAction(tr("Export graph as &PNG…"), this, [this] { exportPng(); });
  png->setShortcut(QKeySequence(tr("Ctrl+Shift+E")));
  file->addSeparator();
  m_cancelAction =
      file->addAction(tr("Cancel (loading, planning, compiling)"), this, &MainWindow::cancelLoad);
  m_cancelAction->setShortcut(QKeySequence(Qt::Key_Escape));
  m_cancelAction->setEnabled(false);
  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);
  m_modelActions << m_closeAction << svg << png;

  QMenu* view = menuBar()->addMenu(tr("&View"));
  m_viewMenu = view;
  const QList<QAction*> find = m_graphPage->findActions();
  view->addActions(find);
  QAction* findTe = view->addAction(tr("Find in &TE program…"), this, [this] {
    dockOf(m_teText)->show();
    dockOf(m_teText)->raise();
    m_teText->focusSearch();
  });
  findTe->setShortcut(QKeySequence(tr("Ctrl+Shift+F")));
  view->addSeparator();
  const QList<QAction*> zoom = m_graphPage->zoomActions();
  view->addActions(zoom);
  m_teLevelAction = view->addAction(tr("&TE-level graph"));
  m_teLevelAction->setCheckable(true);
  m_teLevelAction->setShortcut(QKeySequence(tr("Ctrl+T")));
  connect(m_teLevelAction, &QAction::toggled, this, &MainWindow::setTeLevel);
  view->addAction(m_graphPage->minimapAction());
  m_heat = new HeatColouring(m_session, m_graphPage, m_runs, m_timeline, m_importedPanel, this);
  m_heat->addMenu(view);
  m_modelActions << find << findTe << zoom << m_teLevelAction;
  view->addSeparator();
  QMenu* panels = view->addMenu(tr("&Panels"));
  int key = 1;
  QWidget* const panelPages[] = {m_nodes, m_properties, m_teText, m_kernels, m_error};
  for (QWidget* page : panelPages) {
    QDockWidget* d = dockOf(page);
    QAction* a = d->toggleViewAction();
    a->setShortcut(QKeySequence(QStringLiteral("Alt+%1").arg(key++)));
    panels->addAction(a);
  }
  m_themes->addMenu(view);

  addHelpMenu(this);

  for (QAction* a : std::as_const(m_modelActions)) a->setEnabled(false);
}

void MainWindow::createStatusBar() {
  m_status = new StatusLine(statusBar());
  m_activity = new Activity(m_status, m_cancelAction, m_models, m_plans, m_runs, m_timeline, this);
  setBusy(false);
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
  m_graphPage->showGraph(m_session->model(), m_teLevel);
}

void MainWindow::setTeLevel(bool on) {
  if (m_teLevelAction->isChecked() != on) {
    m_teLevelAction->setChecked(on);  // re-enters through toggled
    return;
  }
  if (m_teLevel == on) return;
  m_teLevel = on;
  if (m_session->model()) {
    setBusy(true, tr("Laying out the graph…"));
    showCurrentGraph();
  }
  updateStatus();
}

void MainWindow::createPlanToolBar() {
  m_planBar = new PlanToolBar(this);
  m_heat->setToolBar(m_planBar);
  addToolBar(m_planBar);
  auto* planMenu = new QMenu(tr("&Plan"), this);
  menuBar()->insertMenu(menuBar()->actions().back(), planMenu);  // before Help
  m_planBar->fillMenu(planMenu);
  planMenu->addSeparator();
  planMenu->addAction(dockOf(m_kernels)->toggleViewAction());
}

void MainWindow::updateStatus() {
  m_status->showModel(m_session->model() ? m_session->model()->model.get() : nullptr, m_teLevel);
  if (m_session->model())
    m_status->showPlan(m_session->plan().get(), isPlanning(), strategy(), gpu());
}

void MainWindow::updateColors() {
  m_graph->setColors(GraphColors::from(qApp->palette()));
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

void MainWindow::exportSvg(const QString& given) {
  QString path = given;
  if (path.isEmpty())
    path = QFileDialog::getSaveFileName(this, tr("Export graph as SVG"), QString(),
                                        tr("SVG images (*.svg)"));
  m_graphPage->writeSvg(path, windowTitle());
}

void MainWindow::exportPng(const QString& given) {
  QString path = given;
  if (path.isEmpty())
    path = QFileDialog::getSaveFileName(this, tr("Export graph as PNG"), QString(),
                                        tr("PNG images (*.png)"));
  if (path.isEmpty() || !m_graph->scene()->graph()) return;
  if (!m_graphPage->writePng(path)) say(tr("Could not write %1").arg(path), 8000);
}

// ---- Editing decisions, projects, comparison and plan export --------------------------------

void MainWindow::createEditing() {
  m_edits = new EditActions(
      m_session, m_editor, m_kernels, m_graphPage, m_transforms, [this] { return isPlanning(); },
      this);
  QMenu* edit = new QMenu(tr("&Edit"), menuBar());             // under the menu bar: listed in Help
  menuBar()->insertMenu(menuBar()->actions().value(1), edit);  // after File
  m_modelActions << m_edits->fillMenu(edit);

  // File: projects and the plan export.
  QMenu* file = menuBar()->actions().front()->menu();
  QAction* before = file->actions().value(4);  // after Open, Recent, Reload, Close model
  QAction* openProject = new QAction(tr("Open &Project…"), this);
  openProject->setShortcut(QKeySequence(tr("Ctrl+Shift+O")));
  connect(openProject, &QAction::triggered, m_project, &ProjectController::openDialog);
  QAction* saveProject = new QAction(tr("&Save Project"), this);
  saveProject->setShortcut(QKeySequence::Save);
  connect(saveProject, &QAction::triggered, m_project, [this] { m_project->save(); });
  QAction* saveAs = new QAction(tr("Save Project &As…"), this);
  saveAs->setShortcut(QKeySequence(tr("Ctrl+Shift+S")));
  connect(saveAs, &QAction::triggered, m_project, &ProjectController::saveAs);
  file->insertSeparator(before);
  file->insertActions(before, {openProject, saveProject, saveAs});
  auto* exportMenu = new QMenu(tr("&Export"), file);
  file->insertMenu(before, exportMenu);
  m_exports = new ExportActions(m_session, m_editor, m_runs, this);
  connect(m_exports, &ExportActions::bundleExported, this, &MainWindow::bundleExported);
  connect(m_exports, &ExportActions::reportExported, this, &MainWindow::reportExported);
  m_modelActions << saveProject << saveAs << m_exports->addTo(exportMenu);

  QToolBar* bar = addToolBar(tr("Edit"));
  bar->setObjectName(QStringLiteral("editToolBar"));
  bar->setMovable(false);
  bar->setToolButtonStyle(Qt::ToolButtonTextOnly);
  m_edits->fillToolBar(bar);
  QAction* kernelsCsv = addCsvExport(m_kernels->table(), tr("kernels"));
  exportMenu->addAction(kernelsCsv);
  kernelsCsv->setText(tr("&Kernel table as CSV…"));
  addCsvExport(m_compare->table(), tr("comparison"));
  auto* undoDock = findChild<QDockWidget*>(QStringLiteral("historyDock"))->toggleViewAction();
  for (QDockWidget* d : {dockOf(m_transforms), dockOf(m_compare)})
    m_viewMenu->addAction(d->toggleViewAction());
  m_viewMenu->addAction(undoDock);
}

// ---- Code, charts, compile and profile --------------------------------------------------------

void MainWindow::createKernelViews() {
  const QString offReason = m_runs->gpuOffReason();
  m_charts->setMeasuredNote(offReason.isEmpty() ? tr("not profiled yet") : offReason);
  auto* kernels = new QMenu(tr("&Kernels"), menuBar());
  menuBar()->insertMenu(menuBar()->actions().back(), kernels);  // before Help
  m_modelActions << m_runs->addActions(kernels, m_planBar);
  QAction* import = kernels->addAction(tr("&Import a profile…"), this, [this] { importProfile(); });
  import->setShortcut(QKeySequence(tr("Ctrl+I")));
  import->setStatusTip(
      tr("Measured times from another tool on the graph: a CSV of name and time, "
         "Nsight Compute's CSV export, or a PyTorch profiler trace"));
  m_modelActions << import;
  kernels->addSeparator();
  for (QWidget* page : std::initializer_list<QWidget*>{m_code, m_importedPanel, m_charts})
    kernels->addAction(dockOf(page)->toggleViewAction());
  const QList<QAction*> timeline = m_timeline->menuActions();
  kernels->addActions(timeline);
  m_modelActions << timeline.front();
  for (QWidget* page : std::initializer_list<QWidget*>{m_timeline, m_memory})
    kernels->addAction(dockOf(page)->toggleViewAction());
  if (!offReason.isEmpty()) say(tr("Profiling on a GPU is off: %1").arg(offReason), 8000);
}

void MainWindow::createExplorerViews() {
  // The step-through teaching mode: a page of the central stack (F6).
  m_stepMode = new StepThroughMode(
      this, m_stack, m_session,
      [this] { return m_session->model() ? static_cast<QWidget*>(m_graphPage) : m_welcome; },
      [this] { m_plans->refreshExplorerViews(); });

  QMenu* view = m_viewMenu;
  view->addSeparator();
  const QList<QAction*> clusters = m_graphPage->clusterActions();
  view->addActions(clusters);
  m_modelActions << clusters.mid(1);
  view->addSeparator();
  view->addAction(m_stepMode->action());
  view->addAction(stepThrough()->previousAction());
  view->addAction(stepThrough()->nextAction());
  QAction* strategies = dockOf(m_strategies)->toggleViewAction();
  strategies->setText(tr("Strategies side by side"));
  strategies->setShortcut(QKeySequence(tr("Ctrl+Alt+S")));
  view->addAction(strategies);
}

}  // namespace souffle::views
