/// \file What a CUBIN says about its functions, read from the ELF file itself: the register
/// count and stack sizes the CUDA driver launches a kernel with. ptxas reports them in its
/// verbose lines when it compiles a whole kernel; a kernel linked from separately compiled
/// programs (lto.h) gets its final figures from the linker, which writes them only here.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace souffle::gpu {

/// One function's attributes (the `.nv.info` records of the CUBIN).
struct CubinFunction {
  std::string name;         ///< its symbol (a kernel's entry name, a mangled device function)
  int registers = 0;        ///< per thread (EIATTR_REGCOUNT); for an entry, the most its calls need
  int64_t frame_bytes = 0;  ///< its own stack frame per thread (EIATTR_FRAME_SIZE)
  int64_t min_stack_bytes = 0;  ///< the stack its call tree needs (EIATTR_MIN_STACK_SIZE)
};

/// Every function of `cubin` that has attributes. Empty with `why` set when the bytes are not a
/// 64-bit little-endian ELF file, or a section or record runs past its end.
std::vector<CubinFunction> read_cubin_functions(const std::vector<uint8_t>& cubin,
                                                std::string* why = nullptr);

/// The function named `name` of `cubin`, if it has attributes.
std::optional<CubinFunction> find_cubin_function(const std::vector<uint8_t>& cubin,
                                                 const std::string& name);

}  // namespace souffle::gpu
