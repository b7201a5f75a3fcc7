// souffle-cli sweep MANIFEST [options]: the sweep lives in the souffle Python package, which
// drives the pipeline in worker processes (local or Dask); this command starts it with the
// interpreter the package was built for, the build tree's package first on PYTHONPATH.
#include "app/cli/cmd_sweep.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>

#ifndef SOUFFLE_PYTHON_EXE
#define SOUFFLE_PYTHON_EXE "python3"
#endif
#ifndef SOUFFLE_PYTHON_PATH
#define SOUFFLE_PYTHON_PATH ""
#endif

namespace souffle::cli {

int run_sweep(const std::vector<std::string>& args) {
  const char* env = std::getenv("SOUFFLE_PYTHON");
  const std::string python = env && *env ? env : SOUFFLE_PYTHON_EXE;
  const std::string package = SOUFFLE_PYTHON_PATH;
  std::error_code ec;
  if (!package.empty() && std::filesystem::exists(package + "/souffle/__init__.py", ec)) {
    const char* old = std::getenv("PYTHONPATH");
    const std::string path = old && *old ? package + ":" + old : package;
    setenv("PYTHONPATH", path.c_str(), 1);
  }
  std::vector<std::string> words = {python, "-m", "souffle", "sweep"};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  execvp(argv[0], argv.data());
  std::cerr << "error: sweep: cannot start " << python << " (" << std::strerror(errno)
            << "); the sweep needs the souffle Python package (docs/python.md)\n";
  return 2;
}

}  // namespace souffle::cli
