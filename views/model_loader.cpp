#include "views/model_loader.h"

#include <QFileInfo>
#include <QtConcurrent/QtConcurrent>
#include <exception>

namespace souffle::views {

QString LoadError::message() const {
  QStringList parts;
  if (!file.isEmpty()) parts << file;
  if (!node.isEmpty()) parts << node;
  parts << reason;
  return parts.join(QStringLiteral(": "));
}

ModelLoader::ModelLoader(QObject* parent)
    : QObject(parent), m_watcher(new QFutureWatcher<LoadOutcome>(this)) {
  connect(m_watcher, &QFutureWatcher<LoadOutcome>::finished, this, [this] {
    // A result whose generation is not the current one belongs to a cancelled or replaced load.
    if (m_watcher->property("generation").toULongLong() != m_generation || !m_busy) return;
    m_busy = false;
    LoadOutcome out = m_watcher->result();
    if (out.ok())
      emit loaded(out.data, static_cast<double>(m_timer.nsecsElapsed()) / 1e6);
    else
      emit failed(out.error);
  });
}

ModelLoader::~ModelLoader() {
  m_watcher->waitForFinished();
}

LoadOutcome ModelLoader::run(const QString& path, const onnx_import::ImportOptions& options) {
  LoadOutcome out;
  const std::string file = path.toStdString();
  try {
    if (!QFileInfo::exists(path)) throw UserError(file, "", "no such file");
    if (!QFileInfo(path).isFile())
      throw UserError(file, "", "not a regular file (a folder or a device): not a model");
    // The weights stay in the file until something reads them (a plan never does), read
    // through a descriptor kept open rather than a mapping: a model file rewritten in place or
    // cut short later makes such a read fail with a message naming the file, never a fault,
    // and one replaced by a rename is still read as it was. A file the import cannot walk is
    // read whole into memory this process owns.
    onnx_import::ImportOptions o = options;
    o.defer_weights = true;
    o.read_into_memory = true;
    o.read_weights_on_demand = true;
    auto model = std::make_shared<LoadedModel>(load_model(file, o));
    out.data = buildModelData(std::move(model));
  } catch (const UserError& e) {
    out.error.file = QString::fromStdString(e.file().empty() ? file : e.file());
    out.error.node = QString::fromStdString(e.node());
    out.error.reason = QString::fromStdString(e.reason());
  } catch (const std::exception& e) {
    // An internal error is a bug, but the window must stay usable to report it.
    out.error.file = path;
    out.error.reason = QString::fromUtf8(e.what());
    out.error.internal = true;
  }
  return out;
}

void ModelLoader::load(const QString& path, const onnx_import::ImportOptions& options) {
  ++m_generation;
  m_busy = true;
  m_path = path;
  m_timer.start();
  m_watcher->setProperty("generation", m_generation);
  m_watcher->setFuture(QtConcurrent::run(&ModelLoader::run, path, options));
  emit started(path);
}

void ModelLoader::cancel() {
  if (!m_busy) return;
  ++m_generation;
  m_busy = false;
  emit cancelled(m_path);
}

}  // namespace souffle::views
