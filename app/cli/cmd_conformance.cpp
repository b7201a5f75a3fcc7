// `conformance`: every ONNX backend-test folder runs in its own child process, so a crash or a
// hang in one test is reported as such and never takes the run down.
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "app/cli/commands.h"
#include "core/codegen/codegen_cuda.h"
#include "core/gpu/nvrtc.h"
#include "core/gpu/spec.h"
#include "core/schedule/plan_pricer.h"
#include "core/session/compile.h"
#include "core/session/expected_status.h"
#include "core/session/verify.h"
#include "core/session/verify_kernels.h"

namespace souffle::cli {
namespace fs = std::filesystem;

namespace {

struct TestResult {
  std::string name, dir;
  std::string status;  ///< pass, fail, unsupported, crash, timeout
  std::string detail;
  /// --level kernels: pass, mismatch, error, nvrtc, no-nvrtc, crash, timeout; not-run when the
  /// test does not pass at TE level.
  std::string kstatus, kdetail;
  double ms = 0;
};

/// The strategies every TE-level pass is planned, built and emulated under.
const char* const kStrategies[] = {"unfused", "rules", "souffle-paper", "souffle"};

/// One line of the child's report: "status\tdetail\n" (tabs and newlines in the detail blanked).
std::string report_line(const std::string& status, std::string detail) {
  for (char& c : detail)
    if (c == '\n' || c == '\t' || c == '\r') c = ' ';
  return status + "\t" + detail + "\n";
}

/// Writes all of `line` to `fd` (the parent reads the TE line even if the kernel stage crashes).
void write_all(int fd, const std::string& line) {
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    ssize_t w = write(fd, p, left);
    if (w <= 0) break;
    p += w;
    left -= static_cast<size_t>(w);
  }
}

std::vector<fs::path> collect_tests(const std::vector<std::string>& dirs) {
  std::vector<fs::path> tests;
  for (const std::string& d : dirs) {
    fs::path p(d);
    if (fs::exists(p / "model.onnx")) {
      tests.push_back(p);
      continue;
    }
    if (!fs::is_directory(p)) throw UserError(d, "", "not a test folder or a folder of tests");
    std::vector<fs::path> sub;
    for (const auto& e : fs::directory_iterator(p))
      if (e.is_directory() && fs::exists(e.path() / "model.onnx")) sub.push_back(e.path());
    std::sort(sub.begin(), sub.end());
    tests.insert(tests.end(), sub.begin(), sub.end());
  }
  return tests;
}

bool is_unsupported(const std::string& why) {
  return why.find("unsupported") != std::string::npos ||
         why.find("not supported") != std::string::npos;
}

bool needs_constant_inputs(const std::string& why) {
  return why.find("must be a constant") != std::string::npos ||
         why.find("must be constants") != std::string::npos;
}

std::string first_failure(const VerifyReport& rep) {
  for (const OutputCheck& c : rep.checks)
    if (!c.ok) return c.data_set + " output " + c.name + ": " + c.cmp.describe();
  return "";
}

/// The kernel-level check of a model that passes at TE level: under every strategy, its plan's
/// kernels run in the emulator on `sets` and are judged like the TE level (same tolerances);
/// then all of them are compiled with NVRTC as one translation unit per arch.
std::pair<std::string, std::string> check_kernels(const LoadedModel& m,
                                                  const std::vector<TestDataSet>& sets,
                                                  const ConformanceOptions& o,
                                                  const souffle::VerifyOptions& vo) {
  loop::KernelSet all;
  all.name = "conformance";
  for (const char* name : kStrategies) {
    PipelineOptions po;
    po.strategy = plan::parse_strategy(name);
    po.gpu = gpu::gpu_spec("a100");
    po.pricer = schedule::make_pricer(po.gpu, po.precision);
    KernelVerifyReport rep = verify_kernels(m, sets, po, vo);
    if (!rep.error.empty()) return {"error", std::string(name) + ": " + rep.error};
    if (!rep.outputs.ok) return {"mismatch", std::string(name) + ": " + first_failure(rep.outputs)};
    for (const loop::Kernel& k : rep.built.kernels) all.kernels.push_back(k);
  }
  if (o.archs.empty() || all.kernels.empty()) return {"pass", ""};
  if (!gpu::nvrtc_available()) return {"no-nvrtc", "this build has no NVRTC"};
  std::string source = codegen::emit_cuda(all);
  std::vector<gpu::CompileJob> jobs;
  for (const std::string& arch : o.archs) {
    gpu::CompileJob j;
    j.source = source;
    j.name = "conformance.cu";
    j.options.arch = arch;
    j.options.use_cache = false;
    jobs.push_back(std::move(j));
  }
  for (const gpu::CompileResult& r : gpu::compile_cuda_many(jobs))
    if (!r.ok) return {"nvrtc", r.arch + ": " + r.log.substr(0, 400)};
  return {"pass", ""};
}

/// Runs one test in this (child) process and writes its report to `fd`: "status\tdetail" for
/// the TE level, then (--level kernels) a second line for the kernel level.
///
/// A test whose shape-determining parameters (a Reshape's shape, a Resize's scales) arrive as
/// graph inputs is re-run per data set with its inputs bound to the data's values: we compile for
/// static shapes, and the same lowering and interpreter then compute the outputs while folding.
void run_one(const fs::path& dir, const ConformanceOptions& o, int fd) {
  std::string model = (dir / "model.onnx").string();
  const bool kernels = o.level == "kernels";
  souffle::VerifyOptions vo;
  vo.rtol = o.rtol;  // the ONNX backend tests' tolerance, for every output
  vo.atol = o.atol;
  // The models and data sets that passed at TE level, for the kernel level.
  std::vector<std::pair<LoadedModel, std::vector<TestDataSet>>> passed;
  std::string te_detail;
  try {
    std::vector<TestDataSet> sets = read_test_data(dir.string());
    if (sets.empty()) return write_all(fd, report_line("fail", "no test data"));
    bool bound = false;
    try {
      LoadedModel m = load_model(model);
      std::string f = first_failure(verify_program(m, sets, vo));
      if (!f.empty()) return write_all(fd, report_line("fail", f));
      if (kernels) passed.emplace_back(std::move(m), sets);
    } catch (const UserError& e) {
      if (!needs_constant_inputs(e.reason())) throw;
      bound = true;
    }
    if (bound) {
      // Bind every input of each data set in turn (input K of the data is the model's input K).
      onnx_import::ImportResult r = onnx_import::import_model(model);
      for (TestDataSet ds : sets) {
        if (ds.input_values.size() != r.graph.inputs.size())
          return write_all(fd,
                           report_line("fail", ds.dir + ": input count differs from the model's"));
        InputBindings bind = bind_from_data(r.graph.inputs, r.graph.inputs, ds);
        LoadedModel m = load_model(model, {}, false, bind);
        std::string f = first_failure(verify_program(m, {ds}, vo));
        if (!f.empty())
          return write_all(fd, report_line("fail", f + " (inputs bound as constants)"));
        if (kernels) passed.push_back({std::move(m), {ds}});
      }
      te_detail = "inputs bound as constants";
    }
  } catch (const UserError& e) {
    return write_all(fd,
                     report_line(is_unsupported(e.reason()) ? "unsupported" : "fail", e.what()));
  } catch (const std::exception& e) {
    return write_all(fd, report_line("fail", std::string("internal error: ") + e.what()));
  }
  write_all(fd, report_line("pass", te_detail));
  if (!kernels) return;
  std::pair<std::string, std::string> k{"pass", ""};
  try {
    for (const auto& [m, sets] : passed) {
      k = check_kernels(m, sets, o, vo);
      if (k.first != "pass") break;
    }
  } catch (const std::exception& e) {
    k = {"error", std::string("internal error: ") + e.what()};
  }
  write_all(fd, report_line(k.first, k.second));
}

/// A test's reason without the machine's path to it ("model.onnx: node ...").
std::string short_reason(std::string detail, const std::string& dir) {
  for (const std::string& p : {dir + "/", dir}) {
    for (size_t pos; (pos = detail.find(p)) != std::string::npos;) detail.erase(pos, p.size());
  }
  return detail;
}

struct Child {
  pid_t pid = -1;
  int fd = -1;
  size_t index = 0;
  std::string out;
  std::chrono::steady_clock::time_point start;
};

}  // namespace

int run_conformance(const ConformanceOptions& o) {
  if (o.level != "te" && o.level != "kernels")
    throw UserError("--level must be te or kernels, got '" + o.level + "'");
  for (const std::string& a : o.archs) check_arch(a);
  const bool kernels = o.level == "kernels";
  std::vector<fs::path> tests = collect_tests(o.dirs);
  if (o.sample > 1) {
    // Every sample-th test (in name order), for a quick run of the slow kernel level.
    std::vector<fs::path> kept;
    for (size_t i = 0; i < tests.size(); i += static_cast<size_t>(o.sample))
      kept.push_back(tests[i]);
    tests = std::move(kept);
  }
  std::vector<TestResult> results(tests.size());
  int jobs =
      o.jobs > 0 ? o.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  std::cout.flush();
  std::cerr.flush();

  std::vector<Child> running;
  size_t next = 0, done = 0;
  auto elapsed_s = [](const Child& c) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - c.start).count();
  };
  auto finish = [&](Child& c, bool timed_out) {
    if (timed_out) kill(c.pid, SIGKILL);
    int status = 0;
    waitpid(c.pid, &status, 0);
    close(c.fd);
    TestResult& r = results[c.index];
    r.dir = tests[c.index].string();
    r.name = tests[c.index].filename().string();
    r.ms = elapsed_s(c) * 1000;
    std::string broken, why;  // how the child ended when it did not exit by itself
    if (timed_out) {
      broken = "timeout";
      why = fmt::format("no result after {:.0f} s", o.timeout_s);
    } else if (WIFSIGNALED(status)) {
      broken = "crash";
      why = std::string("killed by signal ") + strsignal(WTERMSIG(status));
    }
    // The report lines the child wrote: the TE level, then the kernel level. A child that died
    // in the kernel stage has reported its TE level already.
    std::vector<std::pair<std::string, std::string>> lines;
    for (size_t at = 0; at < c.out.size();) {
      size_t end = c.out.find('\n', at);
      if (end == std::string::npos) break;
      std::string line = c.out.substr(at, end - at);
      at = end + 1;
      size_t tab = line.find('\t');
      if (tab != std::string::npos) lines.emplace_back(line.substr(0, tab), line.substr(tab + 1));
    }
    if (lines.empty()) {
      r.status = broken.empty() ? "crash" : broken;
      r.detail = broken.empty() ? "exited without a result" : why;
    } else {
      r.status = lines[0].first;
      r.detail = lines[0].second;
    }
    if (kernels) {
      if (r.status != "pass") {
        r.kstatus = "not-run";
        r.kdetail = "TE level: " + r.status;
      } else if (lines.size() >= 2) {
        r.kstatus = lines[1].first;
        r.kdetail = lines[1].second;
      } else {
        r.kstatus = broken.empty() ? "crash" : broken;
        r.kdetail = broken.empty() ? "exited without a kernel-level result" : why;
      }
    }
    if (!o.quiet && !o.json) {
      bool k = kernels && r.status == "pass";
      std::string tag = k ? r.kstatus : r.status;
      std::transform(tag.begin(), tag.end(), tag.begin(), ::toupper);
      const std::string& d = k ? r.kdetail : r.detail;
      std::cout << fmt::format("{:<12}{}{}{}{}\n", tag, r.name, k ? " (kernels)" : "",
                               d.empty() ? "" : ": ", d);
      std::cout.flush();
    }
    ++done;
  };

  while (done < tests.size()) {
    while (next < tests.size() && static_cast<int>(running.size()) < jobs) {
      int fds[2];
      if (pipe(fds) != 0) throw UserError("cannot create a pipe for a test process");
      pid_t pid = fork();
      if (pid < 0) throw UserError("cannot fork a test process");
      if (pid == 0) {
        close(fds[0]);
        run_one(tests[next], o, fds[1]);
        close(fds[1]);
        _exit(0);
      }
      close(fds[1]);
      Child c;
      c.pid = pid;
      c.fd = fds[0];
      c.index = next++;
      c.start = std::chrono::steady_clock::now();
      running.push_back(std::move(c));
    }
    std::vector<pollfd> pfds;
    for (const Child& c : running) pfds.push_back({c.fd, POLLIN, 0});
    poll(pfds.data(), pfds.size(), 200);
    for (size_t i = running.size(); i-- > 0;) {
      Child& c = running[i];
      bool closed = false;
      if (pfds[i].revents & (POLLIN | POLLHUP | POLLERR)) {
        char buf[4096];
        ssize_t n = read(c.fd, buf, sizeof buf);
        if (n > 0)
          c.out.append(buf, static_cast<size_t>(n));
        else
          closed = true;
      }
      bool timed_out = !closed && elapsed_s(c) > o.timeout_s;
      if (closed || timed_out) {
        finish(c, timed_out);
        running.erase(running.begin() + static_cast<std::ptrdiff_t>(i));
      }
    }
  }

  std::map<std::string, int> counts, kcounts;
  for (const TestResult& r : results) {
    counts[r.status]++;
    if (kernels) kcounts[r.kstatus]++;
  }
  int64_t passed = counts["pass"];
  double rate = tests.empty() ? 0 : double(passed) / double(tests.size());
  auto count = [](const std::map<std::string, int>& m, const char* key) {
    auto it = m.find(key);
    return it == m.end() ? 0 : it->second;
  };
  bool broken = count(counts, "crash") + count(counts, "timeout") + count(kcounts, "crash") +
                    count(kcounts, "timeout") >
                0;
  bool ok = !broken && passed >= o.min_pass && rate + 1e-12 >= o.min_pass_rate;

  if (o.json) {
    nlohmann::json j;
    j["total"] = tests.size();
    j["passed"] = passed;
    j["failed"] = counts["fail"];
    j["unsupported"] = counts["unsupported"];
    j["crashed"] = counts["crash"];
    j["timed_out"] = counts["timeout"];
    nlohmann::json arr = nlohmann::json::array();
    for (const TestResult& r : results) {
      nlohmann::json t = {
          {"name", r.name}, {"status", r.status}, {"detail", r.detail}, {"ms", r.ms}};
      if (kernels) {
        t["kernel_status"] = r.kstatus;
        t["kernel_detail"] = r.kdetail;
      }
      arr.push_back(t);
    }
    j["tests"] = arr;
    if (kernels) {
      j["level"] = "kernels";
      j["kernels_passed"] = count(kcounts, "pass");
      nlohmann::json k;
      for (const auto& [st, n] : kcounts) k[st] = n;
      j["kernel_statuses"] = k;
    }
    std::cout << j.dump(2) << "\n";
  }
  std::map<std::string, int> unsupported_ops;
  for (const TestResult& r : results)
    if (r.status == "unsupported") {
      // "unsupported ops: Op (...)", or a lowering's refusal "node NAME (Op): ...".
      std::string op = "other";
      if (auto pos = r.detail.find("unsupported ops: "); pos != std::string::npos) {
        op = r.detail.substr(pos + 17);
        op = op.substr(0, op.find(' '));
      } else if (auto node = r.detail.find("node "); node != std::string::npos) {
        auto open = r.detail.find(" (", node), close = r.detail.find("): ", node);
        if (open != std::string::npos && close != std::string::npos && open < close)
          op = r.detail.substr(open + 2, close - open - 2);
      }
      unsupported_ops[op]++;
    }
  std::ostream& out = o.json ? std::cerr : std::cout;
  StatusTable actual;
  for (const TestResult& r : results)
    actual[r.name] = kernels ? TestStatus{r.kstatus, short_reason(r.kdetail, r.dir)}
                             : TestStatus{r.status, short_reason(r.detail, r.dir)};
  if (!o.update_expected.empty()) {
    std::ofstream f(o.update_expected);
    std::vector<std::string> header{
        "Expected status of each ONNX backend test under souffle-cli conformance",
        fmt::format("(rtol {:g}, atol {:g}): NAME STATUS  # reason when not passing.", o.rtol,
                    o.atol),
        "CTest fails when a status changes; rewrite with --update-expected FILE."};
    if (kernels)
      header.insert(
          header.begin() + 1,
          "at kernel level: every TE-level pass planned under unfused, rules, souffle-paper and "
          "souffle, its kernels emulated and compiled with NVRTC (" +
              fmt::format("{}", fmt::join(o.archs, ", ")) + "); not-run: it fails at TE level");
    f << format_expected_status(actual, header);
    if (!f) throw UserError(o.update_expected, "", "cannot write the expected-status file");
    out << "conformance: wrote " << actual.size() << " statuses to " << o.update_expected << "\n";
  }
  std::vector<StatusChange> changes;
  if (!o.expect.empty()) {
    StatusTable expected = read_expected_status(o.expect);
    if (o.sample > 1)  // a sampled run checks only the tests it ran
      for (auto it = expected.begin(); it != expected.end();)
        it = actual.count(it->first) ? std::next(it) : expected.erase(it);
    changes = diff_status(expected, actual);
  }
  if (!unsupported_ops.empty()) {
    out << "unsupported:";
    for (const auto& [op, n] : unsupported_ops) out << " " << op << " x" << n;
    out << "\n";
  }
  out << fmt::format(
      "conformance: {} tests: {} passed, {} failed, {} unsupported, {} crashed, {} timed out "
      "({:.1f}% pass)\n",
      tests.size(), passed, counts["fail"], counts["unsupported"], counts["crash"],
      counts["timeout"], 100 * rate);
  if (kernels) {
    std::string others;
    for (const auto& [st, n] : kcounts)
      if (st != "pass" && st != "not-run") others += fmt::format(", {} {}", n, st);
    out << fmt::format(
        "conformance (kernels: unfused, rules, souffle-paper, souffle; NVRTC {}): {} of {} TE "
        "passes pass as kernels{}\n",
        o.archs.empty() ? std::string("off") : fmt::format("{}", fmt::join(o.archs, ", ")),
        count(kcounts, "pass"), passed, others);
  }
  if (!ok && (o.min_pass > 0 || o.min_pass_rate > 0 || broken))
    out << "conformance: below the required threshold or a test crashed/hung\n";
  if (!changes.empty()) {
    out << fmt::format(
        "conformance: {} test{} changed status against {} (record it in the same commit: "
        "--update-expected {}):\n",
        changes.size(), changes.size() == 1 ? "" : "s", o.expect, o.expect);
    for (const StatusChange& c : changes) out << "  " << describe(c) << "\n";
    ok = false;
  } else if (!o.expect.empty()) {
    out << "conformance: every status as expected in " << o.expect << "\n";
  }
  return ok ? 0 : 1;
}

}  // namespace souffle::cli
