/// \file User decisions on a fusion plan, anchored by TE or ONNX-node names, saved as JSON.
#pragma once

#include <string>
#include <vector>

namespace souffle::plan {

/// One user edit. Names are TE names (of the input or the transformed program) or ONNX node
/// names, never partition numbers, so an edit survives re-planning.
struct Edit {
  enum class Kind : uint8_t { Merge, Split, Pin, Force, Forbid, Sync };
  Kind kind = Kind::Merge;
  std::string a;  ///< merge: one TE; split: the TE to start a new kernel; pin: the TE;
                  ///< force/forbid: the transform site key; sync: the TE whose stage is ordered
  std::string b;  ///< merge: the other TE; sync: "grid" or "flags"
  bool operator==(const Edit&) const = default;
};
/// "merge", "split", "pin", "force", "forbid", "sync"
const char* edit_kind_name(Edit::Kind k);
std::string describe(const Edit& e);  ///< "merge A B", "split before X", "order X by flags", ...

struct RefusedEdit {
  Edit edit;
  std::string reason;
  /// The edit names a TE, ONNX node or transformation site the model does not have (a decisions
  /// file for another model or an older export), rather than one the plan cannot take.
  bool unknown_name = false;
};

/// Edits in the order they are applied.
struct Decisions {
  std::vector<Edit> edits;
  bool operator==(const Decisions&) const = default;
};

inline constexpr int kDecisionsVersion = 1;

/// {"version": 1, "edits": [{"kind": "merge", "a": "...", "b": "..."}, {"kind": "split",
/// "at": "..."}, {"kind": "pin", "te": "..."}, {"kind": "force", "site": "..."}]}.
std::string to_json(const Decisions& d);
/// Parses the JSON above; UserError naming `file` and the offending entry (unknown version,
/// kind or missing field).
Decisions parse_decisions(const std::string& json_text, const std::string& file = "<decisions>");
Decisions load_decisions(const std::string& path);
void save_decisions(const Decisions& d, const std::string& path);

}  // namespace souffle::plan
