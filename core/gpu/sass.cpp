#include "core/gpu/sass.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <random>
#include <sstream>

#include <fmt/format.h>

extern char** environ;

namespace souffle::gpu {

namespace fs = std::filesystem;

namespace {

std::mutex g_mutex;
std::string g_override;

bool executable(const fs::path& p) {
  std::error_code ec;
  return !p.empty() && fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
}

/// The copy scripts/setup.sh installs inside a build folder.
const char* const kInstalled = "tools/nvdisasm/nvidia/cu13/bin/nvdisasm";

std::string search() {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (!g_override.empty()) return executable(g_override) ? g_override : std::string();
  }
  if (const char* e = std::getenv("SOUFFLE_NVDISASM"); e && *e)
    return executable(e) ? std::string(e) : std::string();
  if (const char* path = std::getenv("PATH")) {
    std::stringstream ss(path);
    std::string dir;
    while (std::getline(ss, dir, ':'))
      if (!dir.empty() && executable(fs::path(dir) / "nvdisasm"))
        return (fs::path(dir) / "nvdisasm").string();
  }
  std::vector<fs::path> dirs;
  for (const char* v : {"CUDA_HOME", "CUDA_PATH"})
    if (const char* e = std::getenv(v); e && *e) dirs.push_back(fs::path(e) / "bin");
#ifdef SOUFFLE_CUDA_INCLUDE_DIR
  dirs.push_back(fs::path(SOUFFLE_CUDA_INCLUDE_DIR).parent_path() / "bin");
#endif
  dirs.push_back("/usr/local/cuda/bin");
  for (const fs::path& d : dirs)
    if (executable(d / "nvdisasm")) return (d / "nvdisasm").string();
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec)
    for (fs::path d = exe.parent_path(); !d.empty(); d = d.parent_path()) {
      if (executable(d / kInstalled)) return (d / kInstalled).string();
      if (d == d.root_path()) break;
    }
  if (executable(fs::path("build") / kInstalled))
    return fs::absolute("build/" + std::string(kInstalled)).string();
  return {};
}

/// The mnemonic of an instruction's text: "HMMA" of "@!P0 HMMA.16816.F32 R4, ...".
std::string opcode_of(const std::string& text) {
  size_t at = 0;
  while (at < text.size() && text[at] == ' ') ++at;
  if (at < text.size() && text[at] == '@') {
    at = text.find(' ', at);
    if (at == std::string::npos) return {};
    while (at < text.size() && text[at] == ' ') ++at;
  }
  size_t end = at;
  while (end < text.size() &&
         (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_'))
    ++end;
  return text.substr(at, end - at);
}

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

/// The line of a `//## File "F", line N inlined at "G", line M ...` comment: the last location
/// whose file ends with `source` (any file when `source` is empty); 0 when none does.
int line_of_comment(const std::string& c, const std::string& source) {
  int line = 0;
  size_t at = 0;
  while (true) {
    const size_t q = c.find('"', at);
    if (q == std::string::npos) break;
    const size_t q2 = c.find('"', q + 1);
    if (q2 == std::string::npos) break;
    const std::string file = c.substr(q + 1, q2 - q - 1);
    const size_t l = c.find("line ", q2);
    if (l == std::string::npos) break;
    const int n = std::atoi(c.c_str() + l + 5);
    if (source.empty() || ends_with(file, source)) line = n;
    at = l + 5;
  }
  return line;
}

}  // namespace

std::string find_nvdisasm() {
  return search();
}

void set_nvdisasm_path(const std::string& path) {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_override = path;
}

std::string nvdisasm_missing_message() {
  return "nvdisasm (the CUDA toolkit's disassembler) was not found: set SOUFFLE_NVDISASM to it, "
         "put it on PATH or in $CUDA_HOME/bin, or run scripts/setup.sh, which installs the "
         "nvidia-cuda-nvdisasm wheel into build/tools/nvdisasm";
}

void SassMix::add(const std::string& op) {
  ++total;
  if (op == "HMMA" || op == "HGMMA" || op == "IMMA" || op == "DMMA" || op == "IGMMA" ||
      op == "QGMMA" || op == "BGMMA")
    ++mma;
  else if (op == "LDGSTS" || op == "UTMALDG" || op == "UBLKCP")
    ++async_copy;
  else if (op == "LDSM")
    ++ldsm;
  else if (op == "BAR" || op == "SYNCS")
    ++bar;
  else if (op == "LDL")
    ++local_load;
  else if (op == "STL")
    ++local_store;
}

SassMix& SassMix::operator+=(const SassMix& o) {
  total += o.total;
  mma += o.mma;
  async_copy += o.async_copy;
  ldsm += o.ldsm;
  bar += o.bar;
  local_load += o.local_load;
  local_store += o.local_store;
  return *this;
}

SassListing parse_nvdisasm(const std::string& text, const std::string& source_name) {
  SassListing out;
  std::istringstream in(text);
  std::string ln;
  int line = 0;
  SassFunction* fn = nullptr;
  while (std::getline(in, ln)) {
    const size_t first = ln.find_first_not_of(" \t");
    if (first == std::string::npos) continue;
    const std::string t = ln.substr(first);
    if (t.rfind("//--------------------- .text.", 0) == 0) {
      std::string name = t.substr(std::string("//--------------------- .text.").size());
      name = name.substr(0, name.find_first_of(" \t"));
      out.functions.push_back(SassFunction{name, 0, {}, {}});
      fn = &out.functions.back();
      line = 0;
      continue;
    }
    if (!fn) continue;
    if (t.rfind(".sectioninfo", 0) == 0) {
      const size_t r = t.find("SHI_REGISTERS=");
      if (r != std::string::npos) fn->registers = std::atoi(t.c_str() + r + 14);
      continue;
    }
    if (t.rfind("//## File", 0) == 0) {
      // An outer location on its own line follows an inlined one: keep the kernel file's line.
      const int l = line_of_comment(t, source_name);
      if (l > 0 || t.find("inlined at") == std::string::npos) line = l;
      continue;
    }
    if (t.rfind("/*", 0) != 0) continue;
    const size_t close = t.find("*/");
    if (close == std::string::npos) continue;
    SassInstruction ins;
    ins.address = std::strtoll(t.c_str() + 2, nullptr, 16);
    std::string body = t.substr(close + 2);
    const size_t b = body.find_first_not_of(' ');
    body = b == std::string::npos ? std::string() : body.substr(b);
    // A continuation of the previous instruction's encoding (older listings) has no text.
    if (body.empty() || body[0] == '/') continue;
    if (const size_t semi = body.find(';'); semi != std::string::npos)
      body = body.substr(0, semi + 1);
    ins.text = body;
    ins.opcode = opcode_of(body);
    if (ins.opcode.empty()) continue;
    ins.line = line;
    fn->mix.add(ins.opcode);
    fn->code.push_back(std::move(ins));
  }
  for (const SassFunction& f : out.functions) out.mix += f.mix;
  return out;
}

Disassembly disassemble(const std::vector<uint8_t>& cubin, const std::string& source_name) {
  Disassembly d;
  if (cubin.empty()) {
    d.error = "no cubin (a compute_XX target, or the compile failed)";
    return d;
  }
  const std::string tool = find_nvdisasm();
  if (tool.empty()) {
    d.error = nvdisasm_missing_message();
    return d;
  }
  std::error_code ec;
  const fs::path dir = fs::temp_directory_path(ec);
  std::random_device rd;
  const std::string stem =
      (dir / fmt::format("souffle-sass-{}-{:x}", ::getpid(), uint64_t{rd()} << 32 | rd())).string();
  const std::string in = stem + ".cubin", out = stem + ".txt", err = stem + ".err";
  struct Cleanup {
    std::vector<std::string> files;
    ~Cleanup() {
      for (const std::string& f : files) ::unlink(f.c_str());
    }
  } cleanup{{in, out, err}};
  {
    std::ofstream f(in, std::ios::binary);
    f.write(reinterpret_cast<const char*>(cubin.data()),
            static_cast<std::streamsize>(cubin.size()));
    if (!f) {
      d.error = "cannot write " + in;
      return d;
    }
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&fa, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  std::vector<std::string> args = {tool, "-c", "-gi", in};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  pid_t pid = 0;
  const int rc = posix_spawn(&pid, tool.c_str(), &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    d.error = "cannot run " + tool;
    return d;
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  auto slurp = [](const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    std::stringstream ss;
    ss << f.rdbuf();
    return ss.str();
  };
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    d.error = tool + " failed: " + slurp(err);
    return d;
  }
  d.text = slurp(out);
  d.listing = parse_nvdisasm(d.text, source_name);
  d.ok = true;
  return d;
}

std::string sass_text(const SassListing& listing, std::vector<int>* lines) {
  std::string s;
  if (lines) lines->clear();
  for (const SassFunction& f : listing.functions) {
    s += fmt::format("// function {} ({} registers)\n", f.name, f.registers);
    if (lines) lines->push_back(0);
    for (const SassInstruction& i : f.code) {
      s += fmt::format("/*{:04x}*/ {}", i.address, i.text);
      if (i.line > 0) s += fmt::format("  // line {}", i.line);
      s += "\n";
      if (lines) lines->push_back(i.line);
    }
  }
  return s;
}

}  // namespace souffle::gpu
