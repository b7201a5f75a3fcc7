/// \file A C-like source emitter over loop IR and TE expressions; targets override its hooks.
#pragma once

#include <map>
#include <set>
#include <sstream>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "core/codegen/emitted.h"
#include "core/loop/stmt.h"
#include "core/te/bounds.h"

namespace souffle::codegen {

/// One pointer parameter of an emitted kernel, in the order the kernel takes them: the tensors it
/// only reads, then the tensors it writes, then kernel-private global scratch.
struct KernelParam {
  /// Flags: the kernel's per-tile counters (loop::Kernel::flags, int32), zeroed once when
  /// allocated and kept across launches; a kernel with flags also takes `long long
  /// souffle_flag_epoch` after its buffers (see loop::FlagRelease).
  enum class Role : uint8_t { Input, Output, Scratch, Flags };
  std::string name;  ///< the C identifier in the emitted code
  te::Tensor tensor;
  Role role = Role::Input;
};
const char* param_role_name(KernelParam::Role r);  ///< "input", "output", "scratch", "flags"

/// The kernel argument of a kernel with flags that carries the launch's epoch.
inline constexpr const char* kFlagEpoch = "souffle_flag_epoch";
/// The one tensor parameter of a kernel that takes its tensors packed (CodeGenC::packs_params):
/// `const __grid_constant__ NAME_args souffle_args`, a struct of one array `void* p[N]`, the
/// i-th tensor's pointer at p[i], in kernel_params order; an epoch still follows it.
inline constexpr const char* kPackedArgs = "souffle_args";

/// A C identifier made of `name` (ONNX names carry '/', ':', '.', ...): other characters become
/// '_', leading underscores go, and a name that would start with a digit gets "t_" first.
std::string c_identifier(const std::string& name);
/// c_identifier(name), with a numeric suffix when `taken` (or the reserved words) holds it; the
/// result is added to `taken`. Kernels of one unit are named this way, in order.
std::string unique_function_name(const std::string& name, std::set<std::string>& taken);

/// Emits one function per loop-IR kernel. The base class writes portable C (thread-binding loops
/// become ordinary loops, no barriers); a target overrides the hooks below that differ: type and
/// function names, storage scopes, thread indices, barriers, atomics, qualifiers. Each instance
/// emits one translation unit: kernels first, then `translation_unit()` puts the preamble (the
/// includes and helpers the kernels used) before them.
class CodeGenC {
 public:
  virtual ~CodeGenC() = default;

  /// Appends the function for `k` to this unit.
  void add_kernel(const loop::Kernel& k);
  /// The preamble and every kernel added so far.
  std::string translation_unit();
  /// The same, line by line, with what each line stands for (emitted.h).
  EmittedUnit emitted_unit();

  /// The parameters `k` is emitted with (names are unique within the kernel).
  std::vector<KernelParam> params(const loop::Kernel& k) const;

 protected:
  // ---- language facts (targets override) ----
  virtual std::string type_name(DType t);
  /// A literal of type t holding v (ints exactly, floats round-trip).
  virtual std::string float_literal(DType t, double v);
  /// f16/bf16: math happens in float; these convert to and from it.
  virtual bool is_narrow_float(DType) const { return false; }
  virtual std::string widen(DType, const std::string& e) { return e; }
  virtual std::string narrow(DType, const std::string& e) { return e; }
  /// The name of math function fn for float type t (f32/f64), "" when a helper is needed.
  virtual std::string math_name(te::CallFn fn, DType t);
  virtual std::string function_prefix(const loop::Kernel& k);  ///< before the return type
  virtual std::string function_attributes(const loop::Kernel&) { return ""; }  ///< before the name
  virtual std::string helper_prefix() { return "static inline "; }
  virtual std::string restrict_qualifier() { return "restrict"; }
  /// Whether kernel `k`, of `count` tensor parameters, takes them packed in one parameter
  /// (kPackedArgs, an array of pointers) instead of one parameter each.
  virtual bool packs_params(const loop::Kernel&, size_t) { return false; }
  /// Emits a BlockIdxX/ThreadIdxX loop: the base class runs it as an ordinary loop.
  virtual void emit_thread_binding(const loop::For& f);
  virtual void emit_shared_alloc(const loop::Allocate& a, const std::string& name);
  virtual std::string block_barrier_stmt();
  virtual std::string grid_barrier_stmt();
  /// Per-tile flags (loop::FlagRelease / FlagWait); C, a single thread of control, refuses them.
  virtual void emit_flag_release(const loop::FlagRelease& r);
  virtual void emit_flag_wait(const loop::FlagWait& w);
  /// A timeline record (docs/timeline.md): C has no clock per block, so the base class writes
  /// a comment only; CUDA writes the record.
  virtual void emit_timeline_record(const loop::TimelineRecord& r);
  virtual std::string atomic_add_stmt(DType t, const std::string& address,
                                      const std::string& value);
  /// The value lane `arg` (by `kind`) of the warp holds; plain C runs threads one after another
  /// and has no lanes to exchange with, so the base class refuses (InternalError).
  virtual std::string shuffle_expr(loop::ShuffleKind kind, DType t, const std::string& value,
                                   const std::string& arg);
  /// Emits a Vectorized loop as one wide access when the target has them; false keeps the
  /// portable form (an unrolled scalar loop).
  virtual bool emit_vectorized(const loop::For&) { return false; }
  /// Declares a per-thread array (a target may align it for wide accesses).
  virtual void emit_local_alloc(const loop::Allocate& a, const std::string& name);
  /// Warp-level matrix fragments (tensor cores): the declaration of a fragment array named
  /// `name`, and one Fragment{Fill,Load,Mma,Store} statement. Plain C has no warps; the base
  /// class refuses (InternalError).
  virtual void emit_fragment_alloc(const loop::FragmentAlloc& a, const std::string& name);
  virtual void emit_fragment_op(const loop::Stmt& s);
  /// Declarations at the top of a kernel's body (grid group, shared arena).
  virtual void emit_kernel_prologue(const loop::Kernel&) {}
  /// The comment line above a function ("// kernel `name`: grid ..."); a target that emits
  /// other functions than kernels says what they are.
  virtual std::string function_comment(const loop::Kernel& k);
  /// Emits stage `st` in another form than inline (a call of a function holding it); false
  /// emits it inline, as the base class does.
  virtual bool emit_stage_elsewhere(const loop::Stage&) { return false; }
  /// What the stage numbered `index` computes, for its comment: the kernel's StageInfo; a
  /// target that emits a stage as a function of its own looks it up in the stage's kernel.
  /// Null when there is none.
  virtual const loop::StageInfo* stage_info(int index);
  /// Lines before the helpers: includes the kernels need.
  virtual std::string includes();

  // ---- services for targets ----
  struct Code {
    std::string text;
    int prec = 16;  ///< C precedence of the outermost operator (16 = primary)
  };
  Code emit_expr(const te::Expr& e);
  std::string expr(const te::Expr& e) { return emit_expr(e).text; }
  void line(const std::string& text, LineRole role = LineRole::Code);
  /// A line of role `role` that a rolled loop may (or may not) hold (EmittedLine::repeatable).
  void line(const std::string& text, LineRole role, bool repeatable);
  /// Records the pointer the line just written declares (EmittedLine::declares).
  void declares(EmittedPointer pointer) { m_lines.back().declares = std::move(pointer); }
  void open(const std::string& head, LineRole role = LineRole::Code);  ///< "head {" and indent
  void open(const std::string& head, LineRole role, bool repeatable);
  void close(const std::string& tail = "}", LineRole role = LineRole::Code);
  /// The unit's kernel (emit order) and the stage the lines written from now on stand for
  /// (EmittedLine::kernel, ::stage); a target that writes a stage elsewhere sets them too.
  int m_line_kernel = -1;
  int m_line_stage = -1;
  /// What the function add_kernel writes next is (a target that outlines stages sets
  /// StageFunction around them); its lines get it and a function number (EmittedLine::part).
  LinePart m_function_part = LinePart::Kernel;
  void emit_stmt(const loop::Stmt& s);
  /// Registers a helper function (emitted once, in the preamble) by name and definition.
  void use_helper(const std::string& name, const std::string& definition);
  std::string var_name(const te::Expr& var);  ///< declares on first use
  std::string buffer_name(const te::TensorNode* t);
  /// The name of a tensor the kernel takes packed (for comments); "" for any other.
  std::string buffer_label(const te::TensorNode* t) const {
    auto it = m_labels.find(t);
    return it == m_labels.end() ? "" : it->second;
  }
  /// `&buffer[flat index of idx]`: where a fragment's tile starts.
  std::string element_address(const te::TensorNode* t, const std::vector<te::Expr>& idx);
  /// Sign facts for the bounds engine: a loop or let var bound to a non-negative value.
  void mark_nonnegative(const te::Expr& var) { m_ranges[var.get()] = te::Interval::at_least(0); }
  bool is_nonnegative(const te::Expr& e) const { return te::provably_nonnegative(e, m_ranges); }
  /// Whether `var` occurs in s (an unused binding is not emitted: NVRTC would warn about it).
  static bool uses_var(const loop::Stmt& s, const te::Expr& var);
  const loop::Kernel* kernel() const { return m_kernel; }
  /// The function name `k` is emitted under in this unit (unique among its kernels).
  const std::string& function_name() const { return m_function_name; }
  std::set<std::string> m_features;  ///< "fp16", "bf16", "grid_sync", ... (for includes)
  /// A local name from `base` no other name of the function uses.
  std::string unique_name(const std::string& base);

 private:
  std::string flat_index(const te::TensorNode* t, const std::vector<te::Expr>& idx);
  std::string comment_text(const std::string& s) const;
  Code emit_binary(const te::Binary& b, DType t);
  Code emit_call(const te::Call& c, DType t);
  Code emit_cast(const te::Cast& c);
  void emit_seq_child(const loop::Stmt& s, bool last);
  /// `stmt` with, for a barrier between stages, its boundary's kind and reason as a comment.
  /// Sets m_line_boundary to the boundary it describes.
  std::string barrier_line(const std::string& stmt, BoundaryKind kind);

  std::vector<EmittedLine> m_lines;  // the kernels' lines
  /// The part and function the lines written now belong to (EmittedLine::part, ::function).
  LinePart m_line_part = LinePart::Preamble;
  int m_line_function = -1;
  std::vector<EmittedFunction> m_functions;  ///< EmittedUnit::functions
  int m_line_boundary = -1;                  ///< the boundary the next line's barrier stands for
  int m_depth = 0;
  /// The top-level statement of the function's body being written (EmittedLine::statement);
  /// whether the top-level lines written last were comments only (they belong to the statement
  /// after them); whether the line written now continues the open one (a closing brace, an
  /// `else`).
  int m_statement = -1;
  bool m_comments_ahead = false;
  bool m_continues = false;
  const loop::Kernel* m_kernel = nullptr;
  int m_stage_depth = 0;       ///< Stage nodes open around the statement being emitted
  size_t m_next_boundary = 0;  ///< the kernel's next boundary with a barrier statement
  std::unordered_map<const te::ExprNode*, std::string> m_vars;
  std::unordered_map<const te::TensorNode*, std::string> m_buffers;
  /// A packed parameter's name, for comments (its m_buffers entry is an expression).
  std::unordered_map<const te::TensorNode*, std::string> m_labels;
  std::unordered_set<std::string> m_used_names;
  std::unordered_map<std::string, int> m_next_suffix;  ///< per base name: the last suffix given
  te::Scope m_ranges;                                  ///< vars known to be non-negative
  std::vector<std::pair<std::string, std::string>> m_helpers;  // in first-use order
  std::set<std::string> m_helper_names;
  std::set<std::string> m_kernel_names;
  std::string m_function_name;
};

}  // namespace souffle::codegen
