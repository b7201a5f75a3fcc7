/// \file A line diff of two texts (Myers' O(ND) shortest edit script): which lines of the first
/// text were removed and which of the second were added, the rest kept in order. The
/// step-through and the lesson highlight with it what a compiler step changed in a program.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace souffle {

/// One text's lines (without their '\n'); a last line without '\n' counts, an empty text has
/// none.
std::vector<std::string_view> split_lines(std::string_view text);

struct LineDiff {
  /// Per line of the first text: true when the diff removed it.
  std::vector<bool> removed;
  /// Per line of the second text: true when the diff added it.
  std::vector<bool> added;
  /// Lines kept (in both texts, in order): the length of the common subsequence found.
  size_t common = 0;
  /// False when more than `max_edits` edits were needed: then only the common prefix and suffix
  /// are kept and every line between them counts as changed (a translation, not an edit).
  bool exact = true;
  size_t removed_count() const;
  size_t added_count() const;
};

/// The shortest line diff from `a` to `b`.
/// At most `max_edits` edits are searched for, so that two unrelated long texts stay cheap.
LineDiff diff_lines(const std::vector<std::string_view>& a, const std::vector<std::string_view>& b,
                    size_t max_edits = 4000);
LineDiff diff_texts(std::string_view a, std::string_view b, size_t max_edits = 4000);

}  // namespace souffle
