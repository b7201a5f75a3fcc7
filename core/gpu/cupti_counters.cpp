#include "core/gpu/cupti_counters.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>
#include <mutex>

#include "core/gpu/cuda_api.h"
#include "core/gpu/cupti.h"
#include "core/gpu/cupti_api.h"

namespace souffle::gpu {

const std::vector<std::string>& counter_metrics() {
  static const std::vector<std::string> metrics = {
      "dram__bytes_read.sum",
      "dram__bytes_write.sum",
      "sm__warps_active.avg.pct_of_peak_sustained_active",
  };
  return metrics;
}

namespace {

/// A value CUPTI evaluated, or -1 when it is not a measurement.
double measured(double v) {
  return std::isfinite(v) && v >= 0 ? v : -1;
}

/// A percentage as a fraction; -1 when not a measurement or above 100% beyond rounding.
double fraction_of_percent(double pct) {
  double v = measured(pct);
  if (v < 0 || v > 100.0 + 1e-6) return -1;
  return std::min(v, 100.0) / 100.0;
}

}  // namespace

std::vector<KernelCounters> counters_from_ranges(const std::vector<RangeValues>& ranges,
                                                 const std::vector<std::string>& order,
                                                 std::string* problem) {
  auto fail = [&](const std::string& why) {
    if (problem) *problem = why;
    return std::vector<KernelCounters>{};
  };
  if (order.empty()) return fail("nothing was launched");
  if (ranges.size() != order.size())
    return fail("CUPTI recorded " + std::to_string(ranges.size()) + " ranges, " +
                std::to_string(order.size()) + " kernels were launched");
  const size_t metrics = counter_metrics().size();
  std::vector<KernelCounters> out;
  out.reserve(order.size());
  for (size_t i = 0; i < order.size(); ++i) {
    const auto& [name, values] = ranges[i];
    const std::string launch = "launch " + std::to_string(i) + " (" + order[i] + ")";
    if (name != order[i] && name != std::to_string(i))
      return fail("CUPTI named range " + std::to_string(i) + " '" + name + "', expected " + launch);
    if (values.size() != metrics)
      return fail(launch + ": CUPTI gave " + std::to_string(values.size()) + " values for " +
                  std::to_string(metrics) + " metrics");
    KernelCounters c;
    c.name = order[i];
    c.dram_read_bytes = measured(values[0]);
    c.dram_write_bytes = measured(values[1]);
    c.achieved_occupancy = fraction_of_percent(values[2]);
    out.push_back(std::move(c));
  }
  return out;
}

namespace {

#define SOUFFLE_STR2(x) #x
#define SOUFFLE_STR(x) SOUFFLE_STR2(x)

struct LoadedApi {
  CuptiProfilerApi api;
  std::string reason;
};

LoadedApi load(const std::string& library) {
  LoadedApi l;
  std::string why;
  void* h = open_cupti(library, &l.api.library, &why);
  if (!h) {
    l.reason = library.empty() ? "libcupti not found (libcupti.so in the CUDA toolkit's "
                                 "extras/CUPTI/lib64, lib64 or lib, or SOUFFLE_CUPTI=FILE)"
                               : library + " could not be loaded (" +
                                     (why.empty() ? std::string("no reason given") : why) + ")";
    return l;
  }
  std::string missing;
#define SOUFFLE_CUPTI_LOOKUP(f)                                         \
  l.api.f = reinterpret_cast<decltype(&::f)>(dlsym(h, SOUFFLE_STR(f))); \
  if (!l.api.f) missing += std::string(missing.empty() ? "" : ", ") + SOUFFLE_STR(f);
  SOUFFLE_CUPTI_PROFILER_FUNCTIONS(SOUFFLE_CUPTI_LOOKUP)
#undef SOUFFLE_CUPTI_LOOKUP
  l.api.cuptiGetErrorMessage =
      reinterpret_cast<decltype(&::cuptiGetErrorMessage)>(dlsym(h, "cuptiGetErrorMessage"));
  if (!missing.empty())
    l.reason =
        l.api.library + " lacks the range profiler (" + missing + "): it needs CUDA 12.6 or newer";
  return l;
}

}  // namespace

const CuptiProfilerApi* cupti_profiler_api(const std::string& library, std::string* reason) {
  static std::mutex mu;
  static auto* loaded = new std::map<std::string, LoadedApi>();
  std::lock_guard<std::mutex> lock(mu);
  auto it = loaded->find(library);
  if (it == loaded->end()) it = loaded->emplace(library, load(library)).first;
  if (!it->second.reason.empty()) {
    if (reason) *reason = it->second.reason;
    return nullptr;
  }
  return &it->second.api;
}

std::string CuptiProfilerApi::error_text(CUptiResult r) const {
  const char* name = nullptr;
  std::string s = cuptiGetResultString(r, &name) == CUPTI_SUCCESS && name
                      ? name
                      : "CUPTI error " + std::to_string(static_cast<int>(r));
  const char* message = nullptr;
  if (cuptiGetErrorMessage && cuptiGetErrorMessage(r, &message) == CUPTI_SUCCESS && message) {
    std::string m = message;
    while (!m.empty() && std::isspace(static_cast<unsigned char>(m.back()))) m.pop_back();
    if (!m.empty() && m != s) s += ": " + m;
  }
  return s;
}

bool CuptiProfilerApi::ok(CUptiResult r, const char* call, std::string* error) const {
  if (r == CUPTI_SUCCESS) return true;
  if (error) *error = std::string(call) + ": " + error_text(r);
  return false;
}

namespace {

/// A CUPTI parameter block: zeroed (pPriv and every field left unset are null), its size set as
/// this build's headers lay it out, which lets an older or newer library read it.
template <class T>
T params(size_t struct_size) {
  T p{};
  p.structSize = struct_size;
  return p;
}
#define SOUFFLE_CUPTI_PARAMS(T) params<T>(T##_STRUCT_SIZE)

/// A host object (the metric evaluator for one chip), released when it goes.
class HostObject {
 public:
  explicit HostObject(const CuptiProfilerApi& api) : m_api(api) {}
  ~HostObject() {
    if (!m_object) return;
    auto p = SOUFFLE_CUPTI_PARAMS(CUpti_Profiler_Host_Deinitialize_Params);
    p.pHostObject = m_object;
    m_api.cuptiProfilerHostDeinitialize(&p);
  }
  HostObject(const HostObject&) = delete;
  HostObject& operator=(const HostObject&) = delete;

  bool initialize(const std::string& chip, const std::vector<uint8_t>& availability,
                  std::string* error) {
    auto p = SOUFFLE_CUPTI_PARAMS(CUpti_Profiler_Host_Initialize_Params);
    p.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
    p.pChipName = chip.c_str();
    p.pCounterAvailabilityImage = availability.empty() ? nullptr : availability.data();
    if (!m_api.ok(m_api.cuptiProfilerHostInitialize(&p), "cuptiProfilerHostInitialize", error)) {
      if (error) *error += " (chip " + chip + ")";
      return false;
    }
    m_object = p.pHostObject;
    return true;
  }

  /// The configuration image for `metrics` and the passes it needs. A host object takes its
  /// metrics once: build one image per object.
  bool config_image(const std::vector<std::string>& metrics, std::vector<uint8_t>* image,
                    size_t* passes, std::string* error) const {
    if (metrics.empty()) {
      if (error) *error = "no metrics asked for";
      return false;
    }
    // CUPTI refuses a list with an unknown name without saying which: ask about each first.
    std::vector<const char*> names;
    for (const std::string& m : metrics) {
      auto p = SOUFFLE_CUPTI_PARAMS(CUpti_Profiler_Host_GetMetricProperties_Params);
      p.pHostObject = m_object;
      p.pMetricName = m.c_str();
      if (!m_api.ok(m_api.cuptiProfilerHostGetMetricProperties(&p),
                    "cuptiProfilerHostGetMetricProperties", error)) {
        if (error) *error = "metric " + m + " is unknown to this chip (" + *error + ")";
        return false;
      }
      names.push_back(m.c_str());
    }
    auto add = SOUFFLE_CUPTI_PARAMS(CUpti_Profiler_Host_ConfigAddMetrics_Params);
    add.pHostObject = m_object;
    add.ppMetricNames = names.data();
    add.numMetrics = names.size();
    if (!m_api.ok(m_api.cuptiProfilerHostConfigAddMetrics(&add),
                  "cuptiProfilerHostConfigAddMetrics", error))
      return false;
    auto size = SOUFFLE_CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImageSize_Params);
    size.pHostObject = m_object;
    if (!m_api.ok(m_api.cuptiProfilerHostGetConfigImageSize(&size),
                  "cuptiProfilerHostGetConfigImageSize", error))
      return false;
    std::vector<uint8_t> bytes(size.configImageSize);
    auto get = SOUFFLE_CUPTI_PARAMS(CUpti_Profiler_Host_GetConfigImage_Params);
    get.pHostObject = m_object;
    get.configImageSize = bytes.size();
    get.pConfigImage = bytes.data();
    if (!m_api.ok(m_api.cuptiProfilerHostGetConfigImage(&get), "cuptiProfilerHostGetConfigImage",
                  error))
      return false;
    auto np = SOUFFLE_CUPTI_PARAMS(CUpti_Profiler_Host_GetNumOfPasses_Params);
    np.configImageSize = bytes.size();
    np.pConfigImage = bytes.data();
    if (!m_api.ok(m_api.cuptiProfilerHostGetNumOfPasses(&np), "cuptiProfilerHostGetNumOfPasses",
                  error))
      return false;
    if (bytes.empty() || np.numOfPasses == 0) {
      if (error) *error = "CUPTI made an empty configuration image";
      return false;
    }
    *image = std::move(bytes);
    *passes = np.numOfPasses;
    return true;
  }

  CUpti_Profiler_Host_Object* get() const { return m_object; }

 private:
  const CuptiProfilerApi& m_api;
  CUpti_Profiler_Host_Object* m_object = nullptr;
};

/// Why the device refuses profiling, from cuptiProfilerDeviceSupported's flags; empty when it
/// does not.
std::string unsupported_reason(const CUpti_Profiler_DeviceSupported_Params& p) {
  // UNKNOWN is let through: the calls that follow say what fails, if anything does.
  if (p.isSupported != CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED &&
      p.isSupported != CUPTI_PROFILER_CONFIGURATION_DISABLED)
    return "";
  std::string why;
  auto add = [&](CUpti_Profiler_Support_Level level, const char* what) {
    if (level == CUPTI_PROFILER_CONFIGURATION_UNSUPPORTED ||
        level == CUPTI_PROFILER_CONFIGURATION_DISABLED)
      why +=
          std::string(why.empty() ? "" : "; ") + what +
          (level == CUPTI_PROFILER_CONFIGURATION_DISABLED ? " (supported, but disabled here)" : "");
  };
  add(p.architecture, "the GPU's architecture has no profiling support (compute capability < 7.0)");
  add(p.sli, "SLI is enabled");
  add(p.vGpu, "the virtual GPU does not allow profiling");
  add(p.confidentialCompute, "confidential computing is enabled");
  add(p.cmp, "the device is a crypto mining processor");
  add(p.wsl, "profiling is not supported under WSL");
  return why.empty() ? "the device does not support profiling" : why;
}

}  // namespace

bool counter_config_image(const std::string& chip, const std::vector<uint8_t>& availability,
                          const std::vector<std::string>& metrics, std::vector<uint8_t>* image,
                          size_t* passes, std::string* error, const std::string& library) {
  const CuptiProfilerApi* api = cupti_profiler_api(library, error);
  if (!api) return false;
  HostObject host(*api);
  return host.initialize(chip, availability, error) &&
         host.config_image(metrics, image, passes, error);
}

struct CuptiCounterSession::Impl {
  const CuptiProfilerApi& api;
  CUcontext ctx = nullptr;
  bool profiler_initialized = false;
  std::string chip;
  std::unique_ptr<HostObject> host;
  std::vector<uint8_t> config;
  size_t passes = 0;
  CUpti_RangeProfiler_Object* profiler = nullptr;
  std::vector<uint8_t> counter_data;
  bool running = false;

  explicit Impl(const CuptiProfilerApi& a) : api(a) {}
  ~Impl() {
    if (running) {
      auto p = SOUFFLE_CUPTI_PARAMS(CUpti_RangeProfiler_Stop_Params);
      p.pRangeProfilerObject = profiler;
      api.cuptiRangeProfilerStop(&p);
    }
    if (profiler) {
      auto p = SOUFFLE_CUPTI_PARAMS(CUpti_RangeProfiler_Disable_Params);
      p.pRangeProfilerObject = profiler;
      api.cuptiRangeProfilerDisable(&p);
    }
    host.reset();
    if (profiler_initialized) {
      auto p = SOUFFLE_CUPTI_PARAMS(CUpti_Profiler_DeInitialize_Params);
      api.cuptiProfilerDeInitialize(&p);
    }
  }
};

CuptiCounterSession::CuptiCounterSession(std::unique_ptr<Impl> impl) : m_impl(std::move(impl)) {}
CuptiCounterSession::~CuptiCounterSession() = default;
std::string CuptiCounterSession::chip() const {
  return m_impl->chip;
}
size_t CuptiCounterSession::passes() const {
  return m_impl->passes;
}

std::unique_ptr<CuptiCounterSession> CuptiCounterSession::open(void* cu_context, int device_ordinal,
                                                               std::string* reason,
                                                               const std::string& library) {
  std::string why;
  const CuptiProfilerApi* api = cupti_profiler_api(library, &why);
  const CudaApi* cu = api && cu_context ? cuda_api(&why) : nullptr;
  if (api && !cu_context) why = "no CUDA context to profile";
  if (!cu) {
    if (reason) *reason = "CUPTI's range profiler is not available: " + why;
    return nullptr;
  }
  return open(*api, *cu, cu_context, device_ordinal, reason);
}

std::unique_ptr<CuptiCounterSession> CuptiCounterSession::open(const CuptiProfilerApi& profiler,
                                                               const CudaApi& cu, void* cu_context,
                                                               int device_ordinal,
                                                               std::string* reason) {
  std::string why;
  auto fail = [&]() {
    if (reason) *reason = "CUPTI's range profiler is not available: " + why;
    return nullptr;
  };
  const CuptiProfilerApi* api = &profiler;
  if (!cu_context) {
    why = "no CUDA context to profile";
    return fail();
  }
  CUdevice device = 0;
  if (CUresult r = cu.cuDeviceGet(&device, device_ordinal); r != CUDA_SUCCESS) {
    why = "cuDeviceGet(" + std::to_string(device_ordinal) + "): " + cu.error_text(r);
    return fail();
  }

  auto impl = std::make_unique<Impl>(*api);
  impl->ctx = static_cast<CUcontext>(cu_context);
  auto init = SOUFFLE_CUPTI_PARAMS(CUpti_Profiler_Initialize_Params);
  if (!api->ok(api->cuptiProfilerInitialize(&init), "cuptiProfilerInitialize", &why)) return fail();
  impl->profiler_initialized = true;

  auto supported = SOUFFLE_CUPTI_PARAMS(CUpti_Profiler_DeviceSupported_Params);
  supported.cuDevice = device;
  supported.api = CUPTI_PROFILER_RANGE_PROFILING;
  if (!api->ok(api->cuptiProfilerDeviceSupported(&supported), "cuptiProfilerDeviceSupported", &why))
    return fail();
  if (std::string no = unsupported_reason(supported); !no.empty()) {
    why = no;
    return fail();
  }

  auto chip = SOUFFLE_CUPTI_PARAMS(CUpti_Device_GetChipName_Params);
  chip.deviceIndex = static_cast<size_t>(device_ordinal);
  if (!api->ok(api->cuptiDeviceGetChipName(&chip), "cuptiDeviceGetChipName", &why)) return fail();
  impl->chip = chip.pChipName ? chip.pChipName : "";

  // Which counters this device lets the process read (some are withheld on virtual GPUs): the
  // size first, then the image. It must be read before the range profiler is enabled.
  auto avail = SOUFFLE_CUPTI_PARAMS(CUpti_Profiler_GetCounterAvailability_Params);
  avail.ctx = impl->ctx;
  if (!api->ok(api->cuptiProfilerGetCounterAvailability(&avail),
               "cuptiProfilerGetCounterAvailability", &why))
    return fail();
  std::vector<uint8_t> availability(avail.counterAvailabilityImageSize);
  avail.pCounterAvailabilityImage = availability.data();
  if (!api->ok(api->cuptiProfilerGetCounterAvailability(&avail),
               "cuptiProfilerGetCounterAvailability", &why))
    return fail();

  impl->host = std::make_unique<HostObject>(*api);
  if (!impl->host->initialize(impl->chip, availability, &why) ||
      !impl->host->config_image(counter_metrics(), &impl->config, &impl->passes, &why))
    return fail();

  auto enable = SOUFFLE_CUPTI_PARAMS(CUpti_RangeProfiler_Enable_Params);
  enable.ctx = impl->ctx;
  if (!api->ok(api->cuptiRangeProfilerEnable(&enable), "cuptiRangeProfilerEnable", &why))
    return fail();
  impl->profiler = enable.pRangeProfilerObject;
  return std::unique_ptr<CuptiCounterSession>(new CuptiCounterSession(std::move(impl)));
}

bool CuptiCounterSession::start(size_t max_ranges, std::string* error) {
  Impl& s = *m_impl;
  const CuptiProfilerApi& api = s.api;
  if (s.running) {
    if (error) *error = "the range profiler is already started";
    return false;
  }
  if (max_ranges == 0) {
    if (error) *error = "no kernel launches to profile";
    return false;
  }
  std::vector<const char*> names;
  for (const std::string& m : counter_metrics()) names.push_back(m.c_str());
  auto size = SOUFFLE_CUPTI_PARAMS(CUpti_RangeProfiler_GetCounterDataSize_Params);
  size.pRangeProfilerObject = s.profiler;
  size.pMetricNames = names.data();
  size.numMetrics = names.size();
  size.maxNumOfRanges = max_ranges;
  size.maxNumRangeTreeNodes = static_cast<uint32_t>(max_ranges);
  if (!api.ok(api.cuptiRangeProfilerGetCounterDataSize(&size),
              "cuptiRangeProfilerGetCounterDataSize", error))
    return false;
  s.counter_data.assign(size.counterDataSize, 0);
  auto init = SOUFFLE_CUPTI_PARAMS(CUpti_RangeProfiler_CounterDataImage_Initialize_Params);
  init.pRangeProfilerObject = s.profiler;
  init.counterDataSize = s.counter_data.size();
  init.pCounterData = s.counter_data.data();
  if (!api.ok(api.cuptiRangeProfilerCounterDataImageInitialize(&init),
              "cuptiRangeProfilerCounterDataImageInitialize", error))
    return false;

  // One range per kernel launch; CUPTI replays each kernel for every pass the metrics need.
  auto config = SOUFFLE_CUPTI_PARAMS(CUpti_RangeProfiler_SetConfig_Params);
  config.pRangeProfilerObject = s.profiler;
  config.configSize = s.config.size();
  config.pConfig = s.config.data();
  config.counterDataImageSize = s.counter_data.size();
  config.pCounterDataImage = s.counter_data.data();
  config.range = CUPTI_AutoRange;
  config.replayMode = CUPTI_KernelReplay;
  config.maxRangesPerPass = max_ranges;
  config.numNestingLevels = 1;
  config.minNestingLevel = 1;
  config.passIndex = 0;
  config.targetNestingLevel = 1;
  if (!api.ok(api.cuptiRangeProfilerSetConfig(&config), "cuptiRangeProfilerSetConfig", error))
    return false;
  auto start = SOUFFLE_CUPTI_PARAMS(CUpti_RangeProfiler_Start_Params);
  start.pRangeProfilerObject = s.profiler;
  if (!api.ok(api.cuptiRangeProfilerStart(&start), "cuptiRangeProfilerStart", error)) return false;
  s.running = true;
  return true;
}

std::vector<RangeValues> CuptiCounterSession::stop(std::string* error) {
  Impl& s = *m_impl;
  const CuptiProfilerApi& api = s.api;
  if (!s.running) {
    if (error) *error = "the range profiler was not started";
    return {};
  }
  s.running = false;
  auto stop = SOUFFLE_CUPTI_PARAMS(CUpti_RangeProfiler_Stop_Params);
  stop.pRangeProfilerObject = s.profiler;
  if (!api.ok(api.cuptiRangeProfilerStop(&stop), "cuptiRangeProfilerStop", error)) return {};
  if (!stop.isAllPassSubmitted) {
    if (error)
      *error = "cuptiRangeProfilerStop: not every pass of the " + std::to_string(s.passes) +
               " the metrics need was collected";
    return {};
  }
  auto decode = SOUFFLE_CUPTI_PARAMS(CUpti_RangeProfiler_DecodeData_Params);
  decode.pRangeProfilerObject = s.profiler;
  if (!api.ok(api.cuptiRangeProfilerDecodeData(&decode), "cuptiRangeProfilerDecodeData", error))
    return {};
  if (decode.numOfRangeDropped > 0) {
    if (error)
      *error = "cuptiRangeProfilerDecodeData: CUPTI dropped " +
               std::to_string(decode.numOfRangeDropped) +
               " ranges (more kernel launches than start() was told)";
    return {};
  }
  auto info = SOUFFLE_CUPTI_PARAMS(CUpti_RangeProfiler_GetCounterDataInfo_Params);
  info.pCounterDataImage = s.counter_data.data();
  info.counterDataImageSize = s.counter_data.size();
  if (!api.ok(api.cuptiRangeProfilerGetCounterDataInfo(&info),
              "cuptiRangeProfilerGetCounterDataInfo", error))
    return {};

  std::vector<const char*> names;
  for (const std::string& m : counter_metrics()) names.push_back(m.c_str());
  std::vector<RangeValues> out;
  out.reserve(info.numTotalRanges);
  for (size_t i = 0; i < info.numTotalRanges; ++i) {
    auto range = SOUFFLE_CUPTI_PARAMS(CUpti_RangeProfiler_CounterData_GetRangeInfo_Params);
    range.pCounterDataImage = s.counter_data.data();
    range.counterDataImageSize = s.counter_data.size();
    range.rangeIndex = i;
    range.rangeDelimiter = "/";
    if (!api.ok(api.cuptiRangeProfilerCounterDataGetRangeInfo(&range),
                "cuptiRangeProfilerCounterDataGetRangeInfo", error))
      return {};
    std::vector<double> values(names.size(), -1.0);
    auto eval = SOUFFLE_CUPTI_PARAMS(CUpti_Profiler_Host_EvaluateToGpuValues_Params);
    eval.pHostObject = s.host->get();
    eval.pCounterDataImage = s.counter_data.data();
    eval.counterDataImageSize = s.counter_data.size();
    eval.rangeIndex = i;
    eval.ppMetricNames = names.data();
    eval.numMetrics = names.size();
    eval.pMetricValues = values.data();
    if (!api.ok(api.cuptiProfilerHostEvaluateToGpuValues(&eval),
                "cuptiProfilerHostEvaluateToGpuValues", error))
      return {};
    out.emplace_back(range.rangeName ? range.rangeName : "", std::move(values));
  }
  return out;
}

}  // namespace souffle::gpu
