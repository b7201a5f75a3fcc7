/// \file The "Kernels" page: the plan's kernels in a sortable table (several may be selected,
/// to merge); it follows the graph's selection and names the kernel the user picks.
#pragma once

#include <QWidget>
#include <vector>

class QSortFilterProxyModel;
class QTableView;

namespace souffle::views {

class ExplorerSession;
class PartitionTableModel;

class KernelsPage : public QWidget {
  Q_OBJECT
 public:
  explicit KernelsPage(QWidget* parent = nullptr);

  PartitionTableModel* model() const { return m_model; }
  QTableView* table() const { return m_table; }
  /// Tells `session` the kernel selected (partitionSelected); a page's activatePartition selects
  /// its row and brings the page to the front. Shows compiles, profile runs and the imported
  /// profile; a failed compile selects the kernel that failed.
  void attach(ExplorerSession* session);
  /// Partition indices of the selected rows, in the order they were selected.
  std::vector<int> selectedPartitions() const;
  /// Selects and scrolls to the row of partition `k`; `quiet`: without partitionActivated (the
  /// table follows a selection made elsewhere). False (the selection cleared) when the partition
  /// has no row.
  bool selectPartition(int k, bool quiet);

 signals:
  /// The selection changed (whoever changed it): `k` is the first selected partition.
  void currentPartitionChanged(int k);
  /// The user (or a selectPartition that is not quiet) selected partition `k` first.
  void partitionActivated(int k);

 private:
  PartitionTableModel* m_model;
  QSortFilterProxyModel* m_proxy;
  QTableView* m_table;
  bool m_quiet = false;  ///< a quiet selectPartition is selecting
};

}  // namespace souffle::views
