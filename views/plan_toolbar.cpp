#include "views/plan_toolbar.h"

#include <QComboBox>
#include <QFileDialog>
#include <QLabel>
#include <QMenu>
#include <QMessageBox>

#include "core/gpu/spec.h"
#include "core/support/error.h"
#include "views/plan_runner.h"

namespace souffle::views {

PlanToolBar::PlanToolBar(QWidget* parent) : QToolBar(tr("Plan"), parent) {
  setObjectName(QStringLiteral("planToolBar"));
  setMovable(false);
  auto* sl = new QLabel(tr(" Strategy "), this);
  m_strategy = new QComboBox(this);
  for (plan::Strategy st : plan::every_strategy())
    m_strategy->addItem(QString::fromLatin1(plan::strategy_name(st)), static_cast<int>(st));
  m_strategy->setCurrentText(QStringLiteral("souffle"));
  m_strategy->setToolTip(tr("Fusion strategy (Ctrl+1 … Ctrl+4)"));
  auto* gl = new QLabel(tr("  GPU "), this);
  m_gpu = new QComboBox(this);
  for (const gpu::GpuSpec& g : gpu::builtin_gpu_specs())
    m_gpu->addItem(QString::fromStdString(g.name));
  const int a100 = m_gpu->findText(QStringLiteral("A100"), Qt::MatchStartsWith);
  if (a100 >= 0) m_gpu->setCurrentIndex(a100);
  m_gpu->setToolTip(tr("GPU whose specification the cost model uses"));
  auto* pl = new QLabel(tr("  Precision "), this);
  m_precision = new QComboBox(this);
  for (gpu::Precision p :
       {gpu::Precision::FP32, gpu::Precision::TF32, gpu::Precision::FP16, gpu::Precision::BF16})
    m_precision->addItem(QString::fromLatin1(gpu::precision_name(p)), static_cast<int>(p));
  m_precision->setToolTip(
      tr("Compute type of the GEMM-like kernels (tf32/fp16/bf16: tensor cores): the plan, its "
         "prices, the code, compile and the step-through use it; a project saves it"));
  auto* yl = new QLabel(tr("  Sync "), this);
  m_sync = new QComboBox(this);
  for (SyncMode m : {SyncMode::Grid, SyncMode::Auto, SyncMode::Flags})
    m_sync->addItem(QString::fromLatin1(sync_mode_name(m)), static_cast<int>(m));
  m_sync->setToolTip(
      tr("What orders a stage after stores other blocks made: grid barriers (Souffle's), auto "
         "(per-tile flags where the cost model prices them cheaper) or flags (wherever "
         "proven); the plan, its prices, the code and compile use it; a project saves it"));
  auto* cl = new QLabel(tr("  Colour by "), this);
  m_color = new QComboBox(this);
  for (HeatMetric m : heatMetrics()) m_color->addItem(heatMetricName(m), static_cast<int>(m));
  m_color->setToolTip(
      tr("Colour the boxes by op type, or as a heat map of a metric (with a legend)"));
  for (QWidget* w : std::initializer_list<QWidget*>{sl, m_strategy, gl, m_gpu, pl, m_precision, yl,
                                                    m_sync, cl, m_color})
    addWidget(w);
  connect(m_color, &QComboBox::currentIndexChanged, this, [this](int i) {
    emit heatMetricChosen(static_cast<HeatMetric>(m_color->itemData(i).toInt()));
  });
  for (QComboBox* box : {m_strategy, m_gpu, m_precision, m_sync})
    connect(box, &QComboBox::currentTextChanged, this, &PlanToolBar::settingsChanged);
}

QString PlanToolBar::strategy() const {
  return m_strategy->currentText();
}

QString PlanToolBar::gpu() const {
  return m_gpu->currentText();
}

QString PlanToolBar::precision() const {
  return m_precision->currentText();
}

plan::Strategy PlanToolBar::strategyValue() const {
  return static_cast<plan::Strategy>(m_strategy->currentData().toInt());
}

gpu::Precision PlanToolBar::precisionValue() const {
  return static_cast<gpu::Precision>(m_precision->currentData().toInt());
}

QString PlanToolBar::sync() const {
  return m_sync->currentText();
}

SyncMode PlanToolBar::syncValue() const {
  return static_cast<SyncMode>(m_sync->currentData().toInt());
}

void PlanToolBar::setStrategy(const QString& strategy) {
  m_strategy->setCurrentText(strategy);
}

void PlanToolBar::setStrategy(plan::Strategy strategy) {
  m_strategy->setCurrentIndex(m_strategy->findData(static_cast<int>(strategy)));
}

void PlanToolBar::setPrecision(gpu::Precision precision) {
  m_precision->setCurrentIndex(m_precision->findData(static_cast<int>(precision)));
}

void PlanToolBar::setSync(SyncMode sync) {
  m_sync->setCurrentIndex(m_sync->findData(static_cast<int>(sync)));
}

void PlanToolBar::setGpu(const QString& gpu) {
  int i = m_gpu->findText(gpu, Qt::MatchFixedString);
  if (i < 0) i = m_gpu->findText(gpu, Qt::MatchStartsWith);
  if (i >= 0) m_gpu->setCurrentIndex(i);
}

void PlanToolBar::setPrecision(const QString& precision) {
  const int i = m_precision->findText(precision.toLower());
  if (i >= 0) m_precision->setCurrentIndex(i);
}

void PlanToolBar::setSync(const QString& sync) {
  const int i = m_sync->findText(sync.toLower());
  if (i >= 0) m_sync->setCurrentIndex(i);
}

void PlanToolBar::showPlan(const PlanData& plan) {
  const QSignalBlocker bs(m_strategy), bg(m_gpu), bp(m_precision), by(m_sync);
  m_strategy->setCurrentText(plan.strategy);
  m_gpu->setCurrentText(plan.gpu);
  m_precision->setCurrentIndex(m_precision->findData(static_cast<int>(plan.plan->precision)));
  m_sync->setCurrentIndex(m_sync->findData(static_cast<int>(plan.plan->sync)));
}

void PlanToolBar::setHeatMetric(HeatMetric metric) {
  const int i = m_color->findData(static_cast<int>(metric));
  if (i >= 0 && m_color->currentIndex() != i) m_color->setCurrentIndex(i);
}

void PlanToolBar::fillMenu(QMenu* menu) {
  int key = 1;
  for (plan::Strategy st : plan::every_strategy()) {
    const QString name = QString::fromLatin1(plan::strategy_name(st));
    QAction* a =
        menu->addAction(tr("Strategy: %1").arg(name), this, [this, st] { setStrategy(st); });
    a->setShortcut(QKeySequence(QStringLiteral("Ctrl+%1").arg(key++)));
  }
  menu->addSeparator();
  menu->addAction(tr("Load &calibration…"), this, [this] {
    const QString file = QFileDialog::getOpenFileName(
        window(), tr("Calibration file (souffle-cli calibrate --out FILE)"), QString(),
        tr("Calibration (*.json);;All files (*)"));
    if (file.isEmpty()) return;
    QString error;
    if (!loadCalibration(file, &error))
      QMessageBox::warning(window(), tr("Calibration not loaded"), error);
  });
  menu->addAction(tr("Use the GPU spec's constants"), this, [this] { clearCalibration(); });
}

bool PlanToolBar::loadCalibration(const QString& file, QString* error) {
  try {
    PlanRunner::setCalibration(gpu::load_calibration(file.toStdString()));
  } catch (const UserError& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
  emit settingsChanged();
  return true;
}

void PlanToolBar::clearCalibration() {
  PlanRunner::setCalibration(std::nullopt);
  emit settingsChanged();
}

}  // namespace souffle::views
