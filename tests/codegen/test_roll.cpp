// Repeated stage calls rolled into loops (core/codegen/roll.h): the loop makes exactly the calls
// of the statements it replaces (its text expanded again equals the unrolled emission), the
// rolled source compiles with NVRTC, and what must not be rolled is not.
#include <gtest/gtest.h>
#include <algorithm>

#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "core/codegen/codegen_cuda.h"
#include "core/codegen/roll.h"
#include "core/codegen/source_map.h"
#include "core/gpu/nvrtc.h"
#include "core/loop/verify.h"
#include "core/schedule/plan_pricer.h"
#include "core/session/compile.h"
#include "core/session/load.h"
#include "tests/codegen/kernels.h"

namespace souffle::codegen {
namespace {

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string l;
  while (std::getline(ss, l)) out.push_back(l);
  return out;
}

std::string trimmed(const std::string& s) {
  const size_t a = s.find_first_not_of(' ');
  return a == std::string::npos ? "" : s.substr(a);
}

/// The rolled loops of `src` written out again, one copy of the body per repetition with the
/// table entries and affine numbers of that repetition: independent of how roll.cpp models the
/// repetitions, it reads only the text it wrote.
std::string expand_rolled(const std::string& src) {
  const std::vector<std::string> in = lines_of(src);
  // "TYPE* const NAME[N] = {" (pointers), "static const long long NAME[N] = {" (integers).
  static const std::regex table(R"(^\s*(.+ const|static const long long) (\w+)\[(\d+)\] = \{$)");
  static const std::regex loop(R"(^\s*for \(long long (\w+) = 0; \w+ < (\d+); \+\+\w+\) \{$)");
  std::string out;
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i].find("rolled into a loop") == std::string::npos) {
      out += in[i] + "\n";
      continue;
    }
    ++i;  // the scope's "{"
    std::map<std::string, std::vector<std::string>> tables;
    std::smatch m;
    for (++i; i < in.size() && std::regex_match(in[i], m, table); ++i) {
      std::vector<std::string>& values = tables[m[2].str()];
      for (++i; trimmed(in[i]) != "};"; ++i) {
        std::stringstream row(in[i]);
        std::string v;
        while (std::getline(row, v, ','))
          if (!trimmed(v).empty()) values.push_back(trimmed(v));
      }
    }
    EXPECT_EQ(trimmed(in[i]), "#pragma unroll 1");
    ++i;
    EXPECT_TRUE(std::regex_match(in[i], m, loop)) << in[i];
    const std::string rv = m[1].str();
    const int reps = std::stoi(m[2].str());
    std::vector<std::string> body;
    for (++i; in[i] != "    }"; ++i) body.push_back(in[i].substr(4));
    ++i;  // the scope's "}"
    const std::regex affine("\\((-?\\d+)ll \\+ (-?\\d+)ll \\* " + rv + "\\)");
    for (int r = 0; r < reps; ++r)
      for (std::string l : body) {
        // A table is read at the repetition, or at the repetition plus an offset (tables that
        // are windows of one another share one).
        for (const auto& [name, values] : tables) {
          const std::regex ref(name + "\\[" + rv + "( \\+ (\\d+))?\\]");
          std::smatch t;
          while (std::regex_search(l, t, ref)) {
            const size_t at = static_cast<size_t>(r) + (t[2].matched ? std::stoul(t[2].str()) : 0);
            l = t.prefix().str() + values.at(at) + t.suffix().str();
          }
        }
        std::smatch a;
        while (std::regex_search(l, a, affine)) {
          const long long v = std::stoll(a[1].str()) + std::stoll(a[2].str()) * r;
          l = a.prefix().str() + std::to_string(v) + a.suffix().str();
        }
        out += l + "\n";
      }
  }
  return out;
}

/// The code of `src` without comments, integer suffixes, blank lines and indentation, and with
/// every name a line declares ("* const NAME =", "long long NAME =") renamed to a counter in
/// order of declaration (a loop declares its first repetition's names in every repetition).
std::string normalized(const std::string& src) {
  static const std::regex suffix(R"(\b(\d+)ll\b)");
  static const std::regex declares(R"((\* const|long long) ([A-Za-z_]\w*) =)");
  static const std::regex ident(R"([A-Za-z_]\w*)");
  std::map<std::string, std::string> names;
  int counter = 0;
  std::string out;
  for (std::string l : lines_of(src)) {
    const size_t c = l.find("//");
    if (c != std::string::npos) l = l.substr(0, c);
    l = std::regex_replace(trimmed(l), suffix, "$1");
    while (!l.empty() && l.back() == ' ') l.pop_back();
    std::smatch m;
    if (std::regex_search(l, m, declares)) names[m[2].str()] = "decl" + std::to_string(counter++);
    std::string renamed;
    auto begin = std::sregex_iterator(l.begin(), l.end(), ident);
    size_t at = 0;
    for (auto it = begin; it != std::sregex_iterator(); ++it) {
      renamed += l.substr(at, size_t(it->position()) - at);
      auto n = names.find(it->str());
      renamed += n == names.end() ? it->str() : n->second;
      at = size_t(it->position() + it->length());
    }
    renamed += l.substr(at);
    if (!renamed.empty()) out += renamed + "\n";
  }
  return out;
}

/// A hand-written kernel text as the emitter would have recorded it (emitted.h): each line's
/// role, repeatable when it is what the emitter marks so (a brace, a barrier, a guard on the
/// block index, a stage call or its argument, an arena pointer, a flag release or wait line),
/// and the top-level statement of its function's body.
EmittedUnit as_emitted(const std::string& cuda) {
  static const std::regex thread0(R"(if \(threadIdx\.x == 0\) \{)");
  static const std::regex release(R"(atomicAdd\(&[A-Za-z_]\w*\[(bx|[0-9]+|[ *+()-])+\], 1\);)");
  static const std::regex guard(R"(if \((bx|tx|[0-9]+|[ <>=&|()!%/*+-]|ll)+\) \{)");
  static const std::regex call(R"([A-Za-z_][A-Za-z0-9_]*_stage[A-Za-z0-9_]*\((.*\);)?)");
  static const std::regex arg(R"([A-Za-z_][A-Za-z0-9_]*( \+ [0-9]+)?(,|\);))");
  static const std::regex arena(
      R"([A-Za-z_][A-Za-z0-9_ ]*\* const [A-Za-z_][A-Za-z0-9_]* = reinterpret_cast<[A-Za-z_][A-Za-z0-9_ ]*\*>\(souffle_smem \+ [0-9]+\);)");
  static const std::regex param(
      R"((const )?([A-Za-z_][A-Za-z0-9_ ]*)\* __restrict__ ([A-Za-z_]\w*))");
  static const std::regex arena_decl(
      R"(([A-Za-z_][A-Za-z0-9_ ]*)\* const ([A-Za-z_][A-Za-z0-9_]*) = reinterpret_cast<.*)");
  EmittedUnit u;
  // What the emitter records of its functions: each one's head line and the parameter lines up
  // to the one that opens its body, and every line to its closing brace at the top level.
  LinePart part = LinePart::Preamble;
  bool in_head = false;
  for (const std::string& l : lines_of(cuda)) {
    EmittedLine e;
    e.text = l;
    std::string c = l.substr(0, l.find("//"));
    c = trimmed(c);
    while (!c.empty() && c.back() == ' ') c.pop_back();
    const bool stage_head = l.rfind("static __device__", 0) == 0;
    if (stage_head || l.rfind("extern \"C\" __global__", 0) == 0) {
      part = stage_head ? LinePart::StageFunction : LinePart::Kernel;
      u.functions.push_back({l, {}});
      e.role = LineRole::FunctionHead;
      in_head = true;
    } else if (in_head) {
      e.role = LineRole::Signature;
    }
    if (in_head) {  // the function's pointer parameters
      for (std::sregex_iterator m(l.begin(), l.end(), param), end; m != end; ++m)
        u.functions.back().params.push_back({(*m)[3], (*m)[2], (*m)[1].matched});
    }
    if (std::smatch m; std::regex_match(c, m, arena_decl)) {
      e.role = LineRole::ArenaPointer;
      e.declares = {m[2], m[1], false};
    }
    e.part = part;
    e.function = part == LinePart::Preamble ? -1 : static_cast<int>(u.functions.size()) - 1;
    if (in_head && !c.empty() && c.back() == '{') in_head = false;
    if (l == "}") part = LinePart::Preamble;
    e.repeatable = c.empty() || c == "{" || c == "}" || c == "grid.sync();" ||
                   c == "__syncthreads();" || c == "__threadfence();";
    for (const std::regex* r : {&guard, &call, &arg, &arena, &thread0, &release})
      e.repeatable = e.repeatable || std::regex_match(c, *r);
    if (e.role == LineRole::Code) {  // what kind of line the emitter would have said it is
      if (c.empty()) {
        e.role = LineRole::Comment;
      } else if (c == "{" || c == "}") {
        e.role = LineRole::Brace;
      } else if (c == "grid.sync();" || c == "__syncthreads();") {
        e.role = LineRole::Barrier;
      } else if (std::regex_match(c, thread0) || std::regex_match(c, release)) {
        e.role = LineRole::FlagSync;
      } else if (std::regex_match(c, guard)) {
        e.role = LineRole::If;
      } else if (std::regex_match(c, call)) {
        e.role = LineRole::StageCall;
      } else if (std::regex_match(c, arg)) {
        e.role = LineRole::StageCallArg;
      }
    }
    u.lines.push_back(std::move(e));
  }
  // The top-level statements of each body (EmittedLine::statement): a line, a block to its
  // closing brace, a call to the line that closes it; comment lines join the statement after.
  for (size_t i = 0; i < u.lines.size();) {
    const EmittedLine& at = u.lines[i];
    if (at.part == LinePart::Preamble || at.role == LineRole::FunctionHead ||
        at.role == LineRole::Signature || at.text == "}") {
      ++i;
      continue;
    }
    const int function = at.function;
    int statement = 0;
    size_t l = i;
    while (l < u.lines.size() && u.lines[l].function == function && u.lines[l].text != "}") {
      size_t head = l;
      while (head + 1 < u.lines.size() && u.lines[head].role == LineRole::Comment) ++head;
      std::string c = trimmed(u.lines[head].text.substr(0, u.lines[head].text.find("//")));
      while (!c.empty() && c.back() == ' ') c.pop_back();
      size_t end = head;
      if (!c.empty() && c.back() == '{') {
        int depth = 0;
        for (; end < u.lines.size(); ++end) {
          for (char ch : u.lines[end].text.substr(0, u.lines[end].text.find("//")))
            depth += ch == '{' ? 1 : ch == '}' ? -1 : 0;
          if (depth <= 0) break;
        }
      } else if (!c.empty() && c.back() == '(') {
        while (end + 1 < u.lines.size() && u.lines[end].text.find(");") == std::string::npos) ++end;
      }
      for (size_t k = l; k <= end; ++k) u.lines[k].statement = statement;
      ++statement;
      l = end + 1;
    }
    i = l;
  }
  return u;
}

/// `cuda` (hand-written) rolled.
std::string roll_text(const std::string& cuda, int min_repeats = 3, RollStats* stats = nullptr) {
  EmittedUnit u = as_emitted(cuda);
  roll_repeated_statements(u, min_repeats, stats);
  return u.text();
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

/// The sample LSTM's souffle kernels under `sync` (its layers side by side in waves), and the
/// first one's CUDA C with every stage outlined, without and with rolling.
struct SampleKernel {
  std::vector<CompiledKernel> kernels;
  std::string unrolled, rolled;
  EmittedUnit unrolled_unit;
};
SampleKernel sample_kernel(SyncMode sync,
                           const std::string& model = "sample_models/lstm/model.onnx") {
  const gpu::GpuSpec a100 = gpu::gpu_spec("a100");
  plan::PlanOptions po;
  po.gpu = a100;
  po.sync = sync;
  po.pricer = schedule::make_pricer(a100, po.precision);
  const LoadedModel m = load_model(std::string(SOUFFLE_SOURCE_DIR) + "/" + model);
  SampleKernel out;
  out.kernels = build_compiled_kernels(plan::plan(m.program, po), nullptr, sync);
  if (out.kernels.empty()) return out;
  // The kernel of the most stages (the recurrent one) first.
  std::stable_sort(out.kernels.begin(), out.kernels.end(), [](const auto& a, const auto& b) {
    return a.kernel.stages.size() > b.kernel.stages.size();
  });
  loop::KernelSet set;
  set.kernels = {out.kernels[0].kernel};
  CudaEmitOptions o;
  o.outlining = StageOutlining::Always;
  o.roll = false;
  out.unrolled = emit_cuda(set, o);
  out.unrolled_unit = emit_cuda_unit(set, o);
  o.roll = true;
  out.rolled = emit_cuda(set, o);
  return out;
}

/// The emitter numbers each function body's top-level statements (EmittedLine::statement, what
/// rolling groups by): every body line has one, in order without gaps; a call's argument lines
/// and a block's closing brace are the statement they continue, comment lines the statement
/// after them; a function's head and its closing brace are in none.
TEST(Roll, TheEmitterNumbersEachBodysTopLevelStatements) {
  const SampleKernel s = sample_kernel(SyncMode::Auto);
  ASSERT_FALSE(s.kernels.empty());
  const std::vector<EmittedLine>& lines = s.unrolled_unit.lines;
  int bodies = 0, calls = 0, blocks = 0, barriers = 0;
  bool head_ahead = false;  // the statement's first line after its comments is still to come
  for (size_t i = 0; i < lines.size(); ++i) {
    const EmittedLine& l = lines[i];
    SCOPED_TRACE(std::to_string(i) + ": " + l.text);
    if (l.part == LinePart::Preamble || l.role == LineRole::FunctionHead ||
        l.role == LineRole::Signature) {
      EXPECT_EQ(l.statement, -1);
      continue;
    }
    const bool last = i + 1 == lines.size() || lines[i + 1].function != l.function;
    if (last) {  // the function's closing brace
      EXPECT_EQ(l.text, "}");
      EXPECT_EQ(l.statement, -1);
      continue;
    }
    const EmittedLine& prev = lines[i - 1];
    const bool first = prev.statement < 0;
    if (first) {
      ++bodies;
      EXPECT_EQ(l.statement, 0);
    } else {
      EXPECT_TRUE(l.statement == prev.statement || l.statement == prev.statement + 1);
    }
    const std::string code = l.text.substr(0, l.text.find("//"));
    const size_t at = code.find_first_not_of(' ');
    const bool closes = at != std::string::npos && code[at] == '}';
    if (l.role == LineRole::StageCallArg || closes) {
      EXPECT_EQ(l.statement, prev.statement);
    }
    if (l.role == LineRole::Comment && lines[i + 1].statement >= 0) {
      EXPECT_EQ(l.statement, lines[i + 1].statement);
    }
    head_ahead |= first || l.statement != prev.statement;
    if (head_ahead && l.role != LineRole::Comment) {
      calls += l.role == LineRole::StageCall;
      blocks += l.role == LineRole::Brace || l.role == LineRole::If;
      barriers += l.role == LineRole::Barrier || l.role == LineRole::FlagSync;
      head_ahead = false;
    }
  }
  EXPECT_EQ(bodies, static_cast<int>(s.unrolled_unit.functions.size()));
  // The recurrent kernel's stage calls, each a statement of its own or in a guard on the
  // block index with its braces, and the barriers between them.
  EXPECT_GT(calls + blocks, 10);
  EXPECT_GT(barriers, 10);
}

TEST(Roll, RepeatedStepsBecomeOneLoopThatMakesTheSameCalls) {
  loop::Kernel k = testing::row_steps_kernel();
  loop::verify(k);
  CudaEmitOptions o;
  o.outlining = StageOutlining::Always;
  o.roll = false;
  const std::string unrolled = emit_cuda(k, o);
  o.roll = true;
  const std::string rolled = emit_cuda(k, o);
  // Step 0, then three repetitions of (grid barrier, step t): x's row is 128 * t further on,
  // the previous and the new state come from tables.
  EXPECT_EQ(count(rolled, "rolled into a loop"), 1u) << rolled;
  EXPECT_EQ(count(rolled, "steps_stage0("), 3u) << rolled;  // its definition, step 0, the loop
  EXPECT_NE(rolled.find("x + (128ll + 128ll * souffle_r0)"), std::string::npos) << rolled;
  EXPECT_NE(rolled.find("float* const souffle_r0_t"), std::string::npos) << rolled;
  EXPECT_EQ(normalized(expand_rolled(rolled)), normalized(unrolled));
  RollStats stats;
  loop::KernelSet one;
  one.kernels = {k};
  o.roll = false;
  EmittedUnit u = emit_cuda_unit(one, o);
  roll_repeated_statements(u, 3, &stats);
  EXPECT_EQ(u.text(), rolled);
  EXPECT_EQ(stats.loops, 1);
  EXPECT_EQ(stats.rolled, 6);
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  for (const char* arch : {"sm_80", "sm_90"}) {
    gpu::CompileOptions co;
    co.arch = arch;
    gpu::CompileResult r = gpu::compile_cuda(rolled, "steps.cu", co);
    ASSERT_TRUE(r.ok) << arch << ":\n" << r.error;
    EXPECT_EQ(r.log.find("warning"), std::string::npos) << r.log;
  }
}

// The sample Swin under sync flags with every stage outlined: its blocks' repeated stages
// ordered by per-tile flags (releases and waits between the calls) roll too, the loop makes the
// same calls, waits and releases, and NVRTC compiles it. (The sample LSTM was the model here
// until its cell update came to run on its gates' tiles: its steps now wait on every block of
// the grid, a grid barrier under any sync mode.)
TEST(Roll, FlagReleasesAndWaitsRollWithTheirSteps) {
  const SampleKernel swin = sample_kernel(SyncMode::Flags, "sample_models/swin/model.onnx");
  ASSERT_FALSE(swin.kernels.empty());
  ASSERT_FALSE(swin.kernels[0].kernel.flags.empty());
  const std::string& unrolled = swin.unrolled;
  const std::string& rolled = swin.rolled;
  RollStats stats;
  EmittedUnit u = swin.unrolled_unit;
  roll_repeated_statements(u, 3, &stats);
  EXPECT_EQ(u.text(), rolled);
  EXPECT_GE(stats.loops, 1);
  EXPECT_GT(stats.rolled, 0) << rolled;
  // A wait and a release inside a loop.
  const size_t loop = rolled.find("#pragma unroll 1");
  ASSERT_NE(loop, std::string::npos);
  EXPECT_NE(rolled.find("souffle_ld_acquire(&", loop), std::string::npos);
  EXPECT_NE(rolled.find("atomicAdd(&", loop), std::string::npos);
  EXPECT_EQ(normalized(expand_rolled(rolled)), normalized(unrolled));
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  gpu::CompileOptions co;
  co.arch = "sm_80";
  gpu::CompileResult r = gpu::compile_cuda(rolled, "swin.cu", co);
  ASSERT_TRUE(r.ok) << r.error;
}

// A packed kernel's call of one argument is short enough for one line, where the argument's
// tensor would have no name (its comment is the call's): each packed argument goes on a line of
// its own whose comment names its tensor, whatever the call's length.
TEST(Roll, EveryPackedArgumentIsNamedOnItsLine) {
  const loop::Kernel k = testing::fill_steps_kernel(260);
  ASSERT_TRUE(takes_packed_params(k));
  CudaEmitOptions o;
  o.outlining = StageOutlining::Always;
  o.roll = false;
  loop::KernelSet one;
  one.kernels = {k};
  const std::string cuda = emit_cuda(one, o);
  int packed_args = 0;
  for (const std::string& l : lines_of(cuda)) {
    const size_t ref = l.find(std::string(kPackedArgs) + ".p[");
    if (ref == std::string::npos || l.find("//") < ref) continue;  // a comment mentions it
    ++packed_args;
    EXPECT_EQ(l.find("_stage"), std::string::npos) << "a call on one line: " << l;
    EXPECT_NE(l.find(");  // y"), std::string::npos) << l;
  }
  EXPECT_EQ(packed_args, 260);
}

// A kernel of 300 steps takes its 302 tensors packed in one parameter (kPackedParamsMin): the
// repeated calls differ in their index into the array, which the loop computes from the
// repetition; the loop makes the same calls and NVRTC compiles it. Its stage function keeps one
// `__restrict__` parameter per tensor.
TEST(Roll, APackedKernelsRepeatedCallsRollOverTheirIndices) {
  const loop::Kernel k = testing::row_steps_kernel(300);
  ASSERT_TRUE(takes_packed_params(k));
  const size_t n = kernel_params(k).size();
  EXPECT_EQ(n, 302u);
  CudaEmitOptions o;
  o.outlining = StageOutlining::Always;
  o.roll = false;
  loop::KernelSet one;
  one.kernels = {k};
  const std::string unrolled = emit_cuda(one, o);
  o.roll = true;
  const std::string rolled = emit_cuda(one, o);
  const std::string name = cuda_kernel_names(one)[0];
  EXPECT_NE(rolled.find("struct " + name + "_args {\n  void* p[302];\n};"), std::string::npos)
      << rolled.substr(0, 2000);
  const size_t head = rolled.find("extern \"C\" __global__");
  ASSERT_NE(head, std::string::npos);
  const std::string signature = rolled.substr(head, rolled.find('{', head) - head);
  EXPECT_NE(signature.find("const __grid_constant__ " + name + "_args souffle_args"),
            std::string::npos)
      << signature;
  EXPECT_EQ(signature.find("__restrict__"), std::string::npos) << signature;
  EXPECT_NE(rolled.substr(0, head).find("__restrict__"), std::string::npos);
  // Repetitions index the array by the loop's variable.
  const size_t loop = rolled.find("#pragma unroll 1");
  ASSERT_NE(loop, std::string::npos) << rolled;
  EXPECT_NE(rolled.find("souffle_args.p[(", loop), std::string::npos) << rolled.substr(loop, 2000);
  EXPECT_EQ(normalized(expand_rolled(rolled)), normalized(unrolled));
  EXPECT_LT(rolled.size() * 4, unrolled.size());
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  gpu::CompileOptions co;
  co.arch = "sm_80";
  gpu::CompileResult r = gpu::compile_cuda(rolled, "steps.cu", co);
  ASSERT_TRUE(r.ok) << r.error;
}

TEST(Roll, FewerRepetitionsThanAskedStayAsTheyAre) {
  loop::Kernel k = testing::row_steps_kernel();
  CudaEmitOptions o;
  o.outlining = StageOutlining::Always;
  o.roll = false;
  loop::KernelSet one;
  one.kernels = {k};
  EmittedUnit u = emit_cuda_unit(one, o);
  const std::string unrolled = u.text();
  roll_repeated_statements(u, 4);
  EXPECT_EQ(u.text(), unrolled);
}

// A kernel text as emit_cuda writes one, with statements that repeat in ways the loop cannot
// take: `body` is placed after the prologue.
std::string unit(const std::string& body) {
  return "static __device__ __noinline__ void k_stage0(const float* a, float* b) {\n"
         "  b[threadIdx.x] = a[threadIdx.x];\n"
         "}\n"
         "extern \"C\" __global__ void __launch_bounds__(32) k(\n"
         "    const float* __restrict__ p0,\n"
         "    const float* __restrict__ p1,\n"
         "    float* __restrict__ q0,\n"
         "    float* __restrict__ q1,\n"
         "    float* __restrict__ q2) {\n"
         "  extern __shared__ __align__(16) unsigned char souffle_smem[];\n"
         "  const long long bx = (long long)blockIdx.x;\n" +
         body + "}\n";
}

TEST(Roll, OnlyCallsGuardsBarriersAndArenaPointersRoll) {
  // Inline stage code repeats, but is not a call: it stays.
  const std::string inline_code = unit(
      "  {\n    q0[bx] = p0[bx] * 2.0f;\n  }\n"
      "  {\n    q1[bx] = p0[bx] * 2.0f;\n  }\n"
      "  {\n    q2[bx] = p0[bx] * 2.0f;\n  }\n");
  EXPECT_EQ(roll_text(inline_code), inline_code);
  // The called function changes: no pattern.
  const std::string other_functions =
      unit("  k_stage0(p0, q0);\n  k_stage1(p0, q1);\n  k_stage2(p0, q2);\n");
  EXPECT_EQ(roll_text(other_functions), other_functions);
  // An arena pointer declared at the top level is seen by what follows: never rolled.
  const std::string top_level = unit(
      "  float* const a0 = reinterpret_cast<float*>(souffle_smem + 0);\n"
      "  float* const a1 = reinterpret_cast<float*>(souffle_smem + 64);\n"
      "  float* const a2 = reinterpret_cast<float*>(souffle_smem + 128);\n"
      "  k_stage0(p0, a0);\n");
  EXPECT_EQ(roll_text(top_level), top_level);
  // A name the statement does not own and the kernel does not take (bx) varying: not rolled.
  const std::string unknown =
      unit("  k_stage0(p0, q0 + bx);\n  k_stage0(p0, q0 + tx);\n  k_stage0(p0, q0 + ty);\n");
  EXPECT_EQ(roll_text(unknown), unknown);
}

TEST(Roll, NamesAStatementDeclaresAreItsOwnInEveryRepetition) {
  const std::string src = unit(
      "  {\n    float* const a0 = reinterpret_cast<float*>(souffle_smem + 64);\n"
      "    if (bx < 2) {\n      k_stage0(p0, a0);\n    }\n    grid.sync();\n  }\n"
      "  {\n    float* const a1 = reinterpret_cast<float*>(souffle_smem + 64);\n"
      "    if (bx < 2) {\n      k_stage0(p1, a1);\n    }\n    grid.sync();\n  }\n"
      "  {\n    float* const a2 = reinterpret_cast<float*>(souffle_smem + 64);\n"
      "    if (bx < 2) {\n      k_stage0(p0, a2);\n    }\n    grid.sync();\n  }\n");
  RollStats stats;
  const std::string rolled = roll_text(src, 3, &stats);
  EXPECT_EQ(stats.loops, 1) << rolled;
  EXPECT_EQ(stats.table_entries, 3);  // p0, p1, p0: a table of const float*
  EXPECT_NE(rolled.find("const float* const souffle_r0_t0[3] = {"), std::string::npos) << rolled;
  EXPECT_NE(rolled.find("k_stage0(souffle_r0_t0[souffle_r0], a0);"), std::string::npos) << rolled;
  EXPECT_EQ(rolled.find("a1"), std::string::npos) << rolled;
}

// A step that reads the state the step before wrote (h[t] -> h[t + 1]): the two sequences of
// pointers are windows of one another and share one table, read at the repetition and one
// further on; a window that starts before the table grows it at the front. Expanded, the loop
// makes the calls it replaced.
TEST(Roll, TablesThatAreWindowsOfOneAnotherShareOne) {
  std::string head =
      "static __device__ __noinline__ void k_stage0(const float* a, float* b) {\n"
      "  b[threadIdx.x] = a[threadIdx.x];\n"
      "}\n"
      "extern \"C\" __global__ void __launch_bounds__(32) k(\n";
  for (int t = 0; t < 5; ++t)
    head += "    float* __restrict__ h" + std::to_string(t) + (t < 4 ? ",\n" : ") {\n");
  head += "  const long long bx = (long long)blockIdx.x;\n";
  const std::string forward = head +
                              "  k_stage0(h0, h1);\n  grid.sync();\n"
                              "  k_stage0(h1, h2);\n  grid.sync();\n"
                              "  k_stage0(h2, h3);\n  grid.sync();\n"
                              "  k_stage0(h3, h4);\n  grid.sync();\n}\n";
  RollStats stats;
  const std::string rolled = roll_text(forward, 3, &stats);
  EXPECT_EQ(stats.loops, 1) << rolled;
  EXPECT_EQ(stats.table_entries, 5) << rolled;  // h0 .. h4 once, not 4 + 4
  EXPECT_NE(rolled.find("float* const souffle_r0_t0[5] = {"), std::string::npos) << rolled;
  EXPECT_NE(rolled.find("k_stage0(souffle_r0_t0[souffle_r0], souffle_r0_t0[souffle_r0 + 1]);"),
            std::string::npos)
      << rolled;
  EXPECT_EQ(rolled.find("souffle_r0_t1"), std::string::npos) << rolled;
  EXPECT_EQ(normalized(expand_rolled(rolled)), normalized(forward));
  // The second sequence starts one before the first: the table grows at the front and the first
  // is read one further on.
  const std::string backward = head +
                               "  k_stage0(h1, h0);\n  grid.sync();\n"
                               "  k_stage0(h2, h1);\n  grid.sync();\n"
                               "  k_stage0(h3, h2);\n  grid.sync();\n"
                               "  k_stage0(h4, h3);\n  grid.sync();\n}\n";
  RollStats back_stats;
  const std::string back = roll_text(backward, 3, &back_stats);
  EXPECT_EQ(back_stats.table_entries, 5) << back;
  EXPECT_NE(back.find("k_stage0(souffle_r0_t0[souffle_r0 + 1], souffle_r0_t0[souffle_r0]);"),
            std::string::npos)
      << back;
  EXPECT_EQ(normalized(expand_rolled(back)), normalized(backward));
  // Sequences that share less than half of a window keep their own tables.
  const std::string apart =
      head + "  k_stage0(h0, h3);\n  k_stage0(h1, h4);\n  k_stage0(h2, h0);\n}\n";
  RollStats apart_stats;
  const std::string a = roll_text(apart, 3, &apart_stats);
  EXPECT_EQ(apart_stats.table_entries, 6) << a;
  EXPECT_EQ(normalized(expand_rolled(a)), normalized(apart));
}

// A pattern longer than 64 statements (a wave of ten LSTM layers with the flag releases and
// waits between its calls takes 89) still rolls as one loop over its repetitions.
TEST(Roll, LongPatternsRollOverTheirRepetitions) {
  std::string body;
  for (int r = 0; r < 3; ++r)
    for (int j = 0; j < 90; ++j)
      body += "  k_stage" + std::to_string(j) + "(p0, q" + std::to_string(r) + " + " +
              std::to_string(j) + ");\n";
  const std::string src = unit(body);
  RollStats stats;
  const std::string rolled = roll_text(src, 3, &stats);
  EXPECT_EQ(stats.loops, 1) << rolled;
  EXPECT_EQ(stats.rolled, 270);
  EXPECT_NE(rolled.find("// 3 repetitions of the 90 statements below"), std::string::npos);
  EXPECT_EQ(normalized(expand_rolled(rolled)), normalized(src));
}

// The sample LSTM in waves under grid barriers with every stage outlined: its steps' tables are
// windows of one another (a step reads the state the step before wrote), so they are read at
// offsets into shared tables; expanded, the loops make the calls of the unrolled kernel.
TEST(Roll, TheSampleLstmsStepsReadSharedTablesAtOffsets) {
  const SampleKernel lstm = sample_kernel(SyncMode::Grid);
  ASSERT_EQ(lstm.kernels.size(), 1u);
  const std::string& unrolled = lstm.unrolled;
  const std::string& rolled = lstm.rolled;
  EXPECT_TRUE(std::regex_search(rolled, std::regex(R"(souffle_r\d+_t\d+\[souffle_r\d+ \+ \d+\])")))
      << rolled;
  EXPECT_EQ(normalized(expand_rolled(rolled)), normalized(unrolled));
  if (!gpu::nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC";
  gpu::CompileOptions co;
  co.arch = "sm_80";
  gpu::CompileResult r = gpu::compile_cuda(rolled, "lstm_waves.cu", co);
  ASSERT_TRUE(r.ok) << r.error;
}

// Every stage of the sample LSTM's rolled kernel is found in its CUDA C: a call in a rolled loop
// names the stage each repetition runs, so the code view finds a later step's stage (its
// nodes) at the call, not only the first repetition's.
TEST(Roll, EveryRepetitionsStageIsFoundAtItsCall) {
  const SampleKernel lstm = sample_kernel(SyncMode::Grid);
  ASSERT_EQ(lstm.kernels.size(), 1u);
  const loop::Kernel& k = lstm.kernels[0].kernel;
  const std::string& rolled = lstm.rolled;
  ASSERT_NE(rolled.find("(in repetition r of "), std::string::npos) << rolled;
  CudaEmitOptions o;
  o.outlining = StageOutlining::Always;
  const SourceMap rolled_map = emit_cuda_mapped(k, o).map;
  o.roll = false;
  const SourceMap unrolled_map = emit_cuda_mapped(k, o).map;
  std::set<int> rolled_stages, unrolled_stages;
  for (const SourceSpan& s : rolled_map.spans) rolled_stages.insert(s.stage);
  for (const SourceSpan& s : unrolled_map.spans) unrolled_stages.insert(s.stage);
  EXPECT_EQ(rolled_stages, unrolled_stages);
  EXPECT_EQ(static_cast<size_t>(*rolled_stages.rbegin() + 1), k.stages.size());
  // A middle step's hidden state: found at a call inside a loop.
  const std::string middle = "/lstm/LSTM/d0/t8/h";
  std::vector<const SourceSpan*> at = rolled_map.spans_of_te(middle);
  ASSERT_FALSE(at.empty());
  const std::vector<std::string> lines = lines_of(rolled);
  EXPECT_NE(lines[size_t(at[0]->first_line - 1)].find("(in repetition"), std::string::npos)
      << lines[size_t(at[0]->first_line - 1)];
}

}  // namespace
}  // namespace souffle::codegen
