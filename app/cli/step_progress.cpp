#include "app/cli/step_progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>

#include "core/session/pipeline.h"

namespace souffle::cli {

StepProgress::StepProgress(bool quiet, std::string until, bool transforms)
    : m_on(!quiet && isatty(2) != 0), m_until(std::move(until)), m_transforms(transforms) {}

StepProgress::~StepProgress() {
  if (m_on) std::cerr << "\r\033[K" << std::flush;
}

void StepProgress::start() const {
  if (m_on) std::cerr << "\r\033[K" << pipeline_order().front() << "…" << std::flush;
}

void StepProgress::say(const std::string& text) const {
  if (m_on) std::cerr << "\r\033[K" << text << std::flush;
}

plan::PassInstrument StepProgress::instrument(plan::PassInstrument chain) {
  if (!m_on) return chain;
  return [this, chain = std::move(chain)](const plan::PassRecord& r) {
    const std::vector<std::string>& order = pipeline_order();
    auto at = std::find(order.begin(), order.end(), r.name);
    const auto last = std::find(order.begin(), order.end(), m_until);
    auto skipped = [this](const std::string& step) {
      return !m_transforms && (step == "horizontal" || step == "vertical" || step == "re-analyze");
    };
    std::string next;
    if (at != order.end() && at != last) {
      while (++at != order.end() && skipped(*at)) {
      }
      if (at != order.end()) next = *at;
    }
    // What the chained instrument prints (a step's snapshot) starts on a cleared line.
    std::cerr << "\r\033[K" << std::flush;
    if (chain) chain(r);
    std::cerr << fmt::format("{} {:.0f} ms{}", r.name, r.ms,
                             next.empty() ? std::string() : " · " + next + "…")
              << std::flush;
  };
}

}  // namespace souffle::cli
