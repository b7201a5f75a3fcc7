#include "core/plan/step.h"

#include <array>
#include <string>
#include <utility>

namespace souffle::plan {
namespace {

// The one table of step names, in pipeline order (the enum's order).
constexpr std::array<std::pair<Step, std::string_view>, 13> kSteps = {{
    {Step::Import, "import"},
    {Step::Fold, "fold"},
    {Step::Lower, "lower"},
    {Step::Analyze, "analyze"},
    {Step::Horizontal, "horizontal"},
    {Step::Vertical, "vertical"},
    {Step::Reanalyze, "re-analyze"},
    {Step::Partition, "partition"},
    {Step::Decisions, "decisions"},
    {Step::Price, "price"},
    {Step::BuildKernels, "build kernels"},
    {Step::Emit, "emit"},
    {Step::Compile, "compile"},
}};

static_assert([] {
  for (size_t i = 0; i < kSteps.size(); ++i)
    if (static_cast<size_t>(kSteps[i].first) != i) return false;
  return true;
}());

}  // namespace

const std::vector<Step>& all_steps() {
  static const std::vector<Step> steps = [] {
    std::vector<Step> out;
    for (const auto& [s, name] : kSteps) out.push_back(s);
    return out;
  }();
  return steps;
}

std::string_view step_name(Step s) {
  const auto i = static_cast<size_t>(s);
  return i < kSteps.size() ? kSteps[i].second : std::string_view("?");
}

std::optional<Step> parse_step(std::string_view name) {
  for (const auto& [s, n] : kSteps)
    if (n == name) return s;
  return std::nullopt;
}

std::string step_names(const std::vector<Step>& steps) {
  std::string out;
  for (Step s : steps) {
    if (!out.empty()) out += ", ";
    out += step_name(s);
  }
  return out;
}

}  // namespace souffle::plan
