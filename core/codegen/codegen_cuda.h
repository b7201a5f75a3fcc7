/// \file CUDA C emission: a thin layer over CodeGenC, and the emit_cuda entry points.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/codegen/codegen_c.h"
#include "core/codegen/outline.h"

namespace souffle::codegen {

struct CudaEmitOptions {
  StageOutlining outlining = StageOutlining::Auto;
  /// Registers per thread the kernels may use (0: no cap). Emitted as `__maxnreg__(N)` in
  /// place of `__launch_bounds__` (CUDA takes one of the two), so the cap travels with the
  /// source and its PTX (`.maxnreg`) to every compiler that builds them, nvcc and the driver's
  /// JIT included, not only to the NVRTC call that chose it.
  int max_registers = 0;
  /// Statements of a kernel with outlined stages that repeat on other tensors (an LSTM step
  /// and the next) become loops (roll.h): same calls in the same order, far less source.
  bool roll = true;
};

/// CUDA's facts over the C emitter: __half/__nv_bfloat16, __shared__ and the dynamic shared arena,
/// blockIdx/threadIdx, __syncthreads and cooperative-groups grid sync, atomicAdd, warp shuffles,
/// __restrict__,
/// `extern "C" __global__` with launch bounds, nvcuda::wmma fragments for tensor-core tiles.
class CodeGenCuda : public CodeGenC {
 public:
  explicit CodeGenCuda(CudaEmitOptions options = {}) : m_options(options) {}
  /// Appends kernel `k` to the unit under the function name `name` (what cuda_kernel_names
  /// gives it), preceded by the functions of its outlined stages, whose names avoid `reserved`
  /// (every kernel name of the unit).
  void add_cuda_kernel(const loop::Kernel& k, const std::string& name,
                       const std::set<std::string>& reserved);

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
  bool packs_params(const loop::Kernel& k, size_t count) override;
  void emit_thread_binding(const loop::For& f) override;
  void emit_shared_alloc(const loop::Allocate& a, const std::string& name) override;
  std::string block_barrier_stmt() override;
  std::string grid_barrier_stmt() override;
  void emit_flag_release(const loop::FlagRelease& r) override;
  void emit_flag_wait(const loop::FlagWait& w) override;
  void emit_timeline_record(const loop::TimelineRecord& r) override;  ///< codegen/timeline_cuda.cpp
  std::string atomic_add_stmt(DType t, const std::string& address,
                              const std::string& value) override;
  std::string shuffle_expr(loop::ShuffleKind kind, DType t, const std::string& value,
                           const std::string& arg) override;
  void emit_fragment_alloc(const loop::FragmentAlloc& a, const std::string& name) override;
  void emit_fragment_op(const loop::Stmt& s) override;
  bool emit_vectorized(const loop::For& f) override;
  void emit_local_alloc(const loop::Allocate& a, const std::string& name) override;
  void emit_kernel_prologue(const loop::Kernel& k) override;
  std::string function_comment(const loop::Kernel& k) override;
  bool emit_stage_elsewhere(const loop::Stage& st) override;
  const loop::StageInfo* stage_info(int index) override;
  std::string includes() override;

 private:
  /// Calls on_stmt on every statement of `s` and on_expr on every expression they hold, outside
  /// the stages outlined from the kernel being emitted (what the kernel's own body still holds).
  void visit_inline(const loop::Stmt& s, const std::function<void(const loop::Stmt&)>& on_stmt,
                    const std::function<void(const te::Expr&)>& on_expr) const;

  CudaEmitOptions m_options;
  int m_cuda_kernels = 0;  ///< kernels added so far (EmittedLine::kernel of the next)
  std::map<const loop::Stage*, StageCall> m_outlined;  ///< of the kernel being emitted
  /// While a stage function is emitted: the kernel it comes from (whose StageInfos it uses).
  const loop::Kernel* m_stage_parent = nullptr;
  /// Stage functions by name: the kernel they came from and whether it holds wmma fragments
  /// (which fixes the arena's alignment).
  std::map<std::string, std::pair<std::string, bool>> m_stage_functions;
  /// wgmma: the (type, n) shapes the unit uses, and the kernel's accumulator registers (first
  /// element's address, count), fenced at each wgmma fence and wait.
  std::set<std::pair<loop::MmaType, int64_t>> m_wgmma_shapes;
  std::map<std::string, int64_t> m_wgmma_acc;
};

/// One self-contained CUDA translation unit holding kernel `k` as an `extern "C" __global__`
/// function named after it (see cuda_kernel_names).
std::string emit_cuda(const loop::Kernel& k, CudaEmitOptions options = {});
/// One translation unit with every kernel of `ks`, in order, sharing one preamble.
std::string emit_cuda(const loop::KernelSet& ks, CudaEmitOptions options = {});
/// The same unit line by line, each line with the kernel (its index in `ks`), stage and
/// boundary it stands for (emitted.h): what source maps are made of (map_emitted).
EmittedUnit emit_cuda_unit(const loop::KernelSet& ks, CudaEmitOptions options = {});

/// The function names of `ks`'s kernels in the unit emit_cuda(ks) writes (ONNX names made C
/// identifiers, made unique); emit_cuda(k) names a lone kernel cuda_kernel_names({k})[0].
std::vector<std::string> cuda_kernel_names(const loop::KernelSet& ks);
/// The pointer parameters the emitted kernel takes, in order (what a host launches it with).
std::vector<KernelParam> kernel_params(const loop::Kernel& k);

/// A kernel of this many tensor parameters or more takes them packed in one (kPackedArgs): the
/// LSTM's 3,054 pointer parameters and the local tables of its rolled loops cost NVRTC 4.9 s
/// of its 5.1 s on the kernel's own program, packed 1.2 s (docs/compile_dedup.md). Such kernels
/// outline their stages (kOutlineMinStages), whose functions keep their `__restrict__`
/// parameters; below it, one parameter each keeps `__restrict__` on the kernel's own code.
constexpr size_t kPackedParamsMin = 256;
/// Whether the emitted `k` takes its tensors packed: the host passes a pointer to an array of
/// kernel_params(k).size() device pointers as its first parameter (then the epoch, if any).
bool takes_packed_params(const loop::Kernel& k);
/// The same for a kernel of `tensor_params` tensor parameters (kernel_params(k).size()).
inline bool takes_packed_params(size_t tensor_params) {
  return tensor_params >= kPackedParamsMin;
}

}  // namespace souffle::codegen
