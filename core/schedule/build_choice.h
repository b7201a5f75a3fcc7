/// \file The kernel builder's priced choices (core/support/build_choice.h): one way to make
/// them, and their sentences for people.
#pragma once

#include <string>
#include <utility>

#include "core/support/build_choice.h"

namespace souffle::schedule {

/// Keeps `candidate` where `price(candidate)` is below `price(other)`, else moves `other` into
/// it (ties and unpriced, NaN, keep the other); returns the choice made. `price` is called with
/// `candidate` first, then `other`, and may remember its result in them.
template <class T, class Price>
BuildChoice keep_cheaper(ChoiceKind kind, T& candidate, T other, Price&& price,
                         std::string reason = {}) {
  const double cp = price(candidate);
  const double op = price(other);
  BuildChoice c;
  c.kind = kind;
  c.kept = cp < op;
  c.price_kept_us = c.kept ? cp : op;
  c.price_other_us = c.kept ? op : cp;
  c.reason = std::move(reason);
  if (!c.kept) candidate = std::move(other);
  return c;
}

/// The choice in words, as the kept kernel's schedule text tells it: "weight panels kept
/// (estimated 28.21 us with them, 35.65 us without)".
std::string describe(const BuildChoice& c);

}  // namespace souffle::schedule
