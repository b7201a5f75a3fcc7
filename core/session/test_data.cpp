#include "core/session/test_data.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>

#include "core/onnx/importer.h"
#include "core/support/error.h"

namespace souffle {
namespace fs = std::filesystem;

namespace {
void read_numbered(const fs::path& dir, const std::string& prefix,
                   std::vector<graph::DataValue>& values, std::vector<ConstTensorPtr>& flat) {
  for (int k = 0;; ++k) {
    fs::path p = dir / (prefix + std::to_string(k) + ".pb");
    if (!fs::exists(p)) break;
    values.push_back(onnx_import::read_value_pb(p.string()));
    flat.insert(flat.end(), values.back().tensors.begin(), values.back().tensors.end());
  }
}
}  // namespace

std::vector<TestDataSet> read_test_data(const std::string& dir) {
  std::vector<std::pair<int, fs::path>> sets;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    std::string name = entry.path().filename().string();
    const std::string prefix = "test_data_set_";
    if (!entry.is_directory() || name.rfind(prefix, 0) != 0) continue;
    try {
      sets.emplace_back(std::stoi(name.substr(prefix.size())), entry.path());
    } catch (const std::invalid_argument&) {
      // not a numbered set: skipped
    } catch (const std::out_of_range&) {
      // not a numbered set: skipped
    }
  }
  if (ec) throw UserError(dir, "", "cannot read test data folder: " + ec.message());
  std::sort(sets.begin(), sets.end());
  std::vector<TestDataSet> out;
  for (const auto& [n, p] : sets) {
    TestDataSet ds;
    ds.dir = p.string();
    read_numbered(p, "input_", ds.input_values, ds.inputs);
    read_numbered(p, "output_", ds.output_values, ds.outputs);
    out.push_back(std::move(ds));
  }
  return out;
}

}  // namespace souffle
