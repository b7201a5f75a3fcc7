#include "core/schedule/weight_panel.h"

#include <fmt/format.h>
#include <algorithm>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include "core/schedule/template_util.h"
#include "core/te/mutator.h"
#include "core/te/printer.h"

namespace souffle::schedule {

using detail::ceil_div;

int64_t PanelShape::bytes() const {
  return rows * cols * dtype_size(dtype);
}

std::optional<PanelShape> weight_panel_shape(
    const te::ComputeOp& op, const ScheduleConfig& c,
    const std::function<bool(const te::TensorNode*)>& written) {
  detail::GemmParts g;
  if (!detail::match_gemm(op, g) || detail::tensor_core_eligible(op, g, c)) return std::nullopt;
  const gpu::Tile& t = c.gemm_tile;
  const int64_t p = detail::extent_product(g.batch), m = detail::extent_product(g.rows),
                n = detail::extent_product(g.cols), k = detail::extent_product(op.reduce_axes);
  const int64_t mt = ceil_div(m, t.bm), nt = ceil_div(n, t.bn);
  if (detail::TileGrid(p * mt * nt, c).iters != 1) return std::nullopt;
  // A weight: B reads tensors, none of them written in the kernel.
  std::string tensors;
  bool reads = false, writable = false;
  te::for_each_node(g.b, [&](const te::Expr& x) {
    if (const te::Read* r = x.as<te::Read>()) {
      reads = true;
      writable |= written(r->tensor.get());
      tensors += fmt::format(" {}", static_cast<const void*>(r->tensor.get()));
    }
  });
  if (!reads || writable) return std::nullopt;
  // B with the axes it reads renamed by their place, so that two GEMMs' operands compare equal
  // when they read the same elements of the same tensors.
  std::unordered_map<const te::ExprNode*, te::Expr> rename;
  std::string extents;
  auto name_axes = [&](const std::vector<te::IterVar>& axes, char tag) {
    for (size_t i = 0; i < axes.size(); ++i) {
      rename[axes[i].var.get()] = te::var(fmt::format("{}{}", tag, i));
      extents += fmt::format(" {}{}={}", tag, i, axes[i].extent);
    }
  };
  name_axes(g.batch, 'p');
  name_axes(g.cols, 'n');
  name_axes(op.reduce_axes, 'k');
  PanelShape s;
  s.rows = ceil_div(k, t.bk) * t.bk;
  s.cols = t.bn;
  s.dtype = g.b.dtype();
  // The tile grid (which block computes which column tile) is part of what a panel holds.
  s.key = fmt::format("{} |{}| tiles {}x{} of {}x{}x{} |{}", te::print(te::substitute(g.b, rename)),
                      extents, mt, nt, t.bm, t.bn, t.bk, tensors);
  return s;
}

PanelAssignment assign_weight_panels(const std::vector<std::optional<PanelShape>>& shapes,
                                     const std::vector<int64_t>& offsets,
                                     const std::vector<int64_t>& grids, int64_t budget,
                                     const std::string& kernel_name) {
  const size_t n = shapes.size();
  SOUFFLE_CHECK(offsets.size() == n && grids.size() == n,
                "weight panels: offsets and grids for every stage");
  PanelAssignment out;
  out.stage.resize(n);
  auto aligned = [](int64_t b) { return (b + 31) / 32 * 32; };
  int64_t blocks = 1;
  for (size_t i = 0; i < n; ++i) blocks = std::max(blocks, offsets[i] + grids[i]);
  // Weights read by two stages or more, and the buffer shape each needs.
  std::map<std::string, std::vector<size_t>> by_key;
  for (size_t i = 0; i < n; ++i)
    if (shapes[i]) by_key[shapes[i]->key].push_back(i);
  using ShapeKey = std::tuple<int64_t, int64_t, int>;
  struct Class {
    ShapeKey shape;
    int64_t bytes = 0, saved = 0;
    std::vector<std::string> keys;
  };
  std::map<ShapeKey, Class> classes;
  for (const auto& [key, members] : by_key) {
    if (members.size() < 2) continue;
    const PanelShape& s = *shapes[members.front()];
    Class& c = classes[{s.rows, s.cols, static_cast<int>(s.dtype)}];
    c.shape = {s.rows, s.cols, static_cast<int>(s.dtype)};
    c.bytes = s.bytes();
    c.saved += static_cast<int64_t>(members.size() - 1) * s.bytes();
    c.keys.push_back(key);
  }
  std::vector<Class> ranked;
  for (auto& [shape, c] : classes) ranked.push_back(std::move(c));
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const Class& a, const Class& b) { return a.saved > b.saved; });
  // Accepted classes: their buffer, and the keys still held (a key none of whose stages reuses
  // its panel is dropped: it would only cost shared memory and a barrier).
  struct Held {
    te::Tensor buffer;
    std::set<std::string> keys;
  };
  std::vector<Held> held;
  int64_t used = 0;
  for (const Class& c : ranked) {
    if (used + aligned(c.bytes) > budget) continue;
    used += aligned(c.bytes);
    const std::string name = fmt::format(
        "{}_weights{}", kernel_name, held.empty() ? std::string() : std::to_string(held.size()));
    Held h;
    h.buffer = loop::make_buffer(name, {std::get<0>(c.shape), std::get<1>(c.shape)},
                                 static_cast<DType>(std::get<2>(c.shape)));
    h.keys.insert(c.keys.begin(), c.keys.end());
    held.push_back(std::move(h));
  }
  // Which stages load: per buffer and block, the weights and tile it holds. Dropping a key
  // changes what the others find, so repeat until every held key is reused somewhere.
  for (bool dropped = true; dropped;) {
    dropped = false;
    out.stage.assign(n, std::nullopt);
    out.loads = out.reuses = 0;
    std::map<std::string, int> reused;
    for (Held& h : held) {
      std::vector<std::pair<const std::string*, int64_t>> owner(static_cast<size_t>(blocks),
                                                                {nullptr, -1});
      for (size_t i = 0; i < n; ++i) {
        if (!shapes[i]) continue;
        auto key = h.keys.find(shapes[i]->key);
        if (key == h.keys.end()) continue;
        bool load = false;
        for (int64_t b = offsets[i]; b < offsets[i] + grids[i]; ++b) {
          auto& o = owner[static_cast<size_t>(b)];
          load |= o.first != &*key || o.second != b - offsets[i];
          o = {&*key, b - offsets[i]};
        }
        out.stage[i] = WeightPanel{h.buffer, load};
        if (load) {
          ++out.loads;
          reused.emplace(*key, 0);
        } else {
          ++out.reuses;
          ++reused[*key];
        }
      }
    }
    for (Held& h : held)
      for (auto it = h.keys.begin(); it != h.keys.end();)
        if (reused[*it] == 0) {
          it = h.keys.erase(it);
          dropped = true;
        } else {
          ++it;
        }
  }
  out.groups = 0;
  out.bytes = 0;
  for (const Held& h : held) {
    if (h.keys.empty()) continue;
    out.groups += static_cast<int>(h.keys.size());
    out.buffers.push_back(h.buffer);
    out.bytes += aligned(h.buffer->shape[0] * h.buffer->shape[1] * dtype_size(h.buffer->dtype));
  }
  return out;
}

}  // namespace souffle::schedule
