/// \file Stable kernel identities: each kernel is named by its anchor node (the ONNX node of its
/// first compute-intensive TE, else of its first TE) and coloured by a hash of that name, so a
/// kernel an edit does not touch keeps its name and colour when the kernels are renumbered.
#pragma once

#include <QColor>
#include <QString>
#include <vector>

#include "core/plan/plan.h"

namespace souffle::views {

struct KernelIdentity {
  QString anchor;        ///< the anchor node's full name
  QString shortName;     ///< its last path components, for labels ("layer.0/attention/MatMul")
  quint32 colorKey = 0;  ///< hash of the anchor (and its occurrence, when kernels share one)
};

/// One identity per partition of `plan` (its partitions' order). Pure.
std::vector<KernelIdentity> kernelIdentities(const plan::FusionPlan& plan);

/// The last `parts` path components of an ONNX node name ("/encoder/layer.0/attention/MatMul"
/// → "layer.0/attention/MatMul" for 3), elided in the middle to `maxChars`.
QString shortNodeName(const QString& node, int parts = 3, int maxChars = 36);

/// The fill colour of a kernel with colour key `key`: a stable hue per key, light pastels or dark
/// mid-tones.
QColor kernelColor(quint32 key, bool dark);

}  // namespace souffle::views
