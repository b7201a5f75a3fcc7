/// \file The SASS of a compiled kernel by stage: its cubin (compiled with line information)
/// disassembled (gpu::disassemble), each instruction given to the stage whose CUDA C lines it
/// came from (CompiledKernel::cuda_map, as the emitter recorded it), and what the stage's loop IR
/// says it should contain.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/codegen/source_map.h"
#include "core/gpu/sass.h"
#include "core/session/compile.h"

namespace souffle {

/// One stage of a kernel: its instructions' mix, and what its loop IR computes with.
struct StageSass {
  int stage = -1;  ///< index into Kernel::stages
  std::string name;
  gpu::SassMix mix;
  bool tensor_core = false;  ///< the loop IR computes with MMAs (Fragment*, MmaSync, WgmmaMma)
  bool async_copy = false;   ///< the loop IR copies with cp.async (AsyncCopy)
  /// Whether the stage's own CUDA C lines hold its MMAs (false: it calls a stage function it
  /// shares with an earlier stage of the same code, whose lines hold them); true when unknown.
  bool mma_in_source = true;
};

/// Sets mma_in_source of `stages` from the CUDA C `cuda` mapped by `cuda_map`: the stage's
/// lines contain an MMA (`mma_sync`, `mma.sync`, `wgmma`).
void mark_mma_source(std::vector<StageSass>& stages, const std::string& cuda,
                     const codegen::SourceMap& cuda_map);

struct KernelSass {
  std::string kernel, arch;
  bool ok = false;
  std::string error;        ///< why there is no SASS (no nvdisasm, a failed compile)
  gpu::SassMix mix;         ///< every function of the cubin
  int registers = 0;        ///< the kernel entry's (SHI_REGISTERS)
  int64_t spill_bytes = 0;  ///< ptxas' spill stores and loads of the entry and its stage functions
  std::vector<StageSass> stages;
  gpu::SassMix outside;  ///< instructions on no stage's lines (prologue, barriers, helpers)
  /// The listing (gpu::sass_text) and its map: each line to the stage of its CUDA line.
  std::string text;
  codegen::SourceMap map;
  std::vector<int> cuda_lines;  ///< each listing line's CUDA line (0: none), at index line - 1
};

/// Per loop-IR stage of `k`: whether it computes with MMAs and copies with cp.async.
std::vector<StageSass> stage_expectations(const loop::Kernel& k);

/// The SASS of `result` (compiled from `cuda`, named `source_name`, with line information) by
/// stage of `k`, whose CUDA C map is `cuda_map`.
KernelSass sass_of_result(const loop::Kernel& k, const codegen::SourceMap& cuda_map,
                          const std::string& source_name, const gpu::CompileResult& result);
/// Same for several launches in one translation unit (the explorer's view of a partition):
/// `stages` are their stage_expectations one after another, as `cuda_map` numbers them, and
/// `entry` the first kernel's name.
KernelSass sass_of_result(std::vector<StageSass> stages, const std::string& entry,
                          const codegen::SourceMap& cuda_map, const std::string& source_name,
                          const gpu::CompileResult& result);

/// Compiles `ck.cuda` for `arch` with line information (NVRTC's cache serves a kernel compiled
/// before) and disassembles it by stage. Never throws: errors land in the result.
KernelSass sass_of(const CompiledKernel& ck, const std::string& arch, bool use_cache = true);

/// sass_of for every kernel and every sm_XX arch of `archs` (compute_XX has no SASS), the
/// compiles run side by side on the process-wide pool: result[kernel][arch].
std::vector<std::vector<KernelSass>> sass_of_all(const std::vector<CompiledKernel>& kernels,
                                                 const std::vector<std::string>& archs,
                                                 bool use_cache = true);

/// A map from the listing's lines to `cuda_map`'s spans (stage, TEs, nodes) through `lines`.
codegen::SourceMap map_sass(const std::vector<int>& lines, const codegen::SourceMap& cuda_map);

nlohmann::json sass_mix_json(const gpu::SassMix& m);
/// {"arch", "ok", "error"?, "registers", "spill_bytes", "mix", "stages": [{"stage", "name",
/// "tensor_core", "async_copy", "mix"}], "outside"}.
nlohmann::json sass_json(const KernelSass& s);

/// What a tensor-core stage's SASS lacks: MMAs; asynchronous copies where its loop IR has
/// AsyncCopy; and any local-memory load or store (a spill) in the kernel. One line per problem,
/// naming kernel, arch and stage; empty when none.
std::vector<std::string> sass_problems(const KernelSass& s);

}  // namespace souffle
