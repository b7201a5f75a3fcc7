#include "core/gpu/compile_cache.h"

#include <cctype>
#include <cstdint>
#include <cstdlib>

#include "core/gpu/nvrtc.h"
#include "core/support/byte_io.h"

namespace souffle::gpu {

namespace {

// An entry's body (after the full key, support/disk_store.h):
//   arch, PTX, CUBIN, log (u64 length + bytes each) | f64 compile ms
//   u64 kernel count | per kernel: name, then 8 figures as i64
constexpr uint32_t kKindNvrtc = 1;

std::string encode_body(const CompileResult& result) {
  ByteWriter p;
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
  return std::move(p.bytes());
}

/// The result a body holds; false when its fields do not fill it exactly.
bool decode_body(const std::string& body, CompileResult& out) {
  ByteReader r(body);
  std::string cubin;
  CompileResult c;
  uint64_t kernels = 0;
  bool ok = r.str(c.arch) && r.str(c.ptx) && r.str(cubin) && r.str(c.log) && r.f64(c.compile_ms) &&
            r.count(kernels, size_t{8} * 9);
  for (uint64_t i = 0; ok && i < kernels; ++i) {
    KernelResources k;
    ok = r.str(k.name) && r.i32(k.registers) && r.i32(k.barriers) && r.i64(k.shared_bytes) &&
         r.i64(k.stack_bytes) && r.i64(k.spill_store_bytes) && r.i64(k.spill_load_bytes) &&
         r.i64(k.callee_stack_bytes) && r.i64(k.const_bytes);
    c.kernels.push_back(std::move(k));
  }
  if (!ok || !r.done()) return false;
  c.ok = true;
  c.cubin.assign(cubin.begin(), cubin.end());
  out = std::move(c);
  return true;
}

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
  return encode_disk_entry(kCompileCacheFormat, kKindNvrtc, full_key, encode_body(result));
}

bool decode_compile_entry(const std::string& bytes, const std::string& full_key, CompileResult& out,
                          std::string* why) {
  std::string body, reason;
  const DiskEntryRead d =
      decode_disk_entry(bytes, kCompileCacheFormat, kKindNvrtc, full_key, body, reason);
  bool ok = d == DiskEntryRead::Ok;
  if (d == DiskEntryRead::OtherKey) reason = "the entry is another source's";
  if (ok && !decode_body(body, out)) {
    ok = false;
    reason = "its fields do not fill its payload";
  }
  if (why) *why = reason;
  return ok;
}

// ---- the folder ----

DiskCompileCache::DiskCompileCache(std::string dir, int64_t max_bytes, Warn warn)
    : m_store(DiskStoreOptions{.dir = std::move(dir),
                               .folder = "nvrtc",
                               .format = kCompileCacheFormat,
                               .kind = kKindNvrtc,
                               .max_bytes = max_bytes,
                               .label = "compile cache",
                               .lost = "kernels are compiled but not kept",
                               .redo = "its kernel is compiled again",
                               .durable = true,
                               .evict_every = 1,
                               .count_every = 1},
              std::move(warn)) {}

bool DiskCompileCache::load(const std::string& key, const std::string& full_key,
                            CompileResult& out) {
  std::string body;
  CompileResult r;
  if (!m_store.load(key, full_key, body, [&r](const std::string& b) { return decode_body(b, r); }))
    return false;
  r.key = key;
  out = std::move(r);
  return true;
}

void DiskCompileCache::store(const std::string& key, const std::string& full_key,
                             const CompileResult& result) {
  if (!result.ok) return;  // a failure is cheap to reproduce and its message names the source
  m_store.store(key, full_key, encode_body(result));
}

}  // namespace souffle::gpu
