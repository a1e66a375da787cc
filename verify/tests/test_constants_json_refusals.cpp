// The constants file's strict reader: every rule, each broken once in an otherwise valid document,
// refused with an InputError naming the file, the key and what is wrong (test_constants_json.cpp
// has what it accepts). Expected values are written out from contract sections 2 and 9.
#include "constants_test_docs.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <initializer_list>
#include <limits>
#include <string>
#include <string_view>

using namespace boundary::test;

namespace {

// Both norms with a weight and every key present: each test breaks one thing in it.
json valid_doc() {
  return json{
      {"post_eps", 1e-8},          {"post_gain_center", 1.0},   {"post_weight_dtype", "bf16"},
      {"post_input_scale", true},  {"post_fma_squares", false}, {"pre_eps", 1e-5},
      {"pre_gain_center", 1.0},    {"pre_weight_dtype", "bf16"}, {"pre_input_scale", false},
      {"pre_fma_squares", false},
  };
}

// valid_doc() with the norm of `prefix` turned into a norm without a weight.
json doc_without_weight(std::string_view prefix) {
  json doc = valid_doc();
  doc[field(prefix, "gain_center")] = nullptr;
  doc.erase(field(prefix, "weight_dtype"));
  doc[field(prefix, "input_scale")] = false;
  return doc;
}

// The message of the InputError that reading `doc` must throw.
std::string error_from(const json& doc) {
  try {
    (void)from(doc);
  } catch (const InputError& error) {
    return error.what();
  }
  FAIL("no InputError for " << doc.dump());
  return {};
}

std::string error_from_text(std::string_view text) {
  try {
    (void)boundary::parse_constants(text, "cfg.json");
  } catch (const InputError& error) {
    return error.what();
  }
  FAIL("no InputError for " << text);
  return {};
}

void check_mentions(const std::string& message, std::initializer_list<std::string_view> parts) {
  for (std::string_view part : parts) {
    CHECK_MESSAGE(message.find(part) != std::string::npos,
                  "message: " << message << "\nlacks: " << part);
  }
}

}  // namespace

TEST_CASE("invalid JSON is refused with the parser's line and column") {
  const std::string message = error_from_text("{\n  \"post_eps\": 1e-8,\n  \"pre_eps\" 1e-5\n}");
  check_mentions(message, {"cfg.json", "JSON", "line 3", "column"});
  check_mentions(error_from_text(""), {"cfg.json", "JSON", "line 1"});
  check_mentions(error_from_text(valid_doc().dump() + " {}"), {"cfg.json", "JSON"});
  check_mentions(error_from_text("{\"post_eps\": 1e-8, // comment\n}"), {"cfg.json", "JSON"});
  check_mentions(error_from_text("{\"post_eps\": NaN}"), {"cfg.json", "JSON"});
}

TEST_CASE("the document must be one JSON object") {
  for (const json& doc : {json::array({valid_doc()}), json(1e-5), json("cfg"), json(nullptr)}) {
    CAPTURE(doc.dump());
    check_mentions(error_from(doc), {"cfg.json", "object", doc.type_name()});
  }
  check_mentions(error_from_text("[]"), {"cfg.json", "object", "array"});
}

TEST_CASE("a key that appears twice is refused, even with the same value") {
  for (const char* prefix : kPrefixes) {
    CAPTURE(prefix);
    const std::string key = "\"" + field(prefix, "eps") + "\": 1e-5";
    std::string text = valid_doc().dump();
    text.insert(1, key + ", ");  // the same key again, first
    check_mentions(error_from_text(text), {"cfg.json", field(prefix, "eps"), "more than once"});
  }
}

TEST_CASE("an unknown key is refused and the known keys are listed") {
  json doc = valid_doc();
  doc["post_esp"] = 1e-8;
  check_mentions(error_from(doc), {"cfg.json", "unknown field 'post_esp'", "known:", "post_eps",
                                   "pre_fma_squares"});
  json nested = valid_doc();
  nested["constants"] = valid_doc();  // a wrapped file is not the flat schema
  check_mentions(error_from(nested), {"cfg.json", "unknown field 'constants'"});
}

TEST_CASE("eps is required") {
  for (const char* prefix : kPrefixes) {
    CAPTURE(prefix);
    json doc = valid_doc();
    doc.erase(field(prefix, "eps"));
    check_mentions(error_from(doc), {"cfg.json", field(prefix, "eps"), "missing", ">= 0"});
  }
}

TEST_CASE("gain centre is required: a norm without a weight says null") {
  for (const char* prefix : kPrefixes) {
    CAPTURE(prefix);
    json doc = valid_doc();
    doc.erase(field(prefix, "gain_center"));
    check_mentions(error_from(doc), {"cfg.json", field(prefix, "gain_center"), "missing", "null"});
    const Constants c = from(doc_without_weight(prefix));
    const NormConstants& norm = std::string_view(prefix) == "post" ? c.post : c.pre;
    CHECK_FALSE(norm.has_weight());
  }
}

TEST_CASE("input_scale and fma_squares default to false when absent") {
  for (const char* prefix : kPrefixes) {
    CAPTURE(prefix);
    json doc = valid_doc();
    doc[field(prefix, "input_scale")] = true;
    doc[field(prefix, "fma_squares")] = true;
    const Constants given = from(doc);
    const NormConstants& given_norm = std::string_view(prefix) == "post" ? given.post : given.pre;
    CHECK(given_norm.input_scale);
    CHECK(given_norm.fma_squares);
    doc.erase(field(prefix, "input_scale"));
    doc.erase(field(prefix, "fma_squares"));
    const Constants absent = from(doc);
    const NormConstants& absent_norm =
        std::string_view(prefix) == "post" ? absent.post : absent.pre;
    CHECK_FALSE(absent_norm.input_scale);
    CHECK_FALSE(absent_norm.fma_squares);
  }
}

TEST_CASE("weight dtype is required when the gain centre is a number") {
  for (const char* prefix : kPrefixes) {
    CAPTURE(prefix);
    json doc = valid_doc();
    doc.erase(field(prefix, "weight_dtype"));
    check_mentions(error_from(doc),
                   {"cfg.json", field(prefix, "weight_dtype"), "missing", "\"bf16\""});
  }
}

TEST_CASE("weight dtype is refused for a norm without a weight") {
  for (const char* prefix : kPrefixes) {
    CAPTURE(prefix);
    json doc = doc_without_weight(prefix);
    doc[field(prefix, "weight_dtype")] = "bf16";
    check_mentions(error_from(doc), {"cfg.json", field(prefix, "weight_dtype"),
                                     "a weight dtype for a norm without a weight", "\"bf16\""});
  }
}

TEST_CASE("input_scale true is refused for a norm without a weight") {
  for (const char* prefix : kPrefixes) {
    CAPTURE(prefix);
    json doc = doc_without_weight(prefix);
    doc[field(prefix, "input_scale")] = true;
    check_mentions(error_from(doc),
                   {"cfg.json", field(prefix, "input_scale"), "no weight to scale", "got true"});
  }
}

TEST_CASE("wrong JSON types are refused") {
  struct Case {
    const char* suffix;
    json value;
    const char* expected;
  };
  const Case cases[] = {
      {"eps", true, "number"},          {"eps", "1e-5", "number"},
      {"eps", json::array({1e-5}), "number"}, {"eps", nullptr, "number"},
      {"gain_center", false, "number"}, {"gain_center", "1.0", "number"},
      {"input_scale", 1, "true or false"}, {"input_scale", "true", "true or false"},
      {"fma_squares", 0, "true or false"}, {"fma_squares", nullptr, "true or false"},
      {"weight_dtype", 16, "\"bf16\""},
  };
  for (const char* prefix : kPrefixes) {
    for (const Case& c : cases) {
      json doc = valid_doc();
      doc[field(prefix, c.suffix)] = c.value;
      CAPTURE(doc.dump());
      check_mentions(error_from(doc), {"cfg.json", field(prefix, c.suffix), "expected",
                                       c.expected, "got " + c.value.dump()});
    }
  }
}

TEST_CASE("eps must be a finite number >= 0; zero is allowed") {
  for (const char* prefix : kPrefixes) {
    CAPTURE(prefix);
    json doc = valid_doc();
    doc[field(prefix, "eps")] = -1;
    CHECK_THROWS_WITH_AS(from(doc),
                         ("cfg.json: field '" + field(prefix, "eps") +
                          "': expected a finite number >= 0, got -1")
                             .c_str(),
                         InputError);
    doc[field(prefix, "eps")] = -1e-300;
    check_mentions(error_from(doc), {field(prefix, "eps"), ">= 0", "got -1e-300"});
    doc[field(prefix, "eps")] = std::numeric_limits<double>::infinity();
    check_mentions(error_from(doc), {field(prefix, "eps"), "finite"});
    doc[field(prefix, "eps")] = std::nan("");
    check_mentions(error_from(doc), {field(prefix, "eps"), "finite"});
    doc[field(prefix, "eps")] = 0;
    CHECK_NOTHROW(from(doc));
  }
  // Text too large for a double: the parser refuses it without a position, so the field is named.
  std::string text = valid_doc().dump();
  text.replace(text.find("1e-08"), 5, "1e400");
  check_mentions(error_from_text(text), {"cfg.json", "field 'post_eps'", "finite", "1e400"});
}

TEST_CASE("eps must stay finite once converted to float") {
  // The largest float and the double just below the midpoint to 2^128 both round to FLT_MAX;
  // the midpoint itself rounds to infinity (ties to even).
  const double float_max = static_cast<double>(std::numeric_limits<float>::max());
  const double midpoint = std::ldexp(1.0, 128) - std::ldexp(1.0, 103);
  for (const char* prefix : kPrefixes) {
    CAPTURE(prefix);
    json doc = valid_doc();
    doc[field(prefix, "eps")] = 1e300;
    check_mentions(error_from(doc), {"cfg.json", field(prefix, "eps"), "as float", "got 1e+300"});
    doc[field(prefix, "eps")] = midpoint;
    check_mentions(error_from(doc), {field(prefix, "eps"), "as float"});
    doc[field(prefix, "eps")] = std::nextafter(midpoint, 0.0);
    CHECK_NOTHROW(from(doc));
    doc[field(prefix, "eps")] = float_max;
    CHECK_NOTHROW(from(doc));
  }
}

TEST_CASE("gain centre must be finite and stay finite as float; negatives are allowed") {
  for (const char* prefix : kPrefixes) {
    CAPTURE(prefix);
    json doc = valid_doc();
    doc[field(prefix, "gain_center")] = -std::numeric_limits<double>::infinity();
    check_mentions(error_from(doc), {"cfg.json", field(prefix, "gain_center"), "finite"});
    doc[field(prefix, "gain_center")] = std::nan("");
    check_mentions(error_from(doc), {field(prefix, "gain_center"), "finite"});
    doc[field(prefix, "gain_center")] = -1e300;
    check_mentions(error_from(doc), {field(prefix, "gain_center"), "as float", "got -1e+300"});
    doc[field(prefix, "gain_center")] = -2.5;
    const Constants c = from(doc);
    const NormConstants& norm = std::string_view(prefix) == "post" ? c.post : c.pre;
    REQUIRE(norm.gain_center.has_value());
    CHECK(bits(*norm.gain_center) == bits(-2.5));
  }
}

TEST_CASE("weight dtype accepts exactly bf16, fp16 and fp32") {
  const std::pair<const char*, WeightDtype> names[] = {
      {"bf16", WeightDtype::bf16}, {"fp16", WeightDtype::fp16}, {"fp32", WeightDtype::fp32}};
  for (const char* prefix : kPrefixes) {
    CAPTURE(prefix);
    json doc = valid_doc();
    for (const auto& [name, dtype] : names) {
      doc[field(prefix, "weight_dtype")] = name;
      const Constants c = from(doc);
      CHECK((std::string_view(prefix) == "post" ? c.post : c.pre).weight_dtype == dtype);
    }
    for (const char* wrong : {"BF16", "bfloat16", "float32", "fp8", ""}) {
      doc[field(prefix, "weight_dtype")] = wrong;
      check_mentions(error_from(doc), {"cfg.json", field(prefix, "weight_dtype"), "\"fp16\"",
                                       "got \"" + std::string(wrong) + "\""});
    }
  }
}

TEST_CASE("weight_dtype_name spells the file's names") {
  CHECK(boundary::weight_dtype_name(WeightDtype::bf16) == "bf16");
  CHECK(boundary::weight_dtype_name(WeightDtype::fp16) == "fp16");
  CHECK(boundary::weight_dtype_name(WeightDtype::fp32) == "fp32");
}

TEST_CASE("JSON integers are numbers: -0 is the integer zero, -0.0 keeps its sign") {
  std::string text = valid_doc().dump();
  text.replace(text.find("\"post_gain_center\":1.0"), 22, "\"post_gain_center\":-0");
  text.replace(text.find("\"pre_gain_center\":1.0"), 21, "\"pre_gain_center\":-0.0");
  text.replace(text.find("1e-05"), 5, "0");
  const Constants c = boundary::parse_constants(text, "cfg.json");
  CHECK(bits(*c.post.gain_center) == bits(0.0));
  CHECK(bits(*c.pre.gain_center) == bits(-0.0));
  CHECK(bits(c.pre.eps) == bits(0.0));
}

TEST_CASE("a constants file that cannot be read is named in the message") {
  const std::filesystem::path missing = stock_file("no-such-constants.json");
  CHECK_THROWS_WITH_AS(boundary::read_constants(missing),
                       doctest::Contains(missing.string().c_str()), InputError);
  CHECK_THROWS_WITH_AS(boundary::read_constants(missing),
                       doctest::Contains("No such file"), InputError);
  const std::filesystem::path directory = stock_file("");
  CHECK_THROWS_WITH_AS(boundary::read_constants(directory),
                       doctest::Contains("directory"), InputError);
}
