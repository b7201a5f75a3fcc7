/// \file A model's input options as the explorer holds them: symbolic dims, bound inputs and
/// input shapes, each as on the command line (NAME=VALUE), and what they make.
#pragma once

#include <QStringList>

#include "core/onnx/importer.h"

namespace souffle::views {

struct ModelInputs {
  QStringList dims, binds, shapes;
  /// As souffle-cli takes them, one a line: "--dim NAME=VALUE", "--bind ...", "--shape ...".
  QStringList arguments() const;
  /// The import options they give; UserError naming the malformed one.
  onnx_import::ImportOptions importOptions() const;
};

}  // namespace souffle::views
