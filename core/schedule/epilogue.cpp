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
  if (consumer.reduce != te::ReduceKind::None || consumer.axes.size() != main.axes.size())
    return false;
  for (size_t d = 0; d < main.axes.size(); ++d)
    if (consumer.axes[d].extent != main.axes[d].extent) return false;
  std::set<const te::TensorNode*> mine{main.output.get()};
  for (const te::ComputeOp* e : group) mine.insert(e->output.get());
  // Each read of the group's tensors must be at the consumer's own index: the thread storing
  // that element holds exactly that value and no other.
  bool reads_group = false, elementwise = true;
  te::for_each_node(consumer.body, [&](const te::Expr& n) {
    const te::Read* r = n.as<te::Read>();
    if (!r || !mine.count(r->tensor.get())) return;
    reads_group = true;
    if (r->indices.size() != consumer.axes.size()) {
      elementwise = false;
      return;
    }
    for (size_t d = 0; d < r->indices.size(); ++d) {
      // Lowering writes 0 for an axis of extent 1: the same element.
      const te::IntImm* zero = r->indices[d].as<te::IntImm>();
      bool same = r->indices[d].same_as(consumer.axes[d].var) ||
                  (consumer.axes[d].extent == 1 && zero && zero->value == 0);
      elementwise &= same;
    }
  });
  return reads_group && elementwise;
}

loop::Kernel schedule_fused(const te::ComputeOp& main,
                            const std::vector<const te::ComputeOp*>& epilogue,
                            const ScheduleConfig& config, const std::vector<te::Tensor>& on_chip) {
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
  if (tensor_core_eligible(main, g, config))
    return schedule_gemm_tc_fused(main, g, epilogue, on_chip, config);
  return schedule_gemm_fused(main, g, epilogue, on_chip, config);
}

}  // namespace souffle::schedule
