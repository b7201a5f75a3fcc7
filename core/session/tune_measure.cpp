#include "core/session/tune_measure.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include "core/codegen/codegen_cuda.h"
#include "core/gpu/nvrtc.h"
#include "core/session/runner.h"
#include "core/support/error.h"
#include "core/support/fault.h"
#include "core/support/tensor_data.h"

namespace souffle {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

void write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw UserError(path.string(), "", "cannot write the file");
}

/// Uniform floats in [-1, 1], seeded: what A and B hold while candidates are timed.
std::string random_floats(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::string bytes(static_cast<size_t>(n) * sizeof(float), '\0');
  for (int64_t i = 0; i < n; ++i) {
    float v = dist(rng);
    std::memcpy(bytes.data() + static_cast<size_t>(i) * sizeof v, &v, sizeof v);
  }
  return bytes;
}

std::string problem_text(const schedule::GemmProblem& p) {
  return fmt::format("batch {}, {} x {} x {}", p.batch, p.m, p.n, p.k);
}

}  // namespace

BundleManifest write_candidate_bundle(const std::string& dir, const std::vector<GemmBench>& benches,
                                      const std::string& arch, const gpu::GpuSpec& gpu,
                                      std::map<size_t, std::string>* errors) {
  SOUFFLE_CHECK(!benches.empty(), "write_candidate_bundle: no candidates");
  fs::create_directories(fs::path(dir) / "inputs");
  BundleManifest m;
  m.dir = dir;
  m.archs = {arch};
  m.source.strategy = "tile candidates";
  m.source.gpu = gpu;
  write_file(fs::path(dir) / m.weights, "");
  // The candidates share A, B and C (every bench is of one problem); scratch is per kernel.
  std::map<std::string, int> index;
  auto tensor = [&](const te::Tensor& t, const std::string& kind) {
    auto it = index.find(t->name);
    if (it != index.end()) return it->second;
    ManifestTensor mt;
    mt.name = t->name;
    mt.dtype = t->dtype;
    mt.shape = t->shape;
    mt.bytes = shape_numel(t->shape) * dtype_size(t->dtype);
    mt.kind = kind;
    if (kind == "input") {
      mt.file = "inputs/" + t->name + ".bin";
      write_file(fs::path(dir) / mt.file,
                 random_floats(shape_numel(t->shape), t->name == "A" ? 11u : 13u));
    }
    if (kind == "output") mt.output_index = 0;
    m.tensors.push_back(mt);
    return index[t->name] = static_cast<int>(m.tensors.size() - 1);
  };
  // Compiled side by side (a nested use of the pool runs inline).
  std::vector<gpu::CompileJob> jobs;
  for (const GemmBench& b : benches) {
    gpu::CompileJob j;
    j.source = b.cuda;
    j.name = b.name + ".cu";
    j.options.arch = arch;
    jobs.push_back(std::move(j));
  }
  const std::vector<gpu::CompileResult> compiled = gpu::compile_cuda_many(jobs);
  for (size_t i = 0; i < benches.size(); ++i) {
    const GemmBench& b = benches[i];
    const gpu::CompileResult& r = compiled[i];
    if (!r.ok) {
      if (errors) (*errors)[i] = b.name + " (" + b.tile.describe() + "): " + r.error.substr(0, 300);
      continue;
    }
    ManifestKernel k;
    k.name = b.name;
    k.source = b.name + ".cu";
    write_file(fs::path(dir) / k.source, b.cuda);
    k.grid = b.kernel.launch.grid_x;
    k.block = static_cast<int>(b.kernel.launch.block_x);
    k.shared_bytes = b.kernel.launch.dynamic_shared_bytes;
    k.cooperative = b.kernel.launch.cooperative;
    k.stages = 1;
    k.packed_args = codegen::takes_packed_params(b.kernel);  // never, for one GEMM's 3 tensors
    for (const codegen::KernelParam& p : b.params) {
      const char* kind = p.role == codegen::KernelParam::Role::Input    ? "input"
                         : p.role == codegen::KernelParam::Role::Output ? "output"
                                                                        : "scratch";
      k.args.push_back(tensor(p.tensor, kind));
    }
    ManifestImage img;
    img.arch = arch;
    img.ptx = b.name + "." + arch + ".ptx";
    write_file(fs::path(dir) / img.ptx, r.ptx);
    if (!r.cubin.empty()) {
      img.cubin = b.name + "." + arch + ".cubin";
      write_file(fs::path(dir) / img.cubin, std::string(r.cubin.begin(), r.cubin.end()));
    }
    if (const gpu::KernelResources* res = r.find_kernel(b.name)) img.registers = res->registers;
    k.images = {img};
    m.kernels.push_back(k);
  }
  write_file(fs::path(dir) / "bundle.json", manifest_json(m));
  return m;
}

TileMeasurer::TileMeasurer(TileMeasureOptions options, RunnerBatch batch)
    : m_options(std::move(options)), m_batch(std::move(batch)) {}

schedule::MeasureFn TileMeasurer::fn() {
  return [this](const te::ComputeOp& op, const std::vector<schedule::TileEstimate>& candidates) {
    return measure(op, candidates);
  };
}

std::vector<TileMeasurement> TileMeasurer::measurements() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_measurements;
}

std::vector<double> TileMeasurer::measure(const te::ComputeOp& op,
                                          const std::vector<schedule::TileEstimate>& candidates) {
  std::lock_guard<std::mutex> lock(m_mutex);
  const schedule::GemmProblem problem = schedule::gemm_problem(op);
  std::string key = problem_text(problem);
  for (const schedule::TileEstimate& c : candidates) key += "|" + c.tile.describe();
  if (auto it = m_done.find(key); it != m_done.end()) return m_measurements[it->second].us;

  TileMeasurement out;
  out.problem = problem_text(problem);
  out.us.assign(candidates.size(), -1.0);
  std::vector<GemmBench> benches;
  std::vector<std::string> notes;
  std::vector<size_t> bench_of;  ///< candidate of each bench
  for (size_t i = 0; i < candidates.size(); ++i) {
    const gpu::Tile& t = candidates[i].tile;
    out.tiles.push_back(t.describe());
    const gpu::Precision p = t.tensor_core ? m_options.precision : gpu::Precision::FP32;
    try {
      benches.push_back(make_gemm_bench(problem, m_options.gpu, p, &t, fmt::format("tile{}", i)));
      bench_of.push_back(i);
    } catch (const UserError& e) {
      notes.push_back(e.what());
    }
  }
  if (!benches.empty()) {
    const std::string dir =
        (fs::path(m_options.dir) / fmt::format("gemm{}", m_measurements.size())).string();
    try {
      fault::point("tune_measure.measure");
      std::map<size_t, std::string> errors;
      BundleManifest m =
          write_candidate_bundle(dir, benches, m_options.arch, m_options.gpu, &errors);
      for (const auto& [i, e] : errors) notes.push_back("does not compile: " + e);
      if (!m.kernels.empty()) {
        std::vector<json> answers =
            m_batch({{{"op", "load"}, {"bundle", fs::absolute(dir).string()}},
                     {{"op", "run"}},
                     {{"op", "profile"},
                      {"runs", m_options.runs},
                      {"warmup", m_options.warmup},
                      {"graph", false},
                      {"counters", false}}});
        SOUFFLE_CHECK(answers.size() == 3, "tile measurement: the runner gave another count");
        runner::ProfileData p = runner::profile_from_json(answers[2]);
        out.timer = p.timer;
        for (const gpu::KernelTimes& k : p.kernels)
          for (size_t b = 0; b < benches.size(); ++b)
            if (benches[b].name == k.name && k.duration_us.count > 0)
              out.us[bench_of[b]] = k.duration_us.median;
        if (!p.timer_note.empty()) notes.push_back(p.timer_note);
      }
    } catch (const std::logic_error&) {
      throw;  // a bug (a broken invariant, the runner's answers miscounted) is not a measurement
    } catch (const std::exception& e) {
      // Every candidate of this problem unmeasured: the model's order stands.
      std::fill(out.us.begin(), out.us.end(), -1.0);
      notes.push_back(std::string("measuring failed: ") + e.what());
    }
  }
  for (const std::string& n : notes) out.note += (out.note.empty() ? "" : "; ") + n;
  m_done[key] = m_measurements.size();
  m_measurements.push_back(out);
  return out.us;
}

}  // namespace souffle
