/// \file memory_ceiling: runs one test command under a memory ceiling and reports its peak.
///
/// Usage: memory_ceiling --test NAME --ceiling-mb MB [--poll-ms MS] -- COMMAND [ARGS...]
///
/// Every CTest test of the project runs through this program (tests/CMakeLists.txt,
/// souffle_add_test). It measures the resident size of the whole process tree the command starts
/// (the command, a souffle-cli it spawns, that CLI's souffle-runner, python, sh...): the sum of
/// the tree's RSS, polled from /proc every few milliseconds. Orphaned grandchildren stay in the
/// tree because this process is their subreaper. A tree over the ceiling is killed at once with
/// a message that names the test and the ceiling, long before the machine's out-of-memory killer
/// would pick a victim; the exit status is then kCeilingExit. Otherwise the command's own exit
/// status (or signal) is passed on, after a last line "peak RSS N MB (ceiling M MB)".
///
/// Why not RLIMIT_AS: NVRTC, the CUDA driver and sanitizers reserve tens of GB of address space
/// they never touch, so an address-space limit fails good tests. Why not a cgroup: creating one
/// needs a delegated cgroup v2 subtree, which neither CI containers nor contributors' desktops
/// reliably give; /proc works for every user. The reported peak is the larger of the polled sum
/// and the kernel's own high-water mark of the largest single process (getrusage), so a spike
/// between two polls in one process is still counted.
#include <dirent.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

/// The exit status of a test killed for its memory (distinct from a test's own failures).
constexpr int kCeilingExit = 86;
constexpr long kMiB = 1024 * 1024;

volatile sig_atomic_t g_forward_signal = 0;

void on_signal(int sig) {
  g_forward_signal = sig;
}

int usage(const char* why) {
  std::fprintf(stderr,
               "memory_ceiling: %s\nusage: memory_ceiling --test NAME --ceiling-mb MB "
               "[--poll-ms MS] -- COMMAND [ARGS...]\n",
               why);
  return 2;
}

/// The children of `pid` (every thread's list: a child belongs to the thread that forked it).
void children_of(pid_t pid, std::vector<pid_t>& out) {
  const std::string task_dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = opendir(task_dir.c_str());
  if (!d) return;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream f(task_dir + "/" + e->d_name + "/children");
    pid_t c;
    while (f >> c) out.push_back(c);
  }
  closedir(d);
}

/// Whether /proc lists children (CONFIG_PROC_CHILDREN); otherwise the tree is found by parent id.
bool proc_children_listed() {
  const std::string p =
      "/proc/" + std::to_string(getpid()) + "/task/" + std::to_string(getpid()) + "/children";
  return access(p.c_str(), R_OK) == 0;
}

/// Every process whose parent is in `tree`, by a scan of /proc/*/stat.
void descendants_by_scan(std::vector<pid_t>& tree) {
  std::vector<std::pair<pid_t, pid_t>> parent;  // (pid, ppid)
  DIR* d = opendir("/proc");
  if (!d) return;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    const long pid = std::strtol(e->d_name, &end, 10);
    if (pid <= 0 || *end != '\0') continue;
    std::ifstream f(std::string("/proc/") + e->d_name + "/stat");
    std::string line;
    if (!std::getline(f, line)) continue;
    // pid (comm) state ppid ...: comm may hold spaces and parentheses, so read after the last ')'.
    const size_t close = line.rfind(')');
    if (close == std::string::npos) continue;
    std::istringstream rest(line.substr(close + 1));
    char state;
    long ppid;
    if (rest >> state >> ppid) parent.emplace_back(static_cast<pid_t>(pid), ppid);
  }
  closedir(d);
  std::set<pid_t> in(tree.begin(), tree.end());
  for (bool grew = true; grew;) {
    grew = false;
    for (const auto& [pid, ppid] : parent)
      if (in.count(ppid) && !in.count(pid)) {
        in.insert(pid);
        tree.push_back(pid);
        grew = true;
      }
  }
}

/// This process's descendants (not itself).
std::vector<pid_t> descendants(bool listed) {
  std::vector<pid_t> tree;
  if (!listed) {
    tree.push_back(getpid());
    descendants_by_scan(tree);
    tree.erase(tree.begin());
    return tree;
  }
  children_of(getpid(), tree);
  for (size_t i = 0; i < tree.size(); ++i) children_of(tree[i], tree);
  return tree;
}

/// Resident bytes of `pid` (0 when it has gone).
long resident_bytes(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/statm");
  long size = 0, resident = 0;
  if (!(f >> size >> resident)) return 0;
  return resident * sysconf(_SC_PAGESIZE);
}

void sleep_ms(int ms) {
  timespec t{ms / 1000, (ms % 1000) * 1000000L};
  while (nanosleep(&t, &t) != 0 && errno == EINTR && !g_forward_signal) {
  }
}

/// Reaps every exited child; records the status of `main_child` when it is among them.
void reap(pid_t main_child, bool& main_done, int& main_status) {
  for (;;) {
    int status = 0;
    const pid_t p = waitpid(-1, &status, WNOHANG);
    if (p <= 0) return;
    if (p == main_child) {
      main_done = true;
      main_status = status;
    }
  }
}

/// Kills every descendant (repeatedly: a dying parent's children come back to this subreaper)
/// and reaps them; returns how many were killed.
int kill_tree(bool listed, pid_t main_child, bool& main_done, int& main_status) {
  std::set<pid_t> killed;
  for (int round = 0; round < 200; ++round) {
    const std::vector<pid_t> tree = descendants(listed);
    if (tree.empty()) break;
    for (pid_t p : tree) {
      kill(p, SIGKILL);
      killed.insert(p);
    }
    sleep_ms(5);
    reap(main_child, main_done, main_status);
  }
  // The last ones may be zombies not yet reaped.
  for (int i = 0; i < 100; ++i) {
    int status = 0;
    const pid_t p = waitpid(-1, &status, WNOHANG);
    if (p == main_child) {
      main_done = true;
      main_status = status;
    }
    if (p < 0 && errno == ECHILD) break;
    if (p == 0) sleep_ms(5);
  }
  return static_cast<int>(killed.size());
}

long children_maxrss_bytes() {
  rusage u{};
  getrusage(RUSAGE_CHILDREN, &u);
  return u.ru_maxrss * 1024L;  // kilobytes on Linux
}

}  // namespace

int main(int argc, char** argv) {
  std::string test;
  long ceiling_mb = 0;
  int poll_ms = 20;
  int first = -1;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--") {
      first = i + 1;
      break;
    }
    if (i + 1 >= argc) return usage(("missing value after " + a).c_str());
    if (a == "--test") {
      test = argv[++i];
    } else if (a == "--ceiling-mb") {
      char* end = nullptr;
      ceiling_mb = std::strtol(argv[++i], &end, 10);
      if (*end != '\0' || ceiling_mb <= 0) return usage("--ceiling-mb takes a positive integer");
    } else if (a == "--poll-ms") {
      poll_ms = std::atoi(argv[++i]);
      if (poll_ms <= 0) return usage("--poll-ms takes a positive integer");
    } else {
      return usage(("unknown option " + a).c_str());
    }
  }
  if (test.empty() || ceiling_mb <= 0) return usage("--test and --ceiling-mb are required");
  if (first < 0 || first >= argc) return usage("no command after --");

  // Orphaned grandchildren come back to this process, so they stay in the measured tree.
  prctl(PR_SET_CHILD_SUBREAPER, 1);
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) sigaction(sig, &sa, nullptr);

  std::fflush(nullptr);
  const pid_t child = fork();
  if (child < 0) {
    std::perror("memory_ceiling: fork");
    return 2;
  }
  if (child == 0) {
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGQUIT}) sigaction(sig, &dfl, nullptr);
    execvp(argv[first], argv + first);
    std::fprintf(stderr, "memory_ceiling: cannot run %s: %s\n", argv[first], std::strerror(errno));
    _exit(127);
  }

  const bool listed = proc_children_listed();
  const long ceiling = ceiling_mb * kMiB;
  long peak = 0;
  bool main_done = false, over = false;
  int main_status = 0;
  long over_bytes = 0;
  while (!main_done) {
    if (g_forward_signal) {
      kill(child, g_forward_signal);
      g_forward_signal = 0;
    }
    long sum = 0;
    for (pid_t p : descendants(listed)) sum += resident_bytes(p);
    if (sum > peak) peak = sum;
    if (sum > ceiling) {
      over = true;
      over_bytes = sum;
      break;
    }
    reap(child, main_done, main_status);
    if (!main_done) sleep_ms(poll_ms);
  }
  // Whatever the command left running (or the whole tree, over the ceiling) goes now: a test
  // must not outlive itself holding memory or the output pipe.
  const int leftover = kill_tree(listed, child, main_done, main_status);
  peak = std::max(peak, children_maxrss_bytes());

  std::fflush(nullptr);
  if (over) {
    std::fprintf(stderr,
                 "memory_ceiling: test '%s' went over its memory ceiling of %ld MB (its processes "
                 "held %ld MB resident) and was stopped. A test that needs more says why and "
                 "sets MEMORY_MB in its CMakeLists.txt (6144 MB at most).\n",
                 test.c_str(), ceiling_mb, over_bytes / kMiB);
    std::printf("peak RSS %ld MB (ceiling %ld MB): over the ceiling\n", peak / kMiB, ceiling_mb);
    std::fflush(nullptr);
    return kCeilingExit;
  }
  if (leftover > 0)
    std::fprintf(stderr, "memory_ceiling: test '%s' left %d process(es) running; killed\n",
                 test.c_str(), leftover);
  std::printf("peak RSS %ld MB (ceiling %ld MB)\n", peak / kMiB, ceiling_mb);
  std::fflush(nullptr);
  if (WIFSIGNALED(main_status)) {
    // Passed on as the same signal, so CTest reports the crash as the command's own.
    const int sig = WTERMSIG(main_status);
    signal(sig, SIG_DFL);
    raise(sig);
    return 128 + sig;
  }
  return WIFEXITED(main_status) ? WEXITSTATUS(main_status) : 1;
}
