#include "core/schedule/proof_memo.h"

#include <algorithm>

#include "core/loop/equal.h"

namespace souffle::schedule {

ProofMemo& ProofMemo::shared() {
  // Never destroyed, like the shared pricers: nothing to free at the end of the process.
  static ProofMemo& memo = *new ProofMemo;
  return memo;
}

int64_t proof_budget(int64_t max_steps) {
  return std::min<int64_t>(max_steps, int64_t{1} << 22);
}

std::optional<std::string> rename_proof_reason(const std::string& reason, const std::string& was,
                                               const std::string& now) {
  if (reason.empty() || was == now) return reason;
  // The wordings that end with the tensor's name (ownership.cpp, dependence.cpp).
  for (const char* lead : {"the reading stage also writes ", "a shuffle writes ",
                           "a warp fragment accesses ", "an asynchronous copy writes "})
    if (reason == lead + was) return lead + now;
  // "an index of NAME depends on data", "an index of NAME is out of bounds"
  for (const char* tail : {" depends on data", " is out of bounds"})
    if (reason == "an index of " + was + tail) return "an index of " + now + tail;
  // "block B reads NAME element E, which block W writes"
  const std::string reads = " reads " + was + " element ";
  const size_t at = reason.find(" reads ");
  if (reason.rfind("block ", 0) == 0 && at != std::string::npos &&
      reason.compare(at, reads.size(), reads) == 0)
    return reason.substr(0, at) + " reads " + now + " element " + reason.substr(at + reads.size());
  // A wording without the name ("too many accesses to enumerate", "a loop bound depends on
  // data") stays; one that has it somewhere this does not know is not guessed.
  if (reason.find(was) == std::string::npos) return reason;
  return std::nullopt;
}

std::optional<DependenceProof> ProofMemo::find(const std::string& key, const loop::Stmt& bound,
                                               const std::vector<te::Tensor>& params,
                                               int64_t budget) {
  std::vector<std::shared_ptr<const Entry>> same;
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    auto it = m_entries.find(key);
    if (it == m_entries.end()) return std::nullopt;
    same = it->second;
  }
  // Compared outside the lock: the entries are immutable once kept.
  for (const auto& e : same) {
    if (e->proof.steps > budget) continue;  // would run out of steps now
    // Only a reason that names the tensor is taken: one without it may depend on the budget
    // ("too many accesses to enumerate"), which another query may not share.
    const std::string& was = e->params.front()->name;
    if (!e->proof.reason.empty() && e->proof.reason.find(was) == std::string::npos) continue;
    std::optional<std::string> reason =
        rename_proof_reason(e->proof.reason, was, params.front()->name);
    if (!reason || !loop::equal_up_to_params(e->bound, bound, e->params, params)) continue;
    DependenceProof p = e->proof;
    p.reason = std::move(*reason);
    std::lock_guard<std::mutex> lock(m_mutex);
    ++m_hits;
    return p;
  }
  return std::nullopt;
}

void ProofMemo::add(const std::string& key, loop::Stmt bound, std::vector<te::Tensor> params,
                    const DependenceProof& p, int64_t budget) {
  if (p.steps > budget) return;  // ran out: another budget could finish it
  auto e = std::make_shared<const Entry>(Entry{std::move(bound), std::move(params), p});
  std::lock_guard<std::mutex> lock(m_mutex);
  if (m_size >= kMaxEntries) {
    m_entries.clear();
    m_size = 0;
  }
  m_entries[key].push_back(std::move(e));
  ++m_size;
}

size_t ProofMemo::hits() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_hits;
}

size_t ProofMemo::size() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_size;
}

void ProofMemo::clear() {
  std::lock_guard<std::mutex> lock(m_mutex);
  m_entries.clear();
  m_size = 0;
  m_hits = 0;
}

}  // namespace souffle::schedule
