/// \file Memory pictures: what a kernel (or one stage of it) touched, drawn from the emulator's
/// access record (emulate/access_record.h). Each tensor is folded to 2-D (leading dimensions
/// stacked along the rows, the last one along the columns, as Triton-Viz draws them), cut into a
/// bounded grid of cells, and each cell coloured by the block that touched it, by how often its
/// elements were read (reuse), or by when it was first touched; each block's output tile is
/// outlined; frames play the accesses block by block, grid barrier by grid barrier. The model is
/// plain data (the explorer paints it with Qt); memory_picture_svg draws it as inline SVG (the
/// lesson, the HTML walk-through).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/emulate/access_record.h"

namespace souffle::report {

enum class PictureColouring : uint8_t {
  Block,       ///< the block that touched the cell (first writer, else first reader)
  Reuse,       ///< reads per element, averaged over the cell (light: once, dark: most)
  FirstTouch,  ///< the frame of the cell's first access (light: early, dark: late)
};
const char* colouring_name(PictureColouring c);  ///< "block", "reuse", "first touch"
/// Parses "block", "reuse", "first-touch" / "first touch" / "time"; false for anything else.
bool parse_colouring(const std::string& s, PictureColouring& out);

struct PictureOptions {
  PictureColouring colouring = PictureColouring::Block;
  int max_cell_rows = 48;  ///< a tensor's picture has at most this many rows of cells ...
  int max_cell_cols =
      96;  ///< ... and columns; bigger tensors are downsampled (several elements a cell)
  bool shared = true;             ///< also draw the shared buffers (one block's copy)
  bool frames = true;             ///< make the animation's frames
  size_t max_frames = 1024;       ///< frames past this are dropped (MemoryPicture::note says so)
  std::vector<std::string> only;  ///< the tensors to draw, by name; empty: all
};

/// The 2-D view of a shape: {rows, cols} = {product of all but the last dimension, the last};
/// a scalar is 1 x 1, a vector 1 x n.
std::pair<int64_t, int64_t> fold_2d(const Shape& shape);

/// A rectangle in a tensor's folded 2-D view, in elements.
struct TileOutline {
  int64_t row = 0, col = 0, rows = 0, cols = 0;
  int32_t block = -1;  ///< the block whose tile it is
};

/// One tensor's picture.
struct TensorPicture {
  std::string name;
  Shape shape;
  DType dtype = DType::Float32;
  emulate::TensorRole role = emulate::TensorRole::Input;
  int64_t rows = 1, cols = 1;          ///< the folded view, elements
  int cell_rows = 1, cell_cols = 1;    ///< the cell grid
  int64_t row_step = 1, col_step = 1;  ///< elements per cell along rows / columns
  /// Per cell, row-major (cell_rows x cell_cols): its colour 0xRRGGBB (kUntouched when nothing
  /// touched it) and the value coloured (block, mean reads, first frame; -1 untouched).
  std::vector<uint32_t> rgb;
  std::vector<double> value;
  /// Per cell: whether anything read / wrote it (1) or not (0).
  std::vector<uint8_t> read, written;
  /// Each block's write footprint when it is one rectangle (the schedule's output tile), else
  /// its bounding box; for inputs each block's read footprint the same way.
  std::vector<TileOutline> tiles;
  int64_t elements_read = 0, elements_written = 0;  ///< distinct elements
  int64_t shared_bytes = 0;                         ///< a shared buffer's bytes per block
  /// The cell of a folded element.
  int cell_of(int64_t row, int64_t col) const {
    return static_cast<int>(row / row_step) * cell_cols + static_cast<int>(col / col_step);
  }
};

/// What one frame adds: the cells one block touched in one phase, per tensor.
struct FrameCells {
  int tensor = 0;  ///< index in MemoryPicture::tensors
  std::vector<int32_t> read_cells, write_cells;
};

struct PictureFrame {
  emulate::AccessFrame at;
  std::string label;  ///< "epoch 1 · stage 2 (stage2_matmul) · block 3"
  std::vector<FrameCells> cells;
  /// The producer blocks whose writes this block reads in this phase (after a grid barrier or a
  /// flag wait), with the tensor; empty when it reads only its own.
  std::vector<std::pair<std::string, int32_t>> waits_for;
  bool after_barrier = false;  ///< the first frame of a new grid-barrier epoch
};

struct LegendEntry {
  uint32_t rgb = 0;
  std::string label;
};

struct MemoryPicture {
  std::string title;  ///< "kernel k0_fused, stage 2 (stage2_matmul, gemm 64x64x16 tile 4x4)"
  PictureColouring colouring = PictureColouring::Block;
  std::vector<TensorPicture> tensors;
  std::vector<PictureFrame> frames;
  std::vector<LegendEntry> legend;
  /// Sentences: what is in shared memory per block, which tensors are global scratch between
  /// stages, which blocks wait for which at grid barriers, what was cut.
  std::vector<std::string> notes;
  int64_t grid = 1;
  int grid_barriers = 0;
  /// Global traffic if each block reads and writes each distinct element it touches once
  /// (TensorAccess::block_elements_* x dtype size), over the recorded kernel or stage.
  int64_t global_bytes_read = 0, global_bytes_written = 0;
  bool truncated = false;
};

constexpr uint32_t kUntouched = 0xeeeeee;
/// A colour per block, distinct for neighbours (a golden-angle hue walk).
uint32_t block_colour(int32_t block);
/// 0..1 to a light-to-dark ramp.
uint32_t ramp_colour(double t);

MemoryPicture memory_picture(const emulate::KernelAccess& k, const PictureOptions& options = {});

struct SvgPictureOptions {
  int cell_px = 6;         ///< a cell's side in pixels (cells are square)
  int max_width_px = 900;  ///< cells shrink (to 2 px) to keep a tensor this wide
  /// -1: the whole recording; else that frame's cells drawn over the faded picture (what one
  /// block touched in one phase).
  int frame = -1;
  bool legend = true;
};

/// Inline SVG (no script, no external reference): per tensor its name, shape, role and counts,
/// its cells and tile outlines, and a legend naming the colouring.
std::string memory_picture_svg(const MemoryPicture& p, const SvgPictureOptions& options = {});

}  // namespace souffle::report
