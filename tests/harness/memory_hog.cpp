/// \file memory_hog: a process tree of known resident size, for the tests of memory_ceiling.
///
/// Usage: memory_hog MB [--children N] [--orphan] [--hold-ms MS] [--exit CODE]
/// Touches MB MiB, as do N forked children (each MB too) and, with --orphan, a grandchild whose
/// parent exits at once (so it is nobody's child but the subreaper's); holds the memory for MS
/// milliseconds (the orphan ten times longer), then exits with CODE.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

void hold(long mb, int ms) {
  std::vector<char*> blocks;
  for (long i = 0; i < mb; ++i) {
    char* b = static_cast<char*>(std::malloc(1 << 20));
    std::memset(b, 1, 1 << 20);  // resident, not just reserved
    blocks.push_back(b);
  }
  usleep(static_cast<useconds_t>(ms) * 1000);
  for (char* b : blocks) std::free(b);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return 2;
  const long mb = std::atol(argv[1]);
  int children = 0, hold_ms = 500, code = 0;
  bool orphan = false;
  for (int i = 2; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--children" && i + 1 < argc)
      children = std::atoi(argv[++i]);
    else if (a == "--hold-ms" && i + 1 < argc)
      hold_ms = std::atoi(argv[++i]);
    else if (a == "--exit" && i + 1 < argc)
      code = std::atoi(argv[++i]);
    else if (a == "--orphan")
      orphan = true;
    else
      return 2;
  }
  if (orphan) {
    const pid_t middle = fork();
    if (middle == 0) {
      if (fork() == 0) {
        hold(mb, hold_ms * 10);
        _exit(0);
      }
      _exit(0);  // the grandchild is orphaned
    }
    waitpid(middle, nullptr, 0);
  }
  std::vector<pid_t> kids;
  for (int c = 0; c < children; ++c) {
    const pid_t p = fork();
    if (p == 0) {
      hold(mb, hold_ms);
      _exit(0);
    }
    kids.push_back(p);
  }
  hold(mb, hold_ms);
  for (pid_t p : kids) waitpid(p, nullptr, 0);
  return code;
}
