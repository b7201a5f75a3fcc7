#include "views/main_window.h"

#include <QAction>
#include <QActionGroup>
#include <QApplication>
#include <QCloseEvent>
#include <QComboBox>
#include <QDockWidget>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QFutureWatcher>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPainter>
#include <QProgressBar>
#include <QSaveFile>
#include <QSettings>
#include <QSortFilterProxyModel>
#include <QStackedWidget>
#include <QStatusBar>
#include <QStyleFactory>
#include <QSvgGenerator>
#include <QTableView>
#include <QToolBar>
#include <QToolButton>
#include <QToolTip>
#include <QUndoView>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrent>

#include <nlohmann/json.hpp>
#include "core/report/write.h"
#include "core/session/bundle.h"
#include "core/session/plan_json.h"
#include "core/session/profile.h"
#include "core/support/error.h"
#include "views/charts_panel.h"
#include "views/cluster_items.h"
#include "views/code_panel.h"
#include "views/comparison_view.h"
#include "views/edit_commands.h"
#include "views/graph_view.h"
#include "views/node_table_model.h"
#include "views/panels.h"
#include "views/partition_table_model.h"
#include "views/project_controller.h"
#include "views/step_through.h"
#include "views/strategy_table_model.h"
#include "views/table_model.h"
#include "views/theme.h"
#include "views/transforms_panel.h"

namespace souffle::views {

namespace {

constexpr int kMaxRecent = 10;
const char* kRecentKey = "recentFiles";

bool isModelFile(const QUrl& url) {
  return url.isLocalFile() &&
         (url.toLocalFile().endsWith(QLatin1String(".onnx"), Qt::CaseInsensitive) ||
          url.toLocalFile().endsWith(QLatin1String(".souffle"), Qt::CaseInsensitive));
}

}  // namespace

MainWindow::MainWindow(QWidget* parent)
    : QMainWindow(parent),
      m_loader(new ModelLoader(this)),
      m_planner(new PlanRunner(this)),
      m_systemPalette(qApp->palette()) {
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
  m_graph = new GraphPanel(m_stack);
  m_stack->addWidget(m_welcome);
  m_stack->addWidget(m_graph);
  setCentralWidget(m_stack);

  createDocks();
  createActions();
  createPlanToolBar();
  createStatusBar();
  createEditing();
  createExplorerViews();
  createKernelViews();
  updateColors();

  connect(m_loader, &ModelLoader::loaded, this, &MainWindow::onLoaded);
  connect(m_loader, &ModelLoader::failed, this, &MainWindow::onFailed);
  connect(m_loader, &ModelLoader::cancelled, this, [this](const QString& path) {
    setBusy(false);
    say(tr("Cancelled loading %1").arg(QFileInfo(path).fileName()), 5000);
  });
  connect(m_graph, &GraphPanel::boxSelected, this, &MainWindow::onBoxSelected);
  connect(m_planner, &PlanRunner::planned, this, &MainWindow::onPlanned);
  connect(m_planner, &PlanRunner::progress, this, [this](const QString& what) { say(what); });
  connect(m_planner, &PlanRunner::cancelled, this, [this] {
    if (m_editor->hasProposal()) m_editor->reject();
    if (m_plan) {
      // The selectors show the plan that stays on screen.
      const QSignalBlocker bs(m_strategyBox), bg(m_gpuBox), bp(m_precisionBox), by(m_syncBox);
      m_strategyBox->setCurrentText(m_plan->strategy);
      m_gpuBox->setCurrentText(m_plan->gpu);
      m_precisionBox->setCurrentText(QLatin1String(gpu::precision_name(m_plan->plan->precision)));
      m_syncBox->setCurrentText(QLatin1String(sync_mode_name(m_plan->plan->sync)));
    }
    setBusy(false);
    updateStatus();
    say(tr("Planning cancelled: the plan on screen stays"), 8000);
  });
  connect(m_planner, &PlanRunner::failed, this, [this](const QString& reason) {
    setBusy(false);
    LoadError e;
    e.file = m_lastPath;
    e.reason = tr("planning (%1 on %2) failed: %3").arg(strategy(), gpu(), reason);
    m_error->showError(e);
    m_errorDock->show();
    m_errorDock->raise();
    emit planFailed(reason);
  });
  connect(m_graph, &GraphPanel::drawn, this, [this](bool final) {
    m_statusLayout->setText(m_graph->layoutInfo());
    applyPlanToScene();
    if (final) setBusy(false);
    emit graphDrawn(final);
  });
  connect(m_error, &ErrorPanel::retryRequested, this, &MainWindow::reload);
  connect(m_error, &ErrorPanel::dismissed, m_errorDock, &QDockWidget::hide);
  updateStatus();
}

MainWindow::~MainWindow() = default;

void MainWindow::createDocks() {
  m_properties = new PropertiesPanel(this);
  m_propertiesDock = new QDockWidget(tr("Properties"), this);
  m_propertiesDock->setObjectName(QStringLiteral("propertiesDock"));
  m_propertiesDock->setWidget(m_properties);
  addDockWidget(Qt::RightDockWidgetArea, m_propertiesDock);

  auto* nodes = new QWidget(this);
  auto* nodesLayout = new QVBoxLayout(nodes);
  nodesLayout->setContentsMargins(0, 0, 0, 0);
  nodesLayout->setSpacing(0);
  auto* filter = new QLineEdit(nodes);
  filter->setPlaceholderText(tr("Filter nodes"));
  filter->setClearButtonEnabled(true);
  m_nodeModel = new NodeTableModel(this);
  m_nodeProxy = new QSortFilterProxyModel(this);
  m_nodeProxy->setSourceModel(m_nodeModel);
  m_nodeProxy->setSortRole(NodeTableModel::SortRole);
  m_nodeProxy->setFilterCaseSensitivity(Qt::CaseInsensitive);
  m_nodeProxy->setFilterKeyColumn(-1);
  m_nodeTable = new QTableView(nodes);
  m_nodeTable->setModel(m_nodeProxy);
  m_nodeTable->setSortingEnabled(true);
  m_nodeTable->sortByColumn(-1, Qt::AscendingOrder);
  m_nodeTable->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_nodeTable->setSelectionMode(QAbstractItemView::SingleSelection);
  m_nodeTable->verticalHeader()->hide();
  m_nodeTable->verticalHeader()->setDefaultSectionSize(m_nodeTable->fontMetrics().height() + 6);
  m_nodeTable->horizontalHeader()->setStretchLastSection(false);
  m_nodeTable->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
  m_nodeTable->setColumnWidth(NodeTableModel::NameColumn, 150);
  m_nodeTable->setColumnWidth(NodeTableModel::OpColumn, 110);
  m_nodeTable->setColumnWidth(NodeTableModel::OutputsColumn, 110);
  m_nodeTable->setColumnWidth(NodeTableModel::TeColumn, 40);
  m_nodeTable->setWordWrap(false);
  m_nodeTable->setTextElideMode(Qt::ElideMiddle);  // node names share long path prefixes
  m_nodeTable->setAlternatingRowColors(true);
  nodesLayout->addWidget(filter);
  nodesLayout->addWidget(m_nodeTable, 1);
  connect(filter, &QLineEdit::textChanged, m_nodeProxy,
          &QSortFilterProxyModel::setFilterFixedString);
  connect(m_nodeTable->selectionModel(), &QItemSelectionModel::selectionChanged, this,
          &MainWindow::onTableSelection);
  m_nodesDock = new QDockWidget(tr("Nodes"), this);
  m_nodesDock->setObjectName(QStringLiteral("nodesDock"));
  m_nodesDock->setWidget(nodes);
  addDockWidget(Qt::LeftDockWidgetArea, m_nodesDock);

  m_teText = new TeTextPanel(this);
  m_teDock = new QDockWidget(tr("TE program"), this);
  m_teDock->setObjectName(QStringLiteral("teDock"));
  m_teDock->setWidget(m_teText);
  addDockWidget(Qt::BottomDockWidgetArea, m_teDock);

  auto* parts = new QWidget(this);
  auto* partsLayout = new QVBoxLayout(parts);
  partsLayout->setContentsMargins(0, 0, 0, 0);
  m_partModel = new PartitionTableModel(this);
  m_partProxy = new QSortFilterProxyModel(this);
  m_partProxy->setSourceModel(m_partModel);
  m_partProxy->setSortRole(PartitionTableModel::SortRole);
  m_partTable = new QTableView(parts);
  m_partTable->setModel(m_partProxy);
  m_partTable->setSortingEnabled(true);
  m_partTable->sortByColumn(-1, Qt::AscendingOrder);
  m_partTable->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_partTable->setSelectionMode(QAbstractItemView::ExtendedSelection);  // several to merge
  m_partTable->verticalHeader()->hide();
  m_partTable->verticalHeader()->setDefaultSectionSize(m_partTable->fontMetrics().height() + 6);
  m_partTable->horizontalHeader()->setSectionResizeMode(QHeaderView::Interactive);
  m_partTable->horizontalHeader()->setStretchLastSection(true);
  const int digit = m_partTable->fontMetrics().horizontalAdvance(QLatin1Char('0'));
  const int widths[] = {9, 13, 6, 7, 6, 9, 10, 9, 7, 10, 6, 9, 7};
  for (int c = 0; c < PartitionTableModel::ColumnCount; ++c)
    m_partTable->setColumnWidth(c, widths[c] * digit + 12);
  m_partTable->setWordWrap(false);
  m_partTable->setAlternatingRowColors(true);
  partsLayout->addWidget(m_partTable);
  connect(m_partTable->selectionModel(), &QItemSelectionModel::selectionChanged, this,
          &MainWindow::onPartitionSelection);
  m_partDock = new QDockWidget(tr("Kernels"), this);
  m_partDock->setObjectName(QStringLiteral("kernelsDock"));
  m_partDock->setWidget(parts);
  addDockWidget(Qt::BottomDockWidgetArea, m_partDock);

  m_error = new ErrorPanel(this);
  m_errorDock = new QDockWidget(tr("Problems"), this);
  m_errorDock->setObjectName(QStringLiteral("errorDock"));
  m_errorDock->setWidget(m_error);
  addDockWidget(Qt::BottomDockWidgetArea, m_errorDock);
  m_errorDock->hide();

  resizeDocks({m_nodesDock, m_propertiesDock}, {430, 440}, Qt::Horizontal);
  // The kernel table sits beside the TE text under the graph.
  splitDockWidget(m_teDock, m_partDock, Qt::Horizontal);
  resizeDocks({m_teDock, m_partDock}, {560, 640}, Qt::Horizontal);
  resizeDocks({m_teDock}, {250}, Qt::Vertical);
}

void MainWindow::createActions() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* open = file->addAction(tr("&Open…"), this, &MainWindow::openDialog);
  open->setShortcut(QKeySequence::Open);
  m_recentMenu = file->addMenu(tr("Open &Recent"));
  rebuildRecentMenu();
  m_reloadAction = file->addAction(tr("&Reload"), this, &MainWindow::reload);
  m_reloadAction->setShortcuts({QKeySequence(Qt::Key_F5), QKeySequence(tr("Ctrl+R"))});
  m_closeAction = file->addAction(tr("&Close model"), this, &MainWindow::closeModel);
  m_closeAction->setShortcut(QKeySequence(tr("Ctrl+W")));
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
  QAction* find = view->addAction(tr("&Find node…"), m_graph, &GraphPanel::focusSearch);
  find->setShortcut(QKeySequence::Find);
  QAction* findNext = view->addAction(tr("Find &next"), m_graph, &GraphPanel::findNext);
  findNext->setShortcut(QKeySequence::FindNext);
  QAction* findPrev = view->addAction(tr("Find &previous"), m_graph, &GraphPanel::findPrevious);
  findPrev->setShortcut(QKeySequence::FindPrevious);
  QAction* findTe = view->addAction(tr("Find in &TE program…"), this, [this] {
    m_teDock->show();
    m_teDock->raise();
    m_teText->focusSearch();
  });
  findTe->setShortcut(QKeySequence(tr("Ctrl+Shift+F")));
  view->addSeparator();
  QAction* fit = view->addAction(tr("&Fit graph"), m_graph->view(), &GraphView::fit);
  fit->setShortcut(QKeySequence(Qt::Key_F));
  QAction* zin = view->addAction(tr("Zoom &in"), m_graph->view(), &GraphView::zoomIn);
  zin->setShortcuts({QKeySequence(tr("Ctrl+=")), QKeySequence(QKeySequence::ZoomIn)});
  QAction* zout = view->addAction(tr("Zoom &out"), m_graph->view(), &GraphView::zoomOut);
  zout->setShortcuts({QKeySequence(tr("Ctrl+-")), QKeySequence(QKeySequence::ZoomOut)});
  QAction* zreset = view->addAction(tr("&Actual size"), m_graph->view(), &GraphView::resetZoom);
  zreset->setShortcut(QKeySequence(tr("Ctrl+0")));
  m_teLevelAction = view->addAction(tr("&TE-level graph"));
  m_teLevelAction->setCheckable(true);
  m_teLevelAction->setShortcut(QKeySequence(tr("Ctrl+T")));
  connect(m_teLevelAction, &QAction::toggled, this, &MainWindow::setTeLevel);
  QAction* minimap = view->addAction(tr("&Minimap"));
  minimap->setCheckable(true);
  minimap->setChecked(true);
  minimap->setShortcut(QKeySequence(tr("Ctrl+M")));
  connect(minimap, &QAction::toggled, m_graph, &GraphPanel::setMinimapVisible);
  QMenu* colour = view->addMenu(tr("&Colour boxes by"));
  auto* colourGroup = new QActionGroup(this);
  int colourKey = 0;
  for (HeatMetric m : heatMetrics()) {
    QAction* a = colour->addAction(heatMetricName(m));
    a->setCheckable(true);
    a->setChecked(m == HeatMetric::None);
    a->setData(static_cast<int>(m));
    a->setShortcut(QKeySequence(QStringLiteral("Alt+Shift+%1").arg(colourKey++)));
    colourGroup->addAction(a);
    m_colorActions << a;
    connect(a, &QAction::triggered, this, [this, m] { setHeatMetric(m); });
  }
  m_modelActions << find << findNext << findPrev << findTe << fit << zin << zout << zreset
                 << m_teLevelAction;
  view->addSeparator();
  QMenu* panels = view->addMenu(tr("&Panels"));
  int key = 1;
  for (QDockWidget* d : {m_nodesDock, m_propertiesDock, m_teDock, m_partDock, m_errorDock}) {
    QAction* a = d->toggleViewAction();
    a->setShortcut(QKeySequence(QStringLiteral("Alt+%1").arg(key++)));
    panels->addAction(a);
  }
  QMenu* theme = view->addMenu(tr("T&heme"));
  auto* group = new QActionGroup(this);
  const std::pair<const char*, const char*> themes[] = {
      {"system", "Follow the &system"}, {"light", "&Light"}, {"dark", "&Dark"}};
  int themeKey = 1;
  for (auto [id, label] : themes) {
    QAction* a = theme->addAction(tr(label));
    a->setCheckable(true);
    a->setData(QString::fromLatin1(id));
    a->setChecked(m_theme == QLatin1String(id));
    a->setShortcut(QKeySequence(QStringLiteral("Ctrl+Alt+%1").arg(themeKey++)));
    group->addAction(a);
    connect(a, &QAction::triggered, this, [this, a] { setTheme(a->data().toString()); });
  }

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  QAction* keys = help->addAction(tr("&Keyboard shortcuts"), this, [this] {
    QString text = QStringLiteral("<table>");
    for (QMenu* menu : menuBar()->findChildren<QMenu*>()) {
      for (QAction* a : menu->actions()) {
        if (a->shortcut().isEmpty() || a->menu()) continue;
        text += QStringLiteral("<tr><td>%1</td><td><b>%2</b></td></tr>")
                    .arg(a->text().remove(QLatin1Char('&')),
                         a->shortcut().toString(QKeySequence::NativeText));
      }
    }
    QMessageBox::information(this, tr("Keyboard shortcuts"), text + QStringLiteral("</table>"));
  });
  keys->setShortcut(QKeySequence::HelpContents);
  help->addAction(tr("&About"), this, [this] {
    QMessageBox::about(this, tr("About Souffle Explorer"),
                       tr("<b>Souffle Explorer</b><p>Explores how an ONNX model becomes tensor "
                          "expressions and fused GPU kernels.</p>"));
  });
  for (QAction* a : std::as_const(m_modelActions)) a->setEnabled(false);
  m_reloadAction->setEnabled(false);
}

void MainWindow::createStatusBar() {
  m_statusModel = new QLabel(this);
  m_statusNodes = new QLabel(this);
  m_statusTes = new QLabel(this);
  m_statusTime = new QLabel(this);
  m_statusPlan = new QLabel(this);
  m_statusLayout = new QLabel(this);
  m_progress = new QProgressBar(this);
  m_progress->setRange(0, 0);  // the core pipeline reports no fractions: a busy indicator
  m_progress->setMaximumWidth(160);
  m_progress->setMaximumHeight(16);
  m_progress->setTextVisible(false);
  m_cancelButton = new QToolButton(this);
  m_cancelButton->setText(tr("Cancel"));
  m_cancelButton->setToolTip(tr("Cancel what runs: loading, planning, compiling (Esc)"));
  m_cancelButton->setAutoRaise(true);
  connect(m_cancelButton, &QToolButton::clicked, this, [this] {
    // Whatever runs: a compile, a profile, a load.
    if (m_compiler && m_compiler->isBusy())
      cancelCompile();
    else if (m_profiler && m_profiler->isBusy())
      m_profiler->cancel();
    else if (m_loader->isBusy())
      cancelLoad();
    else
      m_planner->cancel();
  });
  // A message too long for the bar is elided in the middle; a click shows all of it.
  statusBar()->installEventFilter(this);
  statusBar()->addWidget(m_statusModel);
  for (QLabel* l : {m_statusNodes, m_statusTes, m_statusPlan, m_statusTime, m_statusLayout})
    statusBar()->addPermanentWidget(l);
  statusBar()->addPermanentWidget(m_progress);
  statusBar()->addPermanentWidget(m_cancelButton);
  setBusy(false);
}

bool MainWindow::isLoading() const {
  return m_loader->isBusy();
}

bool MainWindow::isErrorShown() const {
  return m_errorDock->isVisible();
}

void MainWindow::openDialog() {
  QString dir = m_lastPath.isEmpty() ? QString() : QFileInfo(m_lastPath).absolutePath();
  QString path = QFileDialog::getOpenFileName(this, tr("Open model"), dir,
                                              tr("ONNX models (*.onnx);;All files (*)"));
  if (!path.isEmpty()) openModel(path);
}

void MainWindow::openModel(const QString& path) {
  m_lastPath = QFileInfo(path).absoluteFilePath();
  m_reloadAction->setEnabled(true);
  setBusy(true, tr("Loading %1…").arg(QFileInfo(path).fileName()));
  m_loader->load(m_lastPath);
}

void MainWindow::reload() {
  if (!m_lastPath.isEmpty()) openModel(m_lastPath);
}

void MainWindow::cancelLoad() {
  // Esc: whatever long work runs.
  if (m_loader->isBusy())
    m_loader->cancel();
  else if (m_compiler && m_compiler->isBusy())
    cancelCompile();
  else if (m_planner->isBusy())
    m_planner->cancel();
  setBusy(false);
}

void MainWindow::closeModel() {
  m_loader->cancel();
  m_planner->cancel();
  m_plan.reset();
  m_partModel->setPlan(nullptr);
  m_compiler->cancel();
  m_compile.reset();
  m_code->setPlan(nullptr);
  m_charts->setPlan(nullptr);
  m_data.reset();
  refreshExplorerViews();
  m_graph->clear();
  m_nodeModel->setModelData(nullptr);
  m_properties->setModelData(nullptr);
  m_teText->setText({});
  m_stack->setCurrentWidget(m_welcome);
  for (QAction* a : std::as_const(m_modelActions)) a->setEnabled(false);
  setWindowTitle(tr("Souffle Explorer"));
  setBusy(false);
  updateStatus();
}

void MainWindow::onLoaded(ModelDataPtr data, double ms) {
  m_data = std::move(data);
  m_plan.reset();
  m_partModel->setPlan(nullptr);
  m_errorDock->hide();
  m_nodeModel->setModelData(m_data);
  m_properties->setModelData(m_data);
  m_teText->setText(m_data->teText);
  m_stack->setCurrentWidget(m_graph);
  for (QAction* a : std::as_const(m_modelActions)) a->setEnabled(true);
  const QString name = QFileInfo(QString::fromStdString(m_data->model->path)).fileName();
  setWindowTitle(tr("%1 — Souffle Explorer").arg(name));
  addRecent(QString::fromStdString(m_data->model->path));
  m_statusTime->setText(tr("loaded in %1 ms").arg(ms, 0, 'f', 0));
  setBusy(true, tr("Laying out the graph…"));
  updateStatus();
  showCurrentGraph();
  startPlan();
  emit modelLoaded();
}

void MainWindow::onFailed(const LoadError& error) {
  setBusy(false);
  m_error->showError(error);
  m_errorDock->show();
  m_errorDock->raise();
  say(tr("Could not open %1").arg(QFileInfo(error.file).fileName()), 8000);
  emit loadFailed(error);
}

void MainWindow::showCurrentGraph() {
  if (!m_data) return;
  // Aliasing pointers keep the whole ModelData alive as long as the scene shows its graph.
  std::shared_ptr<const SceneGraph> g(m_data, m_teLevel ? &m_data->teGraph : &m_data->opGraph);
  m_properties->showBox(nullptr, -1);
  m_graph->showGraph(g);
}

void MainWindow::setTeLevel(bool on) {
  if (m_teLevelAction->isChecked() != on) {
    m_teLevelAction->setChecked(on);  // re-enters through toggled
    return;
  }
  if (m_teLevel == on) return;
  m_teLevel = on;
  if (m_data) {
    setBusy(true, tr("Laying out the graph…"));
    showCurrentGraph();
  }
  updateStatus();
}

void MainWindow::onBoxSelected(int box) {
  const SceneGraph* g = m_graph->scene()->graph();
  m_properties->showBox(g, box);
  if (!g || box < 0 || m_syncing) return;
  // Follow in the kernel table: the (first) kernel of the box.
  if (const std::vector<int>* ks = m_graph->scene()->kernelsOf(box); ks && !ks->empty()) {
    const QModelIndex idx = m_partProxy->mapFromSource(m_partModel->index(ks->front(), 0));
    m_syncing = true;
    m_partTable->selectionModel()->select(
        idx, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    m_partTable->scrollTo(idx);
    m_syncing = false;
  }
  const SceneNode& n = g->nodes[box];
  if (n.kind == SceneNode::Kind::TeOp) {
    m_teText->revealOp(n.subtitle);
  } else if (n.kind == SceneNode::Kind::Op && m_data) {
    for (const te::Op& op : m_data->model->program.ops)
      if (QString::fromStdString(op->origin.node) == n.onnxNode) {
        m_teText->revealOp(QString::fromStdString(op->name));
        break;
      }
  }
  // Follow in the table: the row of the node (or of the TE op's node).
  int row = -1;
  if (n.kind == SceneNode::Kind::Op) {
    row = m_nodeModel->rowOfBox(g->baseBox(box));
  } else if (n.kind == SceneNode::Kind::TeOp && m_data) {
    const auto& nodes = m_data->model->graph.nodes;
    for (size_t i = 0; i < nodes.size(); ++i)
      if (QString::fromStdString(nodes[i].name) == n.onnxNode) row = static_cast<int>(i);
  }
  if (row < 0) return;
  const QModelIndex idx = m_nodeProxy->mapFromSource(m_nodeModel->index(row, 0));
  if (!idx.isValid()) return;
  m_syncing = true;
  m_nodeTable->selectionModel()->select(
      idx, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
  m_nodeTable->scrollTo(idx);
  m_syncing = false;
}

void MainWindow::onTableSelection() {
  if (m_syncing) return;
  const QModelIndexList rows = m_nodeTable->selectionModel()->selectedRows();
  if (rows.isEmpty()) return;
  const QModelIndex src = m_nodeProxy->mapToSource(rows.front());
  int box = m_nodeModel->data(src, NodeTableModel::BoxRole).toInt();
  const SceneGraph* g = m_graph->scene()->graph();
  if (!g) return;
  if (g->teLevel) {
    const QString name = m_nodeModel->data(src.siblingAtColumn(0)).toString();
    box = -1;
    for (size_t i = 0; i < g->nodes.size() && box < 0; ++i)
      if (g->nodes[i].onnxNode == name) box = static_cast<int>(i);
  }
  if (box < 0) return;
  m_syncing = true;
  m_graph->scene()->selectBox(box);
  m_graph->view()->reveal(box);
  m_syncing = false;
  onBoxSelected(box);
}

void MainWindow::createPlanToolBar() {
  QToolBar* bar = addToolBar(tr("Plan"));
  m_planToolBar = bar;
  bar->setObjectName(QStringLiteral("planToolBar"));
  bar->setMovable(false);
  auto* sl = new QLabel(tr(" Strategy "), bar);
  m_strategyBox = new QComboBox(bar);
  for (plan::Strategy st : plan::every_strategy())
    m_strategyBox->addItem(QString::fromLatin1(plan::strategy_name(st)));
  m_strategyBox->setCurrentText(QStringLiteral("souffle"));
  m_strategyBox->setToolTip(tr("Fusion strategy (Ctrl+1 … Ctrl+4)"));
  auto* gl = new QLabel(tr("  GPU "), bar);
  m_gpuBox = new QComboBox(bar);
  for (const gpu::GpuSpec& g : gpu::builtin_gpu_specs())
    m_gpuBox->addItem(QString::fromStdString(g.name));
  const int a100 = m_gpuBox->findText(QStringLiteral("A100"), Qt::MatchStartsWith);
  if (a100 >= 0) m_gpuBox->setCurrentIndex(a100);
  m_gpuBox->setToolTip(tr("GPU whose specification the cost model uses"));
  auto* pl = new QLabel(tr("  Precision "), bar);
  m_precisionBox = new QComboBox(bar);
  for (gpu::Precision p :
       {gpu::Precision::FP32, gpu::Precision::TF32, gpu::Precision::FP16, gpu::Precision::BF16})
    m_precisionBox->addItem(QString::fromLatin1(gpu::precision_name(p)));
  m_precisionBox->setToolTip(
      tr("Compute type of the GEMM-like kernels (tf32/fp16/bf16: tensor cores): the plan, its "
         "prices, the code, compile and the step-through use it; a project saves it"));
  auto* yl = new QLabel(tr("  Sync "), bar);
  m_syncBox = new QComboBox(bar);
  for (SyncMode m : {SyncMode::Grid, SyncMode::Auto, SyncMode::Flags})
    m_syncBox->addItem(QString::fromLatin1(sync_mode_name(m)));
  m_syncBox->setToolTip(
      tr("What orders a stage after stores other blocks made: grid barriers (Souffle's), auto "
         "(per-tile flags where the cost model prices them cheaper) or flags (wherever "
         "proven); the plan, its prices, the code and compile use it; a project saves it"));
  auto* cl = new QLabel(tr("  Colour by "), bar);
  m_colorBox = new QComboBox(bar);
  for (HeatMetric m : heatMetrics()) m_colorBox->addItem(heatMetricName(m), static_cast<int>(m));
  m_colorBox->setToolTip(
      tr("Colour the boxes by op type, or as a heat map of a metric (with a legend)"));
  bar->addWidget(sl);
  bar->addWidget(m_strategyBox);
  bar->addWidget(gl);
  bar->addWidget(m_gpuBox);
  bar->addWidget(pl);
  bar->addWidget(m_precisionBox);
  bar->addWidget(yl);
  bar->addWidget(m_syncBox);
  bar->addWidget(cl);
  bar->addWidget(m_colorBox);
  connect(m_colorBox, &QComboBox::currentIndexChanged, this, [this](int i) {
    setHeatMetric(static_cast<HeatMetric>(m_colorBox->itemData(i).toInt()));
  });
  connect(m_strategyBox, &QComboBox::currentTextChanged, this, [this] { startPlan(); });
  connect(m_gpuBox, &QComboBox::currentTextChanged, this, [this] { startPlan(); });
  connect(m_precisionBox, &QComboBox::currentTextChanged, this, [this] { startPlan(); });
  connect(m_syncBox, &QComboBox::currentTextChanged, this, [this] { startPlan(); });
  auto* planMenu = new QMenu(tr("&Plan"), this);
  menuBar()->insertMenu(menuBar()->actions().back(), planMenu);  // before Help
  int key = 1;
  for (plan::Strategy st : plan::every_strategy()) {
    const QString name = QString::fromLatin1(plan::strategy_name(st));
    QAction* a = planMenu->addAction(tr("Strategy: %1").arg(name), this,
                                     [this, name] { setStrategy(name); });
    a->setShortcut(QKeySequence(QStringLiteral("Ctrl+%1").arg(key++)));
  }
  planMenu->addSeparator();
  planMenu->addAction(m_partDock->toggleViewAction());
}

QString MainWindow::strategy() const {
  return m_strategyBox->currentText();
}

QString MainWindow::gpu() const {
  return m_gpuBox->currentText();
}

bool MainWindow::isPlanning() const {
  return m_planner->isBusy();
}

void MainWindow::setStrategy(const QString& strategy) {
  m_strategyBox->setCurrentText(strategy);  // re-plans through currentTextChanged
}

void MainWindow::setGpu(const QString& gpu) {
  int i = m_gpuBox->findText(gpu, Qt::MatchFixedString);
  if (i < 0) i = m_gpuBox->findText(gpu, Qt::MatchStartsWith);
  if (i >= 0) m_gpuBox->setCurrentIndex(i);
}

void MainWindow::startPlan() {
  if (!m_data) return;
  plan::Strategy st = plan::Strategy::Souffle;
  for (plan::Strategy s : plan::every_strategy())
    if (strategy() == QLatin1String(plan::strategy_name(s))) st = s;
  m_planner->start(m_data, st, gpu(), m_editor->planned(), m_plan, precisionValue(), syncValue());
  setBusy(true, tr("Planning (%1 on %2)…").arg(strategy(), gpu()));
  updateStatus();
}

void MainWindow::onPlanned(PlanDataPtr plan) {
  if (!plan || plan->model != m_data) return;  // planned for a model no longer open
  QString editMessage;
  if (m_editor->hasProposal()) {
    // A new edit was planned: refused, it changes nothing (no plan, no undo step); else it
    // becomes a step named with the change in estimated time it brought.
    QStringList refusals;
    for (const plan::Edit& e : m_editor->proposedEdits())
      for (const plan::RefusedEdit& r : plan->plan->refused)
        if (r.edit == e)
          refusals << tr("%1 — %2").arg(QString::fromStdString(plan::describe(r.edit)),
                                        QString::fromStdString(r.reason));
    if (!refusals.isEmpty()) {
      m_editor->reject();
      setBusy(false);
      updateStatus();
      showRefusal(refusals.join(QStringLiteral("; ")));
      emit planned();
      return;
    }
    QString text = m_editor->proposalText();
    if (m_plan && m_plan->plan) {
      const QString delta = estimateDelta(m_plan->plan->est_time_us, plan->plan->est_time_us);
      text += QStringLiteral(" (%1)").arg(delta);
      editMessage = tr("%1: est. %2 → %3 µs (%4)")
                        .arg(m_editor->proposalText())
                        .arg(m_plan->plan->est_time_us, 0, 'f', 1)
                        .arg(plan->plan->est_time_us, 0, 'f', 1)
                        .arg(delta);
    }
    m_editor->accept(text);
  }
  m_plan = std::move(plan);
  m_partModel->setPlan(m_plan);
  m_properties->setPlan(m_plan);
  m_transforms->setPlan(m_plan);
  m_graph->setPlan(m_plan);
  refreshExplorerViews();
  m_compiler->cancel();  // results of the previous plan would not match its kernels
  m_compile.reset();
  m_code->setPlan(m_plan);
  m_charts->setPlan(m_plan);
  // A measurement of this very plan (same strategy, GPU, precision and edits) comes back.
  m_profile.reset();
  if (auto it = m_measurements.find(plan_key(*m_plan->plan)); it != m_measurements.end()) {
    try {
      m_profile =
          makeProfileData(m_plan, profile_report_from_json(nlohmann::json::parse(it->second)));
      m_partModel->setProfile(m_profile);
      m_charts->setProfile(m_profile);
    } catch (const std::exception& ex) {
      // A kept run this build cannot read (a colleague's project, a hand edit) is named in the
      // problems panel and dropped; the plan and the user's edits stay.
      LoadError e;
      e.title = tr("A kept profile run was dropped");
      e.file = m_project->path().isEmpty() ? m_lastPath : m_project->path();
      e.reason = tr("a kept profile run of this plan cannot be read and is dropped: %1")
                     .arg(QString::fromUtf8(ex.what()));
      m_measurements.erase(it);
      showError(e);
    }
  }
  refreshCompare();
  if (m_external) {  // an imported profile follows the plan (kernel numbers, nodes)
    m_external = mapExternalProfile(m_plan, m_external->profile);
    m_importedPanel->setData(m_external);
    m_partModel->setImported(m_external);
  }
  applyPlanToScene();
  setBusy(!m_graph->isFinal());
  updateStatus();
  if (!editMessage.isEmpty())
    say(editMessage, 15000);
  else
    say(tr("Planned in %1 ms").arg(m_plan->ms, 0, 'f', 0), 4000);
  m_compiler->startCachedOnly(m_plan);  // kernels compiled before an edit keep their figures
  emit planned();
}

void MainWindow::refreshCompare() {
  if (m_data && m_compareDock->isVisible() && m_compareDock->property("onScreen").toBool())
    m_compare->setContext(m_data, gpu(), m_editor->decisions(), strategy(), precisionValue());
}

QString MainWindow::sync() const {
  return m_syncBox->currentText();
}

SyncMode MainWindow::syncValue() const {
  SyncMode m = SyncMode::Grid;
  parse_sync_mode(sync().toStdString(), m);
  return m;
}

void MainWindow::setSync(const QString& sync) {
  const int i = m_syncBox->findText(sync.toLower());
  if (i >= 0) m_syncBox->setCurrentIndex(i);  // re-plans through currentTextChanged
}

QString MainWindow::precision() const {
  return m_precisionBox->currentText();
}

gpu::Precision MainWindow::precisionValue() const {
  return gpu::parse_precision(precision().toStdString());
}

void MainWindow::setPrecision(const QString& precision) {
  const int i = m_precisionBox->findText(precision.toLower());
  if (i >= 0) m_precisionBox->setCurrentIndex(i);  // re-plans through currentTextChanged
}

void MainWindow::applyPlanToScene() {
  GraphScene* scene = m_graph->scene();
  const SceneGraph* g = scene->graph();
  if (!g || !m_plan || m_plan->model != m_data) {
    scene->setKernels({});
    m_graph->setEdgeBoundaries({});
    return;
  }
  // Kernel ids (not partition indices) are what the badges and palette show.
  std::vector<std::vector<int>> ids = m_graph->shownKernels(m_plan->kernelsOf(g->teLevel));
  std::vector<QString> names;
  QHash<int, quint32> keys;
  for (size_t i = 0; i < m_plan->identities.size(); ++i) {
    names.push_back(m_plan->identities[i].shortName);
    keys.insert(m_plan->plan->partitions[i].id, m_plan->identities[i].colorKey);
  }
  scene->setClusterLabels(clusterLabels(*m_plan->plan, names));
  scene->setKernelColorKeys(std::move(keys));
  for (auto& ks : ids)
    for (int& k : ks) k = m_plan->plan->partitions[k].id;
  scene->setKernels(std::move(ids));
  // Edges inside a kernel drawn by the stage boundary between their ends (edges of a collapsed
  // graph through the boxes they stand for).
  const EdgeKinds& kinds = m_plan->edgeKindsOf(g->teLevel);
  std::vector<int> edgeKinds(g->edges.size(), -1);
  for (size_t e = 0; e < g->edges.size(); ++e) {
    const int from = g->baseBox(g->edges[e].from), to = g->baseBox(g->edges[e].to);
    if (from < 0 || to < 0) continue;
    auto it = kinds.constFind(edgeKey(from, to));
    if (it != kinds.constEnd()) edgeKinds[e] = static_cast<int>(*it);
  }
  m_graph->setEdgeBoundaries(std::move(edgeKinds));
  refreshHeat();
}

bool MainWindow::importProfile(const QString& given) {
  if (!m_plan) return false;
  QString path = given;
  if (path.isEmpty())
    path = QFileDialog::getOpenFileName(
        this, tr("Import a profile"), QFileInfo(m_lastPath).absolutePath(),
        tr("Profiles (*.csv *.json);;CSV: name,time or Nsight Compute (*.csv);;"
           "PyTorch profiler trace (*.json);;All files (*)"));
  if (path.isEmpty()) return false;
  std::shared_ptr<const ExternalProfile> profile;
  try {
    profile = std::make_shared<const ExternalProfile>(read_external_profile(path.toStdString()));
  } catch (const UserError& e) {
    LoadError err;
    err.file = QString::fromStdString(e.file());
    err.node = QString::fromStdString(e.node());
    err.reason = tr("cannot import the profile: %1").arg(QString::fromStdString(e.reason()));
    showError(err);
    return false;
  }
  m_external = mapExternalProfile(m_plan, profile);
  m_importedPanel->setData(m_external);
  m_partModel->setImported(m_external);
  m_importedDock->show();
  m_importedDock->raise();
  setHeatMetric(HeatMetric::MeasuredTime);
  say(m_importedPanel->summary().remove(QStringLiteral("<b>")).remove(QStringLiteral("</b>")),
      15000);
  return true;
}

void MainWindow::setHeatMetric(HeatMetric metric) {
  m_heatMetric = metric;
  const int i = m_colorBox->findData(static_cast<int>(metric));
  if (i >= 0 && m_colorBox->currentIndex() != i) m_colorBox->setCurrentIndex(i);
  for (QAction* a : m_colorActions) a->setChecked(a->data().toInt() == static_cast<int>(metric));
  refreshHeat();
}

MeasuredTimes MainWindow::measuredTimes() const {
  MeasuredTimes m;
  if (m_external && m_external->plan == m_plan) {
    m.nodeUs = m_external->nodeUs;
    m.partitionUs = m_external->partitionUs;
    m.source = m_external->source;
    m.gpu = true;
  } else if (m_profile && m_profile->plan == m_plan) {
    m.partitionUs = m_profile->partitionUs;
    m.source = m_profile->label();
    m.gpu = m_profile->gpuTime();
  }
  return m;
}

void MainWindow::refreshHeat() {
  const SceneGraph* g = m_graph->scene()->graph();
  if (!g || !m_plan || m_plan->model != m_data || m_heatMetric == HeatMetric::None) {
    m_graph->setHeatMap({});
    return;
  }
  m_graph->setHeatMap(computeHeat(m_heatMetric, *g,
                                  m_graph->shownKernels(m_plan->kernelsOf(g->teLevel)), *m_plan,
                                  measuredTimes()));
}

void MainWindow::onPartitionSelection() {
  if (m_syncing || !m_plan) return;
  const QModelIndexList rows = m_partTable->selectionModel()->selectedRows();
  const SceneGraph* g = m_graph->scene()->graph();
  if (rows.isEmpty() || !g) return;
  const int k = m_partProxy->mapToSource(rows.front()).row();
  const std::vector<int> boxes = m_graph->shownBoxes(m_plan->boxesOf(g->teLevel, k));
  if (boxes.empty()) return;
  m_syncing = true;
  m_graph->scene()->selectBoxes(boxes);
  m_graph->view()->reveal(boxes.front());
  m_syncing = false;
  m_properties->showBox(g, boxes.front());
}

void MainWindow::say(const QString& text, int ms) {
  m_message = text;
  int room = statusBar()->width() - 40;
  for (QWidget* w : statusBar()->findChildren<QWidget*>(QString(), Qt::FindDirectChildrenOnly))
    if (w->isVisible() && w != statusBar()) room -= w->width();
  room = std::max(room, 160);
  const QString shown = statusBar()->fontMetrics().elidedText(text, Qt::ElideMiddle, room);
  statusBar()->setToolTip(shown == text ? QString() : text);
  statusBar()->showMessage(shown, ms);
}

void MainWindow::showRefusal(const QString& why) {
  say(tr("Refused, nothing changed: %1").arg(why), 20000);
}

bool MainWindow::eventFilter(QObject* watched, QEvent* event) {
  if (watched == statusBar() && event->type() == QEvent::MouseButtonRelease &&
      !statusBar()->currentMessage().isEmpty() && !statusBar()->toolTip().isEmpty()) {
    QMessageBox box(QMessageBox::Information, windowTitle(), m_message, QMessageBox::Ok, this);
    box.setTextInteractionFlags(Qt::TextSelectableByMouse);
    box.exec();
    return true;
  }
  return QMainWindow::eventFilter(watched, event);
}

void MainWindow::setBusy(bool busy, const QString& what) {
  const bool compiling = m_compiler && m_compiler->isBusy();
  m_progress->setVisible(busy || m_planner->isBusy() || compiling);
  if (!compiling) m_progress->setRange(0, 0);
  m_cancelButton->setVisible((busy && m_loader->isBusy()) || compiling || m_planner->isBusy() ||
                             (m_profiler && m_profiler->isBusy()));
  m_cancelAction->setEnabled(m_loader->isBusy() || m_planner->isBusy() || compiling);
  if (busy && !what.isEmpty())
    say(what);
  else if (!busy)
    statusBar()->clearMessage();
}

void MainWindow::updateStatus() {
  if (!m_data) {
    m_statusModel->setText(tr("No model"));
    for (QLabel* l : {m_statusNodes, m_statusTes, m_statusPlan, m_statusTime, m_statusLayout})
      l->clear();
    return;
  }
  const LoadedModel& m = *m_data->model;
  m_statusModel->setText(QFileInfo(QString::fromStdString(m.path)).fileName() +
                         (m_teLevel ? tr("  ·  TE level") : tr("  ·  op level")));
  m_statusNodes->setText(
      tr("%1 ONNX nodes → %2 after folding").arg(m.onnx_nodes).arg(m.graph.nodes.size()));
  m_statusTes->setText(tr("%1 TEs").arg(m.program.ops.size()));
  if (isPlanning())
    m_statusPlan->setText(tr("%1 · %2 · planning…").arg(strategy(), gpu()));
  else if (m_plan)
    m_statusPlan->setText(
        tr("<b>%1</b> · %2 · %6 · <b>%3 kernel%4</b> · est. %5 µs")
            .arg(m_plan->strategy, m_plan->gpu)
            .arg(m_plan->plan->kernels())
            .arg(m_plan->plan->kernels() == 1 ? QString() : QStringLiteral("s"))
            .arg(m_plan->plan->est_time_us, 0, 'f', 1)
            .arg(QLatin1String(gpu::precision_name(m_plan->plan->precision)) +
                 (m_plan->plan->sync == SyncMode::Grid
                      ? QString()
                      : tr(" · sync %1").arg(QLatin1String(sync_mode_name(m_plan->plan->sync))))));
  else
    m_statusPlan->clear();
}

void MainWindow::setTheme(const QString& theme) {
  m_theme = theme;
  if (theme == QLatin1String("system")) {
    qApp->setPalette(m_systemPalette);
  } else {
    qApp->setStyle(QStyleFactory::create(QStringLiteral("Fusion")));
    qApp->setPalette(themePalette(theme, m_systemPalette));
  }
  for (QAction* a : findChildren<QAction*>())
    if (a->isCheckable() && a->data().toString() == theme) a->setChecked(true);
  updateColors();
}

void MainWindow::updateColors() {
  m_graph->setColors(GraphColors::from(qApp->palette()));
  if (m_code) m_code->setDark(isDark(qApp->palette()));
  if (m_charts) m_charts->setDark(isDark(qApp->palette()));
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

QStringList MainWindow::recentFiles() const {
  return QSettings().value(QLatin1String(kRecentKey)).toStringList();
}

void MainWindow::addRecent(const QString& path) {
  QSettings settings;
  QStringList list = settings.value(QLatin1String(kRecentKey)).toStringList();
  list.removeAll(path);
  list.prepend(path);
  while (list.size() > kMaxRecent) list.removeLast();
  settings.setValue(QLatin1String(kRecentKey), list);
  rebuildRecentMenu();
}

void MainWindow::rebuildRecentMenu() {
  m_recentMenu->clear();
  const QStringList list = recentFiles();
  int i = 0;
  for (const QString& path : list) {
    QAction* a = m_recentMenu->addAction(QStringLiteral("&%1  %2").arg((i + 1) % 10).arg(path));
    if (i < 9) a->setShortcut(QKeySequence(QStringLiteral("Ctrl+Shift+%1").arg(i + 1)));
    connect(a, &QAction::triggered, this, [this, path] { openModel(path); });
    ++i;
  }
  if (list.isEmpty()) m_recentMenu->addAction(tr("(none)"))->setEnabled(false);
  m_recentMenu->addSeparator();
  m_recentMenu->addAction(tr("Clear list"), this, [this] {
    QSettings().remove(QLatin1String(kRecentKey));
    rebuildRecentMenu();
  });
}

void MainWindow::restoreSettings() {
  QSettings s;
  if (s.contains(QStringLiteral("geometry"))) restoreGeometry(s.value("geometry").toByteArray());
  if (s.contains(QStringLiteral("windowState"))) restoreState(s.value("windowState").toByteArray());
  const QString theme = s.value(QStringLiteral("theme"), QStringLiteral("system")).toString();
  if (theme != m_theme) setTheme(theme);
}

void MainWindow::closeEvent(QCloseEvent* event) {
  if (!m_project->closing()) {
    event->ignore();
    return;
  }
  QSettings s;
  s.setValue(QStringLiteral("geometry"), saveGeometry());
  s.setValue(QStringLiteral("windowState"), saveState());
  s.setValue(QStringLiteral("theme"), m_theme);
  QMainWindow::closeEvent(event);
}

void MainWindow::exportSvg(const QString& given) {
  QString path = given;
  if (path.isEmpty())
    path = QFileDialog::getSaveFileName(this, tr("Export graph as SVG"), QString(),
                                        tr("SVG images (*.svg)"));
  if (path.isEmpty() || !m_graph->scene()->graph()) return;
  QGraphicsScene* scene = m_graph->scene();
  const QRectF r = scene->sceneRect();
  QSvgGenerator gen;
  gen.setFileName(path);
  gen.setSize(r.size().toSize());
  gen.setViewBox(QRectF(QPointF(), r.size()));
  gen.setTitle(windowTitle());
  QPainter p(&gen);
  m_graph->renderExport(p, QRectF(QPointF(), r.size()));
}

void MainWindow::exportPng(const QString& given) {
  QString path = given;
  if (path.isEmpty())
    path = QFileDialog::getSaveFileName(this, tr("Export graph as PNG"), QString(),
                                        tr("PNG images (*.png)"));
  if (path.isEmpty() || !m_graph->scene()->graph()) return;
  QGraphicsScene* scene = m_graph->scene();
  const QRectF r = scene->sceneRect();
  // Cap the image at about 16k pixels on the long side so huge graphs still export.
  const double scale = std::min(2.0, 16000.0 / std::max(r.width(), r.height()));
  QImage img((r.size() * scale).toSize(), QImage::Format_ARGB32_Premultiplied);
  img.fill(m_graph->scene()->colors().background);
  QPainter p(&img);
  p.setRenderHint(QPainter::Antialiasing);
  m_graph->renderExport(p, QRectF(QPointF(), QSizeF(img.size())));
  p.end();
  if (!img.save(path)) say(tr("Could not write %1").arg(path), 8000);
}

// ---- Editing decisions, projects, comparison and plan export --------------------------------

void MainWindow::createEditing() {
  m_editor = new DecisionEditor(this);
  m_project = new ProjectController(this);

  m_transforms = new TransformsPanel(m_editor, this);
  m_transformsDock = new QDockWidget(tr("Transformations"), this);
  m_transformsDock->setObjectName(QStringLiteral("transformsDock"));
  m_transformsDock->setWidget(m_transforms);
  addDockWidget(Qt::RightDockWidgetArea, m_transformsDock);
  tabifyDockWidget(m_propertiesDock, m_transformsDock);
  m_propertiesDock->raise();

  auto* history = new QUndoView(m_editor->undoStack(), this);
  history->setEmptyLabel(tr("<plan of the strategy>"));
  m_historyDock = new QDockWidget(tr("Edit history"), this);
  m_historyDock->setObjectName(QStringLiteral("historyDock"));
  m_historyDock->setWidget(history);
  addDockWidget(Qt::LeftDockWidgetArea, m_historyDock);
  tabifyDockWidget(m_nodesDock, m_historyDock);
  m_nodesDock->raise();

  m_compare = new ComparisonView(this);
  m_compareDock = new QDockWidget(tr("Compare plans"), this);
  m_compareDock->setObjectName(QStringLiteral("compareDock"));
  m_compareDock->setWidget(m_compare);
  addDockWidget(Qt::BottomDockWidgetArea, m_compareDock);
  tabifyDockWidget(m_partDock, m_compareDock);
  m_partDock->raise();
  // A dock tabbed behind another still says isVisible(); "onScreen" follows its tab.
  connect(m_compareDock, &QDockWidget::visibilityChanged, this, [this](bool visible) {
    m_compareDock->setProperty("onScreen", visible);
    if (visible) refreshCompare();
  });

  // Every change of the decisions re-plans at once (off the GUI thread); a new edit is planned
  // before it becomes a step.
  connect(m_editor, &DecisionEditor::changed, this, [this] { startPlan(); });
  connect(m_editor, &DecisionEditor::proposed, this, [this] { startPlan(); });

  QMenu* edit = new QMenu(tr("&Edit"), menuBar());             // under the menu bar: listed in Help
  menuBar()->insertMenu(menuBar()->actions().value(1), edit);  // after File
  QAction* undo = m_editor->undoStack()->createUndoAction(this, tr("&Undo"));
  undo->setShortcut(QKeySequence::Undo);
  QAction* redo = m_editor->undoStack()->createRedoAction(this, tr("&Redo"));
  redo->setShortcuts({QKeySequence(tr("Ctrl+Shift+Z")), QKeySequence(tr("Ctrl+Y"))});
  edit->addAction(undo);
  edit->addAction(redo);
  edit->addSeparator();
  QAction* merge = edit->addAction(tr("&Merge selected kernels"), this, &MainWindow::mergeSelected);
  merge->setShortcut(QKeySequence(tr("Ctrl+Shift+M")));
  merge->setToolTip(tr("Merge the selected kernels into one (Ctrl+Shift+M)"));
  QAction* split = edit->addAction(tr("&Split at node"), this, &MainWindow::splitAtSelected);
  split->setShortcut(QKeySequence(tr("Ctrl+Shift+X")));
  split->setToolTip(tr("Start a new kernel at the selected node (Ctrl+Shift+X)"));
  QAction* pin = edit->addAction(tr("&Pin node to its own kernel"), this, &MainWindow::pinSelected);
  pin->setShortcut(QKeySequence(tr("Ctrl+Shift+P")));
  pin->setToolTip(tr("Give the selected node a kernel of its own (Ctrl+Shift+P)"));
  QAction* byFlags = edit->addAction(tr("Order stage by per-tile &flags"), this,
                                     [this] { orderSelected(BoundaryKind::Flags); });
  byFlags->setToolTip(
      tr("The selected node's stage waits only on the producer blocks it reads (refused with "
         "the reason where the dependence cannot be bounded)"));
  QAction* byGrid = edit->addAction(tr("Order stage by a &grid barrier"), this,
                                    [this] { orderSelected(BoundaryKind::Grid); });
  byGrid->setToolTip(
      tr("A grid barrier before the selected node's stage, whatever the proofs "
         "allow"));
  edit->addSeparator();
  QAction* force = edit->addAction(tr("&Force selected transformation"), this, [this] {
    m_transformsDock->show();
    m_transformsDock->raise();
    m_transforms->chooseForSelected(plan::Edit::Kind::Force, false);
  });
  force->setShortcut(QKeySequence(tr("Ctrl+Alt+F")));
  QAction* forbid = edit->addAction(tr("F&orbid selected transformation"), this, [this] {
    m_transformsDock->show();
    m_transformsDock->raise();
    m_transforms->chooseForSelected(plan::Edit::Kind::Forbid, false);
  });
  forbid->setShortcut(QKeySequence(tr("Ctrl+Alt+B")));
  QAction* heuristic = edit->addAction(tr("&Heuristic for selected transformation"), this, [this] {
    m_transforms->chooseForSelected(plan::Edit::Kind::Force, true);
  });
  edit->addSeparator();
  QAction* clearEdits = edit->addAction(
      tr("&Discard all edits"), this, [this] { m_editor->pushStep({}, tr("discard all edits")); });
  m_modelActions << merge << split << pin << byFlags << byGrid << force << forbid << heuristic
                 << clearEdits;

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
  QMenu* exportMenu = nullptr;
  for (QMenu* m : file->findChildren<QMenu*>())
    if (m->title() == tr("&Export")) exportMenu = m;
  if (!exportMenu) {
    exportMenu = new QMenu(tr("&Export"), file);
    file->insertMenu(before, exportMenu);
  }
  QAction* planJson = exportMenu->addAction(tr("Plan &JSON…"), this, [this] { exportPlanJson(); });
  planJson->setShortcut(QKeySequence(tr("Ctrl+Shift+J")));
  QAction* bundle = exportMenu->addAction(tr("Kernel &bundle…"), this, [this] { exportBundle(); });
  bundle->setStatusTip(
      tr("Compile the plan's kernels and write .cu/.ptx files, the weights, "
         "the test data and a host harness that builds with nvcc"));
  QAction* report = exportMenu->addAction(tr("&Report (HTML, JSON, CSV, DOT)…"), this,
                                          [this] { exportReport(); });
  report->setStatusTip(
      tr("A report of the plan to share: kernels, reasons, figures, graph, "
         "charts and CUDA, before and after your edits"));
  QAction* walk = exportMenu->addAction(tr("&Walk-through (HTML pages)…"), this,
                                        [this] { exportWalkthrough(); });
  m_modelActions << saveProject << saveAs << planJson << bundle << report << walk;

  // The editing toolbar, and the same actions on right click in the kernel table and graph.
  QToolBar* bar = addToolBar(tr("Edit"));
  bar->setObjectName(QStringLiteral("editToolBar"));
  bar->setMovable(false);
  bar->setToolButtonStyle(Qt::ToolButtonTextOnly);
  bar->addAction(undo);
  bar->addAction(redo);
  bar->addSeparator();
  merge->setIconText(tr("Merge"));
  split->setIconText(tr("Split"));
  pin->setIconText(tr("Pin"));
  for (QAction* a : {merge, split, pin}) bar->addAction(a);
  m_partTable->setContextMenuPolicy(Qt::ActionsContextMenu);
  m_partTable->addActions({merge, split, pin});
  auto* sep = new QAction(this);
  sep->setSeparator(true);
  m_partTable->addAction(sep);
  QAction* kernelsCsv = addCsvExport(m_partTable, tr("kernels"));
  exportMenu->addAction(kernelsCsv);
  kernelsCsv->setText(tr("&Kernel table as CSV…"));
  addCsvExport(m_nodeTable, tr("nodes"));
  addCsvExport(m_compare->table(), tr("comparison"));
  GraphView* view = m_graph->view();
  view->setContextMenuPolicy(Qt::CustomContextMenu);
  connect(view, &QWidget::customContextMenuRequested, this,
          [this, view, merge, split, pin](const QPoint& pos) {
            // Right-clicking an unselected node selects it first, as file managers do.
            for (QGraphicsItem* item : view->items(pos))
              if (item->type() == NodeItem::Type) {
                if (!item->isSelected())
                  m_graph->scene()->selectBox(static_cast<NodeItem*>(item)->box());
                break;
              }
            QMenu menu(this);
            menu.addActions({merge, split, pin});
            menu.exec(view->viewport()->mapToGlobal(pos));
          });
  auto* undoDock = m_historyDock->toggleViewAction();
  for (QDockWidget* d : {m_transformsDock, m_compareDock})
    m_viewMenu->addAction(d->toggleViewAction());
  m_viewMenu->addAction(undoDock);
}

void MainWindow::showError(const LoadError& error) {
  m_error->showError(error);
  m_errorDock->show();
  m_errorDock->raise();
  say(error.message(), 8000);
}

void MainWindow::openFile(const QString& path) {
  if (path.endsWith(QLatin1String(".souffle"), Qt::CaseInsensitive))
    m_project->open(path);
  else
    openModel(path);
}

std::vector<int> MainWindow::selectedKernels() const {
  std::vector<int> ks;
  auto add = [&ks](int k) {
    if (std::find(ks.begin(), ks.end(), k) == ks.end()) ks.push_back(k);
  };
  if (!m_plan) return ks;
  for (const QModelIndex& r : m_partTable->selectionModel()->selectedRows())
    add(m_partProxy->mapToSource(r).row());
  if (ks.size() >= 2) return ks;
  // Nodes selected in the graph (several kernels' worth, e.g. by Ctrl+click).
  std::vector<int> fromGraph;
  for (QGraphicsItem* item : m_graph->scene()->selectedItems())
    if (item->type() == NodeItem::Type)
      if (const std::vector<int>* k =
              m_graph->scene()->kernelsOf(static_cast<NodeItem*>(item)->box()))
        for (int x : *k)
          if (std::find(fromGraph.begin(), fromGraph.end(), x) == fromGraph.end())
            fromGraph.push_back(x);
  // kernelsOf gives kernel ids (badges); map them back to partition indices.
  std::vector<int> parts;
  for (int id : fromGraph)
    for (size_t p = 0; p < m_plan->plan->partitions.size(); ++p)
      if (m_plan->plan->partitions[p].id == id) parts.push_back(int(p));
  return parts.size() > ks.size() ? parts : ks;
}

QString MainWindow::selectedAnchor() const {
  const SceneGraph* g = m_graph->scene()->graph();
  const int box = m_graph->scene()->selectedBox();
  if (!g || box < 0 || box >= int(g->nodes.size())) return {};
  const SceneNode& n = g->nodes[size_t(box)];
  if (n.kind == SceneNode::Kind::TeOp) return n.subtitle;
  if (n.kind == SceneNode::Kind::Op) return n.onnxNode;
  return {};
}

void MainWindow::mergeSelected() {
  const std::vector<int> ks = selectedKernels();
  if (!m_plan || ks.size() < 2) {
    say(tr("Select two or more kernels to merge (rows of the kernel table, or nodes of "
           "different kernels with Ctrl+click)"),
        6000);
    return;
  }
  // Anchor by TE names, not kernel numbers, so the edit survives re-planning.
  const plan::FusionPlan& p = *m_plan->plan;
  const std::string first = p.program.ops[size_t(p.partitions[size_t(ks[0])].tes.front())]->name;
  std::vector<plan::Edit> edits;
  QStringList ids{QStringLiteral("#%1").arg(p.partitions[size_t(ks[0])].id)};
  for (size_t i = 1; i < ks.size(); ++i) {
    const plan::Partition& k = p.partitions[size_t(ks[i])];
    edits.push_back({plan::Edit::Kind::Merge, first, p.program.ops[size_t(k.tes.front())]->name});
    ids << QStringLiteral("#%1").arg(k.id);
  }
  m_editor->push(edits, tr("merge kernels %1").arg(ids.join(QStringLiteral(", "))));
}

void MainWindow::splitAtSelected() {
  const QString at = selectedAnchor();
  if (at.isEmpty()) {
    say(tr("Select a node in the graph to split at"), 6000);
    return;
  }
  m_editor->push({{plan::Edit::Kind::Split, at.toStdString(), ""}}, tr("split before %1").arg(at));
}

void MainWindow::pinSelected() {
  const QString at = selectedAnchor();
  if (at.isEmpty()) {
    say(tr("Select a node in the graph to pin"), 6000);
    return;
  }
  m_editor->push({{plan::Edit::Kind::Pin, at.toStdString(), ""}}, tr("pin %1").arg(at));
}

void MainWindow::orderSelected(BoundaryKind kind) {
  const QString at = selectedAnchor();
  if (at.isEmpty()) {
    say(tr("Select a node in the graph whose stage to order"), 6000);
    return;
  }
  const std::string order = kind == BoundaryKind::Flags ? "flags" : "grid";
  const plan::Edit e{plan::Edit::Kind::Sync, at.toStdString(), order};
  m_editor->push({e}, QString::fromStdString(plan::describe(e)));
}

bool MainWindow::exportPlanJson(const QString& given) {
  if (!m_plan) return false;
  QString path = given;
  if (path.isEmpty())
    path = QFileDialog::getSaveFileName(this, tr("Export plan as JSON"),
                                        QFileInfo(m_lastPath).absolutePath() + QLatin1Char('/') +
                                            QFileInfo(m_lastPath).baseName() +
                                            QStringLiteral("-%1.json").arg(m_plan->strategy),
                                        tr("JSON (*.json)"));
  if (path.isEmpty()) return false;
  const std::string text = plan_json(m_lastPath.toStdString(), *m_plan->plan).dump(2) + "\n";
  QSaveFile f(path);
  if (!f.open(QIODevice::WriteOnly) || f.write(text.data(), qint64(text.size())) < 0 ||
      !f.commit()) {
    say(tr("Could not write %1").arg(path), 8000);
    return false;
  }
  say(tr("Exported the plan to %1").arg(QFileInfo(path).fileName()), 4000);
  return true;
}

bool MainWindow::exportBundle(const QString& given) {
  if (!m_plan || !m_plan->plan) return false;
  QString dir = given;
  if (dir.isEmpty())
    dir = QFileDialog::getExistingDirectory(this, tr("Export the kernel bundle into"),
                                            QFileInfo(m_lastPath).absolutePath());
  if (dir.isEmpty()) return false;
  std::shared_ptr<const plan::FusionPlan> plan = m_plan->plan;
  const std::string model = m_lastPath.toStdString(), out = dir.toStdString();
  say(tr("Exporting the kernel bundle to %1…").arg(dir));
  auto* watcher = new QFutureWatcher<std::pair<bool, QString>>(this);
  connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher] {
    const auto [ok, message] = watcher->result();
    watcher->deleteLater();
    say(message, ok ? 8000 : 0);
    emit bundleExported(ok, message);
  });
  watcher->setFuture(QtConcurrent::run([plan, model, out]() -> std::pair<bool, QString> {
    try {
      CompileOptions options;
      options.sync = plan->sync;
      CompileReport report = compile_plan(*plan, options);
      BundleReport b = write_model_bundle(out, model, "", *plan, report, options);
      if (!report.ok())
        return {false, QObject::tr("Bundle in %1: %2 kernel(s) failed to compile (ERRORS.txt)")
                           .arg(QString::fromStdString(out))
                           .arg(report.errors)};
      return {true, QObject::tr("Exported %1 kernels (%2 files, harness%3) to %4")
                        .arg(report.kernels.size())
                        .arg(b.files.size())
                        .arg(b.harness ? QString() : QObject::tr(" not written"))
                        .arg(QString::fromStdString(out))};
    } catch (const std::exception& e) {
      return {false, QObject::tr("Bundle export failed: %1").arg(QString::fromUtf8(e.what()))};
    }
  }));
  return true;
}

bool MainWindow::exportReport(const QString& given) {
  if (!m_plan || !m_plan->plan) return false;
  QString path = given;
  if (path.isEmpty())
    path = QFileDialog::getSaveFileName(
        this, tr("Export a report"),
        QFileInfo(m_lastPath).absolutePath() + QLatin1Char('/') + QFileInfo(m_lastPath).baseName() +
            QStringLiteral("-%1-report.html").arg(m_plan->strategy),
        tr("HTML (*.html);;JSON (*.json);;CSV (*.csv);;Graphviz DOT (*.dot)"));
  if (path.isEmpty()) return false;
  std::shared_ptr<const plan::FusionPlan> plan = m_plan->plan;
  report::ReportOptions options;
  options.strategies = {plan->strategy};
  options.gpu = plan->gpu_spec.sm_count > 0 ? plan->gpu_spec : gpu::gpu_spec(plan->gpu);
  options.precision = plan->precision;
  options.edits = m_editor->decisions();
  const std::string model = m_lastPath.toStdString(), out = path.toStdString();
  say(tr("Writing the report %1…").arg(QFileInfo(path).fileName()));
  auto* watcher = new QFutureWatcher<std::pair<bool, QString>>(this);
  connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher] {
    const auto [ok, message] = watcher->result();
    watcher->deleteLater();
    say(message, ok ? 8000 : 0);
    emit reportExported(ok, message);
  });
  watcher->setFuture(QtConcurrent::run([options, model, out]() -> std::pair<bool, QString> {
    try {
      report::ReportOptions o = options;
      o.code = report::format_has_code(report::report_format(out));
      const size_t bytes = report::write_report(report::gather_report(model, o), out);
      return {true, QObject::tr("Wrote the report %1 (%2 kB)")
                        .arg(QString::fromStdString(out))
                        .arg(bytes / 1024)};
    } catch (const std::exception& e) {
      return {false, QObject::tr("Report export failed: %1").arg(QString::fromUtf8(e.what()))};
    }
  }));
  return true;
}

bool MainWindow::exportWalkthrough(const QString& given) {
  if (!m_plan || !m_plan->plan) return false;
  QString path = given;
  if (path.isEmpty())
    path = QFileDialog::getSaveFileName(
        this, tr("Export the walk-through (the first page; the others go beside it)"),
        QFileInfo(m_lastPath).absolutePath() + QLatin1Char('/') + QFileInfo(m_lastPath).baseName() +
            QStringLiteral("-steps.html"),
        tr("HTML (*.html)"));
  if (path.isEmpty()) return false;
  std::shared_ptr<const plan::FusionPlan> plan = m_plan->plan;
  report::StepsOptions options;
  options.strategy = plan->strategy;
  options.gpu = plan->gpu_spec.sm_count > 0 ? plan->gpu_spec : gpu::gpu_spec(plan->gpu);
  options.precision = plan->precision;
  options.decisions = m_editor->decisions();
  const std::string model = m_lastPath.toStdString(), out = path.toStdString();
  say(tr("Writing the walk-through %1…").arg(QFileInfo(path).fileName()));
  auto* watcher = new QFutureWatcher<std::pair<bool, QString>>(this);
  connect(watcher, &QFutureWatcherBase::finished, this, [this, watcher] {
    const auto [ok, message] = watcher->result();
    watcher->deleteLater();
    say(message, ok ? 8000 : 0);
    emit reportExported(ok, message);
  });
  watcher->setFuture(QtConcurrent::run([options, model, out]() -> std::pair<bool, QString> {
    try {
      std::vector<std::string> pages = report::write_walkthrough(model, options, out);
      return {true, QObject::tr("Wrote the walk-through: %1 pages from %2")
                        .arg(pages.size())
                        .arg(QString::fromStdString(out))};
    } catch (const std::exception& e) {
      return {false,
              QObject::tr("Walk-through export failed: %1").arg(QString::fromUtf8(e.what()))};
    }
  }));
  return true;
}

// ---- Code, charts, compile and profile --------------------------------------------------------

void MainWindow::createKernelViews() {
  m_code = new CodePanel(this);
  m_codeDock = new QDockWidget(tr("Code"), this);
  m_codeDock->setObjectName(QStringLiteral("codeDock"));
  m_codeDock->setWidget(m_code);
  addDockWidget(Qt::BottomDockWidgetArea, m_codeDock);
  tabifyDockWidget(m_teDock, m_codeDock);
  m_teDock->raise();

  m_charts = new ChartsPanel(this);
  m_chartsDock = new QDockWidget(tr("Charts"), this);
  m_chartsDock->setObjectName(QStringLiteral("chartsDock"));
  m_chartsDock->setWidget(m_charts);
  addDockWidget(Qt::RightDockWidgetArea, m_chartsDock);
  splitDockWidget(m_propertiesDock, m_chartsDock, Qt::Vertical);

  m_importedPanel = new ImportedProfilePanel(this);
  m_importedDock = new QDockWidget(tr("Imported profile"), this);
  m_importedDock->setObjectName(QStringLiteral("importedProfileDock"));
  m_importedDock->setWidget(m_importedPanel);
  addDockWidget(Qt::BottomDockWidgetArea, m_importedDock);
  tabifyDockWidget(m_partDock, m_importedDock);
  m_partDock->raise();
  m_importedDock->hide();

  m_compiler = new CompileRunner(this);
  m_profiler = new ProfileRunner(this);
  ProfileOptions gpuOptions;
  gpuOptions.backend = "cuda";
  const QString offReason = QString::fromStdString(profile_unavailable_reason(gpuOptions));
  m_charts->setMeasuredNote(offReason.isEmpty() ? tr("not profiled yet") : offReason);

  auto* kernels = new QMenu(tr("&Kernels"), menuBar());
  menuBar()->insertMenu(menuBar()->actions().back(), kernels);  // before Help
  m_compileAction = kernels->addAction(tr("&Compile"), this, &MainWindow::compileKernels);
  m_compileAction->setShortcut(QKeySequence(tr("Ctrl+B")));
  m_compileAction->setToolTip(
      tr("Compile every kernel with NVRTC for sm_80 and sm_90: registers, shared memory, spills "
         "(Ctrl+B)"));
  m_cancelCompileAction =
      kernels->addAction(tr("C&ancel compile"), this, &MainWindow::cancelCompile);
  m_cancelCompileAction->setShortcut(QKeySequence(tr("Ctrl+Shift+B")));
  m_cancelCompileAction->setEnabled(false);
  m_profileAction =
      kernels->addAction(tr("&Profile on the GPU"), this, &MainWindow::profileKernels);
  m_profileAction->setShortcut(QKeySequence(tr("Ctrl+Alt+P")));
  const bool gpu = offReason.isEmpty();
  m_profileAction->setProperty("gpuAvailable", gpu);
  m_profileAction->setEnabled(false);
  const QString profileTip =
      gpu ? tr("Run, verify and time every kernel on the GPU through souffle-runner (Ctrl+Alt+P)")
          : tr("Profiling on a GPU is off: %1. Estimated times come from the cost model.")
                .arg(offReason);
  m_profileAction->setToolTip(profileTip);
  m_profileAction->setStatusTip(profileTip);
  m_profileEmuAction = kernels->addAction(tr("Profile on the &emulator"), this,
                                          [this] { startProfile(QStringLiteral("emulator")); });
  m_profileEmuAction->setToolTip(
      tr("Run and verify every kernel in the CPU emulator through souffle-runner; its times are "
         "CPU times, not GPU times"));
  m_profileEmuAction->setEnabled(false);
  m_cancelProfileAction =
      kernels->addAction(tr("Cancel p&rofile"), m_profiler, &ProfileRunner::cancel);
  m_cancelProfileAction->setEnabled(false);
  m_modelActions << m_profileEmuAction;
  connect(m_profiler, &ProfileRunner::progress, this,
          [this](const QString& what) { say(tr("Profiling: %1").arg(what)); });
  connect(m_profiler, &ProfileRunner::finished, this, &MainWindow::onProfiled);
  connect(m_profiler, &ProfileRunner::cancelled, this, [this] {
    m_cancelProfileAction->setEnabled(false);
    say(tr("Profile cancelled"), 5000);
  });
  QAction* import = kernels->addAction(tr("&Import a profile…"), this, [this] { importProfile(); });
  import->setShortcut(QKeySequence(tr("Ctrl+I")));
  import->setStatusTip(
      tr("Measured times from another tool on the graph: a CSV of name and time, "
         "Nsight Compute's CSV export, or a PyTorch profiler trace"));
  m_modelActions << import;
  kernels->addSeparator();
  kernels->addAction(m_codeDock->toggleViewAction());
  kernels->addAction(m_importedDock->toggleViewAction());
  kernels->addAction(m_chartsDock->toggleViewAction());
  m_codeDock->toggleViewAction()->setShortcut(QKeySequence(tr("Alt+C")));
  m_chartsDock->toggleViewAction()->setShortcut(QKeySequence(tr("Alt+G")));
  m_compileAction->setEnabled(false);
  m_modelActions << m_compileAction;
  if (gpu) m_modelActions << m_profileAction;
  if (auto* bar = findChild<QToolBar*>(QStringLiteral("planToolBar"))) {
    bar->addSeparator();
    bar->addAction(m_compileAction);
    bar->addAction(m_cancelCompileAction);
    bar->addAction(m_profileAction);
  }
  if (!gpu) say(tr("Profiling on a GPU is off: %1").arg(offReason), 8000);

  connect(m_compiler, &CompileRunner::progress, this,
          [this](int done, int total, const QString& current) {
            m_progress->setRange(0, std::max(1, total));
            m_progress->setValue(done);
            m_progress->setVisible(true);
            say(current.isEmpty()
                    ? tr("Compiling with NVRTC… %1 of %2 kernels").arg(done).arg(total)
                    : tr("Compiling with NVRTC: %1, %2 of %3 kernels done")
                          .arg(current)
                          .arg(done)
                          .arg(total));
          });
  connect(m_compiler, &CompileRunner::finished, this, &MainWindow::onCompiled);
  connect(m_compiler, &CompileRunner::cancelled, this, [this] {
    m_cancelCompileAction->setEnabled(false);
    setBusy(false);
    say(tr("Compile cancelled; the kernels compiled so far are kept for the next compile"), 8000);
    emit compiled();
  });

  // The kernel shown in the code and on the roofline follows the kernel table, whoever
  // changed its selection.
  connect(m_partTable->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] {
    const QModelIndexList rows = m_partTable->selectionModel()->selectedRows();
    if (rows.isEmpty() || !m_plan) return;
    const int k = m_partProxy->mapToSource(rows.front()).row();
    m_code->showPartition(k);
    m_charts->setCurrentPartition(k);
  });
  // A node selected in the graph: its kernel's code, its lines highlighted.
  connect(m_graph, &GraphPanel::boxSelected, this, [this](int box) {
    const SceneGraph* g = m_graph->scene()->graph();
    if (m_codeSyncing || !g || !m_plan || box < 0 || static_cast<size_t>(box) >= g->nodes.size())
      return;
    const auto& ks = m_plan->kernelsOf(g->teLevel);
    if (static_cast<size_t>(box) >= ks.size() || ks[box].empty()) return;
    const SceneNode& n = g->nodes[box];
    m_code->showPartition(ks[box].front());
    m_charts->setCurrentPartition(ks[box].front());
    m_code->highlightNode(n.onnxNode, n.kind == SceneNode::Kind::TeOp ? n.subtitle : QString());
  });
  connect(m_code, &CodePanel::nodesActivated, this, &MainWindow::selectNodesFromCode);
  connect(m_charts, &ChartsPanel::partitionClicked, this, [this](int k) {
    const QModelIndex idx = m_partProxy->mapFromSource(m_partModel->index(k, 0));
    if (!idx.isValid()) return;
    m_partDock->raise();
    m_partTable->selectionModel()->select(
        idx, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    m_partTable->scrollTo(idx);
  });
}

void MainWindow::selectNodesFromCode(const QStringList& nodes, const QStringList& tes) {
  const SceneGraph* g = m_graph->scene()->graph();
  if (!g) return;
  std::vector<int> boxes;
  for (size_t i = 0; i < g->nodes.size(); ++i) {
    const SceneNode& n = g->nodes[i];
    const bool hit =
        g->teLevel ? n.kind == SceneNode::Kind::TeOp &&
                         (tes.contains(n.subtitle) || (tes.isEmpty() && nodes.contains(n.onnxNode)))
                   : n.kind == SceneNode::Kind::Op && nodes.contains(n.onnxNode);
    if (hit) boxes.push_back(static_cast<int>(i));
  }
  if (boxes.empty()) return;
  m_codeSyncing = true;
  m_graph->scene()->selectBoxes(boxes);
  m_graph->view()->reveal(boxes.front());
  m_codeSyncing = false;
}

void MainWindow::compileKernels() {
  if (!m_plan) return;
  m_compiler->start(m_plan);
  m_cancelCompileAction->setEnabled(true);
  const int n = static_cast<int>(m_plan->plan->partitions.size());
  m_progress->setRange(0, n);
  m_progress->setValue(0);
  setBusy(true, tr("Compiling %1 kernel%2 with NVRTC for sm_80 and sm_90…")
                    .arg(n)
                    .arg(n == 1 ? QString() : QStringLiteral("s")));
}

void MainWindow::cancelCompile() {
  m_compiler->cancel();
}

void MainWindow::onCompiled(CompileDataPtr data) {
  const bool quiet = data && data->cachedOnly;  // figures carried over a new plan, unasked
  if (!quiet) {
    m_cancelCompileAction->setEnabled(false);
    setBusy(false);
  }
  if (!data || data->plan != m_plan) {  // compiled a plan no longer on screen
    if (!quiet) emit compiled();
    return;
  }
  m_compile = data;
  m_partModel->setCompile(data);
  m_charts->setCompile(data);
  if (quiet) return;
  m_chartsDock->show();
  // The first failure, with the NVRTC log and the kernel, in the problems panel.
  LoadError e;
  e.title = tr("Compile failed");
  e.file = m_lastPath;
  if (!data->error.isEmpty()) {
    e.reason = tr("the kernels could not be built: %1").arg(data->error);
  } else {
    for (size_t i = 0; i < data->kernels.size() && e.reason.isEmpty(); ++i)
      for (const ArchCompile& a : data->kernels[i].archs) {
        if (a.ok) continue;
        const plan::Partition& p = m_plan->plan->partitions[i];
        e.node = tr("K%1 (%2) for %3").arg(p.id).arg(data->kernels[i].name, a.arch);
        QString log = a.log.trimmed().isEmpty() ? a.error : a.log.trimmed();
        if (log.size() > 4000) log = log.left(4000) + tr(" …");
        e.reason = tr("NVRTC could not compile the kernel (%1 of %2 compiles failed):\n%3")
                       .arg(data->failures)
                       .arg(data->kernels.size() * static_cast<size_t>(data->archs.size()))
                       .arg(log);
        const QModelIndex idx = m_partProxy->mapFromSource(m_partModel->index(int(i), 0));
        m_partTable->selectionModel()->select(
            idx, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
        m_code->setCurrentTab(CodePanel::CudaTab);
        break;
      }
  }
  // The summary, where the user pressed the button and in the status bar.
  int maxRegs = 0;
  qint64 spills = 0;
  for (const KernelCompile& k : data->kernels)
    for (const ArchCompile& a : k.archs) {
      maxRegs = std::max(maxRegs, a.registers);
      spills += a.spillBytes;
    }
  QString summary =
      data->failures > 0
          ? tr("Compile: %1 of %2 compiles failed (Problems panel)")
                .arg(data->failures)
                .arg(data->kernels.size() * static_cast<size_t>(data->archs.size()))
          : tr("Compiled %1 kernel%2 for %3 in %4 s: up to %5 registers, %6 spilled")
                .arg(data->compiled + data->reused)
                .arg(data->compiled + data->reused == 1 ? QString() : QStringLiteral("s"))
                .arg(data->archs.join(QStringLiteral(" and ")))
                .arg(data->ms / 1000, 0, 'f', 1)
                .arg(maxRegs)
                .arg(compactBytes(static_cast<double>(spills)));
  if (data->reused > 0)
    summary += tr(" (%1 compiled now, %2 unchanged since their last compile)")
                   .arg(data->compiled)
                   .arg(data->reused);
  m_lastCompileSummary = summary;
  if (!e.reason.isEmpty()) {
    m_error->showError(e);
    m_errorDock->show();
    m_errorDock->raise();
  }
  say(summary, 15000);
  if (QWidget* button = m_planToolBar ? m_planToolBar->widgetForAction(m_compileAction) : nullptr;
      button && button->isVisible())
    QToolTip::showText(button->mapToGlobal(QPoint(0, button->height())), summary, button);
  emit compiled();
}

void MainWindow::profileKernels() {
  startProfile(QStringLiteral("cuda"));
}

std::vector<std::string> MainWindow::measurements() const {
  std::vector<std::string> out;
  for (const auto& [key, text] : m_measurements) out.push_back(text);
  return out;
}

void MainWindow::setMeasurements(const std::vector<std::string>& reports) {
  m_measurements.clear();
  for (const std::string& t : reports) {
    try {
      nlohmann::json j = nlohmann::json::parse(t);
      m_measurements[j.value("plan_key", std::string())] = t;
    } catch (const std::exception&) {
    }
  }
}

void MainWindow::startProfile(const QString& backend) {
  if (!m_plan) return;
  m_cancelProfileAction->setEnabled(true);
  say(tr("Profiling %1 kernels on the %2…")
          .arg(m_plan->plan->kernels())
          .arg(backend == QLatin1String("cuda") ? tr("GPU") : tr("emulator")));
  m_profiler->start(m_plan, backend);
}

void MainWindow::onProfiled(ProfileDataPtr data) {
  m_cancelProfileAction->setEnabled(false);
  if (!data) return;
  const ProfileReport& r = data->report;
  if (!r.error.empty()) {
    // The runner's failure (a dead or hung runner, a faulting kernel, a mismatch) in the
    // problems panel with the kernel named; the window and the user's edits stay as they are.
    LoadError e;
    e.title = tr("Profiling failed");
    e.file = m_lastPath;
    e.node = r.error_kernel.empty() ? QString() : QString::fromStdString(r.error_kernel);
    e.reason = tr("profiling on %1 failed: %2")
                   .arg(QString::fromStdString(r.backend), QString::fromStdString(r.error));
    showError(e);
  }
  if (data->plan != m_plan) return;  // measured a plan no longer on screen
  if (r.kernels.empty()) return;
  m_profile = data;
  m_measurements[r.plan_key] = profile_report_json(r).dump();
  m_project->touch();
  m_partModel->setProfile(data);
  m_charts->setProfile(data);
  m_chartsDock->show();
  const QString measured = r.gpu_time()
                               ? tr("%1 µs").arg(r.kernels_us, 0, 'f', 1)
                               : tr("%1 ms of CPU time").arg(r.kernels_us / 1000, 0, 'f', 1);
  say(tr("Profiled %1 kernels, %2: %3 (estimated %4 µs)%5")
          .arg(r.kernels.size())
          .arg(data->label(), measured)
          .arg(r.est_total_us, 0, 'f', 1)
          .arg(r.verified ? tr(", outputs verified") : QString()),
      15000);
}

void MainWindow::createExplorerViews() {
  // The strategies side by side, tabbed with the kernel table.
  m_strategyModel = new StrategyTableModel(this);
  m_strategyTable = new QTableView(this);
  m_strategyTable->setModel(m_strategyModel);
  m_strategyTable->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_strategyTable->setSelectionMode(QAbstractItemView::SingleSelection);
  m_strategyTable->verticalHeader()->hide();
  m_strategyTable->horizontalHeader()->setStretchLastSection(true);
  m_strategyTable->setAlternatingRowColors(true);
  m_strategyTable->setWordWrap(false);
  const int digit = m_strategyTable->fontMetrics().horizontalAdvance(QLatin1Char('0'));
  const int widths[] = {10, 8, 10, 9, 10, 11, 10};
  for (int c = 0; c < StrategyTableModel::ColumnCount; ++c)
    m_strategyTable->setColumnWidth(c, widths[c] * digit + 12);
  addCsvExport(m_strategyTable, tr("strategies"));
  m_strategyDock = new QDockWidget(tr("Strategies"), this);
  m_strategyDock->setObjectName(QStringLiteral("strategiesDock"));
  m_strategyDock->setWidget(m_strategyTable);
  addDockWidget(Qt::BottomDockWidgetArea, m_strategyDock);
  tabifyDockWidget(m_partDock, m_strategyDock);
  m_partDock->raise();
  connect(m_strategyTable->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] {
    const QModelIndexList rows = m_strategyTable->selectionModel()->selectedRows();
    if (rows.isEmpty()) return;
    const QString name = m_strategyModel->strategyAt(rows.front().row());
    if (!name.isEmpty() && name != strategy()) setStrategy(name);
  });
  connect(m_strategyDock, &QDockWidget::visibilityChanged, this, [this](bool on) {
    m_strategyDock->setProperty("onScreen", on);
    if (on) refreshExplorerViews();
  });

  // The step-through teaching mode, tabbed with the TE program.
  m_steps = new StepThroughPanel(this);
  m_stepsDock = new QDockWidget(tr("Step-through"), this);
  m_stepsDock->setObjectName(QStringLiteral("stepThroughDock"));
  m_stepsDock->setWidget(m_steps);
  addDockWidget(Qt::BottomDockWidgetArea, m_stepsDock);
  tabifyDockWidget(m_teDock, m_stepsDock);
  m_teDock->raise();
  m_stepsDock->hide();
  connect(m_stepsDock, &QDockWidget::visibilityChanged, this, [this](bool on) {
    if (on)
      refreshExplorerViews();
    else
      m_graph->highlightNodes({});
  });
  connect(m_steps, &StepThroughPanel::stepShown, this,
          [this](int, const QStringList& nodes) { m_graph->highlightNodes(nodes); });
  addAction(m_steps->previousAction());
  addAction(m_steps->nextAction());

  QMenu* view = m_viewMenu;
  view->addSeparator();
  QAction* clusters = view->addAction(tr("Kernel &clusters"));
  clusters->setCheckable(true);
  clusters->setChecked(true);
  clusters->setShortcut(QKeySequence(tr("Ctrl+Shift+K")));
  connect(clusters, &QAction::toggled, m_graph, &GraphPanel::setClustersVisible);
  QAction* collapseAll =
      view->addAction(tr("C&ollapse all kernels"), m_graph, &GraphPanel::collapseAll);
  collapseAll->setShortcut(QKeySequence(tr("Ctrl+Alt+C")));
  QAction* expandAll = view->addAction(tr("E&xpand all kernels"), m_graph, &GraphPanel::expandAll);
  expandAll->setShortcut(QKeySequence(tr("Ctrl+Alt+E")));
  QAction* toggle = view->addAction(tr("Collapse/expand the selected &kernel"), this, [this] {
    m_graph->toggleBox(m_graph->scene()->selectedBox());
  });
  toggle->setShortcut(QKeySequence(tr("Ctrl+Alt+K")));
  toggle->setToolTip(tr("Double-click a box or a kernel outline does the same"));
  view->addSeparator();
  QAction* steps = m_stepsDock->toggleViewAction();
  steps->setText(tr("&Step-through mode"));
  steps->setShortcut(QKeySequence(Qt::Key_F6));
  view->addAction(steps);
  view->addAction(m_steps->previousAction());
  view->addAction(m_steps->nextAction());
  QAction* strategies = m_strategyDock->toggleViewAction();
  strategies->setText(tr("Strategies side by side"));
  strategies->setShortcut(QKeySequence(tr("Ctrl+Alt+S")));
  view->addAction(strategies);
  for (QAction* a : {collapseAll, expandAll, toggle}) {
    a->setEnabled(false);
    m_modelActions << a;
  }
}

void MainWindow::refreshExplorerViews() {
  if (!m_data) {
    m_strategyKey.clear();
    m_strategyModel->clear();
    m_steps->clear();
    return;
  }
  m_strategyModel->setCurrentStrategy(strategy());
  // Only what is on screen is planned: three plans of a big model are not free.
  const QString key =
      QString::number(reinterpret_cast<quintptr>(m_data.get())) + gpu() + precision();
  if (m_strategyDock->isVisible() && m_strategyDock->property("onScreen").toBool() &&
      key != m_strategyKey) {
    m_strategyKey = key;
    m_strategyModel->start(m_data, gpu(), precisionValue());
  }
  const QString path = QString::fromStdString(m_data->model->path);
  // The step-through follows the plan on screen: its precision and decisions, as compile.
  const plan::Decisions& decisions = m_editor->decisions();
  if (m_stepsDock->isVisible() &&
      m_steps->runKey() != StepThroughPanel::keyOf(path, strategy(), gpu(), precision(), decisions))
    m_steps->start(path, strategy(), gpu(), precision(), decisions);
}

}  // namespace souffle::views
