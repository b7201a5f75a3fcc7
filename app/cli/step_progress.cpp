#include "app/cli/step_progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <iostream>

#include "core/session/pipeline.h"

namespace souffle::cli {

StepProgress::StepProgress(bool quiet, plan::Step until, bool transforms)
    : m_on(!quiet && isatty(2) != 0), m_until(until), m_transforms(transforms) {}

StepProgress::~StepProgress() {
  if (m_on) std::cerr << "\r\033[K" << std::flush;
}

void StepProgress::start() const {
  if (m_on)
    std::cerr << "\r\033[K" << plan::step_name(plan::all_steps().front()) << "…" << std::flush;
}

void StepProgress::say(const std::string& text) const {
  if (m_on) std::cerr << "\r\033[K" << text << std::flush;
}

plan::PassInstrument StepProgress::instrument(plan::PassInstrument chain) {
  if (!m_on) return chain;
  plan::PassInstrument out;
  out.before = std::move(chain.before);
  out.after = [this, after = std::move(chain.after)](const plan::PassRecord& r) {
    const std::vector<plan::Step>& order = plan::all_steps();
    auto at = std::find(order.begin(), order.end(), r.step);
    auto skipped = [this](plan::Step step) {
      return !m_transforms && (step == plan::Step::Horizontal || step == plan::Step::Vertical ||
                               step == plan::Step::Reanalyze);
    };
    std::string next;
    if (at != order.end() && *at != m_until) {
      while (++at != order.end() && skipped(*at)) {
      }
      if (at != order.end()) next = plan::step_name(*at);
    }
    // What the chained instrument prints (a step's snapshot) starts on a cleared line.
    std::cerr << "\r\033[K" << std::flush;
    if (after) after(r);
    std::cerr << fmt::format("{} {:.0f} ms{}", r.name(), r.ms,
                             next.empty() ? std::string() : " · " + next + "…")
              << std::flush;
  };
  return out;
}

}  // namespace souffle::cli
