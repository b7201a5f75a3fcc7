// Myers' greedy shortest edit script over line ids, after the common prefix and suffix are set
// aside; the furthest-reaching x per diagonal is kept for every edit count so the script can be
// walked back.
#include "core/support/line_diff.h"

#include <algorithm>
#include <unordered_map>

namespace souffle {

std::vector<std::string_view> split_lines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string_view::npos) end = text.size();
    lines.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return lines;
}

size_t LineDiff::removed_count() const {
  return static_cast<size_t>(std::count(removed.begin(), removed.end(), true));
}

size_t LineDiff::added_count() const {
  return static_cast<size_t>(std::count(added.begin(), added.end(), true));
}

LineDiff diff_lines(const std::vector<std::string_view>& a, const std::vector<std::string_view>& b,
                    size_t max_edits) {
  LineDiff out;
  out.removed.assign(a.size(), false);
  out.added.assign(b.size(), false);
  size_t pre = 0;
  while (pre < a.size() && pre < b.size() && a[pre] == b[pre]) ++pre;
  size_t suf = 0;
  while (suf < a.size() - pre && suf < b.size() - pre &&
         a[a.size() - 1 - suf] == b[b.size() - 1 - suf])
    ++suf;
  out.common = pre + suf;
  const int n = static_cast<int>(a.size() - pre - suf);
  const int m = static_cast<int>(b.size() - pre - suf);
  if (n == 0 || m == 0) {
    for (int i = 0; i < n; ++i) out.removed[pre + static_cast<size_t>(i)] = true;
    for (int j = 0; j < m; ++j) out.added[pre + static_cast<size_t>(j)] = true;
    return out;
  }
  // Lines as small integers, so that the inner loop compares ints.
  std::unordered_map<std::string_view, int> ids;
  std::vector<int> x_id(static_cast<size_t>(n)), y_id(static_cast<size_t>(m));
  for (int i = 0; i < n; ++i)
    x_id[static_cast<size_t>(i)] =
        ids.emplace(a[pre + static_cast<size_t>(i)], static_cast<int>(ids.size())).first->second;
  for (int j = 0; j < m; ++j)
    y_id[static_cast<size_t>(j)] =
        ids.emplace(b[pre + static_cast<size_t>(j)], static_cast<int>(ids.size())).first->second;

  const int limit = static_cast<int>(std::min<size_t>(max_edits, static_cast<size_t>(n + m)));
  // trace[d][k + d]: the furthest x on diagonal k (x - y) after d edits.
  std::vector<std::vector<int>> trace;
  std::vector<int> prev;  // trace[d - 1]
  int found = -1;
  for (int d = 0; d <= limit && found < 0; ++d) {
    std::vector<int> v(static_cast<size_t>(2 * d + 1), 0);
    for (int k = -d; k <= d; k += 2) {
      auto at = [&](int kk) { return prev[static_cast<size_t>(kk + d - 1)]; };
      int x;
      if (d == 0)
        x = 0;
      else if (k == -d || (k != d && at(k - 1) < at(k + 1)))
        x = at(k + 1);  // down: a line of b added
      else
        x = at(k - 1) + 1;  // right: a line of a removed
      int y = x - k;
      while (x < n && y < m && x_id[static_cast<size_t>(x)] == y_id[static_cast<size_t>(y)]) {
        ++x;
        ++y;
      }
      v[static_cast<size_t>(k + d)] = x;
      if (x >= n && y >= m) found = d;
    }
    trace.push_back(v);
    prev = std::move(v);
  }
  if (found < 0) {  // too many edits: everything between prefix and suffix changed
    out.exact = false;
    for (int i = 0; i < n; ++i) out.removed[pre + static_cast<size_t>(i)] = true;
    for (int j = 0; j < m; ++j) out.added[pre + static_cast<size_t>(j)] = true;
    return out;
  }
  int x = n, y = m;
  for (int d = found; d > 0; --d) {
    const std::vector<int>& pv = trace[static_cast<size_t>(d - 1)];
    auto at = [&](int kk) { return pv[static_cast<size_t>(kk + d - 1)]; };
    const int k = x - y;
    const bool down = k == -d || (k != d && at(k - 1) < at(k + 1));
    const int pk = down ? k + 1 : k - 1;
    const int px = at(pk), py = px - pk;
    if (down)
      out.added[pre + static_cast<size_t>(py)] = true;
    else
      out.removed[pre + static_cast<size_t>(px)] = true;
    x = px;
    y = py;
  }
  out.common += static_cast<size_t>(n) - out.removed_count();
  return out;
}

LineDiff diff_texts(std::string_view a, std::string_view b, size_t max_edits) {
  return diff_lines(split_lines(a), split_lines(b), max_edits);
}

}  // namespace souffle
