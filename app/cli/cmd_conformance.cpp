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

#include "app/cli/commands.h"
#include "core/session/expected_status.h"
#include "core/session/verify.h"

namespace souffle::cli {
namespace fs = std::filesystem;

namespace {

struct TestResult {
  std::string name, dir;
  std::string status;  ///< pass, fail, unsupported, crash, timeout
  std::string detail;
  double ms = 0;
};

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

/// Runs one test in this (child) process and returns "status\tdetail".
///
/// A test whose shape-determining parameters (a Reshape's shape, a Resize's scales) arrive as
/// graph inputs is re-run per data set with its inputs bound to the data's values: we compile for
/// static shapes, and the same lowering and interpreter then compute the outputs while folding.
std::string run_one(const fs::path& dir, const ConformanceOptions& o) {
  std::string model = (dir / "model.onnx").string();
  souffle::VerifyOptions vo;
  vo.criterion = Criterion::AllClose;
  vo.rtol = o.rtol;
  vo.atol = o.atol;
  try {
    std::vector<TestDataSet> sets = read_test_data(dir.string());
    if (sets.empty()) return "fail\tno test data";
    try {
      LoadedModel m = load_model(model);
      std::string f = first_failure(verify_program(m, sets, vo));
      return f.empty() ? "pass\t" : "fail\t" + f;
    } catch (const UserError& e) {
      if (!needs_constant_inputs(e.reason())) throw;
    }
    // Bind every input of each data set in turn (input K of the data is the model's input K).
    onnx_import::ImportResult r = onnx_import::import_model(model);
    for (TestDataSet ds : sets) {
      if (ds.input_values.size() != r.graph.inputs.size())
        return "fail\t" + ds.dir + ": input count differs from the model's";
      InputBindings bind;
      for (size_t k = 0; k < ds.input_values.size(); ++k)
        bind[r.graph.inputs[k]] = ds.input_values[k];
      LoadedModel m = load_model(model, {}, false, bind);
      ds.inputs.clear();
      ds.input_values.clear();
      std::string f = first_failure(verify_program(m, {ds}, vo));
      if (!f.empty()) return "fail\t" + f + " (inputs bound as constants)";
    }
    return "pass\tinputs bound as constants";
  } catch (const UserError& e) {
    return std::string(is_unsupported(e.reason()) ? "unsupported\t" : "fail\t") + e.what();
  } catch (const std::exception& e) {
    return std::string("fail\tinternal error: ") + e.what();
  }
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
  std::vector<fs::path> tests = collect_tests(o.dirs);
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
    if (timed_out) {
      r.status = "timeout";
      r.detail = fmt::format("no result after {:.0f} s", o.timeout_s);
    } else if (WIFSIGNALED(status)) {
      r.status = "crash";
      r.detail = std::string("killed by signal ") + strsignal(WTERMSIG(status));
    } else {
      auto tab = c.out.find('\t');
      if (tab == std::string::npos) {
        r.status = "crash";
        r.detail = "exited without a result";
      } else {
        r.status = c.out.substr(0, tab);
        r.detail = c.out.substr(tab + 1);
        while (!r.detail.empty() && r.detail.back() == '\n') r.detail.pop_back();
      }
    }
    if (!o.quiet && !o.json) {
      std::string tag = r.status;
      std::transform(tag.begin(), tag.end(), tag.begin(), ::toupper);
      std::cout << fmt::format("{:<12}{}{}{}\n", tag, r.name, r.detail.empty() ? "" : ": ",
                               r.detail);
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
        std::string line = run_one(tests[next], o);
        const char* p = line.data();
        size_t left = line.size();
        while (left > 0) {
          ssize_t w = write(fds[1], p, left);
          if (w <= 0) break;
          p += w;
          left -= static_cast<size_t>(w);
        }
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

  std::map<std::string, int> counts;
  for (const TestResult& r : results) counts[r.status]++;
  int64_t passed = counts["pass"];
  double rate = tests.empty() ? 0 : double(passed) / double(tests.size());
  bool broken = counts["crash"] + counts["timeout"] > 0;
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
    for (const TestResult& r : results)
      arr.push_back({{"name", r.name}, {"status", r.status}, {"detail", r.detail}, {"ms", r.ms}});
    j["tests"] = arr;
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
  for (const TestResult& r : results) actual[r.name] = {r.status, short_reason(r.detail, r.dir)};
  if (!o.update_expected.empty()) {
    std::ofstream f(o.update_expected);
    f << format_expected_status(
        actual, {"Expected status of each ONNX backend test under souffle-cli conformance",
                 fmt::format("(rtol {:g}, atol {:g}): NAME STATUS  # reason when not passing.",
                             o.rtol, o.atol),
                 "CTest fails when a status changes; rewrite with --update-expected FILE."});
    if (!f) throw UserError(o.update_expected, "", "cannot write the expected-status file");
    out << "conformance: wrote " << actual.size() << " statuses to " << o.update_expected << "\n";
  }
  std::vector<StatusChange> changes;
  if (!o.expect.empty()) changes = diff_status(read_expected_status(o.expect), actual);
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
