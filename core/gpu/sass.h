/// \file SASS of compiled kernels: a cubin disassembled by the CUDA toolkit's nvdisasm, its
/// instructions tied to CUDA C lines (line information from NVRTC's -lineinfo) and counted by
/// kind: tensor-core MMAs, asynchronous copies, ldmatrix, barriers, local-memory traffic.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace souffle::gpu {

/// Where nvdisasm is, searched in this order: the path set with set_nvdisasm_path,
/// $SOUFFLE_NVDISASM, `nvdisasm` on $PATH, $CUDA_HOME/bin and $CUDA_PATH/bin, the toolkit's bin
/// folder found at build time, /usr/local/cuda/bin, then the copy scripts/setup.sh installs
/// (tools/nvdisasm/nvidia/cu13/bin/nvdisasm in a build folder: searched from the executable's
/// folder upwards, then ./build). Empty when none is found.
std::string find_nvdisasm();
/// Takes `path` before every other place ("" forgets it).
void set_nvdisasm_path(const std::string& path);
/// Why SASS cannot be shown, and how to get nvdisasm: for messages and the explorer.
std::string nvdisasm_missing_message();

/// Instruction counts by kind. An instruction is named by its opcode (the mnemonic before the
/// first '.', after a predicate such as `@P0`).
struct SassMix {
  int64_t total = 0;
  int64_t mma = 0;          ///< HMMA (mma.sync, wmma), HGMMA (wgmma), IMMA, DMMA
  int64_t async_copy = 0;   ///< LDGSTS (cp.async), UTMALDG / UBLKCP (TMA bulk copies)
  int64_t ldsm = 0;         ///< LDSM (ldmatrix)
  int64_t bar = 0;          ///< BAR (block barriers), SYNCS (mbarrier operations)
  int64_t local_load = 0;   ///< LDL: local memory, a spilled register read back
  int64_t local_store = 0;  ///< STL
  /// Counts the instruction with this opcode ("HMMA", "LDGSTS"; suffixes are ignored).
  void add(const std::string& opcode);
  SassMix& operator+=(const SassMix& o);
  bool operator==(const SassMix&) const = default;
};

/// One instruction of a listing.
struct SassInstruction {
  int64_t address = 0;
  std::string opcode;  ///< "HMMA"
  std::string text;    ///< "HMMA.16816.F32 R16, R12, R6, RZ ;"
  /// The CUDA line it was compiled from (the outermost location in the kernel's own file of its
  /// inlining chain); 0 where the listing does not say.
  int line = 0;
};

/// One function (a kernel or a device function it calls) of a cubin.
struct SassFunction {
  std::string name;
  int registers = 0;  ///< from the section's SHI_REGISTERS (sm_8x cubins; 0 where absent)
  std::vector<SassInstruction> code;
  SassMix mix;
};

struct SassListing {
  std::vector<SassFunction> functions;
  SassMix mix;  ///< over every function
};

/// Parses `nvdisasm -c -gi` output. Line comments (`//## File "F", line N [inlined at "G",
/// line M ...]`) give each instruction the line of the outermost location in a file whose name
/// ends with `source_name` (every file when it is empty).
SassListing parse_nvdisasm(const std::string& text, const std::string& source_name);

struct Disassembly {
  bool ok = false;
  std::string error;  ///< why not (no nvdisasm, no cubin, nvdisasm failed)
  std::string text;   ///< nvdisasm's output
  SassListing listing;
};

/// Disassembles `cubin` with nvdisasm (-c -gi) and parses it; never throws.
Disassembly disassemble(const std::vector<uint8_t>& cubin, const std::string& source_name);

/// The listing as text, one instruction per line ("/*0040*/ HMMA.16816.F32 ...  // line 12"),
/// each function under a `// function NAME (N registers)` line; `lines` receives each text
/// line's CUDA line (0 for none), 1-based text lines at index line - 1.
std::string sass_text(const SassListing& listing, std::vector<int>* lines = nullptr);

}  // namespace souffle::gpu
