/// \file Expected conformance statuses: one line per test in a committed text file, compared
/// with a run so that any change of status (better or worse) is seen and must be recorded.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace souffle {

/// One test's status ("pass", "fail", "unsupported", "crash", "timeout", or a level's own
/// words) and why, when it did not pass.
struct TestStatus {
  std::string status;
  std::string reason;  ///< kept as a comment in the file; never compared
};
using StatusTable = std::map<std::string, TestStatus>;  ///< by test name

/// Parses "NAME STATUS [# reason]" lines; '#' starts a comment line. UserError naming the file
/// and line for a malformed line or a test listed twice.
StatusTable parse_expected_status(const std::string& text, const std::string& file);
StatusTable read_expected_status(const std::string& file);

/// The file's text: `header` lines as comments, then one line per test in name order.
std::string format_expected_status(const StatusTable& table,
                                   const std::vector<std::string>& header);

struct StatusChange {
  std::string name;
  std::string before;  ///< "" when the test is new
  std::string after;   ///< "" when the test is gone
  std::string reason;  ///< the run's reason for `after`
};

/// Every test whose status differs between `expected` and `actual`, new tests and vanished ones
/// included, in name order.
std::vector<StatusChange> diff_status(const StatusTable& expected, const StatusTable& actual);

/// "test_x: unsupported -> pass", "test_y: new (pass)", "test_z: gone (was fail)".
std::string describe(const StatusChange& c);

}  // namespace souffle
