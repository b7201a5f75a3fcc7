#include "core/support/boundary.h"

#include <cstdio>

namespace souffle {

const char* boundary_kind_name(BoundaryKind k) {
  switch (k) {
    case BoundaryKind::None:
      return "none";
    case BoundaryKind::Block:
      return "block";
    case BoundaryKind::Grid:
      return "grid";
    case BoundaryKind::Launch:
      return "launch";
    case BoundaryKind::Flags:
      return "flags";
  }
  return "?";
}

const char* sync_mode_name(SyncMode m) {
  switch (m) {
    case SyncMode::Grid:
      return "grid";
    case SyncMode::Flags:
      return "flags";
    case SyncMode::Auto:
      return "auto";
  }
  return "?";
}

bool parse_sync_mode(const std::string& s, SyncMode& out) {
  for (SyncMode m : {SyncMode::Grid, SyncMode::Flags, SyncMode::Auto})
    if (s == sync_mode_name(m)) {
      out = m;
      return true;
    }
  return false;
}

const char* boundary_reason_name(BoundaryReason r) {
  switch (r) {
    case BoundaryReason::Independent:
      return "independent";
    case BoundaryReason::ThreadOwned:
      return "thread-owned";
    case BoundaryReason::BlockOwned:
      return "block-owned";
    case BoundaryReason::SharedArena:
      return "shared-arena";
    case BoundaryReason::CrossBlock:
      return "cross-block";
    case BoundaryReason::Unproven:
      return "unproven";
    case BoundaryReason::Rewrite:
      return "rewrite";
    case BoundaryReason::NoProofs:
      return "no-proofs";
    case BoundaryReason::SplitRows:
      return "split-rows";
  }
  return "?";
}

std::string describe(const StageBoundary& b) {
  std::string s = std::string(boundary_kind_name(b.kind)) + ": ";
  const std::string stage = b.producer >= 0 ? " of stage " + std::to_string(b.producer) : "";
  switch (b.reason) {
    case BoundaryReason::Independent:
      s += "reads nothing the stages since the last grid barrier wrote";
      break;
    case BoundaryReason::ThreadOwned:
      s += "each thread reads only what it wrote of " + b.tensor;
      break;
    case BoundaryReason::BlockOwned:
      s += "each block reads only what it wrote of " + b.tensor;
      break;
    case BoundaryReason::SharedArena:
      // No tensor: a stage packed beside the ones before it, on other blocks of its wave.
      s += b.tensor.empty() ? "runs beside the stages before it on other blocks"
                            : "each thread reads only what it wrote of " + b.tensor;
      s += "; the barrier lets the stages share the shared arena";
      break;
    case BoundaryReason::CrossBlock: {
      s += b.tensor + stage + " read across blocks";
      std::string parts;
      if (b.consumer_block >= 0 && b.producer_block >= 0)
        parts = "block " + std::to_string(b.consumer_block) + " reads what block " +
                std::to_string(b.producer_block) + " wrote";
      if (b.awaited_tiles > 0)
        parts += (parts.empty() ? "" : "; ") +
                 std::string(b.kind == BoundaryKind::Flags ? "per-tile flags wait for "
                                                           : "per-tile flags would wait for ") +
                 std::to_string(b.awaited_tiles) + (b.awaited_tiles == 1 ? " tile" : " tiles") +
                 (b.grid > 0 ? " of " + std::to_string(b.grid) : "");
      if (b.grid_price_us + b.flags_price_us > 0) {
        char prices[96];
        std::snprintf(prices, sizeof prices,
                      "estimated %.2f us for flags vs %.2f us for a grid barrier", b.flags_price_us,
                      b.grid_price_us);
        parts += (parts.empty() ? "" : "; ") + std::string(prices);
      }
      if (!parts.empty()) s += " (" + parts + ")";
      break;
    }
    case BoundaryReason::Unproven:
      s += b.tensor + stage + ": no weaker order proven" +
           (b.detail.empty() ? "" : " (" + b.detail + ")");
      break;
    case BoundaryReason::Rewrite:
      s += "rewrites " + b.tensor + stage;
      break;
    case BoundaryReason::NoProofs:
      s += "reads " + b.tensor + stage + " (ownership proofs off)";
      break;
    case BoundaryReason::SplitRows:
      s += "the rows of " + b.tensor + " are split over blocks; their partials are joined";
      break;
  }
  if (b.prefetched) s += "; the first weight tile is loaded before it";
  if (b.forced) s += "; ordered so by a decision";
  return s;
}

}  // namespace souffle
