#include "core/session/bundle.h"

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "core/codegen/codegen_cuda.h"
#include "core/loop/mutator.h"
#include "core/loop/timeline.h"
#include "core/session/bundle_manifest.h"
#include "core/session/compare.h"
#include "core/session/verify.h"
#include "core/support/error.h"
#include "embedded/bundle_resources.h"

namespace souffle {
namespace fs = std::filesystem;

const char* bundle_tensor_kind_name(BundleTensor::Kind k) {
  switch (k) {
    case BundleTensor::Kind::Input:
      return "input";
    case BundleTensor::Kind::Weight:
      return "weight";
    case BundleTensor::Kind::Intermediate:
      return "intermediate";
    case BundleTensor::Kind::Output:
      return "output";
    case BundleTensor::Kind::Scratch:
      return "scratch";
    case BundleTensor::Kind::Flags:
      return "flags";
  }
  return "?";
}

namespace {

/// The kernel whose image files `k` loads: the first launch of its code (CompiledKernel::image).
std::string image_owner(const CompileReport& report, const CompiledKernel& k) {
  return k.image >= 0 && static_cast<size_t>(k.image) < report.kernels.size()
             ? report.kernels[static_cast<size_t>(k.image)].name
             : k.name;
}

/// The harness' element-type enumerators, by our dtype.
const char* harness_dtype(DType t) {
  switch (t) {
    case DType::Float32:
      return "F32";
    case DType::Float64:
      return "F64";
    case DType::Float16:
      return "F16";
    case DType::BFloat16:
      return "BF16";
    case DType::Int8:
      return "I8";
    case DType::Int16:
      return "I16";
    case DType::Int32:
      return "I32";
    case DType::Int64:
      return "I64";
    case DType::UInt8:
      return "U8";
    case DType::UInt16:
      return "U16";
    case DType::UInt32:
      return "U32";
    case DType::UInt64:
      return "U64";
    case DType::Bool:
      return "BOOL";
  }
  return "F32";
}

const char* harness_kind(BundleTensor::Kind k) {
  switch (k) {
    case BundleTensor::Kind::Input:
      return "INPUT";
    case BundleTensor::Kind::Weight:
      return "WEIGHT";
    case BundleTensor::Kind::Intermediate:
      return "INTERMEDIATE";
    case BundleTensor::Kind::Output:
      return "OUTPUT";
    case BundleTensor::Kind::Scratch:
      return "SCRATCH";
    case BundleTensor::Kind::Flags:
      break;  // not in the harness' tables: each launcher owns its kernel's counters
  }
  return "INTERMEDIATE";
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "x" : "") + std::to_string(shape[i]);
  return s.empty() ? "scalar" : s;
}

/// A C string literal holding `s`.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

/// A comment line safe to place after `//` (no line splice, no newline).
std::string comment_safe(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  while (!s.empty() && s.back() == '\\') s.pop_back();
  return s;
}

class Writer {
 public:
  Writer(std::string dir, BundleReport& rep) : m_dir(std::move(dir)), m_rep(rep) {}
  void write(const std::string& rel, const std::string& bytes) {
    fs::path p = fs::path(m_dir) / rel;
    std::error_code ec;
    fs::create_directories(p.parent_path(), ec);
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    if (f) f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    if (!f) throw UserError(p.string(), "", "cannot write the file");
    m_rep.files.push_back(rel);
  }
  static std::string bytes_of(const TensorData& t) {
    return std::string(reinterpret_cast<const char*>(t.raw()), static_cast<size_t>(t.byte_size()));
  }

 private:
  std::string m_dir;
  BundleReport& m_rep;
};

/// The device tensors of the harness: model inputs, weights, each kernel's parameters.
struct TensorTable {
  std::vector<BundleTensor> tensors;
  std::vector<ConstTensorPtr> weight_data;  ///< per tensor, Kind::Weight only
  std::map<std::string, int> by_name;
  std::map<const te::TensorNode*, int> scratch;
  std::set<std::string> files;

  std::string unique_file(const std::string& folder, const std::string& name) {
    std::string base = folder + "/" + codegen::c_identifier(name), f = base + ".bin";
    for (int i = 2; files.count(f); ++i) f = base + "_" + std::to_string(i) + ".bin";
    files.insert(f);
    return f;
  }

  int add(const te::Tensor& t, BundleTensor::Kind kind, const std::string& display) {
    if (kind == BundleTensor::Kind::Scratch) {
      auto it = scratch.find(t.get());
      if (it != scratch.end()) return it->second;
    } else {
      auto it = by_name.find(t->name);
      if (it != by_name.end()) return it->second;
    }
    BundleTensor b;
    b.name = display;
    b.dtype = t->dtype;
    b.shape = t->shape;
    int64_t numel = 1;
    for (int64_t d : t->shape) numel *= d;
    b.bytes = numel * dtype_size(t->dtype);
    b.kind = kind;
    if (kind == BundleTensor::Kind::Weight)
      SOUFFLE_CHECK(t->data && t->data->byte_size() == b.bytes,
                    "constant " + t->name + " carries its bytes");
    int id = static_cast<int>(tensors.size());
    tensors.push_back(std::move(b));
    weight_data.push_back(kind == BundleTensor::Kind::Weight ? t->data : nullptr);
    if (kind == BundleTensor::Kind::Scratch)
      scratch[t.get()] = id;
    else
      by_name[t->name] = id;
    return id;
  }
};

BundleTensor::Kind kind_of(const te::Tensor& t, const std::set<std::string>& outputs) {
  if (t->source == te::TensorNode::Source::Input) return BundleTensor::Kind::Input;
  if (t->source == te::TensorNode::Source::Constant) return BundleTensor::Kind::Weight;
  return outputs.count(t->name) ? BundleTensor::Kind::Output : BundleTensor::Kind::Intermediate;
}

std::string launch_unit(const CompiledKernel& k) {
  const std::string& n = k.name;
  const loop::LaunchConfig& l = k.launch;
  const bool flags = !k.kernel.flags.empty();
  std::ostringstream s;
  s << "// Host entry points of " << n << ". " << n
    << ".cu is included unchanged, so the device code is\n"
       "// exactly the translation unit NVRTC compiled; the harness calls these two functions.\n"
       "#include <cuda_runtime.h>\n\n"
       "#include \""
    << n << ".cu\"\n\n"
    << "// Grid " << l.grid_x << ", block " << l.block_x << ", " << l.dynamic_shared_bytes
    << " bytes of dynamic shared memory"
    << (l.cooperative ? flags ? ", cooperative (per-tile flags)" : ", cooperative (grid barriers)"
                      : "")
    << ".\n"
    << "extern \"C\" cudaError_t setup_" << n << "(int* blocks_per_sm) {\n";
  if (l.dynamic_shared_bytes > 48 * 1024)
    s << "  // Above 48 KiB a kernel must opt in to its dynamic shared memory.\n"
         "  cudaError_t e = cudaFuncSetAttribute("
      << n << ", cudaFuncAttributeMaxDynamicSharedMemorySize, " << l.dynamic_shared_bytes
      << ");\n  if (e != cudaSuccess) return e;\n";
  s << "  return cudaOccupancyMaxActiveBlocksPerMultiprocessor(blocks_per_sm, " << n << ", "
    << l.block_x << ", " << l.dynamic_shared_bytes << ");\n}\n\n";
  const std::string launch =
      std::string(l.cooperative ? "cudaLaunchCooperativeKernel" : "cudaLaunchKernel") +
      "(reinterpret_cast<const void*>(" + n + "), dim3(" + std::to_string(l.grid_x) + "), dim3(" +
      std::to_string(l.block_x) + "), ";
  const std::vector<codegen::KernelParam> params = codegen::kernel_params(k.kernel);
  const bool packed = codegen::takes_packed_params(params.size());
  const size_t n_params = params.size();
  // Launch arguments, eight to a line.
  auto joined = [](const std::vector<std::string>& items) {
    std::string out;
    for (size_t i = 0; i < items.size(); ++i)
      out += (i == 0 ? "" : i % 8 == 0 ? ",\n      " : ", ") + items[i];
    return out;
  };
  // A kernel that takes its tensors packed gets an array of their pointers, in parameter order
  // (`tensors`: an expression for a pointer to each one's value).
  auto pack = [&](const std::string& tensors) {
    s << "  // " << n << " takes its " << n_params << " tensors packed in one parameter (" << n
      << "_args in " << n << ".cu).\n"
      << "  " << n << "_args packed;\n"
      << "  for (int i = 0; i < " << n_params << "; ++i) packed.p[i] = *static_cast<void**>("
      << tensors << "[i]);\n";
  };
  if (!flags) {
    s << "extern \"C\" cudaError_t launch_" << n << "(void** args, cudaStream_t stream) {\n";
    if (packed) {
      pack("args");
      s << "  void* all[] = {&packed};\n"
        << "  return " << launch << "all, " << l.dynamic_shared_bytes << ", stream);\n}\n";
    } else {
      s << "  return " << launch << "args, " << l.dynamic_shared_bytes << ", stream);\n}\n";
    }
    return s.str();
  }
  // The harness passes the kernel's tensors; the launcher adds its flag counters (in parameter
  // order) and the epoch.
  std::vector<int64_t> counter_bytes;
  std::vector<std::string> items;
  std::string packed_items;
  int harness_arg = 0;
  for (const codegen::KernelParam& p : params) {
    if (p.role == codegen::KernelParam::Role::Flags) {
      int64_t numel = 1;
      for (int64_t d : p.tensor->shape) numel *= d;
      items.push_back("&" + n + "_flags[" + std::to_string(counter_bytes.size()) + "]");
      counter_bytes.push_back(numel * dtype_size(p.tensor->dtype));
    } else {
      items.push_back("args[" + std::to_string(harness_arg++) + "]");
    }
  }
  if (packed) {
    packed_items = joined(items);
    items = {"&packed", "&" + n + "_epoch"};
  } else {
    items.push_back("&" + n + "_epoch");
  }
  const std::string all = joined(items);
  s << "// Per-tile flag counters: allocated and zeroed once, before the first launch,\n"
       "// and never reset. Each launch passes an epoch one larger than the last (1 first),\n"
       "// so a wait is met only by this launch's releases (the kernel's souffle_flag_epoch).\n"
       "// The cooperative launch keeps every block resident, so a block waiting on another\n"
       "// always ends.\n"
    << "static void* " << n << "_flags[" << counter_bytes.size() << "] = {};\n"
    << "static const size_t " << n << "_flag_bytes[" << counter_bytes.size() << "] = {";
  for (size_t i = 0; i < counter_bytes.size(); ++i) s << (i ? ", " : "") << counter_bytes[i];
  s << "};\n"
    << "static long long " << n << "_epoch = 0;\n\n"
    << "extern \"C\" cudaError_t launch_" << n << "(void** args, cudaStream_t stream) {\n"
    << "  if (" << n << "_epoch == 0)\n"
    << "    for (int i = 0; i < " << counter_bytes.size() << "; ++i) {\n"
    << "      cudaError_t e = cudaMalloc(&" << n << "_flags[i], " << n << "_flag_bytes[i]);\n"
    << "      if (e == cudaSuccess)\n"
    << "        e = cudaMemsetAsync(" << n << "_flags[i], 0, " << n << "_flag_bytes[i], stream);\n"
    << "      if (e != cudaSuccess) return e;\n"
    << "    }\n"
    << "  ++" << n << "_epoch;  // the argument's value is copied when the launch is made\n";
  if (packed) {
    s << "  void* tensors[] = {\n      " << packed_items << "};\n";
    pack("tensors");
  }
  s << "  void* all[] = {\n      " << all << "};\n"
    << "  return " << launch << "all, " << l.dynamic_shared_bytes << ", stream);\n}\n";
  return s.str();
}

// The part of main.cu that does not depend on the model (after its tables) is
// resources/bundle/harness_body.cu, compiled in as resources::harness_body.

std::string harness_source(const plan::FusionPlan& plan, const CompileReport& report,
                           const BundleOptions& options, const TensorTable& table,
                           const std::vector<std::vector<int>>& kernel_args,
                           const std::vector<std::string>& expected_files,
                           const std::set<int>& model_outputs, size_t n_tensors) {
  // The loosest of verify's defaults over the model's outputs (one tolerance for the harness).
  Tolerance tol{0, 0};
  for (int i : model_outputs) {
    const Tolerance d =
        default_tolerance(plan.precision, table.tensors[static_cast<size_t>(i)].dtype);
    tol.rtol = std::max(tol.rtol, d.rtol);
    tol.atol = std::max(tol.atol, d.atol);
  }
  if (model_outputs.empty()) tol = Tolerance{};
  std::ostringstream s;
  s << "// Host harness for " << comment_safe(options.model) << " (" << options.strategy
    << " strategy, planned for " << comment_safe(plan.gpu)
    << "), generated by souffle-cli compile.\n"
    << "//\n"
       "// It reads weights.bin (manifest: weights.txt) and the model's inputs and expected "
       "outputs.\n"
       "// Those were converted from test_data_set_0's protobuf files at export time into raw\n"
       "// little-endian arrays (inputs/NAME.bin, expected/NAME.bin), so the harness needs no\n"
       "// protobuf. It allocates every tensor with cudaMalloc, checks each kernel's "
       "co-residency,\n"
       "// launches the kernels in plan order (cooperatively where a kernel has grid barriers),\n"
       "// compares the outputs element by element (|got - want| <= atol + rtol |want|, as\n"
       "// souffle-cli verify does) and times the runs with CUDA events.\n"
       "//\n"
       "// usage: harness [--data DIR] [--rtol R] [--atol A] [--runs 20] [--device N]\n"
       "// exit:  0 outputs match, 1 an output differs, 2 setup error (no GPU, missing file, ...)\n"
       "#include <cuda_runtime.h>\n\n"
       "#include <algorithm>\n#include <cmath>\n#include <cstdint>\n#include <cstdio>\n"
       "#include <cstdlib>\n#include <cstring>\n#include <string>\n#include <vector>\n\n"
       "#ifndef BUNDLE_DIR\n#define BUNDLE_DIR \".\"\n#endif\n\n"
       "enum DType { F32, F64, F16, BF16, I8, I16, I32, I64, U8, U16, U32, U64, BOOL };\n"
       "enum Kind { INPUT, WEIGHT, INTERMEDIATE, OUTPUT, SCRATCH };\n\n"
       "struct TensorInfo {\n"
       "  const char* name;\n  DType dtype;\n  size_t bytes;\n  Kind kind;\n"
       "  long long weight_offset;  // in weights.bin, WEIGHT only\n"
       "  const char* file;         // inputs/NAME.bin, INPUT only\n"
       "  const char* expected;     // expected/NAME.bin, model outputs only\n"
       "  bool is_model_output;\n};\n\n"
    << "static const char* kModel = " << quoted(options.model) << ";\n"
    << "static const bool kHaveExpected = " << (options.data ? "true" : "false") << ";\n"
    << "// verify's default element-wise tolerance for these outputs at the plan's precision\n"
    << "static const double kRtol = " << fmt::format("{:g}", tol.rtol)
    << ", kAtol = " << fmt::format("{:g}", tol.atol) << ";\n\n"
    << "static const TensorInfo kTensors[] = {\n";
  for (size_t i = 0; i < n_tensors; ++i) {
    const BundleTensor& t = table.tensors[i];
    const std::string& exp = expected_files[i];
    s << "    {" << quoted(t.name) << ", " << harness_dtype(t.dtype) << ", " << t.bytes << ", "
      << harness_kind(t.kind) << ", " << t.weight_offset << ", " << quoted(t.file) << ", "
      << quoted(exp) << ", " << (model_outputs.count(static_cast<int>(i)) ? "true" : "false")
      << "},  // " << i << ": " << dtype_name(t.dtype) << " " << shape_text(t.shape) << "\n";
  }
  s << "};\n\n";
  for (const CompiledKernel& k : report.kernels)
    s << "extern \"C\" cudaError_t setup_" << k.name << "(int* blocks_per_sm);\n"
      << "extern \"C\" cudaError_t launch_" << k.name << "(void** args, cudaStream_t stream);\n";
  s << "\n";
  for (size_t i = 0; i < report.kernels.size(); ++i) {
    const CompiledKernel& k = report.kernels[i];
    s << "// " << k.name << " (partition " << k.partition << "): ";
    for (size_t j = 0; j < k.kernel.stages.size(); ++j)
      s << (j ? ", " : "") << comment_safe(k.kernel.stages[j].name);
    s << "\nstatic const int kArgs" << i << "[] = {";
    for (size_t a = 0; a < kernel_args[i].size(); ++a) s << (a ? ", " : "") << kernel_args[i][a];
    if (kernel_args[i].empty()) s << "0";
    s << "};\n";
  }
  s << "\nstruct KernelInfo {\n  const char* name;\n  cudaError_t (*setup)(int*);\n"
       "  cudaError_t (*launch)(void**, cudaStream_t);\n  int grid, block;\n  bool cooperative;\n"
       "  const int* args;  // indices into kTensors, in parameter order\n  int n_args;\n};\n\n"
       "static const KernelInfo kKernels[] = {\n";
  for (size_t i = 0; i < report.kernels.size(); ++i) {
    const CompiledKernel& k = report.kernels[i];
    s << "    {" << quoted(k.name) << ", setup_" << k.name << ", launch_" << k.name << ", "
      << k.launch.grid_x << ", " << k.launch.block_x << ", "
      << (k.launch.cooperative ? "true" : "false") << ", kArgs" << i << ", "
      << kernel_args[i].size() << "},\n";
  }
  s << "};\n\n" << resources::harness_body;
  return s.str();
}

std::string cmake_lists(const plan::FusionPlan& plan, const CompileReport& report,
                        const BundleOptions& options) {
  std::string archs;
  for (const std::string& a : options.cuda_architectures) archs += (archs.empty() ? "" : ";") + a;
  std::ostringstream s;
  s << "# Builds the host harness of this kernel bundle (" << comment_safe(options.model) << ", "
    << options.strategy << " strategy).\n"
    << "#   cmake -S . -B build && cmake --build build && ./build/harness\n"
    << "cmake_minimum_required(VERSION 3.18)\n"
    << "if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)\n  set(CMAKE_CUDA_ARCHITECTURES \"" << archs
    << "\")\nendif()\n"
    << "project(souffle_bundle LANGUAGES CXX CUDA)\n\n"
    << "set(CMAKE_CUDA_STANDARD 17)\nset(CMAKE_CUDA_STANDARD_REQUIRED ON)\n\n"
    << "# One translation unit per kernel: NAME.launch.cu includes NAME.cu unchanged and adds its\n"
       "# host launcher. Grid barriers (cooperative_groups grid.sync()) need no relocatable\n"
       "# device code (-rdc) since CUDA 11, and every kernel's device code stays in its own unit,\n"
       "# so the bundle is built with whole-program compilation.\n"
    << "add_executable(harness main.cu";
  for (const CompiledKernel& k : report.kernels) s << "\n  " << k.name << ".launch.cu";
  s << ")\n"
    << "target_include_directories(harness PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})\n"
    << "# The harness reads weights.bin, inputs/ and expected/ from here unless --data says else.\n"
    << "target_compile_definitions(harness PRIVATE BUNDLE_DIR=\"${CMAKE_CURRENT_SOURCE_DIR}\")\n";
  (void)plan;
  return s.str();
}

std::string readme(const plan::FusionPlan& plan, const CompileReport& report,
                   const CompileOptions& copts, const BundleOptions& options, bool harness) {
  std::ostringstream s;
  s << "Kernel bundle of " << options.model << ", " << options.strategy << " strategy, planned for "
    << plan.gpu << ": " << report.kernels.size() << " kernel(s).\n\n";
  if (harness)
    s << "Build and run (needs the CUDA toolkit, CMake >= 3.18, and a GPU to run):\n\n"
         "  cmake -S . -B build            # -DCMAKE_CUDA_ARCHITECTURES=90 for one arch only\n"
         "  cmake --build build -j\n"
         "  ./build/harness [--rtol R] [--atol A] [--runs 20] [--device N] [--data DIR]\n\n"
         "The harness exits 0 when every output matches test_data_set_0 (every element within\n"
         "atol + rtol |want|; the defaults are verify's for the plan's precision), 1 on a\n"
         "mismatch, 2 on a setup error (no GPU, a missing file,\n"
         "a cooperative grid the GPU cannot hold at once). It prints the median and minimum\n"
         "time of each kernel and of the whole model over the runs.\n\n";
  else
    s << "Some kernels failed to build or compile (ERRORS.txt), so no harness was written.\n\n";
  s << "Files:\n"
       "  KERNEL.cu             one CUDA translation unit per kernel, as NVRTC compiled it\n"
       "  KERNEL.ARCH.ptx       its PTX for each arch (";
  for (size_t i = 0; i < copts.archs.size(); ++i) s << (i ? ", " : "") << copts.archs[i];
  s << ")\n"
       "  KERNEL.launch.cu      the kernel's host launcher (includes KERNEL.cu)\n"
       "  main.cu               the host harness\n"
       "  weights.bin           the constants the kernels read, raw little-endian\n"
       "  weights.txt           its manifest: name, dtype, shape, byte offset, bytes\n"
       "  inputs/, expected/    test_data_set_0 as raw little-endian arrays\n"
       "  CMakeLists.txt        builds ./build/harness\n";
  return s.str();
}

/// bundle.json: what souffle-runner needs to load and launch the kernels, and what they were
/// made from.
BundleManifest bundle_manifest(const plan::FusionPlan& plan, const CompileReport& report,
                               const TensorTable& table,
                               const std::vector<std::vector<int>>& kernel_args,
                               const std::vector<std::string>& expected_files,
                               const std::set<int>& model_outputs, const BundleOptions& options,
                               schedule::SyncMode sync) {
  BundleManifest m;
  std::error_code ec;
  fs::path model = fs::absolute(options.model, ec);
  m.source.model = ec ? options.model : model.lexically_normal().string();
  m.source.dims = options.dims;
  m.source.bind = options.bind;
  m.source.shapes = options.shapes;
  m.source.strategy = options.strategy;
  m.source.precision = gpu::precision_name(plan.precision);
  m.source.sync = schedule::sync_mode_name(sync);
  m.source.waves = plan.waves;
  m.source.weight_panels = plan.weight_panels;
  m.source.gpu = plan.gpu_spec.sm_count > 0 ? plan.gpu_spec : gpu::gpu_spec(plan.gpu);
  plan::Decisions applied;
  applied.edits = plan.applied;
  if (!applied.edits.empty()) m.source.decisions_json = plan::to_json(applied);
  m.has_expected = options.data != nullptr;
  for (size_t i = 0; i < table.tensors.size(); ++i) {
    const BundleTensor& t = table.tensors[i];
    ManifestTensor mt;
    mt.name = t.name;
    mt.dtype = t.dtype;
    mt.shape = t.shape;
    mt.bytes = t.bytes;
    mt.kind = bundle_tensor_kind_name(t.kind);
    mt.weight_offset = t.weight_offset;
    mt.file = t.file;
    mt.expected = expected_files[i];
    m.tensors.push_back(std::move(mt));
  }
  int out_index = 0;
  for (const te::Tensor& t : plan.program.outputs) {
    auto it = table.by_name.find(t->name);
    if (it != table.by_name.end() && model_outputs.count(it->second))
      m.tensors[static_cast<size_t>(it->second)].output_index = out_index;
    ++out_index;
  }
  std::map<int, double> est;
  for (const plan::Partition& p : plan.partitions) est[p.id] = p.est_time_us;
  for (size_t i = 0; i < report.kernels.size(); ++i) {
    const CompiledKernel& k = report.kernels[i];
    if (!k.ok()) continue;
    ManifestKernel mk;
    mk.name = k.name;
    mk.partition = k.partition;
    mk.source = k.name + ".cu";
    mk.grid = k.launch.grid_x;
    mk.block = k.launch.block_x;
    mk.shared_bytes = k.launch.dynamic_shared_bytes;
    mk.cooperative = k.launch.cooperative;
    mk.register_cap = k.register_cap;
    mk.args = kernel_args[i];
    mk.stages = static_cast<int>(k.kernel.stages.size());
    loop::for_each_stmt(k.kernel.body, [&](const loop::Stmt& s) {
      mk.grid_barriers += s.kind() == loop::StmtKind::GridBarrier;
      mk.flag_waits += s.kind() == loop::StmtKind::FlagWait;
      mk.flag_releases += s.kind() == loop::StmtKind::FlagRelease;
    });
    mk.flag_epoch = !k.kernel.flags.empty();
    mk.packed_args = codegen::takes_packed_params(k.kernel);
    if (std::optional<loop::TimelineLayout> tl = loop::timeline_layout(k.kernel)) {
      const std::vector<codegen::KernelParam> params = codegen::kernel_params(k.kernel);
      for (size_t a = 0; a < params.size() && a < mk.args.size(); ++a)
        if (params[a].tensor->name == tl->buffer) mk.timeline_tensor = mk.args[a];
      mk.timeline_rows = tl->rows;
      mk.timeline_slots = tl->slot_count;
      mk.timeline_stride = tl->stride;
      m.source.timeline = true;
    }
    mk.est_us = est.count(k.partition) ? est[k.partition] : 0;
    mk.entry = k.image_entry();
    // Launches of the same code share the first one's image files.
    const std::string owner = image_owner(report, k);
    for (const gpu::CompileResult& r : k.per_arch) {
      if (!r.ok) continue;
      ManifestImage img;
      img.arch = r.arch;
      // A kernel linked with nvJitLink (CompileOptions::lto) has a CUBIN and no PTX.
      if (!r.ptx.empty()) img.ptx = owner + "." + r.arch + ".ptx";
      if (!r.cubin.empty()) img.cubin = owner + "." + r.arch + ".cubin";
      if (const gpu::KernelResources* kr = r.find_kernel(k.name)) img.registers = kr->registers;
      mk.images.push_back(img);
    }
    m.kernels.push_back(std::move(mk));
  }
  for (const CompiledKernel& k : report.kernels)
    for (const gpu::CompileResult& r : k.per_arch)
      if (std::find(m.archs.begin(), m.archs.end(), r.arch) == m.archs.end())
        m.archs.push_back(r.arch);
  return m;
}

}  // namespace

BundleReport write_bundle(const std::string& dir, const plan::FusionPlan& plan,
                          const CompileReport& report, const CompileOptions& compile_options,
                          const BundleOptions& options) {
  BundleReport rep;
  rep.dir = dir;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw UserError(dir, "", "cannot create the folder: " + ec.message());
  Writer w(dir, rep);
  const te::TeProgram& prog = plan.program;

  // Every tensor the kernels touch, model inputs first (in order), then by first use.
  std::set<std::string> output_names;
  for (const te::Tensor& t : prog.outputs) output_names.insert(t->name);
  TensorTable table;
  for (const te::Tensor& t : prog.inputs) table.add(t, BundleTensor::Kind::Input, t->name);
  std::vector<std::vector<int>> kernel_args(report.kernels.size());
  for (size_t i = 0; i < report.kernels.size(); ++i) {
    const CompiledKernel& k = report.kernels[i];
    if (!k.kernel.body.defined()) continue;
    for (const codegen::KernelParam& p : codegen::kernel_params(k.kernel)) {
      if (p.role == codegen::KernelParam::Role::Flags) {
        kernel_args[i].push_back(-1);  // placed after every other tensor, below
        continue;
      }
      BundleTensor::Kind kind = p.role == codegen::KernelParam::Role::Scratch
                                    ? BundleTensor::Kind::Scratch
                                    : kind_of(p.tensor, output_names);
      std::string display =
          kind == BundleTensor::Kind::Scratch ? k.name + "." + p.tensor->name : p.tensor->name;
      kernel_args[i].push_back(table.add(p.tensor, kind, display));
    }
  }
  std::set<int> model_outputs;
  for (const te::Tensor& t : prog.outputs)
    model_outputs.insert(table.add(t, kind_of(t, output_names), t->name));
  // Flag counters last, so that the harness' tables (which leave them to each kernel's
  // launcher) index the other tensors as bundle.json does; a bundle without flags is unchanged.
  const size_t harness_tensors = table.tensors.size();
  std::vector<std::vector<int>> harness_args = kernel_args;
  for (size_t i = 0; i < report.kernels.size(); ++i) {
    const CompiledKernel& k = report.kernels[i];
    if (!k.kernel.body.defined()) continue;
    const std::vector<codegen::KernelParam> params = codegen::kernel_params(k.kernel);
    harness_args[i].clear();
    for (size_t a = 0; a < params.size(); ++a) {
      if (params[a].role == codegen::KernelParam::Role::Flags)
        kernel_args[i][a] =
            table.add(params[a].tensor, BundleTensor::Kind::Flags, params[a].tensor->name);
      else
        harness_args[i].push_back(kernel_args[i][a]);
    }
  }

  // weights.bin: each constant at a 256-byte aligned offset, listed in weights.txt.
  std::string weights, manifest =
                           "# weights.bin manifest: name, dtype, shape, byte offset, bytes "
                           "(raw little-endian, row-major)\n";
  for (size_t i = 0; i < table.tensors.size(); ++i) {
    BundleTensor& t = table.tensors[i];
    if (t.kind != BundleTensor::Kind::Weight) continue;
    weights.resize((weights.size() + 255) / 256 * 256, '\0');
    t.weight_offset = static_cast<int64_t>(weights.size());
    weights += Writer::bytes_of(*table.weight_data[i]);
    manifest += t.name + "\t" + dtype_name(t.dtype) + "\t" + shape_text(t.shape) + "\t" +
                std::to_string(t.weight_offset) + "\t" + std::to_string(t.bytes) + "\n";
  }
  rep.weights_bytes = static_cast<int64_t>(weights.size());

  // Inputs and expected outputs as raw arrays.
  std::vector<std::string> expected_files(table.tensors.size());
  if (options.data) {
    const TestDataSet& ds = *options.data;
    check_data_set_fits(ds, prog);
    for (size_t k = 0; k < prog.inputs.size(); ++k) {
      ConstTensorPtr in = reference_as_declared(ds.inputs[k], prog.inputs[k]->dtype);
      if (in->shape() != prog.inputs[k]->shape || in->dtype() != prog.inputs[k]->dtype)
        throw UserError(
            ds.dir, prog.inputs[k]->name,
            "input " + std::to_string(k) + " has another shape or type than the model's");
      BundleTensor& t = table.tensors[static_cast<size_t>(table.by_name.at(prog.inputs[k]->name))];
      t.file = table.unique_file("inputs", t.name);
      w.write(t.file, Writer::bytes_of(*in));
    }
    for (size_t k = 0; k < ds.outputs.size() && k < prog.outputs.size(); ++k) {
      const te::Tensor& o = prog.outputs[k];
      ConstTensorPtr want = reference_as_declared(ds.outputs[k], o->dtype);
      int id = table.by_name.at(o->name);
      if (want->byte_size() != table.tensors[static_cast<size_t>(id)].bytes)
        throw UserError(ds.dir, o->name,
                        "output " + std::to_string(k) + " has another size than the model's");
      expected_files[static_cast<size_t>(id)] = table.unique_file("expected", o->name);
      w.write(expected_files[static_cast<size_t>(id)], Writer::bytes_of(*want));
    }
  } else {
    for (BundleTensor& t : table.tensors)
      if (t.kind == BundleTensor::Kind::Input) {
        t.file = table.unique_file("inputs", t.name);
        w.write(t.file, std::string(static_cast<size_t>(t.bytes), '\0'));
      }
  }
  w.write("weights.bin", weights);
  w.write("weights.txt", manifest);

  // The kernels, their launchers, PTX and CUBIN.
  std::string errors;
  for (const CompiledKernel& k : report.kernels) {
    if (!k.cuda.empty()) w.write(k.name + ".cu", k.cuda);
    for (const gpu::CompileResult& r : k.per_arch) {
      if (image_owner(report, k) != k.name) break;  // its image is another launch's
      if (r.ok && !r.ptx.empty()) w.write(k.name + "." + r.arch + ".ptx", r.ptx);
      if (r.ok && !r.cubin.empty())
        w.write(k.name + "." + r.arch + ".cubin", std::string(r.cubin.begin(), r.cubin.end()));
    }
    if (!k.ok())
      errors += k.error + "\n\n";
    else
      w.write(k.name + ".launch.cu", launch_unit(k));
  }
  rep.tensors = table.tensors;
  if (!errors.empty()) {
    w.write("ERRORS.txt", errors);
  } else {
    // The harness leaves flag counters to the launchers (launch_unit): its tables stop before
    // them and its kernel arguments skip them.
    w.write("main.cu", harness_source(plan, report, options, table, harness_args, expected_files,
                                      model_outputs, harness_tensors));
    w.write("CMakeLists.txt", cmake_lists(plan, report, options));
    // Only a bundle whose every kernel compiled gets a manifest: the runner never launches a
    // plan with a kernel missing.
    BundleManifest bm = bundle_manifest(plan, report, table, kernel_args, expected_files,
                                        model_outputs, options, compile_options.sync);
    if (bm.source.timeline) bm.source.timeline_max_bytes = compile_options.timeline.max_bytes;
    w.write("bundle.json", manifest_json(bm));
    rep.harness = true;
  }
  w.write("README.txt", readme(plan, report, compile_options, options, rep.harness));
  return rep;
}

BundleReport write_model_bundle(const std::string& dir, const std::string& model_path,
                                const std::string& data_dir, const plan::FusionPlan& plan,
                                const CompileReport& report, const CompileOptions& compile_options,
                                const std::map<std::string, int64_t>& dims,
                                const std::vector<std::string>& bind,
                                const std::vector<std::string>& shapes) {
  std::string data =
      data_dir.empty() ? std::filesystem::path(model_path).parent_path().string() : data_dir;
  if (data.empty()) data = ".";
  std::vector<TestDataSet> sets;
  if (std::filesystem::exists(std::filesystem::path(data) / "test_data_set_0"))
    sets = read_test_data(data);
  // Inputs bound as constants (--bind) are no longer the program's: their values leave the data
  // sets, which hold one value per input of the file.
  if (!sets.empty() && sets.front().input_values.size() != plan.input.inputs.size()) {
    const std::vector<std::string> file_inputs = onnx_import::import_model(model_path).graph.inputs;
    std::set<std::string> kept;
    for (const te::Tensor& t : plan.input.inputs) kept.insert(t->name);
    std::vector<std::string> bound;
    for (const std::string& in : file_inputs)
      if (!kept.count(in)) bound.push_back(in);
    for (TestDataSet& ds : sets)
      if (ds.input_values.size() == file_inputs.size()) bind_from_data(file_inputs, bound, ds);
  }
  BundleOptions bo;
  bo.model = model_path;
  bo.strategy = plan::strategy_name(plan.strategy);
  bo.data = sets.empty() ? nullptr : &sets.front();
  bo.dims = dims;
  bo.bind = bind;
  bo.shapes = shapes;
  bo.cuda_architectures.clear();
  for (const std::string& a : compile_options.archs)  // "sm_80" -> "80"
    bo.cuda_architectures.push_back(a.substr(a.find('_') + 1));
  return write_bundle(dir, plan, report, compile_options, bo);
}

}  // namespace souffle
