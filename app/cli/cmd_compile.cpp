#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "app/cli/commands.h"
#include "app/cli/step_progress.h"
#include "core/loop/mutator.h"
#include "core/plan/plan.h"
#include "core/session/bundle.h"
#include "core/session/compile.h"
#include "core/session/load.h"
#include "core/session/pipeline.h"
#include "core/session/profile.h"
#include "core/session/sass_report.h"
#include "core/session/tune_measure.h"
#include "core/support/error.h"

namespace souffle::cli {

namespace {

std::vector<std::string> split_archs(const std::string& list) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    std::string a =
        list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (a.empty()) throw UserError("--arch " + list + ": an empty arch in the list");
    check_arch(a);
    out.push_back(a);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

/// Barrier statements between stages (outside every Stage node, read from the body itself):
/// what orders one stage, or one phase of a stage, after another.
void count_stage_barriers(const loop::Stmt& s, int& grid, int& block) {
  if (!s.defined()) return;
  switch (s.kind()) {
    case loop::StmtKind::GridBarrier:
      ++grid;
      break;
    case loop::StmtKind::BlockBarrier:
      ++block;
      break;
    case loop::StmtKind::Stage:
      break;
    case loop::StmtKind::For:
      count_stage_barriers(s.as<loop::For>()->body, grid, block);
      break;
    case loop::StmtKind::LetStmt:
      count_stage_barriers(s.as<loop::LetStmt>()->body, grid, block);
      break;
    case loop::StmtKind::Allocate:
      count_stage_barriers(s.as<loop::Allocate>()->body, grid, block);
      break;
    case loop::StmtKind::IfThenElse:
      count_stage_barriers(s.as<loop::IfThenElse>()->then_case, grid, block);
      count_stage_barriers(s.as<loop::IfThenElse>()->else_case, grid, block);
      break;
    case loop::StmtKind::Seq:
      for (const loop::Stmt& x : s.as<loop::Seq>()->stmts) count_stage_barriers(x, grid, block);
      break;
    default:
      break;
  }
}

/// The resources NVRTC reported for `plain` (the uninstrumented build of a kernel compiled
/// with --timeline) on `arch`; null when there is none.
const gpu::KernelResources* plain_resources(const CompiledKernel* plain, const std::string& arch) {
  if (!plain) return nullptr;
  for (const gpu::CompileResult& r : plain->per_arch)
    if (r.arch == arch && r.ok) return r.find_kernel(plain->image_entry());
  return nullptr;
}

/// "80" for "sm_80" / "compute_80" (what CMAKE_CUDA_ARCHITECTURES takes).
nlohmann::json kernel_json(const CompiledKernel& k, const CompiledKernel* plain = nullptr) {
  nlohmann::json per_arch = nlohmann::json::array();
  for (const gpu::CompileResult& r : k.per_arch) {
    nlohmann::json a = {{"arch", r.arch},
                        {"ok", r.ok},
                        {"ptx_bytes", r.ptx.size()},
                        {"compile_ms", r.compile_ms},
                        {"from_cache", r.from_cache}};
    if (const gpu::KernelResources* kr = r.find_kernel(k.name)) {
      a["registers"] = kr->registers;
      a["spills"] = kr->spill_store_bytes + kr->spill_load_bytes;
      a["smem"] = kr->shared_bytes;
      a["stack"] = kr->stack_bytes;
    }
    // --timeline: the same kernel without its records, beside it.
    if (const gpu::KernelResources* pr = plain_resources(plain, r.arch)) {
      a["plain_registers"] = pr->registers;
      a["plain_spills"] = pr->spill_store_bytes + pr->spill_load_bytes;
    }
    per_arch.push_back(a);
  }
  // What the merged kernel synchronizes (the plan counts grid syncs per dependent stage; the
  // kernel has only those its ownership proofs could not remove).
  int grid_barriers = 0, block_barriers = 0, flag_waits = 0;
  loop::for_each_stmt(k.kernel.body, [&](const loop::Stmt& s) {
    grid_barriers += s.kind() == loop::StmtKind::GridBarrier;
    block_barriers += s.kind() == loop::StmtKind::BlockBarrier;
    flag_waits += s.kind() == loop::StmtKind::FlagWait;
  });
  // The same split from the kernel's own record of its boundaries, by kind.
  int stage_grid = 0, stage_block = 0;
  count_stage_barriers(k.kernel.body, stage_grid, stage_block);
  nlohmann::json boundaries = {{"none", 0}, {"block", 0}, {"grid", 0}, {"launch", 0}, {"flags", 0}};
  for (const StageBoundary& b : k.kernel.boundaries)
    boundaries[boundary_kind_name(b.kind)] = boundaries[boundary_kind_name(b.kind)].get<int>() + 1;
  nlohmann::json j = {{"name", k.name},
                      {"partition", k.partition},
                      {"grid", k.launch.grid_x},
                      {"block", k.launch.block_x},
                      {"smem_bytes", k.launch.dynamic_shared_bytes},
                      {"cooperative", k.launch.cooperative},
                      {"stages", k.kernel.stages.size()},
                      {"grid_barriers", grid_barriers},
                      {"block_barriers", block_barriers},
                      {"flag_waits", flag_waits},
                      {"stage_grid_barriers", stage_grid},
                      {"stage_block_barriers", stage_block},
                      {"boundaries", boundaries},
                      {"co_resident", k.co_resident},
                      {"register_cap", k.register_cap},
                      {"entry", k.image_entry()},
                      {"image", k.image},
                      {"per_arch", per_arch}};
  if (!k.ok()) j["error"] = k.error;
  j["separately_linked"] = k.separately_linked;
  if (!k.compiled_whole_because.empty()) j["compiled_whole_because"] = k.compiled_whole_because;
  return j;
}

}  // namespace

int run_compile(const CompileCliOptions& o) {
  CompileOptions copts;
  // Kernels on the Hopper mainloop compile for sm_90a only: sm_80 is left out by default.
  copts.archs = split_archs(o.wgmma && o.archs == "sm_80,sm_90" ? std::string("sm_90") : o.archs);
  copts.threads = o.threads;
  if (o.batch < 1) throw UserError("--batch " + std::to_string(o.batch) + ": must be at least 1");
  if (o.batch > 1 && !o.out.empty())
    throw UserError(
        "--batch compiles kernels together, a bundle needs each alone: drop --batch or --out");
  copts.batch = o.batch;
  copts.use_cache = !o.no_cache;
  copts.dedup = !o.no_dedup;
  if (o.lto) {
    copts.separate = SeparateCompile::Lto;
  } else if (auto mode = parse_separate_compile(o.separate)) {
    copts.separate = *mode;
  } else {
    throw UserError("--separate " + o.separate + ": expected objects, lto or whole");
  }
  copts.timeline.enabled = o.timeline;
  schedule::parse_sync_mode(o.sync, copts.sync);
  PipelineOptions po;
  po.strategy = plan::parse_strategy(o.strategy);
  po.precision = gpu::parse_precision(o.precision);
  po.gpu = gpu::gpu_spec(o.gpu);
  copts.gpu = po.gpu;
  po.calibration = o.calibration;
  po.import.dims = parse_dims(o.common.dims);
  po.import.bind = parse_binds(o.common.binds);
  po.import.shapes = parse_shapes(o.common.shapes);
  // A short-lived process that never reads most weights: they stay in the file until read.
  po.import.defer_weights = true;
  po.until = Step::Compile;
  po.compile = copts;
  po.sync = copts.sync;  // the plan is priced with the kernels compile builds
  po.waves = !o.no_waves;
  po.weight_panels = !o.no_weight_panels;
  po.wgmma = o.wgmma;
  if (!o.decisions.empty()) po.decisions = plan::load_decisions(o.decisions);
  // --tune measure: the tuner's top candidates timed on the runner's GPU.
  std::unique_ptr<ProfileSession> session;
  std::unique_ptr<TileMeasurer> measurer;
  std::string tune_dir;
  if (o.tune == "measure") {
    if (o.tune_top < 1) throw UserError("--tune-top must be at least 1");
    ProfileOptions popt;
    popt.backend = "cuda";  // the emulator's CPU times never choose a GPU tile
    popt.runner = o.runner;
    popt.no_gpu_hint = "--tune model ranks the tiles without one";
    try {
      session = std::make_unique<ProfileSession>(popt);
    } catch (const UserError& e) {  // exit 2: no GPU or no runner
      throw UserError("--tune measure times GEMM tiles on a GPU: " + e.reason());
    }
    tune_dir = o.tune_dir;
    if (tune_dir.empty()) {
      std::string templ = (std::filesystem::temp_directory_path() / "souffle-tune-XXXXXX").string();
      if (!mkdtemp(templ.data())) throw UserError("cannot create a temporary folder");
      tune_dir = templ;
    }
    TileMeasureOptions mo;
    mo.arch = session->arch();
    mo.gpu = po.gpu;
    mo.precision = po.precision;
    mo.dir = tune_dir;
    ProfileSession* s = session.get();
    measurer = std::make_unique<TileMeasurer>(mo, [s](const std::vector<nlohmann::json>& reqs) {
      std::vector<nlohmann::json> answers;
      for (const nlohmann::json& r : reqs) answers.push_back(s->call(r));
      return answers;
    });
    po.tune_measure = measurer->fn();
    po.tune_top = static_cast<size_t>(o.tune_top);
  }
  PipelineResult run = [&] {
    // Its line is cleared (when it goes out of scope) before any output.
    StepProgress progress(o.common.quiet, po.until, plan::is_souffle(po.strategy));
    po.instrument = progress.instrument(std::move(po.instrument));
    if (progress.on())
      po.compile.progress = [&progress](const CompileProgress& c) {
        progress.say(fmt::format(
            "NVRTC: {} of {} programs, {:.1f} s; slowest {} ({:.1f} s){}", c.done, c.total,
            c.elapsed_ms / 1000, c.slowest, c.slowest_ms / 1000,
            c.from_cache ? fmt::format(", {} from the cache", c.from_cache) : std::string()));
      };
    progress.start();
    return run_pipeline(o.common.model, po);
  }();
  const LoadedModel& m = run.model;
  const plan::FusionPlan& p = run.plan;
  const CompileReport& rep = run.kernels;
  if (!o.decisions.empty()) plan::require_known_names(p, o.decisions);
  // --timeline: the kernels compiled again without records (the compile cache serves repeats),
  // so that each instrumented kernel's registers show beside the plain one's.
  CompileReport plain_rep;
  if (o.timeline && !copts.archs.empty()) {
    CompileOptions plain = po.compile;
    plain.timeline.enabled = false;
    plain.progress = nullptr;
    plain_rep = compile_plan(p, plain);
  }
  auto plain_of = [&](size_t i) -> const CompiledKernel* {
    return i < plain_rep.kernels.size() && plain_rep.kernels[i].name == rep.kernels[i].name
               ? &plain_rep.kernels[i]
               : nullptr;
  };

  BundleReport bundle;
  if (!o.out.empty())
    bundle = write_model_bundle(o.out, o.common.model, o.data_dir, p, rep, copts, po.import.dims,
                                o.common.binds, o.common.shapes);

  for (const CompiledKernel& k : rep.kernels)
    if (!k.ok()) std::cerr << "error: " << k.error << "\n";
  nlohmann::json tuned = nlohmann::json::array();
  if (measurer)
    for (const TileMeasurement& t : measurer->measurements()) {
      nlohmann::json c = nlohmann::json::array();
      for (size_t i = 0; i < t.tiles.size(); ++i)
        c.push_back({{"tile", t.tiles[i]}, {"us", t.us[i]}});
      tuned.push_back(
          {{"problem", t.problem}, {"timer", t.timer}, {"candidates", c}, {"note", t.note}});
    }

  // The SASS of every kernel by stage, and what a tensor-core stage's lacks.
  std::vector<std::vector<KernelSass>> sass;
  std::vector<std::string> sass_problem_lines;
  if (o.sass) {
    if (gpu::find_nvdisasm().empty()) throw UserError("--sass: " + gpu::nvdisasm_missing_message());
    sass = sass_of_all(rep.kernels, copts.archs, copts.use_cache);
    for (const std::vector<KernelSass>& per_arch : sass)
      for (const KernelSass& s : per_arch)
        for (const std::string& line : sass_problems(s)) sass_problem_lines.push_back(line);
  }

  if (o.common.json) {
    nlohmann::json j;
    j["model"] = o.common.model;
    j["strategy"] = plan::strategy_name(p.strategy);
    j["gpu"] = p.gpu;
    j["archs"] = copts.archs;
    nlohmann::json ks = nlohmann::json::array();
    for (size_t i = 0; i < rep.kernels.size(); ++i)
      ks.push_back(kernel_json(rep.kernels[i], plain_of(i)));
    for (size_t i = 0; i < sass.size(); ++i) {
      nlohmann::json a = nlohmann::json::array();
      for (const KernelSass& s : sass[i]) a.push_back(sass_json(s));
      ks[i]["sass"] = a;
    }
    if (o.sass) j["sass_problems"] = sass_problem_lines;
    j["kernels"] = ks;
    int barriers = 0;
    for (const nlohmann::json& k : ks) barriers += k["grid_barriers"].get<int>();
    j["launches"] = ks.size();
    j["grid_barriers"] = barriers;
    // The plan's figures, priced from these kernels (plan --json gives the same).
    j["plan"] = {{"kernels", p.kernels()},
                 {"launches", p.launches},
                 {"grid_syncs", p.grid_syncs},
                 {"dram_bytes", p.dram_bytes},
                 {"est_time_us", p.est_time_us},
                 {"cost_model", p.cost_model},
                 {"cost_constants", p.cost_constants}};
    j["errors"] = rep.errors;
    j["out"] = o.out;
    j["harness"] = bundle.harness;
    j["weights_bytes"] = bundle.weights_bytes;
    j["build_ms"] = rep.build_ms;
    j["compile_ms"] = rep.compile_ms;
    j["load_ms"] = m.load_ms;
    const CacheSummary cache = cache_summary(rep, copts.use_cache);
    j["cache"] = {{"enabled", cache.enabled},   {"dir", cache.dir},
                  {"kernels", cache.kernels},   {"kernels_from_cache", cache.kernels_from_cache},
                  {"compiles", cache.compiles}, {"compiles_from_cache", cache.from_cache},
                  {"programs", cache.programs}, {"programs_from_cache", cache.programs_from_cache}};
    // Launches sharing one compiled image: the kernels of each, by the first one's name.
    nlohmann::json shared = nlohmann::json::object();
    for (const CompiledKernel& k : rep.kernels)
      if (k.image >= 0 && static_cast<size_t>(k.image) < rep.kernels.size())
        shared[rep.kernels[static_cast<size_t>(k.image)].name].push_back(k.name);
    j["programs"] = cache.programs;
    int linked = 0;
    for (const CompiledKernel& k : rep.kernels) linked += k.separately_linked ? 1 : 0;
    j["separate"] = {{"mode", separate_compile_name(copts.separate)}, {"linked_kernels", linked}};
    j["images"] = shared;
    if (session)
      j["tune"] = {{"mode", "measure"},
                   {"device", session->device()},
                   {"arch", session->arch()},
                   {"dir", tune_dir},
                   {"problems", tuned}};
    std::cout << j.dump(2) << "\n";
  } else {
    std::cout << fmt::format("{:<14} {:>5} {:>7} {:>6} {:>9} {:>5} {:>11}", "kernel", "part",
                             "grid", "block", "smem", "coop", "co-resident");
    for (const std::string& a : copts.archs)
      std::cout << fmt::format("  {:>16}", a + " regs/spill");
    std::cout << "\n";
    int max_regs = 0;
    int64_t spills = 0;
    for (const CompiledKernel& k : rep.kernels) {
      std::cout << fmt::format("{:<14} {:>5} {:>7} {:>6} {:>9} {:>5} {:>11}", k.name, k.partition,
                               k.launch.grid_x, k.launch.block_x, k.launch.dynamic_shared_bytes,
                               k.launch.cooperative ? "yes" : "no", k.co_resident);
      const CompiledKernel* plain = plain_of(static_cast<size_t>(&k - rep.kernels.data()));
      for (const gpu::CompileResult& r : k.per_arch) {
        const gpu::KernelResources* kr = r.find_kernel(k.name);
        std::string cell =
            !r.ok ? "error"
            : kr ? fmt::format("{}/{}", kr->registers, kr->spill_store_bytes + kr->spill_load_bytes)
                 : "-";
        // --timeline: the plain kernel's registers/spills beside the instrumented one's.
        if (const gpu::KernelResources* pr = plain_resources(plain, r.arch))
          cell += fmt::format(" (plain {}/{})", pr->registers,
                              pr->spill_store_bytes + pr->spill_load_bytes);
        std::cout << fmt::format("  {:>16}", cell);
      }
      std::cout << (k.ok() ? "" : "  FAILED") << "\n";
      max_regs = std::max(max_regs, k.max_registers());
      spills += k.spill_bytes();
    }
    std::cout << fmt::format(
        "{} kernels ({} distinct programs), {} errors, max {} registers, {} spill bytes; build "
        "{:.0f} ms, NVRTC {:.0f} ms ({} archs)\n",
        rep.kernels.size(), rep.programs, rep.errors, max_regs, spills, rep.build_ms,
        rep.compile_ms, copts.archs.size());
    for (size_t i = 0; i < rep.kernels.size(); ++i) {
      std::string sharing;
      for (const CompiledKernel& k : rep.kernels)
        if (k.image == static_cast<int>(i) && k.name != rep.kernels[i].name)
          sharing += (sharing.empty() ? "" : " ") + k.name;
      if (!sharing.empty())
        std::cout << fmt::format("  image of {} shared by {}\n", rep.kernels[i].name, sharing);
    }
    std::vector<std::string> linked;
    for (const CompiledKernel& k : rep.kernels) {
      if (k.separately_linked) linked.push_back(k.name);
      if (!k.compiled_whole_because.empty()) {
        std::cout << fmt::format("  {} compiled whole, not linked from its stage functions ({})\n",
                                 k.name, k.compiled_whole_because);
      }
    }
    if (!linked.empty()) {
      std::cout << fmt::format(
          "  {} linked from stage functions compiled apart (--separate {}; their spill bytes "
          "include the registers each call saves)\n",
          fmt::join(linked, " "), separate_compile_name(copts.separate));
    }
    std::cout << cache_summary_line(cache_summary(rep, copts.use_cache)) << "\n";
    if (o.sass) {
      std::cout << fmt::format(
          "SASS per kernel and arch: {:>7} {:>5} {:>6} {:>5} {:>4} {:>4} {:>4}\n", "instr", "MMA",
          "async", "LDSM", "BAR", "LDL", "STL");
      for (const std::vector<KernelSass>& per_arch : sass)
        for (const KernelSass& s : per_arch) {
          if (!s.ok) {
            std::cout << fmt::format("  {} {}: {}\n", s.kernel, s.arch, s.error);
            continue;
          }
          std::cout << fmt::format("  {:<16} {:<6} {:>7} {:>5} {:>6} {:>5} {:>4} {:>4} {:>4}\n",
                                   s.kernel, s.arch, s.mix.total, s.mix.mma, s.mix.async_copy,
                                   s.mix.ldsm, s.mix.bar, s.mix.local_load, s.mix.local_store);
        }
      for (const std::string& p : sass_problem_lines) std::cout << "SASS problem: " << p << "\n";
    }
    if (!o.out.empty())
      std::cout << fmt::format("bundle: {} files in {}{}\n", bundle.files.size(), o.out,
                               bundle.harness ? "" : " (no harness: see ERRORS.txt)");
    if (session) {
      std::cout << fmt::format("tiles timed on {} ({}); candidate bundles in {}\n",
                               session->device(), session->arch(), tune_dir);
      for (const nlohmann::json& t : tuned) {
        std::cout << "  GEMM " << t["problem"].get<std::string>() << " ("
                  << t["timer"].get<std::string>() << "):";
        for (const nlohmann::json& c : t["candidates"])
          std::cout << fmt::format(" {} {}", c["tile"].get<std::string>(),
                                   c["us"].get<double>() < 0
                                       ? std::string("failed")
                                       : fmt::format("{:.2f} us", c["us"].get<double>()));
        std::cout << "\n";
        if (!t["note"].get<std::string>().empty())
          std::cout << "    note: " << t["note"].get<std::string>() << "\n";
      }
    }
  }
  return rep.errors == 0 ? 0 : 1;
}

}  // namespace souffle::cli
