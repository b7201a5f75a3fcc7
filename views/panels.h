/// \file The side panels: node properties, the program's TE text with a find bar, and the
/// load-error panel.
#pragma once

#include <QWidget>

#include "views/model_loader.h"
#include "views/plan_runner.h"
#include "views/scene_graph.h"

class QAction;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QTextBrowser;

namespace souffle::views {

class ExplorerSession;

/// Op, attributes, input/output types and the TEs of the selected box.
class PropertiesPanel : public QWidget {
  Q_OBJECT
 public:
  explicit PropertiesPanel(QWidget* parent = nullptr);
  /// Follows the session's model and plan.
  void attach(ExplorerSession* session);
  void setModelData(ModelDataPtr data);
  /// The plan whose partitions and reasons the panel names (null: none yet).
  void setPlan(PlanDataPtr plan);
  /// Shows box `box` of `graph` (op level or TE level); -1 shows the model summary.
  void showBox(const SceneGraph* graph, int box);
  QString html() const;

 private:
  QString partitionHtml(const SceneGraph& graph, int box) const;
  /// The kernel's stage boundaries: by kind for a whole kernel (`node` null), else those that
  /// order the node's stages after the stages before them, with their reasons.
  QString boundariesHtml(const plan::Partition& part, const SceneNode* node) const;
  /// How the plan's analysis characterizes the TEs that come from ONNX node `origin`:
  /// intensity and why, each input's access kind, and the reuse sites they take part in.
  QString characterizationHtml(const std::string& origin) const;

  QTextBrowser* m_browser;
  ModelDataPtr m_data;
  PlanDataPtr m_plan;
  const SceneGraph* m_graph = nullptr;
  int m_box = -1;
};

/// The whole program as text (monospace, searchable).
class TeTextPanel : public QWidget {
  Q_OBJECT
 public:
  explicit TeTextPanel(QWidget* parent = nullptr);
  /// Shows the program of the session's model (empty when none is open).
  void attach(ExplorerSession* session);
  void setText(const QString& text);
  QPlainTextEdit* editor() const { return m_edit; }
  /// Scrolls to the first line of the op named `opName` (or the first op of ONNX node `node`).
  void revealOp(const QString& opName);
  /// Scrolls to the TE op of graph box `node`: its own at TE level, at op level the first op of
  /// its ONNX node in `model`'s program (null: none).
  void revealBox(const SceneNode& node, const ModelData* model);
  /// View menu entry: Find in TE program… (Ctrl+Shift+F) brings the panel to the front and
  /// puts the cursor in its search field.
  QAction* findAction();

 public slots:
  void focusSearch();
  bool find(bool backward = false);

 private:
  QPlainTextEdit* m_edit;
  QLineEdit* m_search;
  QLabel* m_status;
};

/// Shown when a model could not be loaded: file, node and reason; the window stays usable.
class ErrorPanel : public QWidget {
  Q_OBJECT
 public:
  explicit ErrorPanel(QWidget* parent = nullptr);
  /// Shows and raises the problems `session` reports; Dismiss hides the panel's dock.
  void attach(ExplorerSession* session);
  void showError(const LoadError& error);
  const LoadError& error() const { return m_error; }
  QString text() const;

 signals:
  void retryRequested();
  void dismissed();

 private:
  QLabel* m_title;
  QLabel* m_file;
  QLabel* m_node;
  QLabel* m_reason;
  LoadError m_error;
};

}  // namespace souffle::views
