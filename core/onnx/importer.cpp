#include "core/onnx/importer.h"

#include <onnx/onnx-data_pb.h>
#include <onnx/onnx_pb.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "core/onnx/strip_weights.h"
#include "core/onnx/weight_file.h"
#include "core/support/error.h"

namespace souffle::onnx_import {
namespace {

namespace fs = std::filesystem;
using graph::Attribute;
using graph::Graph;
using graph::Node;
using graph::TensorType;
using graph::Value;

struct Context {
  std::string file;  ///< the model file, for messages
  fs::path dir;      ///< the folder external data must stay inside
  const ImportOptions& options;
  std::vector<std::string>& warnings;
  std::set<std::string> warned;  ///< one warning per symbolic dimension name
  /// Top-level initializers whose raw_data the parser never saw (ImportOptions::defer_weights):
  /// where it lies in the mapped file, which `keep` holds.
  std::unordered_map<const onnx::TensorProto*, std::string_view> deferred;
  std::shared_ptr<const void> keep;
  /// The same, read on demand (ImportOptions::read_weights_on_demand): where each lies in `file`.
  std::unordered_map<const onnx::TensorProto*, RawRange> on_demand;
  std::shared_ptr<const WeightFile> weight_file;

  void warn_once(const std::string& key, const std::string& text) {
    if (warned.insert(key).second) warnings.push_back(text);
  }
};

const char* onnx_type_name(int32_t code) {
  switch (code) {
    case 0:
      return "undefined";
    case 8:
      return "string";
    case 14:
      return "complex64";
    case 15:
      return "complex128";
    default:
      return "unknown";
  }
}

DType element_type(int32_t code, const std::string& what) {
  auto t = dtype_from_onnx(code);
  if (!t)
    throw UserError("", "",
                    what + ": unsupported element type " + onnx_type_name(code) + " (" +
                        std::to_string(code) + ")");
  return *t;
}

/// Element count of `dims`, refusing negative dimensions and counts above the option's limit
/// before anything is allocated.
int64_t checked_numel(const Shape& dims, const Context& ctx, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : dims)
    if (d < 0) throw UserError("", "", what + ": negative dimension in " + shape_str(dims));
  for (int64_t d : dims) {
    if (d == 0) return 0;
  }
  for (int64_t d : dims) {
    if (n > ctx.options.max_elements / d)
      throw UserError("", "",
                      what + ": shape " + shape_str(dims) + " has more than " +
                          std::to_string(ctx.options.max_elements) + " elements");
    n *= d;
  }
  if (n > ctx.options.max_elements)
    throw UserError("", "",
                    what + ": shape " + shape_str(dims) + " has more than " +
                        std::to_string(ctx.options.max_elements) + " elements");
  return n;
}

// ---------------------------------------------------------------- external data

/// Resolves an external-data location inside the model's folder; anything that could reach
/// outside it (absolute paths, "..", symlinks pointing out) is refused.
fs::path confined_path(const std::string& location, const Context& ctx, const std::string& what) {
  if (location.empty()) throw UserError("", "", what + ": external data has no location");
  if (location.find('\0') != std::string::npos)
    throw UserError("", "", what + ": external data location contains a NUL byte");
  fs::path loc(location);
  if (loc.is_absolute() || loc.has_root_name() || loc.has_root_directory())
    throw UserError("", "",
                    what + ": external data location '" + location +
                        "' is absolute; it must be relative to the model's folder");
  for (const auto& part : loc)
    if (part == "..")
      throw UserError(
          "", "", what + ": external data location '" + location + "' leaves the model's folder");
  std::error_code ec;
  fs::path root = fs::weakly_canonical(ctx.dir.empty() ? fs::path(".") : ctx.dir, ec);
  if (ec) throw UserError("", "", what + ": cannot resolve the model's folder: " + ec.message());
  fs::path full = fs::weakly_canonical(root / loc, ec);
  if (ec)
    throw UserError("", "",
                    what + ": cannot resolve external data '" + location + "': " + ec.message());
  // Compare path components so "/a/bc" is not taken to lie inside "/a/b".
  auto r = root.begin(), f = full.begin();
  for (; r != root.end(); ++r, ++f) {
    if (r->empty()) continue;  // a trailing separator yields an empty last element
    if (f == full.end() || *r != *f)
      throw UserError("", "",
                      what + ": external data '" + location +
                          "' resolves outside the model's folder (symbolic link?)");
  }
  return full;
}

std::string read_external(const onnx::TensorProto& tp, int64_t expected_bytes, const Context& ctx,
                          const std::string& what) {
  std::string location;
  int64_t offset = 0, length = -1;
  auto parse_int = [&](const std::string& key, const std::string& text) {
    try {
      size_t used = 0;
      long long v = std::stoll(text, &used);
      if (used != text.size() || v < 0) throw std::invalid_argument("bad");
      return static_cast<int64_t>(v);
    } catch (const std::invalid_argument&) {
      throw UserError("", "", what + ": external data " + key + " '" + text + "' is not a count");
    } catch (const std::out_of_range&) {
      throw UserError("", "", what + ": external data " + key + " '" + text + "' is not a count");
    }
  };
  for (const auto& kv : tp.external_data()) {
    if (kv.key() == "location")
      location = kv.value();
    else if (kv.key() == "offset")
      offset = parse_int("offset", kv.value());
    else if (kv.key() == "length")
      length = parse_int("length", kv.value());
  }
  fs::path path = confined_path(location, ctx, what);
  std::error_code ec;
  if (!fs::is_regular_file(path, ec))
    throw UserError("", "", what + ": external data file '" + location + "' not found");
  auto size = static_cast<int64_t>(fs::file_size(path, ec));
  if (ec) throw UserError("", "", what + ": cannot read external data '" + location + "'");
  if (length < 0) length = size - offset;
  if (offset > size || length > size - offset)
    throw UserError("", "",
                    what + ": external data '" + location + "' is shorter than offset " +
                        std::to_string(offset) + " + length " + std::to_string(length));
  if (length != expected_bytes)
    throw UserError("", "",
                    what + ": external data holds " + std::to_string(length) +
                        " bytes, the shape needs " + std::to_string(expected_bytes));
  std::ifstream in(path, std::ios::binary);
  std::string bytes(static_cast<size_t>(length), '\0');
  in.seekg(offset);
  in.read(bytes.data(), length);
  if (!in) throw UserError("", "", what + ": reading external data '" + location + "' failed");
  return bytes;
}

// ---------------------------------------------------------------- tensors

template <typename Src, typename Fn>
void fill_from(TensorData& t, const Src& src, Fn put) {
  for (int64_t i = 0; i < t.numel(); ++i) put(t, i, src.Get(static_cast<int>(i)));
}

std::shared_ptr<TensorData> tensor_from_proto(const onnx::TensorProto& tp, const Context& ctx,
                                              const std::string& what_in) {
  const std::string what = what_in.empty() ? "tensor '" + tp.name() + "'" : what_in;
  if (tp.has_segment()) throw UserError("", "", what + ": segmented tensors are not supported");
  DType dtype = element_type(tp.data_type(), what);
  Shape dims(tp.dims().begin(), tp.dims().end());
  const int64_t numel = checked_numel(dims, ctx, what);
  const int64_t esize = dtype_size(dtype);
  if (numel > INT64_MAX / esize) throw UserError("", "", what + ": tensor too large");
  const int64_t nbytes = numel * esize;

  auto mismatch = [&](int64_t have, const char* unit) {
    return UserError("", "",
                     what + ": data holds " + std::to_string(have) + " " + unit + ", shape " +
                         shape_str(dims) + " needs " +
                         std::to_string(std::string_view(unit) == "bytes" ? nbytes : numel));
  };

  if (tp.data_location() == onnx::TensorProto_DataLocation_EXTERNAL) {
    std::string bytes = read_external(tp, nbytes, ctx, what);
    auto t = std::make_shared<TensorData>(dtype, dims);
    if (nbytes) std::memcpy(t->raw(), bytes.data(), static_cast<size_t>(nbytes));
    return t;
  }
  if (auto it = ctx.deferred.find(&tp); it != ctx.deferred.end()) {
    if (static_cast<int64_t>(it->second.size()) != nbytes)
      throw mismatch(static_cast<int64_t>(it->second.size()), "bytes");
    return std::make_shared<TensorData>(dtype, dims, ctx.keep, it->second);
  }
  if (auto it = ctx.on_demand.find(&tp); it != ctx.on_demand.end()) {
    if (static_cast<int64_t>(it->second.size) != nbytes)
      throw mismatch(static_cast<int64_t>(it->second.size), "bytes");
    return std::make_shared<TensorData>(dtype, dims, ctx.weight_file, it->second.offset);
  }
  if (tp.has_raw_data()) {
    const std::string& raw = tp.raw_data();
    if (static_cast<int64_t>(raw.size()) != nbytes)
      throw mismatch(static_cast<int64_t>(raw.size()), "bytes");
    // The message is ours (parsed here, never shown again): take its bytes instead of copying
    // hundreds of megabytes of weights.
    std::string taken = std::move(*const_cast<onnx::TensorProto&>(tp).mutable_raw_data());
    return std::make_shared<TensorData>(dtype, dims, std::move(taken));
  }

  // Typed fields: which repeated field carries which element type is fixed by onnx.proto.
  int64_t have = 0;
  switch (dtype) {
    case DType::Float32:
      have = tp.float_data_size();
      break;
    case DType::Float64:
      have = tp.double_data_size();
      break;
    case DType::Int64:
      have = tp.int64_data_size();
      break;
    case DType::UInt32:
    case DType::UInt64:
      have = tp.uint64_data_size();
      break;
    default:
      have = tp.int32_data_size();
      break;
  }
  if (have != numel) throw mismatch(have, "values");
  auto t = std::make_shared<TensorData>(dtype, dims);
  switch (dtype) {
    case DType::Float32:
      std::copy(tp.float_data().begin(), tp.float_data().end(), t->as<float>());
      break;
    case DType::Float64:
      std::copy(tp.double_data().begin(), tp.double_data().end(), t->as<double>());
      break;
    case DType::Int64:
      std::copy(tp.int64_data().begin(), tp.int64_data().end(), t->as<int64_t>());
      break;
    case DType::UInt32:
      fill_from(*t, tp.uint64_data(), [](TensorData& d, int64_t i, uint64_t v) {
        d.as<uint32_t>()[i] = static_cast<uint32_t>(v);
      });
      break;
    case DType::UInt64:
      std::copy(tp.uint64_data().begin(), tp.uint64_data().end(), t->as<uint64_t>());
      break;
    case DType::Float16:
    case DType::BFloat16:
      // The 16 bits of the value sit in the low half of each int32.
      fill_from(*t, tp.int32_data(), [](TensorData& d, int64_t i, int32_t v) {
        d.as<uint16_t>()[i] = static_cast<uint16_t>(v & 0xffff);
      });
      break;
    default:
      fill_from(*t, tp.int32_data(), [](TensorData& d, int64_t i, int32_t v) { d.set_i64(i, v); });
      break;
  }
  return t;
}

/// A sparse tensor (Constant's sparse_value) made dense: values scattered at linear or
/// coordinate indices.
std::shared_ptr<TensorData> dense_from_sparse(const onnx::SparseTensorProto& sp, const Context& ctx,
                                              const std::string& what) {
  Shape dims(sp.dims().begin(), sp.dims().end());
  auto values = tensor_from_proto(sp.values(), ctx, what + " values");
  auto indices = tensor_from_proto(sp.indices(), ctx, what + " indices");
  const int64_t numel = checked_numel(dims, ctx, what);
  // A few bytes of sparse data can describe a vast dense tensor; real sparse constants are small,
  // so densifying is capped rather than trusting the declared shape.
  constexpr int64_t kMaxDenseBytes = int64_t{1} << 28;
  if (numel > kMaxDenseBytes / dtype_size(values->dtype()))
    throw UserError("", "",
                    what + ": dense form of shape " + shape_str(dims) +
                        " is too large for a sparse constant (over 256 MiB)");
  auto t = std::make_shared<TensorData>(values->dtype(), dims);
  const int64_t nnz = values->numel();
  const auto rank = static_cast<int64_t>(dims.size());
  const bool linear = indices->shape().size() == 1;
  if (values->shape().size() != 1 || (linear && indices->numel() != nnz) ||
      (!linear &&
       (indices->shape().size() != 2 || indices->shape()[0] != nnz || indices->shape()[1] != rank)))
    throw UserError("", "", what + ": sparse indices do not match the values");
  const int64_t esize = dtype_size(values->dtype());
  for (int64_t k = 0; k < nnz; ++k) {
    int64_t flat = 0;
    if (linear) {
      flat = indices->get_i64(k);
    } else {
      for (int64_t r = 0; r < rank; ++r) {
        int64_t c = indices->get_i64(k * rank + r);
        if (c < 0 || c >= dims[static_cast<size_t>(r)])
          throw UserError("", "", what + ": sparse index out of range");
        flat = flat * dims[static_cast<size_t>(r)] + c;
      }
    }
    if (flat < 0 || flat >= numel) throw UserError("", "", what + ": sparse index out of range");
    std::memcpy(t->raw() + flat * esize, values->raw() + k * esize, static_cast<size_t>(esize));
  }
  return t;
}

// ---------------------------------------------------------------- types

/// Declared tensor type of a graph input/output; symbolic dimensions bound from the options.
/// Returns false when the declaration carries no shape (allowed only inside subgraphs).
bool declared_type(const onnx::ValueInfoProto& vi, Context& ctx, bool warn, TensorType& out,
                   std::vector<bool>* free_dims = nullptr) {
  const std::string what = "'" + vi.name() + "'";
  if (!vi.has_type()) return false;
  const auto& type = vi.type();
  if (!type.has_tensor_type()) {
    const char* kind = type.has_sequence_type()        ? "sequence"
                       : type.has_map_type()           ? "map"
                       : type.has_optional_type()      ? "optional"
                       : type.has_sparse_tensor_type() ? "sparse tensor"
                                                       : "non-tensor";
    throw UserError("", "", what + ": " + kind + " values are not supported");
  }
  const auto& tt = type.tensor_type();
  out.dtype = element_type(tt.elem_type(), what);
  if (!tt.has_shape()) return false;
  out.shape.clear();
  const int rank = tt.shape().dim_size();
  if (free_dims) free_dims->assign(static_cast<size_t>(rank), false);
  // A model input's shape given by the options (--shape) sizes its dims declared without one.
  const Shape* given = nullptr;
  if (free_dims) {
    auto g = ctx.options.shapes.find(vi.name());
    if (g != ctx.options.shapes.end()) {
      given = &g->second;
      if (static_cast<int>(given->size()) != rank)
        throw UserError("", "",
                        "input " + what + " has rank " + std::to_string(rank) + ", the shape " +
                            shape_str(*given) + " given for it rank " +
                            std::to_string(given->size()));
    }
  }
  // A dim with a size: it must agree with a given shape.
  auto sized = [&](int k, int64_t v) {
    if (given && (*given)[static_cast<size_t>(k)] != v)
      throw UserError("", "",
                      "input " + what + ": dimension " + std::to_string(k) + " is " +
                          std::to_string(v) + ", the shape given for it " + shape_str(*given) +
                          " says " + std::to_string((*given)[static_cast<size_t>(k)]));
    out.shape.push_back(v);
  };
  // A dim without a size: the given shape's, else 1 with a warning (key, text) saying so.
  auto unsized = [&](int k, const std::string& key, const std::string& text) {
    if (given) {
      if ((*given)[static_cast<size_t>(k)] < 0)
        throw UserError("", "", "input " + what + ": a negative size in " + shape_str(*given));
      out.shape.push_back((*given)[static_cast<size_t>(k)]);
      return;
    }
    out.shape.push_back(1);
    if (free_dims) (*free_dims)[static_cast<size_t>(k)] = true;
    if (warn) ctx.warn_once(key, text);
  };
  for (int k = 0; k < rank; ++k) {
    const auto& d = tt.shape().dim(k);
    const std::string dim = "dimension " + std::to_string(k);
    const std::string how =
        "; using 1 (give the input's shape with --shape " + vi.name() + "=D0,D1,... or bind it)";
    if (d.has_dim_value()) {
      if (d.dim_value() >= 0) {
        sized(k, d.dim_value());
        continue;
      }
      // Paddle2ONNX and others write an unknown size as -1: a model input's is free like an
      // unnamed symbolic dimension. Other negatives, and -1 where it must be exact, are refused.
      if (!free_dims || d.dim_value() != -1)
        throw UserError("", "",
                        what + ": " + dim + " is negative (" + std::to_string(d.dim_value()) + ")");
      unsized(k, "?" + vi.name() + "#" + std::to_string(k),
              "input " + what + ": " + dim + " is declared as -1 (unknown)" + how);
      continue;
    }
    const std::string& param = d.dim_param();
    auto it = param.empty() ? ctx.options.dims.end() : ctx.options.dims.find(param);
    if (it != ctx.options.dims.end()) {
      if (it->second < 0)
        throw UserError("", "", "dimension '" + param + "' is bound to a negative value");
      sized(k, it->second);
      continue;
    }
    if (param.empty())
      unsized(k, "?" + vi.name() + "#" + std::to_string(k),
              "input " + what + ": " + dim + " has no size" + how);
    else
      unsized(k, param,
              "symbolic dimension '" + param + "' (input " + what +
                  ") is not bound; using 1 (bind it with --dim " + param + "=VALUE)");
  }
  checked_numel(out.shape, ctx, what);
  return true;
}

// ---------------------------------------------------------------- graphs

Graph convert_graph(const onnx::GraphProto& gp, Context& ctx, int64_t opset, bool is_subgraph);

Attribute convert_attribute(const onnx::AttributeProto& ap, Context& ctx, int64_t opset,
                            const std::string& what, bool& supported) {
  Attribute a;
  supported = true;
  auto type = ap.type();
  if (type == onnx::AttributeProto_AttributeType_UNDEFINED) {
    // Old models leave the type out; the field that is set says what it is.
    if (ap.has_f())
      type = onnx::AttributeProto_AttributeType_FLOAT;
    else if (ap.has_i())
      type = onnx::AttributeProto_AttributeType_INT;
    else if (ap.has_s())
      type = onnx::AttributeProto_AttributeType_STRING;
    else if (ap.has_t())
      type = onnx::AttributeProto_AttributeType_TENSOR;
    else if (ap.has_g())
      type = onnx::AttributeProto_AttributeType_GRAPH;
    else if (ap.has_sparse_tensor())
      type = onnx::AttributeProto_AttributeType_SPARSE_TENSOR;
    else if (ap.floats_size())
      type = onnx::AttributeProto_AttributeType_FLOATS;
    else if (ap.strings_size())
      type = onnx::AttributeProto_AttributeType_STRINGS;
    else
      type = onnx::AttributeProto_AttributeType_INTS;
  }
  switch (type) {
    case onnx::AttributeProto_AttributeType_FLOAT:
      a.kind = Attribute::Kind::Float;
      a.f = ap.f();
      break;
    case onnx::AttributeProto_AttributeType_INT:
      a.kind = Attribute::Kind::Int;
      a.i = ap.i();
      break;
    case onnx::AttributeProto_AttributeType_STRING:
      a.kind = Attribute::Kind::String;
      a.s = ap.s();
      break;
    case onnx::AttributeProto_AttributeType_FLOATS:
      a.kind = Attribute::Kind::Floats;
      a.floats.assign(ap.floats().begin(), ap.floats().end());
      break;
    case onnx::AttributeProto_AttributeType_INTS:
      a.kind = Attribute::Kind::Ints;
      a.ints.assign(ap.ints().begin(), ap.ints().end());
      break;
    case onnx::AttributeProto_AttributeType_STRINGS:
      a.kind = Attribute::Kind::Strings;
      a.strings.assign(ap.strings().begin(), ap.strings().end());
      break;
    case onnx::AttributeProto_AttributeType_TENSOR:
      a.kind = Attribute::Kind::Tensor;
      a.t = tensor_from_proto(ap.t(), ctx, what);
      break;
    case onnx::AttributeProto_AttributeType_SPARSE_TENSOR:
      a.kind = Attribute::Kind::Tensor;
      a.t = dense_from_sparse(ap.sparse_tensor(), ctx, what);
      break;
    case onnx::AttributeProto_AttributeType_GRAPH:
      a.kind = Attribute::Kind::Graph;
      a.g = std::make_shared<const Graph>(convert_graph(ap.g(), ctx, opset, true));
      break;
    default:
      supported = false;
      break;
  }
  return a;
}

/// Names the nodes of `g` (and its subgraphs) read without defining them.
void free_names(const Graph& g, std::set<std::string>& out) {
  std::unordered_set<std::string> defined(g.inputs.begin(), g.inputs.end());
  for (const auto& [name, v] : g.values)
    if (v.constant) defined.insert(name);
  for (const auto& n : g.nodes)
    for (const auto& o : n.outputs)
      if (!o.empty()) defined.insert(o);
  for (const auto& n : g.nodes) {
    std::set<std::string> uses(n.inputs.begin(), n.inputs.end());
    for (const auto& [key, a] : n.attrs)
      if (a.kind == Attribute::Kind::Graph && a.g) free_names(*a.g, uses);
    for (const auto& u : uses)
      if (!u.empty() && !defined.count(u)) out.insert(u);
  }
  for (const auto& o : g.outputs)
    if (!defined.count(o)) out.insert(o);
}

Graph convert_graph(const onnx::GraphProto& gp, Context& ctx, int64_t opset, bool is_subgraph) {
  Graph g;
  g.name = gp.name();
  g.source_file = ctx.file;
  g.opset = opset;

  for (const auto& init : gp.initializer()) {
    const std::string what = "initializer '" + init.name() + "'";
    if (init.name().empty()) throw UserError("", "", "an initializer has no name");
    if (g.values.count(init.name())) throw UserError("", "", what + " is defined twice");
    Value v;
    v.name = init.name();
    v.constant = tensor_from_proto(init, ctx, what);
    v.type = {v.constant->dtype(), v.constant->shape()};
    v.type_known = true;
    g.values.emplace(v.name, std::move(v));
  }
  for (const auto& sp : gp.sparse_initializer()) {
    const std::string name = sp.values().name();
    const std::string what = "sparse initializer '" + name + "'";
    if (name.empty()) throw UserError("", "", "a sparse initializer has no name");
    if (g.values.count(name)) throw UserError("", "", what + " is defined twice");
    Value v;
    v.name = name;
    v.constant = dense_from_sparse(sp, ctx, what);
    v.type = {v.constant->dtype(), v.constant->shape()};
    v.type_known = true;
    g.values.emplace(v.name, std::move(v));
  }

  for (const auto& in : gp.input()) {
    // Old exporters list initializers among the inputs too; those stay constants.
    if (g.values.count(in.name())) {
      if (g.values.at(in.name()).constant) continue;
      throw UserError("", "", "graph input '" + in.name() + "' is listed twice");
    }
    if (in.name().empty()) throw UserError("", "", "a graph input has no name");
    Value v;
    v.name = in.name();
    if (!is_subgraph && in.has_type() &&
        (in.type().has_sequence_type() || in.type().has_optional_type())) {
      // A sequence or optional input: it folds away once bound to a value (load_model).
      v.declared_composite = in.type().has_sequence_type() ? graph::Composite::Kind::Sequence
                                                           : graph::Composite::Kind::Optional;
      g.inputs.push_back(v.name);
      g.values.emplace(v.name, std::move(v));
      continue;
    }
    bool has_shape = false;
    if (is_subgraph) {
      // Loop/Scan bodies may take sequences or leave types to inference; the body is kept as
      // parsed and typed only if it is ever lowered.
      try {
        has_shape = declared_type(in, ctx, false, v.type);
      } catch (const UserError&) {
        has_shape = false;
      }
    } else {
      has_shape = declared_type(in, ctx, true, v.type, &v.free_dims);
    }
    if (!has_shape) {
      // Loop/Scan bodies often leave input shapes to inference; a model's own inputs may not.
      if (!is_subgraph)
        throw UserError("", "", "graph input '" + in.name() + "' declares no tensor shape");
    }
    v.type_known = has_shape;
    g.inputs.push_back(v.name);
    g.values.emplace(v.name, std::move(v));
  }

  // Node names: unnamed nodes get "<OpType>_<index>", repeated names get a suffix, so every
  // node can be told apart in messages and views.
  std::unordered_set<std::string> node_names;
  auto unique_name = [&](std::string base) {
    if (node_names.insert(base).second) return base;
    for (int k = 1;; ++k) {
      std::string cand = base + "_" + std::to_string(k);
      if (node_names.insert(cand).second) return cand;
    }
  };
  for (const auto& np : gp.node())
    if (!np.name().empty()) node_names.insert(np.name());  // reserve given names first
  std::unordered_set<std::string> seen_given;

  g.nodes.reserve(static_cast<size_t>(gp.node_size()));
  for (int idx = 0; idx < gp.node_size(); ++idx) {
    const auto& np = gp.node(idx);
    Node n;
    if (np.name().empty()) {
      n.name = unique_name(np.op_type() + "_" + std::to_string(idx));
    } else if (!seen_given.insert(np.name()).second) {
      std::string renamed = unique_name(np.name());
      ctx.warnings.push_back("node name '" + np.name() + "' is used more than once; renamed to '" +
                             renamed + "'");
      n.name = renamed;
    } else {
      n.name = np.name();
    }
    if (np.op_type().empty()) throw UserError("", n.name, "node has no op_type");
    n.op_type = np.op_type();
    n.domain = np.domain() == "ai.onnx" ? "" : np.domain();
    n.inputs.assign(np.input().begin(), np.input().end());
    n.outputs.assign(np.output().begin(), np.output().end());
    try {
      for (const auto& ap : np.attribute()) {
        if (ap.name().empty()) throw UserError("an attribute has no name");
        if (n.attrs.count(ap.name()))
          throw UserError("attribute '" + ap.name() + "' is given twice");
        bool supported = true;
        Attribute a = convert_attribute(ap, ctx, opset, "attribute '" + ap.name() + "'", supported);
        if (supported)
          n.attrs.emplace(ap.name(), std::move(a));
        else
          ctx.warnings.push_back("node " + n.name + ": attribute '" + ap.name() +
                                 "' has a kind this tool does not keep; ignored");
      }
    } catch (const UserError& e) {
      throw e.with_node(n.name);
    }
    for (const auto& o : n.outputs) {
      if (o.empty()) continue;
      if (g.values.count(o))
        throw UserError("", n.name, "output '" + o + "' is already defined (names must be unique)");
      Value v;
      v.name = o;
      g.values.emplace(o, std::move(v));
    }
    g.nodes.push_back(std::move(n));
  }

  for (const auto& out : gp.output()) {
    if (out.name().empty()) throw UserError("", "", "a graph output has no name");
    auto it = g.values.find(out.name());
    if (it == g.values.end()) {
      if (!is_subgraph)
        throw UserError("", "", "graph output '" + out.name() + "' is not produced by any node");
      // A subgraph may pass an outer-scope value straight through.
      g.outputs.push_back(out.name());
      continue;
    }
    Value& v = it->second;
    bool composite =
        out.has_type() && (out.type().has_sequence_type() || out.type().has_optional_type());
    if (!v.type_known && !composite) {
      // Keep the declared type as a hint for inference; it is not trusted until inferred. A
      // declared shape is a claim, not an input: one with unknown (-1) or impossible dims is
      // left to inference, with a warning naming the output.
      TensorType t;
      try {
        if (declared_type(out, ctx, false, t)) v.type = t;
      } catch (const UserError& e) {
        if (!is_subgraph)
          ctx.warnings.push_back("output '" + out.name() + "': declared type not used (" +
                                 e.reason() + "); its shape is inferred");
      }
    }
    g.outputs.push_back(out.name());
  }

  if (!is_subgraph) {
    graph::topo_sort(g);
  } else {
    // Names captured from enclosing scopes are stand-ins for the sort only.
    std::set<std::string> outer;
    free_names(g, outer);
    for (const auto& name : outer) {
      Value v;
      v.name = name;
      v.constant = std::make_shared<TensorData>();
      g.values.emplace(name, std::move(v));
    }
    graph::topo_sort(g);
    for (const auto& name : outer) g.values.erase(name);
  }
  return g;
}

int64_t default_opset(const onnx::ModelProto& m, Context& ctx) {
  int64_t opset = 0;
  for (const auto& op : m.opset_import())
    if (op.domain().empty() || op.domain() == "ai.onnx") opset = op.version();
  if (opset <= 0) {
    ctx.warnings.push_back("model declares no default-domain opset; assuming 1");
    opset = 1;
  }
  return opset;
}

/// The backend-test layout stores sequence and optional values as SequenceProto/OptionalProto
/// files, which often parse as a (nonsensical) TensorProto too. They share the layout "name = 1,
/// elem_type = 2 (0..5), value at 3+"; a TensorProto that fits it is taken for one of them.
bool looks_like_sequence_or_optional(const std::string& bytes, const onnx::TensorProto& tp) {
  // SequenceProto/OptionalProto keep a message at field 3, where TensorProto has its segment.
  if (tp.has_segment()) return true;
  onnx::OptionalProto opt;
  if (!opt.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return false;
  if (opt.elem_type() < 0 || opt.elem_type() > 5 || opt.name().empty()) return false;
  // A real tensor's dims read as a "name" of small control bytes; a value name is printable.
  for (char c : opt.name())
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.' && c != '-' &&
        c != ':' && c != '/')
      return false;
  return true;
}

// ---------------------------------------------------------------- bound inputs

ConstTensorPtr convert(const TensorData& d, DType to) {
  auto t = std::make_shared<TensorData>(to, d.shape());
  for (int64_t i = 0; i < d.numel(); ++i)
    if (is_float(to))
      t->set_f64(i, d.get_f64(i));
    else
      t->set_i64(i, d.get_i64(i));
  return t;
}

/// Binds a sequence/optional input: its tensors become constants "<name>[i]" and the input a
/// composite of them. A file cannot tell an optional of one tensor from a sequence of one, so
/// the model's declared kind decides.
void bind_composite(Graph& g, const std::string& name, graph::Composite::Kind declared,
                    const graph::DataValue& value) {
  using Kind = graph::Composite::Kind;
  graph::Composite c;
  c.kind = declared;
  if (value.is_tensor()) {
    if (declared != Kind::Optional)
      throw UserError("input '" + name + "' is a sequence, the value bound to it a tensor");
    c.has_value = true;
  } else if (declared == Kind::Sequence) {
    if (*value.composite != Kind::Sequence)
      throw UserError("input '" + name + "' is a sequence, the value bound to it an " +
                      value.describe());
  } else if (*value.composite == Kind::Optional) {
    c.has_value = value.has_value;
    c.holds_sequence = value.holds_sequence;
  } else {
    if (value.tensors.size() > 1)
      throw UserError("input '" + name + "' is an optional, the value bound to it a " +
                      value.describe());
    c.has_value = value.tensors.size() == 1;
  }
  for (size_t i = 0; i < value.tensors.size(); ++i) {
    std::string elem = name + "[" + std::to_string(i) + "]";
    while (g.has_value(elem)) elem += "'";
    Value ev;
    ev.name = elem;
    ev.constant = value.tensors[i];
    ev.type = {value.tensors[i]->dtype(), value.tensors[i]->shape()};
    ev.type_known = true;
    g.values.emplace(elem, std::move(ev));
    c.elements.push_back(elem);
  }
  g.values.erase(name);
  g.composites[name] = std::move(c);
}

/// Fixes the bound model inputs as constants (ImportOptions::bind).
void bind_inputs(Graph& g, const std::map<std::string, graph::DataValue>& bind) {
  for (const auto& [name, value] : bind) {
    auto it = std::find(g.inputs.begin(), g.inputs.end(), name);
    if (it == g.inputs.end()) {
      std::string names;
      for (const std::string& in : g.inputs) names += (names.empty() ? "'" : ", '") + in + "'";
      throw UserError("cannot bind '" + name + "': no model input has that name (inputs: " +
                      (names.empty() ? "none" : names) + ")");
    }
    Value& v = g.value(name);
    if (v.declared_composite) {
      bind_composite(g, name, *v.declared_composite, value);
      g.inputs.erase(it);
      continue;
    }
    if (!value.is_tensor() || value.tensors.size() != 1)
      throw UserError("input '" + name + "' is a tensor, the value bound to it a " +
                      value.describe());
    ConstTensorPtr data = value.tensors[0];
    // Dims declared without a size (symbolic) take the bound value's size.
    if (v.type.shape.size() == data->shape().size() && v.free_dims.size() == v.type.shape.size())
      for (size_t d = 0; d < v.type.shape.size(); ++d)
        if (v.free_dims[d]) v.type.shape[d] = data->shape()[d];
    // A scalar or a list of numbers (the command line's) fills the declared shape.
    if (v.type.shape != data->shape() && data->shape().size() <= 1 &&
        data->numel() == shape_numel(v.type.shape)) {
      auto shaped = std::make_shared<TensorData>(data->dtype(), v.type.shape);
      for (int64_t i = 0; i < data->numel(); ++i)
        if (is_float(data->dtype()))
          shaped->set_f64(i, data->get_f64(i));
        else
          shaped->set_i64(i, data->get_i64(i));
      data = shaped;
    }
    if (v.type.shape != data->shape())
      throw UserError("input '" + name + "' is " + graph::type_str(v.type) +
                      ", the value bound to it " + shape_str(data->shape()));
    v.constant = data->dtype() == v.type.dtype ? data : convert(*data, v.type.dtype);
    v.free_dims.clear();
    g.inputs.erase(it);
  }
}

}  // namespace

namespace {

/// Initializers smaller than this are parsed as usual even when weights are deferred.
constexpr size_t kDeferMinBytes = 4096;

/// Parses `bytes`; with `keep` (what holds `bytes` alive) and options.defer_weights, without
/// copying the large raw_data of top-level initializers (their tensors read it when first used).
bool parse_model(std::string_view bytes, const std::shared_ptr<const void>& keep,
                 const ImportOptions& options, onnx::ModelProto& model, Context& ctx) {
  if (keep && options.defer_weights) {
    std::optional<StrippedModel> stripped = strip_initializer_data(bytes, kDeferMinBytes);
    if (stripped &&
        model.ParseFromArray(stripped->bytes.data(), static_cast<int>(stripped->bytes.size())) &&
        static_cast<size_t>(model.graph().initializer_size()) == stripped->raw.size()) {
      for (size_t i = 0; i < stripped->raw.size(); ++i)
        if (stripped->raw[i].data() != nullptr)
          ctx.deferred.emplace(&model.graph().initializer(static_cast<int>(i)), stripped->raw[i]);
      ctx.keep = keep;
      return true;
    }
    model.Clear();  // anything unexpected: the whole file, as without deferral
  }
  return model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()));
}

/// What import_impl parses: the bytes of a file (mapped, read or given), or a file already
/// walked without its weights (read on demand from `weight_file`).
struct Parse {
  std::string_view bytes;
  std::shared_ptr<const void> keep;
  const StrippedFile* stripped = nullptr;
  std::shared_ptr<const WeightFile> weight_file;
  /// With `stripped`: set, and nothing imported, when protobuf does not parse it (the caller
  /// parses the whole file then, as the mapped import does, so errors read as before).
  bool* unparsed = nullptr;
};

ImportResult import_impl(const Parse& in, const std::string& file, const ImportOptions& options) {
  ImportResult result;
  Context ctx{file, fs::path(file).parent_path(), options, result.warnings, {}, {}, {}, {}, {}};
  try {
    if (in.bytes.size() > static_cast<size_t>(INT_MAX) ||
        (in.weight_file && in.weight_file->size() > static_cast<uint64_t>(INT_MAX)))
      throw UserError("model file is larger than 2 GiB; keep large weights as external data");
    onnx::ModelProto model;
    bool parsed = false;
    if (in.stripped) {
      const StrippedFile& st = *in.stripped;
      parsed = model.ParseFromArray(st.bytes.data(), static_cast<int>(st.bytes.size())) &&
               static_cast<size_t>(model.graph().initializer_size()) == st.raw.size();
      if (parsed) {
        for (size_t i = 0; i < st.raw.size(); ++i)
          if (st.raw[i].removed)
            ctx.on_demand.emplace(&model.graph().initializer(static_cast<int>(i)), st.raw[i]);
        ctx.weight_file = in.weight_file;
      } else if (in.unparsed) {
        *in.unparsed = true;
        return result;
      }
    } else {
      parsed = parse_model(in.bytes, in.keep, options, model, ctx);
    }
    if (!parsed)
      throw UserError(
          "not a valid ONNX model (protobuf parse failed: the file is truncated or not ONNX, or "
          "its subgraphs nest deeper than the parser's limit of 100 messages)");
    if (!model.has_graph()) throw UserError("not a valid ONNX model (it has no graph)");
    int64_t opset = default_opset(model, ctx);
    result.graph = convert_graph(model.graph(), ctx, opset, false);
    if (result.graph.name.empty()) result.graph.name = "main";
    // value_info is never read (inference types every value), but unknown (-1) or negative dims
    // there are said once, naming a few of the tensors, so nobody takes them for sizes we used.
    std::vector<std::string> unknown;
    for (const auto& vi : model.graph().value_info()) {
      if (!vi.has_type() || !vi.type().has_tensor_type() || !vi.type().tensor_type().has_shape())
        continue;
      for (const auto& d : vi.type().tensor_type().shape().dim())
        if (d.has_dim_value() && d.dim_value() < 0) {
          unknown.push_back(vi.name());
          break;
        }
    }
    if (!unknown.empty()) {
      std::string names;
      for (size_t i = 0; i < unknown.size() && i < 3; ++i)
        names += (i ? ", '" : "'") + unknown[i] + "'";
      if (unknown.size() > 3) names += ", ...";
      result.warnings.push_back("value_info declares negative (unknown) dims for " +
                                std::to_string(unknown.size()) + " tensor" +
                                (unknown.size() == 1 ? "" : "s") + " (" + names +
                                "); their shapes are inferred");
    }
    for (const auto& [name, shape] : options.shapes)
      if (std::find(result.graph.inputs.begin(), result.graph.inputs.end(), name) ==
          result.graph.inputs.end())
        throw UserError("--shape " + name + ": no model input has that name");
    bind_inputs(result.graph, options.bind);
  } catch (const UserError& e) {
    throw e.with_file(file);
  }
  return result;
}

}  // namespace

ImportResult import_model_bytes(std::string_view bytes, const std::string& file,
                                const ImportOptions& options) {
  return import_impl(Parse{bytes, nullptr, nullptr, nullptr, nullptr}, file, options);
}

namespace {
/// Reads a whole file in one call (a streambuf iterator costs seconds on a 300 MB model).
std::string read_file_bytes(const std::string& path, const char* what) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  if (ec) throw UserError(path, "", std::string("cannot read the ") + what);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UserError(path, "", std::string("cannot open the ") + what);
  std::string bytes(static_cast<size_t>(size), '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(size));
  if (static_cast<uintmax_t>(in.gcount()) != size)
    throw UserError(path, "", std::string("reading the ") + what + " failed");
  return bytes;
}
}  // namespace

namespace {
/// ImportOptions::read_into_memory: the file read once into anonymous memory this process owns
/// (pages allocated up front, MAP_POPULATE, which on a 340 MB model takes about two thirds of the
/// time a zero-filled string's page faults do), shared by the deferred tensors.
ImportResult import_owned_copy(const std::string& path, const ImportOptions& options) {
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw UserError(path, "", "cannot open the model file");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw UserError(path, "", "cannot read the model file");
  }
  const size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    return import_model_bytes(std::string_view(), path, options);
  }
  void* buf = ::mmap(nullptr, size, PROT_READ | PROT_WRITE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
  if (buf == MAP_FAILED) {
    ::close(fd);
    return import_model_bytes(read_file_bytes(path, "model file"), path, options);
  }
  std::shared_ptr<const void> owned(
      buf, [size](const void* p) { ::munmap(const_cast<void*>(p), size); });
  size_t got = 0;
  while (got < size) {
    const ssize_t r = ::read(fd, static_cast<char*>(buf) + got, size - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;  // cut short while read: parsed as the shorter file it is now
    got += static_cast<size_t>(r);
  }
  ::close(fd);
  return import_impl(
      Parse{std::string_view(static_cast<const char*>(buf), got), owned, nullptr, nullptr, nullptr},
      path, options);
}

/// ImportOptions::read_weights_on_demand: the file walked with pread, its large raw_data
/// skipped; each deferred tensor reads its bytes through the descriptor kept open. A file the
/// walk does not plainly understand, or one that changed during it, is read whole as
/// read_into_memory does.
ImportResult import_on_demand(const std::string& path, const ImportOptions& options) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw UserError(path, "", "cannot open the model file");
  auto file = std::make_shared<const WeightFile>(fd, path);  // owns fd
  if (file->size() == 0 || file->size() > static_cast<uint64_t>(INT_MAX))
    return import_owned_copy(path, options);
  std::optional<StrippedFile> stripped =
      strip_initializer_data_from_file(file->fd(), file->size(), kDeferMinBytes);
  if (!stripped || !file->unchanged()) return import_owned_copy(path, options);
  bool unparsed = false;
  ImportResult result =
      import_impl(Parse{std::string_view(), nullptr, &*stripped, file, &unparsed}, path, options);
  if (unparsed) return import_owned_copy(path, options);
  return result;
}
}  // namespace

ImportResult import_model(const std::string& path, const ImportOptions& options) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw UserError(path, "", "no such model file");
  if (options.defer_weights && options.read_weights_on_demand)
    return import_on_demand(path, options);
  if (options.read_into_memory) return import_owned_copy(path, options);
  // Map the file rather than read it: protobuf copies what it keeps anyway.
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw UserError(path, "", "cannot open the model file");
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    ::close(fd);
    throw UserError(path, "", "cannot read the model file");
  }
  size_t size = static_cast<size_t>(st.st_size);
  if (size == 0) {
    ::close(fd);
    return import_model_bytes(std::string_view(), path, options);
  }
  void* map = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (map == MAP_FAILED)
    return import_model_bytes(read_file_bytes(path, "model file"), path, options);
  // Unmapped when the import is done, or with defer_weights once no tensor reads from it.
  std::shared_ptr<const void> mapping(
      map, [size](const void* p) { ::munmap(const_cast<void*>(p), size); });
  return import_impl(Parse{std::string_view(static_cast<const char*>(map), size), mapping, nullptr,
                           nullptr, nullptr},
                     path, options);
}

namespace {

/// The tensors of a SequenceProto (of tensors), appended to `out`.
void sequence_tensors(const onnx::SequenceProto& sp, Context& ctx, const std::string& what,
                      std::vector<ConstTensorPtr>& out) {
  if (sp.elem_type() != onnx::SequenceProto_DataType_TENSOR &&
      sp.elem_type() != onnx::SequenceProto_DataType_UNDEFINED)
    throw UserError(what + ": only sequences of tensors are supported");
  for (int k = 0; k < sp.tensor_values_size(); ++k)
    out.push_back(
        tensor_from_proto(sp.tensor_values(k), ctx, what + " element " + std::to_string(k)));
}

}  // namespace

graph::DataValue read_value_pb(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw UserError(path, "", "no such tensor file");
  auto size = fs::file_size(path, ec);
  if (ec || size > static_cast<uintmax_t>(INT_MAX))
    throw UserError(path, "", "tensor file is unreadable or larger than 2 GiB");
  std::string bytes = read_file_bytes(path, "tensor file");
  onnx::TensorProto tp;
  if (!tp.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw UserError(path, "", "not a valid serialized TensorProto (protobuf parse failed)");
  std::vector<std::string> warnings;
  ImportOptions options;
  Context ctx{path, fs::path(path).parent_path(), options, warnings, {}, {}, {}, {}, {}};
  try {
    return graph::DataValue(tensor_from_proto(tp, ctx, "tensor '" + tp.name() + "'"));
  } catch (const UserError& e) {
    // Only a file that is no sensible tensor is examined for the other layouts, so a tensor
    // whose bytes happen to fit them is never refused.
    if (!looks_like_sequence_or_optional(bytes, tp)) throw e.with_file(path);
  }
  // SequenceProto and OptionalProto share their wire layout (elem_type at 2, tensors at 3,
  // sequences at 5), so a file cannot say which it is: an optional of one tensor reads as a
  // sequence of one. A sequence of tensors is returned as such, and an optional of a sequence
  // (elem_type 3) as an optional; load_model reinterprets by the model's declared input type.
  graph::DataValue v;
  try {
    onnx::SequenceProto sp;
    if (!sp.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
      throw UserError("not a valid SequenceProto or OptionalProto");
    const std::string what = "value '" + sp.name() + "'";
    if (sp.elem_type() == onnx::SequenceProto_DataType_SEQUENCE) {
      if (sp.sequence_values_size() > 1)
        throw UserError(what + ": sequences of sequences are not supported");
      v.composite = graph::Composite::Kind::Optional;
      v.holds_sequence = true;
      v.has_value = sp.sequence_values_size() == 1;
      if (v.has_value) sequence_tensors(sp.sequence_values(0), ctx, what, v.tensors);
      return v;
    }
    v.composite = graph::Composite::Kind::Sequence;
    sequence_tensors(sp, ctx, what, v.tensors);
  } catch (const UserError& e) {
    throw e.with_file(path);
  }
  return v;
}

ConstTensorPtr read_tensor_pb(const std::string& path) {
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) throw UserError(path, "", "no such tensor file");
  auto size = fs::file_size(path, ec);
  if (ec || size > static_cast<uintmax_t>(INT_MAX))
    throw UserError(path, "", "tensor file is unreadable or larger than 2 GiB");
  std::string bytes = read_file_bytes(path, "tensor file");
  onnx::TensorProto tp;
  if (!tp.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    throw UserError(path, "", "not a valid serialized TensorProto (protobuf parse failed)");
  std::vector<std::string> warnings;
  ImportOptions options;
  Context ctx{path, fs::path(path).parent_path(), options, warnings, {}, {}, {}, {}, {}};
  try {
    return tensor_from_proto(tp, ctx, "tensor '" + tp.name() + "'");
  } catch (const UserError& e) {
    // Only a file that is no sensible tensor is examined for the other layouts, so a tensor
    // whose bytes happen to fit them is never refused.
    if (looks_like_sequence_or_optional(bytes, tp))
      throw UserError(path, "",
                      "holds a sequence or optional value, not a tensor; such values are not "
                      "supported");
    throw e.with_file(path);
  }
}

std::pair<std::string, graph::DataValue> parse_binding(const std::string& text) {
  size_t eq = text.find('=');
  if (eq == 0 || eq == std::string::npos || eq + 1 == text.size())
    throw UserError("--bind '" + text +
                    "': expected NAME=VALUE (numbers separated by commas, "
                    "or a .pb file)");
  std::string name = text.substr(0, eq), value = text.substr(eq + 1);
  std::vector<std::string> items;
  for (size_t at = 0; at <= value.size();) {
    size_t end = value.find(',', at);
    if (end == std::string::npos) end = value.size();
    items.push_back(value.substr(at, end - at));
    at = end + 1;
  }
  // Integers stay exact as int64; anything else is read as float64.
  bool integral = true;
  std::vector<double> reals;
  std::vector<int64_t> ints;
  for (const std::string& item : items) {
    if (item == "true" || item == "false") {
      ints.push_back(item == "true");
      reals.push_back(item == "true");
      continue;
    }
    const char* b = item.c_str();
    char* e = nullptr;
    errno = 0;
    long long i = std::strtoll(b, &e, 10);
    if (!item.empty() && *e == '\0' && errno == 0) {
      ints.push_back(i);
      reals.push_back(static_cast<double>(i));
      continue;
    }
    double d = std::strtod(b, &e);
    std::error_code ec;
    if ((item.empty() || *e != '\0') && fs::is_regular_file(value, ec))
      return {name, read_value_pb(value)};
    if (item.empty() || *e != '\0')
      throw UserError("--bind " + name + ": '" + item +
                      "' is not a number (VALUE is numbers separated by commas, or a .pb file "
                      "that exists)");
    integral = false;
    reals.push_back(d);
  }
  Shape shape;
  if (items.size() > 1) shape.push_back(static_cast<int64_t>(items.size()));
  auto t = std::make_shared<TensorData>(integral ? DType::Int64 : DType::Float64, shape);
  for (size_t i = 0; i < items.size(); ++i)
    if (integral)
      t->set_i64(static_cast<int64_t>(i), ints[i]);
    else
      t->set_f64(static_cast<int64_t>(i), reals[i]);
  return {name, graph::DataValue(t)};
}

std::pair<std::string, Shape> parse_shape(const std::string& text) {
  size_t eq = text.find('=');
  if (eq == 0 || eq == std::string::npos)
    throw UserError("--shape '" + text + "': expected NAME=D0,D1,... (e.g. x=1,3,48,192)");
  std::string name = text.substr(0, eq), dims = text.substr(eq + 1);
  Shape shape;
  for (size_t at = 0; at < dims.size();) {
    size_t end = dims.find(',', at);
    if (end == std::string::npos) end = dims.size();
    const std::string item = dims.substr(at, end - at);
    char* e = nullptr;
    errno = 0;
    long long v = std::strtoll(item.c_str(), &e, 10);
    if (item.empty() || *e != '\0' || errno != 0 || v < 0)
      throw UserError("--shape " + text + ": '" + item +
                      "' is not a size (a non-negative integer)");
    shape.push_back(v);
    at = end + 1;
    if (end + 1 == dims.size())
      throw UserError("--shape " + text + ": a size is missing after the last comma");
  }
  return {name, shape};
}

ImportOptions import_options(const std::vector<std::string>& dims,
                             const std::vector<std::string>& binds,
                             const std::vector<std::string>& shapes) {
  ImportOptions o;
  for (const std::string& d : dims) {
    size_t eq = d.find('=');
    char* e = nullptr;
    errno = 0;
    long long v = eq == std::string::npos ? -1 : std::strtoll(d.c_str() + eq + 1, &e, 10);
    if (eq == 0 || eq == std::string::npos || eq + 1 == d.size() || *e != '\0' || errno != 0 ||
        v < 0)
      throw UserError("--dim '" + d + "': expected NAME=VALUE, a non-negative integer");
    o.dims[d.substr(0, eq)] = v;
  }
  for (const std::string& b : binds) {
    auto [name, value] = parse_binding(b);
    if (!o.bind.emplace(name, std::move(value)).second)
      throw UserError("--bind " + name + " is given twice");
  }
  for (const std::string& s : shapes) {
    auto [name, shape] = parse_shape(s);
    if (!o.shapes.emplace(name, std::move(shape)).second)
      throw UserError("--shape " + name + " is given twice");
  }
  return o;
}

}  // namespace souffle::onnx_import
