// Access recording: bitmaps per (tensor, frame, warp) while the kernel runs, ranges after.
#include <fmt/format.h>

#include <algorithm>
#include <bit>

#include "core/emulate/access_recorder.h"

namespace souffle::emulate {

int64_t ElementRanges::count() const {
  int64_t n = 0;
  for (const auto& [a, b] : ranges) n += b - a;
  return n;
}

bool ElementRanges::contains(int64_t e) const {
  auto it =
      std::upper_bound(ranges.begin(), ranges.end(), e,
                       [](int64_t v, const std::pair<int64_t, int64_t>& r) { return v < r.first; });
  if (it == ranges.begin()) return false;
  --it;
  return e >= it->first && e < it->second;
}

std::vector<int64_t> ElementRanges::elements() const {
  std::vector<int64_t> out;
  for (const auto& [a, b] : ranges)
    for (int64_t e = a; e < b; ++e) out.push_back(e);
  return out;
}

const char* tensor_role_name(TensorRole r) {
  switch (r) {
    case TensorRole::Input:
      return "input";
    case TensorRole::Output:
      return "output";
    case TensorRole::Scratch:
      return "global scratch";
    case TensorRole::Shared:
      return "shared";
  }
  return "?";
}

namespace {

ElementRanges to_ranges(const std::vector<uint64_t>& bits, int64_t numel) {
  ElementRanges r;
  int64_t start = -1;
  for (size_t w = 0; w < bits.size(); ++w) {
    const uint64_t word = bits[w];
    if (start < 0 && word == 0) continue;
    if (start >= 0 && word == ~uint64_t{0}) continue;
    for (int b = 0; b < 64; ++b) {
      const int64_t e = static_cast<int64_t>(w) * 64 + b;
      if (e >= numel) break;
      const bool on = (word >> b) & 1;
      if (on && start < 0) start = e;
      if (!on && start >= 0) {
        r.ranges.emplace_back(start, e);
        start = -1;
      }
    }
  }
  if (start >= 0) r.ranges.emplace_back(start, numel);
  return r;
}

}  // namespace

const TensorAccess* KernelAccess::find(const std::string& name) const {
  for (const TensorAccess& t : tensors)
    if (t.name == name) return &t;
  return nullptr;
}

ElementRanges unite(const std::vector<const ElementRanges*>& sets) {
  std::vector<std::pair<int64_t, int64_t>> all;
  for (const ElementRanges* s : sets) all.insert(all.end(), s->ranges.begin(), s->ranges.end());
  std::sort(all.begin(), all.end());
  ElementRanges out;
  for (const auto& r : all) {
    if (!out.ranges.empty() && r.first <= out.ranges.back().second)
      out.ranges.back().second = std::max(out.ranges.back().second, r.second);
    else
      out.ranges.push_back(r);
  }
  return out;
}

ElementRanges KernelAccess::block_reads(const std::string& tensor, int32_t block) const {
  std::vector<const ElementRanges*> sets;
  if (const TensorAccess* t = find(tensor))
    for (const UnitAccess& u : t->units)
      if (u.block == block && u.warp < 0) sets.push_back(&u.reads);
  return unite(sets);
}

ElementRanges KernelAccess::block_writes(const std::string& tensor, int32_t block) const {
  std::vector<const ElementRanges*> sets;
  if (const TensorAccess* t = find(tensor))
    for (const UnitAccess& u : t->units)
      if (u.block == block && u.warp < 0) sets.push_back(&u.writes);
  return unite(sets);
}

std::string describe(const KernelAccess& k, size_t max_lines) {
  std::string s = fmt::format("kernel {}{}: grid {} x {} threads, {} grid barriers, {} frames\n",
                              k.kernel, k.stage >= 0 ? fmt::format(" stage {}", k.stage) : "",
                              k.grid, k.block_threads, k.grid_barriers, k.frames.size());
  size_t lines = 1;
  for (const TensorAccess& t : k.tensors) {
    if (lines++ >= max_lines) break;
    s += fmt::format("  {} {} ({}): {} element reads, {} writes; per block {} read, {} written\n",
                     t.name, shape_str(t.shape), tensor_role_name(t.role), t.element_reads,
                     t.element_writes, t.block_elements_read, t.block_elements_written);
  }
  if (!k.edges.empty() && lines < max_lines)
    s += fmt::format("  {} producer-consumer block pairs across stages\n", k.edges.size());
  if (!k.blocks.empty()) s += "  " + sample_note(k) + "\n";
  if (k.truncated) s += "  cut: " + k.note + "\n";
  return s;
}

std::string sample_note(const KernelAccess& k) {
  if (k.blocks.empty()) return {};
  std::string list;
  const size_t shown = std::min<size_t>(k.blocks.size(), 12);
  for (size_t i = 0; i < shown; ++i) list += (i ? ", " : "") + std::to_string(k.blocks[i]);
  if (shown < k.blocks.size()) list += ", …";
  return fmt::format("{} of {} blocks recorded ({}): the other blocks' accesses are not drawn",
                     k.blocks.size(), k.grid, list);
}

std::vector<int32_t> spread_blocks(int64_t grid, int64_t n) {
  std::vector<int32_t> out;
  if (grid <= 0) return out;
  if (n >= grid) n = grid;
  if (n < 1) n = 1;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t b = n == 1 ? 0 : i * (grid - 1) / (n - 1);
    if (out.empty() || out.back() != b) out.push_back(static_cast<int32_t>(b));
  }
  return out;
}

// ---- the recorder ----

AccessRecorder::AccessRecorder(const AccessRecordOptions& options, std::string kernel, int64_t grid,
                               int64_t block_threads, std::vector<std::string> stage_names,
                               std::vector<std::string> stage_schedules)
    : m_opt(options),
      m_kernel(std::move(kernel)),
      m_grid(grid),
      m_block(block_threads),
      m_warps(std::max<int64_t>(1, (block_threads + 31) / 32)),
      m_stage_names(std::move(stage_names)),
      m_stage_schedules(std::move(stage_schedules)) {
  for (int32_t b : m_opt.blocks)
    if (b >= 0 && b < m_grid) m_sample.push_back(b);
  std::sort(m_sample.begin(), m_sample.end());
  m_sample.erase(std::unique(m_sample.begin(), m_sample.end()), m_sample.end());
  if (static_cast<int64_t>(m_sample.size()) == m_grid) m_sample.clear();
  if (!m_sample.empty()) {
    m_in_sample.assign(static_cast<size_t>(m_grid), 0);
    for (int32_t b : m_sample) m_in_sample[static_cast<size_t>(b)] = 1;
  }
}

std::vector<int32_t> AccessRecorder::sample_lanes() const {
  std::vector<int32_t> lanes;
  lanes.reserve(m_sample.size() * static_cast<size_t>(m_block));
  for (int32_t b : m_sample)
    for (int64_t t = 0; t < m_block; ++t) lanes.push_back(static_cast<int32_t>(b * m_block + t));
  return lanes;
}

bool AccessRecorder::charge(int64_t bytes, const std::string& what) {
  if (m_bytes + bytes > m_opt.max_bytes) {
    m_truncated = true;
    if (std::find(m_cut.begin(), m_cut.end(), what) == m_cut.end()) m_cut.push_back(what);
    return false;
  }
  m_bytes += bytes;
  return true;
}

int32_t AccessRecorder::add_tensor(const std::string& name, const Shape& shape, DType dtype,
                                   TensorRole role, int64_t numel, int64_t shared_bytes) {
  auto it = m_slot_of.find(name);
  if (it != m_slot_of.end()) return it->second;
  Slot s;
  s.meta.name = name;
  s.meta.shape = shape;
  s.meta.dtype = dtype;
  s.meta.role = role;
  s.meta.numel = numel;
  s.meta.shared_bytes = shared_bytes;
  const bool global = role != TensorRole::Shared;
  const int64_t per = (global ? 4 : 2) * 4;
  if (charge(numel * per, name)) {
    s.first_touch.assign(static_cast<size_t>(numel), -1);
    if (global) {
      s.read_count.assign(static_cast<size_t>(numel), 0);
      s.last_write_frame.assign(static_cast<size_t>(numel), -1);
      s.last_edge_frame.assign(static_cast<size_t>(numel), -1);
    }
  } else {
    s.cut = true;
  }
  const auto id = static_cast<int32_t>(m_slots.size());
  m_slots.push_back(std::move(s));
  m_slot_of[name] = id;
  return id;
}

int32_t AccessRecorder::frame_id(int epoch, int stage, int32_t block) {
  if (epoch != m_cur.epoch || stage != m_cur.stage) {
    m_cur = {epoch, stage};
    auto it = m_phase_of.find(m_cur);
    if (it == m_phase_of.end()) {
      it = m_phase_of.emplace(m_cur, static_cast<int32_t>(m_phases.size())).first;
      m_phases.push_back(m_cur);
    }
    m_cur_phase = it->second;
    // Frames of a phase met again (a block returning to it under flags) are looked up.
    m_frame_of_block.assign(static_cast<size_t>(m_grid), -1);
    for (size_t f = 0; f < m_frames.size(); ++f)
      if (m_frame_phase[f] == m_cur_phase)
        m_frame_of_block[static_cast<size_t>(m_frames[f].block)] = static_cast<int32_t>(f);
  }
  int32_t& f = m_frame_of_block[static_cast<size_t>(block)];
  if (f < 0) {
    f = static_cast<int32_t>(m_frames.size());
    m_frames.push_back({m_cur, block});
    m_frame_phase.push_back(m_cur_phase);
  }
  return f;
}

std::vector<uint64_t>& AccessRecorder::bits(Slot& s, Unit& u, bool write) {
  std::vector<uint64_t>& b = write ? u.wr : u.rd;
  if (b.empty() && !s.cut) {
    const int64_t words = (s.meta.numel + 63) / 64;
    if (charge(words * 8, s.meta.name)) b.assign(static_cast<size_t>(words), 0);
  }
  return b;
}

void AccessRecorder::access(int32_t slot, int64_t element, int32_t lane, bool write, int epoch,
                            int stage) {
  if (!records(stage)) return;
  Slot& s = m_slots[static_cast<size_t>(slot)];
  const auto block = static_cast<int32_t>(lane / m_block);
  if (!m_in_sample.empty() && m_in_sample[static_cast<size_t>(block)] == 0) return;
  const int32_t frame = frame_id(epoch, stage, block);
  (write ? s.meta.element_writes : s.meta.element_reads) += 1;
  if (s.cut) return;
  const auto e = static_cast<size_t>(element);
  if (s.first_touch[e] < 0) s.first_touch[e] = frame;
  if (!s.last_write_frame.empty()) {
    if (write) {
      s.last_write_frame[e] = frame;
    } else {
      ++s.read_count[e];
      const int32_t w = s.last_write_frame[e];
      if (w >= 0 && w != frame && m_frames[static_cast<size_t>(w)].block != block &&
          m_frame_phase[static_cast<size_t>(w)] != m_cur_phase && s.last_edge_frame[e] != frame) {
        s.last_edge_frame[e] = frame;
        ++m_edges[{slot, w, frame}];
      }
    }
  }
  auto unit = [&](std::vector<int32_t>& index, size_t at, int32_t warp) -> Unit& {
    if (index.size() <= at) index.resize(at + 1, -1);
    if (index[at] < 0) {
      index[at] = static_cast<int32_t>(s.units.size());
      s.units.push_back({frame, warp, {}, {}});
    }
    return s.units[static_cast<size_t>(index[at])];
  };
  auto mark = [&](Unit& u) {
    std::vector<uint64_t>& b = bits(s, u, write);
    if (!b.empty()) b[e / 64] |= uint64_t{1} << (e % 64);
  };
  mark(unit(s.unit_of_frame, static_cast<size_t>(frame), -1));
  if (m_opt.per_warp) {
    const auto warp = static_cast<int32_t>((lane % m_block) / 32);
    mark(unit(s.unit_of_warp, static_cast<size_t>(frame * m_warps + warp), warp));
  }
}

KernelAccess AccessRecorder::finish(int grid_barriers) {
  KernelAccess k;
  k.kernel = m_kernel;
  k.stage = m_opt.stage;
  k.grid = m_grid;
  k.block_threads = m_block;
  k.stage_names = m_stage_names;
  k.stage_schedules = m_stage_schedules;
  k.grid_barriers = grid_barriers;
  if (!m_in_sample.empty()) k.blocks = m_sample;
  // Frames in play order: phase, then block.
  std::vector<int32_t> order(m_frames.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int32_t>(i);
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) {
    const AccessFrame &x = m_frames[static_cast<size_t>(a)], &y = m_frames[static_cast<size_t>(b)];
    return std::tie(x.phase, x.block) < std::tie(y.phase, y.block);
  });
  std::vector<int32_t> rank(m_frames.size());
  for (size_t i = 0; i < order.size(); ++i) {
    rank[static_cast<size_t>(order[i])] = static_cast<int32_t>(i);
    k.frames.push_back(m_frames[static_cast<size_t>(order[i])]);
  }
  std::vector<char> read_later(m_slots.size(), 0);
  for (Slot& s : m_slots) {
    TensorAccess t = std::move(s.meta);
    for (int32_t& f : s.first_touch)
      if (f >= 0) f = rank[static_cast<size_t>(f)];
    t.first_touch = std::move(s.first_touch);
    t.read_count = std::move(s.read_count);
    for (Unit& u : s.units) {
      UnitAccess a;
      const AccessFrame& fr = m_frames[static_cast<size_t>(u.frame)];
      a.block = fr.block;
      a.warp = u.warp;
      a.phase = fr.phase;
      a.reads = to_ranges(u.rd, t.numel);
      a.writes = to_ranges(u.wr, t.numel);
      std::vector<uint64_t>().swap(u.rd);
      std::vector<uint64_t>().swap(u.wr);
      if (a.warp < 0) {
        t.block_elements_read += a.reads.count();
        t.block_elements_written += a.writes.count();
      }
      t.units.push_back(std::move(a));
    }
    std::sort(t.units.begin(), t.units.end(), [](const UnitAccess& a, const UnitAccess& b) {
      return std::tie(a.phase, a.block, a.warp) < std::tie(b.phase, b.block, b.warp);
    });
    k.tensors.push_back(std::move(t));
  }
  for (const auto& [key, n] : m_edges) {
    const auto& [slot, w, r] = key;
    ProducerEdge e;
    e.tensor = k.tensors[static_cast<size_t>(slot)].name;
    e.producer_block = m_frames[static_cast<size_t>(w)].block;
    e.producer = m_frames[static_cast<size_t>(w)].phase;
    e.consumer_block = m_frames[static_cast<size_t>(r)].block;
    e.consumer = m_frames[static_cast<size_t>(r)].phase;
    e.elements = n;
    k.edges.push_back(std::move(e));
    read_later[static_cast<size_t>(slot)] = 1;
  }
  // Outputs a later phase of this kernel reads back (any block, its own writes included) carry
  // data between stages through global memory.
  for (size_t i = 0; i < k.tensors.size(); ++i) {
    TensorAccess& t = k.tensors[i];
    if (t.role != TensorRole::Output) continue;
    const AccessPhase* first_write = nullptr;
    const AccessPhase* last_read = nullptr;
    for (const UnitAccess& u : t.units) {
      if (u.warp >= 0) continue;
      if (!u.writes.empty() && (!first_write || u.phase < *first_write)) first_write = &u.phase;
      if (!u.reads.empty() && (!last_read || *last_read < u.phase)) last_read = &u.phase;
    }
    if (read_later[i] != 0 || (first_write && last_read && *first_write < *last_read))
      t.role = TensorRole::Scratch;
  }
  std::sort(k.edges.begin(), k.edges.end(), [](const ProducerEdge& a, const ProducerEdge& b) {
    return std::tie(a.consumer, a.consumer_block, a.producer_block, a.tensor) <
           std::tie(b.consumer, b.consumer_block, b.producer_block, b.tensor);
  });
  // Global tensors first, then shared buffers (stable: kernel order within each).
  std::stable_sort(k.tensors.begin(), k.tensors.end(),
                   [](const TensorAccess& a, const TensorAccess& b) {
                     return (a.role == TensorRole::Shared) < (b.role == TensorRole::Shared);
                   });
  if (m_truncated) {
    k.truncated = true;
    std::string names;
    for (const std::string& n : m_cut) names += (names.empty() ? "" : ", ") + n;
    k.note = fmt::format(
        "the recording reached its {} MiB limit: accesses to {} are counted but not placed",
        m_opt.max_bytes >> 20, names);
  }
  return k;
}

}  // namespace souffle::emulate
