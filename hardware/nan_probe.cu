// Measures the NaN results of the contract's primitives on the GPU it runs on: for every NaN
// input pattern of each conversion, and for NaN-producing FP32 arithmetic, the set of result
// bit patterns. The emulator's NaN rules (reference/src/nan_rules.hpp) are these measurements.
//
//   nan_probe        prints one line per operation: the distinct results and their counts
#include <boundary/device/primitives.cuh>

#include "cuda_ok.hpp"

#include <cuda_runtime.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <vector>

namespace {

// Every FP32 NaN: sign s, exponent 0xFF, mantissa 1 .. 2^23 - 1.
__device__ std::uint32_t f32_nan(std::uint32_t n) {
  return ((n / 0x7FFFFFu) << 31) | 0x7F800000u | (n % 0x7FFFFFu + 1u);
}
constexpr std::uint32_t kF32Nans = 2u * 0x7FFFFFu;

enum Op { kCvtF16, kCvtBf16, kMulNan, kAddNan, kFmaNan, kOps };
const char* const kOpNames[] = {"cvt.rn.f16.f32(NaN)", "cvt.rn.bf16.f32(NaN)",
                                "mul.rn.f32(NaN, 1.5)", "add.rn.f32(-1, NaN)",
                                "fma.rn.f32(2, NaN, 1)"};

__global__ void f32_nan_ops(std::uint32_t* out) {
  const std::uint32_t n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n >= kF32Nans) return;
  const float x = __uint_as_float(f32_nan(n));
  out[kCvtF16 * std::size_t(kF32Nans) + n] = boundary::dev::f32_to_f16_rn(x);
  out[kCvtBf16 * std::size_t(kF32Nans) + n] = boundary::dev::f32_to_bf16_rn(x);
  out[kMulNan * std::size_t(kF32Nans) + n] = __float_as_uint(boundary::dev::mul_rn(x, 1.5f));
  out[kAddNan * std::size_t(kF32Nans) + n] = __float_as_uint(boundary::dev::add_rn(-1.0f, x));
  out[kFmaNan * std::size_t(kF32Nans) + n] = __float_as_uint(boundary::dev::fma_rn(2.0f, x, 1.0f));
}

// Every FP16 NaN through cvt.f32.f16, and the invalid operations on ordinary operands.
__global__ void small_ops(std::uint32_t* out, float inf, float zero) {
  const std::uint32_t n = blockIdx.x * blockDim.x + threadIdx.x;
  if (n < 2 * 0x3FF) {
    const std::uint16_t h = static_cast<std::uint16_t>(((n / 0x3FF) << 15) | 0x7C00u | (n % 0x3FF + 1));
    out[n] = __float_as_uint(boundary::dev::f16_to_f32(h));
  }
  if (n == 0) {
    out[2 * 0x3FF + 0] = __float_as_uint(boundary::dev::mul_rn(inf, zero));
    out[2 * 0x3FF + 1] = __float_as_uint(boundary::dev::add_rn(inf, -inf));
    out[2 * 0x3FF + 2] = __float_as_uint(boundary::dev::fma_rn(inf, zero, 1.0f));
    out[2 * 0x3FF + 3] = __float_as_uint(boundary::dev::fma_rn(1.0f, inf, -inf));
  }
}

void print_histogram(const char* name, const std::uint32_t* v, std::size_t n) {
  std::map<std::uint32_t, std::size_t> seen;
  for (std::size_t i = 0; i < n; ++i) ++seen[v[i]];
  std::printf("%-28s %zu inputs ->", name, n);
  for (const auto& [bits, count] : seen) std::printf(" 0x%08x x%zu", bits, count);
  std::printf("\n");
}

}  // namespace

int main() {
  std::vector<std::uint32_t> host(std::size_t(kOps) * kF32Nans);
  std::uint32_t* d = nullptr;
  CUDA_OK(cudaMalloc(&d, host.size() * sizeof(std::uint32_t)));
  f32_nan_ops<<<(kF32Nans + 255) / 256, 256>>>(d);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaMemcpy(host.data(), d, host.size() * sizeof(std::uint32_t), cudaMemcpyDeviceToHost));
  for (int op = 0; op < kOps; ++op)
    print_histogram(kOpNames[op], host.data() + std::size_t(op) * kF32Nans, kF32Nans);

  small_ops<<<(2 * 0x3FF + 255) / 256, 256>>>(d, __builtin_inff(), 0.0f);
  CUDA_OK(cudaGetLastError());
  CUDA_OK(cudaMemcpy(host.data(), d, (2 * 0x3FF + 4) * sizeof(std::uint32_t), cudaMemcpyDeviceToHost));
  print_histogram("cvt.f32.f16(NaN)", host.data(), 2 * 0x3FF);
  print_histogram("mul.rn.f32(Inf, 0)", host.data() + 2 * 0x3FF + 0, 1);
  print_histogram("add.rn.f32(Inf, -Inf)", host.data() + 2 * 0x3FF + 1, 1);
  print_histogram("fma.rn.f32(Inf, 0, 1)", host.data() + 2 * 0x3FF + 2, 1);
  print_histogram("fma.rn.f32(1, Inf, -Inf)", host.data() + 2 * 0x3FF + 3, 1);
  CUDA_OK(cudaFree(d));
  return 0;
}
