#include "core/session/kernel_dedup.h"

#include <cctype>
#include <cstdio>
#include <unordered_map>

#include "core/codegen/codegen_c.h"
#include "core/loop/mutator.h"
#include "core/te/mutator.h"

namespace souffle {
namespace {

bool ident_start(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}
bool ident_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

/// Whether `tok` is `base` or `base` + "_" + digits for some base of `bases`.
bool is_declared(const std::string& tok, const std::set<std::string>& bases) {
  if (bases.count(tok)) return true;
  size_t us = tok.rfind('_');
  if (us == std::string::npos || us + 1 == tok.size()) return false;
  for (size_t i = us + 1; i < tok.size(); ++i)
    if (!std::isdigit(static_cast<unsigned char>(tok[i]))) return false;
  return bases.count(tok.substr(0, us)) > 0;
}

}  // namespace

std::string fnv_hex(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::set<std::string> declared_name_bases(const loop::Kernel& k) {
  std::set<std::string> out;
  auto tensor = [&](const te::Tensor& t) {
    if (t) out.insert(codegen::c_identifier(t->name));
  };
  auto var = [&](const te::Expr& e) {
    if (const te::Var* v = e.as<te::Var>()) out.insert(codegen::c_identifier(v->name));
  };
  for (const te::Tensor& t : k.inputs) tensor(t);
  for (const te::Tensor& t : k.outputs) tensor(t);
  for (const te::Tensor& t : k.flags) tensor(t);
  for (const te::Tensor& t : k.tables) tensor(t);
  for (const loop::SharedSlot& s : k.shared) tensor(s.buffer);
  loop::for_each_stmt(k.body, [&](const loop::Stmt& s) {
    if (const loop::For* f = s.as<loop::For>()) var(f->var);
    if (const loop::LetStmt* l = s.as<loop::LetStmt>()) var(l->var);
    if (const loop::Allocate* a = s.as<loop::Allocate>()) tensor(a->buffer);
    if (const loop::FragmentAlloc* a = s.as<loop::FragmentAlloc>()) tensor(a->buffer);
    if (const loop::Store* st = s.as<loop::Store>()) tensor(st->buffer);
    if (const loop::AtomicAdd* at = s.as<loop::AtomicAdd>()) tensor(at->buffer);
    if (const loop::Shuffle* sh = s.as<loop::Shuffle>()) tensor(sh->buffer);
  });
  loop::for_each_expr(k.body, [&](const te::Expr& e) {
    te::for_each_node(e, [&](const te::Expr& n) {
      if (const te::Read* r = n.as<te::Read>()) tensor(r->tensor);
      if (const te::Var* v = n.as<te::Var>()) out.insert(codegen::c_identifier(v->name));
    });
  });
  out.erase("");
  return out;
}

CanonicalKernel canonical_kernel(const std::string& cuda, const std::string& name,
                                 const std::set<std::string>& bases) {
  const std::string stage_prefix = name + "_stage";
  const std::string args_type = name + "_args";  // a packed kernel's parameter struct
  std::unordered_map<std::string, std::string> renamed;
  std::string entry_token;
  std::string out;
  out.reserve(cuda.size());
  const size_t n = cuda.size();
  for (size_t i = 0; i < n;) {
    const char c = cuda[i];
    if (c == '/' && i + 1 < n && cuda[i + 1] == '/') {
      while (i < n && cuda[i] != '\n') ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && cuda[i + 1] == '*') {
      size_t end = cuda.find("*/", i + 2);
      end = end == std::string::npos ? n : end + 2;
      for (; i < end; ++i)
        if (cuda[i] == '\n') out += '\n';
      continue;
    }
    if (c == '"' || c == '\'') {
      size_t j = i + 1;
      while (j < n && cuda[j] != c && cuda[j] != '\n') j += cuda[j] == '\\' ? 2 : 1;
      j = std::min(n, j + 1);
      out.append(cuda, i, j - i);
      i = j;
      continue;
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {  // a number, suffixes and exponents too
      size_t j = i;
      while (j < n && (ident_char(cuda[j]) || cuda[j] == '.')) ++j;
      out.append(cuda, i, j - i);
      i = j;
      continue;
    }
    if (ident_start(c)) {
      size_t j = i;
      while (j < n && ident_char(cuda[j])) ++j;
      std::string tok = cuda.substr(i, j - i);
      i = j;
      // A member (`threadIdx.x`, `p->y`, `wmma::x`) is never one of the kernel's names.
      size_t back = out.find_last_not_of(" \t");
      const bool member =
          back != std::string::npos &&
          (out[back] == '.' || (back > 0 && out[back] == '>' && out[back - 1] == '-') ||
           (back > 0 && out[back] == ':' && out[back - 1] == ':'));
      const bool model_name =
          !member && (tok == name || tok == args_type || tok.rfind(stage_prefix, 0) == 0 ||
                      is_declared(tok, bases));
      if (!model_name) {
        out += tok;
        continue;
      }
      auto it = renamed.find(tok);
      if (it == renamed.end())
        it = renamed.emplace(tok, "_c" + std::to_string(renamed.size())).first;
      if (tok == name) entry_token = it->second;
      out += it->second;
      continue;
    }
    out += c;
    ++i;
  }
  CanonicalKernel ck;
  ck.entry = "souffle_k" + fnv_hex(out);
  if (entry_token.empty()) {
    ck.source = std::move(out);
    return ck;
  }
  // The kernel's own token becomes the entry name (no other token can be `_cN` followed by an
  // identifier character, so a whole-token replace is exact).
  ck.source.reserve(out.size() + 64);
  for (size_t i = 0; i < out.size();) {
    if (out.compare(i, entry_token.size(), entry_token) == 0 &&
        (i == 0 || !ident_char(out[i - 1])) &&
        (i + entry_token.size() == out.size() || !ident_char(out[i + entry_token.size()]))) {
      ck.source += ck.entry;
      i += entry_token.size();
    } else {
      ck.source += out[i++];
    }
  }
  return ck;
}

CanonicalKernel canonical_kernel(const loop::Kernel& k, const std::string& name,
                                 const std::string& cuda) {
  return canonical_kernel(cuda, name, declared_name_bases(k));
}

}  // namespace souffle
