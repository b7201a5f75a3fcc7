#include "core/schedule/price_twins.h"

#include <algorithm>
#include <cctype>
#include <map>

namespace souffle::schedule {

NameScanner::NameScanner(const std::vector<std::string>& names) : m_by_first(256) {
  for (const std::string& n : names)
    if (!n.empty()) m_by_first[static_cast<unsigned char>(n[0])].push_back(n);
  for (std::vector<std::string>& v : m_by_first) {
    std::sort(v.begin(), v.end(), [](const std::string& a, const std::string& b) {
      return a.size() != b.size() ? a.size() > b.size() : a < b;
    });
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }
}

PartitionStructure abstract_names(std::string_view key, const std::vector<std::string>& names,
                                  std::vector<int> tes) {
  PartitionStructure s;
  s.tes = std::move(tes);
  std::map<std::string, size_t, std::less<>> given;
  // A placeholder is a byte no printed name or TE holds, the name's number and another.
  s.key = NameScanner(names).rewrite(key, [&](const std::string& n) {
    auto [it, fresh] = given.emplace(n, s.names.size());
    if (fresh) s.names.push_back(n);
    return "\x01" + std::to_string(it->second) + "\x02";
  });
  return s;
}

namespace {

/// `s` with every "kernel<from>" not followed by another digit named "kernel<to>".
void rename_kernel(std::string& s, int from, int to) {
  if (from == to) return;
  const std::string a = "kernel" + std::to_string(from), b = "kernel" + std::to_string(to);
  for (size_t at = s.find(a); at != std::string::npos; at = s.find(a, at)) {
    const size_t end = at + a.size();
    const bool whole = (end == s.size() || !std::isdigit(static_cast<unsigned char>(s[end]))) &&
                       (at == 0 || !std::isalnum(static_cast<unsigned char>(s[at - 1])));
    if (!whole) {
      at = end;
      continue;
    }
    s.replace(at, a.size(), b);
    at += b.size();
  }
}

}  // namespace

std::optional<plan::PartitionPrice> rename_price(const plan::PartitionPrice& price,
                                                 const PartitionStructure& from,
                                                 const PartitionStructure& to, int from_id,
                                                 int to_id) {
  if (from.key != to.key || from.names.size() != to.names.size() ||
      from.tes.size() != to.tes.size())
    return std::nullopt;
  std::map<std::string, const std::string*, std::less<>> name_of;
  for (size_t i = 0; i < from.names.size(); ++i) name_of.emplace(from.names[i], &to.names[i]);
  std::map<int, int> te_of;
  for (size_t i = 0; i < from.tes.size(); ++i) te_of.emplace(from.tes[i], to.tes[i]);
  const NameScanner scan(from.names);
  auto text = [&](std::string& s) {
    s = scan.rewrite(s, [&](const std::string& n) { return *name_of.at(n); });
    rename_kernel(s, from_id, to_id);
  };
  bool mapped = true;
  auto te = [&](int& t) {
    if (t < 0) return;
    auto it = te_of.find(t);
    if (it == te_of.end())
      mapped = false;
    else
      t = it->second;
  };
  plan::PartitionPrice out = price;
  text(out.error);
  for (std::string& s : out.on_chip) text(s);
  for (int& t : out.barrier_sites) te(t);
  for (plan::BuiltStage& st : out.stages) {
    text(st.name);
    for (std::string& s : st.tes) text(s);
    for (std::string& s : st.nodes) text(s);
    text(st.schedule);
    text(st.weight_panel);
    text(st.bound);
    text(st.mainloop);
    text(st.priced_from);
    for (BuildChoice& c : st.choices) text(c.reason);
  }
  for (plan::Boundary& b : out.boundaries) {
    text(b.order.tensor);
    text(b.order.detail);
    te(b.te);
  }
  if (!mapped) return std::nullopt;
  return out;
}

}  // namespace souffle::schedule
