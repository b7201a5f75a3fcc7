#include "core/session/compile.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <sstream>

#include "core/codegen/codegen_cuda.h"
#include "core/codegen/wgmma_ptx.h"
#include "core/gpu/lto.h"
#include "core/session/kernel_dedup.h"
#include "core/session/pipeline.h"
#include "core/session/timeline.h"
#include "core/session/verify_kernels.h"
#include "core/support/cancel.h"
#include "core/support/error.h"
#include "core/support/fault.h"
#include "core/support/thread_pool.h"

namespace souffle {
namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

std::vector<std::string> split_lines(const std::string& s) {
  std::vector<std::string> lines;
  std::istringstream in(s);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

/// Line numbers (1-based) that NVRTC's log reports errors at: "file.cu(42): error: ...".
std::vector<int> error_lines(const std::string& log) {
  std::set<int> found;
  for (size_t open = log.find('('); open != std::string::npos; open = log.find('(', open + 1)) {
    size_t end = open + 1;
    while (end < log.size() && std::isdigit(static_cast<unsigned char>(log[end]))) ++end;
    if (end == open + 1 || end - open > 10) continue;
    auto follows = [&](const std::string& w) { return log.compare(end, w.size(), w) == 0; };
    if (follows("): error") || follows("): catastrophic error"))
      found.insert(std::stoi(log.substr(open + 1, end - open - 1)));
  }
  return {found.begin(), found.end()};
}

/// The stage whose lines hold source line `line` (1-based) of `ck`'s CUDA C, as the emitter
/// recorded it (CompiledKernel::cuda_map), with its TEs: "stage 2 `stage2_softmax` (TEs: max_0
/// <- /Softmax (Softmax))", or "" outside every stage.
std::string stage_at(const CompiledKernel& ck, int line) {
  const codegen::SourceSpan* span = ck.cuda_map.at_line(line);
  if (!span || span->stage < 0 || static_cast<size_t>(span->stage) >= ck.kernel.stages.size())
    return "";
  const loop::StageInfo& info = ck.kernel.stages[static_cast<size_t>(span->stage)];
  std::string tes;
  for (size_t j = 0; j < info.tes.size(); ++j) {
    std::string t = info.tes[j];
    if (j < info.origins.size() && !info.origins[j].node.empty())
      t += " <- " + info.origins[j].node + " (" + info.origins[j].op_type + ")";
    else if (j < info.origins.size() && !info.origins[j].op_type.empty())
      t += " <- " + info.origins[j].op_type;
    tes += (tes.empty() ? "" : "; ") + t;
  }
  const std::string head = "stage " + std::to_string(span->stage) + " `" + info.name + "`";
  return tes.empty() ? head : head + " (TEs: " + tes + ")";
}

/// "sm_80" for compute capability "8.0".
std::string arch_of(const std::string& compute_capability) {
  std::string digits;
  for (char c : compute_capability)
    if (c != '.') digits += c;
  return digits;
}

std::string arch_digits(const std::string& arch) {
  size_t p = arch.find('_');
  std::string d = p == std::string::npos ? arch : arch.substr(p + 1);
  while (!d.empty() && std::isalpha(static_cast<unsigned char>(d.back()))) d.pop_back();
  return d;
}

/// The NVRTC target for `arch` of a kernel's `source`: warpgroup MMA (the Hopper mainloop) needs
/// the architecture-specific sm_90a (compute_90a); any other source compiles for `arch` itself.
std::string target_arch(const std::string& arch, const std::string& source) {
  return codegen::wgmma_target_arch(arch, source);
}

}  // namespace

std::vector<CompiledKernel> build_compiled_kernels(
    const plan::FusionPlan& plan, const schedule::PlanPricer* pricer, schedule::SyncMode sync,
    const std::atomic<bool>* cancel, const std::function<void(const std::string&)>& building,
    const std::vector<int>& only) {
  // The plan's schedule configuration and build options (plan_build), as its pricing built
  // them: under rules and unfused a partition that would need a grid barrier becomes several
  // launches (kernelN.0, kernelN.1, ...).
  PlanBuild b = plan_build(plan);
  b.options.sync = sync;
  // The pricer built its kernels in the plan's sync mode.
  if (sync != plan.sync) pricer = nullptr;
  b.options.cancel = cancel;
  b.options.starting = building;
  const schedule::ScheduleConfig& config = b.config;
  const KernelBuildOptions& bo = b.options;
  std::vector<CompiledKernel> out;
  auto take = [&](loop::KernelSet& ks) {
    for (loop::Kernel& k : ks.kernels) {
      CompiledKernel ck;
      ck.partition = kernel_partition(k.name);
      SOUFFLE_CHECK(ck.partition >= 0, "kernel " + k.name + " names no partition");
      ck.name = k.name;
      ck.kernel = std::move(k);
      out.push_back(std::move(ck));
    }
  };
  auto failed = [&](const plan::Partition& p, const KernelBuildError& e) {
    CompiledKernel ck;
    ck.partition = p.id;
    ck.name = "kernel" + std::to_string(p.id);
    ck.error = std::string("cannot build ") + e.what();
    out.push_back(std::move(ck));
  };
  // A partition with no TE has no kernel; one left out by `only` is not built.
  auto any_te = [&only](const plan::Partition& p) {
    if (!only.empty() && std::find(only.begin(), only.end(), p.id) == only.end()) return false;
    for (const plan::Stage& st : p.stages)
      if (!st.tes.empty()) return true;
    return false;
  };
  // The kernels the pricer built for each partition (built now where it kept none).
  if (pricer) {
    for (const plan::Partition& p : plan.partitions) {
      if (!any_te(p)) continue;
      check_cancel(cancel, "building the kernels");
      if (building) building("kernel" + std::to_string(p.id));
      try {
        loop::KernelSet ks = pricer->kernels(plan, p);
        take(ks);
      } catch (const KernelBuildError& e) {
        failed(p, e);
      }
    }
    return out;
  }
  // The whole plan at once is the common case; when one partition cannot be built, each is
  // built alone so that the others still get their kernels; `only` is built that way too.
  if (only.empty()) {
    try {
      loop::KernelSet ks = build_plan_kernels(plan, config, bo);
      take(ks);
      return out;
    } catch (const KernelBuildError&) {
      out.clear();
    }
  }
  plan::FusionPlan one;
  one.program = plan.program;
  one.index = plan::index_of(plan);  // indexed once, not per partition
  one.strategy = plan.strategy;
  one.gpu = plan.gpu;
  one.gpu_spec = plan.gpu_spec;
  one.precision = plan.precision;
  for (const plan::Partition& p : plan.partitions) {
    if (!any_te(p)) continue;
    one.partitions = {p};
    try {
      loop::KernelSet ks = build_plan_kernels(one, config, bo);
      take(ks);
    } catch (const KernelBuildError& e) {
      failed(p, e);
    }
  }
  return out;
}

void emit_compiled_kernels(std::vector<CompiledKernel>& out, codegen::StageOutlining outlining,
                           const std::atomic<bool>* cancel) {
  for (size_t i = 0; i < out.size(); ++i) {
    check_cancel(cancel, "emitting the kernels");
    CompiledKernel& ck = out[i];
    if (!ck.error.empty()) continue;
    ck.launch = ck.kernel.launch;
    try {
      loop::KernelSet one;
      one.kernels = {ck.kernel};
      ck.name = codegen::cuda_kernel_names(one)[0];
      codegen::CudaEmitOptions eo;
      eo.outlining = outlining;
      fault::point("compile.emit");
      ck.emit_source(eo);
    } catch (const std::logic_error&) {
      throw;  // the emitter or its verifier met a bug: not one kernel's error
    } catch (const std::exception& e) {
      ck.error = ck.name + ": cannot emit CUDA: " + e.what();
    }
  }
}

void count_programs(const std::vector<CompiledKernel>& kernels, int& programs, int& from_cache) {
  programs = from_cache = 0;
  for (size_t i = 0; i < kernels.size(); ++i) {
    const CompiledKernel& k = kernels[i];
    if (k.per_arch.empty() || (k.image >= 0 && k.image != static_cast<int>(i))) continue;
    bool cached = true;
    for (const gpu::CompileResult& r : k.per_arch) cached &= r.from_cache;
    ++programs;
    from_cache += cached ? 1 : 0;
  }
}

void CompiledKernel::emit_source(const codegen::CudaEmitOptions& options) {
  codegen::MappedText m = codegen::emit_cuda_mapped(kernel, options);
  cuda = std::move(m.text);
  cuda_map = std::move(m.map);
}

int CompiledKernel::max_registers() const {
  int r = 0;
  for (const gpu::CompileResult& c : per_arch)
    if (const gpu::KernelResources* kr = c.find_kernel(name)) r = std::max(r, kr->registers);
  return r;
}

int64_t CompiledKernel::spill_bytes() const {
  int64_t s = 0;
  for (const gpu::CompileResult& c : per_arch)
    if (const gpu::KernelResources* kr = c.find_kernel(name))
      s = std::max(s, kr->spill_store_bytes + kr->spill_load_bytes);
  return s;
}

const char* separate_compile_name(SeparateCompile s) {
  switch (s) {
    case SeparateCompile::Objects:
      return "objects";
    case SeparateCompile::Lto:
      return "lto";
    case SeparateCompile::Whole:
      return "whole";
  }
  return "objects";
}

std::optional<SeparateCompile> parse_separate_compile(const std::string& s) {
  for (SeparateCompile v : {SeparateCompile::Objects, SeparateCompile::Lto, SeparateCompile::Whole})
    if (s == separate_compile_name(v)) return v;
  return std::nullopt;
}

void check_arch(const std::string& arch) {
  if (!gpu::is_nvrtc_arch(arch))
    throw UserError("--arch " + arch + ": not an NVRTC target (sm_XX or compute_XX, e.g. sm_80)");
}

namespace {
std::string error_excerpt(const std::string& source, const std::string& log, int context,
                          const std::function<std::string(int)>& stage_at_line) {
  std::string out = log;
  if (!out.empty() && out.back() != '\n') out += '\n';
  std::vector<std::string> lines = split_lines(source);
  const int n = static_cast<int>(lines.size());
  int shown_to = 0;
  for (int e : error_lines(log)) {
    int from = std::max({1, e - context, shown_to + 1}), to = std::min(n, e + context);
    if (from > to) continue;
    const std::string stage = stage_at_line ? stage_at_line(e) : std::string();
    out += "--- line " + std::to_string(e) + (stage.empty() ? "" : ", in " + stage) + "\n";
    for (int i = from; i <= to; ++i) {
      std::string num = std::to_string(i);
      out += (i == e ? ">" : " ") + std::string(num.size() < 5 ? 5 - num.size() : 0, ' ') + num +
             " | " + lines[static_cast<size_t>(i - 1)] + "\n";
    }
    shown_to = to;
  }
  return out;
}
}  // namespace

std::string compile_error_excerpt(const std::string& source, const std::string& log, int context) {
  return error_excerpt(source, log, context, {});
}

std::string compile_error_excerpt(const CompiledKernel& ck, const std::string& log, int context) {
  return error_excerpt(ck.cuda, log, context, [&ck](int line) { return stage_at(ck, line); });
}

namespace {
/// Fills co_resident and the launch errors of kernels `which` from their compiled resources.
/// With `capped`, a cooperative kernel that would fit under a register cap is listed there with
/// the cap instead of failing.
void check_resources(std::vector<CompiledKernel>& kernels, const std::vector<size_t>& which,
                     const gpu::GpuSpec& gpu, std::vector<size_t>* capped, std::vector<int>* caps);
}  // namespace

namespace {
/// The register cap under which `ck`'s cooperative grid is co-resident on `gpu` where it is not
/// at 255 registers per thread (the most a thread has), from the kernel's block and dynamic
/// shared memory (ptxas may add static shared memory: check_resources then caps it further);
/// 0 for a kernel that needs none, or that no cap fits.
int first_register_cap(const CompiledKernel& ck, const gpu::GpuSpec& gpu) {
  if (!ck.launch.cooperative || gpu.sm_count == 0) return 0;
  const int block = static_cast<int>(ck.launch.block_x);
  const int64_t smem = ck.launch.dynamic_shared_bytes;
  if (gpu::occupancy(gpu, block, 255, smem).total_blocks >= ck.launch.grid_x) return 0;
  for (int r = 254; r >= 32; --r)
    if (gpu::occupancy(gpu, block, r, smem).total_blocks >= ck.launch.grid_x) return r;
  return 0;
}

/// The most registers a stage function of `ck` compiled on its own may take: the kernel's cap
/// (in its source, or `option_cap`, NVRTC's option), else the most one block of its size can
/// have on `gpu` (255 without one). The linked kernel takes the most of its functions'.
int function_register_cap(const CompiledKernel& ck, int option_cap, const gpu::GpuSpec& gpu) {
  if (ck.register_cap > 0) return ck.register_cap;
  if (option_cap > 0) return option_cap;
  const int block = static_cast<int>(ck.launch.block_x);
  for (int r = 255; gpu.sm_count > 0 && r >= 32; --r)
    if (gpu::occupancy(gpu, block, r, ck.launch.dynamic_shared_bytes).blocks_per_sm > 0) return r;
  return 255;
}

/// How `ck` is emitted: outlined where SeparateCompile::Lto links it.
codegen::StageOutlining lto_outlining(const CompiledKernel& ck, const CompileOptions& options) {
  if (options.separate == SeparateCompile::Lto &&
      options.outlining == codegen::StageOutlining::Auto &&
      ck.kernel.stages.size() >= static_cast<size_t>(kLtoMinStages))
    return codegen::StageOutlining::Always;
  return options.outlining;
}
}  // namespace

double compile_kernels(std::vector<CompiledKernel>& kernels, const gpu::GpuSpec& gpu,
                       const CompileOptions& options) {
  for (const std::string& a : options.archs) check_arch(a);
  // Separate compilation needs stage functions: kernels of many stages are emitted outlined
  // (the source a bundle writes is then this one).
  for (CompiledKernel& ck : kernels) {
    if (options.separate != SeparateCompile::Lto || !ck.ok() || !ck.kernel.body.defined() ||
        lto_outlining(ck, options) == options.outlining)
      continue;
    try {
      codegen::CudaEmitOptions eo;
      eo.outlining = lto_outlining(ck, options);
      fault::point("compile.lto_outline");
      ck.emit_source(eo);
    } catch (const std::logic_error&) {
      throw;  // a bug in outlining is not a reason to compile the kernel whole
    } catch (const std::exception&) {
      // Kept as emitted: compiled whole.
    }
  }
  std::unique_ptr<ThreadPool> pool;
  if (options.threads > 0) pool = std::make_unique<ThreadPool>(options.threads);
  double ms = 0;
  // Compiles the kernels `which` for every arch, each capped at `caps[i]` registers (0: none).
  // Kernels of the same canonical code (and cap) are one program, compiled once under its
  // neutral entry name; a program that fails is compiled again kernel by kernel under the
  // kernels' own names, so the error shows the kernel's own source.
  auto compile_alone = [&](const std::vector<size_t>& which, const std::vector<int>& caps) {
    struct Program {
      std::string source, entry, label;
      int cap = 0;
      std::vector<size_t> kernels;
    };
    std::vector<Program> programs;
    std::map<std::pair<std::string, int>, size_t> by_code;
    for (size_t w = 0; w < which.size(); ++w) {
      CompiledKernel& ck = kernels[which[w]];
      Program p;
      p.cap = caps[w];
      if (options.dedup) {
        CanonicalKernel c = ck.kernel.body.defined() ? canonical_kernel(ck.kernel, ck.name, ck.cuda)
                                                     : canonical_kernel(ck.cuda, ck.name, {});
        auto [it, fresh] = by_code.emplace(std::make_pair(c.source, p.cap), programs.size());
        if (!fresh) {
          programs[it->second].kernels.push_back(which[w]);
          continue;
        }
        p.source = std::move(c.source);
        p.entry = std::move(c.entry);
      } else {
        p.source = ck.cuda;
        p.entry = ck.name;
      }
      p.kernels = {which[w]};
      programs.push_back(std::move(p));
    }
    for (Program& p : programs)
      p.label =
          kernels[p.kernels.front()].name +
          (p.kernels.size() > 1 ? " (+" + std::to_string(p.kernels.size() - 1) + " sharing)" : "");
    const size_t archs = options.archs.size();
    auto job = [&](const std::string& source, const std::string& name, const std::string& arch,
                   int cap) {
      gpu::CompileJob j;
      j.source = source;
      j.name = name + ".cu";
      j.options.arch = target_arch(arch, source);
      j.options.max_registers = cap;
      j.options.use_cache = options.use_cache;
      return j;
    };
    std::vector<gpu::CompileJob> jobs;
    for (const Program& p : programs)
      for (const std::string& arch : options.archs)
        jobs.push_back(job(p.source, kernels[p.kernels.front()].name, arch, p.cap));
    std::vector<gpu::CompileResult> results(jobs.size());
    // Progress per program: told when its last arch is done.
    std::mutex mu;
    std::vector<int> left(programs.size(), static_cast<int>(archs));
    std::vector<double> program_ms(programs.size(), 0);
    CompileProgress prog;
    prog.total = static_cast<int>(programs.size());
    auto t0 = std::chrono::steady_clock::now();
    ThreadPool& tp = pool ? *pool : ThreadPool::global();
    // Programs with stage functions compiled separately compile one after the other, each
    // running its own programs side by side on the pool; the others side by side as they are.
    std::vector<size_t> plain, separate;
    std::vector<char> linked(jobs.size(), 0), is_separate(jobs.size(), 0);
    std::vector<std::string> why_whole(jobs.size());
    for (size_t at = 0; at < jobs.size(); ++at) {
      is_separate[at] =
          options.separate != SeparateCompile::Whole &&
          kernels[programs[at / archs].kernels.front()].cuda_map.calls_stage_functions;
      (is_separate[at] ? separate : plain).push_back(at);
    }
    auto run_one = [&](const size_t at) {
      // Once cancelled, the programs not yet started are not compiled (thrown after the pool).
      if (options.cancel && options.cancel->load(std::memory_order_relaxed)) return;
      {
        const gpu::CompileJob& j = jobs[at];
        auto tj = std::chrono::steady_clock::now();
        if (is_separate[at]) {
          gpu::SeparateOptions so;
          so.link = options.separate == SeparateCompile::Lto ? gpu::SeparateLink::LtoIr
                                                             : gpu::SeparateLink::Objects;
          so.function_max_registers = function_register_cap(
              kernels[programs[at / archs].kernels.front()], programs[at / archs].cap, gpu);
          gpu::SeparateInfo info;
          // The program's text keeps the lines of its first kernel's (kernel_dedup.h), so the
          // kernel's layout places its functions in it.
          results[at] = gpu::compile_cuda_separate(
              j.source, kernels[programs[at / archs].kernels.front()].cuda_map.functions, j.name,
              j.options, so, &info);
          linked[at] = info.linked ? 1 : 0;
          why_whole[at] = info.why_whole;
        } else {
          results[at] = gpu::compile_cuda(j.source, j.name, j.options);
        }
        const double jms = ms_since(tj);
        std::lock_guard<std::mutex> lock(mu);
        const size_t pi = at / archs;
        program_ms[pi] += jms;
        if (--left[pi] > 0) return;
        bool cached = true;
        for (size_t a = 0; a < archs; ++a) cached &= results[pi * archs + a].from_cache;
        ++prog.done;
        prog.from_cache += cached ? 1 : 0;
        prog.elapsed_ms = ms_since(t0);
        prog.program = programs[pi].label;
        prog.program_ms = program_ms[pi];
        if (program_ms[pi] > prog.slowest_ms) {
          prog.slowest_ms = program_ms[pi];
          prog.slowest = programs[pi].label;
        }
        if (options.progress) options.progress(prog);
      }
    };
    for (size_t at : separate) run_one(at);
    tp.parallel_for(static_cast<int64_t>(plain.size()), 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) run_one(plain[static_cast<size_t>(i)]);
    });
    ms += ms_since(t0);
    check_cancel(options.cancel, "compiling the kernels");
    std::vector<size_t> again;
    std::vector<int> again_caps;
    for (size_t pi = 0; pi < programs.size(); ++pi) {
      const Program& p = programs[pi];
      bool ok = true;
      for (size_t a = 0; a < archs; ++a) ok &= results[pi * archs + a].ok;
      if (!ok && options.dedup) {
        for (size_t k : p.kernels) {
          again.push_back(k);
          again_caps.push_back(p.cap);
        }
        continue;
      }
      for (size_t k : p.kernels) {
        CompiledKernel& ck = kernels[k];
        ck.per_arch.clear();
        ck.entry = p.entry;
        ck.image = static_cast<int>(p.kernels.front());
        ck.separately_linked = archs > 0;
        ck.compiled_whole_because.clear();
        for (size_t a = 0; a < archs; ++a) {
          ck.separately_linked &= linked[pi * archs + a] != 0;
          const std::string& why = why_whole[pi * archs + a];
          if (is_separate[pi * archs + a] && !why.empty() && ck.compiled_whole_because.empty())
            ck.compiled_whole_because = options.archs[a] + ": " + why;
        }
        for (size_t a = 0; a < archs; ++a) {
          gpu::CompileResult r = results[pi * archs + a];
          // The kernel's resources under its own name as well as the image's entry.
          if (p.entry != ck.name)
            if (const gpu::KernelResources* kr = r.find_kernel(p.entry)) {
              gpu::KernelResources alias = *kr;
              alias.name = ck.name;
              r.kernels.push_back(alias);
            }
          ck.per_arch.push_back(std::move(r));
        }
      }
    }
    if (again.empty()) return;
    // Each failing kernel alone under its own name.
    std::vector<gpu::CompileJob> alone;
    for (size_t w = 0; w < again.size(); ++w)
      for (const std::string& arch : options.archs)
        alone.push_back(job(kernels[again[w]].cuda, kernels[again[w]].name, arch, again_caps[w]));
    auto t1 = std::chrono::steady_clock::now();
    std::vector<gpu::CompileResult> r2 = gpu::compile_cuda_many(alone, pool.get());
    ms += ms_since(t1);
    for (size_t w = 0; w < again.size(); ++w) {
      CompiledKernel& ck = kernels[again[w]];
      ck.per_arch.assign(r2.begin() + static_cast<std::ptrdiff_t>(w * archs),
                         r2.begin() + static_cast<std::ptrdiff_t>((w + 1) * archs));
      ck.entry = ck.name;
      ck.image = static_cast<int>(again[w]);
    }
  };
  // Batches of kernels in one translation unit each (uncapped kernels only).
  auto compile = [&](const std::vector<size_t>& which, const std::vector<int>& caps) {
    bool capped = std::any_of(caps.begin(), caps.end(), [](int c) { return c > 0; });
    if (options.batch <= 1 || capped || which.size() < 2) return compile_alone(which, caps);
    std::vector<std::vector<size_t>> batches;
    std::vector<gpu::CompileJob> jobs;
    std::vector<size_t> alone;
    for (size_t at = 0; at < which.size(); at += static_cast<size_t>(options.batch)) {
      std::vector<size_t> b(
          which.begin() + static_cast<std::ptrdiff_t>(at),
          which.begin() + static_cast<std::ptrdiff_t>(
                              std::min(which.size(), at + static_cast<size_t>(options.batch))));
      loop::KernelSet ks;
      for (size_t i : b) ks.kernels.push_back(kernels[i].kernel);
      // The unit must name each kernel as it is named alone, or resources cannot be matched.
      std::vector<std::string> names = codegen::cuda_kernel_names(ks);
      bool same = true;
      for (size_t w = 0; w < b.size(); ++w) same &= names[w] == kernels[b[w]].name;
      if (!same) {
        alone.insert(alone.end(), b.begin(), b.end());
        continue;
      }
      codegen::CudaEmitOptions eo;
      eo.outlining = options.outlining;
      std::string source = codegen::emit_cuda(ks, eo);
      for (const std::string& arch : options.archs) {
        gpu::CompileJob j;
        j.source = source;
        j.name = "batch" + std::to_string(batches.size()) + ".cu";
        j.options.arch = target_arch(arch, source);
        j.options.use_cache = options.use_cache;
        jobs.push_back(std::move(j));
      }
      batches.push_back(std::move(b));
    }
    auto t0 = std::chrono::steady_clock::now();
    std::vector<gpu::CompileResult> results = gpu::compile_cuda_many(jobs, pool.get());
    ms += ms_since(t0);
    const size_t archs = options.archs.size();
    for (size_t bi = 0; bi < batches.size(); ++bi) {
      bool ok = true;
      for (size_t a = 0; a < archs; ++a) ok &= results[bi * archs + a].ok;
      if (!ok) {
        alone.insert(alone.end(), batches[bi].begin(), batches[bi].end());
        continue;
      }
      for (size_t i : batches[bi]) {
        kernels[i].per_arch.clear();
        kernels[i].entry = kernels[i].name;
        kernels[i].image = static_cast<int>(i);
        for (size_t a = 0; a < archs; ++a) {
          gpu::CompileResult r = results[bi * archs + a];
          r.ptx.clear();
          r.cubin.clear();
          kernels[i].per_arch.push_back(std::move(r));
        }
      }
    }
    if (!alone.empty()) compile_alone(alone, std::vector<int>(alone.size(), 0));
  };
  std::vector<size_t> all, first_capped, rest;
  for (size_t i = 0; i < kernels.size(); ++i)
    if (kernels[i].ok()) all.push_back(i);
  // A cooperative grid that is co-resident only below the most registers a thread can have is
  // emitted under that cap from the start: compiled uncapped, a kernel that needs more would be
  // compiled a second time (the whole NVRTC run, the largest part of a cold compile).
  for (size_t i : all) {
    CompiledKernel& ck = kernels[i];
    if (!ck.kernel.body.defined()) {  // written by hand: capped by NVRTC's option, below
      rest.push_back(i);
      continue;
    }
    const int cap = first_register_cap(ck, gpu);
    if (cap > 0 && ck.register_cap != cap) {
      codegen::CudaEmitOptions eo;
      eo.outlining = lto_outlining(ck, options);
      eo.max_registers = cap;
      ck.emit_source(eo);
      ck.register_cap = cap;
    }
    (ck.register_cap > 0 ? first_capped : rest).push_back(i);
  }
  const std::vector<int> no_caps(all.size(), 0);
  if (first_capped.empty()) {
    compile(all, no_caps);
  } else if (options.batch <= 1) {
    compile_alone(all, no_caps);  // the capped and the others at once, in parallel
  } else {
    compile(rest, std::vector<int>(rest.size(), 0));
    compile_alone(first_capped, std::vector<int>(first_capped.size(), 0));  // a batch: uncapped
  }
  std::vector<size_t> capped;
  std::vector<int> caps;
  check_resources(kernels, all, gpu, &capped, &caps);
  // A cooperative grid that needs fewer registers per thread to be co-resident is compiled
  // again with that cap (ptxas may spill; correctness does not depend on residency otherwise).
  if (!capped.empty()) {
    // The cap goes into the source (__maxnreg__), which the PTX and a bundle's nvcc build
    // then keep; only a source without its loop-IR kernel (written by hand) is capped by
    // NVRTC's option alone.
    std::vector<int> option_caps(capped.size(), 0);
    for (size_t w = 0; w < capped.size(); ++w) {
      CompiledKernel& ck = kernels[capped[w]];
      if (!ck.kernel.body.defined()) {
        option_caps[w] = caps[w];
        continue;
      }
      codegen::CudaEmitOptions eo;
      eo.outlining = lto_outlining(ck, options);
      eo.max_registers = caps[w];
      ck.emit_source(eo);
    }
    // Set before compiling: a kernel compiled separately caps its functions with it.
    for (size_t w = 0; w < capped.size(); ++w) kernels[capped[w]].register_cap = caps[w];
    compile_alone(capped, option_caps);  // alone: a batch would be emitted again uncapped
    check_resources(kernels, capped, gpu, nullptr, nullptr);
  }
  return ms;
}

namespace {
void check_resources(std::vector<CompiledKernel>& kernels, const std::vector<size_t>& which,
                     const gpu::GpuSpec& gpu, std::vector<size_t>* capped, std::vector<int>* caps) {
  const std::string gpu_digits = arch_of(gpu.compute_capability);
  for (size_t idx : which) {
    CompiledKernel& ck = kernels[idx];
    if (!ck.ok()) continue;
    for (const gpu::CompileResult& r : ck.per_arch) {
      if (r.ok) continue;
      std::string stage;
      std::vector<int> at = error_lines(r.log);
      if (!at.empty()) stage = stage_at(ck, at.front());
      ck.error = ck.name + (stage.empty() ? "" : " (" + stage + ")") + ": NVRTC " + r.arch +
                 " failed:\n" + compile_error_excerpt(ck, r.log);
      break;
    }
    if (!ck.ok()) continue;
    // Registers of the arch the GPU runs, else the most any arch needs.
    const gpu::KernelResources* res = nullptr;
    for (const gpu::CompileResult& r : ck.per_arch)
      if (arch_digits(r.arch) == gpu_digits) res = r.find_kernel(ck.name);
    if (!res)
      for (const gpu::CompileResult& r : ck.per_arch)
        if (const gpu::KernelResources* kr = r.find_kernel(ck.name))
          if (!res || kr->registers > res->registers) res = kr;
    if (!res || gpu.sm_count == 0) continue;  // compute_XX only: no ptxas figures
    const int block = static_cast<int>(ck.launch.block_x);
    gpu::Occupancy occ = gpu::occupancy(gpu, block, res->registers,
                                        res->shared_bytes + ck.launch.dynamic_shared_bytes);
    ck.co_resident = occ.total_blocks;
    ck.co_resident_limit = occ.limited_by;
    if (occ.blocks_per_sm == 0)
      ck.error = ck.name + ": one block of " + std::to_string(block) + " threads (" +
                 std::to_string(res->registers) + " registers, " +
                 std::to_string(res->shared_bytes + ck.launch.dynamic_shared_bytes) +
                 " bytes of shared memory) does not fit on " + gpu.name + " (" + occ.limited_by +
                 ")";
    else if (ck.launch.cooperative && ck.launch.grid_x > occ.total_blocks) {
      int cap = 0;
      for (int r = res->registers - 1; capped && r >= 32 && cap == 0; --r)
        if (gpu::occupancy(gpu, block, r, res->shared_bytes + ck.launch.dynamic_shared_bytes)
                .total_blocks >= ck.launch.grid_x)
          cap = r;
      if (cap > 0) {
        capped->push_back(idx);
        caps->push_back(cap);
        continue;
      }
      ck.error = ck.name + ": cooperative grid of " + std::to_string(ck.launch.grid_x) +
                 " blocks exceeds the " + std::to_string(occ.total_blocks) +
                 " blocks co-resident on " + gpu.name + " (limited by " + occ.limited_by +
                 " with " + std::to_string(res->registers) + " registers per thread)";
      // Say why no register cap helps: what bounds the grid even at the fewest registers.
      const gpu::Occupancy best =
          gpu::occupancy(gpu, block, 32, res->shared_bytes + ck.launch.dynamic_shared_bytes);
      if (capped && best.total_blocks < ck.launch.grid_x)
        ck.error += "; no register cap helps: at 32 registers " +
                    std::to_string(best.total_blocks) + " blocks fit (limited by " +
                    best.limited_by + ", " +
                    std::to_string(res->shared_bytes + ck.launch.dynamic_shared_bytes) +
                    " bytes of shared memory per block)";
    }
  }
}

}  // namespace

CompileReport compile_plan(const plan::FusionPlan& plan, const CompileOptions& options) {
  for (const std::string& a : options.archs) check_arch(a);
  PipelineOptions po;
  po.gpu = !options.gpu.name.empty()    ? options.gpu
           : plan.gpu_spec.sm_count > 0 ? plan.gpu_spec
                                        : gpu::gpu_spec(plan.gpu);
  po.compile = options;
  po.until = Step::Compile;
  return std::move(run_pipeline(plan, po).kernels);
}

}  // namespace souffle
