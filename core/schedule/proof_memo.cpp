#include "core/schedule/proof_memo.h"

#include <algorithm>

#include "core/loop/equal.h"

namespace souffle::schedule {

ProofMemo& ProofMemo::shared() {
  static ProofMemo memo;
  return memo;
}

int64_t proof_budget(int64_t max_steps) {
  return std::min<int64_t>(max_steps, int64_t{1} << 22);
}

namespace {

/// `reason`, proven for tensor `was`, as proving it for `now` words it (prove_dependence's
/// wordings); nothing for a wording it does not know.
std::optional<std::string> rename_reason(const std::string& reason, const std::string& was,
                                         const std::string& now) {
  if (reason.empty() || was == now) return reason;
  const std::string writes = "the reading stage also writes ";
  if (reason == writes + was) return writes + now;
  // "block B reads NAME element E, which block W writes"
  const std::string reads = " reads " + was + " element ";
  const size_t at = reason.find(" reads ");
  if (reason.rfind("block ", 0) == 0 && at != std::string::npos &&
      reason.compare(at, reads.size(), reads) == 0)
    return reason.substr(0, at) + " reads " + now + " element " + reason.substr(at + reads.size());
  return std::nullopt;
}

}  // namespace

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
    std::optional<std::string> reason =
        rename_reason(e->proof.reason, e->params.front()->name, params.front()->name);
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
