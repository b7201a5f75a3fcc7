// The calibration kernels souffle-runner's CUDA backend compiles (NVRTC) and times on the device:
// they measure the device, not a model. Compiled into the runner from this file
// (souffle_embed in core/session/CMakeLists.txt).
//
// souffle_empty: launch overhead. souffle_grid_sync: one grid barrier, `rounds` times.
// souffle_flag_rounds: per-tile flags as the generated kernels' FlagRelease and FlagWait use them.
// souffle_copy: a grid-stride copy (DRAM bandwidth).
#include <cooperative_groups.h>
extern "C" __global__ void souffle_empty() {}
extern "C" __global__ void souffle_grid_sync(int rounds) {
  cooperative_groups::grid_group g = cooperative_groups::this_grid();
  for (int i = 0; i < rounds; ++i) g.sync();
}
__device__ __forceinline__ int souffle_cal_ld_acquire(const int* p) {
  int v;
  asm volatile("ld.acquire.gpu.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}
// Counters only grow: each block waits until the blocks after it have released as often as it
// has (its own count after the release), so back-to-back launches need no reset.
extern "C" __global__ void souffle_flag_rounds(int* flags, int rounds, int tiles) {
  for (int r = 0; r < rounds; ++r) {
    __syncthreads();
    __shared__ int mine;
    if (threadIdx.x == 0) {
      __threadfence();
      mine = atomicAdd(&flags[blockIdx.x], 1) + 1;
      for (int j = 1; j <= tiles; ++j)
        while (souffle_cal_ld_acquire(&flags[(blockIdx.x + j) % gridDim.x]) < mine) {}
      __threadfence();
    }
    __syncthreads();
  }
}
extern "C" __global__ void souffle_copy(const float4* __restrict__ a, float4* __restrict__ b,
                                        unsigned long long n) {
  for (unsigned long long i = blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; i < n;
       i += (unsigned long long)gridDim.x * blockDim.x)
    b[i] = a[i];
}
