// ---- what follows is the same for every model ----

static double element(const unsigned char* p, DType t, size_t i) {
  switch (t) {
    case F32: { float v; std::memcpy(&v, p + 4 * i, 4); return v; }
    case F64: { double v; std::memcpy(&v, p + 8 * i, 8); return v; }
    case F16: {
      uint16_t h; std::memcpy(&h, p + 2 * i, 2);
      int e = (h >> 10) & 31, m = h & 1023;
      double v = e == 0 ? std::ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY)
                                             : std::ldexp(1024 + m, e - 25);
      return (h & 0x8000) ? -v : v;
    }
    case BF16: {
      uint16_t h; std::memcpy(&h, p + 2 * i, 2);
      uint32_t b = uint32_t(h) << 16; float v; std::memcpy(&v, &b, 4); return v;
    }
    case I8: return double(reinterpret_cast<const int8_t*>(p)[i]);
    case I16: { int16_t v; std::memcpy(&v, p + 2 * i, 2); return v; }
    case I32: { int32_t v; std::memcpy(&v, p + 4 * i, 4); return v; }
    case I64: { int64_t v; std::memcpy(&v, p + 8 * i, 8); return double(v); }
    case U8: case BOOL: return double(p[i]);
    case U16: { uint16_t v; std::memcpy(&v, p + 2 * i, 2); return v; }
    case U32: { uint32_t v; std::memcpy(&v, p + 4 * i, 4); return v; }
    case U64: { uint64_t v; std::memcpy(&v, p + 8 * i, 8); return double(v); }
  }
  return 0;
}
static size_t element_size(DType t) {
  switch (t) {
    case F64: case I64: case U64: return 8;
    case F32: case I32: case U32: return 4;
    case F16: case BF16: case I16: case U16: return 2;
    default: return 1;
  }
}

static bool read_file(const std::string& path, std::vector<unsigned char>& out, size_t bytes,
                      size_t offset = 0) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  out.resize(bytes);
  bool ok = std::fseek(f, long(offset), SEEK_SET) == 0 &&
            (bytes == 0 || std::fread(out.data(), 1, bytes, f) == bytes);
  std::fclose(f);
  return ok;
}

#define SETUP(call)                                                              \
  do {                                                                           \
    cudaError_t e_ = (call);                                                     \
    if (e_ != cudaSuccess) {                                                     \
      std::fprintf(stderr, "setup error: %s: %s\n", #call, cudaGetErrorString(e_)); \
      return 2;                                                                  \
    }                                                                            \
  } while (0)

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char** argv) {
  std::string dir = BUNDLE_DIR;
  double rtol = kRtol, atol = kAtol;
  int runs = 20, device = 0;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    bool has_value = i + 1 < argc;
    if (a == "--data" && has_value) dir = argv[++i];
    else if (a == "--rtol" && has_value) rtol = std::atof(argv[++i]);
    else if (a == "--atol" && has_value) atol = std::atof(argv[++i]);
    else if (a == "--runs" && has_value) runs = std::max(1, std::atoi(argv[++i]));
    else if (a == "--device" && has_value) device = std::atoi(argv[++i]);
    else {
      std::fprintf(stderr,
                   "usage: %s [--data DIR] [--rtol R] [--atol A] [--runs 20] [--device N]\n"
                   "exit 0: outputs match, 1: mismatch, 2: setup error\n", argv[0]);
      return 2;
    }
  }
  const int n_tensors = int(sizeof(kTensors) / sizeof(kTensors[0]));
  const int n_kernels = int(sizeof(kKernels) / sizeof(kKernels[0]));

  SETUP(cudaSetDevice(device));
  cudaDeviceProp prop;
  SETUP(cudaGetDeviceProperties(&prop, device));
  std::printf("%s on %s (sm_%d%d, %d SMs)\n", kModel, prop.name, prop.major, prop.minor,
              prop.multiProcessorCount);

  // Every kernel's co-residency first: a cooperative grid larger than what the GPU holds at
  // once would deadlock in grid.sync(), so the launch would be refused.
  for (int k = 0; k < n_kernels; ++k) {
    int per_sm = 0;
    SETUP(kKernels[k].setup(&per_sm));
    long long fits = (long long)per_sm * prop.multiProcessorCount;
    if (per_sm == 0 || (kKernels[k].cooperative && kKernels[k].grid > fits)) {
      std::fprintf(stderr,
                   "setup error: %s needs %d co-resident blocks of %d threads, but %s holds %lld "
                   "(%d per SM x %d SMs)\n",
                   kKernels[k].name, kKernels[k].grid, kKernels[k].block, prop.name, fits, per_sm,
                   prop.multiProcessorCount);
      return 2;
    }
    if (kKernels[k].cooperative && !prop.cooperativeLaunch) {
      std::fprintf(stderr, "setup error: %s needs a cooperative launch, which %s lacks\n",
                   kKernels[k].name, prop.name);
      return 2;
    }
  }

  std::vector<void*> dev(n_tensors, nullptr);
  std::vector<unsigned char> host;
  for (int i = 0; i < n_tensors; ++i) {
    const TensorInfo& t = kTensors[i];
    SETUP(cudaMalloc(&dev[i], t.bytes > 0 ? t.bytes : 16));
    bool loaded = true;
    if (t.kind == WEIGHT)
      loaded = read_file(dir + "/weights.bin", host, t.bytes, size_t(t.weight_offset));
    else if (t.kind == INPUT)
      loaded = read_file(dir + "/" + t.file, host, t.bytes);
    if (!loaded) {
      std::fprintf(stderr, "setup error: cannot read %s of %s from %s\n",
                   t.kind == WEIGHT ? "weights.bin" : t.file, t.name, dir.c_str());
      return 2;
    }
    if (t.kind == WEIGHT || t.kind == INPUT)
      SETUP(cudaMemcpy(dev[i], host.data(), t.bytes, cudaMemcpyHostToDevice));
  }
  std::vector<std::vector<void*>> args(n_kernels);
  for (int k = 0; k < n_kernels; ++k)
    for (int a = 0; a < kKernels[k].n_args; ++a) args[k].push_back(&dev[kKernels[k].args[a]]);

  cudaStream_t stream;
  SETUP(cudaStreamCreate(&stream));
  std::vector<cudaEvent_t> events(n_kernels + 1);
  for (cudaEvent_t& e : events) SETUP(cudaEventCreate(&e));
  std::vector<std::vector<double>> kernel_ms(n_kernels);
  std::vector<double> total_ms;

  // Run 0 warms up; runs 1..N are timed; the outputs checked are the last run's (buffers the
  // kernels write start zeroed in each run, so every run computes them afresh).
  for (int run = 0; run <= runs; ++run) {
    for (int i = 0; i < n_tensors; ++i)
      if (kTensors[i].kind != WEIGHT && kTensors[i].kind != INPUT)
        SETUP(cudaMemsetAsync(dev[i], 0, kTensors[i].bytes, stream));
    SETUP(cudaEventRecord(events[0], stream));
    for (int k = 0; k < n_kernels; ++k) {
      cudaError_t e = kKernels[k].launch(args[k].data(), stream);
      if (e != cudaSuccess) {
        std::fprintf(stderr, "setup error: launching %s: %s\n", kKernels[k].name,
                     cudaGetErrorString(e));
        return 2;
      }
      SETUP(cudaEventRecord(events[k + 1], stream));
    }
    cudaError_t e = cudaStreamSynchronize(stream);
    if (e != cudaSuccess) {
      std::fprintf(stderr, "error: the kernels failed: %s\n", cudaGetErrorString(e));
      return 2;
    }
    if (run == 0) continue;
    float ms = 0;
    for (int k = 0; k < n_kernels; ++k) {
      SETUP(cudaEventElapsedTime(&ms, events[k], events[k + 1]));
      kernel_ms[k].push_back(ms);
    }
    SETUP(cudaEventElapsedTime(&ms, events[0], events[n_kernels]));
    total_ms.push_back(ms);
  }

  bool pass = true;
  int checked = 0;
  for (int i = 0; i < n_tensors; ++i) {
    const TensorInfo& t = kTensors[i];
    if (!t.is_model_output || t.expected[0] == '\0') continue;
    std::vector<unsigned char> want, got(t.bytes);
    if (!read_file(dir + "/" + t.expected, want, t.bytes)) {
      std::fprintf(stderr, "setup error: cannot read %s\n", t.expected);
      return 2;
    }
    SETUP(cudaMemcpy(got.data(), dev[i], t.bytes, cudaMemcpyDeviceToHost));
    size_t n = t.bytes / element_size(t.dtype);
    // Element by element, as souffle-cli verify judges: |got - want| <= atol + rtol |want|, a
    // NaN only where the reference has one; relative L2 and the largest error beside.
    double err = 0, norm = 0, max_abs = 0;
    size_t mismatches = 0;
    for (size_t j = 0; j < n; ++j) {
      double a = element(got.data(), t.dtype, j), b = element(want.data(), t.dtype, j);
      bool same = (std::isnan(a) && std::isnan(b)) || a == b ||
                  std::fabs(a - b) <= atol + rtol * std::fabs(b);
      if (!same) ++mismatches;
      if (std::isfinite(a) && std::isfinite(b)) {
        err += (a - b) * (a - b);
        norm += b * b;
        max_abs = std::max(max_abs, std::fabs(a - b));
      }
    }
    double rel = std::sqrt(err) / std::max(std::sqrt(norm), 1e-30);
    bool ok = mismatches == 0;
    std::printf("output %-32s %zu of %zu elements outside, max abs error %.3e, rel. L2 %.3e %s\n",
                t.name, mismatches, n, max_abs, rel, ok ? "ok" : "MISMATCH");
    pass = pass && ok;
    ++checked;
  }
  if (!kHaveExpected) std::printf("no expected outputs in this bundle: check skipped\n");

  std::printf("\n%-24s %12s %12s\n", "kernel", "median ms", "min ms");
  for (int k = 0; k < n_kernels; ++k)
    std::printf("%-24s %12.4f %12.4f\n", kKernels[k].name, median(kernel_ms[k]),
                *std::min_element(kernel_ms[k].begin(), kernel_ms[k].end()));
  std::printf("%-24s %12.4f %12.4f   (%d runs)\n", "total", median(total_ms),
              *std::min_element(total_ms.begin(), total_ms.end()), runs);
  if (!pass) {
    std::printf("FAIL: an output has elements outside rtol %g + atol %g\n", rtol, atol);
    return 1;
  }
  if (checked)
    std::printf("PASS (%d outputs, every element within rtol %g + atol %g)\n", checked, rtol,
                atol);
  else
    std::printf("done (0 outputs checked)\n");
  return 0;
}
