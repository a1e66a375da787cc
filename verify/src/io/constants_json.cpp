// The constants file (see constants_json.hpp for the schema). Strict on purpose: a typo in a key
// or a value silently replaced by a default would change bits with nobody told.
#include "boundary/verify/constants_json.hpp"

#include "boundary/verify/input_limits.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <system_error>
#include <vector>

namespace boundary {
namespace {

using nlohmann::json;

constexpr std::array<std::string_view, 2> kPrefixes = {"post", "pre"};

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

// Every key of the table, post's then pre's, in the table's order.
std::vector<std::string> known_fields() {
  std::vector<std::string> fields;
  for (std::string_view prefix : kPrefixes) {
#define BOUNDARY_KNOWN_FIELD(member, ...) fields.push_back(field_name(prefix, #member));
    BOUNDARY_NORM_FIELDS(BOUNDARY_KNOWN_FIELD)
#undef BOUNDARY_KNOWN_FIELD
  }
  return fields;
}

std::string known_fields_list() {
  std::string list;
  for (const std::string& name : known_fields()) {
    if (!list.empty()) list += ", ";
    list += name;
  }
  return list;
}

void check_known_fields(const json& doc, const std::string& source) {
  const std::vector<std::string> known = known_fields();
  for (const auto& [key, value] : doc.items()) {
    if (std::find(known.begin(), known.end(), key) == known.end()) {
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

// One field of one norm, as a rule sees it: the document, the key, and what its errors name.
struct Field {
  const json& doc;
  std::string_view prefix;  // "post" or "pre"
  std::string_view member;  // the table's member name
  const std::string& source;

  std::string name() const { return field_name(prefix, member); }
  std::string gain_field() const { return field_name(prefix, "gain_center"); }
  const json* value() const { return find_field(doc, name()); }
};

// The rules of the table's `rule` column. read takes one field (the fields before it in the table
// already read into `norm`); after_read checks what needs every field read first; check_writable
// refuses what no file could express; write puts the field into the document.
struct RuleDefaults {
  template <class T>
  static void after_read(const Field&, const T&, const NormConstants&) {}
  template <class T>
  static void check_writable(const std::string&, std::string_view, const T&, const NormConstants&) {}
  template <class T>
  static void write(const Field& f, const T& value, const NormConstants&, json& doc) {
    // A json built from a double is a float number; dump() writes the shortest text that reads
    // back as the same double, so the round trip is exact.
    doc[f.name()] = value;
  }
};

// Required.
struct NonNegativeNumber : RuleDefaults {
  static double read(const Field& f, const NormConstants&) {
    const std::string field = f.name();
    const json* value = f.value();
    if (value == nullptr) fail_missing(f.source, field, kEpsExpected);
    const std::optional<double> number = as_number(*value);
    if (!number) fail(f.source, field, kEpsExpected, shown_with_type(*value));
    if (!std::isfinite(*number) || *number < 0.0) fail(f.source, field, kEpsExpected, shown(*value));
    if (!finite_as_float(*number)) fail(f.source, field, kEpsFloatExpected, shown(*value));
    return *number;
  }
  static void check_writable(const std::string& what, std::string_view member, double value, const NormConstants&) {
    if (!eps_ok(value)) throw std::invalid_argument(what + std::string(member) + " is not " + std::string(kEpsFloatExpected));
  }
};

// Required even for "no weight" so that a forgotten key cannot drop a weight unnoticed.
struct GainCenter : RuleDefaults {
  static std::optional<double> read(const Field& f, const NormConstants&) {
    const std::string field = f.name();
    const json* value = f.value();
    if (value == nullptr) fail_missing(f.source, field, kGainExpected);
    if (value->is_null()) return std::nullopt;
    const std::optional<double> gain = as_number(*value);
    if (!gain) fail(f.source, field, kGainExpected, shown_with_type(*value));
    if (!std::isfinite(*gain)) fail(f.source, field, kGainExpected, shown(*value));
    if (!finite_as_float(*gain)) fail(f.source, field, kGainFloatExpected, shown(*value));
    return gain;
  }
  static void check_writable(const std::string& what, std::string_view, const std::optional<double>& value,
                             const NormConstants&) {
    if (value && !gain_ok(*value)) throw std::invalid_argument(what + "gain centre is not " + std::string(kGainFloatExpected));
  }
  static void write(const Field& f, const std::optional<double>& value, const NormConstants&, json& doc) {
    if (value) {
      doc[f.name()] = *value;
    } else {
      doc[f.name()] = nullptr;
    }
  }
};

// Required with a weight, refused without one; read after the gain centre.
struct WeightDtypeName : RuleDefaults {
  static WeightDtype read(const Field& f, const NormConstants& norm) {
    const std::string field = f.name();
    const json* value = f.value();
    if (!norm.has_weight()) {
      // The struct's dtype is meaningless here; a file naming one is most likely a file whose
      // gain centre was nulled by mistake.
      if (value != nullptr) {
        throw InputError(f.source + ": field '" + field + "': a weight dtype for a norm without a weight (" +
                         f.gain_field() + " is null): expected the field left out, got " + shown(*value));
      }
      return NormConstants{}.weight_dtype;
    }
    const std::string expected = std::string(kDtypeExpected) + " for the weight (" + f.gain_field() + " is a number)";
    if (value == nullptr) fail_missing(f.source, field, expected);
    if (!value->is_string()) fail(f.source, field, expected, shown_with_type(*value));
    const std::string& name = value->get_ref<const std::string&>();
    for (WeightDtype dtype : kWeightDtypes) {
      if (name == weight_dtype_name(dtype)) return dtype;
    }
    fail(f.source, field, expected, shown(*value));
  }
  static void write(const Field& f, WeightDtype value, const NormConstants& norm, json& doc) {
    if (norm.has_weight()) doc[f.name()] = std::string(weight_dtype_name(value));
  }
};

// Default false.
struct Flag : RuleDefaults {
  static bool read(const Field& f, const NormConstants&) {
    const json* value = f.value();
    if (value == nullptr) return false;
    if (!value->is_boolean()) fail(f.source, f.name(), kBoolExpected, shown_with_type(*value));
    return value->get<bool>();
  }
};

// A flag that needs a weight: refused as true without one, once every field has been read (so that
// a wrong type in a later field is still the error reported first, as it always was).
struct InputScale : Flag {
  static void after_read(const Field& f, bool value, const NormConstants& norm) {
    if (value && !norm.has_weight()) {
      fail(f.source, f.name(), "false, as there is no weight to scale the input with (" + f.gain_field() + " is null)",
           "true");
    }
  }
  static void check_writable(const std::string& what, std::string_view member, bool value, const NormConstants& norm) {
    if (value && !norm.has_weight()) throw std::invalid_argument(what + std::string(member) + " without a weight");
  }
};

NormConstants read_norm(const json& doc, std::string_view prefix, const std::string& source) {
  NormConstants norm;
#define BOUNDARY_READ_FIELD(member, type, default_value, rule, ...) \
  norm.member = rule::read(Field{doc, prefix, #member, source}, norm);
  BOUNDARY_NORM_FIELDS(BOUNDARY_READ_FIELD)
#undef BOUNDARY_READ_FIELD
#define BOUNDARY_AFTER_READ_FIELD(member, type, default_value, rule, ...) \
  rule::after_read(Field{doc, prefix, #member, source}, norm.member, norm);
  BOUNDARY_NORM_FIELDS(BOUNDARY_AFTER_READ_FIELD)
#undef BOUNDARY_AFTER_READ_FIELD
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

void write_norm(const NormConstants& norm, std::string_view prefix, json& doc) {
  // Every field checked before any is written: the caller gets an exception or a whole norm.
  const std::string what = "constants_to_json: " + std::string(prefix) + " norm: ";
#define BOUNDARY_CHECK_FIELD(member, type, default_value, rule, ...) \
  rule::check_writable(what, #member, norm.member, norm);
  BOUNDARY_NORM_FIELDS(BOUNDARY_CHECK_FIELD)
#undef BOUNDARY_CHECK_FIELD
  static const std::string kNoSource = "constants_to_json";
#define BOUNDARY_WRITE_FIELD(member, type, default_value, rule, ...) \
  rule::write(Field{doc, prefix, #member, kNoSource}, norm.member, norm, doc);
  BOUNDARY_NORM_FIELDS(BOUNDARY_WRITE_FIELD)
#undef BOUNDARY_WRITE_FIELD
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
  return Constants{.post = read_norm(doc, kPrefixes[0], source), .pre = read_norm(doc, kPrefixes[1], source)};
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
  write_norm(constants.post, kPrefixes[0], doc);
  write_norm(constants.pre, kPrefixes[1], doc);
  return doc;
}

}  // namespace boundary
