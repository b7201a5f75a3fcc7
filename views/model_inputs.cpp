#include "views/model_inputs.h"

#include <string>
#include <vector>

namespace souffle::views {

namespace {

std::vector<std::string> strings(const QStringList& l) {
  std::vector<std::string> out;
  out.reserve(static_cast<size_t>(l.size()));
  for (const QString& s : l) out.push_back(s.toStdString());
  return out;
}

}  // namespace

QStringList ModelInputs::arguments() const {
  QStringList lines;
  for (const QString& d : dims) lines << QStringLiteral("--dim ") + d;
  for (const QString& b : binds) lines << QStringLiteral("--bind ") + b;
  for (const QString& s : shapes) lines << QStringLiteral("--shape ") + s;
  return lines;
}

onnx_import::ImportOptions ModelInputs::importOptions() const {
  return onnx_import::import_options(strings(dims), strings(binds), strings(shapes));
}

}  // namespace souffle::views
