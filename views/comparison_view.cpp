#include "views/comparison_view.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrent>

#include "views/comparison_model.h"

namespace souffle::views {

namespace {

struct Side {
  plan::Strategy strategy;
  bool withEdits;
};

std::vector<Side> sides() {
  std::vector<Side> out;
  for (plan::Strategy s : plan::every_strategy()) out.push_back({s, false});
  for (plan::Strategy s : plan::every_strategy()) out.push_back({s, true});
  return out;
}

QString labelOf(const Side& s) {
  const QString name = QString::fromLatin1(plan::strategy_name(s.strategy));
  return s.withEdits ? QObject::tr("%1 + edits").arg(name) : name;
}

}  // namespace

ComparisonView::ComparisonView(QWidget* parent)
    : QWidget(parent),
      m_model(new ComparisonModel(this)),
      m_proxy(new QSortFilterProxyModel(this)),
      m_watcher(new QFutureWatcher<PlanPair>(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  auto* top = new QHBoxLayout();
  m_a = new QComboBox(this);
  m_b = new QComboBox(this);
  for (const Side& s : sides()) {
    m_a->addItem(labelOf(s));
    m_b->addItem(labelOf(s));
  }
  m_a->setCurrentIndex(sideIndex(QStringLiteral("rules"), false));
  m_b->setCurrentIndex(sideIndex(QStringLiteral("souffle"), true));
  m_a->setToolTip(tr("Plan A"));
  m_b->setToolTip(tr("Plan B"));
  top->addWidget(new QLabel(tr("A"), this));
  top->addWidget(m_a);
  top->addSpacing(8);
  top->addWidget(new QLabel(tr("B"), this));
  top->addWidget(m_b);
  top->addSpacing(12);
  m_legend = new QLabel(this);
  m_legend->setWordWrap(true);
  top->addWidget(m_legend, 1);
  layout->addLayout(top);

  auto* body = new QHBoxLayout();
  m_proxy->setSourceModel(m_model);
  m_proxy->setSortRole(ComparisonModel::SortRole);
  m_table = new QTableView(this);
  m_table->setModel(m_proxy);
  m_table->setSortingEnabled(true);
  m_table->sortByColumn(-1, Qt::AscendingOrder);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->verticalHeader()->hide();
  m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 6);
  m_table->horizontalHeader()->setStretchLastSection(true);
  m_table->setWordWrap(false);
  m_table->setTextElideMode(Qt::ElideMiddle);
  const int digit = fontMetrics().horizontalAdvance(QLatin1Char('0'));
  const int widths[] = {26, 11, 8, 7, 9, 11, 8, 7, 9, 16};
  for (int c = 0; c < ComparisonModel::ColumnCount; ++c)
    m_table->setColumnWidth(c, widths[c] * digit + 12);
  body->addWidget(m_table, 1);
  m_totals = new QLabel(this);
  m_totals->setAlignment(Qt::AlignTop | Qt::AlignLeft);
  m_totals->setTextFormat(Qt::RichText);
  m_totals->setMinimumWidth(30 * digit);
  body->addWidget(m_totals);
  layout->addLayout(body, 1);

  auto restart = [this] {
    m_chosen = true;  // the user's sides stay until they choose others
    start();
  };
  connect(m_a, &QComboBox::currentIndexChanged, this, restart);
  connect(m_b, &QComboBox::currentIndexChanged, this, restart);
  connect(m_watcher, &QFutureWatcher<PlanPair>::finished, this, [this] {
    if (m_watcher->property("generation").toULongLong() != m_generation || !m_busy) return;
    m_busy = false;
    const PlanPair r = m_watcher->result();
    if (!r.first.ok() || !r.second.ok()) {
      const QString why = r.first.ok() ? r.second.error : r.first.error;
      m_legend->setText(tr("Cannot compare: %1").arg(why));
      emit failed(why);
      return;
    }
    m_model->setPlans(r.first.data, r.second.data, m_a->currentText(), m_b->currentText());
    m_totals->setText(m_model->totalsHtml());
    const int diff = m_model->differingRows();
    m_legend->setText(diff == 0 ? tr("The two plans have the same kernels.")
                                : tr("%1 of %2 rows differ (highlighted): kernels merged, split "
                                     "or only on one side, or different stage or sync counts.")
                                      .arg(diff)
                                      .arg(m_model->rowCount()));
    emit compared();
  });
}

ComparisonView::~ComparisonView() {
  m_watcher->waitForFinished();
}

int ComparisonView::sideCount() const {
  return m_a->count();
}

QString ComparisonView::sideLabel(int index) const {
  return m_a->itemText(index);
}

int ComparisonView::sideIndex(const QString& strategy, bool withEdits) const {
  const std::vector<Side> all = sides();
  for (size_t i = 0; i < all.size(); ++i)
    if (all[i].withEdits == withEdits &&
        strategy == QLatin1String(plan::strategy_name(all[i].strategy)))
      return int(i);
  return -1;
}

void ComparisonView::setSides(int a, int b) {
  const QSignalBlocker ba(m_a), bb(m_b);
  m_a->setCurrentIndex(a);
  m_b->setCurrentIndex(b);
  m_chosen = true;
  start();
}

QString ComparisonView::totalsText() const {
  return m_totals->text();
}

void ComparisonView::setContext(ModelDataPtr model, const QString& gpu,
                                const plan::Decisions& decisions, const QString& current,
                                gpu::Precision precision) {
  if (!m_chosen && !current.isEmpty()) {
    // Until the user picks sides: the plan on screen before and after its edits, or, without
    // edits, against the other side of the paper's comparison (souffle against rules).
    const QSignalBlocker ba(m_a), bb(m_b);
    const QString other =
        current == QLatin1String("rules") ? QStringLiteral("souffle") : QStringLiteral("rules");
    m_a->setCurrentIndex(decisions.edits.empty() ? sideIndex(other, false)
                                                 : sideIndex(current, false));
    m_b->setCurrentIndex(sideIndex(current, !decisions.edits.empty()));
  }
  if (model == m_data && gpu == m_gpu && decisions == m_decisions && precision == m_precision &&
      m_a->property("shown").toInt() == m_a->currentIndex() &&
      m_b->property("shown").toInt() == m_b->currentIndex())
    return;
  m_data = std::move(model);
  m_gpu = gpu;
  m_decisions = decisions;
  m_precision = precision;
  start();
}

void ComparisonView::start() {
  ++m_generation;
  if (!m_data || m_a->currentIndex() < 0 || m_b->currentIndex() < 0) {
    m_busy = false;
    m_model->setPlans(nullptr, nullptr, {}, {});
    m_totals->clear();
    m_legend->setText(m_data ? QString() : tr("Open a model to compare plans."));
    return;
  }
  const std::vector<Side> all = sides();
  const Side a = all[size_t(m_a->currentIndex())], b = all[size_t(m_b->currentIndex())];
  m_a->setProperty("shown", m_a->currentIndex());
  m_b->setProperty("shown", m_b->currentIndex());
  m_busy = true;
  m_legend->setText(tr("Planning %1 and %2…").arg(m_a->currentText(), m_b->currentText()));
  m_watcher->setProperty("generation", m_generation);
  ModelDataPtr data = m_data;
  const QString gpu = m_gpu;
  const plan::Decisions edits = m_decisions;
  const gpu::Precision precision = m_precision;
  m_watcher->setFuture(QtConcurrent::run([data, gpu, edits, a, b, precision] {
    auto one = [&](const Side& s) {
      return PlanRunner::runWith(data, s.strategy, gpu, s.withEdits ? edits : plan::Decisions{},
                                 nullptr, precision);
    };
    return PlanPair(one(a), one(b));
  }));
}

}  // namespace souffle::views
