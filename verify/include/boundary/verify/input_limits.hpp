// What boundary-verify reads and writes, bounded: an input file must be a regular file of at most
// a documented size (a device or a pipe could be read until memory runs out); no output may land on
// an input of the same run (an atomic rename would replace it with no way back); a value echoed in
// an error message is cut short; a number on the command line is plain decimal.
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

// Declared only: the command-line sources, which use the validator, include CLI11 themselves.
namespace CLI {
class Validator;
}  // namespace CLI

namespace boundary::io {

inline constexpr std::uint64_t kMaxConstantsBytes = 1ull << 20;     // 1 MiB; a valid file is < 1 KiB
inline constexpr std::uint64_t kMaxSafetensorsBytes = 16ull << 30;  // 16 GiB; 2^18 F32-stream rows are 12 GiB
inline constexpr int kMaxJsonDepth = 16;                           // nesting; a valid file nests 1 or 3 deep

// The bytes of `path`, or an InputError naming it when it is missing, not a regular file, larger
// than max_bytes or unreadable. `what` says what the file should be ("a safetensors file").
std::vector<std::uint8_t> read_input_file(const std::filesystem::path& path, std::uint64_t max_bytes,
                                          std::string_view what);

// For error messages: text cut to a few dozen characters with its full length; a JSON value
// written without descending into it (an array or object shows its size), so that neither a huge
// nor a deeply nested value reaches a message whole.
std::string brief_text(std::string_view text);
std::string brief(const nlohmann::json& value);

// An output of a run, named by its option ("--output").
struct OutputPath {
  std::string option;
  std::filesystem::path path;
};
// Refuses, before any work, an output that is empty, names a directory, sits in a directory that
// does not exist, is the same file as an input (std::filesystem::equivalent: links and other
// spellings included) or as another output.
void check_outputs(const std::vector<OutputPath>& outputs, const std::vector<std::filesystem::path>& inputs);

// The machine's physical memory, to refuse work that cannot fit in it.
std::uint64_t physical_memory_bytes();

// A CLI11 check for unsigned options: decimal digits only, below 2^64 (CLI11 itself would take
// "-1" as 2^64-1, "2^64" as 2^64-1 and "010" as 8).
CLI::Validator unsigned_decimal();

}  // namespace boundary::io
