/// \file CUDA C emission: a thin layer over CodeGenC, and the emit_cuda entry points.
#pragma once

#include <string>
#include <vector>

#include "core/codegen/codegen_c.h"

namespace souffle::codegen {

/// CUDA's facts over the C emitter: __half/__nv_bfloat16, __shared__ and the dynamic shared arena,
/// blockIdx/threadIdx, __syncthreads and cooperative-groups grid sync, atomicAdd, warp shuffles,
/// __restrict__,
/// `extern "C" __global__` with launch bounds, nvcuda::wmma fragments for tensor-core tiles.
class CodeGenCuda : public CodeGenC {
 protected:
  std::string type_name(DType t) override;
  std::string float_literal(DType t, double v) override;
  bool is_narrow_float(DType t) const override;
  std::string widen(DType t, const std::string& e) override;
  std::string narrow(DType t, const std::string& e) override;
  std::string math_name(te::CallFn fn, DType t) override;
  std::string function_prefix(const loop::Kernel& k) override;
  std::string function_attributes(const loop::Kernel& k) override;
  std::string helper_prefix() override;
  std::string restrict_qualifier() override;
  void emit_thread_binding(const loop::For& f) override;
  void emit_shared_alloc(const loop::Allocate& a, const std::string& name) override;
  std::string block_barrier_stmt() override;
  std::string grid_barrier_stmt() override;
  std::string atomic_add_stmt(DType t, const std::string& address,
                              const std::string& value) override;
  std::string shuffle_expr(loop::ShuffleKind kind, DType t, const std::string& value,
                           const std::string& arg) override;
  void emit_fragment_alloc(const loop::FragmentAlloc& a, const std::string& name) override;
  void emit_fragment_op(const loop::Stmt& s) override;
  bool emit_vectorized(const loop::For& f) override;
  void emit_local_alloc(const loop::Allocate& a, const std::string& name) override;
  void emit_kernel_prologue(const loop::Kernel& k) override;
  std::string includes() override;
};

/// One self-contained CUDA translation unit holding kernel `k` as an `extern "C" __global__`
/// function named after it (see cuda_kernel_names).
std::string emit_cuda(const loop::Kernel& k);
/// One translation unit with every kernel of `ks`, in order, sharing one preamble.
std::string emit_cuda(const loop::KernelSet& ks);

/// The function names of `ks`'s kernels in the unit emit_cuda(ks) writes (ONNX names made C
/// identifiers, made unique); emit_cuda(k) names a lone kernel cuda_kernel_names({k})[0].
std::vector<std::string> cuda_kernel_names(const loop::KernelSet& ks);
/// The pointer parameters the emitted kernel takes, in order (what a host launches it with).
std::vector<KernelParam> kernel_params(const loop::Kernel& k);

}  // namespace souffle::codegen
