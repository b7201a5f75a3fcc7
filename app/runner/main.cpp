// souffle-runner: runs kernel bundles for souffle-cli and the explorer, speaking the runner
// protocol (docs/runner-protocol.md) on stdin/stdout. Diagnostics go to stderr only.
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "core/session/runner.h"

int main(int argc, char** argv) {
  std::string backend = "cuda";
  int device = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--backend" && i + 1 < argc) {
      backend = argv[++i];
    } else if (a == "--device" && i + 1 < argc) {
      device = std::atoi(argv[++i]);
    } else if (a == "--version") {
      std::cout << "souffle-runner, protocol " << souffle::runner::kProtocolVersion << "\n";
      return 0;
    } else {
      std::cerr
          << "usage: souffle-runner [--backend cuda|emulator] [--device N] [--version]\n"
             "Reads one JSON request a line on stdin, answers one a line on stdout\n"
             "(docs/runner-protocol.md). Start it from souffle-cli profile or the explorer.\n";
      return 2;
    }
  }
  std::unique_ptr<souffle::runner::Backend> b;
  if (backend == "cuda")
    b = souffle::runner::make_cuda_backend(device);
  else if (backend == "emulator")
    b = souffle::runner::make_emulator_backend();
  else {
    std::cerr << "souffle-runner: unknown backend '" << backend << "' (cuda or emulator)\n";
    return 2;
  }
  std::ios::sync_with_stdio(false);
  return souffle::runner::serve(std::cin, std::cout, *b);
}
