// The constants file (see constants_json.hpp for the schema). Strict on purpose: a typo in a key
// or a value silently replaced by a default would change bits with nobody told.
#include "boundary/constants_json.hpp"

#include "boundary/input_limits.hpp"

#include <array>
#include <cerrno>
#include <cmath>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <system_error>

namespace boundary {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 10> kKnownFields = {
    "post_eps",         "post_gain_center", "post_weight_dtype", "post_input_scale",
    "post_fma_squares", "pre_eps",          "pre_gain_center",   "pre_weight_dtype",
    "pre_input_scale",  "pre_fma_squares",
};

constexpr std::array<WeightDtype, 3> kWeightDtypes = {WeightDtype::bf16, WeightDtype::fp16,
                                                      WeightDtype::fp32};

constexpr std::string_view kEpsExpected = "a finite number >= 0";
constexpr std::string_view kEpsFloatExpected =
    "a finite number >= 0 that stays finite as float (at most about 3.4e38)";
constexpr std::string_view kGainExpected = "a finite number, or null for a norm without a weight";
constexpr std::string_view kGainFloatExpected =
    "a finite number that stays finite as float (magnitude at most about 3.4e38)";
constexpr std::string_view kDtypeExpected = R"("bf16", "fp16" or "fp32")";
constexpr std::string_view kBoolExpected = "true or false";

// The arithmetic uses float(double(value)) (contract section 2), so a double that is finite but
// overflows float would turn into an infinity far from where the user typed it.
bool finite_as_float(double value) { return std::isfinite(static_cast<float>(value)); }

bool eps_ok(double eps) { return std::isfinite(eps) && eps >= 0.0 && finite_as_float(eps); }
bool gain_ok(double gain) { return std::isfinite(gain) && finite_as_float(gain); }

// A value re-serialised as JSON (not the user's own spelling), cut short so that a stray large
// or deep value cannot flood the message.
std::string shown(const json& value) { return io::brief(value); }

std::string shown_with_type(const json& value) {
  return shown(value) + " (" + value.type_name() + ")";
}

std::string field_name(std::string_view prefix, std::string_view suffix) {
  return std::string(prefix) + "_" + std::string(suffix);
}

[[noreturn]] void fail(const std::string& source, const std::string& field,
                       std::string_view expected, const std::string& got) {
  throw InputError(source + ": field '" + field + "': expected " + std::string(expected) +
                   ", got " + got);
}

[[noreturn]] void fail_missing(const std::string& source, const std::string& field,
                               std::string_view expected) {
  throw InputError(source + ": field '" + field + "' is missing: expected " +
                   std::string(expected));
}

std::string known_fields_list() {
  std::string list;
  for (std::string_view name : kKnownFields) {
    if (!list.empty()) list += ", ";
    list += name;
  }
  return list;
}

void check_known_fields(const json& doc, const std::string& source) {
  for (const auto& [key, value] : doc.items()) {
    bool known = false;
    for (std::string_view name : kKnownFields) known = known || key == name;
    if (!known) {
      throw InputError(source + ": unknown field '" + io::brief_text(key) + "' (known: " + known_fields_list() +
                       ")");
    }
  }
}

const json* find_field(const json& doc, const std::string& field) {
  const auto it = doc.find(field);
  return it == doc.end() ? nullptr : &*it;
}

// Integers count as numbers (1 means 1.0, as Python's float(1) does). JSON "-0" is the integer
// zero and reads as +0.0, again as in Python; "-0.0" keeps its sign.
std::optional<double> as_number(const json& value) {
  if (!value.is_number()) return std::nullopt;
  return value.get<double>();
}

double read_eps(const json& doc, std::string_view prefix, const std::string& source) {
  const std::string field = field_name(prefix, "eps");
  const json* value = find_field(doc, field);
  if (value == nullptr) fail_missing(source, field, kEpsExpected);
  const std::optional<double> eps = as_number(*value);
  if (!eps) fail(source, field, kEpsExpected, shown_with_type(*value));
  if (!std::isfinite(*eps) || *eps < 0.0) fail(source, field, kEpsExpected, shown(*value));
  if (!finite_as_float(*eps)) fail(source, field, kEpsFloatExpected, shown(*value));
  return *eps;
}

// Required even for "no weight" so that a forgotten key cannot drop a weight unnoticed.
std::optional<double> read_gain_center(const json& doc, std::string_view prefix,
                                       const std::string& source) {
  const std::string field = field_name(prefix, "gain_center");
  const json* value = find_field(doc, field);
  if (value == nullptr) fail_missing(source, field, kGainExpected);
  if (value->is_null()) return std::nullopt;
  const std::optional<double> gain = as_number(*value);
  if (!gain) fail(source, field, kGainExpected, shown_with_type(*value));
  if (!std::isfinite(*gain)) fail(source, field, kGainExpected, shown(*value));
  if (!finite_as_float(*gain)) fail(source, field, kGainFloatExpected, shown(*value));
  return gain;
}

bool read_flag(const json& doc, std::string_view prefix, std::string_view suffix,
               const std::string& source) {
  const std::string field = field_name(prefix, suffix);
  const json* value = find_field(doc, field);
  if (value == nullptr) return false;
  if (!value->is_boolean()) fail(source, field, kBoolExpected, shown_with_type(*value));
  return value->get<bool>();
}

WeightDtype read_weight_dtype(const json& doc, std::string_view prefix, bool has_weight,
                              const std::string& source) {
  const std::string field = field_name(prefix, "weight_dtype");
  const std::string gain_field = field_name(prefix, "gain_center");
  const json* value = find_field(doc, field);
  if (!has_weight) {
    // The struct's dtype is meaningless here; a file naming one is most likely a file whose
    // gain centre was nulled by mistake.
    if (value != nullptr) {
      throw InputError(source + ": field '" + field +
                       "': a weight dtype for a norm without a weight (" + gain_field +
                       " is null): expected the field left out, got " + shown(*value));
    }
    return NormConstants{}.weight_dtype;
  }
  const std::string expected =
      std::string(kDtypeExpected) + " for the weight (" + gain_field + " is a number)";
  if (value == nullptr) fail_missing(source, field, expected);
  if (!value->is_string()) fail(source, field, expected, shown_with_type(*value));
  const std::string& name = value->get_ref<const std::string&>();
  for (WeightDtype dtype : kWeightDtypes) {
    if (name == weight_dtype_name(dtype)) return dtype;
  }
  fail(source, field, expected, shown(*value));
}

NormConstants read_norm(const json& doc, std::string_view prefix, const std::string& source) {
  NormConstants norm;
  norm.eps = read_eps(doc, prefix, source);
  norm.gain_center = read_gain_center(doc, prefix, source);
  norm.weight_dtype = read_weight_dtype(doc, prefix, norm.has_weight(), source);
  norm.input_scale = read_flag(doc, prefix, "input_scale", source);
  norm.fma_squares = read_flag(doc, prefix, "fma_squares", source);
  if (norm.input_scale && !norm.has_weight()) {
    fail(source, field_name(prefix, "input_scale"),
         "false, as there is no weight to scale the input with (" +
             field_name(prefix, "gain_center") + " is null)",
         "true");
  }
  return norm;
}

// nlohmann's what() starts with e.g. "[json.exception.parse_error.101] "; the rest (line, column,
// what was expected) is what a user needs.
std::string parser_message(const json::exception& error) {
  const std::string_view what = error.what();
  const std::size_t end = what.find("] ");
  return std::string(end == std::string_view::npos ? what : what.substr(end + 2));
}

// Watches the outermost object while it is parsed: a JSON value keeps only the last of repeated
// keys, and a parser error carries no key, so both have to be seen here. A nested object's keys
// are not fields (a nested object is a type error reported later). It also caps the nesting, which
// no valid file has: a value nested thousands deep would overflow the stack of any recursive walk.
class FieldWatcher {
 public:
  explicit FieldWatcher(const std::string& source) : source_(source) {}

  bool on_event(int depth, json::parse_event_t event, const json& parsed) {
    if ((event == json::parse_event_t::object_start || event == json::parse_event_t::array_start) &&
        depth >= io::kMaxJsonDepth) {
      const std::string where = current_field_ ? " in field '" + io::brief_text(*current_field_) + "'" : "";
      throw InputError(source_ + ": JSON nested deeper than " + std::to_string(io::kMaxJsonDepth) + " levels" +
                       where + ": expected one flat object of constants");
    }
    switch (event) {
      case json::parse_event_t::object_start:
        ++depth_;
        break;
      case json::parse_event_t::object_end:
        --depth_;
        break;
      case json::parse_event_t::key:
        if (depth_ == 1) note_field(parsed.get<std::string>());
        break;
      default:
        break;
    }
    return true;  // keep every value: this only watches
  }

  const std::optional<std::string>& first_duplicate() const { return first_duplicate_; }
  // The field whose value was being parsed last, if any.
  const std::optional<std::string>& current_field() const { return current_field_; }

 private:
  void note_field(const std::string& field) {
    current_field_ = field;
    if (!seen_.insert(field).second && !first_duplicate_) first_duplicate_ = field;
  }

  const std::string& source_;
  int depth_ = 0;
  std::set<std::string> seen_;
  std::optional<std::string> current_field_;
  std::optional<std::string> first_duplicate_;
};

void check_writable(const NormConstants& norm, std::string_view prefix) {
  const std::string what = "constants_to_json: " + std::string(prefix) + " norm: ";
  if (!eps_ok(norm.eps)) {
    throw std::invalid_argument(what + "eps is not " + std::string(kEpsFloatExpected));
  }
  if (norm.has_weight() && !gain_ok(*norm.gain_center)) {
    throw std::invalid_argument(what + "gain centre is not " + std::string(kGainFloatExpected));
  }
  if (norm.input_scale && !norm.has_weight()) {
    throw std::invalid_argument(what + "input_scale without a weight");
  }
}

void write_norm(const NormConstants& norm, std::string_view prefix, json& doc) {
  check_writable(norm, prefix);
  // A json built from a double is a float number; dump() writes the shortest text that reads
  // back as the same double, so the round trip is exact.
  doc[field_name(prefix, "eps")] = norm.eps;
  if (norm.has_weight()) {
    doc[field_name(prefix, "gain_center")] = *norm.gain_center;
    doc[field_name(prefix, "weight_dtype")] = std::string(weight_dtype_name(norm.weight_dtype));
  } else {
    doc[field_name(prefix, "gain_center")] = nullptr;
  }
  doc[field_name(prefix, "input_scale")] = norm.input_scale;
  doc[field_name(prefix, "fma_squares")] = norm.fma_squares;
}

}  // namespace

std::string_view weight_dtype_name(WeightDtype dtype) {
  switch (dtype) {
    case WeightDtype::bf16:
      return "bf16";
    case WeightDtype::fp16:
      return "fp16";
    case WeightDtype::fp32:
      return "fp32";
  }
  throw std::invalid_argument("weight_dtype_name: not a WeightDtype: " +
                              std::to_string(static_cast<int>(dtype)));
}

Constants constants_from_json(const nlohmann::json& doc, const std::string& source) {
  if (!doc.is_object()) {
    throw InputError(source + ": expected one JSON object of constants, got " +
                     shown_with_type(doc));
  }
  check_known_fields(doc, source);
  Constants constants;
  constants.post = read_norm(doc, "post", source);
  constants.pre = read_norm(doc, "pre", source);
  return constants;
}

Constants parse_constants(std::string_view text, const std::string& source) {
  FieldWatcher watcher(source);
  json doc;
  try {
    doc = json::parse(text.begin(), text.end(),
                      [&watcher](int depth, json::parse_event_t event, json& parsed) {
                        return watcher.on_event(depth, event, parsed);
                      });
  } catch (const json::parse_error& error) {
    throw InputError(source + ": not valid JSON: " + parser_message(error));
  } catch (const json::out_of_range& error) {
    // A number beyond the double range (e.g. 1e400): nlohmann reports no position, so name the
    // field it belongs to.
    const std::string where =
        watcher.current_field() ? "field '" + *watcher.current_field() + "': " : "";
    throw InputError(source + ": " + where + "expected a finite number, got " +
                     parser_message(error));
  }
  if (watcher.first_duplicate()) {
    throw InputError(source + ": field '" + *watcher.first_duplicate() +
                     "' appears more than once: expected each field at most once");
  }
  return constants_from_json(doc, source);
}

Constants read_constants(const std::filesystem::path& path) {
  const std::vector<std::uint8_t> bytes = io::read_input_file(path, io::kMaxConstantsBytes, "a constants JSON file");
  return parse_constants(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), path.string());
}

nlohmann::json constants_to_json(const Constants& constants) {
  json doc = json::object();
  write_norm(constants.post, "post", doc);
  write_norm(constants.pre, "pre", doc);
  return doc;
}

}  // namespace boundary
