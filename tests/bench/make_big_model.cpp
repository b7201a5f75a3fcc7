// make_big_model: writes a generated ONNX model of about N nodes for the explorer's benchmarks
// (tests/bench/big_model.h).
//
//   make_big_model --nodes 20000 --out big.onnx [--width 64]
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "tests/bench/big_model.h"

int main(int argc, char** argv) {
  int nodes = 20000, width = 64;
  std::string out;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--nodes" && i + 1 < argc)
      nodes = std::atoi(argv[++i]);
    else if (a == "--width" && i + 1 < argc)
      width = std::atoi(argv[++i]);
    else if (a == "--out" && i + 1 < argc)
      out = argv[++i];
    else {
      std::fprintf(stderr, "usage: make_big_model --nodes N --out FILE.onnx [--width W]\n");
      return 2;
    }
  }
  if (out.empty() || nodes < 10 || width < 1) {
    std::fprintf(stderr, "usage: make_big_model --nodes N --out FILE.onnx [--width W]\n");
    return 2;
  }
  const onnx::ModelProto m = souffle::bench::make_big_model(nodes, width);
  const int blocks = nodes / 10;
  std::ofstream f(out, std::ios::binary);
  if (!f || !m.SerializeToOstream(&f)) {
    std::fprintf(stderr, "make_big_model: cannot write %s\n", out.c_str());
    return 2;
  }
  std::printf("%s: %d nodes in %d blocks, width %d\n", out.c_str(), blocks * 10, blocks, width);
  return 0;
}
