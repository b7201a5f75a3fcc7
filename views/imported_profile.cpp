#include "views/imported_profile.h"

#include <QColor>
#include <QFileDialog>
#include <QFileInfo>
#include <QHeaderView>
#include <QLabel>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

#include "core/support/error.h"
#include "views/explorer_session.h"

namespace souffle::views {

bool ExternalProfileData::hasKernels() const {
  for (double us : partitionUs)
    if (us >= 0) return true;
  return false;
}

ExternalProfileDataPtr mapExternalProfile(PlanDataPtr plan,
                                          std::shared_ptr<const ExternalProfile> profile) {
  auto d = std::make_shared<ExternalProfileData>();
  d->plan = plan;
  d->profile = profile;
  if (!profile) return d;
  std::vector<std::string> nodes;
  const plan::FusionPlan* fp = plan && plan->plan ? plan->plan.get() : nullptr;
  if (plan && plan->model)
    for (const graph::Node& n : plan->model->model->graph.nodes) nodes.push_back(n.name);
  d->match = match_external_profile(*profile, nodes, fp);
  for (const auto& [node, us] : d->match.node_us)
    d->nodeUs.insert(QString::fromStdString(node), us);
  if (fp) {
    d->partitionUs.assign(fp->partitions.size(), -1);
    for (size_t i = 0; i < fp->partitions.size(); ++i) {
      auto it = d->match.kernel_us.find(fp->partitions[i].id);
      if (it != d->match.kernel_us.end()) d->partitionUs[i] = it->second;
    }
  }
  const QString format = profile->format == "pytorch-trace"         ? QObject::tr("PyTorch")
                         : profile->format == "nsight-compute"      ? QObject::tr("Nsight Compute")
                         : profile->format == "onnxruntime-profile" ? QObject::tr("ONNX Runtime")
                                                                    : QObject::tr("CSV");
  d->source = QObject::tr("imported: %1 (%2, %3)")
                  .arg(QFileInfo(QString::fromStdString(profile->path)).fileName(), format,
                       QString::fromStdString(profile->time_kind));
  return d;
}

void ImportedProfileModel::setData(ExternalProfileDataPtr data) {
  resetRows([&] { m_data = std::move(data); });
}

int ImportedProfileModel::rows() const {
  return m_data ? static_cast<int>(m_data->match.entries.size()) : 0;
}

QString ImportedProfileModel::header(int column) const {
  switch (column) {
    case NameColumn:
      return tr("Name");
    case KindColumn:
      return tr("Kind");
    case TimeColumn:
      return tr("µs per call");
    case CallsColumn:
      return tr("Calls");
    case MatchColumn:
      return tr("Matched to");
    default:
      return {};
  }
}

QString ImportedProfileModel::headerTip(int column) const {
  if (column == TimeColumn)
    return tr(
        "The median over the calls in the file; a module's self time (its children's "
        "excluded)");
  if (column == MatchColumn)
    return tr(
        "The ONNX nodes, module path or kernel of the plan the entry stands for, or why it "
        "matched nothing");
  return {};
}

QVariant ImportedProfileModel::cell(int row, int column, int role) const {
  const MatchedEntry& m = m_data->match.entries[static_cast<size_t>(row)];
  const ExternalEntry& e = *m.entry;
  const bool matched = m.why.empty();
  if (role == MatchedRole) return matched;
  if (role == Qt::ForegroundRole && !matched && column == MatchColumn)
    return QColor(0xc0, 0x30, 0x30);
  if (role == Qt::ToolTipRole) {
    if (column == NameColumn) return QString::fromStdString(e.name);
    if (column == MatchColumn) {
      if (!matched) return QString::fromStdString(m.why);
      QStringList nodes;
      for (const std::string& n : m.nodes) nodes << QString::fromStdString(n);
      return nodes.join(QLatin1Char('\n'));
    }
    return {};
  }
  const bool sort = role == SortRole;
  if (role != Qt::DisplayRole && !sort) return {};
  switch (column) {
    case NameColumn:
      return QString::fromStdString(e.name);
    case KindColumn:
      return QString::fromStdString(e.kind);
    case TimeColumn:
      return sort ? QVariant(e.time_us) : QVariant(QString::number(e.time_us, 'f', 2));
    case CallsColumn:
      return e.calls;
    case MatchColumn: {
      if (!matched)
        return sort ? QVariant(QStringLiteral("~"))
                    : tr("unmatched: %1").arg(QString::fromStdString(m.why));
      if (m.kernel >= 0) return tr("kernel K%1").arg(m.kernel);
      const QString nodes = tr("%n node(s)", nullptr, static_cast<int>(m.nodes.size()));
      if (!m.module_path.empty())
        return QStringLiteral("%1 (%2)").arg(QString::fromStdString(m.module_path), nodes);
      return m.nodes.size() == 1 ? QString::fromStdString(m.nodes.front()) : nodes;
    }
    default:
      return {};
  }
}

ImportedProfilePanel::ImportedProfilePanel(QWidget* parent)
    : QWidget(parent),
      m_model(new ImportedProfileModel(this)),
      m_proxy(new QSortFilterProxyModel(this)) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  m_summary = new QLabel(tr("Import a profile with File › Import profile… (a CSV of name and "
                            "time, Nsight Compute's CSV, a PyTorch profiler trace or an ONNX "
                            "Runtime profile)."),
                         this);
  m_summary->setWordWrap(true);
  m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
  m_proxy->setSourceModel(m_model);
  m_proxy->setSortRole(TableModel::SortRole);
  m_table = new QTableView(this);
  m_table->setModel(m_proxy);
  m_table->setSortingEnabled(true);
  m_table->sortByColumn(-1, Qt::AscendingOrder);
  m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
  m_table->verticalHeader()->hide();
  m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 6);
  m_table->horizontalHeader()->setStretchLastSection(true);
  m_table->setTextElideMode(Qt::ElideMiddle);
  m_table->setWordWrap(false);
  m_table->setAlternatingRowColors(true);
  const int digit = m_table->fontMetrics().horizontalAdvance(QLatin1Char('0'));
  m_table->setColumnWidth(ImportedProfileModel::NameColumn, 34 * digit);
  m_table->setColumnWidth(ImportedProfileModel::KindColumn, 8 * digit);
  m_table->setColumnWidth(ImportedProfileModel::TimeColumn, 11 * digit);
  m_table->setColumnWidth(ImportedProfileModel::CallsColumn, 6 * digit);
  addCsvExport(m_table, tr("imported profile"));
  layout->addWidget(m_summary);
  layout->addWidget(m_table, 1);
}

void ImportedProfilePanel::attach(ExplorerSession* session) {
  connect(session, &ExplorerSession::importedProfileChanged, this,
          [this, session] { setData(session->importedData()); });
}

void ImportedProfilePanel::setData(ExternalProfileDataPtr data) {
  m_model->setData(data);
  m_summary->setText(data && data->profile ? summary() : QString());
}

bool ImportedProfilePanel::importFile(ExplorerSession* session, const QString& given,
                                      const QString& dir) {
  QString path = given;
  if (path.isEmpty())
    path = QFileDialog::getOpenFileName(
        window(), tr("Import a profile"), dir,
        tr("Profiles (*.csv *.json);;CSV: name,time or Nsight Compute (*.csv);;"
           "PyTorch profiler trace or ONNX Runtime profile (*.json);;All files (*)"));
  if (path.isEmpty()) return false;
  std::shared_ptr<const ExternalProfile> profile;
  try {
    profile = std::make_shared<const ExternalProfile>(read_external_profile(path.toStdString()));
  } catch (const UserError& e) {
    LoadError err;
    err.file = QString::fromStdString(e.file());
    err.node = QString::fromStdString(e.node());
    err.reason = tr("cannot import the profile: %1").arg(QString::fromStdString(e.reason()));
    err.title = tr("The profile could not be imported");  // the model on screen is fine
    session->reportProblem(err);
    session->say(err.message(), 8000);
    return false;
  }
  session->setImportedProfile(std::move(profile));
  return true;
}

QString ImportedProfilePanel::summary() const {
  const ExternalProfileDataPtr d = m_model->profileData();
  if (!d || !d->profile) return {};
  return tr("%1: %2 entries, %3 matched, <b>%4 unmatched</b> (listed below with why). Times: %5.")
      .arg(d->source)
      .arg(d->match.entries.size())
      .arg(d->match.matched)
      .arg(d->match.unmatched)
      .arg(QString::fromStdString(d->profile->time_kind));
}

}  // namespace souffle::views
