// The `--constants cfg.json` file: a strict reader and an exact writer for boundary::Constants.
//
// Schema: one flat JSON object, the keys post_<member> and pre_<member> of every row of
// BOUNDARY_NORM_FIELDS (boundary/types.hpp), which gives each one's type, default and rule; the
// README's table is constants_markdown_table(). Anything else (unknown or repeated keys, wrong JSON
// types, bad values) is a boundary::InputError whose message names the file, the field, what was
// expected and what was found.
//
// Numbers keep the double the JSON text gave; the arithmetic converts them with float(double)
// (contract section 2). constants_to_json writes the same schema back so that reading what it
// wrote gives the same doubles, bit for bit.
#pragma once

#include <bit>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "boundary/types.hpp"

namespace boundary {

// `source` names the file in error messages (a path, or e.g. "<stdin>").
Constants constants_from_json(const nlohmann::json& doc, const std::string& source);

// Also refuses what is not one JSON document (the message carries the parser's line and column)
// and keys that appear twice, which a JSON value can no longer show.
Constants parse_constants(std::string_view text, const std::string& source);

// A file that cannot be read is an InputError naming the path.
Constants read_constants(const std::filesystem::path& path);

// Every key of the schema except the weight dtype of a norm without a weight (which the reader
// refuses; it reads back as the struct's default, bf16). Throws std::invalid_argument for
// constants that no file could express (e.g. a negative eps, or input_scale without a weight),
// so that whatever it writes, the reader accepts.
nlohmann::json constants_to_json(const Constants& constants);

// "bf16", "fp16", "fp32": the spelling the file uses.
std::string_view weight_dtype_name(WeightDtype dtype);

// The README's table of keys (Markdown, one row per field, its post_ and pre_ keys together) and
// the same as plain text for --help; both from BOUNDARY_NORM_FIELDS.
std::string constants_markdown_table();
std::string constants_help();

// Field by field, doubles by their bits: 0.0 == -0.0 would hide a lost sign.
inline bool same_bits(double a, double b) { return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b); }
inline bool same_bits(const std::optional<double>& a, const std::optional<double>& b) {
  return a.has_value() == b.has_value() && (!a || same_bits(*a, *b));
}
inline bool same_bits(bool a, bool b) { return a == b; }
inline bool same_bits(WeightDtype a, WeightDtype b) { return a == b; }
inline bool same_bits(const NormConstants& a, const NormConstants& b) {
  bool same = true;
#define BOUNDARY_SAME_FIELD(member, ...) same = same && same_bits(a.member, b.member);
  BOUNDARY_NORM_FIELDS(BOUNDARY_SAME_FIELD)
#undef BOUNDARY_SAME_FIELD
  return same;
}
inline bool same_bits(const Constants& a, const Constants& b) { return same_bits(a.post, b.post) && same_bits(a.pre, b.pre); }

}  // namespace boundary
