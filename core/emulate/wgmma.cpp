#include "core/emulate/wgmma.h"

namespace souffle::emulate::wgmma {

using std::size_t;

std::pair<int, int> accumulator_position(int thread, int i) {
  const int w = thread / 32, lane = thread % 32, g = lane / 4, t = lane % 4;
  return {16 * w + g + 8 * ((i / 2) % 2), 8 * (i / 4) + 2 * t + i % 2};
}

int64_t operand_byte_offset(int64_t row, int64_t k, int64_t lbo, int64_t sbo) {
  return (row / 8) * sbo + (k / 8) * lbo + (row % 8) * 16 + (k % 8) * 2;
}

void warpgroup_mma(int64_t n, const std::vector<double>& a, const std::vector<double>& b,
                   const std::vector<double>& c, std::vector<double>& d) {
  const int64_t per = n / 2;
  d.assign(static_cast<size_t>(kWarpgroup * per), 0.0);
  for (int t = 0; t < kWarpgroup; ++t)
    for (int64_t i = 0; i < per; ++i) {
      auto [r, col] = accumulator_position(t, static_cast<int>(i));
      const size_t at = static_cast<size_t>(t * per + i);
      double acc = c.empty() ? 0.0 : static_cast<double>(static_cast<float>(c[at]));
      for (int k = 0; k < 16; ++k)
        acc += a[static_cast<size_t>(r * 16 + k)] * b[static_cast<size_t>(k * n + col)];
      d[at] = static_cast<float>(acc);
    }
}

void Queue::reset(size_t threads) {
  m_open.assign(threads, {});
  m_groups.assign(threads, {});
  m_fenced.assign(threads, 0);
}

const double* Queue::latest(int32_t thread, const void* buffer, int64_t reg) const {
  const size_t t = static_cast<size_t>(thread);
  for (auto w = m_open[t].rbegin(); w != m_open[t].rend(); ++w)
    if (w->buffer == buffer && w->reg == reg) return &w->value;
  for (auto g = m_groups[t].rbegin(); g != m_groups[t].rend(); ++g)
    for (auto w = g->rbegin(); w != g->rend(); ++w)
      if (w->buffer == buffer && w->reg == reg) return &w->value;
  return nullptr;
}

void Queue::issue(int32_t thread, Write w) {
  m_open[static_cast<size_t>(thread)].push_back(w);
}

void Queue::commit(int32_t thread) {
  const size_t t = static_cast<size_t>(thread);
  m_groups[t].push_back(std::move(m_open[t]));
  m_open[t].clear();
}

std::vector<Queue::Write> Queue::wait(int32_t thread, int64_t keep) {
  auto& groups = m_groups[static_cast<size_t>(thread)];
  std::vector<Write> done;
  while (static_cast<int64_t>(groups.size()) > keep) {
    done.insert(done.end(), groups.front().begin(), groups.front().end());
    groups.erase(groups.begin());
  }
  return done;
}

bool Queue::in_flight(const void* buffer) const {
  for (size_t t = 0; t < m_open.size(); ++t) {
    for (const Write& w : m_open[t])
      if (w.buffer == buffer) return true;
    for (const auto& g : m_groups[t])
      for (const Write& w : g)
        if (w.buffer == buffer) return true;
  }
  return false;
}

}  // namespace souffle::emulate::wgmma
