// The CUDA backend's calibration: launch overhead (plain and as a CUDA graph), grid barriers,
// per-tile flags, copy bandwidth and the project's GEMM kernels' rates, measured on the device.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <ctime>

#include "core/gpu/nvrtc.h"
#include "core/session/runner_cuda_backend.h"
#include "embedded/calibration_resources.h"

namespace souffle::runner::cuda_backend {
namespace {

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

}  // namespace

// ---- calibration ----

/// Kernels that measure the device, not the model: an empty kernel (launch overhead), one that
/// only synchronizes its grid `rounds` times (grid-barrier cost), one whose blocks release a
/// per-tile flag and wait on the next `tiles` blocks' flags `rounds` times, as the generated
/// kernels' FlagRelease and FlagWait do (flag cost), a grid-stride copy (bandwidth). Their CUDA
/// text is resources/calibration/calibration.cu, compiled in (souffle_embed), and they are
/// compiled for the device the first time one is asked for.
CUfunction CudaBackend::calibration_kernel(const char* name) {
  if (!m_calibration) {
    gpu::CompileOptions o;
    o.arch = m_dev.arch();
    gpu::CompileResult r =
        gpu::compile_cuda(std::string(resources::calibration_kernels), "calibration.cu", o);
    if (!r.ok)
      throw RunnerError("unsupported", "the calibration kernels do not compile: " + r.error);
    const std::string& image =
        r.cubin.empty() ? r.ptx : std::string(r.cubin.begin(), r.cubin.end());
    std::string data = image;
    if (r.cubin.empty()) data.push_back('\0');
    ModuleHandle module(m_api->cuModuleUnload);
    check(m_api->cuModuleLoadDataEx(module.out(), data.data(), 0, nullptr, nullptr),
          "loading the calibration kernels");
    m_calibration = std::move(module);
  }
  CUfunction f = nullptr;
  check(m_api->cuModuleGetFunction(&f, m_calibration.get(), name),
        std::string("cuModuleGetFunction ") + name);
  return f;
}

/// Median over 5 repetitions of the time of `n` back-to-back launches, in microseconds.
double CudaBackend::time_launches(CUfunction f, unsigned grid, unsigned block, void** args, int n,
                                  bool coop, unsigned shared) {
  EventHandle a = make_event(), b = make_event();
  std::vector<double> t;
  for (int rep = 0; rep < 6; ++rep) {
    check(m_api->cuEventRecord(a.get(), m_stream), "cuEventRecord");
    for (int i = 0; i < n; ++i)
      check(
          coop
              ? m_api->cuLaunchCooperativeKernel(f, grid, 1, 1, block, 1, 1, shared, m_stream, args)
              : m_api->cuLaunchKernel(f, grid, 1, 1, block, 1, 1, shared, m_stream, args, nullptr),
          "a calibration launch");
    check(m_api->cuEventRecord(b.get(), m_stream), "cuEventRecord");
    sync("calibration");
    if (rep > 0) t.push_back(elapsed_us(a, b));  // the first repetition warms up
  }
  return gpu::stats_of(t).median;
}

double CudaBackend::time_gemm(const GemmBench& b, std::string* note) {
  const std::string what = std::string(gpu::precision_name(b.precision)) + " GEMM";
  gpu::CompileOptions o;
  o.arch = m_dev.arch();
  gpu::CompileResult r = gpu::compile_cuda(b.cuda, "gemm_bench.cu", o);
  if (!r.ok) {
    *note = "the " + what + " kernel does not compile: " + r.error.substr(0, 400);
    return 0;
  }
  std::string image = r.cubin.empty() ? r.ptx : std::string(r.cubin.begin(), r.cubin.end());
  if (r.cubin.empty()) image.push_back('\0');
  ModuleHandle module(m_api->cuModuleUnload);
  check(m_api->cuModuleLoadDataEx(module.out(), image.data(), 0, nullptr, nullptr),
        "loading the " + what + " kernel");
  CUfunction f = nullptr;
  check(m_api->cuModuleGetFunction(&f, module.get(), b.name.c_str()),
        "cuModuleGetFunction " + b.name, b.name);
  const loop::LaunchConfig& l = b.kernel.launch;
  const unsigned shared = static_cast<unsigned>(l.dynamic_shared_bytes);
  opt_in_shared(f, shared, b.name);
  // A and B hold one value in every element (the bytes 0x3C: 0.0115 as fp32), so every
  // element of C must come out as K times its square.
  const unsigned char fill = 0x3C;
  float value = 0;
  {
    uint32_t bits = 0x3C3C3C3Cu;
    std::memcpy(&value, &bits, sizeof value);
  }
  std::vector<DeviceMemory> buffers;
  std::vector<CUdeviceptr> ptrs(b.params.size());
  CUdeviceptr out = 0;
  size_t out_bytes = 0;
  for (size_t i = 0; i < b.params.size(); ++i) {
    const te::Tensor& t = b.params[i].tensor;
    size_t bytes = static_cast<size_t>(shape_numel(t->shape)) * dtype_size(t->dtype);
    buffers.emplace_back(m_api->cuMemFree);
    check(m_api->cuMemAlloc(buffers.back().out(), std::max<size_t>(bytes, 4)),
          "cuMemAlloc " + t->name);
    ptrs[i] = buffers.back().get();
    bool input = b.params[i].role == codegen::KernelParam::Role::Input;
    check(m_api->cuMemsetD8Async(ptrs[i], input ? fill : 0, bytes, m_stream), "cuMemset");
    if (t->name == "C") {
      out = ptrs[i];
      out_bytes = bytes;
    }
  }
  std::vector<void*> args;
  for (CUdeviceptr& p : ptrs) args.push_back(&p);
  const int launches = 3;
  double us = time_launches(f, static_cast<unsigned>(l.grid_x), static_cast<unsigned>(l.block_x),
                            args.data(), launches, l.cooperative, shared) /
              launches;
  // Check the first and last elements of C.
  const size_t n = std::min<size_t>(out_bytes / 4, 4096);
  std::vector<float> head(n), tail(n);
  read_device(head.data(), out, n * 4, "reading the " + what + "'s result");
  read_device(tail.data(), out + (out_bytes - n * 4), n * 4, "reading the " + what + "'s result");
  const double want = gemm_bench_expected(b, value, value);
  const double tolerance = b.precision == gpu::Precision::FP32 ? 1e-3 : 1e-2;
  for (const std::vector<float>* part : {&head, &tail})
    for (float got : *part)
      if (!(std::abs(got - want) <= tolerance * want)) {
        *note = "the " + what + " kernel computed " + std::to_string(got) + " where " +
                std::to_string(want) + " was due: its rate is not kept";
        return 0;
      }
  return us > 0 ? b.flops() / (us * 1e-6) / 1e12 : 0;
}

gpu::Calibration CudaBackend::calibrate(const EventFn& on_event) {
  ensure_context();
  gpu::Calibration c;
  c.device = m_dev.name;
  c.compute_capability = m_dev.cc();
  c.sm_count = m_dev.sms;
  m_api->cuDriverGetVersion(&c.driver_version);
  c.date = utc_now();
  c.clocks = "SM up to " + std::to_string(m_dev.clock_khz / 1000) + " MHz, memory up to " +
             std::to_string(m_dev.memory_clock_khz / 1000) +
             " MHz (device attributes; the clocks during the runs were not read)";

  on_event({{"event", "calibrate"}, {"phase", "launch overhead"}});
  CUfunction empty = calibration_kernel("souffle_empty");
  const int launches = 2000;
  c.launch_overhead_us = time_launches(empty, 1, 32, nullptr, launches, false) / launches;

  // The same launches as one CUDA graph (none when the graph cannot be made: a note-less gap,
  // as the cost model then takes the spec's figure).
  try {
    const int nodes = 200;
    c.graph_launch_us =
        gpu::stats_of(replay("200 empty launches", 1, 5,
                             [&] {
                               for (int i = 0; i < nodes; ++i)
                                 check(m_api->cuLaunchKernel(empty, 1, 1, 1, 32, 1, 1, 0, m_stream,
                                                             nullptr, nullptr),
                                       "an empty launch");
                             }))
            .median /
        nodes;
  } catch (const RunnerError&) {
    if (m_dead) throw;
  }

  // One grid barrier against the grid: (time of R2 barriers - time of R1) / (R2 - R1), so the
  // launch is subtracted, at 1..max co-resident blocks per SM of 256 threads.
  on_event({{"event", "calibrate"}, {"phase", "grid barriers"}});
  CUfunction gs = calibration_kernel("souffle_grid_sync");
  int per_sm = 0;
  check(m_api->cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, gs, 256, 0), "occupancy");
  if (m_dev.cooperative)
    for (int b = 1; b <= per_sm; b = b < 4 ? b + 1 : b * 2) {
      const unsigned grid = static_cast<unsigned>(b * m_dev.sms);
      int r1 = 10, r2 = 410;
      void* a1[] = {&r1};
      void* a2[] = {&r2};
      double t1 = time_launches(gs, grid, 256, a1, 5, true) / 5;
      double t2 = time_launches(gs, grid, 256, a2, 5, true) / 5;
      c.grid_barrier.push_back(
          {static_cast<int>(grid), b, 256, std::max(0.0, (t2 - t1) / (r2 - r1))});
    }
  c.grid_barrier_fit = gpu::fit_barrier_cost(c.grid_barrier);

  // Per-tile flags at one block per SM (co-resident: a cooperative launch): a round of release
  // and one awaited tile, and what three more awaited tiles add, per round as above.
  on_event({{"event", "calibrate"}, {"phase", "per-tile flags"}});
  DeviceMemory flags(m_api->cuMemFree);
  if (m_dev.cooperative && m_dev.sms > 4 &&
      m_api->cuMemAlloc(flags.out(), sizeof(int) * size_t(m_dev.sms)) == CUDA_SUCCESS) {
    CUdeviceptr counters = flags.get();
    check(m_api->cuMemsetD8Async(counters, 0, sizeof(int) * size_t(m_dev.sms), m_stream),
          "clearing the flag counters");
    CUfunction fr = calibration_kernel("souffle_flag_rounds");
    auto per_round = [&](int tiles) {
      int r1 = 10, r2 = 410;
      void* a1[] = {&counters, &r1, &tiles};
      void* a2[] = {&counters, &r2, &tiles};
      const unsigned grid = static_cast<unsigned>(m_dev.sms);
      double t1 = time_launches(fr, grid, 256, a1, 5, true) / 5;
      double t2 = time_launches(fr, grid, 256, a2, 5, true) / 5;
      return std::max(0.0, (t2 - t1) / (r2 - r1));
    };
    c.flag_round_us = per_round(1);
    c.flag_tile_us = std::max(0.0, (per_round(4) - c.flag_round_us) / 3);
  }
  flags.reset();

  // Copy bandwidth: 1 GiB read and 1 GiB written.
  on_event({{"event", "calibrate"}, {"phase", "copy bandwidth"}});
  const size_t bytes = size_t{1} << 30;
  DeviceMemory from(m_api->cuMemFree), to(m_api->cuMemFree);
  if (m_api->cuMemAlloc(from.out(), bytes) == CUDA_SUCCESS &&
      m_api->cuMemAlloc(to.out(), bytes) == CUDA_SUCCESS) {
    CUdeviceptr src = from.get(), dst = to.get();
    check(m_api->cuMemsetD8Async(src, 1, bytes, m_stream), "filling the copy's source");
    CUfunction copy = calibration_kernel("souffle_copy");
    unsigned long long n = bytes / 16;
    void* args[] = {&src, &dst, &n};
    double us =
        time_launches(copy, static_cast<unsigned>(m_dev.sms * 8), 256, args, 10, false) / 10;
    c.dram_bandwidth_gbps = us > 0 ? 2.0 * bytes / (us * 1e-6) / 1e9 : 0;
  }
  from.reset();
  to.reset();

  // GEMM rates: the project's own SIMT and tensor-core templates on a large problem, with the
  // tiles the tuner picks for this device's spec.
  on_event({{"event", "calibrate"}, {"phase", "GEMM rates"}});
  std::optional<gpu::GpuSpec> spec = gpu::device_gpu_spec(m_dev.attributes);
  std::vector<std::string> notes;
  if (!spec) {
    notes.push_back("no built-in GPU spec matches " + m_dev.name +
                    ", so no tile is tuned for it: GEMM rates not measured");
  } else {
    schedule::GemmProblem p;
    p.m = p.n = p.k = kCalibrationGemmSize;
    for (gpu::Precision precision : {gpu::Precision::FP32, gpu::Precision::FP16}) {
      const bool fp32 = precision == gpu::Precision::FP32;
      if (!fp32 && m_dev.major < 7) {
        notes.push_back("no tensor cores below compute capability 7.0");
        continue;
      }
      const std::string what = std::string("the ") + gpu::precision_name(precision) + " GEMM";
      if (m_dead) {
        notes.push_back(what + " was not measured: the CUDA context was lost");
        continue;
      }
      // A GEMM that fails, faults included, loses its own rate only: what was measured before
      // it is answered (after a fault, the runner then exits).
      std::string note;
      try {
        GemmBench b = make_gemm_bench(p, *spec, precision, nullptr,
                                      fp32 ? "souffle_gemm_fp32" : "souffle_gemm_fp16");
        double tflops = time_gemm(b, &note);
        (fp32 ? c.gemm_fp32_tflops : c.gemm_fp16_tflops) = tflops;
        if (tflops > 0) (fp32 ? c.gemm_fp32_tile : c.gemm_fp16_tile) = b.tile.describe();
        // The rate belongs to the mainloop this kernel was built with, and the cost model takes
        // it only for stages built the same way.
        if (tflops > 0 && !fp32) c.gemm_fp16_template = b.mainloop_template;
      } catch (const UserError& e) {
        note = e.what();
      } catch (const RunnerError& e) {
        note = what + " failed: " + e.what();
      }
      if (!note.empty()) notes.push_back(note);
    }
  }
  for (const std::string& n : notes) c.gemm_note += (c.gemm_note.empty() ? "" : "; ") + n;
  return c;
}

}  // namespace souffle::runner::cuda_backend
