#include "core/session/runner_client.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>

namespace souffle {

namespace fs = std::filesystem;

std::string default_runner_path() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path dir = exe.parent_path();
    for (const fs::path& p : {dir / "souffle-runner", dir / ".." / "runner" / "souffle-runner",
                              dir / ".." / ".." / "app" / "runner" / "souffle-runner",
                              dir / ".." / "bin" / "souffle-runner"})
      if (fs::exists(p, ec)) return fs::weakly_canonical(p, ec).string();
  }
  if (const char* path = std::getenv("PATH")) {
    std::string s = path;
    size_t start = 0;
    while (start <= s.size()) {
      size_t end = s.find(':', start);
      std::string d = s.substr(start, end == std::string::npos ? std::string::npos : end - start);
      fs::path p = fs::path(d.empty() ? "." : d) / "souffle-runner";
      if (access(p.c_str(), X_OK) == 0) return p.string();
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  return "";
}

RunnerProcess::RunnerProcess(const std::string& command) : m_command(command) {
  int in[2], out[2], err[2];
  if (pipe(in) != 0 || pipe(out) != 0 || pipe(err) != 0)
    throw RunnerFailure("died", "cannot start the runner: " + std::string(std::strerror(errno)));
  pid_t pid = fork();
  if (pid < 0)
    throw RunnerFailure("died", "cannot start the runner: " + std::string(std::strerror(errno)));
  if (pid == 0) {
    dup2(in[0], 0);
    dup2(out[1], 1);
    dup2(err[1], 2);
    for (int fd : {in[0], in[1], out[0], out[1], err[0], err[1]}) close(fd);
    setpgid(0, 0);  // its own group: a kill reaches what the command started (ssh, ...)
    execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(in[0]);
  close(out[1]);
  close(err[1]);
  m_pid = pid;
  m_in = in[1];
  m_out = out[0];
  m_err = err[0];
  signal(SIGPIPE, SIG_IGN);  // a dead runner is reported by call(), not by a signal
  fcntl(m_out, F_SETFL, fcntl(m_out, F_GETFL) | O_NONBLOCK);
  fcntl(m_err, F_SETFL, fcntl(m_err, F_GETFL) | O_NONBLOCK);
}

RunnerProcess::~RunnerProcess() {
  if (m_pid > 0) {
    const char quit[] = "{\"op\":\"quit\"}\n";
    ssize_t w = write(m_in, quit, sizeof quit - 1);
    (void)w;
    close(m_in);
    m_in = -1;
    for (int i = 0; i < 40; ++i) {  // up to 2 s to leave on its own
      int st = 0;
      if (waitpid(m_pid, &st, WNOHANG) == m_pid) {
        m_pid = -1;
        break;
      }
      usleep(50000);
    }
    if (m_pid > 0) kill_now();
  }
  for (int fd : {m_in, m_out, m_err})
    if (fd >= 0) close(fd);
}

void RunnerProcess::kill_now() {
  if (m_pid <= 0) return;
  kill(-m_pid, SIGKILL);
  kill(m_pid, SIGKILL);
  int st = 0;
  waitpid(m_pid, &st, 0);
  m_pid = -1;
}

std::string RunnerProcess::wait_status() {
  int st = 0;
  pid_t r = waitpid(m_pid, &st, 0);
  m_pid = -1;
  if (r <= 0) return "it is gone";
  if (WIFSIGNALED(st))
    return "killed by signal " + std::to_string(WTERMSIG(st)) + " (" + strsignal(WTERMSIG(st)) +
           ")";
  if (WIFEXITED(st)) {
    int code = WEXITSTATUS(st);
    // A shell between us and the runner reports a signal as 128 + its number.
    if (code > 128 && code < 128 + 65)
      return "exit code " + std::to_string(code) + ", a shell's report of signal " +
             std::to_string(code - 128) + " (" + strsignal(code - 128) + ")";
    return "exit code " + std::to_string(code);
  }
  return "it stopped";
}

std::string RunnerProcess::time_limit_message(const std::string& op, double timeout_s) const {
  const std::string limit = std::to_string(static_cast<int64_t>(timeout_s + 0.5)) + " s";
  const std::string raise = m_limit_hint.empty() ? "" : "; " + m_limit_hint;
  if (m_backend == "emulator")
    // The emulator interprets every thread of every block on the CPU: a big kernel is slow,
    // not hung (its grid barriers are the emulator's own and cannot deadlock unnoticed).
    return "the emulator backend did not finish '" + op + "' within its time limit of " + limit +
           (m_last_kernel.empty() ? "" : " (it was still running " + m_last_kernel + ")") +
           " and was stopped: the time limit was reached, which on the emulator means a slow run "
           "(it interprets every thread on the CPU), not a hung kernel" +
           raise;
  return "the runner" + (m_backend.empty() ? std::string() : " (" + m_backend + " backend)") +
         " did not answer '" + op + "' within its time limit of " + limit +
         (m_last_kernel.empty()
              ? ""
              : "; the last kernel it launched was " + m_last_kernel +
                    " (a hung kernel, e.g. a grid barrier some block never reaches, or one slower "
                    "than the limit)") +
         "; it was killed" + raise;
}

nlohmann::json RunnerProcess::call(nlohmann::json request, double timeout_s,
                                   const EventFn& on_event, const std::atomic<bool>* cancel) {
  if (m_pid <= 0) throw RunnerFailure("died", "the runner is not running (" + m_command + ")");
  const int id = m_next_id++;
  request["id"] = id;
  const std::string op = request.value("op", "");
  std::string line = request.dump() + "\n";
  for (size_t off = 0; off < line.size();) {
    ssize_t w = write(m_in, line.data() + off, line.size() - off);
    if (w <= 0) {
      std::string how = wait_status();
      throw RunnerFailure("died", "the runner (" + m_command + ") exited before '" + op +
                                      "' could be sent: " + how +
                                      (m_stderr.empty() ? "" : "; it said: " + m_stderr));
    }
    off += static_cast<size_t>(w);
  }
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<int64_t>(timeout_s * 1000));
  m_last_kernel.clear();
  char buf[65536];
  for (;;) {
    // Whole lines first: an answer, or an event.
    size_t nl;
    while ((nl = m_buffer.find('\n')) != std::string::npos) {
      std::string l = m_buffer.substr(0, nl);
      m_buffer.erase(0, nl + 1);
      if (l.empty()) continue;
      nlohmann::json j;
      try {
        j = nlohmann::json::parse(l);
      } catch (const nlohmann::json::exception&) {
        kill_now();
        throw RunnerFailure("died", "the runner (" + m_command +
                                        ") wrote a line that is not "
                                        "protocol JSON: " +
                                        l.substr(0, 200));
      }
      if (j.contains("event")) {
        if (j.value("event", "") == "launch") m_last_kernel = j.value("kernel", "");
        if (on_event) on_event(j);
        continue;
      }
      if (!j.contains("id") || j["id"] != id) continue;  // an answer to an earlier, abandoned call
      if (op == "hello" && j.value("ok", false)) m_backend = j.value("backend", "");
      if (!j.value("ok", false))
        throw RunnerFailure(j.value("code", "error"),
                            j.value("error", "the runner refused '" + op + "'"),
                            j.value("kernel", ""));
      return j;
    }
    if (cancel && cancel->load()) {
      kill_now();
      throw RunnerFailure("cancelled",
                          "cancelled while the runner was busy with '" + op + "'" +
                              (m_last_kernel.empty() ? "" : " (at " + m_last_kernel + ")"),
                          m_last_kernel);
    }
    auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      kill_now();
      throw RunnerFailure("timeout", time_limit_message(op, timeout_s), m_last_kernel);
    }
    pollfd fds[2] = {{m_out, POLLIN, 0}, {m_err, POLLIN, 0}};
    int wait_ms = static_cast<int>(std::min<int64_t>(
        100, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1));
    poll(fds, 2, wait_ms);
    for (;;) {
      ssize_t n = read(m_err, buf, sizeof buf);
      if (n <= 0) break;
      m_stderr.append(buf, static_cast<size_t>(n));
      if (m_stderr.size() > 4096) m_stderr.erase(0, m_stderr.size() - 4096);
    }
    bool eof = false;
    for (;;) {
      ssize_t n = read(m_out, buf, sizeof buf);
      if (n > 0) {
        m_buffer.append(buf, static_cast<size_t>(n));
        continue;
      }
      if (n == 0) eof = true;
      break;
    }
    if (eof && m_buffer.find('\n') == std::string::npos) {
      std::string how = wait_status();
      std::string tail = m_stderr;
      while (!tail.empty() && (tail.back() == '\n' || tail.back() == '\r')) tail.pop_back();
      throw RunnerFailure("died",
                          "the runner (" + m_command + ") died during '" + op + "': " + how +
                              (m_last_kernel.empty() ? "" : ", while running " + m_last_kernel) +
                              (tail.empty() ? "" : "; it said: " + tail),
                          m_last_kernel);
    }
  }
}

}  // namespace souffle
