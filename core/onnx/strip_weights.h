/// \file The large raw_data of a model's initializers located in place, so that the parser copies
/// only the rest of the file and the weights are read from the file when first used.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace souffle::onnx_import {

struct StrippedModel {
  /// The serialized ModelProto without the raw_data of those top-level initializers that hold
  /// at least `min_bytes` of it (every other byte of the file kept, in order).
  std::string bytes;
  /// Per top-level initializer, in file order: where its removed raw_data lies in the input, or
  /// an empty view where nothing was removed.
  std::vector<std::string_view> raw;
  size_t removed = 0;  ///< bytes of raw_data removed, in all
};

/// Walks the protobuf wire format of ModelProto -> graph -> initializer -> raw_data only. Nothing
/// when the bytes are not plainly that (malformed, a group, the graph or one tensor's raw_data
/// given twice) or nothing reaches `min_bytes`: the caller parses the file as it is then, which
/// says what is wrong with it.
std::optional<StrippedModel> strip_initializer_data(std::string_view model, size_t min_bytes);

/// Where a removed raw_data lies in a file.
struct RawRange {
  uint64_t offset = 0;
  uint64_t size = 0;
  bool removed = false;  ///< false: nothing was removed from that initializer
};

/// The same walk over the first `size` bytes of an open file, read with pread (the file is
/// neither mapped nor read whole: the removed raw_data are skipped). `bytes` is what
/// strip_initializer_data gives for the file's bytes; `raw` says where each removed raw_data
/// lies. Nothing also when a read comes short (the file was cut short during the walk).
struct StrippedFile {
  std::string bytes;
  std::vector<RawRange> raw;
  size_t removed = 0;
};
std::optional<StrippedFile> strip_initializer_data_from_file(int fd, uint64_t size,
                                                             size_t min_bytes);

}  // namespace souffle::onnx_import
