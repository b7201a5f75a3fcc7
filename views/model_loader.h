/// \file Loads a model on a worker thread: progress, cancel, and stale results dropped.
#pragma once

#include <QElapsedTimer>
#include <QFutureWatcher>
#include <QObject>
#include <QString>

#include "core/onnx/importer.h"
#include "views/scene_graph.h"

namespace souffle::views {

/// A load failure as the user sees it: the file, the node (may be empty) and the reason.
struct LoadError {
  QString file, node, reason;
  /// The problems panel's heading; empty: "The model could not be opened" (a load failure).
  QString title;
  bool internal = false;  ///< a bug in the project rather than a problem with the model
  QString message() const;
};

struct LoadOutcome {
  ModelDataPtr data;
  LoadError error;
  bool ok() const { return data != nullptr; }
};

/// Runs load_model + buildModelData off the GUI thread. One load at a time: starting a new one
/// or cancelling makes the running one stale; its result is dropped when it arrives (the core
/// pipeline has no cancellation points, so the worker finishes in the background).
class ModelLoader : public QObject {
  Q_OBJECT
 public:
  explicit ModelLoader(QObject* parent = nullptr);
  ~ModelLoader() override;

  /// Loads `path` with `options` (symbolic dims, bound inputs, input shapes).
  void load(const QString& path, const onnx_import::ImportOptions& options = {});
  void cancel();
  bool isBusy() const { return m_busy; }
  QString currentPath() const { return m_path; }

  /// The synchronous body of a load, for tests and tools: never throws.
  static LoadOutcome run(const QString& path, const onnx_import::ImportOptions& options = {});

 signals:
  void started(const QString& path);
  void loaded(souffle::views::ModelDataPtr data, double ms);
  void failed(const souffle::views::LoadError& error);
  void cancelled(const QString& path);

 private:
  QFutureWatcher<LoadOutcome>* m_watcher;
  quint64 m_generation = 0;
  bool m_busy = false;
  QString m_path;
  QElapsedTimer m_timer;
};

}  // namespace souffle::views
