#include "views/transforms_panel.h"

#include <QApplication>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPalette>
#include <QPushButton>
#include <QSplitter>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>

#include "views/edit_commands.h"
#include "views/explorer_session.h"

namespace souffle::views {

namespace {

/// A soft tint for refused rows that stays readable on light and dark bases.
QColor refusedTint() {
  const bool dark = qApp->palette().color(QPalette::Base).lightness() < 128;
  return dark ? QColor(110, 40, 40) : QColor(255, 222, 218);
}

QString joinNames(const std::vector<std::string>& names, int max = 3) {
  QStringList out;
  for (size_t i = 0; i < names.size() && int(i) < max; ++i) out << QString::fromStdString(names[i]);
  if (int(names.size()) > max) out << QStringLiteral("+%1").arg(names.size() - size_t(max));
  return out.join(QStringLiteral(", "));
}

void setupTable(QTableView* t) {
  t->setSelectionBehavior(QAbstractItemView::SelectRows);
  t->setSelectionMode(QAbstractItemView::SingleSelection);
  t->verticalHeader()->hide();
  t->verticalHeader()->setDefaultSectionSize(t->fontMetrics().height() + 6);
  t->horizontalHeader()->setStretchLastSection(true);
  t->setWordWrap(false);
  t->setAlternatingRowColors(true);
  t->setTextElideMode(Qt::ElideMiddle);
}

}  // namespace

TransformsModel::TransformsModel(QObject* parent) : TableModel(parent) {}

void TransformsModel::setPlan(PlanDataPtr plan, const plan::Decisions& decisions) {
  resetRows([&] {
    m_plan = std::move(plan);
    m_decisions = decisions;
  });
}

int TransformsModel::rows() const {
  return m_plan ? int(m_plan->plan->transforms.size()) : 0;
}

QVariant TransformsModel::cell(int row, int column, int role) const {
  const plan::TransformSite& s = m_plan->plan->transforms[size_t(row)];
  QString choice;
  for (const plan::Edit& e : m_decisions.edits)
    if ((e.kind == plan::Edit::Kind::Force || e.kind == plan::Edit::Kind::Forbid) && e.a == s.key)
      choice = QString::fromLatin1(plan::edit_kind_name(e.kind));
  if (role == KeyRole) return QString::fromStdString(s.key);
  if (role == Qt::DisplayRole) {
    switch (column) {
      case KindColumn:
        return QString::fromLatin1(plan::transform_kind_name(s.kind));
      case SiteColumn:
        return joinNames(s.ops);
      case StateColumn:
        return s.applied ? tr("applied") : tr("not applied");
      case ChoiceColumn:
        return choice.isEmpty() ? tr("heuristic") : choice;
      case ReasonColumn:
        return QString::fromStdString(s.reason);
      default:
        return {};
    }
  }
  if (role == Qt::ToolTipRole) {
    QStringList ops;
    for (const std::string& op : s.ops) ops << QString::fromStdString(op);
    return tr("<b>%1</b> site <code>%2</code><br>TEs: %3<br>%4")
        .arg(QString::fromLatin1(plan::transform_kind_name(s.kind)), QString::fromStdString(s.key),
             ops.join(QStringLiteral(", ")).toHtmlEscaped(),
             QString::fromStdString(s.reason).toHtmlEscaped());
  }
  if (role == Qt::FontRole && column == ChoiceColumn && !choice.isEmpty()) {
    QFont f;
    f.setBold(true);
    return f;
  }
  return {};
}

QString TransformsModel::header(int column) const {
  switch (column) {
    case KindColumn:
      return tr("Kind");
    case SiteColumn:
      return tr("TEs");
    case StateColumn:
      return tr("State");
    case ChoiceColumn:
      return tr("Choice");
    case ReasonColumn:
      return tr("Reason");
    default:
      return {};
  }
}

EditsModel::EditsModel(QObject* parent) : TableModel(parent) {}

void EditsModel::setState(PlanDataPtr plan, const plan::Decisions& decisions) {
  resetRows([&] { fill(plan, decisions); });
}

void EditsModel::fill(const PlanDataPtr& plan, const plan::Decisions& decisions) {
  m_rows.clear();
  for (const plan::Edit& e : decisions.edits) {
    Row r;
    r.edit = e;
    if (plan) {
      const auto& applied = plan->plan->applied;
      if (std::find(applied.begin(), applied.end(), e) != applied.end()) r.state = 1;
      for (const plan::RefusedEdit& x : plan->plan->refused)
        if (x.edit == e) {
          r.state = 2;
          r.reason = QString::fromStdString(x.reason);
        }
    }
    m_rows.push_back(std::move(r));
  }
}

int EditsModel::refusedCount() const {
  return int(
      std::count_if(m_rows.begin(), m_rows.end(), [](const Row& r) { return r.state == 2; }));
}

QVariant EditsModel::cell(int row, int column, int role) const {
  const Row& r = m_rows[size_t(row)];
  if (role == RefusedRole) return r.state == 2;
  if (role == Qt::DisplayRole || role == Qt::ToolTipRole) {
    switch (column) {
      case EditColumn:
        return QString::fromStdString(plan::describe(r.edit));
      case StateColumn:
        return r.state == 1 ? tr("applied") : r.state == 2 ? tr("refused") : tr("pending");
      case ReasonColumn:
        return r.reason;
      default:
        return {};
    }
  }
  if (role == Qt::BackgroundRole && r.state == 2) return refusedTint();
  return {};
}

QString EditsModel::header(int column) const {
  switch (column) {
    case EditColumn:
      return tr("Edit");
    case StateColumn:
      return tr("State");
    case ReasonColumn:
      return tr("Reason");
    default:
      return {};
  }
}

TransformsPanel::TransformsPanel(DecisionEditor* editor, QWidget* parent)
    : QWidget(parent),
      m_editor(editor),
      m_sites(new TransformsModel(this)),
      m_edits(new EditsModel(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  layout->setSpacing(4);
  auto* buttons = new QHBoxLayout();
  buttons->setContentsMargins(4, 4, 4, 0);
  m_summary = new QLabel(this);
  m_force = new QPushButton(tr("Force"), this);
  m_force->setToolTip(tr("Apply this transformation whenever it is legal"));
  m_forbid = new QPushButton(tr("Forbid"), this);
  m_forbid->setToolTip(tr("Never apply this transformation"));
  m_heuristic = new QPushButton(tr("Heuristic"), this);
  m_heuristic->setToolTip(tr("Let the strategy decide again"));
  buttons->addWidget(m_summary, 1);
  buttons->addWidget(m_force);
  buttons->addWidget(m_forbid);
  buttons->addWidget(m_heuristic);
  layout->addLayout(buttons);

  auto* split = new QSplitter(Qt::Vertical, this);
  m_sitesTable = new QTableView(split);
  m_sitesTable->setModel(m_sites);
  setupTable(m_sitesTable);
  const int digit = fontMetrics().horizontalAdvance(QLatin1Char('0'));
  m_sitesTable->setColumnWidth(TransformsModel::KindColumn, 10 * digit);
  m_sitesTable->setColumnWidth(TransformsModel::SiteColumn, 28 * digit);
  m_sitesTable->setColumnWidth(TransformsModel::StateColumn, 11 * digit);
  m_sitesTable->setColumnWidth(TransformsModel::ChoiceColumn, 10 * digit);
  m_editsTable = new QTableView(split);
  m_editsTable->setModel(m_edits);
  setupTable(m_editsTable);
  m_editsTable->setColumnWidth(EditsModel::EditColumn, 34 * digit);
  m_editsTable->setColumnWidth(EditsModel::StateColumn, 9 * digit);
  split->addWidget(m_sitesTable);
  split->addWidget(m_editsTable);
  split->setStretchFactor(0, 3);
  split->setStretchFactor(1, 2);
  layout->addWidget(split, 1);

  connect(m_force, &QPushButton::clicked, this,
          [this] { chooseForSelected(plan::Edit::Kind::Force, false); });
  connect(m_forbid, &QPushButton::clicked, this,
          [this] { chooseForSelected(plan::Edit::Kind::Forbid, false); });
  connect(m_heuristic, &QPushButton::clicked, this,
          [this] { chooseForSelected(plan::Edit::Kind::Force, true); });
  connect(m_sitesTable->selectionModel(), &QItemSelectionModel::selectionChanged, this,
          &TransformsPanel::updateButtons);
  connect(m_editor, &DecisionEditor::changed, this, &TransformsPanel::refresh);
  refresh();
}

void TransformsPanel::attach(ExplorerSession* session) {
  connect(session, &ExplorerSession::planChanged, this, &TransformsPanel::setPlan);
}

void TransformsPanel::setPlan(PlanDataPtr plan) {
  m_plan = std::move(plan);
  refresh();
}

void TransformsPanel::refresh() {
  // Keep the selected site selected across the model reset.
  QString key;
  const QModelIndexList rows = m_sitesTable->selectionModel()->selectedRows();
  if (!rows.isEmpty()) key = rows.front().data(TransformsModel::KeyRole).toString();
  m_sites->setPlan(m_plan, m_editor->decisions());
  m_edits->setState(m_plan, m_editor->decisions());
  for (int r = 0; r < m_sites->rowCount() && !key.isEmpty(); ++r)
    if (m_sites->index(r, 0).data(TransformsModel::KeyRole).toString() == key) {
      m_sitesTable->selectRow(r);
      break;
    }
  int applied = 0;
  const int sites = m_sites->rowCount();
  if (m_plan)
    for (const plan::TransformSite& s : m_plan->plan->transforms) applied += s.applied ? 1 : 0;
  QString text = m_plan ? tr("%1 of %2 sites applied").arg(applied).arg(sites) : QString();
  const int edits = m_edits->rowCount(), refused = m_edits->refusedCount();
  if (edits > 0) text += tr(" · %1 edit(s), %2 refused").arg(edits).arg(refused);
  m_summary->setText(text);
  updateButtons();
}

void TransformsPanel::updateButtons() {
  const bool any = !m_sitesTable->selectionModel()->selectedRows().isEmpty();
  for (QPushButton* b : {m_force, m_forbid, m_heuristic}) b->setEnabled(any);
}

QString TransformsPanel::selectedSiteKey() const {
  const QModelIndexList rows = m_sitesTable->selectionModel()->selectedRows();
  return rows.isEmpty() ? QString() : rows.front().data(TransformsModel::KeyRole).toString();
}

void TransformsPanel::chooseForSelected(plan::Edit::Kind kind, bool clear) {
  const QString key = selectedSiteKey();
  if (key.isEmpty()) return;
  m_editor->setSiteDecision(key, kind, clear);
}

}  // namespace souffle::views
