// The constants file: the stock files, the exact round trip, and every rule of the strict reader.
// Expected values are written out from contract sections 2 and 9, never taken from the code.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <iterator>
#include <limits>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "boundary/verify/constants_json.hpp"

namespace {

using boundary::Constants;
using boundary::InputError;
using boundary::NormConstants;
using boundary::WeightDtype;
using nlohmann::json;

const char* const kPrefixes[] = {"post", "pre"};

std::filesystem::path stock_file(const char* name) {
  return std::filesystem::path(BOUNDARY_SOURCE_DIR) / "fixtures" / "constants" / name;
}

std::uint64_t bits(double value) { return std::bit_cast<std::uint64_t>(value); }
std::uint32_t bits(float value) { return std::bit_cast<std::uint32_t>(value); }

// Every field of the table, doubles by their bits (boundary::same_bits): 0.0 == -0.0 would hide a
// lost sign, and a field added to the table is compared without a line here.
void check_same_norm(const NormConstants& got, const NormConstants& want) {
#define CHECK_SAME_FIELD(member, ...) CHECK_MESSAGE(boundary::same_bits(got.member, want.member), #member);
  BOUNDARY_NORM_FIELDS(CHECK_SAME_FIELD)
#undef CHECK_SAME_FIELD
}

void check_same(const Constants& got, const Constants& want) {
  INFO("post norm");
  check_same_norm(got.post, want.post);
  INFO("pre norm");
  check_same_norm(got.pre, want.pre);
}

std::string field(std::string_view prefix, std::string_view suffix) {
  return std::string(prefix) + "_" + std::string(suffix);
}

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

Constants from(const json& doc) { return boundary::constants_from_json(doc, "cfg.json"); }

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

TEST_CASE("stock post-attention file holds contract section 9's post-attention constants") {
  Constants want;
  want.post.eps = 1e-8;
  want.post.gain_center = std::nullopt;
  want.post.input_scale = false;
  want.post.weight_dtype = WeightDtype::bf16;  // struct default: no weight, so no dtype in file
  want.post.fma_squares = false;
  want.pre.eps = 1e-5;
  want.pre.gain_center = 1.0;
  want.pre.input_scale = false;
  want.pre.weight_dtype = WeightDtype::bf16;
  want.pre.fma_squares = false;
  check_same(boundary::read_constants(stock_file("muse-spark-post-attention.json")), want);
}

TEST_CASE("stock post-ffn file holds contract section 9's post-feed-forward constants") {
  Constants want;
  want.post.eps = 1e-8;
  want.post.gain_center = 1.0;
  want.post.input_scale = true;
  want.post.weight_dtype = WeightDtype::bf16;
  want.post.fma_squares = false;
  want.pre.eps = 1e-5;
  want.pre.gain_center = 1.0;
  want.pre.input_scale = false;
  want.pre.weight_dtype = WeightDtype::bf16;
  want.pre.fma_squares = false;
  check_same(boundary::read_constants(stock_file("muse-spark-post-ffn.json")), want);
}

TEST_CASE("stock files spell out every key of the field table, defaults included") {
  std::set<std::string> all;
  for (const char* prefix : kPrefixes) {
#define ADD_KEY(member, ...) all.insert(field(prefix, #member));
    BOUNDARY_NORM_FIELDS(ADD_KEY)
#undef ADD_KEY
  }
  // Contract section 9's fields, written out: the table must keep them.
  for (const char* key : {"post_eps", "post_gain_center", "post_weight_dtype", "post_input_scale", "post_fma_squares",
                          "pre_eps", "pre_gain_center", "pre_weight_dtype", "pre_input_scale", "pre_fma_squares"}) {
    CHECK_MESSAGE(all.count(key) == 1, key);
  }
  std::set<std::string> attention = all;
  attention.erase("post_weight_dtype");  // a norm without a weight must not name a dtype
  const std::pair<std::string, std::set<std::string>> files[] = {
      {"muse-spark-post-attention.json", attention}, {"muse-spark-post-ffn.json", all}};
  for (const auto& file : files) {
    CAPTURE(file.first);
    std::ifstream in(stock_file(file.first.c_str()));
    REQUIRE(in.is_open());
    const json doc = json::parse(in);
    std::set<std::string> found;
    for (const auto& item : doc.items()) found.insert(item.key());
    CHECK(found == file.second);
  }
}

TEST_CASE("float(eps) is the correctly rounded FP32 value the arithmetic will use") {
  const Constants stock = boundary::read_constants(stock_file("muse-spark-post-ffn.json"));
  // 1e-8 and 1e-5 rounded to nearest FP32, as contract section 2 converts decimal constants.
  CHECK(bits(static_cast<float>(stock.post.eps)) == 0x322BCC77u);
  CHECK(bits(static_cast<float>(stock.pre.eps)) == 0x3727C5ACu);
  CHECK(bits(static_cast<float>(*stock.pre.gain_center)) == 0x3F800000u);
}

TEST_CASE("round trip: reading what constants_to_json wrote gives the same bits") {
  std::vector<Constants> cases;
  {
    Constants c;  // awkward decimals, every dtype and flag
    c.post = {.eps = 0.1, .gain_center = 1.0 / 3.0, .weight_dtype = WeightDtype::fp16, .input_scale = true, .fma_squares = true};
    c.pre = {.eps = std::nextafter(1e-5, 0.0), .gain_center = -0.0, .weight_dtype = WeightDtype::fp32, .fma_squares = true};
    cases.push_back(c);
  }
  {
    Constants c;  // no weight; the smallest and largest magnitudes that are allowed
    c.post = {.eps = 0.0};
    c.pre = {.eps = std::numeric_limits<double>::denorm_min(),
             .gain_center = -static_cast<double>(std::numeric_limits<float>::max())};
    cases.push_back(c);
  }
  {
    Constants c;  // integral doubles must come back as the same doubles, not just equal values
    c.post = {.eps = 1.0, .gain_center = 0.0, .input_scale = true};
    c.pre = {.eps = static_cast<double>(std::numeric_limits<float>::max()), .gain_center = 1e-45,
             .weight_dtype = WeightDtype::fp16};
    cases.push_back(c);
  }
  for (const Constants& c : cases) {
    const json written = boundary::constants_to_json(c);
    CAPTURE(written.dump());
    check_same(boundary::constants_from_json(written, "written"), c);
    check_same(boundary::parse_constants(written.dump(), "written"), c);
    check_same(boundary::parse_constants(written.dump(2), "written"), c);
  }
}

TEST_CASE("constants_to_json writes the flat schema: null gain and no dtype without a weight") {
  Constants c;
  c.post = {.eps = 1e-8};
  c.pre = {.eps = 1e-5, .gain_center = 1.0, .weight_dtype = WeightDtype::fp32, .fma_squares = true};
  const json written = boundary::constants_to_json(c);
  const json want = {
      {"post_eps", 1e-8},        {"post_gain_center", nullptr}, {"post_input_scale", false},
      {"post_fma_squares", false}, {"pre_eps", 1e-5},           {"pre_gain_center", 1.0},
      {"pre_weight_dtype", "fp32"}, {"pre_input_scale", false}, {"pre_fma_squares", true},
  };
  CHECK(written == want);
  CHECK(written.at("post_eps").is_number_float());
  CHECK(written.at("pre_gain_center").is_number_float());
}

TEST_CASE("constants_to_json refuses constants that no file can express") {
  const auto bad = [](auto change) {
    Constants c;
    c.post = {.eps = 1e-8, .gain_center = 1.0};
    change(c.post);
    return c;
  };
  CHECK_THROWS_AS(boundary::constants_to_json(bad([](NormConstants& n) { n.eps = -1.0; })),
                  std::invalid_argument);
  CHECK_THROWS_AS(boundary::constants_to_json(bad([](NormConstants& n) { n.eps = 1e300; })),
                  std::invalid_argument);
  CHECK_THROWS_AS(boundary::constants_to_json(
                      bad([](NormConstants& n) { n.gain_center = std::nan(""); })),
                  std::invalid_argument);
  CHECK_THROWS_AS(boundary::constants_to_json(bad([](NormConstants& n) {
                    n.gain_center = std::nullopt;
                    n.input_scale = true;
                  })),
                  std::invalid_argument);
}

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

TEST_CASE("same_bits tells every field apart, and -0.0 from 0.0") {
  const NormConstants base{.eps = 1e-5, .gain_center = 1.0};
  CHECK(boundary::same_bits(base, base));
  const auto differs = [&](auto change) {
    NormConstants other = base;
    change(other);
    return !boundary::same_bits(base, other) && !boundary::same_bits(Constants{.post = base, .pre = {}}, Constants{.post = other, .pre = {}});
  };
  CHECK(differs([](NormConstants& n) { n.eps = std::nextafter(1e-5, 1.0); }));
  CHECK(differs([](NormConstants& n) { n.gain_center = std::nullopt; }));
  CHECK(differs([](NormConstants& n) { n.gain_center = 1.0 + 0x1p-52; }));
  CHECK(differs([](NormConstants& n) { n.weight_dtype = WeightDtype::fp16; }));
  CHECK(differs([](NormConstants& n) { n.input_scale = true; }));
  CHECK(differs([](NormConstants& n) { n.fma_squares = true; }));
  CHECK_FALSE(boundary::same_bits(0.0, -0.0));
  CHECK_FALSE(boundary::same_bits(std::optional<double>(0.0), std::optional<double>(-0.0)));
}

TEST_CASE("the README's table of constants keys is the field table's") {
  const std::string table = boundary::constants_markdown_table();
  // Written out once here, so that the generator itself is checked, not only the README against it.
  CHECK(table.find("| `post_eps`, `pre_eps` | number, finite, >= 0 (required) | converted as `float(double(value))` |\n") !=
        std::string::npos);
  CHECK(table.rfind("| `post_fma_squares`, `pre_fma_squares` | bool (default false) | row sum accumulates with fma |\n") ==
        table.size() - std::string_view("| `post_fma_squares`, `pre_fma_squares` | bool (default false) | row sum accumulates with fma |\n").size());
  std::ifstream in(std::filesystem::path(BOUNDARY_SOURCE_DIR) / "README.md");
  REQUIRE(in.is_open());
  const std::string readme((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CHECK_MESSAGE(readme.find("\n" + table + "\n") != std::string::npos,
                "README.md lacks this table (paste it under 'Constants'):\n" << table);
}

TEST_CASE("--help lists every key of the field table") {
  const std::string help = boundary::constants_help();
#define CHECK_HELP_FIELD(member, ...) CHECK_MESSAGE(help.find("\n  " #member " ") != std::string::npos, #member);
  BOUNDARY_NORM_FIELDS(CHECK_HELP_FIELD)
#undef CHECK_HELP_FIELD
  CHECK(help.find("`") == std::string::npos);  // Markdown is the README's, not the terminal's
}
