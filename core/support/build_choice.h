/// \file Build choices as typed values: where the kernel builder builds a kernel two ways and
/// keeps the one the cost model prices cheaper (per-tile flags or grid barriers only, weight
/// panels or streaming the weights, stages in waves or in program order), it records which it
/// kept and both prices. The kernels carry them on their first stage (loop::StageInfo) and the
/// plan on its built stages (plan::BuiltStage); the sentence for people is made from them
/// (schedule::describe), never read back.
#pragma once

#include <cstdint>
#include <string>

namespace souffle {

/// Which choice: the candidate form against the other.
enum class ChoiceKind : uint8_t {
  SyncForm,      ///< per-tile flags where each prices below its grid barrier, or grid barriers only
  WeightPanels,  ///< weights kept in shared memory for the whole kernel, or streamed per stage
  Waves,         ///< independent stages side by side in waves, or in program order
};

/// "sync-form", "weight-panels", "waves".
inline const char* choice_kind_name(ChoiceKind k) {
  switch (k) {
    case ChoiceKind::SyncForm:
      return "sync-form";
    case ChoiceKind::WeightPanels:
      return "weight-panels";
    case ChoiceKind::Waves:
      return "waves";
  }
  return "?";
}

/// One priced choice of the kernel builder (schedule::keep_cheaper).
struct BuildChoice {
  ChoiceKind kind = ChoiceKind::SyncForm;
  /// The candidate form (flags, panels, waves) was kept: it priced below the other; false: the
  /// other form (grid barriers only, streaming, program order) was kept.
  bool kept = false;
  /// The cost model's estimates (µs) of the kernel kept and of the one not kept.
  double price_kept_us = 0, price_other_us = 0;
  /// What the candidate form is, in words, where there is more to say than its kind (the waves'
  /// layout: levels, waves, widest wave); empty otherwise.
  std::string reason;
  /// The estimates of the candidate form and of the other, whichever was kept.
  double candidate_us() const { return kept ? price_kept_us : price_other_us; }
  double other_us() const { return kept ? price_other_us : price_kept_us; }
};

}  // namespace souffle
