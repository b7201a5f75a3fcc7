#include "core/schedule/kernel_units.h"

#include <algorithm>

#include "core/analysis/access.h"
#include "core/plan/vertical.h"
#include "core/schedule/schedule.h"
#include "core/te/mutator.h"

namespace souffle::schedule {

const te::Op& KernelProgram::op(size_t i) const {
  auto it = m_at.find(i);
  return it == m_at.end() ? m_source->ops[i] : it->second.op;
}

bool KernelProgram::dropped(size_t i) const {
  auto it = m_at.find(i);
  return it != m_at.end() && it->second.dropped;
}

const std::vector<std::string>& KernelProgram::folds(size_t i) const {
  static const std::vector<std::string> none;
  auto it = m_at.find(i);
  return it == m_at.end() ? none : it->second.folds;
}

const std::string& KernelProgram::copy_why(size_t i) const {
  static const std::string none;
  auto it = m_at.find(i);
  return it == m_at.end() ? none : it->second.copy_why;
}

KernelProgram fold_views(const plan::FusionPlan& plan) {
  return fold_views(plan.program, *plan::index_of(plan), plan.partitions);
}

KernelProgram fold_views(const te::TeProgram& prog, const te::ProgramIndex& index,
                         const std::vector<plan::Partition>& partitions) {
  const size_t n = prog.ops.size();
  KernelProgram kp;
  kp.m_source = &prog;
  // Partition of each op, and whether the plan made it a view stage.
  for (const plan::Partition& p : partitions)
    for (const plan::Stage& st : p.stages)
      for (int te : st.tes) {
        if (te < 0 || static_cast<size_t>(te) >= n) continue;
        auto [it, fresh] = kp.m_at.try_emplace(static_cast<size_t>(te));
        if (fresh) {
          it->second.op = prog.ops[static_cast<size_t>(te)];
          kp.m_order.push_back(te);
        }
        it->second.part = p.id;
        // The plan's views, and any other TE that only moves data (0 FLOPs: slice, concat,
        // gather, a reshape the plan does not alias): the vertical transform's rule for what
        // vanishes into any consumer.
        const te::ComputeOp& op = *prog.ops[static_cast<size_t>(te)];
        it->second.view = st.kind == plan::StageKind::View ||
                          (op.reduce == te::ReduceKind::None && !op.init.defined() &&
                           analysis::count_flops(op.body) == 0);
      }
  std::sort(kp.m_order.begin(), kp.m_order.end());
  auto part_of = [&](int i) {
    auto it = kp.m_at.find(static_cast<size_t>(i));
    return it == kp.m_at.end() ? -1 : it->second.part;
  };

  // Which views fold into which readers: those of the view's partition (readers in the body;
  // a read in a reduction's init is not folded). Ops are in topological order, so a view is
  // rewritten (its own folded sources inlined) before its readers inline it, and chains of
  // views compose.
  for (int v : kp.m_order) {
    KernelProgram::Folded& fv = kp.m_at.at(static_cast<size_t>(v));
    const std::vector<int>& readers = index.readers(static_cast<size_t>(v));
    if (!fv.view || index.read_in_init(static_cast<size_t>(v)) || readers.empty()) continue;
    std::vector<int> outside;  // readers in other kernels, in program order
    for (int r : readers)
      if (part_of(r) != fv.part) outside.push_back(r);
    fv.folds_away = true;
    if (index.is_output(prog.ops[static_cast<size_t>(v)]->output.get())) {
      fv.copy_why = "a model output";
    } else if (!outside.empty()) {
      // Named by the reading TEs, not their kernels: the text stays the same whichever plan
      // holds the view's partition.
      std::string why = "read outside its kernel by";
      for (size_t i = 0; i < outside.size() && i < 3; ++i)
        why += (i ? ", " : " ") + prog.ops[static_cast<size_t>(outside[i])]->name;
      if (outside.size() > 3) why += " and " + std::to_string(outside.size() - 3) + " more";
      fv.copy_why = why;
    } else {
      fv.dropped = true;
    }
  }
  // Only the partitions' ops read folded views: every other op is computed as it is.
  for (int ci : kp.m_order) {
    const size_t c = static_cast<size_t>(ci);
    KernelProgram::Folded& fc = kp.m_at.at(c);
    std::unordered_map<const te::TensorNode*, const te::ComputeOp*> from;
    std::vector<size_t> views;
    te::for_each_node(prog.ops[c]->body, [&](const te::Expr& x) {
      const te::Read* r = x.as<te::Read>();
      if (!r) return;
      const int p = index.producer(r->tensor.get());
      if (p < 0) return;
      auto it = kp.m_at.find(static_cast<size_t>(p));
      if (it == kp.m_at.end() || !it->second.folds_away || it->second.part != fc.part) return;
      if (from.emplace(r->tensor.get(), it->second.op.get()).second)
        views.push_back(static_cast<size_t>(p));
    });
    if (from.empty()) continue;
    te::Op next = plan::inline_reads(fc.op, from);
    // A read through a select (pad, concat) can hide a GEMM's operands from its template:
    // such a reader keeps reading the written tensor, which is then computed after all.
    if (classify(*next) != classify(*fc.op)) {
      for (size_t v : views) {
        KernelProgram::Folded& fv = kp.m_at.at(v);
        if (fv.dropped) {
          fv.dropped = false;
          fv.copy_why = "read by " + prog.ops[c]->name + ", whose schedule would change";
        }
      }
      continue;
    }
    fc.op = next;
    // A chain of views shows through its last one.
    for (size_t v : views) {
      const KernelProgram::Folded& fv = kp.m_at.at(v);
      fc.folds.insert(fc.folds.end(), fv.folds.begin(), fv.folds.end());
      fc.folds.push_back(prog.ops[v]->name);
    }
  }
  return kp;
}

}  // namespace souffle::schedule
