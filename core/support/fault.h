/// \file Named fault points: places where a test plants an exception to see how the code around
/// them handles it (an internal error must propagate, an expected failure must be reported).
/// Disarmed, a point costs one relaxed atomic load.
#pragma once

#include <functional>
#include <string>

namespace souffle::fault {

/// Throws what a test planted at `site`; does nothing when nothing is planted there.
void point(const char* site);

/// Plants `thrower` at `site` for the lifetime of the object (one plant per site at a time; the
/// last one planted wins). Tests only.
class Planted {
 public:
  Planted(std::string site, std::function<void()> thrower);
  ~Planted();
  Planted(const Planted&) = delete;
  Planted& operator=(const Planted&) = delete;

 private:
  std::string m_site;
};

}  // namespace souffle::fault
