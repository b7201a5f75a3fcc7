/// \file The persistent compile cache: NVRTC results on disk under the user's cache folder,
/// keyed by content, size-capped (least recently used out first), safe under concurrent processes.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/support/disk_store.h"

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

/// The folder's figures (DiskStoreStats: its folder, cap, entries, bytes, hits and misses of
/// every process, least and most recent use).
using CompileCacheStats = DiskStoreStats;

/// NVRTC results (PTX, CUBIN, log, ptxas' per-kernel figures) in one folder of the cache
/// (`dir`/nvrtc), one file per key: a DiskStore (support/disk_store.h) whose entries are flushed
/// to disk before they are renamed into place, the cap looked at after every store.
class DiskCompileCache {
 public:
  using Warn = DiskStore::Warn;
  /// `warn` is told each kind of problem once (null: nothing is said).
  DiskCompileCache(std::string dir, int64_t max_bytes, Warn warn = nullptr);

  const std::string& dir() const { return m_store.dir(); }
  int64_t max_bytes() const { return m_store.max_bytes(); }
  /// The folder entries go in (`dir`/nvrtc).
  std::string entry_dir() const { return m_store.entry_dir(); }
  /// The file of key `key` (hex).
  std::string entry_path(const std::string& key) const { return m_store.entry_path(key); }

  /// The entry of `key` whose full key text is `full_key`, into `out` (ok, arch, ptx, cubin,
  /// log, kernels, key; compile_ms is the original compile's). False: none, or a corrupt one
  /// (removed; said once).
  bool load(const std::string& key, const std::string& full_key, CompileResult& out);
  /// Writes `result` (a successful compile) as the entry of `key`, then keeps the cap.
  void store(const std::string& key, const std::string& full_key, const CompileResult& result);

  CompileCacheStats stats() const { return m_store.stats(); }
  /// Removes every entry and resets the counters (a running writer's temporary file is left to
  /// it); returns the number of entries removed.
  int64_t clear() { return m_store.clear(); }
  /// Removes the least recently used entries until the folder holds at most `max_bytes`.
  void evict(int64_t max_bytes) { m_store.evict(max_bytes); }

  /// What this cache said (each problem once), in order.
  std::vector<std::string> warnings() const { return m_store.warnings(); }

 private:
  DiskStore m_store;
};

/// An entry's bytes (header and payload) and back, exposed for tests: decode_compile_entry
/// returns false, leaving `out` alone, for anything that is not a whole entry of `full_key`.
std::string encode_compile_entry(const std::string& full_key, const CompileResult& result);
bool decode_compile_entry(const std::string& bytes, const std::string& full_key, CompileResult& out,
                          std::string* why = nullptr);

}  // namespace souffle::gpu
