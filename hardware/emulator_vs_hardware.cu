// The emulator against the GPU it runs on, bit for bit:
//   rsqrt.approx.ftz.f32 (the emulator, and the table-free model rsqrt_interpolated),
//   cvt.rn.bf16.f32, cvt.rn.f16.f32                           all 2^32 inputs
//   cvt.f32.f16                                               all 2^16 inputs
//   mul.rn, add.rn, fma.rn (FP32)                             every combination of special
//                                                             values, and 2^26 random triples
// The GPU computes, the host compares with boundary::ref on every core. Prints one line per
// operation and exits 0 only when every result is equal, 1 otherwise, 2 on CUDA errors.
#include <boundary/device/primitives.cuh>
#include <boundary/reference.hpp>
#include <boundary/rsqrt_model.hpp>

#include "cuda_ok.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

namespace {

template <class T>
std::uint32_t to_bits(T v) {
  if constexpr (sizeof(T) == 4) {
    std::uint32_t b;
    std::memcpy(&b, &v, 4);
    return b;
  } else {
    return v;
  }
}

// Counts mismatches over [0, n) on every host core; prints the first few.
struct Tally {
  std::atomic<unsigned long long> mismatches{0};
  std::atomic<int> printed{0};
  void report(const char* op, std::uint64_t input, std::uint32_t hw, std::uint32_t emu) {
    ++mismatches;
    if (printed++ < 8)
      std::printf("  %s mismatch: input 0x%llx hardware 0x%08x emulator 0x%08x\n", op,
                  static_cast<unsigned long long>(input), hw, emu);
  }
};

template <class F>
void parallel_for(std::uint64_t n, F f) {
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] {
      for (std::uint64_t i = n * t / threads; i < n * (t + 1) / threads; ++i) f(i);
    });
  for (auto& th : pool) th.join();
}

enum Unary { kRsqrt, kToBf16, kToF16 };

template <class Out>
__global__ void unary_kernel(Unary op, std::uint32_t base, std::uint32_t n, Out* out) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const float x = __uint_as_float(base + i);
  if constexpr (sizeof(Out) == 4) {
    out[i] = __float_as_uint(boundary::dev::rsqrt_approx_ftz_f32(x));
  } else {
    out[i] = op == kToBf16 ? boundary::dev::f32_to_bf16_rn(x) : boundary::dev::f32_to_f16_rn(x);
  }
}

// All 2^32 inputs in chunks: the GPU computes a chunk while nothing else waits on it; the host
// compares it on every core.
template <class Out, class Emu>
unsigned long long exhaustive_unary(const char* name, Unary op, Emu emulate) {
  constexpr std::uint32_t kChunk = 1u << 28;
  Out* d = nullptr;
  CUDA_OK(cudaMalloc(&d, sizeof(Out) * kChunk));
  std::vector<Out> host(kChunk);
  Tally tally;
  const auto t0 = std::chrono::steady_clock::now();
  for (std::uint64_t base = 0; base < (1ull << 32); base += kChunk) {
    unary_kernel<Out><<<kChunk / 256, 256>>>(op, static_cast<std::uint32_t>(base), kChunk, d);
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaMemcpy(host.data(), d, sizeof(Out) * kChunk, cudaMemcpyDeviceToHost));
    parallel_for(kChunk, [&](std::uint64_t i) {
      const auto in = static_cast<std::uint32_t>(base + i);
      float x;
      std::memcpy(&x, &in, 4);
      const std::uint32_t emu = to_bits(emulate(x));
      if (emu != host[i]) tally.report(name, in, host[i], emu);
    });
  }
  CUDA_OK(cudaFree(d));
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%-26s all 2^32 inputs: %llu mismatches (%.1f s)\n", name, tally.mismatches.load(), s);
  return tally.mismatches.load();
}

__global__ void f16_to_f32_kernel(std::uint32_t* out) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 65536) out[i] = __float_as_uint(boundary::dev::f16_to_f32(static_cast<std::uint16_t>(i)));
}

struct Triple {
  float a, b, c;
};
struct Results3 {
  std::uint32_t mul, add, fma;
};

__global__ void binary_kernel(const Triple* in, std::size_t n, Results3* out) {
  const std::size_t i = std::size_t(blockIdx.x) * blockDim.x + threadIdx.x;
  if (i >= n) return;
  const Triple t = in[i];
  out[i] = {__float_as_uint(boundary::dev::mul_rn(t.a, t.b)),
            __float_as_uint(boundary::dev::add_rn(t.a, t.b)),
            __float_as_uint(boundary::dev::fma_rn(t.a, t.b, t.c))};
}

// Values that exercise every rounding and special case of FP32 arithmetic.
std::vector<std::uint32_t> special_values() {
  std::vector<std::uint32_t> v = {0x00000000, 0x00000001, 0x00000002, 0x00000003, 0x007FFFFF,
                                  0x00400000, 0x00800000, 0x00800001, 0x01000000, 0x1F800000,
                                  0x33800000, 0x34000000, 0x3F000000, 0x3F800000, 0x3F800001,
                                  0x3FFFFFFF, 0x40000000, 0x40400000, 0x4B800000, 0x4B800001,
                                  0x5F800000, 0x7E800000, 0x7F000000, 0x7F7FFFFF, 0x7F800000,
                                  0x7F800001, 0x7FC00000, 0x7FFFFFFF, 0x7FA12345};
  const std::size_t n = v.size();
  for (std::size_t i = 0; i < n; ++i) v.push_back(v[i] | 0x80000000u);
  return v;
}

unsigned long long binary_ops() {
  std::vector<Triple> triples;
  const auto specials = special_values();
  auto f = [](std::uint32_t b) {
    float x;
    std::memcpy(&x, &b, 4);
    return x;
  };
  for (auto a : specials)
    for (auto b : specials)
      for (auto c : specials) triples.push_back({f(a), f(b), f(c)});
  std::mt19937_64 rng(2026);
  const std::size_t random_count = std::size_t(1) << 26;
  for (std::size_t i = 0; i < random_count; ++i) {
    auto pick = [&] {
      const std::uint64_t r = rng();
      // One in four a special value; else a random pattern, half of them near 1 so that
      // products and sums round (rather than overflow or vanish).
      if ((r & 3) == 0) return specials[(r >> 2) % specials.size()];
      if ((r & 4) == 0) return static_cast<std::uint32_t>(r >> 32);
      return static_cast<std::uint32_t>(((r >> 40) & 0x807FFFFF) | (0x3C000000u + ((r >> 8) & 0x07800000)));
    };
    triples.push_back({f(pick()), f(pick()), f(pick())});
  }
  Triple* d_in = nullptr;
  Results3* d_out = nullptr;
  CUDA_OK(cudaMalloc(&d_in, triples.size() * sizeof(Triple)));
  CUDA_OK(cudaMalloc(&d_out, triples.size() * sizeof(Results3)));
  CUDA_OK(cudaMemcpy(d_in, triples.data(), triples.size() * sizeof(Triple), cudaMemcpyHostToDevice));
  binary_kernel<<<static_cast<unsigned>((triples.size() + 255) / 256), 256>>>(d_in, triples.size(), d_out);
  CUDA_OK(cudaGetLastError());
  std::vector<Results3> hw(triples.size());
  CUDA_OK(cudaMemcpy(hw.data(), d_out, hw.size() * sizeof(Results3), cudaMemcpyDeviceToHost));
  Tally tally;
  namespace ref = boundary::ref;
  parallel_for(triples.size(), [&](std::uint64_t i) {
    const Triple& t = triples[i];
    if (to_bits(ref::mul_rn(t.a, t.b)) != hw[i].mul) tally.report("mul_rn", i, hw[i].mul, to_bits(ref::mul_rn(t.a, t.b)));
    if (to_bits(ref::add_rn(t.a, t.b)) != hw[i].add) tally.report("add_rn", i, hw[i].add, to_bits(ref::add_rn(t.a, t.b)));
    if (to_bits(ref::fma_rn(t.a, t.b, t.c)) != hw[i].fma) tally.report("fma_rn", i, hw[i].fma, to_bits(ref::fma_rn(t.a, t.b, t.c)));
  });
  std::printf("%-26s %zu triples (%zu special^3, %zu random): %llu mismatches\n", "mul_rn, add_rn, fma_rn",
              triples.size(), triples.size() - random_count, random_count, tally.mismatches.load());
  CUDA_OK(cudaFree(d_in));
  CUDA_OK(cudaFree(d_out));
  return tally.mismatches.load();
}

unsigned long long f16_inputs() {
  std::uint32_t* d = nullptr;
  CUDA_OK(cudaMalloc(&d, 65536 * 4));
  f16_to_f32_kernel<<<256, 256>>>(d);
  CUDA_OK(cudaGetLastError());
  std::vector<std::uint32_t> hw(65536);
  CUDA_OK(cudaMemcpy(hw.data(), d, 65536 * 4, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaFree(d));
  Tally tally;
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const std::uint32_t emu = to_bits(boundary::ref::f16_to_f32(static_cast<std::uint16_t>(h)));
    if (emu != hw[h]) tally.report("f16_to_f32", h, hw[h], emu);
  }
  std::printf("%-26s all 2^16 inputs: %llu mismatches\n", "f16_to_f32", tally.mismatches.load());
  return tally.mismatches.load();
}

}  // namespace

int main() {
  cudaDeviceProp prop{};
  CUDA_OK(cudaGetDeviceProperties(&prop, 0));
  std::printf("emulator vs %s (compute capability %d.%d), %u host threads\n", prop.name, prop.major,
              prop.minor, std::thread::hardware_concurrency());
  boundary::ref::check_host_float_environment();
  unsigned long long bad = 0;
  bad += exhaustive_unary<std::uint32_t>("rsqrt_approx_ftz_f32", kRsqrt,
                                         [](float x) { return boundary::ref::rsqrt_approx_ftz_f32(x); });
  // The table-free model of the same instruction, against the hardware itself.
  bad += exhaustive_unary<std::uint32_t>("rsqrt_interpolated", kRsqrt,
                                         [](float x) { return boundary::ref::rsqrt_interpolated(x); });
  bad += exhaustive_unary<std::uint16_t>("f32_to_bf16_rn", kToBf16,
                                         [](float x) { return boundary::ref::f32_to_bf16_rn(x); });
  bad += exhaustive_unary<std::uint16_t>("f32_to_f16_rn", kToF16,
                                         [](float x) { return boundary::ref::f32_to_f16_rn(x); });
  bad += f16_inputs();
  bad += binary_ops();
  std::printf("%s: %llu mismatches in all\n", bad ? "FAILED" : "EQUAL", bad);
  return bad ? 1 : 0;
}
