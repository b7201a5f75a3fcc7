#include "core/schedule/kernel_units.h"

#include <set>
#include <unordered_map>

#include "core/analysis/access.h"
#include "core/plan/vertical.h"
#include "core/schedule/schedule.h"
#include "core/te/mutator.h"

namespace souffle::schedule {

KernelProgram fold_views(const plan::FusionPlan& plan) {
  return fold_views(plan.program, plan.partitions);
}

KernelProgram fold_views(const te::TeProgram& prog,
                         const std::vector<plan::Partition>& partitions) {
  const size_t n = prog.ops.size();
  KernelProgram kp;
  kp.program = prog;
  kp.dropped.assign(n, false);
  kp.folds.assign(n, {});
  kp.copy_why.assign(n, "");

  std::unordered_map<const te::TensorNode*, int> producer;
  for (size_t i = 0; i < n; ++i) producer[prog.ops[i]->output.get()] = static_cast<int>(i);
  std::set<const te::TensorNode*> outputs;
  for (const te::Tensor& t : prog.outputs) outputs.insert(t.get());
  // Partition of each op, and whether the plan made it a view stage.
  std::vector<int> part(n, -1);
  std::vector<bool> view(n, false);
  for (const plan::Partition& p : partitions)
    for (const plan::Stage& st : p.stages)
      for (int te : st.tes) {
        if (te < 0 || static_cast<size_t>(te) >= n) continue;
        part[static_cast<size_t>(te)] = p.id;
        // The plan's views, and any other TE that only moves data (0 FLOPs: slice, concat,
        // gather, a reshape the plan does not alias): the vertical transform's rule for what
        // vanishes into any consumer.
        const te::ComputeOp& op = *prog.ops[static_cast<size_t>(te)];
        view[static_cast<size_t>(te)] =
            st.kind == "view" || (op.reduce == te::ReduceKind::None && !op.init.defined() &&
                                  analysis::count_flops(op.body) == 0);
      }
  // Readers of each op's output (in the body; a read in a reduction's init is not folded).
  std::vector<std::set<int>> readers(n);
  std::vector<bool> read_in_init(n, false);
  for (size_t i = 0; i < n; ++i) {
    auto scan = [&](const te::Expr& e, bool init) {
      if (!e.defined()) return;
      te::for_each_node(e, [&](const te::Expr& x) {
        const te::Read* r = x.as<te::Read>();
        if (!r) return;
        auto it = producer.find(r->tensor.get());
        if (it == producer.end()) return;
        readers[static_cast<size_t>(it->second)].insert(static_cast<int>(i));
        if (init) read_in_init[static_cast<size_t>(it->second)] = true;
      });
    };
    scan(prog.ops[i]->body, false);
    scan(prog.ops[i]->init, true);
  }

  // Which views fold into which readers: those of the view's partition. Ops are in
  // topological order, so a view is rewritten (its own folded sources inlined) before its
  // readers inline it, and chains of views compose.
  std::vector<bool> folds_away(n, false);
  for (size_t v = 0; v < n; ++v) {
    if (!view[v] || read_in_init[v] || readers[v].empty()) continue;
    std::set<int> outside;
    for (int r : readers[v])
      if (part[static_cast<size_t>(r)] != part[v]) outside.insert(part[static_cast<size_t>(r)]);
    folds_away[v] = true;
    if (outputs.count(prog.ops[v]->output.get())) {
      kp.copy_why[v] = "a model output";
    } else if (!outside.empty()) {
      // Not which kernels: a partition's kernel must not depend on how the rest of the plan is
      // cut, so that it can be built, priced and cached on its own.
      kp.copy_why[v] = "read by another kernel";
    } else {
      kp.dropped[v] = true;
    }
  }
  for (size_t c = 0; c < n; ++c) {
    std::unordered_map<const te::TensorNode*, const te::ComputeOp*> from;
    std::vector<size_t> views;
    te::for_each_node(prog.ops[c]->body, [&](const te::Expr& x) {
      const te::Read* r = x.as<te::Read>();
      if (!r) return;
      auto it = producer.find(r->tensor.get());
      if (it == producer.end()) return;
      const size_t v = static_cast<size_t>(it->second);
      if (!folds_away[v] || part[v] != part[c]) return;
      if (from.emplace(r->tensor.get(), kp.program.ops[v].get()).second) views.push_back(v);
    });
    if (from.empty()) continue;
    te::Op next = plan::inline_reads(kp.program.ops[c], from);
    // A read through a select (pad, concat) can hide a GEMM's operands from its template:
    // such a reader keeps reading the written tensor, which is then computed after all.
    if (classify(*next) != classify(*kp.program.ops[c])) {
      for (size_t v : views)
        if (kp.dropped[v]) {
          kp.dropped[v] = false;
          kp.copy_why[v] = "read by " + prog.ops[c]->name + ", whose schedule would change";
        }
      continue;
    }
    kp.program.ops[c] = next;
    // A chain of views shows through its last one.
    for (size_t v : views) {
      kp.folds[c].insert(kp.folds[c].end(), kp.folds[v].begin(), kp.folds[v].end());
      kp.folds[c].push_back(prog.ops[v]->name);
    }
  }
  return kp;
}

}  // namespace souffle::schedule
