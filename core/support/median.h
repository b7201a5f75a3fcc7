/// \file The median of a list of figures.
#pragma once

#include <algorithm>
#include <vector>

namespace souffle {

/// The middle value of `v` (the mean of the two middle ones for an even count); 0 when empty.
inline double median_of(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace souffle
