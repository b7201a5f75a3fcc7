#include "views/status_line.h"

#include <QEvent>
#include <QFileInfo>
#include <QLabel>
#include <QMessageBox>
#include <QProgressBar>
#include <QStatusBar>
#include <QToolButton>
#include <algorithm>

#include "views/plan_runner.h"

namespace souffle::views {

StatusLine::StatusLine(QStatusBar* bar)
    : QObject(bar),
      m_bar(bar),
      m_model(new QLabel(bar)),
      m_nodes(new QLabel(bar)),
      m_tes(new QLabel(bar)),
      m_time(new QLabel(bar)),
      m_plan(new QLabel(bar)),
      m_layout(new QLabel(bar)),
      m_progress(new QProgressBar(bar)),
      m_cancel(new QToolButton(bar)) {
  m_plan->setObjectName(QStringLiteral("planLabel"));
  m_progress->setRange(0, 0);  // the core pipeline reports no fractions: a busy indicator
  m_progress->setMaximumWidth(160);
  m_progress->setMaximumHeight(16);
  m_progress->setTextVisible(false);
  m_cancel->setText(tr("Cancel"));
  m_cancel->setToolTip(tr("Cancel what runs: loading, planning, compiling (Esc)"));
  m_cancel->setAutoRaise(true);
  connect(m_cancel, &QToolButton::clicked, this, &StatusLine::cancelRequested);
  // A message too long for the bar is elided in the middle; a click shows all of it.
  bar->installEventFilter(this);
  bar->addWidget(m_model);
  for (QLabel* l : {m_nodes, m_tes, m_plan, m_time, m_layout}) bar->addPermanentWidget(l);
  bar->addPermanentWidget(m_progress);
  bar->addPermanentWidget(m_cancel);
}

void StatusLine::say(const QString& text, int ms) {
  m_message = text;
  int room = m_bar->width() - 40;
  for (QWidget* w : m_bar->findChildren<QWidget*>(QString(), Qt::FindDirectChildrenOnly))
    if (w->isVisible() && w != m_bar) room -= w->width();
  room = std::max(room, 160);
  const QString shown = m_bar->fontMetrics().elidedText(text, Qt::ElideMiddle, room);
  m_bar->setToolTip(shown == text ? QString() : text);
  m_bar->showMessage(shown, ms);
}

void StatusLine::clearMessage() {
  m_bar->clearMessage();
}

bool StatusLine::eventFilter(QObject* watched, QEvent* event) {
  if (watched == m_bar && event->type() == QEvent::MouseButtonRelease &&
      !m_bar->currentMessage().isEmpty() && !m_bar->toolTip().isEmpty()) {
    QWidget* window = m_bar->window();
    QMessageBox box(QMessageBox::Information, window->windowTitle(), m_message, QMessageBox::Ok,
                    window);
    box.setTextInteractionFlags(Qt::TextSelectableByMouse);
    box.exec();
    return true;
  }
  return QObject::eventFilter(watched, event);
}

void StatusLine::showModel(const LoadedModel* m, bool teLevel) {
  if (!m) {
    m_model->setText(tr("No model"));
    for (QLabel* l : {m_nodes, m_tes, m_plan, m_time, m_layout}) l->clear();
    return;
  }
  m_model->setText(QFileInfo(QString::fromStdString(m->path)).fileName() +
                   (teLevel ? tr("  ·  TE level") : tr("  ·  op level")));
  m_nodes->setText(
      tr("%1 ONNX nodes → %2 after folding").arg(m->onnx_nodes).arg(m->graph.nodes.size()));
  m_tes->setText(tr("%1 TEs").arg(m->program.ops.size()));
}

void StatusLine::showPlan(const PlanData* plan, bool planning, const QString& strategy,
                          const QString& gpu) {
  if (planning) {
    m_plan->setText(tr("%1 · %2 · planning…").arg(strategy, gpu));
  } else if (plan) {
    // Which constants priced it: the GPU spec's, or a calibration measured on a device.
    const QString constants = QString::fromStdString(plan->plan->cost_constants);
    m_plan->setToolTip(tr("Estimates priced with %1").arg(constants));
    m_plan->setText(
        tr("<b>%1</b> · %2 · %6 · <b>%3 kernel%4</b> · est. %5 µs%7")
            .arg(plan->strategy, plan->gpu)
            .arg(plan->plan->kernels())
            .arg(plan->plan->kernels() == 1 ? QString() : QStringLiteral("s"))
            .arg(plan->plan->est_time_us, 0, 'f', 1)
            .arg(QLatin1String(gpu::precision_name(plan->plan->precision)) +
                 (plan->plan->sync == SyncMode::Grid
                      ? QString()
                      : tr(" · sync %1").arg(QLatin1String(sync_mode_name(plan->plan->sync)))))
            .arg(constants.startsWith(QLatin1String("calibration")) ? tr(" (calibrated)")
                                                                    : QString()));
  } else {
    m_plan->clear();
    m_plan->setToolTip(QString());
  }
}

void StatusLine::setLoadTime(double ms) {
  m_time->setText(tr("loaded in %1 ms").arg(ms, 0, 'f', 0));
}

void StatusLine::setLayoutInfo(const QString& text) {
  m_layout->setText(text);
}

void StatusLine::setActivity(bool busy, bool determinate, bool cancellable) {
  m_progress->setVisible(busy);
  if (!determinate) m_progress->setRange(0, 0);
  m_cancel->setVisible(cancellable);
}

void StatusLine::setProgress(int done, int total) {
  m_progress->setRange(0, std::max(1, total));
  m_progress->setValue(done);
  m_progress->setVisible(true);
}

}  // namespace souffle::views
