/// \file The one item-model base under the explorer's tables: rows of plain values held by the
/// subclass, columns named by a header hook, cells by one data hook per role; sort values are
/// numbers where the cell is one. And CSV export of any table as it is shown (sorted, filtered).
#pragma once

#include <QAbstractTableModel>
#include <QString>

class QAbstractItemView;
class QAction;

namespace souffle::views {

class TableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Role {
    SortRole = Qt::UserRole + 1,  ///< numbers as numbers (a proxy sorts by this role)
    FirstCustomRole,              ///< subclasses number their own roles from here
  };

  explicit TableModel(QObject* parent = nullptr) : QAbstractTableModel(parent) {}

  int rowCount(const QModelIndex& parent = {}) const final;
  int columnCount(const QModelIndex& parent = {}) const final;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const final;
  QVariant headerData(int section, Qt::Orientation orientation,
                      int role = Qt::DisplayRole) const final;

 protected:
  virtual int rows() const = 0;
  virtual int columns() const = 0;
  /// The cell's value for `role` (DisplayRole, SortRole, ToolTipRole, ...). SortRole falls back
  /// to DisplayRole, and TextAlignmentRole to right-aligned numbers and left-aligned text.
  virtual QVariant cell(int row, int column, int role) const = 0;
  virtual QString header(int column) const = 0;
  virtual QString headerTip(int column) const { return {}; }
  /// Replaces the rows inside a model reset.
  template <typename F>
  void resetRows(F&& change) {
    beginResetModel();
    change();
    endResetModel();
  }
  /// Every cell of `column` changed (for all roles).
  void columnChanged(int column);
};

/// The table as CSV: the header, then each row as shown (a proxy's order and filter); numbers
/// unformatted (their SortRole) where a cell has one, text otherwise. RFC 4180 quoting.
QString tableCsv(const QAbstractItemModel& model, int sortRole = TableModel::SortRole);

/// Adds "Export as CSV…" to `view`'s context menu (its model as shown); `name` suggests a file
/// name. Returns the action (also usable from a menu).
QAction* addCsvExport(QAbstractItemView* view, const QString& name);
/// Writes `view`'s model as CSV to `path` (asked for when empty); false when nothing was written.
bool exportCsv(QAbstractItemView* view, const QString& name, QString path = {});

}  // namespace souffle::views
