// Weights read from the mapped model file when first used (ImportOptions::defer_weights): the
// same graph and the same bytes as an import that copies them, nothing read before first use,
// and every file the wire walk does not plainly understand parsed as it is.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>
#include <unistd.h>

#include <chrono>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "core/onnx/importer.h"
#include "core/onnx/strip_weights.h"
#include "core/support/error.h"

namespace souffle::onnx_import {
namespace {

namespace fs = std::filesystem;

struct TempFile {
  fs::path path;
  explicit TempFile(const std::string& bytes) {
    path = fs::temp_directory_path() /
           ("souffle_deferred_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".onnx");
    std::ofstream out(path, std::ios::binary);
    out << bytes;
  }
  ~TempFile() {
    std::error_code ec;
    fs::remove(path, ec);
  }
};

void add_raw(onnx::GraphProto* g, const std::string& name, int64_t n, float base) {
  auto* t = g->add_initializer();
  t->set_name(name);
  t->set_data_type(onnx::TensorProto_DataType_FLOAT);
  t->add_dims(n);
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[static_cast<size_t>(i)] = base + static_cast<float>(i);
  t->set_raw_data(std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(float)));
}

/// y = x[4096] + a + d, with initializers a and c of large raw_data (after the small b, at no
/// particular alignment in the file), b of small raw_data, d of large typed float_data.
onnx::ModelProto model() {
  onnx::ModelProto m;
  m.set_ir_version(8);
  m.add_opset_import()->set_version(13);
  m.set_producer_name("test");
  auto* g = m.mutable_graph();
  g->set_name("t");
  add_raw(g, "b", 3, 0.5f);
  add_raw(g, "a", 4096, 1.0f);
  add_raw(g, "c", 2048, -7.0f);
  auto* d = g->add_initializer();
  d->set_name("d");
  d->set_data_type(onnx::TensorProto_DataType_FLOAT);
  d->add_dims(4096);
  for (int i = 0; i < 4096; ++i) d->add_float_data(static_cast<float>(i) * 0.25f);
  auto io = [](auto* list, const std::string& name) {
    auto* vi = list->Add();
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(1);
    tt->mutable_shape()->add_dim()->set_dim_value(4096);
  };
  io(g->mutable_input(), "x");
  io(g->mutable_output(), "y");
  auto node = [&](const std::string& a, const std::string& b, const std::string& out) {
    auto* n = g->add_node();
    n->set_op_type("Add");
    n->add_input(a);
    n->add_input(b);
    n->add_output(out);
  };
  node("x", "a", "s");
  node("s", "d", "y");  // b and c: initializers nothing reads
  return m;
}

ImportOptions deferred() {
  ImportOptions o;
  o.defer_weights = true;
  return o;
}

TEST(DeferredWeights, SameGraphAndBytesAndNothingReadBeforeFirstUse) {
  TempFile f(model().SerializeAsString());
  const graph::Graph eager = import_model(f.path.string()).graph;
  const graph::Graph lazy = import_model(f.path.string(), deferred()).graph;
  for (const char* name : {"a", "b", "c", "d"}) {
    SCOPED_TRACE(name);
    const ConstTensorPtr& e = eager.value(name).constant;
    const ConstTensorPtr& l = lazy.value(name).constant;
    ASSERT_TRUE(e && l);
    EXPECT_TRUE(e->loaded());
    // Large raw_data stays in the file until read; small raw_data and typed fields are parsed.
    const bool large_raw = std::string(name) == "a" || std::string(name) == "c";
    EXPECT_EQ(l->loaded(), !large_raw);
    EXPECT_EQ(l->dtype(), e->dtype());
    EXPECT_EQ(l->shape(), e->shape());
    EXPECT_EQ(l->byte_size(), e->byte_size());
    EXPECT_EQ(l->loaded(), !large_raw);  // none of the above reads the bytes
    EXPECT_EQ(*l, *e);
    EXPECT_TRUE(l->loaded());
    // The bytes sit in the tensor's own buffer, aligned for its type wherever they lay in the file.
    EXPECT_EQ(reinterpret_cast<uintptr_t>(l->raw()) % alignof(float), 0u);
  }
  EXPECT_EQ(lazy.value("a").constant->as<float>()[4095], 4096.0f);
  EXPECT_EQ(lazy.value("c").constant->get_f64(1), -6.0);
}

TEST(DeferredWeights, TheFileMayGoBeforeTheFirstRead) {
  graph::Graph g;
  {
    TempFile f(model().SerializeAsString());
    g = import_model(f.path.string(), deferred()).graph;
  }  // unlinked: the mapping keeps its bytes
  const ConstTensorPtr& a = g.value("a").constant;
  EXPECT_FALSE(a->loaded());
  EXPECT_EQ(a->as<float>()[0], 1.0f);
  EXPECT_EQ(a->as<float>()[100], 101.0f);
}

TEST(DeferredWeights, ConcurrentFirstReadsReadOnce) {
  TempFile f(model().SerializeAsString());
  const graph::Graph g = import_model(f.path.string(), deferred()).graph;
  const ConstTensorPtr a = g.value("a").constant;
  ASSERT_FALSE(a->loaded());
  std::vector<const uint8_t*> seen(4);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < seen.size(); ++i) threads.emplace_back([&, i] { seen[i] = a->raw(); });
  for (std::thread& t : threads) t.join();
  for (const uint8_t* p : seen) EXPECT_EQ(p, seen.front());
  EXPECT_EQ(a->as<float>()[7], 8.0f);
  // A copy owns its bytes.
  TensorData copy = *a;
  EXPECT_TRUE(copy.loaded());
  EXPECT_NE(copy.raw(), a->raw());
  EXPECT_EQ(copy, *a);
}

ImportOptions in_memory() {
  ImportOptions o = deferred();
  o.read_into_memory = true;
  return o;
}

// Deferred from a copy of the file the import owns (the explorer): the same graph and bytes,
// nothing read before first use, and a file rewritten or cut short afterwards changes nothing
// (a mapped file cut short would fault the first read).
TEST(DeferredWeights, FromMemoryTheFileMayChangeUnderTheProcess) {
  TempFile f(model().SerializeAsString());
  const graph::Graph eager = import_model(f.path.string()).graph;
  const graph::Graph lazy = import_model(f.path.string(), in_memory()).graph;
  EXPECT_FALSE(lazy.value("a").constant->loaded());
  EXPECT_FALSE(lazy.value("c").constant->loaded());
  EXPECT_TRUE(lazy.value("b").constant->loaded());
  fs::resize_file(f.path, 0);  // cut short under the process
  {
    std::ofstream out(f.path, std::ios::binary | std::ios::trunc);
    out << std::string(64, 'x');  // and rewritten
  }
  for (const char* name : {"a", "b", "c", "d"}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(*lazy.value(name).constant, *eager.value(name).constant);
    EXPECT_TRUE(lazy.value(name).constant->loaded());
  }
  EXPECT_EQ(lazy.value("a").constant->as<float>()[4095], 4096.0f);
  // Without deferral the copy is only the import's: the same graph.
  ImportOptions whole;
  whole.read_into_memory = true;
  fs::resize_file(f.path, 0);
  std::ofstream(f.path, std::ios::binary) << model().SerializeAsString();
  const graph::Graph read = import_model(f.path.string(), whole).graph;
  EXPECT_TRUE(read.value("a").constant->loaded());
  EXPECT_EQ(*read.value("a").constant, *eager.value("a").constant);
}

TEST(DeferredWeights, ASizeMismatchSaysWhatTheCopyingImportSays) {
  onnx::ModelProto m = model();
  m.mutable_graph()->mutable_initializer(1)->add_dims(2);  // a: [4096, 2], 4096 floats held
  TempFile f(m.SerializeAsString());
  std::string eager, lazy;
  try {
    import_model(f.path.string());
  } catch (const UserError& e) {
    eager = e.what();
  }
  try {
    import_model(f.path.string(), deferred());
  } catch (const UserError& e) {
    lazy = e.what();
  }
  EXPECT_NE(eager.find("data holds 16384 bytes"), std::string::npos) << eager;
  EXPECT_EQ(lazy, eager);
}

TEST(DeferredWeights, StrippedModelIsTheModelWithoutTheLargeRawData) {
  const onnx::ModelProto m = model();
  const std::string bytes = m.SerializeAsString();
  const std::optional<StrippedModel> s = strip_initializer_data(bytes, 4096);
  ASSERT_TRUE(s);
  ASSERT_EQ(s->raw.size(), 4u);
  EXPECT_EQ(s->raw[0].data(), nullptr);  // b: 12 bytes, kept
  EXPECT_EQ(s->raw[1].size(), 4096u * 4);
  EXPECT_EQ(s->raw[2].size(), 2048u * 4);
  EXPECT_EQ(s->raw[3].data(), nullptr);  // d: typed data
  EXPECT_EQ(s->removed, 6144u * 4);
  EXPECT_LT(s->bytes.size() + s->removed, bytes.size());
  // Put back, the stripped model is the model.
  onnx::ModelProto back;
  ASSERT_TRUE(back.ParseFromString(s->bytes));
  EXPECT_FALSE(back.graph().initializer(1).has_raw_data());
  EXPECT_EQ(back.graph().initializer(0).raw_data(), m.graph().initializer(0).raw_data());
  for (int i : {1, 2})
    back.mutable_graph()->mutable_initializer(i)->set_raw_data(std::string(s->raw[i]));
  EXPECT_EQ(back.SerializeAsString(), bytes);
  // Nothing large enough: nothing to strip.
  EXPECT_FALSE(strip_initializer_data(bytes, 1 << 20));
}

TEST(DeferredWeights, AnythingUnplainIsLeftToTheParser) {
  const std::string bytes = model().SerializeAsString();
  // Cut short, inside a's raw_data.
  EXPECT_FALSE(strip_initializer_data(std::string_view(bytes).substr(0, bytes.size() / 2), 16));
  // The graph given twice (protobuf merges the two).
  onnx::ModelProto extra;
  extra.mutable_graph()->set_doc_string("second");
  EXPECT_FALSE(strip_initializer_data(bytes + extra.SerializeAsString(), 16));
  // One tensor's raw_data given twice (the last wins).
  onnx::TensorProto twice;
  twice.set_raw_data(std::string(4096, 'x'));
  const std::string doubled = twice.SerializeAsString() + twice.SerializeAsString();
  // GraphProto.initializer (field 5) holding the two, in ModelProto.graph (field 7).
  const std::string graph_bytes = std::string(1, '\x2a') +
                                  static_cast<char>(0x80 | (doubled.size() & 0x7f)) +
                                  static_cast<char>((doubled.size() >> 7) & 0x7f) + doubled;
  ASSERT_LT(doubled.size(), size_t{1} << 14);
  std::string model_bytes = std::string(1, '\x3a');
  size_t n = graph_bytes.size();
  while (n >= 0x80) {
    model_bytes += static_cast<char>((n & 0x7f) | 0x80);
    n >>= 7;
  }
  model_bytes += static_cast<char>(n);
  model_bytes += graph_bytes;
  onnx::ModelProto parsed;
  ASSERT_TRUE(parsed.ParseFromString(model_bytes));
  EXPECT_EQ(parsed.graph().initializer(0).raw_data().size(), 4096u);
  EXPECT_FALSE(strip_initializer_data(model_bytes, 16));
  // A truncated file imports with the parser's own message, deferred or not.
  TempFile f(bytes.substr(0, bytes.size() / 2));
  try {
    import_model(f.path.string(), deferred());
    ADD_FAILURE() << "imported a truncated file";
  } catch (const UserError& e) {
    EXPECT_NE(std::string(e.what()).find("protobuf parse failed"), std::string::npos) << e.what();
  }
}

/// The outcome of importing `bytes` from a file: the constants' bytes, or the error's text.
std::string outcome(const std::string& bytes, bool defer, bool in_memory = false,
                    bool on_demand = false) {
  TempFile f(bytes);
  ImportOptions o;
  o.defer_weights = defer;
  o.read_into_memory = in_memory;
  o.read_weights_on_demand = on_demand;
  try {
    const graph::Graph g = import_model(f.path.string(), o).graph;
    std::string out;
    for (const auto& [name, v] : g.values)
      if (v.constant)
        out += name + ":" +
               std::string(reinterpret_cast<const char*>(v.constant->raw()),
                           static_cast<size_t>(v.constant->byte_size())) +
               ";";
    return out;
  } catch (const UserError& e) {
    return std::string("error: ") + e.what();
  }
}

TEST(DeferredWeights, DamagedFilesFareAsWithoutDeferral) {
  const std::string bytes = model().SerializeAsString();
  // Cut short anywhere, and single bytes flipped (tags, lengths, data alike): the same graph or
  // the same error either way.
  for (size_t n = 0; n < bytes.size(); n += 331) {
    SCOPED_TRACE("cut at " + std::to_string(n));
    EXPECT_EQ(outcome(bytes.substr(0, n), true), outcome(bytes.substr(0, n), false));
    EXPECT_EQ(outcome(bytes.substr(0, n), true, true), outcome(bytes.substr(0, n), false));
    EXPECT_EQ(outcome(bytes.substr(0, n), true, true, true), outcome(bytes.substr(0, n), false));
  }
  uint32_t seed = 12345;
  for (int i = 0; i < 150; ++i) {
    seed = seed * 1664525u + 1013904223u;
    std::string flipped = bytes;
    const size_t at = i < 60 ? static_cast<size_t>(i) : seed % bytes.size();
    flipped[at] = static_cast<char>(flipped[at] ^ (1 << (seed >> 29)));
    SCOPED_TRACE("byte " + std::to_string(at) + " flipped");
    EXPECT_EQ(outcome(flipped, true), outcome(flipped, false));
    EXPECT_EQ(outcome(flipped, true, true, true), outcome(flipped, false));
  }
}

ImportOptions on_demand() {
  ImportOptions o = in_memory();
  o.read_weights_on_demand = true;
  return o;
}

/// Descriptors this process has open.
size_t open_descriptors() {
  size_t n = 0;
  for ([[maybe_unused]] const auto& e : fs::directory_iterator("/proc/self/fd")) ++n;
  return n;
}

// The walk over the file (pread, weights skipped) keeps exactly the bytes the walk over memory
// keeps and finds the weights where it finds them: in the test model and every sample model.
TEST(DeferredWeights, OnDemandWalkKeepsWhatTheWalkInMemoryKeeps) {
  std::vector<std::string> files;
  for (const char* m : {"bert", "efficientnet", "lstm", "mmoe", "resnext", "swin"})
    files.push_back(std::string(SOUFFLE_SOURCE_DIR) + "/sample_models/" + m + "/model.onnx");
  TempFile test_model(model().SerializeAsString());
  files.push_back(test_model.path.string());
  for (const std::string& file : files) {
    SCOPED_TRACE(file);
    std::ifstream in(file, std::ios::binary);
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_FALSE(bytes.empty());
    const std::optional<StrippedModel> mem = strip_initializer_data(bytes, 4096);
    const int fd = ::open(file.c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    const std::optional<StrippedFile> onfile =
        strip_initializer_data_from_file(fd, bytes.size(), 4096);
    ::close(fd);
    ASSERT_EQ(mem.has_value(), onfile.has_value());
    if (!mem) continue;
    EXPECT_EQ(onfile->bytes, mem->bytes);
    EXPECT_EQ(onfile->removed, mem->removed);
    ASSERT_EQ(onfile->raw.size(), mem->raw.size());
    for (size_t i = 0; i < mem->raw.size(); ++i) {
      EXPECT_EQ(onfile->raw[i].removed, mem->raw[i].data() != nullptr);
      if (!onfile->raw[i].removed) continue;
      EXPECT_EQ(onfile->raw[i].offset, static_cast<uint64_t>(mem->raw[i].data() - bytes.data()));
      EXPECT_EQ(onfile->raw[i].size, mem->raw[i].size());
    }
  }
}

// Read on demand through a descriptor (the explorer): the same graph and bytes, nothing read
// before first use, and the descriptor closed once every deferred weight is read.
TEST(DeferredWeights, OnDemandSameGraphAndBytesAndTheFileClosedOnceRead) {
  TempFile f(model().SerializeAsString());
  const graph::Graph eager = import_model(f.path.string()).graph;
  const size_t before = open_descriptors();
  graph::Graph lazy = import_model(f.path.string(), on_demand()).graph;
  EXPECT_EQ(open_descriptors(), before + 1);
  EXPECT_FALSE(lazy.value("a").constant->loaded());
  EXPECT_FALSE(lazy.value("c").constant->loaded());
  EXPECT_TRUE(lazy.value("b").constant->loaded());
  EXPECT_EQ(lazy.value("a").constant->byte_size(), 4096 * 4);
  for (const char* name : {"a", "b", "c", "d"}) {
    SCOPED_TRACE(name);
    EXPECT_EQ(*lazy.value(name).constant, *eager.value(name).constant);
    EXPECT_TRUE(lazy.value(name).constant->loaded());
  }
  EXPECT_EQ(lazy.value("c").constant->get_f64(2047), 2040.0);
  EXPECT_EQ(open_descriptors(), before);  // both read: closed
  // A graph dropped with weights unread closes it too.
  lazy = import_model(f.path.string(), on_demand()).graph;
  EXPECT_EQ(open_descriptors(), before + 1);
  lazy = graph::Graph();
  EXPECT_EQ(open_descriptors(), before);
}

/// The reason of the UserError that reading `t` throws; empty when it reads.
std::string read_error(const TensorData& t, const std::string& file) {
  try {
    (void)t.raw();
    return "";
  } catch (const UserError& e) {
    EXPECT_EQ(e.file(), file);
    return e.reason();
  }
}

// A file rewritten in place, cut short or overwritten with other bytes of the same size after
// the import: reading a weight throws UserError naming the file (never a fault, never other
// bytes), the tensor stays unread, and what was parsed at import is unaffected.
TEST(DeferredWeights, OnDemandAFileChangedInPlaceIsAnErrorNamingTheFile) {
  const std::string bytes = model().SerializeAsString();
  // Cut short.
  {
    TempFile f(bytes);
    const graph::Graph g = import_model(f.path.string(), on_demand()).graph;
    fs::resize_file(f.path, bytes.size() / 2);
    const std::string why = read_error(*g.value("c").constant, f.path.string());
    EXPECT_NE(why.find("changed on disk"), std::string::npos) << why;
    EXPECT_FALSE(g.value("c").constant->loaded());
    EXPECT_EQ(g.value("b").constant->get_f64(2), 2.5);  // parsed at import
  }
  // Overwritten in place with the same number of other bytes (a later modification time; the
  // pause outlasts the file system's coarse clock).
  {
    TempFile f(bytes);
    const graph::Graph g = import_model(f.path.string(), on_demand()).graph;
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    {
      std::fstream out(f.path, std::ios::binary | std::ios::in | std::ios::out);
      out.write(std::string(bytes.size(), '\x7f').data(),
                static_cast<std::streamsize>(bytes.size()));
    }
    ASSERT_EQ(fs::file_size(f.path), bytes.size());
    EXPECT_NE(read_error(*g.value("a").constant, f.path.string()).find("changed on disk"),
              std::string::npos);
    EXPECT_FALSE(g.value("a").constant->loaded());
    // Put back as it was, the file is still not trusted (its times moved on).
    {
      std::fstream out(f.path, std::ios::binary | std::ios::in | std::ios::out);
      out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    }
    EXPECT_NE(read_error(*g.value("a").constant, f.path.string()), "");
  }
}

// A file replaced by a rename (how editors and exporters save) is still read as it was: the
// descriptor holds the original.
TEST(DeferredWeights, OnDemandAFileReplacedByARenameReadsTheOriginal) {
  TempFile f(model().SerializeAsString());
  const graph::Graph eager = import_model(f.path.string()).graph;
  const graph::Graph lazy = import_model(f.path.string(), on_demand()).graph;
  const fs::path other = f.path.string() + ".new";
  std::ofstream(other, std::ios::binary) << std::string(100, 'x');
  fs::rename(other, f.path);
  EXPECT_EQ(*lazy.value("a").constant, *eager.value("a").constant);
  EXPECT_EQ(*lazy.value("c").constant, *eager.value("c").constant);
}

}  // namespace
}  // namespace souffle::onnx_import
