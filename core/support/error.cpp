#include "core/support/error.h"

namespace souffle {
namespace {
std::string compose(const std::string& file, const std::string& node, const std::string& reason) {
  // Built with append: GCC 12 misreports `"literal" + std::string` here under -Wrestrict.
  std::string s;
  if (!file.empty()) s.append(file).append(": ");
  if (!node.empty()) s.append("node ").append(node).append(": ");
  s.append(reason);
  return s;
}
}  // namespace

UserError::UserError(std::string file, std::string node, std::string reason)
    : std::runtime_error(compose(file, node, reason)),
      m_file(std::move(file)),
      m_node(std::move(node)),
      m_reason(std::move(reason)) {}

UserError UserError::with_file(const std::string& file) const {
  return m_file.empty() ? UserError(file, m_node, m_reason) : *this;
}

UserError UserError::with_node(const std::string& node) const {
  return m_node.empty() ? UserError(m_file, node, m_reason) : *this;
}

void throw_internal(const char* file, int line, const std::string& message) {
  throw InternalError(std::string(file) + ":" + std::to_string(line) + ": " + message);
}

}  // namespace souffle
