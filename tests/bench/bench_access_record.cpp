// The emulator's access recording (emulate/access_record.h) and what it costs: each model's
// kernels under souffle run in the emulator over zero inputs, with recording off, with it on
// (every kernel, whole kernel), and, where the build could extract it, with the emulator as it
// was before recording existed (the same source at the commit before, compiled beside this one
// under other names). Median of N interleaved runs each, in this process's CPU time (so that
// other processes on a loaded machine count less), printed with the machine's load.
//
//   bench_access_record [--runs N] MODEL.onnx...
#include <algorithm>
#include <ctime>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "core/emulate/emulate.h"
#include "core/session/compile.h"
#include "core/session/load.h"
#include "core/session/pipeline.h"
#include "tests/bench/machine.h"

#ifdef SOUFFLE_BENCH_OLD_EMULATOR
namespace souffle::emulate {
// The emulator before access recording (emulate_before_recording.cpp, renamed at build time).
void run_kernel_before_recording(const loop::Kernel& kernel, Buffers& buffers,
                                 const EmulateOptions& options);
}  // namespace souffle::emulate
#endif

namespace {

using namespace souffle;

enum class Mode { Off, On, Old };

/// This process's CPU time (ms): what other processes on a loaded machine take is not counted.
double cpu_ms() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

double run_ms(const std::vector<CompiledKernel>& kernels, const te::TeProgram& prog, Mode mode,
              int64_t& recorded_bytes) {
  emulate::Buffers bufs;
  for (const te::Tensor& in : prog.inputs)
    bufs[in->name] = std::make_shared<TensorData>(in->dtype, in->shape);
  emulate::AccessRecord rec;
  emulate::EmulateOptions eo;
  if (mode == Mode::On) eo.access_record = &rec;
  const double t0 = cpu_ms();
  for (const CompiledKernel& k : kernels) {
#ifdef SOUFFLE_BENCH_OLD_EMULATOR
    if (mode == Mode::Old) {
      emulate::run_kernel_before_recording(k.kernel, bufs, eo);
      continue;
    }
#endif
    emulate::run_kernel(k.kernel, bufs, eo);
  }
  const double ms = cpu_ms() - t0;
  recorded_bytes = 0;
  for (const emulate::KernelAccess& k : rec.kernels)
    for (const emulate::TensorAccess& t : k.tensors)
      recorded_bytes += t.block_elements_read + t.block_elements_written;
  return ms;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 3;
  std::vector<std::string> models;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc)
      runs = std::max(1, std::atoi(argv[++i]));
    else
      models.push_back(a);
  }
  if (models.empty()) {
    std::cerr << "usage: bench_access_record [--runs N] MODEL.onnx...\n";
    return 2;
  }
#ifdef SOUFFLE_BENCH_OLD_EMULATOR
  const bool old = true;
#else
  const bool old = false;
#endif
  std::cout << fmt::format("machine: {} hardware threads, load {}; median of {} runs, CPU ms\n",
                           std::thread::hardware_concurrency(), bench::load_average(), runs);
  std::cout << fmt::format("{:<36} {:>7} {:>10} {:>10} {:>10} {:>9} {:>12}\n", "model", "kernels",
                           "before ms", "off ms", "on ms", "on/off", "elements");
  for (const std::string& path : models) {
    LoadedModel m = load_model(path);
    PipelineOptions pipe;
    pipe.gpu = gpu::gpu_spec("a100");
    plan::FusionPlan p = plan::plan(m.program, plan_options(pipe));
    CompileOptions co;
    co.archs.clear();
    CompileReport built = compile_plan(p, co);
    if (!built.ok()) {
      std::cout << path << ": a kernel does not build\n";
      continue;
    }
    int64_t elements = 0;
    run_ms(built.kernels, m.program, Mode::Off, elements);  // warm the caches once
    std::vector<double> t_old, t_off, t_on;
    // Interleaved, so that a change in the machine's load falls on every mode alike.
    for (int r = 0; r < runs; ++r) {
      if (old) t_old.push_back(run_ms(built.kernels, m.program, Mode::Old, elements));
      t_off.push_back(run_ms(built.kernels, m.program, Mode::Off, elements));
      t_on.push_back(run_ms(built.kernels, m.program, Mode::On, elements));
    }
    const double off = median(t_off), on = median(t_on);
    std::cout << fmt::format("{:<36} {:>7} {:>10} {:>10.1f} {:>10.1f} {:>8.2f}x {:>12}\n", path,
                             built.kernels.size(),
                             old ? fmt::format("{:.1f}", median(t_old)) : std::string("n/a"), off,
                             on, on / off, elements);
  }
  return 0;
}
