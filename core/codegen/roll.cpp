#include "core/codegen/roll.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>
#include <vector>

namespace souffle::codegen {

namespace {

/// Statements in one repeated pattern, at most: a wave of ten LSTM layers takes 40 under grid
/// barriers, 89 with the per-tile flag releases and waits of `--sync auto` between its calls.
constexpr size_t kMaxPeriod = 128;

/// One token of a line's code: an identifier, a number, or one punctuation character.
struct Token {
  enum class Kind : uint8_t { Ident, Number, Punct } kind;
  std::string text;
  size_t line, at;  ///< where it starts: the statement's line index and the column
};

bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

/// The code of a line: the text before a `//` comment.
std::string code_of(const std::string& line) {
  const size_t c = line.find("//");
  return c == std::string::npos ? line : line.substr(0, c);
}

void tokenize(const std::string& code, size_t line, std::vector<Token>& out) {
  for (size_t i = 0; i < code.size();) {
    const char c = code[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (ident_start(c)) {
      size_t j = i;
      while (j < code.size() && ident_char(code[j])) ++j;
      out.push_back({Token::Kind::Ident, code.substr(i, j - i), line, i});
      i = j;
    } else if (std::isdigit(static_cast<unsigned char>(c))) {
      size_t j = i;
      while (j < code.size() && (ident_char(code[j]) || code[j] == '.')) ++j;
      out.push_back({Token::Kind::Number, code.substr(i, j - i), line, i});
      i = j;
    } else {
      out.push_back({Token::Kind::Punct, std::string(1, c), line, i});
      ++i;
    }
  }
}

/// An integer literal: its value and suffix ("ll", "LL", "" ...); nullopt for anything else.
std::optional<std::pair<int64_t, std::string>> integer(const std::string& t) {
  size_t j = 0;
  while (j < t.size() && std::isdigit(static_cast<unsigned char>(t[j]))) ++j;
  if (j == 0 || j > 17) return std::nullopt;
  const std::string suffix = t.substr(j);
  for (char c : suffix)
    if (c != 'l' && c != 'L' && c != 'u' && c != 'U') return std::nullopt;
  if (t.size() > 1 && t[0] == '0' && j > 1) return std::nullopt;  // octal
  return std::make_pair(static_cast<int64_t>(std::stoll(t.substr(0, j))), suffix);
}

/// Where `window` lies in `table` when one overlaps the other with equal values (the index in
/// `table` of the window's first value, negative when the window starts before the table);
/// nullopt when no shift makes them agree on at least half of the window.
std::optional<std::ptrdiff_t> window_shift(const std::vector<std::string>& table,
                                           const std::vector<std::string>& window) {
  const auto n = static_cast<std::ptrdiff_t>(window.size());
  const auto m = static_cast<std::ptrdiff_t>(table.size());
  for (std::ptrdiff_t s = -(n - 1) / 2; s < m - n / 2; ++s) {
    const std::ptrdiff_t lo = std::max<std::ptrdiff_t>(0, -s), hi = std::min(n, m - s);
    if (2 * (hi - lo) < n) continue;
    bool equal = true;
    for (std::ptrdiff_t k = lo; k < hi && equal; ++k)
      equal = table[static_cast<size_t>(s + k)] == window[static_cast<size_t>(k)];
    if (equal) return s;
  }
  return std::nullopt;
}

/// A pointer the kernel declares outside its statements (a parameter, or a pointer into the
/// shared arena declared before them): its element type and whether it points to const.
struct Pointer {
  std::string type;
  bool is_const = false;
};

/// One top-level statement of a kernel body: its lines, its tokens, and the key that must be
/// equal for two statements to be repetitions of one another.
struct Statement {
  size_t first = 0, last = 0;  ///< line range in the body, inclusive
  std::vector<Token> tokens;
  std::string key;
  bool rollable = false;
  std::set<std::string> declared;  ///< names declared inside it
};

/// What varies at one token position of a repeated pattern.
struct Varying {
  size_t statement, token;  ///< within the pattern
  enum class Kind : uint8_t { Affine, IntTable, PtrTable, Local } kind;
  int64_t base = 0, step = 0;
  std::string suffix;
  std::vector<std::string> values;  ///< per repetition
  std::string table;                ///< the table's name (tables)
  size_t offset = 0;                ///< tables: where repetition 0's value is in the table
  std::string type;                 ///< pointer tables: element type
};

class KernelRoller {
 public:
  KernelRoller(const EmittedFunction& kernel, std::vector<EmittedLine> body, int min_repeats,
               int& loop_counter, RollStats& stats)
      : m_body(std::move(body)),
        m_min_repeats(min_repeats),
        m_loop_counter(loop_counter),
        m_stats(stats) {
    // The kernel's pointer parameters, as the emitter declared them.
    for (const EmittedPointer& p : kernel.params) m_pointers[p.name] = {p.type, p.is_const};
  }

  std::vector<EmittedLine> run() {
    split();
    m_stats.statements += static_cast<int64_t>(m_statements.size());
    std::vector<EmittedLine> out;
    size_t i = 0;
    while (i < m_statements.size()) {
      size_t best_p = 0, best_r = 0;
      std::vector<Varying> best_v;
      if (m_statements[i].rollable)
        for (size_t p = 1; p <= kMaxPeriod && i + p * m_min_repeats <= m_statements.size(); ++p) {
          size_t r = 1;
          while (i + (r + 1) * p <= m_statements.size() && same_pattern(i, i + r * p, p)) ++r;
          if (r < static_cast<size_t>(m_min_repeats) || p * r <= best_p * best_r) continue;
          bool all = true;
          for (size_t j = 0; j < p; ++j) all &= m_statements[i + j].rollable;
          if (!all) continue;
          std::vector<Varying> v;
          if (!classify(i, p, r, v)) continue;
          best_p = p;
          best_r = r;
          best_v = std::move(v);
        }
      if (best_r == 0) {
        for (size_t l = m_statements[i].first; l <= m_statements[i].last; ++l)
          out.push_back(m_body[l]);
        ++i;
        continue;
      }
      emit_loop(i, best_p, best_r, best_v, out);
      m_stats.rolled += static_cast<int64_t>(best_p * best_r);
      i += best_p * best_r;
    }
    return out;
  }

 private:
  /// The statements of the body at its top level, as the emitter numbered them
  /// (EmittedLine::statement: a line, a block with its braces, a call with its argument lines,
  /// the comment lines before any of them).
  void split() {
    size_t l = 0;
    while (l < m_body.size()) {
      Statement st;
      st.first = l;
      size_t end = l;
      while (end + 1 < m_body.size() && m_body[end + 1].statement == m_body[l].statement) ++end;
      st.last = end;
      size_t head = st.first;
      // Its first line after the comments (and blank lines) the emitter put before it.
      auto leading = [&](const EmittedLine& x) {
        return x.role == LineRole::Comment || x.text.find_first_not_of(' ') == std::string::npos;
      };
      while (head < st.last && leading(m_body[head])) ++head;
      for (size_t k = st.first; k <= st.last; ++k) tokenize(code_of(m_body[k].text), k, st.tokens);
      st.rollable = rollable(m_body[head], st);
      // A declaration at the body's top level is seen by later statements: such a statement is
      // never rolled (its name would go out of scope); inside braces, names are its own.
      // A top-level pointer into the shared arena (the emitter recorded what it declares).
      if (const EmittedPointer& d = m_body[st.first].declares; !st.rollable && !d.name.empty())
        m_pointers[d.name] = {d.type, d.is_const};
      std::string key;
      for (const Token& t : st.tokens) {
        if (t.kind == Token::Kind::Number)
          key += "#";
        else if (t.kind == Token::Kind::Ident && (m_pointers.count(t.text) || declared(st, t)))
          key += "$";
        else
          key += t.text;
        key += " ";
      }
      st.key = std::move(key);
      m_statements.push_back(std::move(st));
      l = end + 1;
    }
  }

  /// A statement the loop may repeat, by what the emitter said its first line is: a block (its
  /// braces, or an `if`), a barrier, a flag release or wait, or a call of a stage function,
  /// whose every line a rolled loop may hold (EmittedLine::repeatable: braces,
  /// barriers, guards on the block index, stage calls and their arguments, arena pointers, flag
  /// releases and waits; stage code written inline never is). A pointer into the arena declared
  /// outside braces is seen by later statements: never rolled.
  bool rollable(const EmittedLine& head, Statement& st) const {
    const bool block = head.role == LineRole::Brace || head.role == LineRole::If;
    if (!block && head.role != LineRole::StageCall && head.role != LineRole::Barrier &&
        head.role != LineRole::FlagSync)
      return false;
    for (size_t l = st.first; l <= st.last; ++l)
      if (!m_body[l].repeatable) return false;
    return mark(st);
  }

  /// Records the names `st` declares inside its braces (the identifier before "=" whose first
  /// occurrence in `st` follows "const", "*" or a type name).
  static bool mark(Statement& st) {
    std::set<std::string> seen;
    for (size_t k = 0; k < st.tokens.size(); ++k) {
      const Token& t = st.tokens[k];
      if (t.kind != Token::Kind::Ident) continue;
      if (seen.insert(t.text).second && k > 0 && k + 1 < st.tokens.size() &&
          (st.tokens[k + 1].text == "=" || st.tokens[k + 1].text == "[") &&
          (st.tokens[k - 1].text == "const" || st.tokens[k - 1].text == "*" ||
           st.tokens[k - 1].kind == Token::Kind::Ident))
        st.declared.insert(t.text);
    }
    return true;
  }

  static bool declared(const Statement& st, const Token& t) { return st.declared.count(t.text); }

  bool same_pattern(size_t a, size_t b, size_t p) const {
    for (size_t j = 0; j < p; ++j)
      if (m_statements[a + j].key != m_statements[b + j].key) return false;
    return true;
  }

  /// What varies between the `r` repetitions of the `p` statements at `i`: numbers (affine in
  /// the repetition, or a table), the kernel's pointers (a table) and names a statement declares
  /// (renamed consistently). False when something else varies.
  bool classify(size_t i, size_t p, size_t r, std::vector<Varying>& out) {
    out.clear();
    for (size_t j = 0; j < p; ++j) {
      const Statement& s0 = m_statements[i + j];
      for (size_t k = 0; k < s0.tokens.size(); ++k) {
        bool varies = false;
        for (size_t q = 1; q < r && !varies; ++q)
          varies = m_statements[i + q * p + j].tokens[k].text != s0.tokens[k].text;
        if (!varies) continue;
        Varying v;
        v.statement = j;
        v.token = k;
        for (size_t q = 0; q < r; ++q)
          v.values.push_back(m_statements[i + q * p + j].tokens[k].text);
        const Token& t0 = s0.tokens[k];
        if (t0.kind == Token::Kind::Number) {
          // An array's extent (a name the statement declares, then "[") must stay a constant.
          if (k > 1 && s0.tokens[k - 1].text == "[" && s0.declared.count(s0.tokens[k - 2].text))
            return false;
          std::vector<int64_t> n;
          std::string suffix;
          for (const std::string& x : v.values) {
            auto lit = integer(x);
            if (!lit) return false;
            if (n.empty()) suffix = lit->second;
            if (lit->second != suffix) return false;
            n.push_back(lit->first);
          }
          v.suffix = suffix;
          v.base = n[0];
          v.step = n[1] - n[0];
          bool affine = true;
          for (size_t q = 0; q < r; ++q)
            affine &= n[q] == v.base + v.step * static_cast<int64_t>(q);
          v.kind = affine ? Varying::Kind::Affine : Varying::Kind::IntTable;
        } else if (t0.kind == Token::Kind::Ident) {
          bool pointers = true, locals = true;
          std::string type;
          bool any_const = false;
          for (size_t q = 0; q < r; ++q) {
            const Statement& sq = m_statements[i + q * p + j];
            const std::string& x = v.values[q];
            auto ptr = m_pointers.find(x);
            pointers &= ptr != m_pointers.end() && !sq.declared.count(x) &&
                        (type.empty() || ptr->second.type == type);
            if (ptr != m_pointers.end()) {
              if (type.empty()) type = ptr->second.type;
              any_const |= ptr->second.is_const;
            }
            locals &= sq.declared.count(x) > 0;
          }
          if (pointers) {
            v.kind = Varying::Kind::PtrTable;
            v.type = (any_const ? "const " : "") + type + "*";
          } else if (locals) {
            v.kind = Varying::Kind::Local;
          } else {
            return false;
          }
        } else {
          return false;
        }
        out.push_back(std::move(v));
      }
    }
    // Names a statement declares must be renamed one to one in every repetition.
    for (size_t j = 0; j < p; ++j)
      for (size_t q = 1; q < r; ++q) {
        std::map<std::string, std::string> to0, from0;
        for (const Varying& v : out) {
          if (v.statement != j || v.kind != Varying::Kind::Local) continue;
          auto [a, ia] = to0.emplace(v.values[q], v.values[0]);
          auto [b, ib] = from0.emplace(v.values[0], v.values[q]);
          if (a->second != v.values[0] || b->second != v.values[q]) return false;
        }
      }
    return check_expansion(i, p, r, out);
  }

  /// The pattern instantiated for repetition q, token by token, equals the statements there.
  bool check_expansion(size_t i, size_t p, size_t r, const std::vector<Varying>& vs) const {
    for (size_t q = 0; q < r; ++q)
      for (size_t j = 0; j < p; ++j) {
        const Statement& s0 = m_statements[i + j];
        const Statement& sq = m_statements[i + q * p + j];
        if (s0.tokens.size() != sq.tokens.size()) return false;
        std::vector<std::string> inst;
        for (const Token& t : s0.tokens) inst.push_back(t.text);
        for (const Varying& v : vs) {
          if (v.statement != j) continue;
          switch (v.kind) {
            case Varying::Kind::Affine:
              inst[v.token] = std::to_string(v.base + v.step * static_cast<int64_t>(q)) + v.suffix;
              break;
            default:
              inst[v.token] = v.values[q];
          }
        }
        for (size_t k = 0; k < inst.size(); ++k)
          if (inst[k] != sq.tokens[k].text) return false;
      }
    return true;
  }

  void emit_loop(size_t i, size_t p, size_t r, std::vector<Varying>& vs,
                 std::vector<EmittedLine>& out) {
    const int id = m_loop_counter++;
    ++m_stats.loops;
    const std::string rv = "souffle_r" + std::to_string(id);
    const std::string ind = "  ";
    // The loop's own lines belong to the kernel and to no stage.
    auto add = [&](const std::string& text) {
      const EmittedLine& first = m_body[m_statements[i].first];
      EmittedLine l;
      l.text = text;
      l.kernel = first.kernel;
      l.part = first.part;
      l.function = first.function;
      out.push_back(std::move(l));
    };
    add(ind + "// " + std::to_string(r) + " repetitions of the " + std::to_string(p) +
        (p == 1 ? " statement" : " statements") +
        " below, rolled into a loop: each repetition calls the same functions on "
        "the tensors of its row of the tables (the comments name repetition 0)");
    out.back().role = LineRole::Comment;
    add(ind + "{");
    // Tables: a sequence of values that is a shifted window of another (an LSTM step's state
    // read by the next step, a layer's output read by the layer above) shares one table, read at
    // an offset; a table may grow at either end to take a window in. The loop's tables hold each
    // pointer about once, and their entries are what NVRTC's time grows with.
    struct Table {
      std::string type;
      std::vector<std::string> values;
    };
    std::vector<Table> tables;
    std::vector<std::pair<size_t, size_t>> where(vs.size());  // (table, offset) per varying
    for (size_t x = 0; x < vs.size(); ++x) {
      Varying& v = vs[x];
      if (v.kind != Varying::Kind::PtrTable && v.kind != Varying::Kind::IntTable) continue;
      const std::string type = v.kind == Varying::Kind::PtrTable ? v.type : "long long";
      std::vector<std::string> values = v.values;
      if (v.kind == Varying::Kind::IntTable)
        for (std::string& val : values) {
          auto lit = integer(val);
          val = std::to_string(lit ? lit->first : 0) + "ll";
        }
      bool placed = false;
      for (size_t t = 0; t < tables.size() && !placed; ++t) {
        if (tables[t].type != type) continue;
        const auto shift = window_shift(tables[t].values, values);
        if (!shift) continue;
        if (*shift < 0) {  // the window starts before the table: it grows at the front
          const size_t grow = static_cast<size_t>(-*shift);
          tables[t].values.insert(tables[t].values.begin(), values.begin(),
                                  values.begin() + static_cast<std::ptrdiff_t>(grow));
          for (auto& [table, offset] : where)
            if (table == t) offset += grow;
        }
        const size_t at = *shift < 0 ? 0 : static_cast<size_t>(*shift);
        for (size_t q = tables[t].values.size() - at; q < values.size(); ++q)
          tables[t].values.push_back(values[q]);
        where[x] = {t, at};
        placed = true;
      }
      if (!placed) {
        where[x] = {tables.size(), 0};
        tables.push_back({type, std::move(values)});
      }
    }
    for (size_t x = 0; x < vs.size(); ++x) {
      Varying& v = vs[x];
      if (v.kind != Varying::Kind::PtrTable && v.kind != Varying::Kind::IntTable) continue;
      v.table = rv + "_t" + std::to_string(where[x].first);
      v.offset = where[x].second;
    }
    for (size_t t = 0; t < tables.size(); ++t) {
      const std::vector<std::string>& values = tables[t].values;
      m_stats.table_entries += static_cast<int64_t>(values.size());
      // A table of integers (a packed kernel's parameter indices among them) is static: one
      // copy in global memory, not an array each thread builds (NVRTC's time grows with those).
      const bool ints = tables[t].type == "long long";
      std::string decl = ind + "  ";
      decl += ints ? "static const " + tables[t].type : tables[t].type + " const";
      decl += " " + rv + "_t" + std::to_string(t) + "[" + std::to_string(values.size()) + "] = {";
      add(decl);
      std::string row;
      for (size_t q = 0; q < values.size(); ++q) {
        const std::string item = values[q] + (q + 1 < values.size() ? "," : "");
        if (!row.empty() && row.size() + item.size() + 1 > 92) {
          add(ind + "      " + row);
          row.clear();
        }
        row += (row.empty() ? "" : " ") + item;
      }
      if (!row.empty()) add(ind + "      " + row);
      add(ind + "  };");
    }
    add(ind + "  #pragma unroll 1");
    add(ind + "  for (long long " + rv + " = 0; " + rv + " < " + std::to_string(r) + "; ++" + rv +
        ") {");
    for (size_t j = 0; j < p; ++j) {
      const Statement& s0 = m_statements[i + j];
      // Replacements per line, right to left so that columns stay valid.
      std::map<size_t, std::vector<std::pair<size_t, std::pair<size_t, std::string>>>> edits;
      for (const Varying& v : vs) {
        if (v.statement != j || v.kind == Varying::Kind::Local) continue;
        const Token& t = s0.tokens[v.token];
        std::string with;
        if (v.kind == Varying::Kind::Affine)
          with =
              "(" + std::to_string(v.base) + "ll + " + std::to_string(v.step) + "ll * " + rv + ")";
        else
          with = v.table + "[" + rv + (v.offset ? " + " + std::to_string(v.offset) : "") + "]";
        edits[t.line].push_back({t.at, {t.text.size(), with}});
      }
      for (size_t l = s0.first; l <= s0.last; ++l) {
        EmittedLine line = m_body[l];
        std::string& text = line.text;
        auto e = edits.find(l);
        if (e != edits.end()) {
          std::sort(e->second.begin(), e->second.end(),
                    [](const auto& a, const auto& b) { return a.first > b.first; });
          for (const auto& [at, what] : e->second) text.replace(at, what.first, what.second);
        }
        text = "    " + text + stages_by_repetition(i, p, r, j, l - s0.first);
        // The line stands for the stages and boundaries of every repetition.
        for (size_t q = 1; q < r; ++q) {
          const Statement& sq = m_statements[i + q * p + j];
          if (sq.first + (l - s0.first) > sq.last) break;
          const EmittedLine& other = m_body[sq.first + (l - s0.first)];
          if (line.stage >= 0 && other.stage >= 0) line.more_stages.push_back(other.stage);
          if (line.boundary >= 0 && other.boundary >= 0)
            line.more_boundaries.push_back(other.boundary);
        }
        out.push_back(std::move(line));
      }
    }
    add(ind + "  }");
    add(ind + "}");
  }

  /// A call of an outlined stage ("// runs stage N `name`") in a rolled pattern runs another
  /// stage in each repetition: the comment of repetition 0 gets them, " (in repetition r of R:
  /// stage A + Br)" or " (in repetitions 0..R-1: stages a, b, ...)", so that the code view can
  /// find every repetition's stage at the call. Empty for other lines.
  std::string stages_by_repetition(size_t i, size_t p, size_t r, size_t j, size_t line) const {
    std::vector<int64_t> stages;
    for (size_t q = 0; q < r; ++q) {
      const Statement& sq = m_statements[i + q * p + j];
      if (sq.first + line > sq.last) return {};
      const EmittedLine& l = m_body[sq.first + line];
      if (l.role != LineRole::StageCall || l.stage < 0) return {};
      stages.push_back(l.stage);
    }
    if (stages.size() < 2) return {};
    const int64_t step = stages[1] - stages[0];
    bool affine = true;
    for (size_t q = 2; q < stages.size(); ++q) affine &= stages[q] - stages[q - 1] == step;
    if (affine)
      return " (in repetition r of " + std::to_string(r) + ": stage " + std::to_string(stages[0]) +
             " + " + std::to_string(step) + "r)";
    std::string list;
    for (int64_t st : stages) list += (list.empty() ? "" : ", ") + std::to_string(st);
    return " (in repetitions 0.." + std::to_string(r - 1) + ": stages " + list + ")";
  }

  std::vector<EmittedLine> m_body;
  int m_min_repeats;
  int& m_loop_counter;
  RollStats& m_stats;
  std::map<std::string, Pointer> m_pointers;
  std::vector<Statement> m_statements;
};

}  // namespace

void roll_repeated_statements(EmittedUnit& unit, int min_repeats, RollStats* stats) {
  RollStats local;
  RollStats& st = stats ? *stats : local;
  std::vector<EmittedLine>& lines = unit.lines;
  std::vector<EmittedLine> out;
  int loop_counter = 0;
  for (size_t i = 0; i < lines.size();) {
    if (lines[i].part != LinePart::Kernel || lines[i].role != LineRole::FunctionHead) {
      out.push_back(std::move(lines[i]));
      ++i;
      continue;
    }
    // A kernel's head (as the emitter recorded it): its head line and the parameter lines after
    // it, the last of which opens the body; its body runs to its closing line, the function's
    // last.
    const int function = lines[i].function;
    size_t j = i;
    while (j + 1 < lines.size() && lines[j + 1].function == function &&
           lines[j + 1].role == LineRole::Signature)
      ++j;
    size_t end = j;
    while (end + 1 < lines.size() && lines[end + 1].function == function) ++end;
    if (end == j) {  // a head that closes no body: nothing to roll
      for (; i <= end; ++i) out.push_back(std::move(lines[i]));
      continue;
    }
    out.insert(out.end(), lines.begin() + static_cast<std::ptrdiff_t>(i),
               lines.begin() + static_cast<std::ptrdiff_t>(j + 1));
    std::vector<EmittedLine> body(lines.begin() + static_cast<std::ptrdiff_t>(j + 1),
                                  lines.begin() + static_cast<std::ptrdiff_t>(end));
    // Every line of the body in one of its top-level statements (the emitter numbered them).
    const bool numbered =
        !body.empty() && std::all_of(body.begin(), body.end(),
                                     [](const EmittedLine& l) { return l.statement >= 0; });
    if (numbered && static_cast<int>(body.size()) >= min_repeats) {
      KernelRoller roller(unit.functions.at(static_cast<size_t>(function)), std::move(body),
                          min_repeats, loop_counter, st);
      body = roller.run();
    }
    for (EmittedLine& l : body) out.push_back(std::move(l));
    out.push_back(std::move(lines[end]));
    i = end + 1;
  }
  lines = std::move(out);
}

}  // namespace souffle::codegen
