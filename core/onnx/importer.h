/// \file ONNX ModelProto -> Graph (parsing, initializers, external data, symbolic dimensions).
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/graph/graph.h"

namespace souffle::onnx_import {

struct ImportOptions {
  /// Values for symbolic dimensions ("batch" -> 1); unbound ones default to 1 with a warning.
  std::map<std::string, int64_t> dims;
  /// Shapes of model inputs (`--shape NAME=D0,D1,...`): they size the dims declared without one
  /// (unnamed, -1, or symbolic and not in `dims`); the dims declared with a size must agree.
  std::map<std::string, Shape> shapes;
  /// Model inputs fixed as constants (`--bind NAME=VALUE`): each stops being an input and folds
  /// like an initializer, so what it decides (an If's branch, a Reshape's target) is settled at
  /// compile time. A value is converted to the input's declared element type; one of as many
  /// elements as the declared shape takes that shape; dims declared without a size take the
  /// value's. A sequence or optional input takes a value of its kind.
  std::map<std::string, graph::DataValue> bind;
  /// Largest tensor a model may declare, in elements; larger is refused as absurd.
  int64_t max_elements = int64_t{1} << 34;
  /// import_model only: the weights (initializers of 4 KiB or more held in the file itself) are
  /// not copied at import; each tensor reads its bytes from the mapped file when first used, so a
  /// plan or a compile, which never reads them, skips the copy (about 0.2 s for BERT-base's
  /// 340 MB). The file stays mapped while such a tensor is unread: for short-lived processes, as
  /// a file cut short under the process would fault at the first read.
  bool defer_weights = false;
  /// import_model only: the file is read once into memory the import owns instead of being
  /// mapped. With defer_weights the deferred weights read from that copy, so a long-lived
  /// process (the explorer) is not faulted by a model file rewritten or cut short under it;
  /// the copy is freed once every deferred tensor has read its bytes or is gone. Without
  /// defer_weights it is freed when the import ends.
  bool read_into_memory = false;
  /// import_model with defer_weights only (it wins over read_into_memory): the file is read with
  /// pread, skipping the deferred weights, and stays open; each weight is read from it when first
  /// used (the import reads about 1 MB of BERT-base's 340 MB). The file's size and change times
  /// are checked around each such read: a model file rewritten in place, cut short or grown
  /// after the import makes the read throw UserError naming the file (never a fault), while one
  /// replaced by a rename is still read as it was through the open descriptor. A file the walk
  /// does not plainly understand, or one changed during the import, is imported as with
  /// read_into_memory.
  bool read_weights_on_demand = false;
};

struct ImportResult {
  graph::Graph graph;                 ///< nodes in topological order; only inputs/constants typed
  std::vector<std::string> warnings;  ///< e.g. unbound symbolic dimensions
};

/// Parses a model file. Throws UserError naming the file (and node) for a truncated or corrupt
/// file, cycles, dangling names, external data outside the model's folder, absurd sizes,
/// unsupported element types.
ImportResult import_model(const std::string& path, const ImportOptions& options = {});
/// Same, from bytes in memory; `file` names the source in messages and roots external data.
ImportResult import_model_bytes(std::string_view bytes, const std::string& file,
                                const ImportOptions& options = {});

/// Parses one `--bind` argument, "NAME=VALUE": VALUE is numbers separated by commas (one is a
/// scalar, several a vector; `true`/`false` are 1/0), or a file holding a serialized TensorProto,
/// SequenceProto or OptionalProto (the backend-test layout's .pb). UserError when malformed.
std::pair<std::string, graph::DataValue> parse_binding(const std::string& text);

/// The options the command line's `--dim NAME=VALUE`, `--bind NAME=VALUE` and `--shape
/// NAME=D0,D1,...` arguments give (each list as typed); UserError naming a malformed one.
ImportOptions import_options(const std::vector<std::string>& dims,
                             const std::vector<std::string>& binds,
                             const std::vector<std::string>& shapes);

/// Parses one `--shape` argument, "NAME=D0,D1,..." (non-negative integers; "NAME=" is a scalar).
/// UserError when malformed.
std::pair<std::string, Shape> parse_shape(const std::string& text);

/// Reads one serialized TensorProto (the backend-test layout's input_K.pb / output_K.pb).
ConstTensorPtr read_tensor_pb(const std::string& path);

/// Reads one backend-test value file: a TensorProto, or a SequenceProto/OptionalProto of tensors.
graph::DataValue read_value_pb(const std::string& path);

}  // namespace souffle::onnx_import
