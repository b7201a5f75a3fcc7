#include "core/codegen/codegen_c.h"

#include <cmath>
#include <cstdio>
#include <limits>

#include "core/loop/mutator.h"
#include "core/loop/simplify.h"
#include "core/support/error.h"
#include "core/te/mutator.h"

namespace souffle::codegen {

using loop::ForKind;
using loop::MemScope;
using loop::Stmt;
using te::BinaryOp;
using te::CallFn;
using te::Expr;

namespace {

// Identifiers a tensor or loop variable must not take: C/C++ keywords, CUDA built-ins, the math
// functions and helpers the emitted code calls, and the names the emitter itself declares.
const std::unordered_set<std::string>& reserved_names() {
  static const std::unordered_set<std::string> names = {
      "alignas",      "alignof",  "and",      "asm",       "auto",     "bool",      "break",
      "case",         "catch",    "char",     "class",     "const",    "constexpr", "continue",
      "decltype",     "default",  "delete",   "do",        "double",   "else",      "enum",
      "explicit",     "export",   "extern",   "false",     "float",    "for",       "friend",
      "goto",         "if",       "inline",   "int",       "long",     "mutable",   "namespace",
      "new",          "noexcept", "not",      "nullptr",   "operator", "or",        "private",
      "protected",    "public",   "register", "restrict",  "return",   "short",     "signed",
      "sizeof",       "static",   "struct",   "switch",    "template", "this",      "throw",
      "true",         "try",      "typedef",  "typeid",    "typename", "union",     "unsigned",
      "using",        "virtual",  "void",     "volatile",  "while",    "xor",       "half",
      "threadIdx",    "blockIdx", "blockDim", "gridDim",   "warpSize", "cg",        "grid",
      "souffle_smem", "min",      "max",      "abs",       "exp",      "expf",      "log",
      "logf",         "sqrt",     "sqrtf",    "rsqrt",     "rsqrtf",   "erf",       "erff",
      "tanh",         "tanhf",    "fabs",     "fabsf",     "floor",    "floorf",    "ceil",
      "ceilf",        "rint",     "rintf",    "sin",       "sinf",     "cos",       "cosf",
      "tan",          "tanf",     "asin",     "asinf",     "acos",     "acosf",     "atan",
      "atanf",        "sinh",     "sinhf",    "cosh",      "coshf",    "asinh",     "asinhf",
      "acosh",        "acoshf",   "atanh",    "atanhf",    "pow",      "powf",      "fmod",
      "fmodf",        "isnan",    "isinf",    "atomicAdd", "NAN",      "INFINITY",  "main"};
  return names;
}

int64_t numel(const te::TensorNode* t) {
  int64_t n = 1;
  for (int64_t d : t->shape) n *= d;
  return n;
}

bool is_sub_int(DType t) {
  return t == DType::Int8 || t == DType::Int16 || t == DType::UInt8 || t == DType::UInt16;
}

// C precedence levels, higher binds tighter.
constexpr int kPrimary = 16, kUnary = 15, kMul = 13, kAdd = 12, kShift = 11, kRel = 9, kEq = 8,
              kBitAnd = 7, kBitXor = 6, kBitOr = 5, kLogAnd = 4, kLogOr = 3, kCond = 2;

struct InfixFact {
  BinaryOp op;
  const char* text;
  int prec;
};
// The operators that are infix in C, with their precedence.
constexpr InfixFact kInfix[] = {
    {BinaryOp::Add, "+", kAdd},       {BinaryOp::Sub, "-", kAdd},
    {BinaryOp::Mul, "*", kMul},       {BinaryOp::Div, "/", kMul},
    {BinaryOp::Mod, "%", kMul},       {BinaryOp::EQ, "==", kEq},
    {BinaryOp::NE, "!=", kEq},        {BinaryOp::LT, "<", kRel},
    {BinaryOp::LE, "<=", kRel},       {BinaryOp::GT, ">", kRel},
    {BinaryOp::GE, ">=", kRel},       {BinaryOp::And, "&&", kLogAnd},
    {BinaryOp::Or, "||", kLogOr},     {BinaryOp::Xor, "!=", kEq},
    {BinaryOp::BitAnd, "&", kBitAnd}, {BinaryOp::BitOr, "|", kBitOr},
    {BinaryOp::BitXor, "^", kBitXor}, {BinaryOp::Shl, "<<", kShift},
    {BinaryOp::Shr, ">>", kShift},
};
const InfixFact* infix_fact(BinaryOp op) {
  for (const InfixFact& f : kInfix)
    if (f.op == op) return &f;
  return nullptr;
}

struct MathFact {
  CallFn fn;
  const char* f32;  ///< libm name for float; "" when the emitter writes a helper
  const char* f64;
};
constexpr MathFact kMath[] = {
    {CallFn::Exp, "expf", "exp"},       {CallFn::Log, "logf", "log"},
    {CallFn::Sqrt, "sqrtf", "sqrt"},    {CallFn::Rsqrt, "", ""},
    {CallFn::Erf, "erff", "erf"},       {CallFn::Tanh, "tanhf", "tanh"},
    {CallFn::Sigmoid, "", ""},          {CallFn::Abs, "fabsf", "fabs"},
    {CallFn::Floor, "floorf", "floor"}, {CallFn::Ceil, "ceilf", "ceil"},
    {CallFn::Round, "rintf", "rint"},   {CallFn::Sign, "", ""},
    {CallFn::Sin, "sinf", "sin"},       {CallFn::Cos, "cosf", "cos"},
    {CallFn::Tan, "tanf", "tan"},       {CallFn::Asin, "asinf", "asin"},
    {CallFn::Acos, "acosf", "acos"},    {CallFn::Atan, "atanf", "atan"},
    {CallFn::Sinh, "sinhf", "sinh"},    {CallFn::Cosh, "coshf", "cosh"},
    {CallFn::Asinh, "asinhf", "asinh"}, {CallFn::Acosh, "acoshf", "acosh"},
    {CallFn::Atanh, "atanhf", "atanh"}, {CallFn::IsNaN, "isnan", "isnan"},
    {CallFn::IsInf, "isinf", "isinf"},  {CallFn::IsPosInf, "", ""},
    {CallFn::IsNegInf, "", ""},         {CallFn::Pow, "powf", "pow"},
    {CallFn::Fmod, "fmodf", "fmod"},
};

std::string paren(const std::string& text, int prec, int min_prec) {
  return prec < min_prec ? "(" + text + ")" : text;
}

std::string int_text(DType t, int64_t v, bool force_suffix) {
  switch (t) {
    case DType::Bool:
      return v ? "true" : "false";
    case DType::UInt64:
      return std::to_string(static_cast<uint64_t>(v)) + "ull";
    case DType::UInt32:
      return std::to_string(static_cast<uint32_t>(v)) + "u";
    case DType::Int32:
      if (v == std::numeric_limits<int32_t>::min()) return "(-2147483647 - 1)";
      return std::to_string(v);
    case DType::Int64:
      if (v == std::numeric_limits<int64_t>::min()) return "(-9223372036854775807ll - 1)";
      if (!force_suffix && v >= std::numeric_limits<int32_t>::min() &&
          v <= std::numeric_limits<int32_t>::max())
        return std::to_string(v);
      return std::to_string(v) + "ll";
    default:
      return std::to_string(v);
  }
}

}  // namespace

const char* param_role_name(KernelParam::Role r) {
  switch (r) {
    case KernelParam::Role::Input:
      return "input";
    case KernelParam::Role::Output:
      return "output";
    case KernelParam::Role::Scratch:
      return "scratch";
    case KernelParam::Role::Flags:
      return "flags";
  }
  return "?";
}

std::string c_identifier(const std::string& name) {
  std::string s;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    s += ok ? c : '_';
  }
  // Identifiers with a double underscore, or an underscore first, are the implementation's.
  while (s.find("__") != std::string::npos) s.replace(s.find("__"), 2, "_");
  while (!s.empty() && s[0] == '_') s.erase(0, 1);
  while (!s.empty() && s.back() == '_') s.pop_back();
  if (s.empty() || (s[0] >= '0' && s[0] <= '9')) s = "t_" + s;
  return s;
}

std::string unique_function_name(const std::string& name, std::set<std::string>& taken) {
  std::string base = c_identifier(name), out = base;
  for (int i = 1; taken.count(out) || reserved_names().count(out); ++i)
    out = base + "_" + std::to_string(i);
  taken.insert(out);
  return out;
}

const loop::StageInfo* CodeGenC::stage_info(int index) {
  if (!m_kernel || index < 0 || static_cast<size_t>(index) >= m_kernel->stages.size())
    return nullptr;
  return &m_kernel->stages[static_cast<size_t>(index)];
}

// ---- parameters ----

std::vector<KernelParam> CodeGenC::params(const loop::Kernel& k) const {
  std::vector<KernelParam> out;
  std::unordered_set<const te::TensorNode*> seen;
  std::unordered_set<std::string> used;
  auto add = [&](const te::Tensor& t, KernelParam::Role role) {
    if (!seen.insert(t.get()).second) return;
    std::string base = c_identifier(t->name), name = base;
    for (int i = 1; used.count(name) || reserved_names().count(name); ++i)
      name = base + "_" + std::to_string(i);
    used.insert(name);
    out.push_back({name, t, role});
  };
  std::unordered_set<const te::TensorNode*> written;
  for (const te::Tensor& t : k.outputs) written.insert(t.get());
  for (const te::Tensor& t : k.inputs)
    if (!written.count(t.get())) add(t, KernelParam::Role::Input);
  for (const te::Tensor& t : k.outputs) add(t, KernelParam::Role::Output);
  for (const te::Tensor& t : k.flags) add(t, KernelParam::Role::Flags);
  loop::for_each_stmt(k.body, [&](const Stmt& s) {
    if (const loop::Allocate* a = s.as<loop::Allocate>())
      if (a->scope == MemScope::Global) add(a->buffer, KernelParam::Role::Scratch);
  });
  return out;
}

// ---- names ----

std::string CodeGenC::unique_name(const std::string& base_in) {
  std::string base = c_identifier(base_in), name = base;
  // Suffixes continue from the last one given for this base: a kernel of thousands of stages
  // names its loop variables "it", "gi", ... thousands of times.
  int& next = m_next_suffix[base];
  if (next > 0) name = base + "_" + std::to_string(next);
  for (int i = std::max(next, 0) + 1; m_used_names.count(name) || reserved_names().count(name);
       ++i) {
    name = base + "_" + std::to_string(i);
    next = i;
  }
  m_used_names.insert(name);
  return name;
}

std::string CodeGenC::var_name(const Expr& var) {
  auto it = m_vars.find(var.get());
  if (it != m_vars.end()) return it->second;
  const te::Var* v = var.as<te::Var>();
  SOUFFLE_CHECK(v, "codegen: a loop or let variable is not a Var");
  std::string name = unique_name(v->name);
  m_vars[var.get()] = name;
  return name;
}

std::string CodeGenC::buffer_name(const te::TensorNode* t) {
  auto it = m_buffers.find(t);
  SOUFFLE_CHECK(it != m_buffers.end(), "codegen: kernel " + (m_kernel ? m_kernel->name : "") +
                                           " accesses " + t->name +
                                           ", which is neither a parameter nor allocated");
  return it->second;
}

void CodeGenC::use_helper(const std::string& name, const std::string& definition) {
  if (m_helper_names.insert(name).second) m_helpers.push_back({name, definition});
}

std::string CodeGenC::comment_text(const std::string& s) const {
  std::string out;
  for (char c : s) out += (c == '\n' || c == '\r' || c == '\t') ? ' ' : c;
  // A backslash ending a // comment would splice the next line into it.
  while (!out.empty() && (out.back() == '\\' || out.back() == ' ')) out.pop_back();
  return out;
}

// ---- lines ----

bool index_arithmetic(const std::string& s, const std::vector<std::string>& words,
                      const std::string& chars) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size();) {
    if (s[i] >= '0' && s[i] <= '9') {
      ++i;
      continue;
    }
    if (chars.find(s[i]) != std::string::npos) {
      ++i;
      continue;
    }
    bool word = false;
    for (const std::string& w : words)
      if (s.compare(i, w.size(), w) == 0) {
        i += w.size();
        word = true;
        break;
      }
    if (!word) return false;
  }
  return true;
}

void CodeGenC::line(const std::string& text, LineRole role) {
  // Lines that hold nothing a repetition would change in a way the roller cannot see.
  const bool repeatable = role == LineRole::Brace || role == LineRole::Comment ||
                          role == LineRole::Barrier || role == LineRole::StageCall ||
                          role == LineRole::StageCallArg || role == LineRole::ArenaPointer ||
                          text.empty();
  line(text, role, repeatable);
}

void CodeGenC::line(const std::string& text, LineRole role, bool repeatable) {
  const std::string indent(2 * static_cast<size_t>(m_depth), ' ');
  // The body's top level: a line starts a statement unless it continues one (an argument line
  // of a call, a closing brace, an else) or comments before it started it.
  if (m_line_part != LinePart::Preamble && m_depth == 1 && !m_continues &&
      role != LineRole::StageCallArg) {
    if (!m_comments_ahead) ++m_statement;
    bool comments = true;
    for (size_t from = 0; comments && from <= text.size();) {
      const size_t to = std::min(text.find('\n', from), text.size());
      const size_t at = text.find_first_not_of(' ', from);
      comments = at >= to || text.compare(at, 2, "//") == 0;
      from = to + 1;
    }
    m_comments_ahead = comments;
  }
  for (size_t from = 0;;) {
    const size_t to = text.find('\n', from);
    EmittedLine l;
    l.text = indent + text.substr(from, to == std::string::npos ? std::string::npos : to - from);
    l.kernel = m_line_kernel;
    l.part = m_line_part;
    l.function = m_line_function;
    l.stage = m_line_stage;
    l.boundary = m_line_boundary;
    l.role = role;
    l.repeatable = repeatable;
    l.statement = m_line_part != LinePart::Preamble && m_depth >= 1 ? m_statement : -1;
    m_line_boundary = -1;
    m_lines.push_back(std::move(l));
    if (to == std::string::npos) break;
    from = to + 1;
  }
}
void CodeGenC::open(const std::string& head, LineRole role) {
  line(head.empty() ? "{" : head + " {", head.empty() ? LineRole::Brace : role);
  ++m_depth;
}
void CodeGenC::open(const std::string& head, LineRole role, bool repeatable) {
  line(head.empty() ? "{" : head + " {", role, repeatable);
  ++m_depth;
}
void CodeGenC::close(const std::string& tail, LineRole role) {
  --m_depth;
  m_continues = true;
  line(tail, tail == "}" && role == LineRole::Code ? LineRole::Brace : role);
  m_continues = false;
}

// ---- language facts of plain C ----

std::string CodeGenC::type_name(DType t) {
  switch (t) {
    case DType::Float32:
      return "float";
    case DType::Float64:
      return "double";
    case DType::Int8:
      return "signed char";
    case DType::Int16:
      return "short";
    case DType::Int32:
      return "int";
    case DType::Int64:
      return "long long";
    case DType::UInt8:
      return "unsigned char";
    case DType::UInt16:
      return "unsigned short";
    case DType::UInt32:
      return "unsigned int";
    case DType::UInt64:
      return "unsigned long long";
    case DType::Bool:
      return "bool";
    case DType::Float16:
    case DType::BFloat16:
      break;
  }
  throw InternalError(std::string("codegen: C has no type for ") + dtype_name(t));
}

std::string CodeGenC::float_literal(DType t, double v) {
  const bool f64 = t == DType::Float64;
  if (std::isnan(v)) return f64 ? "(double)NAN" : "NAN";
  if (std::isinf(v)) return std::string(v < 0 ? "-" : "") + (f64 ? "(double)INFINITY" : "INFINITY");
  char buf[40];
  std::snprintf(buf, sizeof buf, f64 ? "%.17g" : "%.9g", v);
  std::string s = buf;
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return f64 ? s : s + "f";
}

std::string CodeGenC::math_name(CallFn fn, DType t) {
  for (const MathFact& m : kMath)
    if (m.fn == fn) return t == DType::Float64 ? m.f64 : m.f32;
  return "";
}

std::string CodeGenC::function_prefix(const loop::Kernel&) {
  return "";
}

void CodeGenC::emit_thread_binding(const loop::For& f) {
  const std::string v = var_name(f.var);
  mark_nonnegative(f.var);
  open("for (long long " + v + " = 0; " + v + " < " + expr(f.extent) + "; ++" + v + ")");
  emit_stmt(f.body);
  close();
}

void CodeGenC::emit_shared_alloc(const loop::Allocate& a, const std::string& name) {
  line(type_name(a.buffer->dtype) + " " + name + "[" + std::to_string(numel(a.buffer.get())) +
       "];  // shared");
}

std::string CodeGenC::block_barrier_stmt() {
  throw InternalError("codegen: C has no block barrier");
}
std::string CodeGenC::grid_barrier_stmt() {
  throw InternalError("codegen: C has no grid barrier");
}
void CodeGenC::emit_flag_release(const loop::FlagRelease&) {
  throw InternalError("codegen: C has no flags (blocks do not run concurrently)");
}
void CodeGenC::emit_timeline_record(const loop::TimelineRecord& r) {
  line(comment_text(std::string("// timeline ") + loop::timeline_event_name(r.event) +
                    " of stage " + std::to_string(r.stage) + " (not recorded in C)"),
       LineRole::Comment);
}

void CodeGenC::emit_flag_wait(const loop::FlagWait&) {
  throw InternalError("codegen: C has no flags (blocks do not run concurrently)");
}
std::string CodeGenC::atomic_add_stmt(DType, const std::string& address, const std::string& value) {
  return "*" + address + " += " + value + ";";
}
void CodeGenC::emit_local_alloc(const loop::Allocate& a, const std::string& name) {
  line(type_name(a.buffer->dtype) + " " + name + "[" + std::to_string(numel(a.buffer.get())) +
       "];");
}
std::string CodeGenC::shuffle_expr(loop::ShuffleKind, DType, const std::string&,
                                   const std::string&) {
  throw InternalError("codegen: a warp shuffle needs a SIMT target; plain C runs threads serially");
}
void CodeGenC::emit_fragment_alloc(const loop::FragmentAlloc& a, const std::string&) {
  throw InternalError("codegen: fragment " + a.buffer->name +
                      " needs a target with warp-level matrix operations (tensor cores); plain "
                      "C runs threads one after another");
}
void CodeGenC::emit_fragment_op(const loop::Stmt&) {
  throw InternalError(
      "codegen: warp-level matrix operations (tensor cores) need a SIMT target such as CUDA");
}
std::string CodeGenC::includes() {
  return "#include <math.h>\n#include <stdbool.h>\n";
}

bool CodeGenC::uses_var(const Stmt& s, const Expr& var) {
  bool found = false;
  loop::for_each_expr(s, [&](const Expr& e) {
    if (found) return;
    te::for_each_node(e, [&](const Expr& n) { found |= n.get() == var.get(); });
  });
  return found;
}

// ---- expressions ----

CodeGenC::Code CodeGenC::emit_expr(const Expr& e) {
  SOUFFLE_CHECK(e.defined(), "codegen: undefined expression");
  const DType t = e.dtype();
  switch (e.kind()) {
    case te::ExprKind::IntImm: {
      const int64_t v = e.as<te::IntImm>()->value;
      std::string s = int_text(t, v, false);
      if (is_sub_int(t)) return {"(" + type_name(t) + ")" + s, kUnary};
      return {s, v < 0 && s[0] == '-' ? kUnary : kPrimary};
    }
    case te::ExprKind::FloatImm: {
      const double v = e.as<te::FloatImm>()->value;
      if (is_narrow_float(t)) return {narrow(t, float_literal(DType::Float32, v)), kPrimary};
      std::string s = float_literal(t, v);
      return {s, s[0] == '-' || s[0] == '(' ? kUnary : kPrimary};
    }
    case te::ExprKind::Var:
      return {var_name(e), kPrimary};
    case te::ExprKind::Unary: {
      const te::Unary* u = e.as<te::Unary>();
      Code a = emit_expr(u->a);
      if (u->op == te::UnaryOp::Not) {
        if (u->a.dtype() != DType::Bool) return {"(" + a.text + " == 0)", kPrimary};
        return {"!" + paren(a.text, a.prec, kUnary), kUnary};
      }
      std::string operand = paren(a.text, a.prec, kUnary);
      if (operand[0] == '-') operand = "(" + operand + ")";
      if (is_sub_int(t)) return {"(" + type_name(t) + ")(-" + operand + ")", kUnary};
      return {"-" + operand, kUnary};
    }
    case te::ExprKind::Binary:
      return emit_binary(*e.as<te::Binary>(), t);
    case te::ExprKind::Call:
      return emit_call(*e.as<te::Call>(), t);
    case te::ExprKind::Select: {
      const te::Select* s = e.as<te::Select>();
      Code c = emit_expr(s->cond), a = emit_expr(s->t), b = emit_expr(s->f);
      return {paren(c.text, c.prec, kLogOr) + " ? " + paren(a.text, a.prec, kLogOr) + " : " +
                  paren(b.text, b.prec, kLogOr),
              kCond};
    }
    case te::ExprKind::Cast:
      return emit_cast(*e.as<te::Cast>());
    case te::ExprKind::Read: {
      const te::Read* r = e.as<te::Read>();
      return {buffer_name(r->tensor.get()) + "[" + flat_index(r->tensor.get(), r->indices) + "]",
              kPrimary};
    }
  }
  throw InternalError("codegen: unknown expression kind");
}

std::string CodeGenC::element_address(const te::TensorNode* t, const std::vector<Expr>& idx) {
  return "&" + buffer_name(t) + "[" + flat_index(t, idx) + "]";
}

std::string CodeGenC::flat_index(const te::TensorNode* t, const std::vector<Expr>& idx) {
  SOUFFLE_CHECK(idx.size() == t->shape.size(),
                "codegen: access to " + t->name + " has " + std::to_string(idx.size()) +
                    " indices for rank " + std::to_string(t->shape.size()));
  if (idx.empty()) return "0";
  Expr flat = idx[0];
  for (size_t d = 1; d < idx.size(); ++d) flat = flat * te::int_imm(t->shape[d]) + idx[d];
  return expr(loop::simplify(flat));
}

CodeGenC::Code CodeGenC::emit_binary(const te::Binary& b, DType t) {
  const DType ot = b.a.dtype();
  const bool narrow_f = is_narrow_float(ot), fl = is_float(ot);
  // Two integer literals would otherwise combine in 32-bit int before widening.
  auto arg = [&](const Expr& x, bool in_call) -> Code {
    if (const te::IntImm* i = x.as<te::IntImm>())
      if (ot == DType::Int64 && (in_call || (b.a.as<te::IntImm>() && b.b.as<te::IntImm>())))
        return {int_text(ot, i->value, true), i->value < 0 ? kUnary : kPrimary};
    return emit_expr(x);
  };
  auto call2 = [&](const std::string& fn, bool via_float) -> Code {
    Code x = arg(b.a, true), y = arg(b.b, true);
    if (via_float)
      return {narrow(ot, fn + "(" + widen(ot, x.text) + ", " + widen(ot, y.text) + ")"), kPrimary};
    return {fn + "(" + x.text + ", " + y.text + ")", kPrimary};
  };
  const std::string tn = type_name(fl && !narrow_f ? ot : (fl ? DType::Float32 : ot));

  switch (b.op) {
    case BinaryOp::Min:
    case BinaryOp::Max: {
      const bool mx = b.op == BinaryOp::Max;
      const std::string name = mx ? "souffle_max" : "souffle_min";
      const std::string ct = is_sub_int(ot) ? "int" : tn;
      std::string body;
      if (fl)  // NaN wins, as in the reference interpreter
        body = "  if (a != a || b != b) return a + b;\n  return " +
               std::string(mx ? "a < b ? b : a" : "b < a ? b : a") + ";\n";
      else
        body = std::string("  return ") + (mx ? "a < b ? b : a" : "b < a ? b : a") + ";\n";
      use_helper(name + "_" + ct, helper_prefix() + ct + " " + name + "(" + ct + " a, " + ct +
                                      " b) {\n" + body + "}\n");
      Code c = call2(name, narrow_f);
      if (is_sub_int(ot)) return {"(" + type_name(ot) + ")" + c.text, kUnary};
      return c;
    }
    case BinaryOp::FloorDiv:
    case BinaryOp::FloorMod: {
      const bool div = b.op == BinaryOp::FloorDiv;
      if (!fl) {
        const te::IntImm* d = b.b.as<te::IntImm>();
        if (d && d->value > 0 && is_nonnegative(b.a)) {
          Code x = arg(b.a, false), y = arg(b.b, false);
          return {
              paren(x.text, x.prec, kMul) + (div ? " / " : " % ") + paren(y.text, y.prec, kMul + 1),
              kMul};
        }
        const std::string name = div ? "souffle_floordiv" : "souffle_floormod";
        use_helper(name, helper_prefix() + "long long " + name +
                             "(long long a, long long b) {\n"
                             "  if (b == 0) return 0;\n" +
                             (div ? "  long long q = a / b;\n"
                                    "  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;\n"
                                  : "  long long m = a % b;\n"
                                    "  return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m;\n") +
                             "}\n");
        Code x = arg(b.a, true), y = arg(b.b, true);
        std::string s = name + "(" + x.text + ", " + y.text + ")";
        if (ot != DType::Int64) return {"(" + type_name(ot) + ")" + s, kUnary};
        return {s, kPrimary};
      }
      if (div) {
        Code x = emit_expr(b.a), y = emit_expr(b.b);
        const std::string px = narrow_f ? widen(ot, x.text) : paren(x.text, x.prec, kMul);
        const std::string py = narrow_f ? widen(ot, y.text) : paren(y.text, y.prec, kMul + 1);
        return {narrow(ot, math_name(CallFn::Floor, narrow_f ? DType::Float32 : ot) + "(" + px +
                               " / " + py + ")"),
                kPrimary};
      }
      const std::string ct = narrow_f ? "float" : tn;
      const std::string fm = math_name(CallFn::Fmod, narrow_f ? DType::Float32 : ot);
      use_helper("souffle_floormod_" + ct,
                 helper_prefix() + ct + " souffle_floormod(" + ct + " a, " + ct + " b) {\n  " + ct +
                     " m = " + fm +
                     "(a, b);\n  return (m != 0 && ((m < 0) != (b < 0))) ? m + b : m;\n}\n");
      return call2("souffle_floormod", narrow_f);
    }
    case BinaryOp::Mod:
      if (fl) return call2(math_name(CallFn::Fmod, narrow_f ? DType::Float32 : ot), narrow_f);
      break;
    default:
      break;
  }
  const InfixFact* f = infix_fact(b.op);
  SOUFFLE_CHECK(f, std::string("codegen: no C form for ") + te::binary_name(b.op));
  int lmin = f->prec, rmin = f->prec + 1;
  if (f->prec == kLogAnd || f->prec == kLogOr) lmin = rmin = kBitOr;  // a || (b && c)
  if (f->prec == kEq || f->prec == kRel) lmin = rmin = kShift;        // no a < b < c
  if (f->prec == kBitAnd || f->prec == kBitOr || f->prec == kBitXor || f->prec == kShift)
    lmin = rmin = kUnary;  // bit operators read badly without parentheses
  Code x = arg(b.a, false), y = arg(b.b, false);
  std::string s = paren(x.text, x.prec, lmin) + " " + f->text + " " + paren(y.text, y.prec, rmin);
  if (b.op == BinaryOp::Xor && ot != DType::Bool)
    s = "(" + x.text + " != 0) != (" + y.text + " != 0)";
  if (is_sub_int(t) && f->prec >= kShift) return {"(" + type_name(t) + ")(" + s + ")", kUnary};
  return {s, f->prec};
}

CodeGenC::Code CodeGenC::emit_call(const te::Call& c, DType t) {
  const DType at = c.args[0].dtype();
  std::vector<std::string> args;
  for (const Expr& a : c.args) args.push_back(expr(a));
  auto joined = [&](bool wide) {
    std::string s;
    for (size_t i = 0; i < args.size(); ++i)
      s += (i ? ", " : "") + (wide ? widen(at, args[i]) : args[i]);
    return s;
  };
  if (!is_float(at)) {
    const std::string tn = type_name(at);
    const std::string ct = is_sub_int(at) ? "int" : tn;
    switch (c.fn) {
      case CallFn::Floor:
      case CallFn::Ceil:
      case CallFn::Round:
        return {args[0], kPrimary};
      case CallFn::Abs:
        if (!is_signed_int(at)) return {args[0], kPrimary};
        use_helper("souffle_abs_" + ct, helper_prefix() + ct + " souffle_abs(" + ct +
                                            " a) {\n  return a < 0 ? -a : a;\n}\n");
        return {"(" + tn + ")souffle_abs(" + args[0] + ")", kUnary};
      case CallFn::Sign:
        return {"(" + tn + ")(" +
                    (is_signed_int(at) ? "(" + args[0] + " > 0) - (" + args[0] + " < 0)"
                                       : args[0] + " != 0") +
                    ")",
                kUnary};
      case CallFn::IsNaN:
      case CallFn::IsInf:
      case CallFn::IsPosInf:
      case CallFn::IsNegInf:
        return {"false", kPrimary};
      default: {
        // Integer math the reference does in double, converted back.
        std::string inner = math_name(c.fn, DType::Float64) + "(";
        for (size_t i = 0; i < args.size(); ++i) inner += (i ? ", (double)" : "(double)") + args[i];
        return {"(" + type_name(t) + ")" + inner + ")", kUnary};
      }
    }
  }
  const bool nf = is_narrow_float(at);
  const DType ct = nf ? DType::Float32 : at;
  const std::string ctn = type_name(ct);
  const std::string one = float_literal(ct, 1.0), zero = float_literal(ct, 0.0);
  std::string name = math_name(c.fn, ct);
  switch (c.fn) {
    case CallFn::Sigmoid:
      name = "souffle_sigmoid";
      use_helper(name + "_" + ctn, helper_prefix() + ctn + " " + name + "(" + ctn +
                                       " x) {\n  return " + one + " / (" + one + " + " +
                                       math_name(CallFn::Exp, ct) + "(-x));\n}\n");
      break;
    case CallFn::Rsqrt:
      if (!name.empty()) break;
      name = "souffle_rsqrt";
      use_helper(name + "_" + ctn, helper_prefix() + ctn + " " + name + "(" + ctn +
                                       " x) {\n  return " + one + " / " +
                                       math_name(CallFn::Sqrt, ct) + "(x);\n}\n");
      break;
    case CallFn::Sign:
      name = "souffle_sign";
      use_helper(name + "_" + ctn, helper_prefix() + ctn + " " + name + "(" + ctn +
                                       " x) {\n  return x > " + zero + " ? " + one + " : (x < " +
                                       zero + " ? -" + one + " : x);\n}\n");
      break;
    case CallFn::IsPosInf:
    case CallFn::IsNegInf: {
      const std::string x = widen(at, args[0]);
      return {"(isinf(" + x + ") && " + x + (c.fn == CallFn::IsPosInf ? " > " : " < ") + zero + ")",
              kPrimary};
    }
    default:
      break;
  }
  SOUFFLE_CHECK(!name.empty(), std::string("codegen: no function for ") + te::call_name(c.fn));
  std::string s = name + "(" + joined(nf) + ")";
  if (nf && t == at) s = narrow(at, s);  // predicates yield bool, not the argument type
  return {s, kPrimary};
}

CodeGenC::Code CodeGenC::emit_cast(const te::Cast& c) {
  const DType t = c.dtype, s = c.a.dtype();
  Code a = emit_expr(c.a);
  if (t == s) return a;
  if (t == DType::Bool) {
    if (is_narrow_float(s)) return {"(" + widen(s, a.text) + " != 0.0f)", kPrimary};
    return {"(" + a.text + " != 0)", kPrimary};
  }
  if (is_narrow_float(t)) {
    if (is_narrow_float(s)) return {narrow(t, widen(s, a.text)), kPrimary};
    if (s == DType::Float32) return {narrow(t, a.text), kPrimary};
    return {narrow(t, "(float)" + paren(a.text, a.prec, kUnary)), kPrimary};
  }
  if (is_narrow_float(s)) {
    std::string w = widen(s, a.text);
    if (t == DType::Float32) return {w, kPrimary};
    return {"(" + type_name(t) + ")" + w, kUnary};
  }
  return {"(" + type_name(t) + ")" + paren(a.text, a.prec, kUnary), kUnary};
}

// ---- statements ----

void CodeGenC::emit_seq_child(const Stmt& s, bool last) {
  // A let or allocation declares a name for the rest of its C block: keep it to its own body.
  const bool scoped =
      !last && (s.as<loop::LetStmt>() || s.as<loop::Allocate>() || s.as<loop::FragmentAlloc>());
  if (scoped) open("");
  emit_stmt(s);
  if (scoped) close();
}

void CodeGenC::emit_stmt(const Stmt& s) {
  if (!s.defined()) return;
  switch (s.kind()) {
    case loop::StmtKind::For: {
      const loop::For& f = *s.as<loop::For>();
      if (loop::is_thread_binding(f.for_kind)) {
        emit_thread_binding(f);
        break;
      }
      const std::string v = var_name(f.var);
      if (is_nonnegative(f.min)) mark_nonnegative(f.var);
      const te::IntImm* mn = f.min.as<te::IntImm>();
      Expr end = mn && mn->value == 0 ? f.extent : loop::simplify(f.min + f.extent);
      if (f.for_kind == ForKind::Vectorized && emit_vectorized(f)) break;
      if (f.for_kind == ForKind::Unrolled) line("#pragma unroll");
      if (f.for_kind == ForKind::Vectorized) line("#pragma unroll  // vectorized");
      open("for (long long " + v + " = " + expr(f.min) + "; " + v + " < " + expr(end) + "; ++" + v +
           ")");
      emit_stmt(f.body);
      close();
      break;
    }
    case loop::StmtKind::LetStmt: {
      const loop::LetStmt& l = *s.as<loop::LetStmt>();
      if (!uses_var(l.body, l.var)) {
        emit_stmt(l.body);
        break;
      }
      const std::string value = expr(l.value);
      const std::string v = var_name(l.var);
      if (is_nonnegative(l.value)) mark_nonnegative(l.var);
      line("const long long " + v + " = " + value + ";");
      emit_stmt(l.body);
      break;
    }
    case loop::StmtKind::Allocate: {
      const loop::Allocate& a = *s.as<loop::Allocate>();
      const te::TensorNode* b = a.buffer.get();
      if (a.scope == MemScope::Global) {
        line("// " + (m_labels.count(b) ? m_labels.at(b) : m_buffers.at(b)) +
                 ": global scratch of " + std::to_string(numel(b)) + " " + dtype_name(b->dtype) +
                 " (a kernel parameter)",
             LineRole::Comment);
      } else {
        const std::string name = unique_name(b->name);
        m_buffers[b] = name;
        if (a.scope == MemScope::Shared)
          emit_shared_alloc(a, name);
        else
          emit_local_alloc(a, name);
      }
      emit_stmt(a.body);
      break;
    }
    case loop::StmtKind::Store: {
      const loop::Store& st = *s.as<loop::Store>();
      line(buffer_name(st.buffer.get()) + "[" + flat_index(st.buffer.get(), st.indices) +
           "] = " + expr(st.value) + ";");
      break;
    }
    case loop::StmtKind::AtomicAdd: {
      const loop::AtomicAdd& at = *s.as<loop::AtomicAdd>();
      line(atomic_add_stmt(
          at.buffer->dtype,
          "&" + buffer_name(at.buffer.get()) + "[" + flat_index(at.buffer.get(), at.indices) + "]",
          expr(at.value)));
      break;
    }
    case loop::StmtKind::Shuffle: {
      const loop::Shuffle& sh = *s.as<loop::Shuffle>();
      line(buffer_name(sh.buffer.get()) + "[" + flat_index(sh.buffer.get(), sh.indices) +
           "] = " + shuffle_expr(sh.shuffle, sh.value.dtype(), expr(sh.value), expr(sh.arg)) + ";");
      break;
    }
    case loop::StmtKind::IfThenElse: {
      const loop::IfThenElse& i = *s.as<loop::IfThenElse>();
      const std::string cond = expr(i.cond);
      // A guard on the block index (as a kernel's stages are) may repeat in a rolled loop.
      open("if (" + cond + ")", LineRole::If,
           index_arithmetic(cond, {"bx", "tx", "ll"}, " <>=&|()!%/*+-"));
      emit_stmt(i.then_case);
      if (i.else_case.defined()) {
        --m_depth;
        m_continues = true;
        line("} else {");
        m_continues = false;
        ++m_depth;
        emit_stmt(i.else_case);
      }
      close();
      break;
    }
    case loop::StmtKind::Seq: {
      const auto& stmts = s.as<loop::Seq>()->stmts;
      for (size_t i = 0; i < stmts.size(); ++i) emit_seq_child(stmts[i], i + 1 == stmts.size());
      break;
    }
    case loop::StmtKind::BlockBarrier:
      line(barrier_line(block_barrier_stmt(), BoundaryKind::Block), LineRole::Barrier);
      break;
    case loop::StmtKind::GridBarrier:
      line(barrier_line(grid_barrier_stmt(), BoundaryKind::Grid), LineRole::Barrier);
      break;
    case loop::StmtKind::FlagRelease:
      emit_flag_release(*s.as<loop::FlagRelease>());
      break;
    case loop::StmtKind::FlagWait:
      emit_flag_wait(*s.as<loop::FlagWait>());
      break;
    case loop::StmtKind::Stage: {
      const loop::Stage& st = *s.as<loop::Stage>();
      // The lines of a stage (outermost, where stages nest) stand for it.
      const int outer_stage = m_line_stage;
      if (m_stage_depth == 0) m_line_stage = st.index;
      if (emit_stage_elsewhere(st)) {
        m_line_stage = outer_stage;
        break;
      }
      if (const loop::StageInfo* found = stage_info(st.index)) {
        const loop::StageInfo& info = *found;
        line(comment_text("// stage " + std::to_string(st.index) + " `" + info.name +
                          "`: " + info.schedule + " (grid " + std::to_string(info.grid_x) +
                          ", block " + std::to_string(info.block_x) + ")"),
             LineRole::Comment);
        for (size_t j = 0; j < info.tes.size(); ++j) {
          std::string l = "//   " + info.tes[j];
          if (j < info.origins.size() && !info.origins[j].node.empty())
            l += " <- " + info.origins[j].node + " (" + info.origins[j].op_type + ")";
          else if (j < info.origins.size() && !info.origins[j].op_type.empty())
            l += " <- " + info.origins[j].op_type;
          line(comment_text(l), LineRole::Comment);
        }
      } else {
        line("// stage " + std::to_string(st.index), LineRole::Comment);
      }
      open("");
      ++m_stage_depth;
      emit_stmt(st.body);
      --m_stage_depth;
      close();
      m_line_stage = outer_stage;
      break;
    }
    case loop::StmtKind::Evaluate:
      line("(void)(" + expr(s.as<loop::Evaluate>()->value) + ");");
      break;
    case loop::StmtKind::TimelineRecord:
      emit_timeline_record(*s.as<loop::TimelineRecord>());
      break;
    case loop::StmtKind::Comment:
      line(comment_text("// " + s.as<loop::Comment>()->text), LineRole::Comment);
      break;
    case loop::StmtKind::FragmentAlloc: {
      const loop::FragmentAlloc& a = *s.as<loop::FragmentAlloc>();
      const std::string name = unique_name(a.buffer->name);
      m_buffers[a.buffer.get()] = name;
      emit_fragment_alloc(a, name);
      emit_stmt(a.body);
      break;
    }
    case loop::StmtKind::FragmentFill:
    case loop::StmtKind::FragmentLoad:
    case loop::StmtKind::FragmentMma:
    case loop::StmtKind::FragmentStore:
    case loop::StmtKind::AsyncCopy:
    case loop::StmtKind::AsyncCommit:
    case loop::StmtKind::AsyncWait:
    case loop::StmtKind::MatrixLoad:
    case loop::StmtKind::MmaSync:
    case loop::StmtKind::WgmmaFence:
    case loop::StmtKind::WgmmaMma:
    case loop::StmtKind::WgmmaCommit:
    case loop::StmtKind::WgmmaWait:
      emit_fragment_op(s);
      break;
  }
}

// ---- kernels and units ----

std::string CodeGenC::function_comment(const loop::Kernel& k) {
  return "// kernel `" + k.name + "`: grid " + std::to_string(k.launch.grid_x) + " x block " +
         std::to_string(k.launch.block_x) + ", dynamic shared " +
         std::to_string(k.launch.dynamic_shared_bytes) + " B" +
         (k.launch.cooperative ? ", cooperative launch" : "");
}

std::string CodeGenC::barrier_line(const std::string& stmt, BoundaryKind kind) {
  if (!m_kernel || m_stage_depth > 0) return stmt;
  const std::vector<StageBoundary>& bs = m_kernel->boundaries;
  while (m_next_boundary < bs.size() && !bs[m_next_boundary].has_statement()) ++m_next_boundary;
  if (m_next_boundary >= bs.size() || bs[m_next_boundary].kind != kind) return stmt;
  m_line_boundary = static_cast<int>(m_next_boundary);
  return stmt + "  " + comment_text("// " + describe(bs[m_next_boundary++]));
}

void CodeGenC::add_kernel(const loop::Kernel& k) {
  m_kernel = &k;
  m_stage_depth = 0;
  m_next_boundary = 0;
  m_vars.clear();
  m_buffers.clear();
  m_used_names.clear();
  m_next_suffix.clear();
  m_ranges.clear();

  const std::string kname = unique_function_name(k.name, m_kernel_names);
  m_used_names.insert(kname);

  const std::vector<KernelParam> ps = params(k);
  const bool packed = packs_params(k, ps.size());
  std::vector<std::string> decls;
  std::vector<EmittedPointer> pointers;  // EmittedFunction::params
  std::string summary;
  m_labels.clear();
  for (size_t i = 0; i < ps.size(); ++i) {
    const KernelParam& p = ps[i];
    m_used_names.insert(p.name);
    const std::string tn = type_name(p.tensor->dtype);
    const std::string cq = p.role == KernelParam::Role::Input ? "const " : "";
    if (packed) {
      // The i-th pointer of the one parameter, as its type (kPackedArgs).
      std::string ref = "((" + cq;
      ref += tn + "*)" + kPackedArgs;
      ref += ".p[" + std::to_string(i) + "])";
      m_buffers[p.tensor.get()] = std::move(ref);
      m_labels[p.tensor.get()] = p.name;
    } else {
      m_buffers[p.tensor.get()] = p.name;
      decls.push_back(cq + tn + "* " + restrict_qualifier() + " " + p.name);
      pointers.push_back({p.name, tn, !cq.empty()});
    }
    summary += (summary.empty() ? "" : ", ") + p.name + " (" + param_role_name(p.role) + " " +
               dtype_name(p.tensor->dtype) + shape_str(p.tensor->shape) + ")";
  }
  const std::string args_type = kname + "_args";
  if (packed) {
    m_used_names.insert(kPackedArgs);
    decls.push_back(std::string("const __grid_constant__ ") + args_type + " " + kPackedArgs);
  }
  if (!k.flags.empty()) {
    m_used_names.insert(kFlagEpoch);
    decls.push_back(std::string("long long ") + kFlagEpoch);
    summary += std::string(", ") + kFlagEpoch + " (this launch's epoch of the flags)";
  }

  if (packed) {
    // Thousands of pointer parameters cost NVRTC seconds (docs/compile_dedup.md): the tensors
    // come as one array in one parameter, in the order of the params line below.
    line(comment_text("// " + kname + "'s " + std::to_string(ps.size()) +
                      " tensors, packed in one parameter (" + kPackedArgs +
                      ".p[i]: the i-th of its params below)"),
         LineRole::Comment);
    line("struct " + args_type + " {");
    line("  void* p[" + std::to_string(ps.size()) + "];");
    line("};");
  }
  m_line_part = m_function_part;
  m_line_function = static_cast<int>(m_functions.size());
  m_statement = -1;
  m_comments_ahead = false;
  m_functions.push_back({kname, std::move(pointers)});
  line(comment_text(function_comment(k)), LineRole::Signature);
  if (!summary.empty()) line(comment_text("// params: " + summary), LineRole::Signature);
  m_function_name = kname;
  std::string head = function_prefix(k) + "void " + function_attributes(k) + kname + "(";
  size_t total = head.size();
  for (const auto& d : decls) total += d.size() + 2;
  if (total <= 100) {
    for (size_t i = 0; i < decls.size(); ++i) head += (i ? ", " : "") + decls[i];
    open(head + ")", LineRole::FunctionHead);
  } else {
    line(head, LineRole::FunctionHead);
    for (size_t i = 0; i < decls.size(); ++i)
      line("    " + decls[i] + (i + 1 < decls.size() ? "," : ") {"), LineRole::Signature);
    if (decls.empty()) line("    ) {", LineRole::Signature);
    ++m_depth;
  }
  emit_kernel_prologue(k);
  emit_stmt(k.body);
  close();
  m_line_part = LinePart::Preamble;
  m_line_function = -1;
  line("");
  m_kernel = nullptr;
}

std::string CodeGenC::translation_unit() {
  // includes() may depend on features, which the kernels set while being emitted.
  std::string out = includes();
  if (!out.empty()) out += "\n";
  for (const auto& h : m_helpers) out += h.second + "\n";
  for (const EmittedLine& l : m_lines) out += l.text + "\n";
  return out;
}

EmittedUnit CodeGenC::emitted_unit() {
  std::string preamble = includes();
  if (!preamble.empty()) preamble += "\n";
  for (const auto& h : m_helpers) preamble += h.second + "\n";
  EmittedUnit u;
  for (size_t from = 0; from < preamble.size();) {
    size_t to = preamble.find('\n', from);
    if (to == std::string::npos) to = preamble.size();
    EmittedLine l;
    l.text = preamble.substr(from, to - from);
    u.lines.push_back(std::move(l));
    from = to + 1;
  }
  u.lines.insert(u.lines.end(), m_lines.begin(), m_lines.end());
  u.functions = m_functions;
  return u;
}

std::string EmittedUnit::text() const {
  std::string out;
  for (const EmittedLine& l : lines) out += l.text + "\n";
  return out;
}

}  // namespace souffle::codegen
