/// \file Dependence proofs shared between kernel merges: the planner merges the same stages many
/// times (each candidate partition, with and without waves and weight panels, under flags and
/// grid barriers only), and each merge posed its proofs anew. A proof is a function of its
/// statements up to the tensors they touch (same shapes and types) and the block and thread
/// variables, of the launch and of the steps it may spend; this memo answers a query whose
/// statements equal an earlier merge's, exactly as proving it again would (same result, same
/// steps spent, so every budget runs out where it did).
#pragma once

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/loop/stmt.h"
#include "core/schedule/dependence.h"

namespace souffle::schedule {

class ProofMemo {
 public:
  /// The process's memo (thread-safe).
  static ProofMemo& shared();

  /// The proof of an earlier query under `key` whose statements `bound` equal these up to
  /// params (`params` matched by position; `bound` binds the block and thread variables, so
  /// that they match too), where proving again is certain to give it: it finished within
  /// `budget` steps; its reason names the queried tensor (params.front()) as a new proof would.
  std::optional<DependenceProof> find(const std::string& key, const loop::Stmt& bound,
                                      const std::vector<te::Tensor>& params, int64_t budget);
  /// Keeps `p`, proven for the query with a budget of `budget` steps (one that ran out is not
  /// kept). Past kMaxEntries proofs kept, the memo starts again empty.
  void add(const std::string& key, loop::Stmt bound, std::vector<te::Tensor> params,
           const DependenceProof& p, int64_t budget);

  /// Queries answered from the memo, and proofs kept, so far.
  size_t hits() const;
  size_t size() const;
  /// Forgets every proof, and the hits.
  void clear();

  static constexpr size_t kMaxEntries = 4096;

 private:
  struct Entry {
    loop::Stmt bound;
    std::vector<te::Tensor> params;
    DependenceProof proof;
  };
  mutable std::mutex m_mutex;
  std::unordered_map<std::string, std::vector<std::shared_ptr<const Entry>>> m_entries;
  size_t m_size = 0, m_hits = 0;
};

/// `reason`, proven for tensor `was`, as proving it for `now` words it (prove_dependence's
/// wordings, the tensor's name replaced where the wording has it and nowhere else); nothing for
/// a wording it does not know, so that the caller proves again.
std::optional<std::string> rename_proof_reason(const std::string& reason, const std::string& was,
                                               const std::string& now);

/// The budget prove_dependence spends at most for a query allowing `max_steps`.
int64_t proof_budget(int64_t max_steps);

}  // namespace souffle::schedule
