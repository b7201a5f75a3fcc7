#include "core/session/sass_report.h"

#include <fmt/format.h>

#include "core/codegen/wgmma_ptx.h"
#include "core/loop/mutator.h"

namespace souffle {

std::vector<StageSass> stage_expectations(const loop::Kernel& k) {
  std::vector<StageSass> out(k.stages.size());
  for (size_t i = 0; i < out.size(); ++i) {
    out[i].stage = static_cast<int>(i);
    out[i].name = k.stages[i].name;
  }
  loop::for_each_stmt(k.body, [&](const loop::Stmt& x) {
    const loop::Stage* g = x.as<loop::Stage>();
    if (!g || g->index < 0 || static_cast<size_t>(g->index) >= out.size()) return;
    StageSass& st = out[static_cast<size_t>(g->index)];
    loop::for_each_stmt(g->body, [&](const loop::Stmt& y) {
      st.tensor_core |= y.kind() == loop::StmtKind::FragmentMma ||
                        y.kind() == loop::StmtKind::MmaSync || y.kind() == loop::StmtKind::WgmmaMma;
      st.async_copy |= y.kind() == loop::StmtKind::AsyncCopy;
    });
  });
  return out;
}

void mark_mma_source(std::vector<StageSass>& stages, const std::string& cuda,
                     const codegen::SourceMap& cuda_map) {
  std::vector<std::string> lines;
  for (size_t from = 0, to; from <= cuda.size(); from = to + 1) {
    to = cuda.find('\n', from);
    if (to == std::string::npos) to = cuda.size();
    lines.push_back(cuda.substr(from, to - from));
  }
  std::vector<bool> has(stages.size(), false);
  for (const codegen::SourceSpan& sp : cuda_map.spans) {
    if (sp.stage < 0 || static_cast<size_t>(sp.stage) >= has.size()) continue;
    for (int l = sp.first_line; l <= sp.last_line && static_cast<size_t>(l) <= lines.size(); ++l) {
      const std::string& t = lines[static_cast<size_t>(l - 1)];
      if (t.find("mma_sync") != std::string::npos || t.find("mma.sync") != std::string::npos ||
          t.find("wgmma") != std::string::npos) {
        has[static_cast<size_t>(sp.stage)] = true;
        break;
      }
    }
  }
  for (size_t i = 0; i < stages.size(); ++i) stages[i].mma_in_source = has[i];
}

codegen::SourceMap map_sass(const std::vector<int>& lines, const codegen::SourceMap& cuda_map) {
  codegen::SourceMap m;
  for (size_t i = 0; i < lines.size(); ++i) {
    const codegen::SourceSpan* s = lines[i] > 0 ? cuda_map.at_line(lines[i]) : nullptr;
    if (!s) continue;
    const int line = static_cast<int>(i) + 1;
    if (!m.spans.empty() && m.spans.back().stage == s->stage && m.spans.back().tes == s->tes &&
        m.spans.back().last_line == line - 1) {
      m.spans.back().last_line = line;
      continue;
    }
    codegen::SourceSpan span = *s;
    span.first_line = span.last_line = line;
    m.spans.push_back(std::move(span));
  }
  return m;
}

KernelSass sass_of_result(const loop::Kernel& k, const codegen::SourceMap& cuda_map,
                          const std::string& source_name, const gpu::CompileResult& result) {
  return sass_of_result(stage_expectations(k), k.name, cuda_map, source_name, result);
}

KernelSass sass_of_result(std::vector<StageSass> stages, const std::string& entry,
                          const codegen::SourceMap& cuda_map, const std::string& source_name,
                          const gpu::CompileResult& result) {
  KernelSass s;
  s.kernel = entry;
  s.arch = result.arch;
  s.stages = std::move(stages);
  if (!result.ok) {
    s.error = "the kernel did not compile for " + result.arch;
    return s;
  }
  for (const gpu::KernelResources& r : result.kernels)
    s.spill_bytes = std::max(s.spill_bytes, r.spill_store_bytes + r.spill_load_bytes);
  const gpu::Disassembly d = gpu::disassemble(result.cubin, source_name);
  if (!d.ok) {
    s.error = d.error;
    return s;
  }
  s.ok = true;
  s.mix = d.listing.mix;
  for (const gpu::SassFunction& f : d.listing.functions) {
    if (s.registers == 0 || f.name == entry) s.registers = std::max(s.registers, f.registers);
    for (const gpu::SassInstruction& i : f.code) {
      const codegen::SourceSpan* span = i.line > 0 ? cuda_map.at_line(i.line) : nullptr;
      if (span && span->stage >= 0 && static_cast<size_t>(span->stage) < s.stages.size())
        s.stages[static_cast<size_t>(span->stage)].mix.add(i.opcode);
      else
        s.outside.add(i.opcode);
    }
  }
  // ptxas' count where the cubin has none (sm_90 cubins carry no SHI_REGISTERS).
  if (const gpu::KernelResources* r = result.find_kernel(entry); r && s.registers == 0)
    s.registers = r->registers;
  s.text = gpu::sass_text(d.listing, &s.cuda_lines);
  s.map = map_sass(s.cuda_lines, cuda_map);
  return s;
}

KernelSass sass_of(const CompiledKernel& ck, const std::string& arch, bool use_cache) {
  KernelSass s;
  s.kernel = ck.name;
  s.arch = arch;
  if (ck.cuda.empty()) {
    s.error = ck.error.empty() ? "no CUDA C for this kernel" : ck.error;
    s.stages = stage_expectations(ck.kernel);
    return s;
  }
  gpu::CompileOptions o;
  o.arch = codegen::wgmma_target_arch(arch, ck.cuda);  // the Hopper mainloop needs sm_90a
  o.line_info = true;
  o.use_cache = use_cache;
  // The register cap the kernel was compiled under is in its source (__maxnreg__).
  const std::string name = ck.name + ".cu";
  const gpu::CompileResult r = gpu::compile_cuda(ck.cuda, name, o);
  if (!r.ok) {
    s.error = r.error.empty() ? r.log : r.error;
    s.stages = stage_expectations(ck.kernel);
    return s;
  }
  const codegen::SourceMap& map = ck.cuda_map;
  KernelSass out = sass_of_result(ck.kernel, map, name, r);
  mark_mma_source(out.stages, ck.cuda, map);
  return out;
}

std::vector<std::vector<KernelSass>> sass_of_all(const std::vector<CompiledKernel>& kernels,
                                                 const std::vector<std::string>& archs,
                                                 bool use_cache) {
  std::vector<std::string> sm;
  for (const std::string& a : archs)
    if (a.rfind("sm_", 0) == 0) sm.push_back(a);
  std::vector<gpu::CompileJob> jobs;
  std::vector<std::pair<size_t, size_t>> where;
  std::vector<std::vector<KernelSass>> out(kernels.size());
  for (size_t i = 0; i < kernels.size(); ++i) {
    out[i].resize(sm.size());
    for (size_t a = 0; a < sm.size(); ++a) {
      KernelSass& s = out[i][a];
      s.kernel = kernels[i].name;
      s.arch = sm[a];
      s.stages = stage_expectations(kernels[i].kernel);
      if (kernels[i].cuda.empty()) {
        s.error = kernels[i].error.empty() ? "no CUDA C for this kernel" : kernels[i].error;
        continue;
      }
      gpu::CompileJob j;
      j.source = kernels[i].cuda;
      j.name = kernels[i].name + ".cu";
      j.options.arch = codegen::wgmma_target_arch(sm[a], kernels[i].cuda);
      j.options.line_info = true;
      j.options.use_cache = use_cache;
      jobs.push_back(std::move(j));
      where.emplace_back(i, a);
    }
  }
  const std::vector<gpu::CompileResult> results = gpu::compile_cuda_many(jobs);
  for (size_t r = 0; r < results.size(); ++r) {
    const auto [i, a] = where[r];
    const CompiledKernel& ck = kernels[i];
    if (!results[r].ok) {
      out[i][a].error = results[r].error.empty() ? results[r].log : results[r].error;
      continue;
    }
    const codegen::SourceMap& map = ck.cuda_map;
    out[i][a] = sass_of_result(ck.kernel, map, jobs[r].name, results[r]);
    mark_mma_source(out[i][a].stages, ck.cuda, map);
  }
  return out;
}

nlohmann::json sass_mix_json(const gpu::SassMix& m) {
  return {{"total", m.total},
          {"mma", m.mma},
          {"async_copy", m.async_copy},
          {"ldsm", m.ldsm},
          {"bar", m.bar},
          {"local_load", m.local_load},
          {"local_store", m.local_store}};
}

nlohmann::json sass_json(const KernelSass& s) {
  nlohmann::json j = {{"arch", s.arch}, {"ok", s.ok}};
  if (!s.ok) {
    j["error"] = s.error;
    return j;
  }
  j["registers"] = s.registers;
  j["spill_bytes"] = s.spill_bytes;
  j["mix"] = sass_mix_json(s.mix);
  nlohmann::json stages = nlohmann::json::array();
  for (const StageSass& st : s.stages)
    stages.push_back({{"stage", st.stage},
                      {"name", st.name},
                      {"tensor_core", st.tensor_core},
                      {"async_copy", st.async_copy},
                      {"mma_in_source", st.mma_in_source},
                      {"mix", sass_mix_json(st.mix)}});
  j["stages"] = stages;
  j["outside"] = sass_mix_json(s.outside);
  return j;
}

std::vector<std::string> sass_problems(const KernelSass& s) {
  std::vector<std::string> out;
  if (!s.ok) {
    out.push_back(fmt::format("{} {}: no SASS: {}", s.kernel, s.arch, s.error));
    return out;
  }
  for (const StageSass& st : s.stages) {
    if (!st.tensor_core) continue;
    // A stage that calls the function of an earlier stage of the same code has its MMAs there.
    if (st.mix.mma == 0 && st.mma_in_source)
      out.push_back(
          fmt::format("{} {} stage {} ({}): computes with tensor cores in its loop IR "
                      "but has no MMA instruction",
                      s.kernel, s.arch, st.stage, st.name));
    if (st.async_copy && st.mix.async_copy == 0 && st.mma_in_source)
      out.push_back(
          fmt::format("{} {} stage {} ({}): copies with cp.async in its loop IR but has "
                      "no LDGSTS/UTMALDG instruction",
                      s.kernel, s.arch, st.stage, st.name));
  }
  bool tensor_core = false;
  for (const StageSass& st : s.stages) {
    tensor_core |= st.tensor_core;
    if (st.tensor_core && st.mix.local_load + st.mix.local_store > 0)
      out.push_back(fmt::format("{} {} stage {} ({}): {} local-memory loads and {} stores",
                                s.kernel, s.arch, st.stage, st.name, st.mix.local_load,
                                st.mix.local_store));
  }
  if (tensor_core && s.spill_bytes > 0)
    out.push_back(fmt::format("{} {}: ptxas spills {} bytes", s.kernel, s.arch, s.spill_bytes));
  return out;
}

}  // namespace souffle
