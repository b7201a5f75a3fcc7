/// \file Stage outlining as a decision over loop IR, made before anything is printed: which
/// stages of a kernel become `__device__` functions of their own, what each function is (a
/// loop-IR kernel of one stage), and how the kernel calls it (the tensors it hands over, and at
/// which offset into them). CodeGenCuda prints the functions and the calls as decided here.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/loop/stmt.h"

namespace souffle::codegen {

/// Whether the stages of a merged kernel are emitted as `__device__ __noinline__` functions the
/// kernel calls in order, one per stage, instead of inline in one body. NVRTC's optimizer and
/// ptxas' register allocator then work on each stage alone: a kernel of hundreds of stages
/// compiles in a fraction of the time (docs/full_size_compile.md), and its registers are the
/// most any one stage needs plus what the calls keep live.
enum class StageOutlining : uint8_t {
  Auto,    ///< kernels of kOutlineMinStages stages, or of kOutlineRepeatMinStages repeating
  Always,  ///< every stage that can be outlined, in every multi-stage kernel
  Never,   ///< every stage inline
};
/// Auto outlines kernels of this many stages or more. Below, outlining measured no clear gain
/// (36 stages: 15% less NVRTC time, 74 stages: 20% more) while it adds call overhead; full
/// BERT's 216 stages compile 3x faster in NVRTC's front end with a sixth of its memory and 148
/// instead of 255 registers (docs/full_size_compile.md).
constexpr int kOutlineMinStages = 100;
/// Auto also outlines a kernel of this many stages or more when at least half of its stage
/// calls run code an earlier stage has (ResNeXt-101's 23 bottleneck blocks of one shape, an
/// LSTM's steps): each such function is compiled once. Paper-size ResNeXt-101 on an A100, 96
/// stages: 68 s of NVRTC inline (docs/compile_dedup.md).
constexpr int kOutlineRepeatMinStages = 64;

/// A function holding one stage, emitted before the kernel that calls it.
struct OutlinedFunction {
  /// The stage as a kernel of its own: its name (the function's), the kernel's launch, the
  /// shared slots it allocates, its tensors as parameters (a slice read at one constant leading
  /// index taken as a tensor of leading extent 1), and its body (the block/thread bindings
  /// around the stage, then the stage).
  loop::Kernel kernel;
  bool fragments = false;  ///< the kernel it comes from holds wmma fragments (arena alignment)
};

/// How the kernel runs an outlined stage: a call of `function` with `args`, each at an offset
/// of `offsets` elements from the tensor's start (an LSTM step's row of the input sequence).
struct StageCall {
  std::string function;
  std::vector<te::Tensor> args;
  std::vector<int64_t> offsets;
};

struct OutlinePlan {
  /// New functions, in the order they are emitted (the first stage that needs each).
  std::vector<OutlinedFunction> functions;
  /// Every outlined stage of the kernel (a node of its body) and its call; stages absent stay
  /// inline. Stages that run the same code on other tensors (a BERT layer and the next, an LSTM
  /// step and the next) call one function.
  std::map<const loop::Stage*, StageCall> calls;
};

/// Whether `s` holds wmma fragments, ldmatrix or cp.async (whose shared tiles fix the arena's
/// alignment).
bool has_fragments(const loop::Stmt& s);

/// Whether `mode` outlines the stages of `k` at all (StageOutlining::Auto: at least
/// kOutlineMinStages stages).
bool wants_outlining(const loop::Kernel& k, StageOutlining mode);

/// The outlining of kernel `k`, emitted under the function name `name`, under `mode`. A stage is
/// outlined when what it uses can be handed to a function: the kernel's global tensors and the
/// shared buffers that live across stages by pointer, the block/thread indices it reads again;
/// a stage that keeps a tensor in registers across stages, or releases or waits on per-tile
/// flags itself, stays inline. Function names are `name` + "_stage" + the stage's index, with
/// "_fn" added while `taken` says a name is used.
OutlinePlan plan_outlining(const loop::Kernel& k, const std::string& name, StageOutlining mode,
                           const std::function<bool(const std::string&)>& taken);

}  // namespace souffle::codegen
