// The `--constants cfg.json` file: a strict reader and an exact writer for boundary::Constants.
//
// Schema: one flat JSON object. Per norm (prefix post_ or pre_):
//   <p>_eps           number, required: finite, >= 0, and finite once converted to float
//   <p>_gain_center   number or null, required: null means the norm has no weight
//   <p>_weight_dtype  "bf16" | "fp16" | "fp32": required with a weight, refused without one
//   <p>_input_scale   bool, default false: weight applied before the norm (needs a weight)
//   <p>_fma_squares   bool, default false
// Anything else (unknown or repeated keys, wrong JSON types, bad values) is a boundary::InputError
// whose message names the file, the field, what was expected and what was found.
//
// Numbers keep the double the JSON text gave; the arithmetic converts them with float(double)
// (contract section 2). constants_to_json writes the same schema back so that reading what it
// wrote gives the same doubles, bit for bit.
#pragma once

#include <filesystem>
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

}  // namespace boundary
