/// \file Entries kept on disk between processes, one file per key, in a folder of the user's
/// cache: size-capped (least recently used out first), safe under concurrent processes, a
/// corrupt entry detected and dropped. The compile cache (gpu/compile_cache.h) keeps NVRTC
/// results in one; the price cache (schedule/price_store.h) partition prices in another.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

namespace souffle {

/// What one folder of entries is and how it behaves.
struct DiskStoreOptions {
  std::string dir;     ///< the cache folder
  std::string folder;  ///< its subfolder holding these entries ("nvrtc", "prices")
  /// The header's format and kind: an entry of another format or kind is not read (it counts
  /// as corrupt and is replaced by the next store).
  uint32_t format = 1, kind = 1;
  int64_t max_bytes = 0;  ///< the cap on the folder's entries together
  /// How the problems are worded: "compile cache DIR cannot be used (WHY): LOST", "... removed
  /// a corrupt entry (WHY); REDO (further ones are not reported)".
  std::string label = "cache";
  std::string lost = "results are not kept";
  std::string redo = "it is made again";
  /// Each entry flushed to disk before it is renamed into place (a crash then never leaves an
  /// empty entry behind; one that does is caught by its checksum all the same).
  bool durable = true;
  /// Stores between two looks at the folder's size (1: after every store). A folder written
  /// many times a second (prices) looks now and then; it may pass its cap by that many entries.
  int evict_every = 1;
  /// Lookups counted in memory before they are added to the folder's counters file (1: each at
  /// once); what is left is added when the store is destroyed.
  int count_every = 1;
};

struct DiskStoreStats {
  std::string dir;        ///< the folder entries live in (the cache folder)
  int64_t max_bytes = 0;  ///< the cap
  int64_t entries = 0;
  int64_t bytes = 0;  ///< the entries' file sizes together
  /// Lookups answered from disk and not, by every process since the folder was last cleared.
  int64_t hits = 0, misses = 0;
  /// Last use (seconds since the epoch) of the least and the most recently used entry; 0 when
  /// there is none.
  int64_t oldest = 0, newest = 0;
};

/// What went wrong with the folder; each is said once per store object.
enum class DiskStoreProblem { Unusable, Corrupt, Full };

/// One folder of entries. An entry is a header (magic, format, kind, payload length, checksum)
/// and the payload (the full key, then the caller's bytes); it is written to a temporary file in
/// the same folder and renamed over the entry, so a reader sees a whole entry or none. An entry
/// that fails its checks is removed and counts as a miss. A folder that cannot be created or
/// written, or an entry over the cap, costs only the store: the caller goes on, and the store
/// says why once. A hit marks the entry used (its modification time); beyond the cap the least
/// recently used entries are removed.
class DiskStore {
 public:
  using Warn = std::function<void(const std::string&)>;
  /// `warn` is told each kind of problem once (null: nothing is said).
  DiskStore(DiskStoreOptions options, Warn warn = nullptr);
  ~DiskStore();
  DiskStore(const DiskStore&) = delete;
  DiskStore& operator=(const DiskStore&) = delete;

  const std::string& dir() const { return m_o.dir; }
  int64_t max_bytes() const { return m_o.max_bytes; }
  /// The folder entries go in (dir/folder).
  std::string entry_dir() const;
  /// The file of key `key` (hex).
  std::string entry_path(const std::string& key) const;

  /// The bytes stored under `key` whose full key text is `full_key`, into `body`. False: none,
  /// or a corrupt one (removed; said once), or one of another full key (a hash collision).
  /// `check` (optional) reads the body: false makes the entry corrupt ("its fields do not fill
  /// its payload").
  bool load(const std::string& key, const std::string& full_key, std::string& body,
            const std::function<bool(const std::string&)>& check = nullptr);
  /// Writes `body` as the entry of `key`, then keeps the cap (every evict_every stores).
  void store(const std::string& key, const std::string& full_key, const std::string& body);

  DiskStoreStats stats() const;
  /// Removes every entry and resets the counters (a running writer's temporary file is left to
  /// it); returns the number of entries removed.
  int64_t clear();
  /// Removes the least recently used entries until the folder holds at most `max_bytes`.
  void evict(int64_t max_bytes);
  /// Adds the lookups counted in memory to the counters file.
  void flush_counts();

  /// What this store said (each problem once), in order.
  std::vector<std::string> warnings() const;

 private:
  void problem(DiskStoreProblem kind, const std::string& why);
  void count(bool hit);

  DiskStoreOptions m_o;
  Warn m_warn;
  mutable std::mutex m_mutex;
  std::vector<bool> m_said;
  std::vector<std::string> m_warnings;
  int64_t m_pending_hits = 0, m_pending_misses = 0;
  int m_stores = 0;
};

/// How an entry's bytes read (exposed for tests).
enum class DiskEntryRead { Ok, Corrupt, OtherKey };

/// An entry's bytes: header and payload.
std::string encode_disk_entry(uint32_t format, uint32_t kind, const std::string& full_key,
                              const std::string& body);
/// The body of `bytes` when they are a whole entry of this format, kind and full key; `why`
/// says what is wrong with a corrupt one.
DiskEntryRead decode_disk_entry(const std::string& bytes, uint32_t format, uint32_t kind,
                                const std::string& full_key, std::string& body, std::string& why);

/// A 64-bit hash of `s` as 16 hex digits (a key's file name; not a defence against anyone).
std::string disk_key_hex(const std::string& s);

}  // namespace souffle
