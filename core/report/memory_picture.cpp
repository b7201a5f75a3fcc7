// Memory pictures from an access record: fold, downsample, colour, outline, frames, SVG.
#include "core/report/memory_picture.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "core/report/svg.h"

namespace souffle::report {

using emulate::ElementRanges;
using emulate::KernelAccess;
using emulate::TensorAccess;
using emulate::TensorRole;
using emulate::UnitAccess;

const char* colouring_name(PictureColouring c) {
  switch (c) {
    case PictureColouring::Block:
      return "block";
    case PictureColouring::Reuse:
      return "reuse";
    case PictureColouring::FirstTouch:
      return "first touch";
  }
  return "?";
}

bool parse_colouring(const std::string& s, PictureColouring& out) {
  if (s == "block") {
    out = PictureColouring::Block;
  } else if (s == "reuse") {
    out = PictureColouring::Reuse;
  } else if (s == "first-touch" || s == "first touch" || s == "time") {
    out = PictureColouring::FirstTouch;
  } else {
    return false;
  }
  return true;
}

std::pair<int64_t, int64_t> fold_2d(const Shape& shape) {
  if (shape.empty()) return {1, 1};
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < shape.size(); ++d) rows *= shape[d];
  return {rows, shape.back()};
}

namespace {

uint32_t hsl(double h, double s, double l) {
  const double c = (1 - std::fabs(2 * l - 1)) * s;
  const double hp = std::fmod(h, 360.0) / 60.0;
  const double x = c * (1 - std::fabs(std::fmod(hp, 2.0) - 1));
  double r = 0, g = 0, b = 0;
  if (hp < 1) {
    r = c, g = x;
  } else if (hp < 2) {
    r = x, g = c;
  } else if (hp < 3) {
    g = c, b = x;
  } else if (hp < 4) {
    g = x, b = c;
  } else if (hp < 5) {
    r = x, b = c;
  } else {
    r = c, b = x;
  }
  const double m = l - c / 2;
  auto byte = [&](double v) {
    return static_cast<uint32_t>(std::clamp(std::lround((v + m) * 255), 0L, 255L));
  };
  return byte(r) << 16 | byte(g) << 8 | byte(b);
}

std::string hex(uint32_t rgb) {
  return fmt::format("#{:06x}", rgb & 0xffffff);
}

/// Calls f(cell) once per cell the range [a, b) of a folded (rows x cols) tensor covers.
template <typename F>
void for_cells(const TensorPicture& p, int64_t a, int64_t b, F&& f) {
  if (b <= a) return;
  const int64_t r0 = a / p.cols, r1 = (b - 1) / p.cols;
  for (int64_t r = r0; r <= r1; ++r) {
    const int64_t c0 = r == r0 ? a % p.cols : 0;
    const int64_t c1 = r == r1 ? (b - 1) % p.cols : p.cols - 1;
    const int base = static_cast<int>(r / p.row_step) * p.cell_cols;
    for (int64_t c = c0 / p.col_step; c <= c1 / p.col_step; ++c) f(base + static_cast<int>(c));
    // Rows of one cell row share cells: a range over whole rows needs only one of them.
    if (r != r1 && c0 == 0 && c1 == p.cols - 1 && p.row_step > 1) {
      const int64_t end = (r / p.row_step + 1) * p.row_step;  // the next cell row's first row
      r = std::max(r, std::min(end - 1, r1 - 1));
    }
  }
}

TileOutline bounding_box(const ElementRanges& s, int64_t cols, int32_t block) {
  TileOutline t;
  t.block = block;
  if (s.empty()) return t;
  const int64_t first = s.ranges.front().first, last = s.ranges.back().second - 1;
  int64_t cmin = cols, cmax = -1;
  for (const auto& [a, b] : s.ranges) {
    if (a / cols != (b - 1) / cols) {
      cmin = 0;
      cmax = cols - 1;
      break;
    }
    cmin = std::min(cmin, a % cols);
    cmax = std::max(cmax, (b - 1) % cols);
  }
  t.row = first / cols;
  t.rows = last / cols - t.row + 1;
  t.col = cmin;
  t.cols = cmax - cmin + 1;
  return t;
}

std::string phase_label(const KernelAccess& k, const emulate::AccessPhase& ph) {
  std::string s = fmt::format("epoch {}", ph.epoch);
  if (ph.stage >= 0) {
    s += fmt::format(" · stage {}", ph.stage);
    if (static_cast<size_t>(ph.stage) < k.stage_names.size())
      s += " (" + k.stage_names[static_cast<size_t>(ph.stage)] + ")";
  }
  return s;
}

}  // namespace

uint32_t block_colour(int32_t block) {
  if (block < 0) return kUntouched;
  // Golden-angle hue steps keep neighbouring blocks apart; three lightness bands add variety.
  const double h = std::fmod(block * 137.50776, 360.0);
  const double l = 0.45 + 0.1 * (block % 3);
  return hsl(h, 0.65, l);
}

uint32_t ramp_colour(double t) {
  t = std::clamp(t, 0.0, 1.0);
  // Light yellow to dark purple, through orange and red.
  const uint32_t stops[] = {0xfff5c0, 0xfdb863, 0xe6550d, 0xa50f15, 0x3f007d};
  const double x = t * 4;
  const int i = std::min(3, static_cast<int>(x));
  const double f = x - i;
  auto ch = [&](int shift) {
    const double a = (stops[i] >> shift) & 0xff, b = (stops[i + 1] >> shift) & 0xff;
    return static_cast<uint32_t>(std::lround(a + (b - a) * f)) << shift;
  };
  return ch(16) | ch(8) | ch(0);
}

MemoryPicture memory_picture(const KernelAccess& k, const PictureOptions& o) {
  MemoryPicture p;
  p.colouring = o.colouring;
  p.grid = k.grid;
  p.grid_barriers = k.grid_barriers;
  p.truncated = k.truncated;
  p.title = "kernel " + k.kernel;
  if (k.stage >= 0) {
    p.title += fmt::format(", stage {}", k.stage);
    const auto s = static_cast<size_t>(k.stage);
    if (s < k.stage_names.size())
      p.title += " (" + k.stage_names[s] +
                 (s < k.stage_schedules.size() && !k.stage_schedules[s].empty()
                      ? ", " + k.stage_schedules[s]
                      : std::string()) +
                 ")";
  }
  std::map<std::pair<emulate::AccessPhase, int32_t>, int> frame_of;
  for (size_t f = 0; f < k.frames.size(); ++f)
    frame_of[{k.frames[f].phase, k.frames[f].block}] = static_cast<int>(f);
  const double last_frame = std::max<double>(1, static_cast<double>(k.frames.size()) - 1);
  std::vector<const TensorAccess*> drawn;
  std::string shared_note, scratch_note;
  int64_t shared_total = 0;
  int shared_buffers = 0, scratch_tensors = 0;
  for (const TensorAccess& t : k.tensors) {
    if (t.role == TensorRole::Shared) {
      if (++shared_buffers <= 6)
        shared_note +=
            fmt::format("{}{} ({} B)", shared_note.empty() ? "" : ", ", t.name, t.shared_bytes);
      shared_total += t.shared_bytes;
    } else {
      p.global_bytes_read += t.block_elements_read * dtype_size(t.dtype);
      p.global_bytes_written += t.block_elements_written * dtype_size(t.dtype);
      if (t.role == TensorRole::Scratch)
        if (++scratch_tensors <= 8) scratch_note += (scratch_note.empty() ? "" : ", ") + t.name;
    }
    if (t.units.empty()) continue;
    if (t.role == TensorRole::Shared && !o.shared) continue;
    if (!o.only.empty() && std::find(o.only.begin(), o.only.end(), t.name) == o.only.end())
      continue;
    drawn.push_back(&t);
  }
  for (const TensorAccess* tp : drawn) {
    const TensorAccess& t = *tp;
    TensorPicture pic;
    pic.name = t.name;
    pic.shape = t.shape;
    pic.dtype = t.dtype;
    pic.role = t.role;
    pic.shared_bytes = t.shared_bytes;
    std::tie(pic.rows, pic.cols) = fold_2d(t.shape);
    const int64_t mr = std::max(1, o.max_cell_rows), mc = std::max(1, o.max_cell_cols);
    pic.row_step = (pic.rows + mr - 1) / mr;
    pic.col_step = (pic.cols + mc - 1) / mc;
    pic.cell_rows = static_cast<int>((pic.rows + pic.row_step - 1) / pic.row_step);
    pic.cell_cols = static_cast<int>((pic.cols + pic.col_step - 1) / pic.col_step);
    const size_t cells = static_cast<size_t>(pic.cell_rows) * static_cast<size_t>(pic.cell_cols);
    pic.read.assign(cells, 0);
    pic.written.assign(cells, 0);
    pic.value.assign(cells, -1);
    pic.rgb.assign(cells, kUntouched);
    std::vector<int32_t> wblock(cells, -1), rblock(cells, -1);
    std::map<int32_t, std::vector<const ElementRanges*>> reads_of, writes_of;
    for (const UnitAccess& u : t.units) {
      if (u.warp >= 0) continue;
      for (const auto& [a, b] : u.reads.ranges)
        for_cells(pic, a, b, [&](int c) {
          pic.read[static_cast<size_t>(c)] = 1;
          if (rblock[static_cast<size_t>(c)] < 0) rblock[static_cast<size_t>(c)] = u.block;
        });
      for (const auto& [a, b] : u.writes.ranges)
        for_cells(pic, a, b, [&](int c) {
          pic.written[static_cast<size_t>(c)] = 1;
          if (wblock[static_cast<size_t>(c)] < 0) wblock[static_cast<size_t>(c)] = u.block;
        });
      reads_of[u.block].push_back(&u.reads);
      writes_of[u.block].push_back(&u.writes);
    }
    // Distinct elements and each block's tile.
    {
      std::vector<const ElementRanges*> r, w;
      for (auto& [b, v] : reads_of) r.insert(r.end(), v.begin(), v.end());
      for (auto& [b, v] : writes_of) w.insert(w.end(), v.begin(), v.end());
      pic.elements_read = emulate::unite(r).count();
      pic.elements_written = emulate::unite(w).count();
      const bool by_writes = pic.elements_written > 0;
      for (auto& [b, v] : by_writes ? writes_of : reads_of) {
        const ElementRanges s = emulate::unite(v);
        if (s.empty()) continue;
        pic.tiles.push_back(bounding_box(s, pic.cols, b));
        if (pic.tiles.size() >= 4096) break;
      }
    }
    // Per-cell values.
    if (o.colouring == PictureColouring::Block) {
      for (size_t c = 0; c < cells; ++c) {
        const int32_t b = wblock[c] >= 0 ? wblock[c] : rblock[c];
        pic.value[c] = b;
        pic.rgb[c] = block_colour(b);
      }
    } else {
      const std::vector<int32_t>& src =
          o.colouring == PictureColouring::Reuse ? t.read_count : t.first_touch;
      std::vector<double> sum(cells, 0);
      std::vector<int64_t> n(cells, 0);
      std::vector<double> best(cells, -1);
      for (size_t e = 0; e < src.size(); ++e) {
        const int c =
            pic.cell_of(static_cast<int64_t>(e) / pic.cols, static_cast<int64_t>(e) % pic.cols);
        const auto cu = static_cast<size_t>(c);
        ++n[cu];
        if (o.colouring == PictureColouring::Reuse) {
          sum[cu] += src[e];
        } else if (src[e] >= 0 && (best[cu] < 0 || src[e] < best[cu])) {
          best[cu] = src[e];
        }
      }
      double top = 0;
      for (size_t c = 0; c < cells; ++c) {
        if (!pic.read[c] && !pic.written[c]) continue;
        pic.value[c] =
            o.colouring == PictureColouring::Reuse ? (n[c] ? sum[c] / n[c] : 0) : best[c];
        top = std::max(top, pic.value[c]);
      }
      if (o.colouring == PictureColouring::FirstTouch) top = last_frame;
      for (size_t c = 0; c < cells; ++c)
        if (pic.value[c] >= 0) pic.rgb[c] = ramp_colour(top > 0 ? pic.value[c] / top : 0);
      if (o.colouring == PictureColouring::Reuse)
        p.legend.push_back({0, fmt::format("{}: up to {:.1f} reads per element", t.name, top)});
    }
    p.tensors.push_back(std::move(pic));
  }
  // Legend.
  if (o.colouring == PictureColouring::Block) {
    const int32_t shown = static_cast<int32_t>(
        std::min<int64_t>(k.blocks.empty() ? k.grid : static_cast<int64_t>(k.blocks.size()), 12));
    for (int32_t i = 0; i < shown; ++i) {
      const int32_t b = k.blocks.empty() ? i : k.blocks[static_cast<size_t>(i)];
      p.legend.push_back({block_colour(b), fmt::format("block {}", b)});
    }
    if (k.grid > shown) p.legend.push_back({0, fmt::format("… {} blocks in all", k.grid)});
  } else if (o.colouring == PictureColouring::Reuse) {
    std::vector<LegendEntry> ramp = {
        {ramp_colour(0), "fewest reads"}, {ramp_colour(0.5), ""}, {ramp_colour(1), "most reads"}};
    p.legend.insert(p.legend.begin(), ramp.begin(), ramp.end());
  } else {
    p.legend.push_back({ramp_colour(0), "first frame"});
    p.legend.push_back({ramp_colour(0.5), ""});
    p.legend.push_back({ramp_colour(1), fmt::format("frame {}", k.frames.size() - 1)});
  }
  p.legend.push_back({kUntouched, "untouched"});
  // Frames.
  if (o.frames) {
    std::vector<std::vector<int>> stamp(p.tensors.size());
    for (size_t i = 0; i < p.tensors.size(); ++i) stamp[i].assign(p.tensors[i].rgb.size(), -1);
    const size_t nf = std::min(k.frames.size(), o.max_frames);
    p.frames.resize(nf);
    for (size_t f = 0; f < nf; ++f) {
      PictureFrame& fr = p.frames[f];
      fr.at = k.frames[f];
      fr.label = phase_label(k, fr.at.phase) + fmt::format(" · block {}", fr.at.block);
      fr.after_barrier = f > 0 && k.frames[f - 1].phase.epoch != fr.at.phase.epoch;
    }
    for (size_t i = 0; i < p.tensors.size(); ++i) {
      const TensorAccess& t = *drawn[i];
      const TensorPicture& pic = p.tensors[i];
      for (const UnitAccess& u : t.units) {
        if (u.warp >= 0) continue;
        auto it = frame_of.find({u.phase, u.block});
        if (it == frame_of.end() || static_cast<size_t>(it->second) >= nf) continue;
        FrameCells fc;
        fc.tensor = static_cast<int>(i);
        std::vector<int>& st = stamp[i];
        const int mark_r = it->second * 2, mark_w = it->second * 2 + 1;
        for (const auto& [a, b] : u.reads.ranges)
          for_cells(pic, a, b, [&](int c) {
            if (st[static_cast<size_t>(c)] == mark_r) return;
            st[static_cast<size_t>(c)] = mark_r;
            fc.read_cells.push_back(c);
          });
        for (const auto& [a, b] : u.writes.ranges)
          for_cells(pic, a, b, [&](int c) {
            if (st[static_cast<size_t>(c)] == mark_w) return;
            st[static_cast<size_t>(c)] = mark_w;
            fc.write_cells.push_back(c);
          });
        p.frames[static_cast<size_t>(it->second)].cells.push_back(std::move(fc));
      }
    }
    for (const emulate::ProducerEdge& e : k.edges) {
      auto it = frame_of.find({e.consumer, e.consumer_block});
      if (it == frame_of.end() || static_cast<size_t>(it->second) >= nf) continue;
      p.frames[static_cast<size_t>(it->second)].waits_for.emplace_back(e.tensor, e.producer_block);
    }
    if (k.frames.size() > nf)
      p.notes.push_back(
          fmt::format("The animation shows the first {} of {} frames.", nf, k.frames.size()));
  }
  // Notes.
  if (!shared_note.empty())
    p.notes.push_back(fmt::format("In shared memory, per block: {}{}; {} B in all.", shared_note,
                                  shared_buffers > 6
                                      ? fmt::format(" and {} more buffers", shared_buffers - 6)
                                      : std::string(),
                                  shared_total));
  else
    p.notes.push_back("Nothing is kept in shared memory.");
  if (!scratch_note.empty())
    p.notes.push_back(
        "Global scratch between stages (written by one stage, read by a later "
        "one through global memory): " +
        scratch_note +
        (scratch_tensors > 8 ? fmt::format(" and {} more", scratch_tensors - 8) : std::string()) +
        ".");
  if (!k.edges.empty()) {
    std::map<std::pair<emulate::AccessPhase, int32_t>, std::vector<int32_t>> by_consumer;
    for (const emulate::ProducerEdge& e : k.edges) {
      auto& v = by_consumer[{e.consumer, e.consumer_block}];
      if (std::find(v.begin(), v.end(), e.producer_block) == v.end()) v.push_back(e.producer_block);
    }
    size_t shown = 0;
    for (const auto& [key, producers] : by_consumer) {
      if (shown++ == 3) break;
      std::string list;
      for (size_t i = 0; i < producers.size() && i < 8; ++i)
        list += (i ? ", " : "") + std::to_string(producers[i]);
      if (producers.size() > 8) list += fmt::format(" … ({} blocks)", producers.size());
      p.notes.push_back(fmt::format(
          "At {}, block {} reads what block{} {} wrote in an earlier "
          "stage: a grid barrier (or flag wait) must order them.",
          phase_label(k, key.first), key.second, producers.size() > 1 ? "s" : "", list));
    }
    if (by_consumer.size() > 3)
      p.notes.push_back(
          fmt::format("{} block-phases in all read other blocks' writes.", by_consumer.size()));
  }
  if (k.truncated) p.notes.push_back("Cut: " + k.note + ".");
  if (!k.blocks.empty())  // first: every count and colour above covers these blocks only
    p.notes.insert(p.notes.begin(), "Sampled: " + emulate::sample_note(k) + ".");
  return p;
}

std::string memory_picture_svg(const MemoryPicture& p, const SvgPictureOptions& o) {
  const int pad = 8, head = 30;
  const PictureFrame* frame = o.frame >= 0 && static_cast<size_t>(o.frame) < p.frames.size()
                                  ? &p.frames[static_cast<size_t>(o.frame)]
                                  : nullptr;
  struct Placed {
    int px = 1, y = 0, w = 0, h = 0;
  };
  std::vector<Placed> at(p.tensors.size());
  int y = pad + 18, width = 320;
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    const TensorPicture& t = p.tensors[i];
    Placed& pl = at[i];
    pl.px = std::clamp((o.max_width_px - 2 * pad) / std::max(1, t.cell_cols), 2, o.cell_px);
    pl.y = y + head;
    pl.w = pl.px * t.cell_cols;
    pl.h = pl.px * t.cell_rows;
    width = std::max(width, pl.w + 2 * pad);
    y = pl.y + pl.h + pad;
  }
  const int legend_rows = o.legend ? static_cast<int>((p.legend.size() + 3) / 4) : 0;
  const int legend_y = y + 4;
  const int height = legend_y + legend_rows * 16 + pad;
  width = std::max(width, 4 * 170 + 2 * pad);
  std::string s = fmt::format(
      "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"mempic\" width=\"{}\" height=\"{}\" "
      "viewBox=\"0 0 {} {}\" font-family=\"sans-serif\" font-size=\"11\" role=\"img\">\n",
      width, height, width, height);
  s += fmt::format("<title>{}</title>\n", xml_escape(p.title));
  s += fmt::format("<rect width=\"{}\" height=\"{}\" fill=\"#ffffff\"/>\n", width, height);
  s += fmt::format("<text x=\"{}\" y=\"{}\" font-weight=\"bold\">{} — coloured by {}{}</text>\n",
                   pad, pad + 10, xml_escape(p.title), colouring_name(p.colouring),
                   frame ? xml_escape(" — " + frame->label) : std::string());
  for (size_t i = 0; i < p.tensors.size(); ++i) {
    const TensorPicture& t = p.tensors[i];
    const Placed& pl = at[i];
    std::string counts =
        t.role == TensorRole::Shared
            ? fmt::format("{} B per block", t.shared_bytes)
            : fmt::format("{} elements read, {} written", t.elements_read, t.elements_written);
    s += fmt::format(
        "<text x=\"{}\" y=\"{}\"><tspan font-weight=\"bold\">{}</tspan> {} {} · {}"
        "</text>\n",
        pad, pl.y - 16, xml_escape(t.name), dtype_name(t.dtype), shape_str(t.shape),
        emulate::tensor_role_name(t.role));
    s += fmt::format(
        "<text x=\"{}\" y=\"{}\" fill=\"#555\">{} x {} folded, {} x {} elements a "
        "cell · {}</text>\n",
        pad, pl.y - 4, t.rows, t.cols, t.row_step, t.col_step, counts);
    s += fmt::format("<g transform=\"translate({},{})\"{}>\n", pad, pl.y,
                     frame ? " opacity=\"0.25\"" : "");
    // Runs of equal colour along a row are one rectangle.
    for (int r = 0; r < t.cell_rows; ++r) {
      int c = 0;
      while (c < t.cell_cols) {
        const uint32_t col = t.rgb[static_cast<size_t>(r * t.cell_cols + c)];
        int e = c + 1;
        while (e < t.cell_cols && t.rgb[static_cast<size_t>(r * t.cell_cols + e)] == col) ++e;
        s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"{}\"/>",
                         c * pl.px, r * pl.px, (e - c) * pl.px, pl.px, hex(col));
        c = e;
      }
      s += "\n";
    }
    s += "</g>\n";
    if (frame) {
      s += fmt::format("<g transform=\"translate({},{})\">", pad, pl.y);
      for (const FrameCells& fc : frame->cells) {
        if (fc.tensor != static_cast<int>(i)) continue;
        for (int32_t c : fc.read_cells)
          s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#1a73e8\"/>",
                           (c % t.cell_cols) * pl.px, (c / t.cell_cols) * pl.px, pl.px, pl.px);
        for (int32_t c : fc.write_cells)
          s += fmt::format("<rect x=\"{}\" y=\"{}\" width=\"{}\" height=\"{}\" fill=\"#e8710a\"/>",
                           (c % t.cell_cols) * pl.px, (c / t.cell_cols) * pl.px, pl.px, pl.px);
      }
      s += "</g>\n";
    }
    // Tile outlines (in element coordinates, scaled to cells).
    if (!t.tiles.empty() && t.tiles.size() <= 1024) {
      s += fmt::format(
          "<g transform=\"translate({},{})\" fill=\"none\" stroke=\"#202124\" "
          "stroke-width=\"0.6\">",
          pad, pl.y);
      const double sx = static_cast<double>(pl.px) / static_cast<double>(t.col_step);
      const double sy = static_cast<double>(pl.px) / static_cast<double>(t.row_step);
      for (const TileOutline& tl : t.tiles)
        s += fmt::format("<rect x=\"{:.1f}\" y=\"{:.1f}\" width=\"{:.1f}\" height=\"{:.1f}\"/>",
                         static_cast<double>(tl.col) * sx, static_cast<double>(tl.row) * sy,
                         static_cast<double>(tl.cols) * sx, static_cast<double>(tl.rows) * sy);
      s += "</g>\n";
    }
  }
  if (o.legend) {
    std::vector<LegendEntry> legend = p.legend;
    if (frame) {
      legend.insert(legend.begin(), {0xe8710a, "written in this frame"});
      legend.insert(legend.begin(), {0x1a73e8, "read in this frame"});
    }
    for (size_t i = 0; i < legend.size(); ++i) {
      const int lx = pad + static_cast<int>(i % 4) * 170;
      const int ly = legend_y + static_cast<int>(i / 4) * 16;
      if (legend[i].rgb != 0 || legend[i].label.empty())
        s += fmt::format(
            "<rect x=\"{}\" y=\"{}\" width=\"10\" height=\"10\" fill=\"{}\" "
            "stroke=\"#999\" stroke-width=\"0.5\"/>",
            lx, ly, hex(legend[i].rgb));
      s += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", lx + 14, ly + 9,
                       xml_escape(legend[i].label));
    }
  }
  s += "</svg>\n";
  return s;
}

}  // namespace souffle::report
