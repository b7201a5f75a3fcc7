/// \file Who produces and who reads each op's output in a TeProgram, found in one walk.
#pragma once

#include <cstddef>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/te/expr.h"

namespace souffle::te {

/// The producer of each tensor and the readers of each op's output in one program, found in one
/// walk of every body and init. A pass over some of the program's ops (building the kernels of
/// one partition) looks their neighbours up here instead of walking the whole program, so its
/// cost follows those ops, not the program. Built once per program and shared; it holds the
/// program's ops and outputs by handle (so no freed node's address can pass for them), not the
/// program itself.
class ProgramIndex {
 public:
  explicit ProgramIndex(const TeProgram& program);
  /// Whether this is the index of `program`: the same ops and outputs (by identity), in order.
  bool indexes(const TeProgram& program) const;
  size_t size() const { return m_ops.size(); }
  /// The op computing `t`, -1 for an input, a constant or a tensor no op of the program writes.
  int producer(const TensorNode* t) const;
  /// The ops reading op `i`'s output in their body or init, ascending, each once.
  const std::vector<int>& readers(size_t i) const { return m_readers[i]; }
  /// Whether some op reads op `i`'s output in a reduction's init.
  bool read_in_init(size_t i) const { return m_read_in_init[i]; }
  /// Whether `t` is one of the program's outputs.
  bool is_output(const TensorNode* t) const { return m_outputs.count(t) > 0; }

 private:
  std::vector<Op> m_ops;
  std::vector<Tensor> m_output_list;
  std::unordered_map<const TensorNode*, int> m_producer;
  std::vector<std::vector<int>> m_readers;
  std::vector<bool> m_read_in_init;
  std::unordered_set<const TensorNode*> m_outputs;
};

}  // namespace souffle::te
