#include "core/session/gemm_bench.h"

#include "core/codegen/codegen_cuda.h"
#include "core/schedule/price.h"
#include "core/schedule/schedule.h"
#include "core/support/error.h"
#include "core/te/builder.h"

namespace souffle {

te::Op gemm_bench_op(const schedule::GemmProblem& p) {
  const bool batched = p.batch > 1;
  auto shape = [&](int64_t rows, int64_t cols) {
    return batched ? std::vector<int64_t>{p.batch, rows, cols} : std::vector<int64_t>{rows, cols};
  };
  te::Tensor a = te::make_input("A", shape(p.m, p.k), DType::Float32);
  te::Tensor b = te::make_input("B", shape(p.k, p.n), DType::Float32);
  return te::reduce("C", shape(p.m, p.n), DType::Float32, te::ReduceKind::Sum, {p.k},
                    [&](const std::vector<te::Expr>& i, const std::vector<te::Expr>& r) {
                      if (batched)
                        return te::read(a, {i[0], i[1], r[0]}) * te::read(b, {i[0], r[0], i[2]});
                      return te::read(a, {i[0], r[0]}) * te::read(b, {r[0], i[1]});
                    });
}

GemmBench make_gemm_bench(const schedule::GemmProblem& problem, const gpu::GpuSpec& gpu,
                          gpu::Precision precision, const gpu::Tile* tile,
                          const std::string& name) {
  GemmBench b;
  b.problem = problem;
  b.problem.in_bytes = b.problem.out_bytes = 4;
  b.precision = precision;
  b.op = gemm_bench_op(problem);
  const auto& op = static_cast<const te::ComputeOp&>(*b.op);
  const bool tensor_core = precision != gpu::Precision::FP32;
  if (tile) {
    if (tile->tensor_core != tensor_core)
      throw UserError("", name,
                      std::string("a ") + (tile->tensor_core ? "tensor-core" : "SIMT") +
                          " tile cannot run the " + gpu::precision_name(precision) + " GEMM");
    b.tile = *tile;
    b.why = "given";
  } else {
    schedule::TuneOptions to;
    to.gpu = gpu;
    to.precision = precision;
    schedule::TuneResult r = schedule::tune_gemm(op, to);
    if (!r.ok())
      throw UserError("", name,
                      "no GEMM tile of the " + std::string(gpu::precision_name(precision)) +
                          " template fits " + gpu.name);
    b.tile = r.best().tile;
    b.why = r.reason();
  }
  schedule::ScheduleConfig config;
  config.precision = precision;
  b.kernel = schedule::schedule_op(op, schedule::with_tile(config, b.tile));
  b.kernel.name = name;
  b.name = codegen::cuda_kernel_names({{}, {}, {}, {b.kernel}}).front();
  b.cuda = codegen::emit_cuda(b.kernel);
  b.params = codegen::kernel_params(b.kernel);
  if (tensor_core) {
    // What the pricer sees in the built kernel's IR, so that a rate timed on it is applied to
    // stages of the same structure (gpu::mainloop_cost) and to no other.
    const schedule::KernelPrice price =
        schedule::price_kernel(b.kernel, gpu, gpu::cost_constants(gpu, precision), nullptr);
    for (const schedule::StagePrice& s : price.stages)
      if (s.work.tensor_core && s.work.mainloop.known()) {
        b.mainloop_template = s.work.mainloop.template_name();
        break;
      }
  }
  return b;
}

double gemm_bench_expected(const GemmBench& b, double a, double bv) {
  return static_cast<double>(b.problem.k) * a * bv;
}

}  // namespace souffle
