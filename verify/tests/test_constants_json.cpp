// The constants file: the stock files, the exact round trip, the writer, same_bits, and the
// README's and --help's lists of keys. Every rule of the strict reader is in
// test_constants_json_refusals.cpp. Expected values are written out from contract sections 2 and 9,
// never taken from the code.
#include "constants_test_docs.hpp"

#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

using namespace boundary::test;

namespace {

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
