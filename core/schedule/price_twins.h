/// \file Structural twins of partitions: two partitions whose TEs, shapes, stages and tiles are
/// the same up to the names of their tensors, TEs and ONNX nodes (the twelve layers of BERT-base)
/// build the same kernels up to those names, so the price of one, renamed, is the price of the
/// other. The pricer keys a second memo by the structure (names abstracted to placeholders) and
/// serves a twin's price renamed instead of building the kernels again.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/plan/plan.h"

namespace souffle::schedule {

/// A partition's structure: its content key with every name replaced by a placeholder, the names
/// in the order their placeholders were given (first appearance), and its op indices in the order
/// the key lists them.
struct PartitionStructure {
  std::string key;
  std::vector<std::string> names;
  std::vector<int> tes;
};

/// Replaces every occurrence of a known name in a text, longest name first at each position.
class NameScanner {
 public:
  explicit NameScanner(const std::vector<std::string>& names);
  /// `text` with each known name at a position replaced by `replace(name)` (which returns the
  /// text put in its place); text between names is kept as it is.
  template <typename Replace>
  std::string rewrite(std::string_view text, Replace&& replace) const;

 private:
  /// Names by their first byte, longest first.
  std::vector<std::vector<std::string>> m_by_first;
};

/// `key` (an exact content key) with the names in `names` abstracted: the structure's key and
/// the names in placeholder order; `tes` is kept as given.
PartitionStructure abstract_names(std::string_view key, const std::vector<std::string>& names,
                                  std::vector<int> tes);

/// `price`, built for the partition of structure `from`, renamed for its twin of structure `to`
/// (same key): names of `from` become `to`'s in every text and list, op indices of `from` become
/// `to`'s, and its kernels' names (kernel`from_id`, kernel`from_id`.1, ...) those of partition
/// `to_id`. nullopt where the price holds an op index `from` does not list (no twin's then).
std::optional<plan::PartitionPrice> rename_price(const plan::PartitionPrice& price,
                                                 const PartitionStructure& from,
                                                 const PartitionStructure& to, int from_id,
                                                 int to_id);

template <typename Replace>
std::string NameScanner::rewrite(std::string_view text, Replace&& replace) const {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    const std::string* hit = nullptr;
    for (const std::string& n : m_by_first[static_cast<unsigned char>(text[i])])
      if (text.compare(i, n.size(), n) == 0) {
        hit = &n;
        break;
      }
    if (!hit) {
      out += text[i++];
      continue;
    }
    out += replace(*hit);
    i += hit->size();
  }
  return out;
}

}  // namespace souffle::schedule
