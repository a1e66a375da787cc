// boundary-verify kernel (CUDA builds): a case file of export through this project's fused kernel
// or the eager chain, its outputs written as an external implementation writes them (cases.hpp),
// so that the project's own kernel is judged by check and the gate's --implementation like any other.
#pragma once

#include <boundary/verify/cli.hpp>

#include <filesystem>
#include <string>

namespace boundary::cli {

struct KernelOptions {
  std::filesystem::path inputs, output;
  std::string kernel = "fused";  // or "eager"
  std::string gates = "auto";    // auto (late above the SM count), early, late
  bool no_pdl = false;
};

CLI::App* setup_kernel(CLI::App& app, KernelOptions& options);
// Sets *exit_code: 0 written, 77 no device (nothing written); InputError for a bad case file.
nlohmann::json run_kernel(const KernelOptions& options, int* exit_code);
std::string format_kernel(const nlohmann::json& result);

}  // namespace boundary::cli
