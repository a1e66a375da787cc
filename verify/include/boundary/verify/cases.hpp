// The gate's suites as cases for any implementation, TestFloat-style: one input file per suite
// whose __metadata__ says what to compute, and the outputs an implementation writes back. Shared
// by `export`, `check`, the gate's `--implementation` and the Python package.
//
// A case file holds the inputs as `emulate --inputs` reads them (boundary_tensors.hpp) and
// __metadata__ `constants` (the constants JSON text), `store_stream` ("true" or "false") and
// `suite` (the gate's suite name). Its outputs file holds `out` BF16 [m, 8192] and, exactly when
// the case stores the stream, `new_stream` F32 [m, 8192].
#pragma once

#include <boundary/verify/report.hpp>
#include <boundary/verify/safetensors.hpp>
#include <boundary/types.hpp>

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace boundary::cases {

inline constexpr std::string_view kManifestFormat = "boundary-verify/cases/1";

struct Options {
  int level = 1;              // the edge suite's size, as the gate's --level
  std::int64_t rows = 4096;   // fuzzed rows per stream dtype, as the gate's --rows
  std::uint64_t seed = 1;
  int ranks = 0;              // 1..8: also the partials suites (the edge rows spread over R rank partials)
  bool store_stream = true;
  std::string family = "all";  // one of families(), or "all"
};

// "edge", "fuzz", "operand-special", "edge-constants", "partials".
const std::vector<std::string>& families();

struct Case {
  std::string name;          // a file stem made of [A-Za-z0-9._-]: "edge-f32", "operand-special-f32-03"
  report::SuiteInfo info;    // the gate's suite: name, constants name, stream dtype, rows, seed
  Constants constants;
  bool store_stream = true;
  int ranks = 0;             // rank partials instead of a branch; 0: a branch
  safetensors::File inputs;  // with the __metadata__ above
};

// The file stem of the k-th suite a gate suite spec makes (k only when it makes several).
std::string case_name(const std::string& spec_name, std::optional<std::size_t> k);

// Makes the cases one at a time in the gate's suite order (then the partials suites) and hands
// each to `each`: a fuzz case is hundreds of MB, so none is kept. InputError for bad options.
void for_each_case(const Constants& base, const Options& options, const std::function<void(Case&&)>& each);

// A case's entry in manifest.json: file, suite, constants name and JSON, rows, stream dtype,
// store_stream, ranks, seed.
nlohmann::json manifest_entry(const Case&);

// What a case file asks for, from its __metadata__; InputError naming source and key.
Constants case_constants(const safetensors::File& file, const std::string& source);
bool case_store_stream(const safetensors::File& file, const std::string& source);
// The same metadata written into `file`.
void describe(safetensors::File& file, const Constants& constants, bool store_stream);

// An implementation's outputs for a case of m rows, read and checked: `out` BF16 [m, 8192] and,
// when store_stream, `new_stream` F32 [m, 8192], nothing else. A missing file, tensor, wrong dtype
// or shape, or an extra tensor is an InputError naming the file and the tensor.
std::map<std::string, safetensors::Tensor> read_outputs(const std::filesystem::path& path, std::int64_t m,
                                                        bool store_stream);

}  // namespace boundary::cases
