// Captures rsqrt.approx.ftz.f32 (MUFU.RSQ) on [1, 4) from the GPU it runs on, packs it as
// deltas from the nearest float to 1/sqrt (the committed fixture), then checks on the GPU that
// the model's scaling and special-value rules (<boundary/rsqrt_model.hpp>) reproduce the
// hardware for all 2^32 inputs.
//
//   mufu_rsq_capture OUT_DIR
//
// Writes OUT_DIR/mufu_rsq_delta.bin (2^22 bytes) and OUT_DIR/provenance.json. Exit 0 when the
// capture fits the packing and the rules hold for every input, 1 otherwise, 2 on usage or
// CUDA errors.
#include <boundary/device/primitives.cuh>
#include <boundary/rsqrt_model.hpp>

#include "cuda_ok.hpp"

#include <cuda_runtime.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <string>
#include <vector>

namespace {

namespace model = boundary::rsqrt_model;

__global__ void capture_kernel(std::uint32_t* out) {
  const std::uint32_t i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < model::kTableSize) {
    out[i] = __float_as_uint(boundary::dev::rsqrt_approx_ftz_f32(
        __uint_as_float(model::table_input_bits(i))));
  }
}

struct Mismatch {
  std::uint32_t x, hardware, model;
};
constexpr int kMaxReported = 16;

__global__ void check_rules_kernel(const std::uint32_t* table, unsigned long long* mismatches,
                                   Mismatch* first) {
  const std::uint64_t stride = std::uint64_t(gridDim.x) * blockDim.x;
  for (std::uint64_t n = std::uint64_t(blockIdx.x) * blockDim.x + threadIdx.x;
       n < (std::uint64_t(1) << 32); n += stride) {
    const std::uint32_t x = static_cast<std::uint32_t>(n);
    const std::uint32_t hw = __float_as_uint(boundary::dev::rsqrt_approx_ftz_f32(__uint_as_float(x)));
    const std::uint32_t predicted =
        model::rsqrt_approx_ftz_bits(x, [table](std::uint32_t i) { return table[i]; });
    if (hw != predicted) {
      const unsigned long long k = atomicAdd(mismatches, 1ull);
      if (k < kMaxReported) first[k] = Mismatch{x, hw, predicted};
    }
  }
}

std::string driver_line() {
  std::ifstream f("/proc/driver/nvidia/version");
  std::string line;
  std::getline(f, line);
  return line;
}

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (static_cast<unsigned char>(c) >= 0x20) o += c;
  }
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s OUT_DIR\n", argv[0]);
    return 2;
  }
  const std::string out_dir = argv[1];

  cudaDeviceProp prop{};
  int device = 0, driver = 0, runtime = 0;
  CUDA_OK(cudaGetDevice(&device));
  CUDA_OK(cudaGetDeviceProperties(&prop, device));
  CUDA_OK(cudaDriverGetVersion(&driver));
  CUDA_OK(cudaRuntimeGetVersion(&runtime));
  std::printf("device: %s, compute capability %d.%d, driver API %d, runtime %d\n", prop.name,
              prop.major, prop.minor, driver, runtime);

  // 1. Capture [1, 4).
  std::uint32_t* d_table = nullptr;
  CUDA_OK(cudaMalloc(&d_table, model::kTableSize * sizeof(std::uint32_t)));
  capture_kernel<<<model::kTableSize / 256, 256>>>(d_table);
  CUDA_OK(cudaGetLastError());
  std::vector<std::uint32_t> table(model::kTableSize);
  CUDA_OK(cudaMemcpy(table.data(), d_table, model::kTableSize * sizeof(std::uint32_t),
                     cudaMemcpyDeviceToHost));

  // 2. Pack as deltas from the nearest float.
  std::array<unsigned long long, model::kMaxDelta - model::kMinDelta + 1> histogram{};
  std::vector<unsigned char> packed(model::kPackedBytes, 0);
  unsigned long long out_of_range = 0;
  for (std::uint32_t i = 0; i < model::kTableSize; ++i) {
    const long long delta =
        static_cast<long long>(table[i]) - static_cast<long long>(model::nearest_bits(i));
    if (delta < model::kMinDelta || delta > model::kMaxDelta) {
      if (out_of_range++ < kMaxReported)
        std::fprintf(stderr, "delta %lld out of range at index %u (f bits 0x%08x, hw 0x%08x)\n",
                     delta, i, model::table_input_bits(i), table[i]);
      continue;
    }
    ++histogram[delta - model::kMinDelta];
    packed[i / 4] |= static_cast<unsigned char>((delta - model::kMinDelta) << (2 * (i % 4)));
  }
  std::printf("deltas on [1,4):");
  for (int d = model::kMinDelta; d <= model::kMaxDelta; ++d)
    std::printf(" %+d: %llu", d, histogram[d - model::kMinDelta]);
  std::printf(", out of range: %llu\n", out_of_range);

  // 3. The rules, on the GPU, for every 32-bit input.
  unsigned long long* d_count = nullptr;
  Mismatch* d_first = nullptr;
  CUDA_OK(cudaMalloc(&d_count, sizeof *d_count));
  CUDA_OK(cudaMalloc(&d_first, kMaxReported * sizeof(Mismatch)));
  CUDA_OK(cudaMemset(d_count, 0, sizeof *d_count));
  check_rules_kernel<<<prop.multiProcessorCount * 8, 256>>>(d_table, d_count, d_first);
  CUDA_OK(cudaGetLastError());
  unsigned long long rule_mismatches = 0;
  Mismatch first[kMaxReported];
  CUDA_OK(cudaMemcpy(&rule_mismatches, d_count, sizeof rule_mismatches, cudaMemcpyDeviceToHost));
  CUDA_OK(cudaMemcpy(first, d_first, sizeof first, cudaMemcpyDeviceToHost));
  std::printf("rules vs hardware on all 2^32 inputs: %llu mismatches\n", rule_mismatches);
  for (unsigned long long k = 0; k < rule_mismatches && k < kMaxReported; ++k)
    std::printf("  x 0x%08x: hardware 0x%08x, model 0x%08x\n", first[k].x, first[k].hardware,
                first[k].model);

  const std::string bin_path = out_dir + "/mufu_rsq_delta.bin";
  std::ofstream(bin_path, std::ios::binary)
      .write(reinterpret_cast<const char*>(packed.data()), static_cast<std::streamsize>(packed.size()));

  char date[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  std::ofstream prov(out_dir + "/provenance.json");
  prov << "{\n"
       << "  \"what\": \"rsqrt.approx.ftz.f32 on [1,4), packed as 2-bit deltas (delta+2) from float(1/sqrt(double f)), 4 per byte, index i at byte i/4 bits 2*(i%4)\",\n"
       << "  \"gpu\": \"" << json_escape(prop.name) << "\",\n"
       << "  \"compute_capability\": \"" << prop.major << "." << prop.minor << "\",\n"
       << "  \"driver\": \"" << json_escape(driver_line()) << "\",\n"
       << "  \"cuda_driver_api\": " << driver << ",\n"
       << "  \"cuda_runtime\": " << runtime << ",\n"
       << "  \"date\": \"" << date << "\",\n"
       << "  \"command\": \"" << json_escape(argv[0]) << " " << json_escape(out_dir) << "\",\n"
       << "  \"delta_histogram\": {";
  for (int d = model::kMinDelta; d <= model::kMaxDelta; ++d)
    prov << (d == model::kMinDelta ? "" : ", ") << "\"" << d << "\": " << histogram[d - model::kMinDelta];
  prov << "},\n"
       << "  \"rule_mismatches_all_2_32\": " << rule_mismatches << "\n"
       << "}\n";

  CUDA_OK(cudaFree(d_table));
  CUDA_OK(cudaFree(d_count));
  CUDA_OK(cudaFree(d_first));
  return (out_of_range == 0 && rule_mismatches == 0) ? 0 : 1;
}
