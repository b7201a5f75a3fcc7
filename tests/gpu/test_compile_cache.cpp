// The persistent compile cache: entries served from disk byte for byte, keys that split on any
// difference, corrupt entries and unusable or full folders that never fail a compile, LRU
// eviction under the cap, and writers racing on one key.
#include "core/gpu/compile_cache.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/gpu/nvrtc.h"

namespace souffle::gpu {
namespace {

namespace fs = std::filesystem;

#define SKIP_WITHOUT_NVRTC() \
  if (!nvrtc_available()) GTEST_SKIP() << "[SKIP] this build has no NVRTC"

/// A fresh folder under the system's temporary folder, removed at the end.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& tag) {
    path = fs::temp_directory_path() /
           ("souffle_compile_cache_" + tag + "_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ec);
    fs::remove_all(path, ec);
  }
};

/// Points the process-wide cache at `dir` (cap `max_bytes`) with an empty memory cache, and
/// collects what it says; puts the folder and the handler back at the end.
struct GlobalCacheAt {
  std::string saved_dir;
  int64_t saved_cap;
  std::vector<std::string> warnings;
  GlobalCacheAt(const std::string& dir, int64_t max_bytes = kDefaultCompileCacheBytes) {
    CompileCache& c = CompileCache::global();
    saved_dir = c.disk_dir();
    saved_cap = c.disk() ? c.disk()->max_bytes() : -1;
    c.set_disk_dir(dir, max_bytes);
    c.clear_memory();
    c.set_warning_handler([this](const std::string& w) { warnings.push_back(w); });
  }
  ~GlobalCacheAt() {
    CompileCache& c = CompileCache::global();
    c.set_disk_dir(saved_dir, saved_cap);
    c.clear_memory();
    c.set_warning_handler(
        [](const std::string& w) { fprintf(stderr, "warning: %s\n", w.c_str()); });
  }
};

std::string kernel_source(const std::string& name, int value = 7) {
  return "extern \"C\" __global__ void " + name +
         "(int* y) { y[threadIdx.x] = " + std::to_string(value) + " + (int)blockIdx.x; }\n";
}

CompileResult compile(const std::string& source, const std::string& arch = "sm_80") {
  CompileOptions o;
  o.arch = arch;
  return compile_cuda(source, "cache_test.cu", o);
}

int64_t count_entries(const std::string& dir) {
  int64_t n = 0;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir + "/nvrtc", ec))
    n += e.path().extension() == ".entry";
  return n;
}

/// A result as NVRTC would give it, `bytes` of CUBIN.
CompileResult fake_result(const std::string& tag, size_t bytes) {
  CompileResult r;
  r.ok = true;
  r.arch = "sm_90";
  r.ptx = ".entry " + tag;
  r.cubin.assign(bytes, static_cast<uint8_t>(tag.size()));
  r.log = "ptxas info : Compiling entry function '" + tag + "'";
  KernelResources k;
  k.name = tag;
  k.registers = 40;
  k.shared_bytes = 2048;
  k.spill_store_bytes = 8;
  r.kernels.push_back(k);
  r.compile_ms = 12.5;
  return r;
}

void set_mtime(const std::string& path, time_t seconds) {
  struct timespec times[2] = {{seconds, 0}, {seconds, 0}};
  ASSERT_EQ(::utimensat(AT_FDCWD, path.c_str(), times, 0), 0) << path;
}

TEST(CompileCacheEntry, RoundTripsEveryField) {
  const CompileResult r = fake_result("entry_k", 1000);
  const std::string bytes = encode_compile_entry("the full key", r);
  CompileResult back;
  std::string why;
  ASSERT_TRUE(decode_compile_entry(bytes, "the full key", back, &why)) << why;
  EXPECT_TRUE(back.ok);
  EXPECT_EQ(back.arch, r.arch);
  EXPECT_EQ(back.ptx, r.ptx);
  EXPECT_EQ(back.cubin, r.cubin);
  EXPECT_EQ(back.log, r.log);
  EXPECT_EQ(back.compile_ms, r.compile_ms);
  ASSERT_EQ(back.kernels.size(), 1u);
  EXPECT_EQ(back.kernels[0].name, "entry_k");
  EXPECT_EQ(back.kernels[0].registers, 40);
  EXPECT_EQ(back.kernels[0].shared_bytes, 2048);
  EXPECT_EQ(back.kernels[0].spill_store_bytes, 8);
}

TEST(CompileCacheEntry, RejectsTruncatedGarbageFlippedAndOtherKeys) {
  const std::string bytes = encode_compile_entry("k", fake_result("x", 300));
  CompileResult out;
  std::string why;
  EXPECT_FALSE(decode_compile_entry(bytes.substr(0, bytes.size() - 1), "k", out, &why));
  EXPECT_NE(why.find("truncated"), std::string::npos) << why;
  EXPECT_FALSE(decode_compile_entry(bytes.substr(0, 10), "k", out, &why));
  EXPECT_NE(why.find("header"), std::string::npos) << why;
  EXPECT_FALSE(decode_compile_entry(std::string(bytes.size(), 'z'), "k", out, &why));
  EXPECT_NE(why.find("magic"), std::string::npos) << why;
  std::string flipped = bytes;
  flipped[bytes.size() / 2] ^= 0x10;
  EXPECT_FALSE(decode_compile_entry(flipped, "k", out, &why));
  EXPECT_EQ(why, "checksum mismatch");
  std::string other_format = bytes;
  other_format[8] = 99;
  EXPECT_FALSE(decode_compile_entry(other_format, "k", out, &why));
  EXPECT_NE(why.find("format 99"), std::string::npos) << why;
  EXPECT_FALSE(decode_compile_entry(bytes, "another key", out, &why));
  EXPECT_FALSE(out.ok);  // left alone
}

TEST(CompileCacheConfig, FolderAndCapFromTheEnvironment) {
  auto saved = [](const char* name) {
    const char* v = std::getenv(name);
    return std::optional<std::string>(v ? std::optional<std::string>(v) : std::nullopt);
  };
  const std::optional<std::string> keep_dir = saved("SOUFFLE_CACHE_DIR"),
                                   keep_xdg = saved("XDG_CACHE_HOME"), keep_home = saved("HOME");
  auto restore = [](const char* name, const std::optional<std::string>& v) {
    if (v)
      ::setenv(name, v->c_str(), 1);
    else
      ::unsetenv(name);
  };
  ::setenv("SOUFFLE_CACHE_DIR", "/somewhere/cache", 1);
  EXPECT_EQ(default_compile_cache_dir(), "/somewhere/cache");
  ::unsetenv("SOUFFLE_CACHE_DIR");
  ::setenv("XDG_CACHE_HOME", "/xdg", 1);
  EXPECT_EQ(default_compile_cache_dir(), "/xdg/souffle-explorer");
  ::setenv("XDG_CACHE_HOME", "relative", 1);  // invalid by the XDG rules: ignored
  ::setenv("HOME", "/home/someone", 1);
  EXPECT_EQ(default_compile_cache_dir(), "/home/someone/.cache/souffle-explorer");
  restore("SOUFFLE_CACHE_DIR", keep_dir);
  restore("XDG_CACHE_HOME", keep_xdg);
  restore("HOME", keep_home);

  EXPECT_EQ(parse_byte_size("1G"), int64_t{1} << 30);
  EXPECT_EQ(parse_byte_size("512M"), int64_t{512} << 20);
  EXPECT_EQ(parse_byte_size("64KiB"), int64_t{64} << 10);
  EXPECT_EQ(parse_byte_size("1000"), 1000);
  EXPECT_EQ(parse_byte_size(""), std::nullopt);
  EXPECT_EQ(parse_byte_size("-1"), std::nullopt);
  EXPECT_EQ(parse_byte_size("12T"), std::nullopt);
  EXPECT_EQ(parse_byte_size("lots"), std::nullopt);
  ::setenv("SOUFFLE_CACHE_MAX_SIZE", "lots", 1);
  std::string problem;
  EXPECT_EQ(default_compile_cache_bytes(&problem), kDefaultCompileCacheBytes);
  EXPECT_NE(problem.find("SOUFFLE_CACHE_MAX_SIZE=lots"), std::string::npos) << problem;
  ::setenv("SOUFFLE_CACHE_MAX_SIZE", "2M", 1);
  EXPECT_EQ(default_compile_cache_bytes(), int64_t{2} << 20);
  ::unsetenv("SOUFFLE_CACHE_MAX_SIZE");
}

TEST(CompileCache, SecondCompileIsServedFromDiskByteForByte) {
  SKIP_WITHOUT_NVRTC();
  TempDir dir("served");
  GlobalCacheAt at(dir.path.string());
  const std::string src = kernel_source("served_k");
  for (const char* arch : {"sm_80", "sm_90"}) {
    const CompileResult a = compile(src, arch);
    ASSERT_TRUE(a.ok) << a.error;
    EXPECT_FALSE(a.from_cache);  // NVRTC ran: the folder was empty
    EXPECT_GT(a.compile_ms, 0);
    CompileCache::global().clear_memory();  // as a new process would start
    const CompileResult b = compile(src, arch);
    ASSERT_TRUE(b.ok) << b.error;
    EXPECT_TRUE(b.from_cache);
    EXPECT_EQ(b.compile_ms, 0);
    EXPECT_EQ(b.key, a.key);
    EXPECT_EQ(b.ptx, a.ptx);
    EXPECT_EQ(b.cubin, a.cubin);
    EXPECT_EQ(b.log, a.log);
    ASSERT_EQ(b.kernels.size(), a.kernels.size());
    const KernelResources* ka = a.find_kernel("served_k");
    const KernelResources* kb = b.find_kernel("served_k");
    ASSERT_NE(ka, nullptr);
    ASSERT_NE(kb, nullptr);
    EXPECT_EQ(kb->registers, ka->registers);
    EXPECT_EQ(kb->shared_bytes, ka->shared_bytes);
    EXPECT_EQ(kb->spill_store_bytes, ka->spill_store_bytes);
    EXPECT_EQ(kb->const_bytes, ka->const_bytes);
  }
  EXPECT_EQ(count_entries(dir.path.string()), 2);
  const CompileCacheStats s = CompileCache::global().disk()->stats();
  EXPECT_EQ(s.entries, 2);
  EXPECT_EQ(s.hits, 2);
  EXPECT_EQ(s.misses, 2);
  EXPECT_GT(s.bytes, 0);
  EXPECT_GT(s.oldest, 0);
  EXPECT_GE(s.newest, s.oldest);
  EXPECT_TRUE(at.warnings.empty());
}

TEST(CompileCache, NoCacheCompilesAndKeepsNothing) {
  SKIP_WITHOUT_NVRTC();
  TempDir dir("nocache");
  GlobalCacheAt at(dir.path.string());
  CompileOptions o;
  o.use_cache = false;
  const std::string src = kernel_source("nocache_k");
  ASSERT_TRUE(compile_cuda(src, "n.cu", o).ok);
  const CompileResult again = compile_cuda(src, "n.cu", o);
  ASSERT_TRUE(again.ok);
  EXPECT_FALSE(again.from_cache);
  EXPECT_EQ(count_entries(dir.path.string()), 0);
}

TEST(CompileCache, APlantedDifferenceInSourceArchOrOptionsMisses) {
  SKIP_WITHOUT_NVRTC();
  TempDir dir("differ");
  GlobalCacheAt at(dir.path.string());
  const std::string src = kernel_source("differ_k", 7);
  const CompileResult base = compile(src, "sm_80");
  ASSERT_TRUE(base.ok) << base.error;
  CompileCache::global().clear_memory();  // every answer below comes from disk or NVRTC
  const CompileResult source = compile(kernel_source("differ_k", 8), "sm_80");
  const CompileResult arch = compile(src, "sm_90");
  CompileOptions o;
  o.arch = "sm_80";
  o.max_registers = 32;
  const CompileResult regs = compile_cuda(src, "cache_test.cu", o);
  o.max_registers = 0;
  o.fast_math = true;
  const CompileResult fast = compile_cuda(src, "cache_test.cu", o);
  for (const CompileResult* r : {&source, &arch, &regs, &fast}) {
    ASSERT_TRUE(r->ok) << r->error;
    EXPECT_FALSE(r->from_cache);
    EXPECT_NE(r->key, base.key);
  }
  CompileCache::global().clear_memory();
  const CompileResult same = compile(src, "sm_80");
  EXPECT_TRUE(same.from_cache);
  EXPECT_EQ(same.cubin, base.cubin);
  EXPECT_EQ(count_entries(dir.path.string()), 5);
}

TEST(CompileCache, TruncatedAndGarbageEntriesAreRecompiledWithOneWarning) {
  SKIP_WITHOUT_NVRTC();
  TempDir dir("corrupt");
  GlobalCacheAt at(dir.path.string());
  const std::string src_a = kernel_source("corrupt_a"), src_b = kernel_source("corrupt_b");
  const CompileResult a = compile(src_a), b = compile(src_b);
  ASSERT_TRUE(a.ok && b.ok);
  const std::string path_a = CompileCache::global().disk()->entry_path(a.key);
  const std::string path_b = CompileCache::global().disk()->entry_path(b.key);
  ASSERT_TRUE(fs::exists(path_a) && fs::exists(path_b));
  fs::resize_file(path_a, fs::file_size(path_a) / 2);  // truncated
  {
    std::ofstream garbage(path_b, std::ios::binary | std::ios::trunc);
    garbage << std::string(4096, '\x5a');
  }
  CompileCache::global().clear_memory();
  const CompileResult a2 = compile(src_a), b2 = compile(src_b);
  ASSERT_TRUE(a2.ok) << a2.error;
  ASSERT_TRUE(b2.ok) << b2.error;
  EXPECT_FALSE(a2.from_cache);  // recompiled
  EXPECT_FALSE(b2.from_cache);
  EXPECT_EQ(a2.cubin, a.cubin);
  EXPECT_EQ(b2.cubin, b.cubin);
  ASSERT_EQ(at.warnings.size(), 1u);
  EXPECT_NE(at.warnings[0].find("corrupt entry"), std::string::npos) << at.warnings[0];
  // The recompiled results replaced the corrupt entries.
  CompileCache::global().clear_memory();
  EXPECT_TRUE(compile(src_a).from_cache);
  EXPECT_TRUE(compile(src_b).from_cache);
  EXPECT_EQ(at.warnings.size(), 1u);
}

TEST(CompileCache, AnUnusableFolderStillCompilesAndSaysSoOnce) {
  SKIP_WITHOUT_NVRTC();
  TempDir dir("unusable");
  // Tests may run as root, whom permissions do not stop: a folder under a regular file can be
  // neither created nor written by anyone.
  const fs::path file = dir.path / "a_file";
  std::ofstream(file) << "not a folder";
  GlobalCacheAt at((file / "cache").string());
  for (const char* name : {"unusable_a", "unusable_b"}) {
    const CompileResult r = compile(kernel_source(name));
    ASSERT_TRUE(r.ok) << r.error;
    EXPECT_FALSE(r.from_cache);
    ASSERT_NE(r.find_kernel(name), nullptr);
  }
  ASSERT_EQ(at.warnings.size(), 1u);
  EXPECT_NE(at.warnings[0].find("cannot be used"), std::string::npos) << at.warnings[0];
  EXPECT_NE(at.warnings[0].find("compiled but not kept"), std::string::npos) << at.warnings[0];
}

/// In a read-only folder, an entry is still served and a store says once why it keeps nothing:
/// 0 when so, else the number of the check that failed.
int check_read_only(const std::string& dir) {
  DiskCompileCache cache(dir, kDefaultCompileCacheBytes);
  CompileResult hit;
  if (!cache.load("kept", "kept", hit) || hit.cubin != fake_result("kept", 500).cubin) return 1;
  cache.store("new1", "new1", fake_result("new1", 500));
  cache.store("new2", "new2", fake_result("new2", 500));
  if (fs::exists(cache.entry_path("new1")) || fs::exists(cache.entry_path("new2"))) return 2;
  if (cache.warnings().size() != 1) return 3;
  if (cache.warnings()[0].find("cannot be used") == std::string::npos) return 4;
  return 0;
}

TEST(CompileCache, AReadOnlyFolderServesWhatItHasAndKeepsNothing) {
  TempDir dir("readonly");
  DiskCompileCache fill(dir.path.string(), kDefaultCompileCacheBytes);
  fill.store("kept", "kept", fake_result("kept", 500));
  fs::permissions(dir.path / "nvrtc", fs::perms(0555));
  if (::geteuid() != 0) {
    EXPECT_EQ(check_read_only(dir.path.string()), 0);
    return;
  }
  // Root writes in a 0555 folder: the check runs in a child that has become nobody.
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(100);
    ::_exit(check_read_only(dir.path.string()));
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "check " << WEXITSTATUS(status) << " failed";
}

TEST(CompileCache, AFullCacheStillCompiles) {
  SKIP_WITHOUT_NVRTC();
  TempDir dir("full");
  GlobalCacheAt at(dir.path.string(), 100);  // the cap is below one entry
  for (const char* name : {"full_a", "full_b"}) {
    const CompileResult r = compile(kernel_source(name));
    ASSERT_TRUE(r.ok) << r.error;
    ASSERT_NE(r.find_kernel(name), nullptr);
  }
  EXPECT_EQ(count_entries(dir.path.string()), 0);
  ASSERT_EQ(at.warnings.size(), 1u);
  EXPECT_NE(at.warnings[0].find("is full"), std::string::npos) << at.warnings[0];
}

TEST(CompileCache, AFullDiskStillCompiles) {
  SKIP_WITHOUT_NVRTC();
  TempDir dir("disk_full");
  GlobalCacheAt at(dir.path.string());
  // The file size limit makes every write past 1 KiB fail with EFBIG, as a full disk fails.
  struct rlimit saved {};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto saved_signal = std::signal(SIGXFSZ, SIG_IGN);
  struct rlimit small = saved;
  small.rlim_cur = 1024;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  const CompileResult r = compile(kernel_source("disk_full_k"));
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, saved_signal);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(count_entries(dir.path.string()), 0);
  ASSERT_EQ(at.warnings.size(), 1u);
  EXPECT_NE(at.warnings[0].find("is full"), std::string::npos) << at.warnings[0];
  // No temporary file is left behind.
  for (const auto& e : fs::directory_iterator(dir.path / "nvrtc"))
    EXPECT_NE(e.path().filename().string().rfind(".tmp-", 0), 0u) << e.path();
}

TEST(CompileCache, EvictsTheLeastRecentlyUsedBeyondTheCap) {
  TempDir dir("lru");
  const std::string one = encode_compile_entry("key0", fake_result("k0", 1000));
  const int64_t entry = static_cast<int64_t>(one.size());
  DiskCompileCache cache(dir.path.string(), 3 * entry + entry / 2);  // room for three
  for (int i = 0; i < 3; ++i) {
    cache.store("key" + std::to_string(i), "key" + std::to_string(i),
                fake_result("k" + std::to_string(i), 1000));
    set_mtime(cache.entry_path("key" + std::to_string(i)), 1000000 + i);  // key0 oldest
  }
  CompileResult hit;
  ASSERT_TRUE(cache.load("key0", "key0", hit));  // key0 is used now: key1 is the oldest
  cache.store("key3", "key3", fake_result("k3", 1000));
  EXPECT_TRUE(fs::exists(cache.entry_path("key0")));
  EXPECT_FALSE(fs::exists(cache.entry_path("key1")));
  EXPECT_TRUE(fs::exists(cache.entry_path("key2")));
  EXPECT_TRUE(fs::exists(cache.entry_path("key3")));
  CompileCacheStats s = cache.stats();
  EXPECT_EQ(s.entries, 3);
  EXPECT_LE(s.bytes, cache.max_bytes());
  EXPECT_EQ(s.oldest, 1000002);
  for (int i = 4; i < 10; ++i)
    cache.store("key" + std::to_string(i), "key" + std::to_string(i),
                fake_result("k" + std::to_string(i), 1000));
  s = cache.stats();
  EXPECT_EQ(s.entries, 3);
  EXPECT_LE(s.bytes, cache.max_bytes());
  EXPECT_TRUE(cache.warnings().empty());
  EXPECT_EQ(cache.clear(), 3);
  s = cache.stats();
  EXPECT_EQ(s.entries, 0);
  EXPECT_EQ(s.hits, 0);
  EXPECT_EQ(s.oldest, 0);
}

TEST(CompileCache, WritersRacingOnOneKeyLeaveOneValidEntry) {
  TempDir dir("race");
  const CompileResult r = fake_result("raced", 200000);
  const std::string key = "0123456789abcdef0123456789abcdef";
  // Processes: each writes the same key many times while the parent reads it.
  std::vector<pid_t> children;
  for (int c = 0; c < 3; ++c) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      DiskCompileCache mine(dir.path.string(), kDefaultCompileCacheBytes);
      for (int i = 0; i < 30; ++i) mine.store(key, "the full key", r);
      ::_exit(mine.warnings().empty() ? 0 : 1);
    }
    children.push_back(pid);
  }
  // Threads of this process too, readers among them: a reader sees a whole entry or none.
  DiskCompileCache cache(dir.path.string(), kDefaultCompileCacheBytes);
  std::atomic<int> torn{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 30; ++i) {
        if (t % 2 == 0) {
          cache.store(key, "the full key", r);
        } else {
          CompileResult got;
          if (cache.load(key, "the full key", got) && got.cubin != r.cubin) ++torn;
        }
      }
    });
  for (std::thread& t : threads) t.join();
  for (pid_t pid : children) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  EXPECT_EQ(torn.load(), 0);
  EXPECT_TRUE(cache.warnings().empty()) << cache.warnings().front();  // no corrupt entry seen
  int entries = 0, temps = 0;
  for (const auto& e : fs::directory_iterator(dir.path / "nvrtc")) {
    entries += e.path().extension() == ".entry";
    temps += e.path().filename().string().rfind(".tmp-", 0) == 0;
  }
  EXPECT_EQ(entries, 1);
  EXPECT_EQ(temps, 0);
  CompileResult got;
  ASSERT_TRUE(cache.load(key, "the full key", got));
  EXPECT_EQ(got.cubin, r.cubin);
}

}  // namespace
}  // namespace souffle::gpu
