/// \file souffle-cli sweep: the souffle Python package's sweep (python/souffle/sweep.py) run on a
/// manifest, locally on every core or on a Dask cluster (docs/python.md).
#pragma once

#include <string>
#include <vector>

namespace souffle::cli {

/// Runs `python3 -m souffle sweep ARGS...` in place of this process (the package from the build
/// tree when there is one) and returns only when it cannot be started (exit 2, saying why).
int run_sweep(const std::vector<std::string>& args);

}  // namespace souffle::cli
