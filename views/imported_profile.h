/// \file An imported profile (a CSV of names and times, Nsight Compute's CSV, a PyTorch profiler
/// trace, an ONNX Runtime profile) mapped onto the plan on screen: per node and per kernel measured
/// times for the heat map and the kernel table, and a panel listing every entry with what it
/// matched or why not.
#pragma once

#include <QHash>
#include <QWidget>
#include <memory>
#include <vector>

#include "core/session/external_profile.h"
#include "views/plan_runner.h"
#include "views/table_model.h"

class QLabel;
class QSortFilterProxyModel;
class QTableView;

namespace souffle::views {

class ExplorerSession;

struct ExternalProfileData {
  PlanDataPtr plan;  ///< the plan it is mapped onto
  std::shared_ptr<const ExternalProfile> profile;
  ExternalMatch match;
  QHash<QString, double> nodeUs;    ///< per ONNX node
  std::vector<double> partitionUs;  ///< per partition index, -1 where nothing matched
  QString source;                   ///< "imported: trace.json (PyTorch, CPU time)"
  bool hasKernels() const;
};
using ExternalProfileDataPtr = std::shared_ptr<const ExternalProfileData>;

/// `profile` matched to `plan`'s model nodes and kernels. Pure.
ExternalProfileDataPtr mapExternalProfile(PlanDataPtr plan,
                                          std::shared_ptr<const ExternalProfile> profile);

/// The entries of an imported profile: name, kind, time, calls, what it matched (or why not).
class ImportedProfileModel : public TableModel {
  Q_OBJECT
 public:
  enum Column { NameColumn, KindColumn, TimeColumn, CallsColumn, MatchColumn, ColumnCount };
  enum Role { MatchedRole = FirstCustomRole };
  explicit ImportedProfileModel(QObject* parent = nullptr) : TableModel(parent) {}
  void setData(ExternalProfileDataPtr data);
  ExternalProfileDataPtr profileData() const { return m_data; }

 protected:
  int rows() const override;
  int columns() const override { return ColumnCount; }
  QVariant cell(int row, int column, int role) const override;
  QString header(int column) const override;
  QString headerTip(int column) const override;

 private:
  ExternalProfileDataPtr m_data;
};

/// The Imported profile panel: a summary and the entries, unmatched ones marked.
class ImportedProfilePanel : public QWidget {
  Q_OBJECT
 public:
  explicit ImportedProfilePanel(QWidget* parent = nullptr);
  /// Shows the session's imported profile, mapped onto its plan, whenever it changes.
  void attach(ExplorerSession* session);
  /// Shows `data` (null: none); the profile itself belongs to the model's ExplorerSession.
  void setData(ExternalProfileDataPtr data);
  /// The imported profile mapped onto the plan on screen (null: none).
  ExternalProfileDataPtr data() const { return m_model->profileData(); }
  ImportedProfileModel* model() const { return m_model; }
  QTableView* table() const { return m_table; }
  QString summary() const;
  /// Reads the profile at `path` (empty: asks for one, starting in `dir`) and imports it into
  /// `session`; a file that cannot be read is a problem of the session. Whether one was imported.
  bool importFile(ExplorerSession* session, const QString& path, const QString& dir);

 private:
  ImportedProfileModel* m_model;
  QSortFilterProxyModel* m_proxy;
  QTableView* m_table;
  QLabel* m_summary;
};

}  // namespace souffle::views
