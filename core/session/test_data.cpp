#include "core/session/test_data.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

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
    } catch (const std::exception&) {
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

std::string Comparison::describe() const {
  if (!shape_ok) return "shape differs";
  if (!dtype_ok) return "dtype differs";
  char buf[200];
  std::snprintf(buf, sizeof buf, "%lld mismatches, max abs error %.3g, relative L2 error %.3g",
                static_cast<long long>(mismatches), max_abs_error, rel_l2_error);
  return buf;
}

Comparison compare_tensors(const TensorData& expected, const TensorData& actual, double rtol,
                           double atol) {
  Comparison c;
  if (expected.shape() != actual.shape()) {
    c.shape_ok = false;
    return c;
  }
  bool exact = !is_float(expected.dtype());
  if (exact != !is_float(actual.dtype())) {
    c.dtype_ok = false;
    return c;
  }
  double err2 = 0, ref2 = 0;
  for (int64_t i = 0; i < expected.numel(); ++i) {
    if (exact) {
      if (expected.get_i64(i) != actual.get_i64(i)) {
        if (c.worst_index < 0) c.worst_index = i;
        ++c.mismatches;
      }
      continue;
    }
    double e = expected.get_f64(i), a = actual.get_f64(i);
    if (std::isnan(e) || std::isnan(a)) {
      if (std::isnan(e) != std::isnan(a)) ++c.mismatches;
      continue;
    }
    if (std::isinf(e) || std::isinf(a)) {
      if (e != a) ++c.mismatches;
      continue;
    }
    double d = std::fabs(a - e);
    err2 += d * d;
    ref2 += e * e;
    if (d > c.max_abs_error) {
      c.max_abs_error = d;
      c.worst_index = i;
    }
    if (d > atol + rtol * std::fabs(e)) ++c.mismatches;
  }
  c.rel_l2_error = std::sqrt(err2) / std::max(std::sqrt(ref2), 1e-30);
  return c;
}

}  // namespace souffle
