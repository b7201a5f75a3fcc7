// write_bundle: the files of a kernel bundle, the weights manifest against weights.bin, the data
// files against the model, and a kernel with an error reported instead of a harness.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/codegen/codegen_cuda.h"
#include "core/session/bundle.h"
#include "core/session/load.h"

namespace souffle {
namespace {
namespace fs = std::filesystem;

std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

struct Fixture {
  LoadedModel model;
  std::vector<TestDataSet> sets;
  plan::FusionPlan plan;
  CompileOptions copts;
  CompileReport report;
  explicit Fixture(plan::Strategy s, schedule::SyncMode sync = schedule::SyncMode::Grid) {
    std::string dir = std::string(SOUFFLE_SOURCE_DIR) + "/sample_models/mmoe";
    model = load_model(dir + "/model.onnx");
    sets = read_test_data(dir);
    plan::PlanOptions po;
    po.strategy = s;
    po.gpu = gpu::gpu_spec("a100");
    plan = plan::plan(model.program, po);
    copts.archs = {};  // schedule and emit only: the bundle's layout needs no NVRTC
    copts.sync = sync;
    report = compile_plan(plan, copts);
  }
};

fs::path fresh_dir(const std::string& name) {
  fs::path d = fs::path(SOUFFLE_BINARY_DIR) / "test_bundle_out" / name;
  fs::remove_all(d);
  return d;
}

TEST(Bundle, FilesManifestAndData) {
  Fixture fx(plan::Strategy::Rules);
  ASSERT_EQ(fx.report.errors, 0);
  fs::path dir = fresh_dir("rules");
  BundleOptions bo;
  bo.model = "mmoe/model.onnx";
  bo.strategy = "rules";
  bo.data = &fx.sets.at(0);
  BundleReport rep = write_bundle(dir.string(), fx.plan, fx.report, fx.copts, bo);
  ASSERT_TRUE(rep.harness);
  for (const char* f : {"main.cu", "CMakeLists.txt", "README.txt", "weights.bin", "weights.txt"})
    EXPECT_TRUE(fs::exists(dir / f)) << f;
  EXPECT_FALSE(fs::exists(dir / "ERRORS.txt"));
  const std::string main_cu = read_text(dir / "main.cu");
  const std::string cmake = read_text(dir / "CMakeLists.txt");
  for (const CompiledKernel& k : fx.report.kernels) {
    EXPECT_EQ(read_text(dir / (k.name + ".cu")), k.cuda) << k.name;
    EXPECT_TRUE(fs::exists(dir / (k.name + ".launch.cu"))) << k.name;
    EXPECT_NE(cmake.find(k.name + ".launch.cu"), std::string::npos) << k.name;
    EXPECT_NE(main_cu.find("launch_" + k.name), std::string::npos) << k.name;
  }
  EXPECT_NE(cmake.find("LANGUAGES CXX CUDA"), std::string::npos);
  EXPECT_NE(cmake.find("\"80;90\""), std::string::npos);

  // The manifest lists every weight once, back to back (256-byte aligned) up to weights.bin's end.
  std::istringstream manifest(read_text(dir / "weights.txt"));
  int64_t end = 0, weights = 0;
  for (std::string line; std::getline(manifest, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream f(line);
    std::string name, dtype, shape;
    int64_t offset = 0, bytes = 0;
    std::getline(f, name, '\t');
    std::getline(f, dtype, '\t');
    std::getline(f, shape, '\t');
    f >> offset >> bytes;
    EXPECT_EQ(offset % 256, 0) << name;
    EXPECT_GE(offset, end) << name;
    EXPECT_LT(offset - end, 256) << name;
    end = offset + bytes;
    ++weights;
  }
  EXPECT_GT(weights, 0);
  EXPECT_EQ(static_cast<int64_t>(fs::file_size(dir / "weights.bin")), end);
  EXPECT_EQ(rep.weights_bytes, end);
  int64_t table_weights = 0;
  for (const BundleTensor& t : rep.tensors) {
    if (t.kind == BundleTensor::Kind::Weight) ++table_weights;
    if (t.kind == BundleTensor::Kind::Input) {
      ASSERT_FALSE(t.file.empty());
      EXPECT_EQ(static_cast<int64_t>(fs::file_size(dir / t.file)), t.bytes) << t.name;
    }
  }
  EXPECT_EQ(table_weights, weights);
  // One expected file per model output, as big as the output.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir / "expected"), fs::directory_iterator()),
            static_cast<long>(fx.plan.program.outputs.size()));
}

TEST(Bundle, CooperativeKernelLaunchesCooperatively) {
  Fixture fx(plan::Strategy::Souffle);
  ASSERT_EQ(fx.report.kernels.size(), 1u);
  ASSERT_TRUE(fx.report.kernels[0].launch.cooperative);
  fs::path dir = fresh_dir("souffle");
  BundleOptions bo;
  bo.strategy = "souffle";
  write_bundle(dir.string(), fx.plan, fx.report, fx.copts, bo);
  std::string launch = read_text(dir / "kernel0.launch.cu");
  EXPECT_NE(launch.find("cudaLaunchCooperativeKernel"), std::string::npos) << launch;
  EXPECT_NE(launch.find("#include \"kernel0.cu\""), std::string::npos);
  EXPECT_NE(launch.find("cudaOccupancyMaxActiveBlocksPerMultiprocessor"), std::string::npos);
  // Without data the inputs are zeros and the check is skipped.
  EXPECT_NE(read_text(dir / "main.cu").find("kHaveExpected = false"), std::string::npos);
  EXPECT_FALSE(fs::exists(dir / "expected"));
}

TEST(Bundle, AKernelWithFlagsOwnsItsCountersInItsLauncher) {
  Fixture fx(plan::Strategy::Souffle, schedule::SyncMode::Flags);
  ASSERT_EQ(fx.report.errors, 0);
  ASSERT_EQ(fx.report.kernels.size(), 1u);
  const CompiledKernel& k = fx.report.kernels[0];
  ASSERT_FALSE(k.kernel.flags.empty());
  fs::path dir = fresh_dir("souffle_flags");
  BundleOptions bo;
  bo.strategy = "souffle";
  BundleReport rep = write_bundle(dir.string(), fx.plan, fx.report, fx.copts, bo);
  ASSERT_TRUE(rep.harness);
  // The counters come after every other tensor.
  size_t first_flags = rep.tensors.size();
  for (size_t i = 0; i < rep.tensors.size(); ++i)
    if (rep.tensors[i].kind == BundleTensor::Kind::Flags) first_flags = std::min(first_flags, i);
  ASSERT_LT(first_flags, rep.tensors.size());
  for (size_t i = first_flags; i < rep.tensors.size(); ++i)
    EXPECT_EQ(rep.tensors[i].kind, BundleTensor::Kind::Flags) << i;
  EXPECT_EQ(rep.tensors.size() - first_flags, k.kernel.flags.size());
  // The launcher allocates and zeroes them once and passes a growing epoch last; the harness
  // never sees them (it would zero them before every run).
  std::string launch = read_text(dir / "kernel0.launch.cu");
  EXPECT_NE(launch.find("cudaLaunchCooperativeKernel"), std::string::npos) << launch;
  EXPECT_NE(launch.find("static long long kernel0_epoch = 0;"), std::string::npos) << launch;
  EXPECT_NE(launch.find("if (kernel0_epoch == 0)"), std::string::npos) << launch;
  EXPECT_NE(launch.find("++kernel0_epoch;"), std::string::npos) << launch;
  EXPECT_NE(launch.find("&kernel0_flags[0], "), std::string::npos) << launch;
  EXPECT_NE(launch.find("&kernel0_epoch};"), std::string::npos) << launch;
  std::string main_cu = read_text(dir / "main.cu");
  for (const te::Tensor& f : k.kernel.flags)
    EXPECT_EQ(main_cu.find(f->name), std::string::npos) << f->name;
  // Each launcher argument is the harness' argument or a counter, in parameter order.
  const std::vector<codegen::KernelParam> params = codegen::kernel_params(k.kernel);
  size_t harness = 0, counter = 0;
  std::string all = "void*all[]={";
  for (const codegen::KernelParam& p : params)
    all += p.role == codegen::KernelParam::Role::Flags
               ? "&kernel0_flags[" + std::to_string(counter++) + "],"
               : "args[" + std::to_string(harness++) + "],";
  all += "&kernel0_epoch};";
  std::string packed;  // the launcher without white space
  for (char c : launch)
    if (!std::isspace(static_cast<unsigned char>(c))) packed += c;
  EXPECT_NE(packed.find(all), std::string::npos) << all << "\n" << launch;
  EXPECT_EQ(launch.find(" \n"), std::string::npos) << "trailing white space";
}

TEST(Bundle, AKernelWithAnErrorIsListedAndNoHarnessIsWritten) {
  Fixture fx(plan::Strategy::Rules);
  ASSERT_GE(fx.report.kernels.size(), 2u);
  CompiledKernel& bad = fx.report.kernels[1];
  bad.error = bad.name + " (stage 0): NVRTC sm_80 failed: planted";
  fs::path dir = fresh_dir("error");
  BundleReport rep = write_bundle(dir.string(), fx.plan, fx.report, fx.copts, {});
  EXPECT_FALSE(rep.harness);
  EXPECT_FALSE(fs::exists(dir / "main.cu"));
  EXPECT_TRUE(fs::exists(dir / (bad.name + ".cu")));
  EXPECT_NE(read_text(dir / "ERRORS.txt").find(bad.name + " (stage 0): NVRTC sm_80 failed"),
            std::string::npos);
}

}  // namespace
}  // namespace souffle
