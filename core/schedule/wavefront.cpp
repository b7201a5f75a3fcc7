#include "core/schedule/wavefront.h"

#include <fmt/format.h>
#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "core/loop/mutator.h"
#include "core/support/error.h"

namespace souffle::schedule {
namespace {

bool phased(const loop::Kernel& k) {
  bool found = false;
  loop::for_each_stmt(k.body,
                      [&](const loop::Stmt& x) { found |= x.as<loop::GridBarrier>() != nullptr; });
  return found;
}

}  // namespace

bool WaveLayout::changes() const {
  for (size_t i = 0; i < order.size(); ++i)
    if (order[i] != i || offset[i] != 0) return true;
  return false;
}

std::string WaveLayout::summary() const {
  std::map<int, int> per_wave;
  for (int w : wave) ++per_wave[w];
  int widest = 0;
  for (const auto& [w, n] : per_wave) widest = std::max(widest, n);
  return fmt::format(
      "{} dependence levels in {} waves instead of {} barrier intervals in program order; up to "
      "{} stages side by side on {} blocks",
      levels, per_wave.size(), program_intervals, widest, grid);
}

WaveLayout pack_waves(const std::vector<loop::Kernel>& stages, int64_t grid_cap,
                      const std::vector<std::string>& lanes, const std::vector<int>& follow) {
  const size_t n = stages.size();
  SOUFFLE_CHECK(lanes.empty() || lanes.size() == n, "pack_waves: a lane for every stage");
  SOUFFLE_CHECK(follow.empty() || follow.size() == n, "pack_waves: a follow for every stage");
  WaveLayout out;
  out.order.resize(n);
  out.offset.assign(n, 0);
  out.wave.resize(n);
  int64_t widest = 1;
  for (size_t i = 0; i < n; ++i) {
    out.order[i] = i;
    out.wave[i] = static_cast<int>(i);
    widest = std::max(widest, stages[i].launch.grid_x);
  }
  out.grid = widest;
  if (n == 0) return out;
  const int64_t cap = grid_cap > 0 ? std::max(grid_cap, widest) : widest;
  // Levels: the last stage to write and the stages that read each tensor so far decide.
  std::unordered_map<const te::TensorNode*, int> last_write;  // its level
  std::unordered_map<const te::TensorNode*, int> last_read;   // the highest reader's level
  std::vector<int> level(n, 0);
  // Program order's intervals under the same rule.
  std::set<const te::TensorNode*> written_since, read_since;
  int intervals = 1;
  for (size_t j = 0; j < n; ++j) {
    const loop::Kernel& s = stages[j];
    int lv = 0;
    bool cut = false;
    for (const te::Tensor& t : s.inputs) {
      if (auto it = last_write.find(t.get()); it != last_write.end())
        lv = std::max(lv, it->second + 1);
      cut |= written_since.count(t.get()) > 0;
    }
    for (const te::Tensor& t : s.outputs) {
      if (auto it = last_write.find(t.get()); it != last_write.end())
        lv = std::max(lv, it->second + 1);
      if (auto it = last_read.find(t.get()); it != last_read.end())
        lv = std::max(lv, it->second + 1);
      cut |= written_since.count(t.get()) > 0 || read_since.count(t.get()) > 0;
    }
    if (cut) {
      ++intervals;
      written_since.clear();
      read_since.clear();
    }
    for (const te::Tensor& t : s.inputs) {
      read_since.insert(t.get());
      int& r = last_read[t.get()];
      r = std::max(r, lv);
    }
    for (const te::Tensor& t : s.outputs) {
      written_since.insert(t.get());
      last_write[t.get()] = lv;
    }
    level[j] = lv;
  }
  const int levels = *std::max_element(level.begin(), level.end()) + 1;
  out.levels = levels;
  out.program_intervals = intervals;
  if (levels >= intervals) return out;
  // Waves: each level's stages in program order, side by side while they fit: a stage takes
  // the first block its lane was given, or the block of the stage it follows, where that range
  // is free in the wave, else the lowest free range, else it starts the next wave.
  std::vector<std::vector<size_t>> by_level(static_cast<size_t>(levels));
  for (size_t j = 0; j < n; ++j) by_level[static_cast<size_t>(level[j])].push_back(j);
  out.order.clear();
  std::unordered_map<std::string, int64_t> home;
  std::vector<bool> placed(n, false);
  int wave = -1;
  int64_t grid = 0;
  std::vector<std::pair<int64_t, int64_t>> busy;  // the current wave's ranges [begin, end)
  auto fits = [&](int64_t at, int64_t g) {
    if (at < 0 || at + g > cap) return false;
    for (const auto& [b, e] : busy)
      if (at < e && b < at + g) return false;
    return true;
  };
  auto lowest = [&](int64_t g) -> int64_t {
    std::vector<int64_t> starts{0};
    for (const auto& r : busy) starts.push_back(r.second);
    std::sort(starts.begin(), starts.end());
    for (int64_t at : starts)
      if (fits(at, g)) return at;
    return -1;
  };
  for (const std::vector<size_t>& members : by_level) {
    ++wave;  // each level starts a wave
    busy.clear();
    for (size_t j : members) {
      const int64_t g = std::max<int64_t>(1, stages[j].launch.grid_x);
      const bool alone = phased(stages[j]);
      if (alone && !busy.empty()) {
        ++wave;
        busy.clear();
      }
      const std::string* lane = lanes.empty() || lanes[j].empty() ? nullptr : &lanes[j];
      int64_t wanted = -1;
      if (!follow.empty() && follow[j] >= 0 && static_cast<size_t>(follow[j]) < n &&
          placed[static_cast<size_t>(follow[j])])
        wanted = out.offset[static_cast<size_t>(follow[j])];
      else if (lane)
        if (auto h = home.find(*lane); h != home.end()) wanted = h->second;
      int64_t at = fits(wanted, g) ? wanted : lowest(g);
      if (at < 0) {
        ++wave;
        busy.clear();
        at = fits(wanted, g) ? wanted : 0;
      }
      if (lane) home.emplace(*lane, at);
      out.offset[j] = at;
      out.wave[j] = wave;
      placed[j] = true;
      busy.emplace_back(at, at + g);
      grid = std::max(grid, at + g);
      out.order.push_back(j);
      // A phased stage's grid barriers stop every block: nothing runs beside it.
      if (alone) busy.emplace_back(0, cap);
    }
  }
  out.grid = grid;
  return out;
}

}  // namespace souffle::schedule
