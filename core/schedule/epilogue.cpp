#include <set>

#include "core/schedule/schedule.h"
#include "core/schedule/template_util.h"
#include "core/te/mutator.h"

namespace souffle::schedule {

using namespace detail;

bool is_epilogue(const te::ComputeOp& main, const std::vector<const te::ComputeOp*>& group,
                 const te::ComputeOp& consumer) {
  GemmParts g;
  if (!match_gemm(main, g)) return false;
  return is_elementwise_follower(main, group, consumer);
}

loop::Kernel schedule_fused(const te::ComputeOp& main,
                            const std::vector<const te::ComputeOp*>& epilogue,
                            const ScheduleConfig& config, const std::vector<te::Tensor>& on_chip,
                            const WeightPanel* panel) {
  GemmParts g;
  SOUFFLE_CHECK(match_gemm(main, g), "schedule_fused: " + main.name + " is not GEMM-like");
  std::vector<const te::ComputeOp*> group;
  for (const te::ComputeOp* e : epilogue) {
    SOUFFLE_CHECK(is_epilogue(main, group, *e),
                  "schedule_fused: " + e->name + " is not an epilogue of " + main.name);
    group.push_back(e);
  }
  // Both templates store through a per-element loop (the tensor-core one from its shared
  // accumulator tile), so the epilogue is computed the same way in either.
  if (tensor_core_eligible(main, g, config)) {
    SOUFFLE_CHECK(!panel,
                  "schedule_fused: " + main.name + " runs on tensor cores: no weight panel");
    return schedule_gemm_tc_fused(main, g, epilogue, on_chip, config);
  }
  return schedule_gemm_fused(main, g, epilogue, on_chip, config, panel);
}

}  // namespace souffle::schedule
