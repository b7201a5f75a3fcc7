#include "views/table_model.h"

#include <QAbstractItemView>
#include <QAction>
#include <QFileDialog>
#include <QSaveFile>
#include <QStringList>

namespace souffle::views {

int TableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : rows();
}

int TableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : columns();
}

QVariant TableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid() || index.parent().isValid() || index.row() >= rows() ||
      index.column() >= columns())
    return {};
  QVariant v = cell(index.row(), index.column(), role);
  if (v.isValid()) return v;
  if (role == SortRole) return cell(index.row(), index.column(), Qt::DisplayRole);
  if (role == Qt::TextAlignmentRole) {
    const QVariant sort = cell(index.row(), index.column(), SortRole);
    const bool number =
        sort.isValid() && sort.canConvert<double>() && sort.typeId() != QMetaType::QString;
    return number ? QVariant(Qt::AlignRight | Qt::AlignVCenter)
                  : QVariant(Qt::AlignLeft | Qt::AlignVCenter);
  }
  return {};
}

QVariant TableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || section < 0 || section >= columns()) return {};
  if (role == Qt::DisplayRole) return header(section);
  if (role == Qt::ToolTipRole) {
    const QString tip = headerTip(section);
    return tip.isEmpty() ? QVariant() : QVariant(tip);
  }
  return {};
}

void TableModel::columnChanged(int column) {
  if (rows() > 0) emit dataChanged(index(0, column), index(rows() - 1, column));
}

namespace {

QString quoted(QString s) {
  if (s.contains(QLatin1Char(',')) || s.contains(QLatin1Char('"')) ||
      s.contains(QLatin1Char('\n'))) {
    s.replace(QLatin1Char('"'), QStringLiteral("\"\""));
    return QLatin1Char('"') + s + QLatin1Char('"');
  }
  return s;
}

}  // namespace

QString tableCsv(const QAbstractItemModel& m, int sortRole) {
  QStringList lines;
  QStringList header;
  for (int c = 0; c < m.columnCount(); ++c)
    header << quoted(m.headerData(c, Qt::Horizontal, Qt::DisplayRole).toString());
  lines << header.join(QLatin1Char(','));
  for (int r = 0; r < m.rowCount(); ++r) {
    QStringList cells;
    for (int c = 0; c < m.columnCount(); ++c) {
      const QModelIndex i = m.index(r, c);
      const QVariant sort = m.data(i, sortRole);
      const bool number =
          sort.isValid() && sort.typeId() != QMetaType::QString && sort.canConvert<double>();
      cells << quoted(number ? QString::number(sort.toDouble(), 'g', 10)
                             : m.data(i, Qt::DisplayRole).toString());
    }
    lines << cells.join(QLatin1Char(','));
  }
  return lines.join(QLatin1Char('\n')) + QLatin1Char('\n');
}

bool exportCsv(QAbstractItemView* view, const QString& name, QString path) {
  if (!view || !view->model()) return false;
  if (path.isEmpty())
    path = QFileDialog::getSaveFileName(
        view, QObject::tr("Export %1 as CSV").arg(name),
        name.toLower().replace(QLatin1Char(' '), QLatin1Char('-')) + QStringLiteral(".csv"),
        QObject::tr("CSV (*.csv)"));
  if (path.isEmpty()) return false;
  const QByteArray bytes = tableCsv(*view->model()).toUtf8();
  QSaveFile f(path);
  return f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size() && f.commit();
}

QAction* addCsvExport(QAbstractItemView* view, const QString& name) {
  auto* a = new QAction(QObject::tr("Export as CSV…"), view);
  QObject::connect(a, &QAction::triggered, view, [view, name] { exportCsv(view, name); });
  if (view->contextMenuPolicy() != Qt::ActionsContextMenu)
    view->setContextMenuPolicy(Qt::ActionsContextMenu);
  view->addAction(a);
  return a;
}

}  // namespace souffle::views
