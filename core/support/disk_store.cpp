#include "core/support/disk_store.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <thread>

#include "core/support/byte_io.h"

namespace souffle {

namespace {

namespace fs = std::filesystem;

// ---- the entry's bytes ----
//
// header (32 bytes, the machine's byte order: a cache folder belongs to one machine)
//   char magic[8] "SFXCACHE" | u32 format | u32 kind
//   u64 payload length       | u64 checksum of the payload
// payload
//   full key (u64 length + bytes) | the caller's body
constexpr char kMagic[8] = {'S', 'F', 'X', 'C', 'A', 'C', 'H', 'E'};
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

std::string disk_key_hex(const std::string& s) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx",
                static_cast<unsigned long long>(checksum(s.data(), s.size())));
  return buf;
}

std::string encode_disk_entry(uint32_t format, uint32_t kind, const std::string& full_key,
                              const std::string& body) {
  ByteWriter p;
  p.str(full_key);
  std::string payload = std::move(p.bytes());
  payload += body;
  ByteWriter h;
  h.u32(format);
  h.u32(kind);
  h.u64(payload.size());
  h.u64(checksum(payload.data(), payload.size()));
  std::string out(kMagic, sizeof kMagic);
  out += h.bytes();
  out += payload;
  return out;
}

DiskEntryRead decode_disk_entry(const std::string& bytes, uint32_t format, uint32_t kind,
                                const std::string& full_key, std::string& body, std::string& why) {
  if (bytes.size() < kHeaderBytes) {
    why = "truncated: " + std::to_string(bytes.size()) + " bytes, shorter than its header";
    return DiskEntryRead::Corrupt;
  }
  if (std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0) {
    why = "not a cache entry (no magic number)";
    return DiskEntryRead::Corrupt;
  }
  ByteReader h(bytes.data() + 8, kHeaderBytes - 8);
  uint32_t f = 0, k = 0;
  uint64_t length = 0, sum = 0;
  h.u32(f);
  h.u32(k);
  h.u64(length);
  h.u64(sum);
  if (f != format || k != kind) {
    why = "format " + std::to_string(f) + " kind " + std::to_string(k) + ", expected " +
          std::to_string(format) + " kind " + std::to_string(kind);
    return DiskEntryRead::Corrupt;
  }
  if (length != bytes.size() - kHeaderBytes) {
    why = "truncated or extended: " + std::to_string(bytes.size() - kHeaderBytes) +
          " bytes of payload, the header says " + std::to_string(length);
    return DiskEntryRead::Corrupt;
  }
  const char* payload = bytes.data() + kHeaderBytes;
  if (checksum(payload, static_cast<size_t>(length)) != sum) {
    why = "checksum mismatch";
    return DiskEntryRead::Corrupt;
  }
  ByteReader r(payload, static_cast<size_t>(length));
  std::string stored_key;
  if (!r.str(stored_key)) {
    why = "its fields do not fill its payload";
    return DiskEntryRead::Corrupt;
  }
  if (stored_key != full_key) return DiskEntryRead::OtherKey;  // a hash collision: not ours
  const size_t at = 8 + stored_key.size();
  body.assign(payload + at, static_cast<size_t>(length) - at);
  return DiskEntryRead::Ok;
}

// ---- the folder ----

DiskStore::DiskStore(DiskStoreOptions options, Warn warn)
    : m_o(std::move(options)), m_warn(std::move(warn)), m_said(3, false) {}

DiskStore::~DiskStore() {
  flush_counts();
}

std::string DiskStore::entry_dir() const {
  return m_o.dir + "/" + m_o.folder;
}

std::string DiskStore::entry_path(const std::string& key) const {
  return entry_dir() + "/" + key + kEntrySuffix;
}

void DiskStore::problem(DiskStoreProblem kind, const std::string& why) {
  std::string text;
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    const size_t k = static_cast<size_t>(kind);
    if (m_said[k]) return;
    m_said[k] = true;
    switch (kind) {
      case DiskStoreProblem::Unusable:
        text = m_o.label + " " + m_o.dir + " cannot be used (" + why + "): " + m_o.lost;
        break;
      case DiskStoreProblem::Full:
        text = m_o.label + " " + m_o.dir + " is full (" + why + "): " + m_o.lost;
        break;
      case DiskStoreProblem::Corrupt:
        text = m_o.label + " " + m_o.dir + ": removed a corrupt entry (" + why + "); " + m_o.redo +
               " (further ones are not reported)";
        break;
    }
    m_warnings.push_back(text);
  }
  if (m_warn) m_warn(text);
}

std::vector<std::string> DiskStore::warnings() const {
  std::lock_guard<std::mutex> lock(m_mutex);
  return m_warnings;
}

void DiskStore::count(bool hit) {
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    (hit ? m_pending_hits : m_pending_misses) += 1;
    if (m_pending_hits + m_pending_misses < std::max(1, m_o.count_every)) return;
  }
  flush_counts();
}

void DiskStore::flush_counts() {
  int64_t add_hits = 0, add_misses = 0;
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    std::swap(add_hits, m_pending_hits);
    std::swap(add_misses, m_pending_misses);
  }
  if (add_hits == 0 && add_misses == 0) return;
  std::error_code ec;
  fs::create_directories(entry_dir(), ec);  // a failure is said by the store that follows
  const std::string path = entry_dir() + "/" + kCountersFile;
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return;
  if (::flock(fd, LOCK_EX) == 0) {
    int64_t hits = 0, misses = 0;
    read_counters(fd, hits, misses);
    hits += add_hits;
    misses += add_misses;
    const std::string text =
        "hits " + std::to_string(hits) + " misses " + std::to_string(misses) + "\n";
    if (::pwrite(fd, text.data(), text.size(), 0) == static_cast<ssize_t>(text.size()))
      (void)!::ftruncate(fd, static_cast<off_t>(text.size()));
  }
  ::close(fd);  // releases the lock
}

bool DiskStore::load(const std::string& key, const std::string& full_key, std::string& body,
                     const std::function<bool(const std::string&)>& check) {
  const std::string path = entry_path(key);
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    count(false);
    return false;
  }
  std::string bytes, why, got;
  const bool read = read_all(fd, bytes);
  DiskEntryRead d = read ? decode_disk_entry(bytes, m_o.format, m_o.kind, full_key, got, why)
                         : DiskEntryRead::Corrupt;
  if (d == DiskEntryRead::Ok && check && !check(got)) {
    d = DiskEntryRead::Corrupt;
    why = "its fields do not fill its payload";
  }
  if (d == DiskEntryRead::Ok) {
    ::futimens(fd, nullptr);  // used now (a read-only folder keeps its old order)
    ::close(fd);
    body = std::move(got);
    count(true);
    return true;
  }
  if (d == DiskEntryRead::Corrupt) {
    // Remove it unless a writer has renamed a fresh entry over it since it was opened.
    struct stat opened {
    }, now{};
    if (::fstat(fd, &opened) == 0 && ::stat(path.c_str(), &now) == 0 &&
        opened.st_ino == now.st_ino && opened.st_dev == now.st_dev)
      ::unlink(path.c_str());
    problem(DiskStoreProblem::Corrupt,
            fs::path(path).filename().string() + ": " + (read ? why : "unreadable"));
  }
  ::close(fd);
  count(false);
  return false;
}

void DiskStore::store(const std::string& key, const std::string& full_key,
                      const std::string& body) {
  const std::string bytes = encode_disk_entry(m_o.format, m_o.kind, full_key, body);
  if (static_cast<int64_t>(bytes.size()) > m_o.max_bytes) {
    problem(DiskStoreProblem::Full, "an entry of " + std::to_string(bytes.size()) +
                                        " bytes is over the cap of " +
                                        std::to_string(m_o.max_bytes) + " bytes");
    return;
  }
  std::error_code ec;
  fs::create_directories(entry_dir(), ec);
  if (ec) {
    problem(DiskStoreProblem::Unusable, "cannot create " + entry_dir() + ": " + ec.message());
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
    problem(DiskStoreProblem::Unusable,
            "cannot write in " + entry_dir() + ": " + std::strerror(errno));
    return;
  }
  bool ok = write_all(fd, bytes);
  int err = ok ? 0 : errno;
  if (ok && m_o.durable && ::fsync(fd) != 0) {
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
    problem(full ? DiskStoreProblem::Full : DiskStoreProblem::Unusable,
            "cannot write " + std::to_string(bytes.size()) + " bytes in " + entry_dir() + ": " +
                std::strerror(err));
    return;
  }
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    // The first store of the process looks, then one in evict_every.
    if (m_stores++ % std::max(1, m_o.evict_every) != 0) return;
  }
  evict(m_o.max_bytes);
}

void DiskStore::evict(int64_t max_bytes) {
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

DiskStoreStats DiskStore::stats() const {
  DiskStoreStats s;
  s.dir = m_o.dir;
  s.max_bytes = m_o.max_bytes;
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
  {
    std::lock_guard<std::mutex> lock(m_mutex);
    s.hits += m_pending_hits;
    s.misses += m_pending_misses;
  }
  return s;
}

int64_t DiskStore::clear() {
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
  std::lock_guard<std::mutex> lock(m_mutex);
  m_pending_hits = m_pending_misses = 0;
  return removed;
}

}  // namespace souffle
