// The emulator's overhead with timeline records on (docs/timeline.md): each model's kernels
// under souffle run in the emulator plain and instrumented, on zero inputs, N runs each,
// alternating plain and instrumented so that a change in the machine's load hits both; the
// median and the best of each.
// The instrumented run also keeps the emulated clock (a tick per statement a warp runs) and
// writes the records; the figures are CPU times on this machine, printed with its load.
//
//   bench_timeline [--runs N] MODEL.onnx...   (N: 5 by default)
#include <algorithm>
#include <chrono>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include <fmt/format.h>

#include "core/emulate/emulate.h"
#include "core/loop/timeline.h"
#include "core/session/compile.h"
#include "core/session/load.h"
#include "core/session/pipeline.h"
#include "tests/bench/machine.h"

namespace {

using namespace souffle;

double run_ms(const std::vector<CompiledKernel>& kernels, const te::TeProgram& prog) {
  emulate::Buffers bufs;
  for (const te::Tensor& in : prog.inputs)
    bufs[in->name] = std::make_shared<TensorData>(in->dtype, in->shape);
  auto t0 = std::chrono::steady_clock::now();
  for (const CompiledKernel& k : kernels) emulate::run_kernel(k.kernel, bufs);
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  int runs = 5;
  std::vector<std::string> models;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--runs" && i + 1 < argc)
      runs = std::max(1, std::atoi(argv[++i]));
    else
      models.push_back(a);
  }
  if (models.empty()) {
    std::cerr << "usage: bench_timeline [--runs N] MODEL.onnx...\n";
    return 2;
  }
  std::cout << fmt::format(
      "machine: {} hardware threads, load {}; {} runs each, alternating, CPU ms (median, best)\n",
      std::thread::hardware_concurrency(), bench::load_average(), runs);
  std::cout << fmt::format("{:<40} {:>7} {:>8} {:>10} {:>10} {:>9} {:>9} {:>9} {:>9}\n", "model",
                           "kernels", "records", "plain ms", "timeline", "overhead", "best",
                           "best tl", "overhead");
  for (const std::string& path : models) {
    LoadedModel m = load_model(path);
    PipelineOptions pipe;
    pipe.gpu = gpu::gpu_spec("a100");
    plan::FusionPlan p = plan::plan(m.program, plan_options(pipe));
    CompileOptions co;
    co.archs.clear();
    CompileReport plain = compile_plan(p, co);
    co.timeline.enabled = true;
    CompileReport timed = compile_plan(p, co);
    if (!plain.ok() || !timed.ok()) {
      std::cout << path << ": a kernel does not build\n";
      continue;
    }
    int64_t records = 0;
    for (const CompiledKernel& k : timed.kernels)
      if (auto l = loop::timeline_layout(k.kernel)) records += l->rows * l->slot_count;
    run_ms(plain.kernels, m.program);  // warm the caches once
    std::vector<double> a, b;
    for (int r = 0; r < runs; ++r) {
      a.push_back(run_ms(plain.kernels, m.program));
      b.push_back(run_ms(timed.kernels, m.program));
    }
    const double ma = median(a), mb = median(b);
    const double ba = *std::min_element(a.begin(), a.end());
    const double bb = *std::min_element(b.begin(), b.end());
    std::cout << fmt::format(
        "{:<40} {:>7} {:>8} {:>10.1f} {:>10.1f} {:>8.1f}% {:>9.1f} {:>9.1f} {:>8.1f}%\n", path,
        plain.kernels.size(), records, ma, mb, 100 * (mb - ma) / ma, ba, bb, 100 * (bb - ba) / ba);
  }
  std::cout << fmt::format("load at the end: {}\n", bench::load_average());
  return 0;
}
