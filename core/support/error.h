/// \file Two kinds of error: UserError (bad input, carries file/node/reason) and InternalError (a
/// bug).
#pragma once

#include <stdexcept>
#include <string>

namespace souffle {

/// An error caused by the user's input: a malformed or unsupported model, a bad option, a failed
/// compile of generated code the user asked for. Shown to the user as "file: node: reason".
class UserError : public std::runtime_error {
 public:
  UserError(std::string file, std::string node, std::string reason);
  explicit UserError(std::string reason) : UserError("", "", std::move(reason)) {}

  const std::string& file() const { return m_file; }
  const std::string& node() const { return m_node; }
  const std::string& reason() const { return m_reason; }

  /// A copy with the file filled in, if it was empty (importers add the file at the top level).
  UserError with_file(const std::string& file) const;
  /// A copy with the node filled in, if it was empty.
  UserError with_node(const std::string& node) const;

 private:
  std::string m_file, m_node, m_reason;
};

/// A broken invariant inside the project: always a bug, never the user's fault.
class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& what) : std::logic_error("internal error: " + what) {}
};

[[noreturn]] void throw_internal(const char* file, int line, const std::string& message);

}  // namespace souffle

/// Checks an internal invariant; a failure is a bug in the project, not in the user's input.
#define SOUFFLE_CHECK(cond, msg)                                       \
  do {                                                                 \
    if (!(cond)) ::souffle::throw_internal(__FILE__, __LINE__, (msg)); \
  } while (0)
