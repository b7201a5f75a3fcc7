// The CUDA backend of souffle-runner, its device part: the driver API and CUPTI loaded at run
// time, kernels loaded from the bundle's CUBIN for the device's arch (PTX, JIT-compiled by the
// driver, as the fallback), every cooperative kernel checked for co-residency on the actual
// device before anything is launched. Runs and profiles: runner_cuda_timing.cpp; calibration:
// runner_cuda_calibrate.cpp.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

#include "core/session/runner_cuda_backend.h"

namespace souffle::runner {
namespace cuda_backend {
namespace {

std::string file_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw RunnerError("bad_bundle", "cannot read " + path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

/// What a block may use of shared memory, static and dynamic together, unless its function opts
/// in to more.
constexpr size_t kDefaultSharedBytes = 48 * 1024;

/// "90" of "sm_90" / "compute_90"; -1 when it is neither.
int arch_number(const std::string& arch) {
  size_t p = arch.find('_');
  if (p == std::string::npos) return -1;
  try {
    return std::stoi(arch.substr(p + 1));
  } catch (const std::invalid_argument&) {
    return -1;
  } catch (const std::out_of_range&) {
    return -1;
  }
}

}  // namespace

json CudaBackend::hello() {
  json h = {{"backend", "cuda"}, {"devices", json::array()}};
  if (!m_api) {
    h["unavailable"] = m_reason;
    return h;
  }
  int driver = 0;
  m_api->cuDriverGetVersion(&driver);
  h["driver_version"] = driver;
  h["driver_library"] = m_api->library;
  int n = 0;
  m_api->cuDeviceGetCount(&n);
  for (int i = 0; i < n; ++i) {
    Device d = describe(i);
    h["devices"].push_back({{"index", i},
                            {"name", d.name},
                            {"compute_capability", d.cc()},
                            {"arch", d.arch()},
                            {"sm_count", d.sms},
                            {"max_blocks_per_sm", d.max_blocks_per_sm},
                            {"l2_bytes", d.l2_bytes},
                            {"memory_bytes", d.memory},
                            {"clock_mhz", d.clock_khz / 1000},
                            {"memory_clock_mhz", d.memory_clock_khz / 1000},
                            {"cooperative_launch", d.cooperative}});
    h["devices"].back().update(device_attributes_json(d.attributes));
  }
  if (n <= 0) h["unavailable"] = "no CUDA device";
  std::string why;
  gpu::CuptiKernelTracer* t = tracer(&why);
  h["cupti"] = t != nullptr;
  if (t)
    h["cupti_library"] = t->library();
  else
    h["cupti_note"] = why;
  return h;
}

json CudaBackend::load(const BundleManifest& m) {
  ensure_context();
  release_bundle();
  json kernels = json::array();
  const std::filesystem::path dir(m.dir);
  const int want = m_dev.major * 10 + m_dev.minor;
  std::vector<Loaded> loaded;
  // Images by file: launches of the same code load one module (ManifestKernel::entry).
  std::map<std::string, CUmodule> modules_by_file;
  for (const ManifestKernel& k : m.kernels) {
    Loaded l;
    l.k = k;
    // The CUBIN of the device's own arch, else the newest PTX the device can JIT.
    const ManifestImage* cubin = nullptr;
    const ManifestImage* ptx = nullptr;
    for (const ManifestImage& img : k.images) {
      int a = arch_number(img.arch);
      if (!img.cubin.empty() && a == want) cubin = &img;
      if (!img.ptx.empty() && a <= want && (!ptx || a > arch_number(ptx->arch))) ptx = &img;
    }
    std::string image, image_file;
    if (cubin) {
      image_file = cubin->cubin;
      if (!modules_by_file.count(image_file)) image = file_bytes((dir / cubin->cubin).string());
      l.image = "cubin " + cubin->arch;
    } else if (ptx) {
      image_file = ptx->ptx;
      if (!modules_by_file.count(image_file)) image = file_bytes((dir / ptx->ptx).string());
      image.push_back('\0');
      l.image = "ptx " + ptx->arch + " (JIT for " + m_dev.arch() + ")";
    } else {
      std::string have;
      for (const ManifestImage& img : k.images) have += (have.empty() ? "" : ", ") + img.arch;
      throw RunnerError("bad_bundle",
                        k.name + " has no image " + m_dev.name + " (" + m_dev.arch() +
                            ") can run (the bundle has " + (have.empty() ? "none" : have) +
                            "): compile it with --arch " + m_dev.arch(),
                        k.name);
    }
    const bool shared_image = modules_by_file.count(image_file) > 0;
    if (shared_image) {
      l.module = modules_by_file[image_file];
    } else {
      char log[8192] = {};
      CUjit_option opts[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
      void* vals[] = {log, reinterpret_cast<void*>(sizeof log - 1)};
      ModuleHandle module(m_api->cuModuleUnload);
      CUresult r = m_api->cuModuleLoadDataEx(module.out(), image.data(), 2, opts, vals);
      if (r != CUDA_SUCCESS)
        throw RunnerError("bad_bundle",
                          k.name + ": the driver cannot load its " + l.image + ": " +
                              m_api->error_text(r) + (log[0] ? std::string("\n") + log : ""),
                          k.name);
      l.module = module.get();
      modules_by_file[image_file] = l.module;
      m_modules.push_back(std::move(module));
    }
    const std::string entry = k.entry.empty() ? k.name : k.entry;
    check(m_api->cuModuleGetFunction(&l.fn, l.module, entry.c_str()),
          "cuModuleGetFunction " + entry, k.name);
    const int static_smem = opt_in_shared(l.fn, static_cast<size_t>(k.shared_bytes), k.name);
    check(m_api->cuFuncGetAttribute(&l.registers, CU_FUNC_ATTRIBUTE_NUM_REGS, l.fn),
          "cuFuncGetAttribute", k.name);
    check(m_api->cuOccupancyMaxActiveBlocksPerMultiprocessor(&l.per_sm, l.fn, k.block,
                                                             static_cast<size_t>(k.shared_bytes)),
          "cuOccupancyMaxActiveBlocksPerMultiprocessor", k.name);
    std::string resources = std::to_string(k.block) + " threads, " + std::to_string(l.registers) +
                            " registers a thread, " + std::to_string(k.shared_bytes + static_smem) +
                            " bytes of shared memory a block";
    std::string refusal =
        launch_refusal(k, l.per_sm, m_dev.sms, m_dev.cooperative, m_dev.name, resources);
    if (!refusal.empty()) throw RunnerError("not_co_resident", refusal, k.name);
    const int64_t fits = static_cast<int64_t>(l.per_sm) * m_dev.sms;
    kernels.push_back({{"name", k.name},
                       {"image", l.image},
                       {"image_file", image_file},
                       {"entry", entry},
                       {"shared_image", shared_image},
                       {"grid", k.grid},
                       {"block", k.block},
                       {"shared_bytes", k.shared_bytes + static_smem},
                       {"registers", l.registers},
                       {"cooperative", k.cooperative},
                       {"blocks_per_sm", l.per_sm},
                       {"co_resident", fits}});
    loaded.push_back(std::move(l));
  }
  // Every tensor, then each kernel's arguments (pointers into m_ptrs, which no longer moves).
  m_ptrs.assign(m.tensors.size(), 0);
  for (size_t i = 0; i < m.tensors.size(); ++i) {
    size_t bytes = static_cast<size_t>(std::max<int64_t>(m.tensors[i].bytes, 16));
    m_memory.emplace_back(m_api->cuMemFree);
    check(m_api->cuMemAlloc(m_memory.back().out(), bytes),
          "cuMemAlloc of " + std::to_string(bytes) + " bytes for " + m.tensors[i].name);
    m_ptrs[i] = m_memory.back().get();
  }
  // A kernel with flags takes its epoch last (a long long; `loaded` no longer moves either, and
  // moving the vector into m_loaded keeps its elements where they are).
  // A kernel that takes its tensors packed gets one pointer to an array of them.
  for (Loaded& l : loaded) {
    if (l.k.packed_args) {
      for (int a : l.k.args) l.packed.push_back(m_ptrs[static_cast<size_t>(a)]);
      l.args.push_back(l.packed.data());
    } else {
      for (int a : l.k.args) l.args.push_back(&m_ptrs[static_cast<size_t>(a)]);
    }
    if (l.k.flag_epoch) l.args.push_back(&l.epoch);
  }
  m_loaded = std::move(loaded);
  m_manifest = m;
  // Flag counters are zeroed once, here, and count on across runs (restart_flags).
  restart_flags();
  sync("zeroing the flag counters");
  return {{"kernels", kernels}, {"device", m_dev.name}};
}

void CudaBackend::upload(int index, const std::string& bytes) {
  const ManifestTensor& t = m_manifest.tensors.at(static_cast<size_t>(index));
  if (static_cast<int64_t>(bytes.size()) != t.bytes)
    throw RunnerError("bad_request", t.name + " takes " + std::to_string(t.bytes) + " bytes, got " +
                                         std::to_string(bytes.size()));
  // On the kernels' stream, so that they see it; `bytes` is pageable and is staged before the
  // call returns, and the stream is synchronized so that the upload is done when this returns.
  if (!bytes.empty()) {
    check(m_api->cuMemcpyHtoDAsync(m_ptrs[static_cast<size_t>(index)], bytes.data(), bytes.size(),
                                   m_stream),
          "uploading " + t.name);
    sync("uploading " + t.name);
  }
}

std::string CudaBackend::read(int index) {
  const ManifestTensor& t = m_manifest.tensors.at(static_cast<size_t>(index));
  std::string out(static_cast<size_t>(t.bytes), '\0');
  if (!out.empty())
    read_device(out.data(), m_ptrs[static_cast<size_t>(index)], out.size(), "reading " + t.name);
  return out;
}

/// The driver's rule: a block's static and dynamic shared memory together may pass the 48 KiB
/// default only once the function's dynamic limit is raised to its dynamic size (otherwise the
/// occupancy is 0 and a launch fails). Returns the function's static shared memory.
int CudaBackend::opt_in_shared(CUfunction f, size_t dynamic, const std::string& kernel) {
  int static_smem = 0;
  check(m_api->cuFuncGetAttribute(&static_smem, CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES, f),
        "cuFuncGetAttribute " + kernel, kernel);
  if (static_cast<size_t>(static_smem) + dynamic > kDefaultSharedBytes)
    check(m_api->cuFuncSetAttribute(f, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                    static_cast<int>(dynamic)),
          kernel + ": opting in to " + std::to_string(dynamic) +
              " bytes of dynamic shared memory (besides " + std::to_string(static_smem) +
              " static)",
          kernel);
  return static_smem;
}

Device CudaBackend::describe(int i) {
  Device d;
  d.index = i;
  CUdevice dev = 0;
  if (m_api->cuDeviceGet(&dev, i) != CUDA_SUCCESS) return d;
  char name[256] = {};
  m_api->cuDeviceGetName(name, sizeof name - 1, dev);
  d.name = name;
  auto attr = [&](CUdevice_attribute a) {
    int v = 0;
    m_api->cuDeviceGetAttribute(&v, a, dev);
    return v;
  };
  d.major = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  d.minor = attr(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  d.sms = attr(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  d.clock_khz = attr(CU_DEVICE_ATTRIBUTE_CLOCK_RATE);
  d.memory_clock_khz = attr(CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE);
  d.l2_bytes = attr(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  d.max_blocks_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR);
  d.max_threads_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR);
  d.cooperative = attr(CU_DEVICE_ATTRIBUTE_COOPERATIVE_LAUNCH) != 0;
  m_api->cuDeviceTotalMem(&d.memory, dev);
  gpu::DeviceAttributes& a = d.attributes;
  a.name = d.name;
  a.compute_capability = d.cc();
  a.sm_count = d.sms;
  a.max_threads_per_sm = d.max_threads_per_sm;
  a.max_threads_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  a.max_blocks_per_sm = d.max_blocks_per_sm;
  a.registers_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR);
  a.max_registers_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK);
  a.shared_memory_per_sm = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  a.max_shared_memory_per_block = attr(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  a.reserved_shared_memory_per_block = attr(CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK);
  a.warp_size = attr(CU_DEVICE_ATTRIBUTE_WARP_SIZE);
  a.l2_bytes = d.l2_bytes;
  a.memory_bytes = static_cast<int64_t>(d.memory);
  a.clock_mhz = d.clock_khz / 1000;
  a.memory_clock_mhz = d.memory_clock_khz / 1000;
  a.memory_bus_bits = attr(CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH);
  return d;
}

void CudaBackend::ensure_context() {
  if (!m_api) throw RunnerError(m_reason == "no CUDA device" ? "no_device" : "no_driver", m_reason);
  if (m_ctx) return;
  int n = 0;
  m_api->cuDeviceGetCount(&n);
  if (m_ordinal < 0 || m_ordinal >= n)
    throw RunnerError("no_device", "no CUDA device " + std::to_string(m_ordinal) + " (" +
                                       std::to_string(n) + " found)");
  m_dev = describe(m_ordinal);
  check(m_api->cuDeviceGet(&m_device, m_ordinal), "cuDeviceGet");
  PrimaryContext ctx;
  check(ctx.retain(*m_api, m_device), "cuDevicePrimaryCtxRetain");
  check(m_api->cuCtxSetCurrent(ctx.get()), "cuCtxSetCurrent");
  StreamHandle stream(m_api->cuStreamDestroy);
  check(m_api->cuStreamCreate(stream.out(), CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  // Kept only once all of it worked, so that a failure leaves no half-made context behind.
  m_stream_owner = std::move(stream);
  m_stream = m_stream_owner.get();
  m_ctx = std::move(ctx);
}

void CudaBackend::release_bundle() {
  if (!m_api) return;
  m_loaded.clear();
  m_ptrs.clear();
  m_memory.clear();
  m_modules.clear();
  m_manifest = BundleManifest{};
}

/// Everything, in the order the driver wants: what lives in the context, then its stream,
/// then the hold on the context.
void CudaBackend::release() {
  if (!m_api) return;
  release_bundle();
  m_calibration.reset();
  m_stream_owner.reset();
  m_stream = nullptr;
  m_ctx.reset();
}

}  // namespace cuda_backend

std::unique_ptr<Backend> make_cuda_backend(int device) {
  return std::make_unique<cuda_backend::CudaBackend>(device);
}

std::unique_ptr<Backend> make_cuda_backend(const gpu::CudaApi& api, int device,
                                           const std::string& cupti_library) {
  CudaBackendApis apis;
  apis.driver = &api;
  apis.cupti_library = cupti_library;
  return std::make_unique<cuda_backend::CudaBackend>(apis, device);
}

std::unique_ptr<Backend> make_cuda_backend(const CudaBackendApis& apis, int device) {
  return std::make_unique<cuda_backend::CudaBackend>(apis, device);
}

}  // namespace souffle::runner
