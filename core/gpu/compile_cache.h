/// \file The persistent compile cache: NVRTC results on disk under the user's cache folder,
/// keyed by content, size-capped (least recently used out first), safe under concurrent processes.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace souffle::gpu {

struct CompileResult;

/// The layout of an entry; a new one is a new key (old entries are never read, only evicted).
inline constexpr uint32_t kCompileCacheFormat = 1;
/// The size cap when none is configured.
inline constexpr int64_t kDefaultCompileCacheBytes = int64_t{1} << 30;

/// The cache folder: $SOUFFLE_CACHE_DIR, else $XDG_CACHE_HOME/souffle-explorer, else
/// $HOME/.cache/souffle-explorer; "" when none of them is set.
std::string default_compile_cache_dir();
/// The size cap: $SOUFFLE_CACHE_MAX_SIZE (bytes, or a number with K, M or G), else 1 GiB. A
/// malformed value is `problem`'s text and the default is taken.
int64_t default_compile_cache_bytes(std::string* problem = nullptr);
/// "1G" -> 2^30, "512M", "64K", "1000"; nullopt for anything else (negative, empty, junk).
std::optional<int64_t> parse_byte_size(const std::string& text);

struct CompileCacheStats {
  std::string dir;        ///< the folder entries live in
  int64_t max_bytes = 0;  ///< the cap
  int64_t entries = 0;
  int64_t bytes = 0;  ///< the entries' file sizes together
  /// Lookups answered from disk and not, by every process since the folder was last cleared.
  int64_t hits = 0, misses = 0;
  /// Last use (seconds since the epoch) of the least and the most recently used entry; 0 when
  /// there is none.
  int64_t oldest = 0, newest = 0;
};

/// What went wrong with the folder; each is said once per cache object (the process has one).
enum class CompileCacheProblem { Unusable, Corrupt, Full };

/// NVRTC results (PTX, CUBIN, log, ptxas' per-kernel figures) in one folder, one file per key.
/// An entry is a header (magic, format, payload length, checksum) and the payload; it is written
/// to a temporary file in the same folder, flushed to disk and renamed over the entry, so a
/// reader sees a whole entry or none. An entry that fails its checks is removed and counts as a
/// miss. A folder that cannot be created or written, or an entry over the cap, costs only the
/// store: the compile goes on, and the cache says why once. A hit marks the entry used (its
/// modification time); beyond the cap the least recently used entries are removed.
class DiskCompileCache {
 public:
  using Warn = std::function<void(const std::string&)>;
  /// `warn` is told each kind of problem once (null: nothing is said).
  DiskCompileCache(std::string dir, int64_t max_bytes, Warn warn = nullptr);

  const std::string& dir() const { return m_dir; }
  int64_t max_bytes() const { return m_max_bytes; }
  /// The folder entries go in (`dir`/nvrtc).
  std::string entry_dir() const;
  /// The file of key `key` (hex).
  std::string entry_path(const std::string& key) const;

  /// The entry of `key` whose full key text is `full_key`, into `out` (ok, arch, ptx, cubin,
  /// log, kernels, key; compile_ms is the original compile's). False: none, or a corrupt one
  /// (removed; said once).
  bool load(const std::string& key, const std::string& full_key, CompileResult& out);
  /// Writes `result` (a successful compile) as the entry of `key`, then keeps the cap.
  void store(const std::string& key, const std::string& full_key, const CompileResult& result);

  CompileCacheStats stats() const;
  /// Removes every entry and resets the counters (a running writer's temporary file is left to
  /// it); returns the number of entries removed.
  int64_t clear();
  /// Removes the least recently used entries until the folder holds at most `max_bytes`.
  void evict(int64_t max_bytes);

  /// What this cache said (each problem once), in order.
  std::vector<std::string> warnings() const;

 private:
  void problem(CompileCacheProblem kind, const std::string& why);
  void count(bool hit);

  std::string m_dir;
  int64_t m_max_bytes;
  Warn m_warn;
  mutable std::mutex m_mutex;
  std::vector<bool> m_said;
  std::vector<std::string> m_warnings;
};

/// An entry's bytes (header and payload) and back, exposed for tests: decode_compile_entry
/// returns false, leaving `out` alone, for anything that is not a whole entry of `full_key`.
std::string encode_compile_entry(const std::string& full_key, const CompileResult& result);
bool decode_compile_entry(const std::string& bytes, const std::string& full_key, CompileResult& out,
                          std::string* why = nullptr);

}  // namespace souffle::gpu
