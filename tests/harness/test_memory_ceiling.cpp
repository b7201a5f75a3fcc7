// memory_ceiling, the wrapper every CTest test runs under: a tree over its ceiling is stopped
// with a message naming the test and the ceiling; one under it passes and reports its peak.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <chrono>
#include <cstdio>
#include <regex>
#include <string>

namespace {

struct Outcome {
  int code = -1;
  std::string out;
  double seconds = 0;
};

/// memory_ceiling --test hog --ceiling-mb CEILING -- memory_hog HOG_ARGS, stdout and stderr.
Outcome run(long ceiling_mb, const std::string& hog_args) {
  const std::string cmd = std::string(MEMORY_CEILING) + " --test hog --ceiling-mb " +
                          std::to_string(ceiling_mb) + " -- " + MEMORY_HOG + " " + hog_args +
                          " 2>&1";
  const auto start = std::chrono::steady_clock::now();
  Outcome r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof buf, p)) r.out.append(buf, n);
  const int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

/// The peak the last line reports, in MB (-1 when there is none).
long reported_peak(const std::string& out, long ceiling_mb) {
  std::smatch m;
  const std::regex line("peak RSS ([0-9]+) MB \\(ceiling " + std::to_string(ceiling_mb) + " MB\\)");
  return std::regex_search(out, m, line) ? std::stol(m[1]) : -1;
}

TEST(MemoryCeiling, UnderTheCeilingPassesAndReportsItsPeak) {
  Outcome r = run(400, "120");
  EXPECT_EQ(r.code, 0) << r.out;
  const long peak = reported_peak(r.out, 400);
  EXPECT_GE(peak, 120) << r.out;
  EXPECT_LT(peak, 400) << r.out;
  EXPECT_EQ(r.out.find("over"), std::string::npos) << r.out;
}

TEST(MemoryCeiling, OverTheCeilingFailsNamingTheTestAndTheCeiling) {
  // Holds 700 MB for 20 s unless stopped: stopped well before.
  Outcome r = run(200, "700 --hold-ms 20000");
  EXPECT_EQ(r.code, 86) << r.out;
  EXPECT_NE(r.out.find("test 'hog' went over its memory ceiling of 200 MB"), std::string::npos)
      << r.out;
  EXPECT_GE(reported_peak(r.out, 200), 200) << r.out;
  EXPECT_LT(r.seconds, 15) << r.out;
}

TEST(MemoryCeiling, TheWholeProcessTreeCounts) {
  // Three processes of 150 MB: each under a 300 MB ceiling, together over it.
  Outcome r = run(300, "150 --children 2 --hold-ms 3000");
  EXPECT_EQ(r.code, 86) << r.out;
  EXPECT_NE(r.out.find("ceiling of 300 MB"), std::string::npos) << r.out;
  // The same tree under a ceiling it fits passes, reporting the sum.
  Outcome ok = run(900, "150 --children 2 --hold-ms 1000");
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_GE(reported_peak(ok.out, 900), 450) << ok.out;
}

TEST(MemoryCeiling, AnOrphanedGrandchildStillCountsAndIsStoppedAtTheEnd) {
  // The orphan (150 MB, held 10 s) and the command (150 MB) together exceed 250 MB.
  Outcome over = run(250, "150 --orphan --hold-ms 1000");
  EXPECT_EQ(over.code, 86) << over.out;
  // Under a ceiling it fits, the leftover orphan is killed when the command ends.
  Outcome ok = run(900, "150 --orphan --hold-ms 1000");
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_NE(ok.out.find("left 1 process(es) running; killed"), std::string::npos) << ok.out;
  EXPECT_LT(ok.seconds, 8) << ok.out;
}

TEST(MemoryCeiling, TheCommandsExitStatusPassesThrough) {
  Outcome r = run(400, "10 --hold-ms 10 --exit 3");
  EXPECT_EQ(r.code, 3) << r.out;
  EXPECT_GE(reported_peak(r.out, 400), 0) << r.out;
  Outcome missing = run(400, "");  // memory_hog without arguments exits 2
  EXPECT_EQ(missing.code, 2) << missing.out;
}

TEST(MemoryCeiling, RefusesAMissingCeiling) {
  FILE* p = popen((std::string(MEMORY_CEILING) + " --test x -- true 2>&1").c_str(), "r");
  ASSERT_NE(p, nullptr);
  char buf[512];
  std::string out;
  while (size_t n = fread(buf, 1, sizeof buf, p)) out.append(buf, n);
  const int status = pclose(p);
  EXPECT_EQ(WEXITSTATUS(status), 2) << out;
  EXPECT_NE(out.find("--ceiling-mb"), std::string::npos) << out;
}

}  // namespace
