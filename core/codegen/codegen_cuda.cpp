#include "core/codegen/codegen_cuda.h"

#include <cmath>

#include "core/loop/mutator.h"
#include "core/loop/vectorize.h"
#include "core/support/error.h"

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

bool has_grid_barrier(const loop::Stmt& s) {
  bool found = false;
  loop::for_each_stmt(s,
                      [&](const loop::Stmt& x) { found |= x.as<loop::GridBarrier>() != nullptr; });
  return found;
}

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

std::string CodeGenCuda::function_prefix(const loop::Kernel&) {
  return "extern \"C\" __global__ ";
}
std::string CodeGenCuda::function_attributes(const loop::Kernel& k) {
  return "__launch_bounds__(" + std::to_string(k.launch.block_x) + ") ";
}
std::string CodeGenCuda::helper_prefix() {
  return "static __device__ __forceinline__ ";
}
std::string CodeGenCuda::restrict_qualifier() {
  return "__restrict__";
}

void CodeGenCuda::emit_thread_binding(const loop::For& f) {
  if (!uses_var(f.body, f.var)) {
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
         std::to_string(slot.offset) + ");  // " + std::to_string(slot.bytes) + " B of the arena");
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

bool has_fragments(const loop::Stmt& s) {
  bool found = false;
  loop::for_each_stmt(
      s, [&](const loop::Stmt& x) { found |= x.as<loop::FragmentAlloc>() != nullptr; });
  return found;
}

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
  bool wide = false;
  loop::for_each_stmt(a.body, [&](const loop::Stmt& s) {
    loop::VectorCopy c;
    if (const loop::For* f = s.as<loop::For>())
      wide |= loop::match_vector_copy(*f, c) && (c.dst == a.buffer || c.src == a.buffer);
  });
  line(std::string(wide ? "__align__(16) " : "") + type_name(a.buffer->dtype) + " " + name + "[" +
       std::to_string(n) + "];");
}

void CodeGenCuda::emit_kernel_prologue(const loop::Kernel& k) {
  if (has_grid_barrier(k.body)) {
    m_features.insert("grid_sync");
    line("cg::grid_group grid = cg::this_grid();");
  }
  // wmma tiles must start on 32-byte boundaries; the arena places them from its base.
  if (!k.shared.empty())
    line(std::string("extern __shared__ __align__(") + (has_fragments(k.body) ? "128" : "16") +
         ") unsigned char souffle_smem[];");
}

std::string CodeGenCuda::includes() {
  std::string s;
  if (m_features.count("grid_sync"))
    s += "#include <cooperative_groups.h>\nnamespace cg = cooperative_groups;\n";
  if (m_features.count("fp16")) s += "#include <cuda_fp16.h>\n";
  if (m_features.count("bf16")) s += "#include <cuda_bf16.h>\n";
  if (m_features.count("wmma")) s += "#include <mma.h>\nnamespace wmma = nvcuda::wmma;\n";
  return s;
}

std::string emit_cuda(const loop::Kernel& k) {
  CodeGenCuda g;
  g.add_kernel(k);
  return g.translation_unit();
}

std::string emit_cuda(const loop::KernelSet& ks) {
  CodeGenCuda g;
  for (const loop::Kernel& k : ks.kernels) g.add_kernel(k);
  return g.translation_unit();
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

}  // namespace souffle::codegen
