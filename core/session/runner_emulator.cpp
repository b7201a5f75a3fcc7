// The emulator backend of souffle-runner: the bundle's kernels made again from the model its
// manifest names (same plan options, same build), proven to be the bundle's own by comparing
// their CUDA C with the bundle's files, then run in the CPU emulator.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "core/codegen/codegen_cuda.h"
#include "core/emulate/emulate.h"
#include "core/plan/plan.h"
#include "core/session/compile.h"
#include "core/session/load.h"
#include "core/session/pipeline.h"
#include "core/session/runner.h"
#include "core/session/timeline.h"
#include "core/support/error.h"

namespace souffle::runner {

using nlohmann::json;

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::string file_text(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw RunnerError("bad_bundle", "cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

class EmulatorBackend : public Backend {
 public:
  std::string name() const override { return "emulator"; }

  json hello() override {
    return {
        {"backend", "emulator"},
        {"devices", json::array({{{"index", 0},
                                  {"name", "CPU emulator"},
                                  {"emulator", true},
                                  {"threads", std::thread::hardware_concurrency()}}})},
        {"timer", "emulator"},
        {"note", "kernels run in the CPU emulator: its times are CPU wall times, not GPU times"}};
  }

  json load(const BundleManifest& m) override {
    m_kernels.clear();
    m_data.clear();
    auto t0 = std::chrono::steady_clock::now();
    onnx_import::ImportOptions io;
    io.dims = m.source.dims;
    LoadedModel model;
    try {
      onnx_import::ImportOptions given =
          onnx_import::import_options({}, m.source.bind, m.source.shapes);
      io.bind = std::move(given.bind);
      io.shapes = std::move(given.shapes);
      model = load_model(m.source.model, io);
    } catch (const UserError& e) {
      throw RunnerError("bad_bundle", std::string("the emulator makes the kernels again from the "
                                                  "bundle's model, which does not load: ") +
                                          e.what());
    }
    // The plan options every caller uses (priced from built kernels), as profile made them.
    PipelineOptions pipe;
    pipe.strategy = plan::parse_strategy(m.source.strategy);
    pipe.precision = gpu::parse_precision(m.source.precision);
    pipe.gpu = m.source.gpu;
    schedule::SyncMode sync = schedule::SyncMode::Grid;
    if (!schedule::parse_sync_mode(m.source.sync, sync))
      throw RunnerError("bad_bundle", "unknown sync mode '" + m.source.sync + "'");
    pipe.sync = sync;  // the plan was priced and cut with the kernels' sync mode
    pipe.waves = m.source.waves;
    pipe.weight_panels = m.source.weight_panels;
    if (!m.source.decisions_json.empty())
      pipe.decisions = plan::parse_decisions(m.source.decisions_json, m.dir + "/bundle.json");
    pipe.until = Step::Emit;
    // Instrumented as the bundle's were (docs/timeline.md).
    pipe.compile.timeline.enabled = m.source.timeline;
    if (m.source.timeline_max_bytes > 0)
      pipe.compile.timeline.max_bytes = m.source.timeline_max_bytes;
    PipelineResult run = run_pipeline(model, pipe);  // the kernels the plan's pricing built
    m_plan = std::move(run.plan);
    std::vector<CompiledKernel>& built = run.kernels.kernels;
    json kernels = json::array();
    for (const ManifestKernel& mk : m.kernels) {
      auto it = std::find_if(built.begin(), built.end(),
                             [&](const CompiledKernel& c) { return c.name == mk.name; });
      if (it == built.end() || !it->ok())
        throw RunnerError("bad_bundle",
                          mk.name + " is not among the kernels this build makes from " +
                              m.source.model + (it != built.end() ? ": " + it->error : ""),
                          mk.name);
      // The bundle's source was emitted under the register cap its compile chose.
      codegen::CudaEmitOptions eo;
      eo.max_registers = mk.register_cap;
      std::string cuda = codegen::emit_cuda(it->kernel, eo);
      std::string theirs = file_text((std::filesystem::path(m.dir) / mk.source).string());
      if (cuda != theirs)
        throw RunnerError("bad_bundle",
                          mk.source + " differs from the kernel this build makes from " +
                              m.source.model + " (" + m.source.strategy +
                              "): the bundle comes from another version or plan; compile it again",
                          mk.name);
      if (it->kernel.flags.empty() == mk.flag_epoch)
        throw RunnerError(
            "bad_bundle",
            mk.name + (mk.flag_epoch ? " takes a flag epoch, but" : " takes none, but") +
                " the kernel this build makes " + (mk.flag_epoch ? "has no flags" : "has flags"),
            mk.name);
      m_kernels.push_back(it->kernel);
      kernels.push_back({{"name", mk.name},
                         {"grid", mk.grid},
                         {"block", mk.block},
                         {"cooperative", mk.cooperative},
                         {"image", "loop IR (emulated)"}});
    }
    m_manifest = m;
    m_data.assign(m.tensors.size(), nullptr);
    // Flag counters are zeroed once, here, and kept across runs; each kernel's epoch starts at
    // 0 and its first launch passes 1.
    reset_flags();
    return {{"kernels", kernels}, {"build_ms", ms_since(t0)}};
  }

  void upload(int index, const std::string& bytes) override {
    const ManifestTensor& t = m_manifest.tensors.at(static_cast<size_t>(index));
    if (static_cast<int64_t>(bytes.size()) != t.bytes)
      throw RunnerError("bad_request", t.name + " takes " + std::to_string(t.bytes) +
                                           " bytes, got " + std::to_string(bytes.size()));
    m_data[static_cast<size_t>(index)] =
        std::make_shared<TensorData>(t.dtype, t.shape, std::string(bytes));
  }

  std::string read(int index) override {
    const ManifestTensor& t = m_manifest.tensors.at(static_cast<size_t>(index));
    auto it = m_buffers.find(t.name);
    std::shared_ptr<TensorData> d =
        it != m_buffers.end() ? it->second : m_data[static_cast<size_t>(index)];
    if (!d) throw RunnerError("bad_request", t.name + " holds nothing yet (send run first)");
    return std::string(reinterpret_cast<const char*>(d->raw()),
                       static_cast<size_t>(d->byte_size()));
  }

  void run(const EventFn& on_event) override { run_once(on_event, nullptr); }

  ProfileData profile(int runs, int warmup, bool graph, bool counters,
                      const EventFn& on_event) override {
    ProfileData p;
    p.timer = "emulator";
    p.timer_note = "CPU wall time of the emulator, not a GPU time";
    p.runs = runs;
    p.warmup = 0;
    (void)warmup;
    std::vector<std::vector<double>> times(m_kernels.size());
    std::vector<double> total;
    for (int r = 0; r < runs; ++r) {
      std::vector<double> t;
      auto t0 = std::chrono::steady_clock::now();
      run_once(on_event, &t);
      total.push_back(ms_since(t0) * 1e3);
      for (size_t k = 0; k < t.size(); ++k) times[k].push_back(t[k]);
    }
    for (size_t k = 0; k < m_kernels.size(); ++k) {
      gpu::KernelTimes kt;
      kt.name = m_manifest.kernels[k].name;
      kt.duration_us = gpu::stats_of(times[k]);
      kt.gap_before_us = gpu::stats_of(std::vector<double>(times[k].size(), 0.0));
      p.kernels.push_back(kt);
    }
    p.end_to_end_us = gpu::stats_of(total);
    if (graph) p.graph_note = "no CUDA graphs on the emulator";
    if (counters) p.counters_note = "no hardware counters on the emulator";
    return p;
  }

  gpu::Calibration calibrate(const EventFn&) override {
    throw RunnerError("unsupported", "calibration measures a GPU; the emulator backend has none");
  }

 private:
  /// Zeroes the flag counters and restarts every kernel's epoch (its next launch passes 1).
  void reset_flags() {
    for (size_t i = 0; i < m_manifest.tensors.size(); ++i)
      if (m_manifest.tensors[i].zeroed_at_load())
        m_data[i] =
            std::make_shared<TensorData>(m_manifest.tensors[i].dtype, m_manifest.tensors[i].shape);
    m_epochs.assign(m_kernels.size(), 0);
  }

  void run_once(const EventFn& on_event, std::vector<double>* times) {
    if (m_kernels.empty() && m_manifest.kernels.empty())
      throw RunnerError("bad_request", "no bundle is loaded (send load first)");
    m_buffers.clear();
    for (size_t i = 0; i < m_manifest.tensors.size(); ++i)
      if (!m_manifest.tensors[i].zeroed() && m_data[i])
        m_buffers[m_manifest.tensors[i].name] = m_data[i];
    for (size_t k = 0; k < m_kernels.size(); ++k) {
      const std::string& name = m_manifest.kernels[k].name;
      on_event({{"event", "launch"}, {"kernel", name}, {"index", k}, {"of", m_kernels.size()}});
      emulate::EmulateOptions eo;
      if (!m_kernels[k].flags.empty()) eo.flag_epoch = ++m_epochs[k];
      auto t0 = std::chrono::steady_clock::now();
      try {
        emulate::run_kernel(m_kernels[k], m_buffers, eo);
      } catch (const emulate::EmulationError& e) {
        reset_flags();  // this run's releases are lost: a later run starts from zero again
        throw RunnerError("kernel_fault", std::string("emulator: ") + e.what(), name);
      }
      if (times) times->push_back(ms_since(t0) * 1e3);
      // Timeline records come back under the buffer's name; the bundle lists the buffer as
      // the kernel's scratch "KERNEL.BUFFER".
      if (const ManifestKernel& mk = m_manifest.kernels[k]; mk.timeline_tensor >= 0) {
        std::optional<loop::TimelineLayout> tl = loop::timeline_layout(m_kernels[k]);
        auto it = tl ? m_buffers.find(tl->buffer) : m_buffers.end();
        if (it != m_buffers.end())
          m_buffers[m_manifest.tensors[static_cast<size_t>(mk.timeline_tensor)].name] = it->second;
      }
    }
    // The counters as the kernels left them, for the next run.
    for (size_t i = 0; i < m_manifest.tensors.size(); ++i)
      if (m_manifest.tensors[i].zeroed_at_load()) {
        auto it = m_buffers.find(m_manifest.tensors[i].name);
        if (it != m_buffers.end()) m_data[i] = it->second;
      }
  }

  BundleManifest m_manifest;
  plan::FusionPlan m_plan;
  std::vector<loop::Kernel> m_kernels;
  std::vector<std::shared_ptr<TensorData>> m_data;  ///< uploaded, by manifest index
  std::vector<int64_t> m_epochs;  ///< per kernel: the flag epoch of its last launch
  emulate::Buffers m_buffers;     ///< of the last run, by tensor name
};

}  // namespace

std::unique_ptr<Backend> make_emulator_backend() {
  return std::make_unique<EmulatorBackend>();
}

}  // namespace souffle::runner
