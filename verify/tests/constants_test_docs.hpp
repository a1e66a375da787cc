// What the constants file's tests share (test_constants_json, test_constants_json_refusals): the
// stock files, bit patterns, key names and the reader under test.
#pragma once

#include "boundary/verify/constants_json.hpp"

#include <bit>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

namespace boundary::test {

using boundary::Constants;
using boundary::InputError;
using boundary::NormConstants;
using boundary::WeightDtype;
using nlohmann::json;

inline const char* const kPrefixes[] = {"post", "pre"};

inline std::filesystem::path stock_file(const char* name) {
  return std::filesystem::path(BOUNDARY_SOURCE_DIR) / "fixtures" / "constants" / name;
}

inline std::uint64_t bits(double value) { return std::bit_cast<std::uint64_t>(value); }
inline std::uint32_t bits(float value) { return std::bit_cast<std::uint32_t>(value); }

inline std::string field(std::string_view prefix, std::string_view suffix) {
  return std::string(prefix) + "_" + std::string(suffix);
}

inline Constants from(const json& doc) { return constants_from_json(doc, "cfg.json"); }

}  // namespace boundary::test
