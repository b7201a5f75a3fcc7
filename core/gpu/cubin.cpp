#include "core/gpu/cubin.h"

#include <cstring>
#include <map>

namespace souffle::gpu {

namespace {

// ELF64 layout (System V gABI) and the CUDA `.nv.info` record kinds this reader needs.
constexpr size_t kShoff = 0x28, kShentsize = 0x3A, kShnum = 0x3C, kShstrndx = 0x3E;
constexpr uint32_t kShtSymtab = 2, kShtNobits = 8;
constexpr uint8_t kFormatSizedValue = 4;  // EIFMT_SVAL: a 16-bit size, then that many bytes
constexpr uint8_t kAttrFrameSize = 0x11, kAttrMinStackSize = 0x12, kAttrRegCount = 0x2f;

struct Section {
  uint32_t name = 0, type = 0, link = 0;
  uint64_t offset = 0, size = 0, entsize = 0;
};

class Reader {
 public:
  explicit Reader(const std::vector<uint8_t>& b) : m_b(b) {}
  bool has(uint64_t at, uint64_t n) const { return at <= m_b.size() && n <= m_b.size() - at; }
  template <typename T>
  T get(uint64_t at) const {
    T v{};
    std::memcpy(&v, m_b.data() + at, sizeof v);
    return v;
  }
  /// The NUL-terminated string at `at`, if it ends inside the file.
  std::optional<std::string> str(uint64_t at) const {
    if (at >= m_b.size()) return std::nullopt;
    const auto* p = static_cast<const uint8_t*>(std::memchr(m_b.data() + at, 0, m_b.size() - at));
    if (!p) return std::nullopt;
    return std::string(reinterpret_cast<const char*>(m_b.data() + at),
                       static_cast<size_t>(p - (m_b.data() + at)));
  }

 private:
  const std::vector<uint8_t>& m_b;
};

}  // namespace

std::vector<CubinFunction> read_cubin_functions(const std::vector<uint8_t>& cubin,
                                                std::string* why) {
  auto fail = [&](const char* w) {
    if (why) *why = w;
    return std::vector<CubinFunction>{};
  };
  const Reader r(cubin);
  if (!r.has(0, 0x40) || std::memcmp(cubin.data(),
                                     "\x7f"
                                     "ELF",
                                     4) != 0)
    return fail("not an ELF file");
  if (cubin[4] != 2 || cubin[5] != 1) return fail("not a 64-bit little-endian ELF file");
  const auto shoff = r.get<uint64_t>(kShoff);
  const auto shentsize = r.get<uint16_t>(kShentsize);
  const auto shnum = r.get<uint16_t>(kShnum);
  const auto shstrndx = r.get<uint16_t>(kShstrndx);
  if (shentsize < 0x40 || !r.has(shoff, uint64_t{shentsize} * shnum) || shstrndx >= shnum)
    return fail("section headers past the end of the file");
  std::vector<Section> sections(shnum);
  for (uint16_t i = 0; i < shnum; ++i) {
    const uint64_t h = shoff + uint64_t{shentsize} * i;
    Section& s = sections[i];
    s.name = r.get<uint32_t>(h);
    s.type = r.get<uint32_t>(h + 4);
    s.offset = r.get<uint64_t>(h + 0x18);
    s.size = r.get<uint64_t>(h + 0x20);
    s.link = r.get<uint32_t>(h + 0x28);
    s.entsize = r.get<uint64_t>(h + 0x38);
    if (s.type != kShtNobits && !r.has(s.offset, s.size))  // no file bytes: shared memory
      return fail("a section past the end of the file");
  }
  auto section_name = [&](const Section& s) {
    return r.str(sections[shstrndx].offset + s.name).value_or("");
  };
  // Symbol names by index, from the symbol table the `.nv.info` records point into.
  std::vector<std::string> symbols;
  for (const Section& s : sections) {
    if (s.type != kShtSymtab) continue;
    if (s.entsize < 24 || s.link >= shnum) return fail("a malformed symbol table");
    for (uint64_t at = s.offset; at + s.entsize <= s.offset + s.size; at += s.entsize)
      symbols.push_back(r.str(sections[s.link].offset + r.get<uint32_t>(at)).value_or(""));
    break;
  }
  std::map<std::string, CubinFunction> by_name;
  for (const Section& s : sections) {
    if (section_name(s).rfind(".nv.info", 0) != 0) continue;
    for (uint64_t at = s.offset; at + 4 <= s.offset + s.size;) {
      const uint8_t format = cubin[at];
      const uint8_t attr = cubin[at + 1];
      const uint16_t size = r.get<uint16_t>(at + 2);
      if (format != kFormatSizedValue) {
        at += 4;
        continue;
      }
      if (at + 4 + size > s.offset + s.size) return fail("an attribute past its section");
      if (size >= 8 &&
          (attr == kAttrRegCount || attr == kAttrFrameSize || attr == kAttrMinStackSize)) {
        const uint32_t sym = r.get<uint32_t>(at + 4);
        const uint32_t value = r.get<uint32_t>(at + 8);
        if (sym >= symbols.size()) return fail("an attribute of a symbol the file does not have");
        CubinFunction& f = by_name[symbols[sym]];
        f.name = symbols[sym];
        if (attr == kAttrRegCount) f.registers = static_cast<int>(value);
        if (attr == kAttrFrameSize) f.frame_bytes = value;
        if (attr == kAttrMinStackSize) f.min_stack_bytes = value;
      }
      at += 4 + size;
    }
  }
  std::vector<CubinFunction> out;
  out.reserve(by_name.size());
  for (auto& [name, f] : by_name) out.push_back(std::move(f));
  return out;
}

std::optional<CubinFunction> find_cubin_function(const std::vector<uint8_t>& cubin,
                                                 const std::string& name) {
  for (CubinFunction& f : read_cubin_functions(cubin))
    if (f.name == name) return std::move(f);
  return std::nullopt;
}

}  // namespace souffle::gpu
