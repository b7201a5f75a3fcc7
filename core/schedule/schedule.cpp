#include "core/schedule/schedule.h"

#include "core/schedule/template_util.h"

namespace souffle::schedule {

using namespace detail;
using loop::Kernel;

const char* schedule_kind_name(ScheduleKind k) {
  switch (k) {
    case ScheduleKind::Injective:
      return "injective";
    case ScheduleKind::Reduction:
      return "reduction";
    case ScheduleKind::Gemm:
      return "gemm";
  }
  return "?";
}

ScheduleKind classify(const te::ComputeOp& op) {
  if (op.reduce == te::ReduceKind::None) return ScheduleKind::Injective;
  GemmParts g;
  return match_gemm(op, g) ? ScheduleKind::Gemm : ScheduleKind::Reduction;
}

Kernel schedule_op(const te::ComputeOp& op, const ScheduleConfig& config) {
  if (op.reduce == te::ReduceKind::None) return schedule_injective(op, config);
  GemmParts g;
  if (match_gemm(op, g))
    return tensor_core_eligible(op, g, config) ? schedule_gemm_tc(op, g, config)
                                               : schedule_gemm(op, g, config);
  return schedule_reduction(op, config);
}

loop::KernelSet schedule_program(const te::TeProgram& program, const ScheduleConfig& config) {
  loop::KernelSet ks;
  ks.name = program.name;
  ks.inputs = program.inputs;
  ks.outputs = program.outputs;
  for (const te::Op& op : program.ops) ks.kernels.push_back(schedule_op(*op, config));
  return ks;
}

}  // namespace souffle::schedule
