/// \file The program a plan's kernels compute: each view folded into its readers' indexing.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "core/plan/plan.h"
#include "core/te/program_index.h"

namespace souffle::schedule {

/// The ops of some partitions of a plan as their kernels compute them. A TE of a "view" stage
/// (reshape, transpose, squeeze, ...), or any TE that only moves data (0 FLOPs: slice, concat,
/// gather), is substituted into the index expressions of its readers inside its partition (the
/// vertical transform's inliner), so no kernel copies it for them. When its output is also a
/// model output or read by another partition it is still written, by a copy stage. Only the
/// partitions' ops are held (in time and memory proportional to them, not to the program); an
/// op of no partition is computed as the program has it.
class KernelProgram {
 public:
  /// The program the partitions are over; it must outlive this.
  const te::TeProgram& source() const { return *m_source; }
  size_t size() const { return m_source->ops.size(); }
  /// The ops of the partitions, ascending.
  const std::vector<int>& partition_ops() const { return m_order; }
  bool in_partitions(size_t i) const { return m_at.count(i) > 0; }
  /// Op `i` as the kernels compute it: its readers of folded views rewritten.
  const te::Op& op(size_t i) const;
  /// A folded view no kernel computes.
  bool dropped(size_t i) const;
  /// The views folded into op `i`'s body (names), for the stage's schedule text.
  const std::vector<std::string>& folds(size_t i) const;
  /// For a view that is still written, why ("a model output", "read outside its kernel by
  /// T12"). The text depends on the view's own partition only, so that a kernel is the same
  /// whichever plan holds its partition (the pricer's cached kernels are compile's).
  const std::string& copy_why(size_t i) const;

 private:
  struct Folded {
    te::Op op;
    int part = -1;      ///< the id of its partition
    bool view = false;  ///< a view stage, or a TE that only moves data
    bool folds_away = false;
    bool dropped = false;
    std::vector<std::string> folds;
    std::string copy_why;
  };
  friend KernelProgram fold_views(const te::TeProgram&, const te::ProgramIndex&,
                                  const std::vector<plan::Partition>&);
  const te::TeProgram* m_source = nullptr;
  std::vector<int> m_order;
  std::unordered_map<size_t, Folded> m_at;
};

KernelProgram fold_views(const plan::FusionPlan& plan);
/// The same for the partitions `partitions` of a plan over `program` (the plan's own are not
/// read); `index` is program's (te::ProgramIndex).
KernelProgram fold_views(const te::TeProgram& program, const te::ProgramIndex& index,
                         const std::vector<plan::Partition>& partitions);

}  // namespace souffle::schedule
