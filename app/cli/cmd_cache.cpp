// `souffle-cli cache stats|clear`: the persistent compile cache, and the line compile prints
// about it.
#include <ctime>
#include <iostream>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "app/cli/commands.h"
#include "core/gpu/compile_cache.h"
#include "core/gpu/nvrtc.h"
#include "core/schedule/price_store.h"
#include "core/session/compile.h"
#include "core/support/error.h"

namespace souffle::cli {

namespace {

std::string human_bytes(int64_t n) {
  const double b = static_cast<double>(n);
  if (n >= (int64_t{1} << 30)) return fmt::format("{:.2f} GiB", b / (1 << 30));
  if (n >= (int64_t{1} << 20)) return fmt::format("{:.1f} MiB", b / (1 << 20));
  if (n >= (int64_t{1} << 10)) return fmt::format("{:.1f} KiB", b / (1 << 10));
  return fmt::format("{} bytes", n);
}

/// "2026-12-06 03:10:11 UTC"; "" for 0.
std::string utc(int64_t seconds) {
  if (seconds == 0) return "";
  const std::time_t t = static_cast<std::time_t>(seconds);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S UTC", &tm);
  return buf;
}

nlohmann::json time_json(int64_t seconds) {
  return seconds == 0 ? nlohmann::json(nullptr) : nlohmann::json(utc(seconds));
}

}  // namespace

int run_cache(const CacheCliOptions& o) {
  std::shared_ptr<gpu::DiskCompileCache> disk = gpu::CompileCache::global().disk();
  if (!disk)
    throw UserError(
        "there is no compile cache folder: neither SOUFFLE_CACHE_DIR, XDG_CACHE_HOME nor HOME is "
        "set");
  // The price cache lives in the same folder (its "prices" folder).
  schedule::PriceStore prices(disk->dir(), disk->max_bytes());
  if (o.action == "clear") {
    const int64_t removed = disk->clear();
    const int64_t removed_prices = prices.disk().clear();
    if (o.json)
      std::cout << nlohmann::json{{"dir", disk->dir()},
                                  {"removed", removed},
                                  {"removed_prices", removed_prices}}
                       .dump(2)
                << "\n";
    else
      std::cout << fmt::format("removed {} entries and {} prices from {}\n", removed,
                               removed_prices, disk->dir());
    return 0;
  }
  const gpu::CompileCacheStats s = disk->stats();
  const DiskStoreStats p = prices.disk().stats();
  if (o.json) {
    std::cout << nlohmann::json{{"dir", s.dir},
                                {"entries", s.entries},
                                {"bytes", s.bytes},
                                {"max_bytes", s.max_bytes},
                                {"hits", s.hits},
                                {"misses", s.misses},
                                {"oldest", time_json(s.oldest)},
                                {"newest", time_json(s.newest)},
                                {"nvrtc", gpu::nvrtc_version()},
                                {"prices",
                                 {{"entries", p.entries},
                                  {"bytes", p.bytes},
                                  {"max_bytes", p.max_bytes},
                                  {"hits", p.hits},
                                  {"misses", p.misses},
                                  {"oldest", time_json(p.oldest)},
                                  {"newest", time_json(p.newest)}}}}
                     .dump(2)
              << "\n";
    return 0;
  }
  std::cout << fmt::format("compile cache: {}\n", s.dir);
  std::cout << fmt::format("entries: {}, {} of {} (SOUFFLE_CACHE_MAX_SIZE)\n", s.entries,
                           human_bytes(s.bytes), human_bytes(s.max_bytes));
  std::cout << fmt::format("hits: {}, misses: {} (every process since the last clear)\n", s.hits,
                           s.misses);
  if (s.entries > 0)
    std::cout << fmt::format("least recently used: {}\nmost recently used: {}\n", utc(s.oldest),
                             utc(s.newest));
  std::cout << fmt::format("price cache: {}/prices\n", s.dir);
  std::cout << fmt::format("prices: {}, {} of {}\n", p.entries, human_bytes(p.bytes),
                           human_bytes(p.max_bytes));
  std::cout << fmt::format("hits: {}, misses: {} (every process since the last clear)\n", p.hits,
                           p.misses);
  return 0;
}

CacheSummary cache_summary(const CompileReport& report, bool use_cache) {
  CacheSummary c;
  c.enabled = use_cache;
  c.dir = use_cache ? gpu::CompileCache::global().disk_dir() : "";
  for (const CompiledKernel& k : report.kernels) {
    if (k.per_arch.empty()) continue;
    bool all = true;
    for (const gpu::CompileResult& r : k.per_arch) {
      ++c.compiles;
      c.from_cache += r.from_cache ? 1 : 0;
      all &= r.from_cache;
    }
    ++c.kernels;
    c.kernels_from_cache += all ? 1 : 0;
  }
  count_programs(report.kernels, c.programs, c.programs_from_cache);
  return c;
}

std::string cache_summary_line(const CacheSummary& c) {
  const std::string programs =
      fmt::format("{} distinct program{} for {} kernel{}", c.programs, c.programs == 1 ? "" : "s",
                  c.kernels, c.kernels == 1 ? "" : "s");
  if (!c.enabled) return "compile cache off (--no-cache): " + programs + ", each compiled by NVRTC";
  return fmt::format(
      "{} of {} kernels from the compile cache ({} of {} NVRTC results){}; {}, {} from the cache",
      c.kernels_from_cache, c.kernels, c.from_cache, c.compiles,
      c.dir.empty() ? ", memory only" : " in " + c.dir, programs, c.programs_from_cache);
}

}  // namespace souffle::cli
