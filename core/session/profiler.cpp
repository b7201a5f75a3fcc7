#include "core/session/profiler.h"

#include "core/gpu/device.h"

namespace souffle {

namespace {

/// Knows whether a device exists but cannot launch kernels: running them and reading CUPTI
/// counters belongs in the separate runner process, which does not exist yet.
class NullProfiler : public Profiler {
 public:
  NullProfiler() {
    const gpu::DeviceInfo& d = gpu::cuda_device();
    m_reason = d.available() ? "profiling is not implemented yet (device " + d.device_name +
                                   " found, but kernels are not launched)"
                             : d.reason;
  }
  bool available() const override { return false; }
  std::string unavailable_reason() const override { return m_reason; }
  ProfileReport profile(const plan::FusionPlan&, const ProfileOptions&) override {
    ProfileReport r;
    r.error = m_reason;
    return r;
  }

 private:
  std::string m_reason;
};

}  // namespace

std::unique_ptr<Profiler> make_profiler() {
  return std::make_unique<NullProfiler>();
}

}  // namespace souffle
