#include "views/kernel_identity.h"

#include <QHash>
#include <QStringList>
#include <cmath>

namespace souffle::views {

QString shortNodeName(const QString& node, int parts, int maxChars) {
  QStringList path = node.split(QLatin1Char('/'), Qt::SkipEmptyParts);
  if (path.isEmpty()) return node;
  while (path.size() > parts) path.removeFirst();
  QString s = path.join(QLatin1Char('/'));
  if (s.size() > maxChars && maxChars > 3) {
    const int keep = maxChars - 1;
    s = s.left(keep / 2) + QStringLiteral("…") + s.right(keep - keep / 2);
  }
  return s;
}

std::vector<KernelIdentity> kernelIdentities(const plan::FusionPlan& plan) {
  std::vector<KernelIdentity> out(plan.partitions.size());
  QHash<QString, int> seen;
  for (size_t i = 0; i < plan.partitions.size(); ++i) {
    const plan::Partition& p = plan.partitions[i];
    std::string anchor;
    for (int te : p.tes) {
      if (te < 0 || static_cast<size_t>(te) >= plan.program.ops.size()) continue;
      const bool compute =
          static_cast<size_t>(te) < plan.analysis.tes.size() &&
          plan.analysis.tes[static_cast<size_t>(te)].kind == analysis::Intensity::Compute;
      if (anchor.empty() || compute)
        anchor = plan.program.ops[static_cast<size_t>(te)]->origin.node;
      if (compute) break;
    }
    if (anchor.empty() && !p.ops.empty()) anchor = p.ops.front();
    KernelIdentity& k = out[i];
    k.anchor = QString::fromStdString(anchor);
    k.shortName = shortNodeName(k.anchor);
    // A node split over several kernels anchors each: the first keeps the plain key.
    const int n = seen[k.anchor]++;
    k.colorKey = qHash(n == 0 ? k.anchor : k.anchor + QStringLiteral("#%1").arg(n));
  }
  return out;
}

QColor kernelColor(quint32 key, bool dark) {
  // Hue from the key's golden-ratio multiple (neighbouring keys part), shade from its low bits.
  const double h = std::fmod(0.11 + (key % 9973u) * 0.6180339887, 1.0);
  const double shade = ((key >> 8) % 3) * 0.04;
  return dark ? QColor::fromHslF(float(h), 0.42f, float(0.30 + shade))
              : QColor::fromHslF(float(h), 0.62f, float(0.80 + shade / 2));
}

}  // namespace souffle::views
