/// \file Running souffle-cli from a test: its exit code and what it printed.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace souffle::cli_test {

struct CliRun {
  int code = -1;
  std::string out;  ///< stdout, with stderr too when asked for
};

/// Runs `SOUFFLE_CLI args` through the shell; stderr joins the output when `with_stderr`,
/// else it is dropped.
inline CliRun run_cli(const std::string& args, bool with_stderr) {
  std::string cmd =
      std::string(SOUFFLE_CLI) + " " + args + (with_stderr ? " 2>&1" : " 2>/dev/null");
  CliRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf{};
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

}  // namespace souffle::cli_test
