// Expected conformance statuses: parsing, writing back, and every kind of change found.
#include <gtest/gtest.h>

#include "core/session/expected_status.h"
#include "core/support/error.h"

namespace souffle {
namespace {

TEST(ExpectedStatus, RoundTripKeepsStatusesAndReasons) {
  StatusTable t;
  t["test_b"] = {"unsupported", "model.onnx: unsupported ops: Foo"};
  t["test_a"] = {"pass", ""};
  std::string text = format_expected_status(t, {"header line"});
  EXPECT_EQ(text,
            "# header line\n"
            "test_a pass\n"
            "test_b unsupported  # model.onnx: unsupported ops: Foo\n");
  StatusTable back = parse_expected_status(text, "f.txt");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back["test_a"].status, "pass");
  EXPECT_EQ(back["test_b"].status, "unsupported");
  EXPECT_EQ(back["test_b"].reason, "model.onnx: unsupported ops: Foo");
}

TEST(ExpectedStatus, MalformedLinesNameFileAndLine) {
  try {
    parse_expected_status("# c\ntest_a pass\ntest_b\n", "node.txt");
    FAIL() << "a line without a status must be refused";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("node.txt"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("line 3"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse_expected_status("test_a pass\ntest_a fail\n", "f"), UserError);
  EXPECT_THROW(parse_expected_status("test_a pass extra\n", "f"), UserError);
}

TEST(ExpectedStatus, DiffFindsBetterWorseNewAndGone) {
  StatusTable want =
      parse_expected_status("test_a pass\ntest_b unsupported\ntest_c fail\ntest_gone pass\n", "f");
  StatusTable got;
  got["test_a"] = {"fail", "output y: 3 mismatches"};
  got["test_b"] = {"pass", ""};
  got["test_c"] = {"fail", "another reason, same status"};
  got["test_new"] = {"unsupported", "Bar"};
  std::vector<StatusChange> d = diff_status(want, got);
  ASSERT_EQ(d.size(), 4u);
  EXPECT_EQ(describe(d[0]), "test_a: pass -> fail (output y: 3 mismatches)");
  EXPECT_EQ(describe(d[1]), "test_b: unsupported -> pass");
  EXPECT_EQ(describe(d[2]), "test_gone: gone (was pass)");
  EXPECT_EQ(describe(d[3]), "test_new: new (unsupported) (Bar)");
  EXPECT_TRUE(diff_status(want, want).empty());
}

}  // namespace
}  // namespace souffle
