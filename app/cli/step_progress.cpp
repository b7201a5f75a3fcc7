#include "app/cli/step_progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>

#include "core/session/pipeline.h"

namespace souffle::cli {

StepProgress::StepProgress(bool quiet, std::string until)
    : m_on(!quiet && isatty(2) != 0), m_until(std::move(until)) {}

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
    std::string next;
    if (at != order.end() && at != last && ++at != order.end()) next = *at;
    std::cerr << "\r\033[K"
              << fmt::format("{} {:.0f} ms{}", r.name, r.ms,
                             next.empty() ? std::string() : " · " + next + "…")
              << std::flush;
    if (chain) chain(r);
  };
}

}  // namespace souffle::cli
