#include "core/codegen/codegen_cuda.h"

#include <cctype>
#include <cmath>
#include <optional>
#include <unordered_set>

#include "core/codegen/mma_ptx.h"
#include "core/codegen/outline.h"
#include "core/codegen/roll.h"
#include "core/codegen/wgmma_ptx.h"
#include "core/loop/equal.h"
#include "core/loop/mutator.h"
#include "core/loop/vectorize.h"
#include "core/support/error.h"
#include "core/te/mutator.h"

namespace souffle::codegen {

namespace {

struct NarrowFact {
  DType type;
  const char* name;
  const char* feature;  ///< the header it needs
  const char* to_float;
  const char* from_float;
};
constexpr NarrowFact kNarrow[] = {
    {DType::Float16, "__half", "fp16", "__half2float", "__float2half"},
    {DType::BFloat16, "__nv_bfloat16", "bf16", "__bfloat162float", "__float2bfloat16"},
};
const NarrowFact* narrow_fact(DType t) {
  for (const NarrowFact& f : kNarrow)
    if (f.type == t) return &f;
  return nullptr;
}

/// The types atomicAdd takes as they are; others need a reinterpretation (or are refused).
constexpr DType kNativeAtomic[] = {DType::Float32, DType::Float64, DType::Int32,   DType::UInt32,
                                   DType::UInt64,  DType::Float16, DType::BFloat16};

}  // namespace

std::string CodeGenCuda::type_name(DType t) {
  if (const NarrowFact* f = narrow_fact(t)) {
    m_features.insert(f->feature);
    return f->name;
  }
  return CodeGenC::type_name(t);
}

std::string CodeGenCuda::float_literal(DType t, double v) {
  if (std::isfinite(v)) return CodeGenC::float_literal(t, v);
  // Bit patterns, since NVRTC has no <math.h> macros without extra headers.
  if (t == DType::Float64) {
    if (std::isnan(v)) return "__longlong_as_double(0x7ff8000000000000ll)";
    return v > 0 ? "__longlong_as_double(0x7ff0000000000000ll)"
                 : "__longlong_as_double((long long)0xfff0000000000000ull)";
  }
  if (std::isnan(v)) return "__int_as_float(0x7fffffff)";
  return v > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float((int)0xff800000u)";
}

bool CodeGenCuda::is_narrow_float(DType t) const {
  return narrow_fact(t) != nullptr;
}
std::string CodeGenCuda::widen(DType t, const std::string& e) {
  const NarrowFact* f = narrow_fact(t);
  if (!f) return e;
  m_features.insert(f->feature);
  return std::string(f->to_float) + "(" + e + ")";
}
std::string CodeGenCuda::narrow(DType t, const std::string& e) {
  const NarrowFact* f = narrow_fact(t);
  if (!f) return e;
  m_features.insert(f->feature);
  return std::string(f->from_float) + "(" + e + ")";
}

std::string CodeGenCuda::math_name(te::CallFn fn, DType t) {
  if (fn == te::CallFn::Rsqrt) return t == DType::Float64 ? "rsqrt" : "rsqrtf";
  return CodeGenC::math_name(fn, t);
}

std::string CodeGenCuda::function_prefix(const loop::Kernel& k) {
  if (m_stage_functions.count(k.name)) return "static __device__ __noinline__ ";
  return "extern \"C\" __global__ ";
}
std::string CodeGenCuda::function_attributes(const loop::Kernel& k) {
  if (m_stage_functions.count(k.name)) return "";
  if (m_options.max_registers > 0)
    return "__maxnreg__(" + std::to_string(m_options.max_registers) + ") ";
  // A cooperative kernel asks for one block per SM at least: with the block size alone ptxas
  // aims at an occupancy of its own (128 registers for 128 threads) and spills a merged kernel
  // that needs more; how many of its blocks must be co-resident is the plan's, and compile_plan
  // caps the registers where the grid would not be.
  if (k.launch.cooperative)
    return "__launch_bounds__(" + std::to_string(k.launch.block_x) + ", 1) ";
  return "__launch_bounds__(" + std::to_string(k.launch.block_x) + ") ";
}
std::string CodeGenCuda::helper_prefix() {
  return "static __device__ __forceinline__ ";
}
std::string CodeGenCuda::restrict_qualifier() {
  return "__restrict__";
}

void CodeGenCuda::emit_thread_binding(const loop::For& f) {
  // An outlined stage reads blockIdx/threadIdx itself: the kernel declares only what it uses.
  bool used = false;
  visit_inline(
      f.body, [](const loop::Stmt&) {},
      [&](const te::Expr& e) {
        if (!used) te::for_each_node(e, [&](const te::Expr& n) { used |= n.get() == f.var.get(); });
      });
  if (!used) {
    emit_stmt(f.body);
    return;
  }
  const bool block = f.for_kind == loop::ForKind::BlockIdxX;
  std::string value = block ? "(long long)blockIdx.x" : "(long long)threadIdx.x";
  const te::IntImm* mn = f.min.as<te::IntImm>();
  if (!mn || mn->value != 0) value = expr(f.min) + " + " + value;
  const std::string v = var_name(f.var);
  if (is_nonnegative(f.min)) mark_nonnegative(f.var);
  line("const long long " + v + " = " + value + ";");
  emit_stmt(f.body);
}

void CodeGenCuda::emit_shared_alloc(const loop::Allocate& a, const std::string& name) {
  const std::string tn = type_name(a.buffer->dtype);
  for (const loop::SharedSlot& slot : kernel()->shared) {
    if (slot.buffer.get() != a.buffer.get()) continue;
    line(tn + "* const " + name + " = reinterpret_cast<" + tn + "*>(souffle_smem + " +
             std::to_string(slot.offset) + ");  // " + std::to_string(slot.bytes) +
             " B of the arena",
         LineRole::ArenaPointer);
    declares({name, tn, false});
    return;
  }
  int64_t n = 1;
  for (int64_t d : a.buffer->shape) n *= d;
  line("__shared__ " + tn + " " + name + "[" + std::to_string(n) + "];");
}

std::string CodeGenCuda::block_barrier_stmt() {
  return "__syncthreads();";
}
std::string CodeGenCuda::grid_barrier_stmt() {
  m_features.insert("grid_sync");
  return "grid.sync();";
}

// A release: every thread's stores of the tile are done (block barrier), then one thread makes
// them visible device-wide (fence) before its atomic add can be seen.
void CodeGenCuda::emit_flag_release(const loop::FlagRelease& r) {
  constexpr LineRole kFlag = LineRole::FlagSync;
  line("__syncthreads();", kFlag, true);
  open("if (threadIdx.x == 0)", kFlag, true);
  line("__threadfence();", kFlag, true);
  const std::string index = expr(r.index);
  line("atomicAdd(&" + buffer_name(r.flags.get()) + "[" + index + "], 1);", kFlag,
       index_arithmetic(index, {"bx"}, " *+()-"));
  close("}", LineRole::Brace);
}

// An acquire: one thread spins on each counter with an acquire load (a volatile load and a
// fence before sm_70), fences, and the block meets it at a barrier, so every thread's later
// loads see the producers' stores.
void CodeGenCuda::emit_flag_wait(const loop::FlagWait& w) {
  use_helper("souffle_ld_acquire",
             helper_prefix() +
                 "int souffle_ld_acquire(const int* p) {\n"
                 "  int v;\n"
                 "#if __CUDA_ARCH__ >= 700\n"
                 "  asm volatile(\"ld.acquire.gpu.b32 %0, [%1];\" : \"=r\"(v) : \"l\"(p) : "
                 "\"memory\");\n"
                 "#else\n"
                 "  v = *(const volatile int*)p;\n"
                 "  __threadfence();\n"
                 "#endif\n"
                 "  return v;\n"
                 "}\n");
  const std::string flags = buffer_name(w.flags.get());
  const std::string first = expr(w.first), count = expr(w.count);
  const std::string target = unique_name("flag_target"), lo = unique_name("flag_first"),
                    t = unique_name("flag_tile");
  constexpr LineRole kFlag = LineRole::FlagSync;
  // A table entry at block index arithmetic (the tiles a block waits for) may repeat in a
  // rolled loop: "flags_first[bx]", with a constant added before it for `first`.
  auto entry = [](const std::string& e, bool constant_first) {
    const size_t open = e.find('['), plus = e.find(" + ");
    std::string name = e.substr(0, open);
    if (constant_first && plus != std::string::npos && plus < open && plus > 0 &&
        index_arithmetic(name.substr(0, plus), {}, ""))
      name = name.substr(plus + 3);
    return !e.empty() && open != std::string::npos && e.back() == ']' && !name.empty() &&
           !std::isdigit(static_cast<unsigned char>(name[0])) &&
           index_arithmetic(name, {}, "_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") &&
           index_arithmetic(e.substr(open + 1, e.size() - open - 2), {"bx"}, " *+()-");
  };
  open("if (threadIdx.x == 0)", kFlag, true);
  line("const long long " + target + " = " + std::string(kFlagEpoch) + " * " +
           std::to_string(w.per_run) + "LL;",
       kFlag, w.per_run >= 0);
  line("const long long " + lo + " = " + first + ";", kFlag, entry(first, true));
  open(
      "for (long long " + t + " = " + lo + "; " + t + " < " + lo + " + " + count + "; ++" + t + ")",
      kFlag, entry(count, false));
  line("while (souffle_ld_acquire(&" + flags + "[" + t + "]) < " + target + ") {}", kFlag, true);
  close("}", LineRole::Brace);
  line("__threadfence();", kFlag, true);
  close("}", LineRole::Brace);
  line("__syncthreads();", kFlag, true);
}

std::string CodeGenCuda::atomic_add_stmt(DType t, const std::string& address,
                                         const std::string& value) {
  for (DType n : kNativeAtomic)
    if (n == t) {
      type_name(t);  // records the header a narrow type needs
      return "atomicAdd(" + address + ", " + value + ");";
    }
  if (t == DType::Int64)  // two's complement: the unsigned sum has the same bits
    return "atomicAdd(reinterpret_cast<unsigned long long*>(" + address +
           "), (unsigned long long)(" + value + "));";
  throw InternalError(std::string("codegen: CUDA has no atomicAdd for ") + dtype_name(t));
}

std::string CodeGenCuda::shuffle_expr(loop::ShuffleKind kind, DType t, const std::string& value,
                                      const std::string& arg) {
  type_name(t);  // records the header a narrow type needs (it declares the shuffle overloads)
  const char* fn = kind == loop::ShuffleKind::Xor    ? "__shfl_xor_sync"
                   : kind == loop::ShuffleKind::Down ? "__shfl_down_sync"
                                                     : "__shfl_sync";
  // Lane numbers are int; the emitter's indices are long long, so a non-literal needs a cast.
  const bool literal =
      !arg.empty() && arg.find_first_not_of("0123456789") == std::string::npos && arg.size() < 3;
  return std::string(fn) + "(0xffffffffu, " + value + ", " +
         (literal ? arg : "(int)(" + arg + ")") + ")";
}

namespace {

/// The wmma element type of a fragment.
std::string wmma_element(loop::MmaType t) {
  switch (t) {
    case loop::MmaType::F16:
      return "__half";
    case loop::MmaType::BF16:
      return "__nv_bfloat16";
    case loop::MmaType::TF32:
      return "wmma::precision::tf32";
    case loop::MmaType::F32:
      break;
  }
  return "float";
}

}  // namespace

void CodeGenCuda::emit_fragment_alloc(const loop::FragmentAlloc& a, const std::string& name) {
  m_features.insert("wmma");
  if (a.type == loop::MmaType::F16) m_features.insert("fp16");
  if (a.type == loop::MmaType::BF16) m_features.insert("bf16");
  std::string role = std::string("wmma::") + loop::fragment_role_name(a.role);
  std::string t = "wmma::fragment<" + role + ", " + std::to_string(a.m) + ", " +
                  std::to_string(a.n) + ", " + std::to_string(a.k) + ", " + wmma_element(a.type);
  if (a.role != loop::FragmentRole::Accumulator) t += ", wmma::row_major";
  line(t + "> " + name + "[" + std::to_string(a.buffer->shape[0]) + "];");
}

void CodeGenCuda::emit_fragment_op(const loop::Stmt& s) {
  auto frag = [&](const te::Tensor& t, const te::Expr& i) {
    return buffer_name(t.get()) + "[" + expr(i) + "]";
  };
  if (const loop::FragmentFill* f = s.as<loop::FragmentFill>()) {
    line("wmma::fill_fragment(" + frag(f->fragment, f->index) + ", " + expr(f->value) + ");");
  } else if (const loop::FragmentLoad* l = s.as<loop::FragmentLoad>()) {
    const std::string f = frag(l->fragment, l->index);
    line("wmma::load_matrix_sync(" + f + ", " + element_address(l->source.get(), l->origin) + ", " +
         std::to_string(l->source->shape.back()) + ");");
    // tf32 fragments load f32 values; the tensor cores want them rounded to tf32 first.
    if (l->fragment->dtype == DType::Float32) {
      line("#pragma unroll");
      line("for (int t = 0; t < " + f + ".num_elements; ++t) " + f +
           ".x[t] = wmma::__float_to_tf32(" + f + ".x[t]);");
    }
  } else if (const loop::FragmentMma* m = s.as<loop::FragmentMma>()) {
    line("wmma::mma_sync(" + frag(m->d, m->di) + ", " + frag(m->a, m->ai) + ", " +
         frag(m->b, m->bi) + ", " + frag(m->c, m->ci) + ");");
  } else if (const loop::FragmentStore* st = s.as<loop::FragmentStore>()) {
    line("wmma::store_matrix_sync(" + element_address(st->dest.get(), st->origin) + ", " +
         frag(st->fragment, st->index) + ", " + std::to_string(st->dest->shape.back()) +
         ", wmma::mem_row_major);");
  } else if (const loop::AsyncCopy* c = s.as<loop::AsyncCopy>()) {
    m_features.insert("mma_sync");
    line(ptx_async_copy(element_address(c->dst.get(), c->dst_index),
                        element_address(c->src.get(), c->src_index), c->bytes,
                        c->pred.defined() ? expr(c->pred) : ""));
  } else if (s.as<loop::AsyncCommit>()) {
    m_features.insert("mma_sync");
    line(ptx_async_commit());
  } else if (const loop::AsyncWait* w = s.as<loop::AsyncWait>()) {
    m_features.insert("mma_sync");
    line(ptx_async_wait(w->pending));
  } else if (const loop::MatrixLoad* ml = s.as<loop::MatrixLoad>()) {
    m_features.insert("mma_sync");
    line(ptx_matrix_load(element_address(ml->dst.get(), {ml->dst_offset}), ml->count, ml->trans,
                         element_address(ml->src.get(), ml->src_index)));
  } else if (const loop::MmaSync* m = s.as<loop::MmaSync>()) {
    m_features.insert("mma_sync");
    if (m->type == loop::MmaType::F16) m_features.insert("fp16");
    if (m->type == loop::MmaType::BF16) m_features.insert("bf16");
    auto at = [&](const te::Tensor& t, const te::Expr& o) { return element_address(t.get(), {o}); };
    line(ptx_mma_sync(m->type, at(m->d, m->d_offset), at(m->a, m->a_offset), at(m->b, m->b_offset),
                      at(m->c, m->c_offset)));
  } else if (const loop::WgmmaMma* m = s.as<loop::WgmmaMma>()) {
    m_features.insert("wgmma");
    m_features.insert(m->type == loop::MmaType::BF16 ? "bf16" : "fp16");
    m_wgmma_shapes.insert({m->type, m->n});
    const std::string d0 = element_address(m->d.get(), {te::int_imm(0)});
    m_wgmma_acc[d0] = m->d->shape[0];
    line(ptx_wgmma_mma(*m, element_address(m->d.get(), {m->d_offset}),
                       element_address(m->a.get(), m->a_index),
                       element_address(m->b.get(), m->b_index)));
  } else if (s.as<loop::WgmmaFence>() || s.as<loop::WgmmaWait>()) {
    m_features.insert("wgmma");
    if (const loop::WgmmaWait* w = s.as<loop::WgmmaWait>()) line(ptx_wgmma_wait(w->pending));
    for (const auto& [d, count] : m_wgmma_acc) line(ptx_wgmma_register_fence(d, count));
    if (s.as<loop::WgmmaFence>()) line(ptx_wgmma_fence());
  } else if (s.as<loop::WgmmaCommit>()) {
    m_features.insert("wgmma");
    line(ptx_wgmma_commit());
  } else {
    CodeGenC::emit_fragment_op(s);
  }
}

bool CodeGenCuda::emit_vectorized(const loop::For& f) {
  loop::VectorCopy c;
  if (!loop::match_vector_copy(f, c)) return false;
  // One 16-byte access per side; every tensor, shared slot and register array starts 16-byte
  // aligned and match_vector_copy proved the first lane's element a multiple of the lanes.
  const std::string vt = c.dst->dtype == DType::Float32   ? "float4"
                         : c.dst->dtype == DType::Float64 ? "double2"
                                                          : "uint4";
  line("*reinterpret_cast<" + vt + "*>(" + element_address(c.dst.get(), c.dst_first) +
       ") = *reinterpret_cast<const " + vt + "*>(" + element_address(c.src.get(), c.src_first) +
       ");");
  return true;
}

void CodeGenCuda::emit_local_alloc(const loop::Allocate& a, const std::string& name) {
  int64_t n = 1;
  for (int64_t d : a.buffer->shape) n *= d;
  // Aligned only where a 16-byte access touches it, so other register arrays read as before.
  bool wide = false, acc = false;
  loop::for_each_stmt(a.body, [&](const loop::Stmt& s) {
    loop::VectorCopy c;
    if (const loop::For* f = s.as<loop::For>())
      wide |= loop::match_vector_copy(*f, c) && (c.dst == a.buffer || c.src == a.buffer);
    // mma.sync and ldmatrix registers are passed to inline PTX as 32-bit words.
    if (const loop::MatrixLoad* m = s.as<loop::MatrixLoad>()) wide |= m->dst == a.buffer;
    if (const loop::MmaSync* m = s.as<loop::MmaSync>())
      wide |= m->a == a.buffer || m->b == a.buffer || m->c == a.buffer || m->d == a.buffer;
    if (const loop::WgmmaMma* m = s.as<loop::WgmmaMma>()) acc |= m->d == a.buffer;
  });
  line(std::string(wide ? "__align__(16) " : "") + type_name(a.buffer->dtype) + " " + name + "[" +
       std::to_string(n) + "];");
  // A wgmma accumulator: the register fences at each wgmma fence and wait name it from here on,
  // and no longer those of earlier scopes (an earlier stage's accumulators are out of scope).
  if (acc) {
    m_wgmma_acc.clear();
    m_wgmma_acc[element_address(a.buffer.get(), {te::int_imm(0)})] = n;
  }
}

void CodeGenCuda::emit_kernel_prologue(const loop::Kernel& k) {
  bool grid_sync = false, arena = false;
  visit_inline(
      k.body,
      [&](const loop::Stmt& s) {
        grid_sync |= s.as<loop::GridBarrier>() != nullptr;
        if (const loop::Allocate* a = s.as<loop::Allocate>())
          arena |= a->scope == loop::MemScope::Shared;
      },
      [](const te::Expr&) {});
  if (grid_sync) {
    m_features.insert("grid_sync");
    line("cg::grid_group grid = cg::this_grid();");
  }
  // wmma tiles must start on 32-byte boundaries; the arena places them from its base. A stage
  // function declares the arena as its kernel does.
  auto fn = m_stage_functions.find(k.name);
  const bool fragments = fn != m_stage_functions.end() ? fn->second.second : has_fragments(k.body);
  if (!k.shared.empty() && arena)
    line(std::string("extern __shared__ __align__(") + (fragments ? "128" : "16") +
         ") unsigned char souffle_smem[];");
}

std::string CodeGenCuda::function_comment(const loop::Kernel& k) {
  auto fn = m_stage_functions.find(k.name);
  if (fn == m_stage_functions.end()) return CodeGenC::function_comment(k);
  return "// `" + k.name + "`: a stage of kernel `" + fn->second.first +
         "`, called by each of its threads (compiled and register-allocated on its own)";
}

const loop::StageInfo* CodeGenCuda::stage_info(int index) {
  if (!m_stage_parent) return CodeGenC::stage_info(index);
  if (index < 0 || static_cast<size_t>(index) >= m_stage_parent->stages.size()) return nullptr;
  return &m_stage_parent->stages[static_cast<size_t>(index)];
}

bool CodeGenCuda::emit_stage_elsewhere(const loop::Stage& st) {
  auto it = m_outlined.find(&st);
  if (it == m_outlined.end()) return false;
  const StageCall& o = it->second;
  std::string note = "// runs stage " + std::to_string(st.index);
  if (st.index >= 0 && static_cast<size_t>(st.index) < kernel()->stages.size()) {
    std::string name = kernel()->stages[static_cast<size_t>(st.index)].name;
    for (char& c : name)
      if (c == '\n' || c == '\r') c = ' ';
    note += " `" + name + "`";
  }
  std::vector<std::string> args;
  size_t total = o.function.size() + note.size() + 4;
  bool labelled = false;  // a packed parameter: its tensor's name goes on its own line's comment
  for (size_t i = 0; i < o.args.size(); ++i) {
    args.push_back(buffer_name(o.args[i].get()));
    if (i < o.offsets.size() && o.offsets[i] != 0)
      args.back() += " + " + std::to_string(o.offsets[i]);
    total += args.back().size() + 2;
    labelled |= !buffer_label(o.args[i].get()).empty();
  }
  if (total <= 100 && !labelled) {
    std::string call = o.function + "(";
    for (size_t i = 0; i < args.size(); ++i) call += (i ? ", " : "") + args[i];
    line(call + ");  " + note, LineRole::StageCall);
    return true;
  }
  line(o.function + "(  " + note, LineRole::StageCall);
  // A packed parameter's line names its tensor.
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string label = buffer_label(o.args[i].get());
    line("    " + args[i] + (i + 1 < args.size() ? "," : ");") +
             (label.empty() ? "" : "  // " + label),
         LineRole::StageCallArg);
  }
  if (args.empty()) line("    );", LineRole::StageCallArg, false);
  return true;
}

namespace {

/// The statements of a kernel body outside some stages, with their expressions.
class InlineVisitor : public loop::StmtVisitor {
 public:
  InlineVisitor(const std::function<bool(const loop::Stage&)>& skip,
                const std::function<void(const loop::Stmt&)>& on_stmt,
                const std::function<void(const te::Expr&)>& on_expr)
      : m_skip(skip), m_on_stmt(on_stmt), m_on_expr(on_expr) {}
  void visit(const loop::Stmt& s) override {
    if (!s.defined()) return;
    if (const loop::Stage* st = s.as<loop::Stage>(); st && m_skip(*st)) return;
    m_on_stmt(s);
    loop::StmtVisitor::visit(s);
  }
  void visit_expr(const te::Expr& e) override { m_on_expr(e); }

 private:
  const std::function<bool(const loop::Stage&)>& m_skip;
  const std::function<void(const loop::Stmt&)>& m_on_stmt;
  const std::function<void(const te::Expr&)>& m_on_expr;
};

}  // namespace

void CodeGenCuda::visit_inline(const loop::Stmt& s,
                               const std::function<void(const loop::Stmt&)>& on_stmt,
                               const std::function<void(const te::Expr&)>& on_expr) const {
  const std::function<bool(const loop::Stage&)> skip = [&](const loop::Stage& st) {
    return m_outlined.count(&st) > 0;
  };
  InlineVisitor v(skip, on_stmt, on_expr);
  v.visit(s);
}

void CodeGenCuda::add_cuda_kernel(const loop::Kernel& k, const std::string& name,
                                  const std::set<std::string>& reserved) {
  m_outlined.clear();
  m_line_kernel = m_cuda_kernels++;
  OutlinePlan plan = plan_outlining(k, name, m_options.outlining, [&](const std::string& f) {
    return reserved.count(f) > 0 || m_stage_functions.count(f) > 0;
  });
  for (const OutlinedFunction& f : plan.functions)
    m_stage_functions[f.kernel.name] = {name, f.fragments};
  for (const OutlinedFunction& f : plan.functions) {
    m_stage_parent = &k;
    m_function_part = LinePart::StageFunction;
    add_kernel(f.kernel);
    m_function_part = LinePart::Kernel;
    m_stage_parent = nullptr;
  }
  m_outlined = std::move(plan.calls);
  add_kernel(k);
  m_outlined.clear();
  m_wgmma_acc.clear();
  m_line_kernel = -1;
}

std::string CodeGenCuda::includes() {
  std::string s;
  // The kernels use cooperative groups for the grid barrier alone. Without libcu++ (which the
  // header otherwise includes for its type traits and atomics) NVRTC's front end parses about
  // 1.2 s less per program; the grid barrier's code is the same (docs/compile_dedup.md).
  if (m_features.count("grid_sync"))
    s +=
        "#ifndef _CG_LIMIT_INCLUDED_DEPENDENCIES\n#define _CG_LIMIT_INCLUDED_DEPENDENCIES\n#endif\n"
        "#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n";
  if (m_features.count("fp16")) s += "#include <cuda_fp16.h>\n";
  if (m_features.count("bf16")) s += "#include <cuda_bf16.h>\n";
  if (m_features.count("wmma")) s += "#include <mma.h>\nnamespace wmma = nvcuda::wmma;\n";
  if (m_features.count("mma_sync")) s += mma_ptx_helpers();
  if (m_features.count("wgmma")) s += wgmma_ptx_helpers(m_wgmma_shapes);
  return s;
}

std::string emit_cuda(const loop::Kernel& k, CudaEmitOptions options) {
  loop::KernelSet ks;
  ks.kernels = {k};
  return emit_cuda(ks, options);
}

EmittedUnit emit_cuda_unit(const loop::KernelSet& ks, CudaEmitOptions options) {
  CodeGenCuda g(options);
  const std::vector<std::string> names = cuda_kernel_names(ks);
  const std::set<std::string> reserved(names.begin(), names.end());
  for (size_t i = 0; i < ks.kernels.size(); ++i)
    g.add_cuda_kernel(ks.kernels[i], names[i], reserved);
  EmittedUnit unit = g.emitted_unit();
  if (options.roll) roll_repeated_statements(unit);
  return unit;
}

std::string emit_cuda(const loop::KernelSet& ks, CudaEmitOptions options) {
  return emit_cuda_unit(ks, options).text();
}

std::vector<std::string> cuda_kernel_names(const loop::KernelSet& ks) {
  std::set<std::string> taken;
  std::vector<std::string> out;
  for (const loop::Kernel& k : ks.kernels) out.push_back(unique_function_name(k.name, taken));
  return out;
}

std::vector<KernelParam> kernel_params(const loop::Kernel& k) {
  return CodeGenCuda().params(k);
}

bool takes_packed_params(const loop::Kernel& k) {
  return takes_packed_params(kernel_params(k).size());
}

bool CodeGenCuda::packs_params(const loop::Kernel& k, size_t count) {
  return !m_stage_functions.count(k.name) && takes_packed_params(count);
}

}  // namespace souffle::codegen
