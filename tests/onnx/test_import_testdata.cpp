// Every model and tensor file of the ONNX backend test data imports, or is refused with a clear
// message for the value kinds this project does not take (strings, sequences, optionals).
#include <gtest/gtest.h>

#include <filesystem>

#include "core/onnx/importer.h"
#include "core/support/error.h"

namespace souffle::onnx_import {
namespace {

namespace fs = std::filesystem;

bool acceptable_refusal(const std::string& reason) {
  for (const char* kind : {"string", "complex", "sequence", "optional"})
    if (reason.find(kind) != std::string::npos) return true;
  return false;
}

void sweep(const std::string& root, int min_models, int min_percent_imported) {
  if (!fs::is_directory(root)) GTEST_SKIP() << "no test data at " << root;
  int models = 0, imported = 0, tensors = 0, read = 0;
  for (const auto& entry : fs::directory_iterator(root)) {
    fs::path model = entry.path() / "model.onnx";
    if (!fs::exists(model)) continue;
    ++models;
    try {
      import_model(model.string());
      ++imported;
    } catch (const UserError& e) {
      EXPECT_TRUE(acceptable_refusal(e.reason())) << e.what();
      EXPECT_EQ(e.file(), model.string());
    }
    for (const auto& set : fs::directory_iterator(entry.path())) {
      if (!set.is_directory()) continue;
      for (const auto& f : fs::directory_iterator(set.path())) {
        if (f.path().extension() != ".pb") continue;
        ++tensors;
        try {
          read_tensor_pb(f.path().string());
          ++read;
        } catch (const UserError& e) {
          EXPECT_TRUE(acceptable_refusal(e.reason())) << e.what();
        }
      }
    }
  }
  EXPECT_GE(models, min_models);
  EXPECT_GE(imported * 100, models * min_percent_imported)
      << imported << " of " << models << " imported";
  std::printf("%s: %d/%d models imported, %d/%d tensor files read\n", root.c_str(), imported,
              models, read, tensors);
}

TEST(ImportTestdata, NodeTests) {
  sweep("/usr/share/libonnx-testdata/data/node", 900, 95);
}
TEST(ImportTestdata, PytorchConverted) {
  sweep("/usr/share/libonnx-testdata/data/pytorch-converted", 50, 100);
}
TEST(ImportTestdata, PytorchOperatorAndSimple) {
  sweep("/usr/share/libonnx-testdata/data/pytorch-operator", 10, 100);
  // Six of the simple models are string normalisers.
  sweep("/usr/share/libonnx-testdata/data/simple", 5, 70);
}

}  // namespace
}  // namespace souffle::onnx_import
