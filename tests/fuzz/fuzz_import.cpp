// libFuzzer entry point: arbitrary bytes through the ONNX importer. A UserError is the expected
// answer to garbage; an InternalError, a crash, a sanitizer report or a hang is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/graph/graph.h"
#include "core/onnx/importer.h"
#include "core/support/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  souffle::onnx_import::ImportOptions options;
  // Keep declared sizes small so an accepted model never asks for a large allocation.
  options.max_elements = int64_t{1} << 24;
  try {
    auto result = souffle::onnx_import::import_model_bytes(bytes, "fuzz-input/model.onnx", options);
    // Whatever imports must also print and survive the graph passes.
    (void)souffle::graph::print(result.graph);
    souffle::graph::topo_sort(result.graph);
    souffle::graph::remove_dead_nodes(result.graph);
  } catch (const souffle::UserError&) {
  }
  return 0;
}
