#include "core/codegen/source_map.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <set>
#include <sstream>

#include "core/te/printer.h"

namespace souffle::codegen {

namespace {

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  return lines;
}

std::string trim_left(const std::string& s) {
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.substr(i);
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

/// The stage number after `prefix` at the start of `s` ("stage 3 ..." -> 3), or -1. The number
/// must be followed by `next` (or end the line when `next` is 0).
int stage_number(const std::string& s, const std::string& prefix, char next) {
  if (!starts_with(s, prefix)) return -1;
  size_t i = prefix.size(), j = i;
  while (j < s.size() && std::isdigit(static_cast<unsigned char>(s[j]))) ++j;
  if (j == i) return -1;
  if (next == 0 ? j != s.size() : (j >= s.size() || s[j] != next)) return -1;
  return std::atoi(s.substr(i, j - i).c_str());
}

/// Braces opened minus closed on a line, ignoring a trailing // comment (ONNX names in comments
/// may hold braces; the emitted code has no string literals).
int brace_balance(const std::string& line) {
  const size_t cut = line.find("//");
  int b = 0;
  for (size_t i = 0; i < std::min(cut, line.size()); ++i)
    b += line[i] == '{' ? 1 : line[i] == '}' ? -1 : 0;
  return b;
}

/// The last line of the block opened at or after `from` (the first line with more '{' than
/// '}'), or `from` when none opens before the text ends.
int block_end(const std::vector<std::string>& lines, int from) {
  int depth = 0;
  bool opened = false;
  for (int i = from; i < static_cast<int>(lines.size()); ++i) {
    depth += brace_balance(lines[i]);
    if (depth > 0) opened = true;
    if (opened && depth <= 0) return i;
  }
  return opened ? static_cast<int>(lines.size()) - 1 : from;
}

SourceSpan stage_span(const loop::Kernel& k, int stage, int first, int last) {
  SourceSpan s;
  s.first_line = first + 1;
  s.last_line = last + 1;
  s.stage = stage;
  if (stage >= 0 && static_cast<size_t>(stage) < k.stages.size()) {
    const loop::StageInfo& info = k.stages[static_cast<size_t>(stage)];
    s.tes = info.tes;
    std::set<std::string> seen;
    for (const te::Origin& o : info.origins)
      if (!o.node.empty() && seen.insert(o.node).second) s.nodes.push_back(o.node);
  }
  return s;
}

void sort_spans(SourceMap& m) {
  std::sort(m.spans.begin(), m.spans.end(),
            [](const SourceSpan& a, const SourceSpan& b) { return a.first_line < b.first_line; });
}

}  // namespace

const SourceSpan* SourceMap::at_line(int line) const {
  auto it = std::upper_bound(spans.begin(), spans.end(), line,
                             [](int l, const SourceSpan& s) { return l < s.first_line; });
  if (it == spans.begin()) return nullptr;
  --it;
  return it->contains(line) ? &*it : nullptr;
}

std::vector<const SourceSpan*> SourceMap::spans_of_node(const std::string& node) const {
  std::vector<const SourceSpan*> out;
  for (const SourceSpan& s : spans)
    if (std::find(s.nodes.begin(), s.nodes.end(), node) != s.nodes.end()) out.push_back(&s);
  return out;
}

std::vector<const SourceSpan*> SourceMap::spans_of_te(const std::string& te) const {
  std::vector<const SourceSpan*> out;
  for (const SourceSpan& s : spans)
    if (std::find(s.tes.begin(), s.tes.end(), te) != s.tes.end()) out.push_back(&s);
  return out;
}

std::vector<int> SourceMap::lines_of_node(const std::string& node) const {
  std::vector<int> out;
  for (const SourceSpan* s : spans_of_node(node))
    for (int l = s->first_line; l <= s->last_line; ++l) out.push_back(l);
  return out;
}

int SourceMap::boundary_at(int line) const {
  for (const BoundaryLine& b : boundaries)
    if (b.line == line) return b.boundary;
  return -1;
}

SourceMap map_emitted(const EmittedUnit& unit, int kernel, const loop::Kernel& k) {
  SourceMap m;
  const int n = static_cast<int>(unit.lines.size());
  for (int i = 0; i < n; ++i) {
    const EmittedLine& l = unit.lines[static_cast<size_t>(i)];
    if (l.kernel != kernel) continue;
    if (l.boundary >= 0) {
      m.boundaries.push_back({i + 1, l.boundary});
      for (int b : l.more_boundaries) m.boundaries.push_back({i + 1, b});
    }
    if (l.stage < 0) continue;
    // The lines that follow for the same stage (its block, or its call's arguments).
    int last = i;
    while (last + 1 < n) {
      const EmittedLine& next = unit.lines[static_cast<size_t>(last + 1)];
      if (next.kernel != kernel || next.stage != l.stage || next.more_stages != l.more_stages)
        break;
      ++last;
    }
    m.spans.push_back(stage_span(k, l.stage, i, last));
    for (int st : l.more_stages)
      if (st != l.stage) m.spans.push_back(stage_span(k, st, i, last));
    i = last;
  }
  for (const EmittedLine& l : unit.lines)
    m.calls_stage_functions |= l.kernel == kernel && l.role == LineRole::StageCall;
  // The kernel's functions, line by line: each one's lines are consecutive, its head the line
  // marked FunctionHead and the Signature lines after it.
  for (size_t i = 0; i < unit.lines.size(); ++i) {
    const EmittedLine& l = unit.lines[i];
    if (l.kernel != kernel || l.function < 0) continue;
    gpu::FunctionLines f;
    f.name = unit.functions.at(static_cast<size_t>(l.function)).name;
    f.first = static_cast<int>(i) + 1;
    size_t last = i;
    while (last + 1 < unit.lines.size() && unit.lines[last + 1].function == l.function) ++last;
    for (size_t j = i; j <= last; ++j) {
      const LineRole role = unit.lines[j].role;
      const int line = static_cast<int>(j) + 1;
      if (role == LineRole::FunctionHead && f.head == 0) {
        f.head = f.head_last = line;
      } else if (role == LineRole::Signature && f.head > 0 && f.head_last == line - 1) {
        f.head_last = line;
      }
    }
    f.last = static_cast<int>(last) + 1;
    if (l.part == LinePart::StageFunction) {
      m.functions.stages.push_back(std::move(f));
    } else if (l.part == LinePart::Kernel) {
      m.functions.kernel = std::move(f);
    }
    i = last;
  }
  sort_spans(m);
  return m;
}

MappedText emit_cuda_mapped(const loop::Kernel& k, const CudaEmitOptions& options) {
  loop::KernelSet ks;
  ks.kernels = {k};
  const EmittedUnit unit = emit_cuda_unit(ks, options);
  return {unit.text(), map_emitted(unit, 0, k)};
}

SourceMap map_loop_text(const std::string& text, const loop::Kernel& k) {
  const std::vector<std::string> lines = split_lines(text);
  SourceMap m;
  for (int i = 0; i < static_cast<int>(lines.size()); ++i) {
    const std::string t = trim_left(lines[i]);
    // The kernel header lists each stage once: "stage N name (schedule, ...): TEs".
    const int head = stage_number(t, "stage ", ' ');
    if (head >= 0 && t.find(" {") == std::string::npos) {
      m.spans.push_back(stage_span(k, head, i, i));
      continue;
    }
    const int st = stage_number(t, "stage ", ' ');
    if (st < 0 || t != "stage " + std::to_string(st) + " {") continue;
    const int last = block_end(lines, i);
    m.spans.push_back(stage_span(k, st, i, last));
    i = last;
  }
  sort_spans(m);
  return m;
}

SourceMap map_ptx(const std::string& ptx, const SourceMap& cuda, const std::string& source_name) {
  const std::vector<std::string> lines = split_lines(ptx);
  // .file N "name"[, ...]: find the index of the CUDA source.
  int file = -1, first_file = -1;
  for (const std::string& l : lines) {
    const std::string t = trim_left(l);
    if (!starts_with(t, ".file")) continue;
    const int n = std::atoi(t.c_str() + 5);
    if (first_file < 0) first_file = n;
    const size_t q = t.find('"');
    const size_t q2 = q == std::string::npos ? q : t.find('"', q + 1);
    if (q2 == std::string::npos) continue;
    const std::string name = t.substr(q + 1, q2 - q - 1);
    if (!source_name.empty() && name.size() >= source_name.size() &&
        name.compare(name.size() - source_name.size(), source_name.size(), source_name) == 0) {
      file = n;
      break;
    }
  }
  if (file < 0) file = first_file;

  SourceMap m;
  const SourceSpan* current = nullptr;
  for (int i = 0; i < static_cast<int>(lines.size()); ++i) {
    const std::string t = trim_left(lines[i]);
    if (starts_with(t, ".loc")) {
      std::istringstream in(t.substr(4));
      int f = 0, line = 0;
      in >> f >> line;
      if (f == file) current = cuda.at_line(line);
      continue;  // the directive itself is not code
    }
    if (starts_with(t, ".entry") || starts_with(t, ".visible") || t == "}") current = nullptr;
    if (!current || t.empty()) continue;
    // Extend the previous span when it comes from the same CUDA span and only .loc lines or
    // blank lines lie between.
    if (!m.spans.empty() && m.spans.back().stage == current->stage &&
        m.spans.back().first_line > 0) {
      bool adjacent = true;
      for (int j = m.spans.back().last_line; j < i && adjacent; ++j) {
        const std::string b = trim_left(lines[j]);
        adjacent = b.empty() || starts_with(b, ".loc");
      }
      if (adjacent) {
        m.spans.back().last_line = i + 1;
        continue;
      }
    }
    SourceSpan s = *current;
    s.first_line = s.last_line = i + 1;
    m.spans.push_back(std::move(s));
  }
  return m;
}

MappedText te_listing(const te::TeProgram& program, const std::vector<int>& tes) {
  MappedText out;
  int line = 1;
  for (int i : tes) {
    if (i < 0 || static_cast<size_t>(i) >= program.ops.size()) continue;
    const te::ComputeOp& op = *program.ops[static_cast<size_t>(i)];
    std::string text = te::print(op);
    if (text.empty() || text.back() != '\n') text += '\n';
    const int n = static_cast<int>(std::count(text.begin(), text.end(), '\n'));
    SourceSpan s;
    s.first_line = line;
    s.last_line = line + n - 1;
    s.tes = {op.name};
    if (!op.origin.node.empty()) s.nodes = {op.origin.node};
    out.map.spans.push_back(std::move(s));
    out.text += text;
    line += n;
  }
  return out;
}

}  // namespace souffle::codegen
