/// \file The caller's side of the runner protocol: souffle-runner started through any command
/// (the local executable, or `ssh gpu-host souffle-runner`), requests with time limits, and a
/// runner that dies or hangs reported with the kernel it was running.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace souffle {

/// A request that did not succeed: the runner answered with an error, died, hung past the time
/// limit or was cancelled. `kernel` names the kernel it concerns (from the answer, or the last
/// launch the runner announced before dying).
class RunnerFailure : public std::runtime_error {
 public:
  RunnerFailure(std::string code, const std::string& message, std::string kernel = "")
      : std::runtime_error(message), m_code(std::move(code)), m_kernel(std::move(kernel)) {}
  const std::string& code() const {
    return m_code;
  }  ///< the runner's code, or "died", "timeout", "cancelled"
  const std::string& kernel() const { return m_kernel; }

 private:
  std::string m_code, m_kernel;
};

/// The souffle-runner beside the running executable (app/cli/../runner, the same folder, or
/// PATH); "" when none is found.
std::string default_runner_path();

class RunnerProcess {
 public:
  /// Starts `/bin/sh -c COMMAND`. Throws RunnerFailure("died") when it cannot be started.
  explicit RunnerProcess(const std::string& command);
  ~RunnerProcess();  ///< asks the runner to quit, then kills it if it does not
  RunnerProcess(const RunnerProcess&) = delete;
  RunnerProcess& operator=(const RunnerProcess&) = delete;

  using EventFn = std::function<void(const nlohmann::json&)>;
  /// Sends `request` (an id is added) and returns the answer when it is ok. Progress events
  /// go to `on_event`. Throws RunnerFailure otherwise; after "died", "timeout" or "cancelled"
  /// the process is gone and every later call fails.
  nlohmann::json call(nlohmann::json request, double timeout_s, const EventFn& on_event = {},
                      const std::atomic<bool>* cancel = nullptr);
  bool alive() const { return m_pid > 0; }
  const std::string& command() const { return m_command; }
  /// The backend the runner said it runs in its hello answer ("cuda", "emulator"); "" before.
  const std::string& backend() const { return m_backend; }
  /// How the user raises the time limit ("--timeout SECONDS ..."), said when a request runs
  /// past it; empty: not said.
  void set_limit_hint(std::string hint) { m_limit_hint = std::move(hint); }
  std::string stderr_tail() const { return m_stderr; }

 private:
  void kill_now();
  std::string wait_status();
  std::string time_limit_message(const std::string& op, double timeout_s) const;
  std::string m_command;
  pid_t m_pid = -1;
  int m_in = -1, m_out = -1, m_err = -1;
  std::string m_buffer, m_stderr, m_last_kernel, m_backend, m_limit_hint;
  int m_next_id = 1;
};

}  // namespace souffle
