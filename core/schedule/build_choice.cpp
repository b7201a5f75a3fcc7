#include "core/schedule/build_choice.h"

#include <fmt/format.h>

namespace souffle::schedule {

std::string describe(const BuildChoice& c) {
  switch (c.kind) {
    case ChoiceKind::SyncForm:
      return fmt::format(
          "sync auto: {} (estimated {:.2f} us with per-tile flags where each prices below its "
          "grid barrier, {:.2f} us with grid barriers only)",
          c.kept ? "per-tile flags kept" : "grid barriers kept", c.candidate_us(), c.other_us());
    case ChoiceKind::WeightPanels:
      return fmt::format("weight panels {} (estimated {:.2f} us with them, {:.2f} us without)",
                         c.kept ? "kept" : "not kept", c.candidate_us(), c.other_us());
    case ChoiceKind::Waves:
      return fmt::format("waves: {}; {} (estimated {:.2f} us in waves, {:.2f} us in program order)",
                         c.reason, c.kept ? "kept" : "program order kept", c.candidate_us(),
                         c.other_us());
  }
  return choice_kind_name(c.kind);
}

}  // namespace souffle::schedule
