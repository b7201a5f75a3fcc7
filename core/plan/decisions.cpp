#include "core/plan/decisions.h"

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/support/error.h"

namespace souffle::plan {

namespace {

struct KindName {
  Edit::Kind kind;
  const char* name;
  const char* field_a;  ///< the JSON field holding `a`
};
constexpr KindName kKinds[] = {
    {Edit::Kind::Merge, "merge", "a"},      {Edit::Kind::Split, "split", "at"},
    {Edit::Kind::Pin, "pin", "te"},         {Edit::Kind::Force, "force", "site"},
    {Edit::Kind::Forbid, "forbid", "site"}, {Edit::Kind::Sync, "sync", "at"},
};

const KindName& info(Edit::Kind k) {
  for (const KindName& n : kKinds)
    if (n.kind == k) return n;
  SOUFFLE_CHECK(false, "unknown edit kind");
  return kKinds[0];
}

}  // namespace

const char* edit_kind_name(Edit::Kind k) {
  return info(k).name;
}

std::string describe(const Edit& e) {
  switch (e.kind) {
    case Edit::Kind::Merge:
      return "merge " + e.a + " " + e.b;
    case Edit::Kind::Split:
      return "split before " + e.a;
    case Edit::Kind::Pin:
      return "pin " + e.a;
    case Edit::Kind::Force:
      return "force " + e.a;
    case Edit::Kind::Forbid:
      return "forbid " + e.a;
    case Edit::Kind::Sync:
      return "order " + e.a + " by " + (e.b == "flags" ? "per-tile flags" : "a grid barrier");
  }
  return "?";
}

std::string to_json(const Decisions& d) {
  nlohmann::json j;
  j["version"] = kDecisionsVersion;
  nlohmann::json edits = nlohmann::json::array();
  for (const Edit& e : d.edits) {
    const KindName& k = info(e.kind);
    nlohmann::json x;
    x["kind"] = k.name;
    x[k.field_a] = e.a;
    if (e.kind == Edit::Kind::Merge) x["b"] = e.b;
    if (e.kind == Edit::Kind::Sync) x["order"] = e.b;
    edits.push_back(x);
  }
  j["edits"] = edits;
  return j.dump(2) + "\n";
}

Decisions parse_decisions(const std::string& text, const std::string& file) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw UserError(file, "", std::string("not valid JSON: ") + e.what());
  }
  if (!j.is_object()) throw UserError(file, "", "expected a JSON object");
  if (!j.contains("version") || !j["version"].is_number_integer())
    throw UserError(file, "", "missing integer field 'version'");
  if (j["version"].get<int>() != kDecisionsVersion)
    throw UserError(file, "",
                    "unsupported decisions version " + std::to_string(j["version"].get<int>()) +
                        " (this build reads version " + std::to_string(kDecisionsVersion) + ")");
  Decisions d;
  if (!j.contains("edits")) return d;
  if (!j["edits"].is_array()) throw UserError(file, "", "'edits' must be an array");
  size_t idx = 0;
  for (const nlohmann::json& x : j["edits"]) {
    std::string where = "edits[" + std::to_string(idx++) + "]";
    if (!x.is_object() || !x.contains("kind") || !x["kind"].is_string())
      throw UserError(file, where, "expected an object with a string 'kind'");
    std::string kind = x["kind"].get<std::string>();
    const KindName* k = nullptr;
    for (const KindName& n : kKinds)
      if (kind == n.name) k = &n;
    if (!k)
      throw UserError(file, where,
                      "unknown kind '" + kind + "' (merge, split, pin, force, forbid, sync)");
    auto field = [&](const char* name) {
      if (!x.contains(name) || !x[name].is_string() || x[name].get<std::string>().empty())
        throw UserError(file, where,
                        std::string("'") + k->name + "' needs a non-empty string '" + name + "'");
      return x[name].get<std::string>();
    };
    Edit e;
    e.kind = k->kind;
    e.a = field(k->field_a);
    if (e.kind == Edit::Kind::Merge) e.b = field("b");
    if (e.kind == Edit::Kind::Sync) {
      e.b = field("order");
      if (e.b != "grid" && e.b != "flags")
        throw UserError(file, where,
                        "'sync' orders a stage by \"grid\" or \"flags\", not '" + e.b + "'");
    }
    d.edits.push_back(e);
  }
  return d;
}

Decisions load_decisions(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw UserError(path, "", "cannot open the decisions file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_decisions(ss.str(), path);
}

void save_decisions(const Decisions& d, const std::string& path) {
  std::ofstream out(path);
  if (!out) throw UserError(path, "", "cannot write the decisions file");
  out << to_json(d);
  if (!out) throw UserError(path, "", "write failed");
}

}  // namespace souffle::plan
