/// \file What the benchmarks print about the machine they ran on.
#pragma once

#include <fstream>
#include <string>

namespace souffle::bench {

/// The 1, 5 and 15 minute load averages ("2.30 2.05 2.05"); empty where /proc has none.
inline std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a.empty() ? std::string() : a + " " + b + " " + c;
}

}  // namespace souffle::bench
