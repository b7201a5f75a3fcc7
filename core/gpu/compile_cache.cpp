#include "core/gpu/compile_cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <thread>

#include "core/gpu/nvrtc.h"

namespace souffle::gpu {

namespace {

namespace fs = std::filesystem;

// ---- the entry's bytes ----
//
// header (32 bytes, the machine's byte order: a cache folder belongs to one machine)
//   char magic[8] "SFXCACHE" | u32 format | u32 kind (1: an NVRTC result)
//   u64 payload length       | u64 checksum of the payload
// payload
//   full key, arch, PTX, CUBIN, log (u64 length + bytes each) | f64 compile ms
//   u64 kernel count | per kernel: name, then 8 figures as i64
constexpr char kMagic[8] = {'S', 'F', 'X', 'C', 'A', 'C', 'H', 'E'};
constexpr uint32_t kKindNvrtc = 1;
constexpr size_t kHeaderBytes = 32;
constexpr const char* kEntrySuffix = ".entry";
constexpr const char* kTempPrefix = ".tmp-";
constexpr const char* kCountersFile = "counters";

// A word-at-a-time 64-bit hash: it guards against truncation, torn writes and garbage, not
// against an adversary (the cache folder is the user's own).
uint64_t checksum(const char* p, size_t n) {
  auto mix = [](uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 33;
    return h;
  };
  uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    h = (h ^ mix(w)) * 0x100000001b3ull;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, p + i, n - i);
  h = (h ^ mix(tail ^ (n - i))) * 0x100000001b3ull;
  return mix(h);
}

class Writer {
 public:
  void u32(uint32_t v) { raw(&v, 4); }
  void u64(uint64_t v) { raw(&v, 8); }
  void i64(int64_t v) { raw(&v, 8); }
  void f64(double v) { raw(&v, 8); }
  void str(const void* p, size_t n) {
    u64(n);
    raw(p, n);
  }
  void str(const std::string& s) { str(s.data(), s.size()); }
  std::string& bytes() { return m_bytes; }

 private:
  void raw(const void* p, size_t n) { m_bytes.append(static_cast<const char*>(p), n); }
  std::string m_bytes;
};

class Reader {
 public:
  Reader(const char* p, size_t n) : m_p(p), m_n(n) {}
  bool u32(uint32_t& v) { return raw(&v, 4); }
  bool u64(uint64_t& v) { return raw(&v, 8); }
  bool i64(int64_t& v) { return raw(&v, 8); }
  bool f64(double& v) { return raw(&v, 8); }
  bool str(std::string& s) {
    uint64_t n = 0;
    if (!u64(n) || n > m_n - m_at) return false;
    s.assign(m_p + m_at, static_cast<size_t>(n));
    m_at += static_cast<size_t>(n);
    return true;
  }
  bool done() const { return m_at == m_n; }

 private:
  bool raw(void* v, size_t n) {
    if (n > m_n - m_at) return false;
    std::memcpy(v, m_p + m_at, n);
    m_at += n;
    return true;
  }
  const char* m_p;
  size_t m_n, m_at = 0;
};

enum class Decoded { Ok, Corrupt, OtherKey };

Decoded decode(const std::string& bytes, const std::string& full_key, CompileResult& out,
               std::string& why) {
  if (bytes.size() < kHeaderBytes) {
    why = "truncated: " + std::to_string(bytes.size()) + " bytes, shorter than its header";
    return Decoded::Corrupt;
  }
  if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    why = "not a cache entry (no magic number)";
    return Decoded::Corrupt;
  }
  Reader h(bytes.data() + 8, kHeaderBytes - 8);
  uint32_t format = 0, kind = 0;
  uint64_t length = 0, sum = 0;
  h.u32(format);
  h.u32(kind);
  h.u64(length);
  h.u64(sum);
  if (format != kCompileCacheFormat || kind != kKindNvrtc) {
    why = "format " + std::to_string(format) + " kind " + std::to_string(kind) + ", expected " +
          std::to_string(kCompileCacheFormat) + " kind " + std::to_string(kKindNvrtc);
    return Decoded::Corrupt;
  }
  if (length != bytes.size() - kHeaderBytes) {
    why = "truncated or extended: " + std::to_string(bytes.size() - kHeaderBytes) +
          " bytes of payload, the header says " + std::to_string(length);
    return Decoded::Corrupt;
  }
  const char* payload = bytes.data() + kHeaderBytes;
  if (checksum(payload, static_cast<size_t>(length)) != sum) {
    why = "checksum mismatch";
    return Decoded::Corrupt;
  }
  Reader r(payload, static_cast<size_t>(length));
  std::string stored_key, cubin;
  CompileResult c;
  uint64_t kernels = 0;
  bool ok = r.str(stored_key) && r.str(c.arch) && r.str(c.ptx) && r.str(cubin) && r.str(c.log) &&
            r.f64(c.compile_ms) && r.u64(kernels) && kernels <= length;
  for (uint64_t i = 0; ok && i < kernels; ++i) {
    KernelResources k;
    int64_t regs = 0, barriers = 0;
    ok = r.str(k.name) && r.i64(regs) && r.i64(barriers) && r.i64(k.shared_bytes) &&
         r.i64(k.stack_bytes) && r.i64(k.spill_store_bytes) && r.i64(k.spill_load_bytes) &&
         r.i64(k.callee_stack_bytes) && r.i64(k.const_bytes);
    k.registers = static_cast<int>(regs);
    k.barriers = static_cast<int>(barriers);
    c.kernels.push_back(std::move(k));
  }
  if (!ok || !r.done()) {
    why = "its fields do not fill its payload";
    return Decoded::Corrupt;
  }
  if (stored_key != full_key) return Decoded::OtherKey;  // a hash collision: not ours
  c.ok = true;
  c.cubin.assign(cubin.begin(), cubin.end());
  out = std::move(c);
  return Decoded::Ok;
}

bool read_all(int fd, std::string& bytes) {
  struct stat st {};
  if (fstat(fd, &st) != 0) return false;
  bytes.resize(static_cast<size_t>(st.st_size));
  size_t at = 0;
  while (at < bytes.size()) {
    ssize_t n = ::read(fd, bytes.data() + at, bytes.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    at += static_cast<size_t>(n);
  }
  bytes.resize(at);
  return true;
}

bool write_all(int fd, const std::string& bytes) {
  size_t at = 0;
  while (at < bytes.size()) {
    ssize_t n = ::write(fd, bytes.data() + at, bytes.size() - at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    at += static_cast<size_t>(n);
  }
  return true;
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

struct EntryFile {
  std::string path;
  int64_t bytes = 0;
  int64_t mtime_ns = 0;
};

/// The entries in `dir`; temporary files a crashed writer left (an hour old) are removed.
std::vector<EntryFile> list_entries(const std::string& dir) {
  std::vector<EntryFile> out;
  std::error_code ec;
  fs::directory_iterator it(dir, ec), end;
  const int64_t now_ns = static_cast<int64_t>(std::time(nullptr)) * 1000000000;
  for (; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    const bool entry = ends_with(name, kEntrySuffix), temp = name.rfind(kTempPrefix, 0) == 0;
    if (!entry && !temp) continue;
    struct stat st {};
    if (::stat(it->path().c_str(), &st) != 0 || !S_ISREG(st.st_mode)) continue;
    const int64_t mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 +
                             static_cast<int64_t>(st.st_mtim.tv_nsec);
    if (temp) {
      if (now_ns - mtime_ns > int64_t{3600} * 1000000000) ::unlink(it->path().c_str());
      continue;
    }
    out.push_back({it->path().string(), static_cast<int64_t>(st.st_size), mtime_ns});
  }
  return out;
}

/// Reads "hits N misses M" from an open counters file.
void read_counters(int fd, int64_t& hits, int64_t& misses) {
  char buf[128] = {};
  ssize_t n = ::pread(fd, buf, sizeof buf - 1, 0);
  hits = misses = 0;
  if (n <= 0) return;
  long long h = 0, m = 0;
  if (std::sscanf(buf, "hits %lld misses %lld", &h, &m) == 2) {
    hits = h;
    misses = m;
  }
}

std::atomic<uint64_t> g_temp_counter{0};

}  // namespace

// ---- where and how big ----

std::optional<int64_t> parse_byte_size(const std::string& text) {
  if (text.empty() || !std::isdigit(static_cast<unsigned char>(text[0]))) return std::nullopt;
  size_t used = 0;
  unsigned long long n = 0;
  try {
    n = std::stoull(text, &used);
  } catch (const std::out_of_range&) {
    return std::nullopt;
  }
  std::string unit = text.substr(used);
  if (!unit.empty() && (unit.back() == 'B' || unit.back() == 'b') && unit.size() > 1)
    unit.pop_back();  // "512MB", "1GiB" read as "512M", "1Gi"
  if (!unit.empty() && unit.back() == 'i') unit.pop_back();
  int shift = 0;
  if (unit == "K" || unit == "k")
    shift = 10;
  else if (unit == "M" || unit == "m")
    shift = 20;
  else if (unit == "G" || unit == "g")
    shift = 30;
  else if (!unit.empty())
    return std::nullopt;
  if (n > (static_cast<unsigned long long>(INT64_MAX) >> shift)) return std::nullopt;
  return static_cast<int64_t>(n << shift);
}

std::string default_compile_cache_dir() {
  auto env = [](const char* name) -> std::string {
    const char* v = std::getenv(name);
    return v ? v : "";
  };
  if (std::string d = env("SOUFFLE_CACHE_DIR"); !d.empty()) return d;
  // XDG: a relative XDG_CACHE_HOME is invalid and ignored.
  if (std::string d = env("XDG_CACHE_HOME"); !d.empty() && d[0] == '/')
    return d + "/souffle-explorer";
  if (std::string h = env("HOME"); !h.empty()) return h + "/.cache/souffle-explorer";
  return "";
}

int64_t default_compile_cache_bytes(std::string* problem) {
  const char* v = std::getenv("SOUFFLE_CACHE_MAX_SIZE");
  if (!v || !*v) return kDefaultCompileCacheBytes;
  if (std::optional<int64_t> n = parse_byte_size(v)) return *n;
  if (problem)
    *problem = std::string("SOUFFLE_CACHE_MAX_SIZE=") + v +
               " is not a size (bytes, or a number with K, M or G); the cap is 1G";
  return kDefaultCompileCacheBytes;
}

// ---- entries ----

std::string encode_compile_entry(const std::string& full_key, const CompileResult& result) {
  Writer p;
  p.str(full_key);
  p.str(result.arch);
  p.str(result.ptx);
  p.str(result.cubin.data(), result.cubin.size());
  p.str(result.log);
  p.f64(result.compile_ms);
  p.u64(result.kernels.size());
  for (const KernelResources& k : result.kernels) {
    p.str(k.name);
    p.i64(k.registers);
    p.i64(k.barriers);
    p.i64(k.shared_bytes);
    p.i64(k.stack_bytes);
    p.i64(k.spill_store_bytes);
    p.i64(k.spill_load_bytes);
    p.i64(k.callee_stack_bytes);
    p.i64(k.const_bytes);
  }
  const std::string& payload = p.bytes();
  Writer h;
  std::string out(kMagic, sizeof kMagic);
  h.u32(kCompileCacheFormat);
  h.u32(kKindNvrtc);
  h.u64(payload.size());
  h.u64(checksum(payload.data(), payload.size()));
  out += h.bytes();
  out += payload;
  return out;
}

bool decode_compile_entry(const std::string& bytes, const std::string& full_key, CompileResult& out,
                          std::string* why) {
  std::string reason;
  const Decoded d = decode(bytes, full_key, out, reason);
  if (d == Decoded::OtherKey) reason = "the entry is another source's";
  if (why) *why = reason;
  return d == Decoded::Ok;
}

// ---- the folder ----

DiskCompileCache::DiskCompileCache(std::string dir, int64_t max_bytes, Warn warn)
    : m_dir(std::move(dir)), m_max_bytes(max_bytes), m_warn(std::move(warn)), m_said(3, false) {}

std::string DiskCompileCache::entry_dir() const {
  return m_dir + "/nvrtc";
}

std::string DiskCompileCache::entry_path(const std::string& key) const {
  return entry_dir() + "/" + key + kEntrySuffix;
}

void DiskCompileCache::problem(CompileCacheProblem kind, const std::string& why) {
  std::string text;
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    const size_t k = static_cast<size_t>(kind);
    if (m_said[k]) return;
    m_said[k] = true;
    switch (kind) {
      case CompileCacheProblem::Unusable:
        text = "compile cache " + m_dir + " cannot be used (" + why +
               "): kernels are compiled but not kept";
        break;
      case CompileCacheProblem::Full:
        text =
            "compile cache " + m_dir + " is full (" + why + "): kernels are compiled but not kept";
        break;
      case CompileCacheProblem::Corrupt:
        text = "compile cache " + m_dir + ": removed a corrupt entry (" + why +
               "); its kernel is compiled again (further ones are not reported)";
        break;
    }
    m_warnings.push_back(text);
  }
  if (m_warn) m_warn(text);
}

std::vector<std::string> DiskCompileCache::warnings() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_warnings;
}

void DiskCompileCache::count(bool hit) {
  std::error_code ec;
  fs::create_directories(entry_dir(), ec);  // a failure is said by the store that follows
  const std::string path = entry_dir() + "/" + kCountersFile;
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  if (::flock(fd, LOCK_EX) == 0) {
    int64_t hits = 0, misses = 0;
    read_counters(fd, hits, misses);
    (hit ? hits : misses) += 1;
    const std::string text =
        "hits " + std::to_string(hits) + " misses " + std::to_string(misses) + "\n";
    if (::pwrite(fd, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size()))
      (void)!::ftruncate(fd, static_cast<off_t>(text.size()));
  }
  ::close(fd);  // releases the lock
}

bool DiskCompileCache::load(const std::string& key, const std::string& full_key,
                            CompileResult& out) {
  const std::string path = entry_path(key);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    count(false);
    return false;
  }
  std::string bytes, why;
  const bool read = read_all(fd, bytes);
  CompileResult r;
  const Decoded d = read ? decode(bytes, full_key, r, why) : Decoded::Corrupt;
  if (d == Decoded::Ok) {
    ::futimens(fd, nullptr);  // used now (a read-only folder keeps its old order)
    ::close(fd);
    r.key = key;
    out = std::move(r);
    count(true);
    return true;
  }
  if (d == Decoded::Corrupt) {
    // Remove it unless a writer has renamed a fresh entry over it since it was opened.
    struct stat opened {
    }, now{};
    if (::fstat(fd, &opened) == 0 && ::stat(path.c_str(), &now) == 0 &&
        opened.st_ino == now.st_ino && opened.st_dev == now.st_dev)
      ::unlink(path.c_str());
    problem(CompileCacheProblem::Corrupt,
            fs::path(path).filename().string() + ": " + (read ? why : "unreadable"));
  }
  ::close(fd);
  count(false);
  return false;
}

void DiskCompileCache::store(const std::string& key, const std::string& full_key,
                             const CompileResult& result) {
  if (!result.ok) return;  // a failure is cheap to reproduce and its message names the source
  const std::string bytes = encode_compile_entry(full_key, result);
  if (static_cast<int64_t>(bytes.size()) > m_max_bytes) {
    problem(CompileCacheProblem::Full, "an entry of " + std::to_string(bytes.size()) +
                                           " bytes is over the cap of " +
                                           std::to_string(m_max_bytes) + " bytes");
    return;
  }
  std::error_code ec;
  fs::create_directories(entry_dir(), ec);
  if (ec) {
    problem(CompileCacheProblem::Unusable, "cannot create " + entry_dir() + ": " + ec.message());
    return;
  }
  // A temporary name no other writer (process or thread) uses, in the same folder so that the
  // rename is atomic.
  const std::string temp =
      entry_dir() + "/" + kTempPrefix + key + "-" + std::to_string(::getpid()) + "-" +
      std::to_string(std::hash<std::thread::id>{}(std::this_thread::get_id())) + "-" +
      std::to_string(g_temp_counter.fetch_add(1));
  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    problem(CompileCacheProblem::Unusable,
            "cannot write in " + entry_dir() + ": " + std::strerror(errno));
    return;
  }
  bool ok = write_all(fd, bytes);
  int err = ok ? 0 : errno;
  if (ok && ::fsync(fd) != 0) {
    ok = false;
    err = errno;
  }
  ::close(fd);
  if (ok && ::rename(temp.c_str(), entry_path(key).c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    ::unlink(temp.c_str());
    const bool full = err == ENOSPC || err == EDQUOT || err == EFBIG;
    problem(full ? CompileCacheProblem::Full : CompileCacheProblem::Unusable,
            "cannot write " + std::to_string(bytes.size()) + " bytes in " + entry_dir() + ": " +
                std::strerror(err));
    return;
  }
  evict(m_max_bytes);
}

void DiskCompileCache::evict(int64_t max_bytes) {
  std::vector<EntryFile> entries = list_entries(entry_dir());
  int64_t total = 0;
  for (const EntryFile& e : entries) total += e.bytes;
  if (total <= max_bytes) return;
  std::sort(entries.begin(), entries.end(), [](const EntryFile& a, const EntryFile& b) {
    return a.mtime_ns != b.mtime_ns ? a.mtime_ns < b.mtime_ns : a.path < b.path;
  });
  for (const EntryFile& e : entries) {
    if (total <= max_bytes) break;
    // Another process may have removed it first: its bytes are gone all the same.
    ::unlink(e.path.c_str());
    total -= e.bytes;
  }
}

CompileCacheStats DiskCompileCache::stats() const {
  CompileCacheStats s;
  s.dir = m_dir;
  s.max_bytes = m_max_bytes;
  for (const EntryFile& e : list_entries(entry_dir())) {
    ++s.entries;
    s.bytes += e.bytes;
    const int64_t t = e.mtime_ns / 1000000000;
    s.oldest = s.oldest == 0 ? t : std::min(s.oldest, t);
    s.newest = std::max(s.newest, t);
  }
  const std::string path = entry_dir() + "/" + kCountersFile;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd >= 0) {
    if (::flock(fd, LOCK_SH) == 0) read_counters(fd, s.hits, s.misses);
    ::close(fd);
  }
  return s;
}

int64_t DiskCompileCache::clear() {
  int64_t removed = 0;
  std::error_code ec;
  fs::directory_iterator it(entry_dir(), ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    // A temporary file may be a running writer's: list_entries removes it when it is stale.
    if (ends_with(name, kEntrySuffix)) {
      if (::unlink(it->path().c_str()) == 0) ++removed;
    } else if (name == kCountersFile) {
      ::unlink(it->path().c_str());
    }
  }
  return removed;
}

}  // namespace souffle::gpu
