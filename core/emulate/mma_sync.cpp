#include "core/emulate/mma_sync.h"

#include <cmath>
#include <cstring>
#include <set>

namespace souffle::emulate::mma {

using loop::FragmentRole;
using loop::MmaType;

std::pair<int, int> fragment_position(MmaType type, FragmentRole role, int lane, int i) {
  const int g = lane / 4, t = lane % 4;
  if (role == FragmentRole::Accumulator) return {g + 8 * (i / 2), 2 * t + i % 2};
  if (type == MmaType::TF32) {
    if (role == FragmentRole::MatrixA) return {g + 8 * (i % 2), t + 4 * (i / 2)};
    return {t + 4 * i, g};
  }
  if (role == FragmentRole::MatrixA) return {g + 8 * ((i / 2) % 2), 2 * t + i % 2 + 8 * (i / 4)};
  return {2 * t + i % 2 + 8 * (i / 2), g};
}

double round_tf32(double x) {
  float f = static_cast<float>(x);
  if (!std::isfinite(f)) return f;
  uint32_t bits;
  std::memcpy(&bits, &f, sizeof bits);
  bits = (bits + 0x1000u) & ~0x1fffu;
  std::memcpy(&f, &bits, sizeof bits);
  return f;
}

void warp_mma(MmaType type, const std::vector<double>& a, const std::vector<double>& b,
              const std::vector<double>& c, std::vector<double>& d) {
  const int K = static_cast<int>(loop::mma_sync_k(type));
  const int na = static_cast<int>(loop::mma_sync_elements(type, FragmentRole::MatrixA));
  const int nb = static_cast<int>(loop::mma_sync_elements(type, FragmentRole::MatrixB));
  const bool tf32 = type == MmaType::TF32;
  std::vector<double> A(16 * K), B(K * 8), C(16 * 8);
  for (int l = 0; l < 32; ++l) {
    for (int i = 0; i < na; ++i) {
      auto [r, col] = fragment_position(type, FragmentRole::MatrixA, l, i);
      const double v = a[l * na + i];
      A[r * K + col] = tf32 ? round_tf32(v) : v;
    }
    for (int i = 0; i < nb; ++i) {
      auto [r, col] = fragment_position(type, FragmentRole::MatrixB, l, i);
      const double v = b[l * nb + i];
      B[r * 8 + col] = tf32 ? round_tf32(v) : v;
    }
    for (int i = 0; i < 4; ++i) {
      auto [r, col] = fragment_position(type, FragmentRole::Accumulator, l, i);
      C[r * 8 + col] = c[l * 4 + i];
    }
  }
  d.assign(32 * 4, 0.0);
  for (int l = 0; l < 32; ++l)
    for (int i = 0; i < 4; ++i) {
      auto [r, col] = fragment_position(type, FragmentRole::Accumulator, l, i);
      double acc = static_cast<float>(C[r * 8 + col]);
      for (int k = 0; k < K; ++k) acc += A[r * K + k] * B[k * 8 + col];
      d[l * 4 + i] = static_cast<float>(acc);
    }
}

std::pair<int, int> ldmatrix_source(int lane, int h, bool trans, int element_bytes) {
  const int g = lane / 4, t = lane % 4;
  if (element_bytes == 4) return {g, t};
  return trans ? std::pair<int, int>{2 * t + h, g} : std::pair<int, int>{g, 2 * t + h};
}

namespace {

/// Wavefronts of one phase: the most distinct 4-byte words any bank serves.
int64_t phase_wavefronts(const std::vector<std::pair<int64_t, int64_t>>& accesses) {
  std::set<int64_t> words[32];
  for (const auto& [addr, width] : accesses)
    for (int64_t w = addr / 4; w <= (addr + width - 1) / 4; ++w) words[w % 32].insert(w);
  size_t most = 0;
  for (const auto& s : words) most = std::max(most, s.size());
  return static_cast<int64_t>(most);
}

}  // namespace

int64_t wavefronts(const std::vector<int64_t>& byte_addr, int64_t width, int64_t& ideal) {
  const size_t per_phase = width > 8 ? 8 : width > 4 ? 16 : 32;
  int64_t total = 0;
  ideal = 0;
  for (size_t p = 0; p < byte_addr.size(); p += per_phase) {
    std::vector<std::pair<int64_t, int64_t>> acc;
    for (size_t l = p; l < std::min(byte_addr.size(), p + per_phase); ++l)
      if (byte_addr[l] >= 0) acc.emplace_back(byte_addr[l], width);
    if (acc.empty()) continue;
    ++ideal;
    total += phase_wavefronts(acc);
  }
  return total;
}

int64_t ldmatrix_wavefronts(const std::vector<int64_t>& row_addr, int64_t count, int64_t& ideal) {
  int64_t total = 0;
  ideal = count;
  for (int64_t m = 0; m < count; ++m) {
    std::vector<std::pair<int64_t, int64_t>> acc;
    for (int64_t r = 0; r < 8; ++r) acc.emplace_back(row_addr[static_cast<size_t>(m * 8 + r)], 16);
    total += phase_wavefronts(acc);
  }
  return total;
}

}  // namespace souffle::emulate::mma
