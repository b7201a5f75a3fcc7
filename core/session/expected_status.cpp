#include "core/session/expected_status.h"

#include <fstream>
#include <sstream>

#include "core/support/error.h"

namespace souffle {

namespace {

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  size_t e = s.find_last_not_of(" \t\r");
  return s.substr(b, e - b + 1);
}

}  // namespace

StatusTable parse_expected_status(const std::string& text, const std::string& file) {
  StatusTable table;
  std::istringstream in(text);
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    std::string body = line, reason;
    if (size_t hash = line.find('#'); hash != std::string::npos) {
      body = line.substr(0, hash);
      reason = trim(line.substr(hash + 1));
    }
    body = trim(body);
    if (body.empty()) continue;
    std::istringstream words(body);
    std::string name, status, extra;
    words >> name >> status;
    if (status.empty() || (words >> extra))
      throw UserError(
          file, "", "line " + std::to_string(no) + ": expected 'NAME STATUS', got '" + body + "'");
    if (!table.emplace(name, TestStatus{status, reason}).second)
      throw UserError(file, "",
                      "line " + std::to_string(no) + ": test " + name + " is listed twice");
  }
  return table;
}

StatusTable read_expected_status(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw UserError(file, "", "cannot read the expected-status file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_expected_status(ss.str(), file);
}

std::string format_expected_status(const StatusTable& table,
                                   const std::vector<std::string>& header) {
  std::string out;
  for (const std::string& h : header) out += "# " + h + "\n";
  for (const auto& [name, st] : table) {
    out += name + " " + st.status;
    std::string reason = st.reason;
    for (char& c : reason)
      if (c == '\n' || c == '\r') c = ' ';
    if (st.status != "pass" && !reason.empty()) out += "  # " + reason;
    out += "\n";
  }
  return out;
}

std::vector<StatusChange> diff_status(const StatusTable& expected, const StatusTable& actual) {
  std::vector<StatusChange> changes;
  auto e = expected.begin();
  auto a = actual.begin();
  while (e != expected.end() || a != actual.end()) {
    if (a == actual.end() || (e != expected.end() && e->first < a->first)) {
      changes.push_back({e->first, e->second.status, "", ""});
      ++e;
    } else if (e == expected.end() || a->first < e->first) {
      changes.push_back({a->first, "", a->second.status, a->second.reason});
      ++a;
    } else {
      if (e->second.status != a->second.status)
        changes.push_back({a->first, e->second.status, a->second.status, a->second.reason});
      ++e;
      ++a;
    }
  }
  return changes;
}

std::string describe(const StatusChange& c) {
  std::string s = c.name + ": ";
  if (c.before.empty())
    s += "new (" + c.after + ")";
  else if (c.after.empty())
    s += "gone (was " + c.before + ")";
  else
    s += c.before + " -> " + c.after;
  if (!c.after.empty() && c.after != "pass" && !c.reason.empty()) s += " (" + c.reason + ")";
  return s;
}

}  // namespace souffle
