/// \file Reading a JSON number into a C++ arithmetic type without undefined behaviour: a file
/// someone else wrote may hold 1e55 where an int belongs, and nlohmann's conversion of an
/// out-of-range floating value to an integer is undefined.
#pragma once

#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>

#include <nlohmann/json.hpp>

namespace souffle {

/// `j` as a T when it is a number T represents: for an integer T a whole number within T's
/// range; for a floating T any number. nullopt otherwise (not a number, a fraction for an
/// integer, out of range); a boolean is not a number here.
template <typename T>
std::optional<T> json_number_as(const nlohmann::json& j) {
  static_assert(std::is_arithmetic_v<T> && !std::is_same_v<T, bool>);
  if (!j.is_number()) return std::nullopt;
  if constexpr (std::is_floating_point_v<T>) {
    return j.get<T>();
  } else {
    if (j.is_number_integer()) {
      if (j.is_number_unsigned()) {
        const auto v = j.get<uint64_t>();
        if (v > static_cast<uint64_t>(std::numeric_limits<T>::max())) return std::nullopt;
        return static_cast<T>(v);
      }
      const auto v = j.get<int64_t>();
      if (v < static_cast<int64_t>(std::numeric_limits<T>::min()) ||
          (v > 0 &&
           static_cast<uint64_t>(v) > static_cast<uint64_t>(std::numeric_limits<T>::max())))
        return std::nullopt;
      return static_cast<T>(v);
    }
    const double d = j.get<double>();
    // Both bounds are exact in double for every integer type up to 64 bits (min is a power of
    // two; max + 1 is one), so the comparisons decide exactly.
    const double lo = static_cast<double>(std::numeric_limits<T>::min());
    const double hi_excl = static_cast<double>(std::numeric_limits<T>::max()) + 1.0;
    if (!std::isfinite(d) || d != std::floor(d) || d < lo || d >= hi_excl) return std::nullopt;
    return static_cast<T>(d);
  }
}

}  // namespace souffle
