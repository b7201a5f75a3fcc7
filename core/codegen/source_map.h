/// \file Source maps: which lines of a kernel's emitted text (CUDA C, loop IR, PTX, TE listing)
/// belong to which stage, TEs and ONNX nodes, so a viewer can go from a node to its code and back.
#pragma once

#include <string>
#include <vector>

#include "core/codegen/codegen_cuda.h"
#include "core/codegen/emitted.h"
#include "core/gpu/lto.h"
#include "core/loop/stmt.h"
#include "core/te/expr.h"

namespace souffle::codegen {

/// Consecutive lines (1-based, inclusive) that come from one stage of a kernel (or one TE).
struct SourceSpan {
  int first_line = 0, last_line = 0;
  int stage = -1;                  ///< index into Kernel::stages; -1 in a TE listing
  std::vector<std::string> tes;    ///< TE (ComputeOp) names the lines compute
  std::vector<std::string> nodes;  ///< the ONNX nodes those TEs come from (no duplicates)
  bool contains(int line) const { return line >= first_line && line <= last_line; }
};

/// The spans of one text, in ascending line order, never overlapping. Lines outside every span
/// (includes, helpers, the kernel's signature, grid barriers between stages) belong to no node.
struct SourceMap {
  std::vector<SourceSpan> spans;
  /// A barrier line between stages (outside every span) and the kernel boundary it stands for
  /// (an index into Kernel::boundaries); CUDA C only.
  struct BoundaryLine {
    int line = 0;
    int boundary = -1;
  };
  std::vector<BoundaryLine> boundaries;
  /// Whether the kernel calls stage functions of its own (codegen/outline.h); CUDA C only.
  bool calls_stage_functions = false;
  /// Where the kernel's stage functions and the kernel itself are (what separate compilation
  /// cuts the unit at, gpu/lto.h); CUDA C only.
  gpu::UnitLayout functions;
  /// The boundary whose barrier is on `line`, or -1.
  int boundary_at(int line) const;

  /// The span holding `line`, or nullptr.
  const SourceSpan* at_line(int line) const;
  /// The spans computing a TE of ONNX node `node` / of TE `te`, in line order.
  std::vector<const SourceSpan*> spans_of_node(const std::string& node) const;
  std::vector<const SourceSpan*> spans_of_te(const std::string& te) const;
  /// Every line of spans_of_node(node), ascending.
  std::vector<int> lines_of_node(const std::string& node) const;
};

/// Maps the lines of kernel `kernel` (its index in the unit) of a unit the CUDA emitter wrote,
/// from what it recorded for each line (emitted.h), never from the text: each stage's comment
/// header and its block, and, for an outlined stage, the call of its function (a function
/// shared by several stages holds the lines of the first of them; a call in a rolled loop, the
/// stage of every repetition); each barrier between stages to its boundary. Line numbers are
/// the unit's; `k` is the kernel (its stages name the TEs and nodes). The functions' lines come
/// from the same records.
SourceMap map_emitted(const EmittedUnit& unit, int kernel, const loop::Kernel& k);
/// Maps the text loop::print(k) wrote: a stage's line in the kernel header and its
/// `stage N { ... }` block.
SourceMap map_loop_text(const std::string& text, const loop::Kernel& k);
/// Maps PTX compiled with line information (`.loc` directives) from CUDA text whose map is
/// `cuda`: a PTX line belongs to the span of the CUDA line its last `.loc` names. Only `.loc`s
/// into the file named `source_name` count (the first `.file` when none matches).
SourceMap map_ptx(const std::string& ptx, const SourceMap& cuda, const std::string& source_name);

/// A listing of some TEs of a program, one line each (te::print), with its map.
struct MappedText {
  std::string text;
  SourceMap map;
};
/// emit_cuda(k, options) with its map.
MappedText emit_cuda_mapped(const loop::Kernel& k, const CudaEmitOptions& options = {});
/// The ops `tes` (indices into program.ops) in the order given.
MappedText te_listing(const te::TeProgram& program, const std::vector<int>& tes);

}  // namespace souffle::codegen
