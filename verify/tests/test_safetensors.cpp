#include "boundary/verify/safetensors.hpp"

#include <doctest/doctest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <typeinfo>
#include <vector>

namespace st = boundary::safetensors;
namespace fs = std::filesystem;
using boundary::InputError;
using Bytes = std::vector<std::uint8_t>;

namespace {

const std::string kSource = "in.safetensors";

Bytes le64(std::uint64_t v) {
  Bytes b;
  for (int i = 0; i < 8; ++i) b.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
  return b;
}

Bytes concat(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

Bytes text_bytes(const std::string& s) { return Bytes(s.begin(), s.end()); }

// A file written by hand: the length field, the header text exactly as given, then the data.
Bytes raw_file(const std::string& header, const Bytes& data) {
  return concat(concat(le64(header.size()), text_bytes(header)), data);
}

Bytes f32_bytes(std::initializer_list<float> values) {
  Bytes b;
  for (float v : values) {
    std::uint8_t word[4];
    std::memcpy(word, &v, 4);
    b.insert(b.end(), word, word + 4);
  }
  return b;
}

// One header entry as the format spells it.
std::string entry(const std::string& name, const std::string& dtype, const std::string& shape, std::uint64_t begin,
                  std::uint64_t end) {
  return "\"" + name + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",\"data_offsets\":[" +
         std::to_string(begin) + "," + std::to_string(end) + "]}";
}

st::File parse(const Bytes& b) { return st::parse(b, kSource); }

// The InputError message of parsing b; fails the test if b parses.
std::string rejection(const Bytes& b) {
  try {
    parse(b);
  } catch (const InputError& e) {
    return e.what();
  }
  FAIL_CHECK("parsed, expected an InputError");
  return "";
}

void check_contains(const std::string& message, std::initializer_list<const char*> words) {
  INFO("message: ", message);
  for (const char* w : words) CHECK(message.find(w) != std::string::npos);
}

// A pattern that makes every byte position distinguishable, so a shifted copy cannot pass.
Bytes pattern(std::size_t n, std::uint8_t seed) {
  Bytes b(n);
  for (std::size_t i = 0; i < n; ++i) b[i] = static_cast<std::uint8_t>(seed + 37 * i + (i >> 3));
  return b;
}

st::Tensor tensor_with(st::Dtype dtype, std::vector<std::int64_t> shape, std::uint8_t seed) {
  st::Tensor t = st::make_tensor(dtype, std::move(shape));
  t.bytes = pattern(t.bytes.size(), seed);
  return t;
}

st::File sample_file() {
  st::File f;
  f.metadata = {{"format", "pt"}, {"producer", "boundary"}};
  f.tensors.emplace("gamma", tensor_with(st::Dtype::BF16, {3}, 1));
  f.tensors.emplace("half", tensor_with(st::Dtype::F16, {2, 2}, 2));
  f.tensors.emplace("stream", tensor_with(st::Dtype::F32, {2, 3}, 3));
  f.tensors.emplace("empty", st::make_tensor(st::Dtype::F32, {0, 5}));
  return f;
}

void check_same(const st::File& a, const st::File& b) {
  CHECK(a.metadata == b.metadata);
  REQUIRE(a.tensors.size() == b.tensors.size());
  for (const auto& [name, t] : a.tensors) {
    INFO("tensor ", name);
    REQUIRE(b.tensors.count(name) == 1);
    const st::Tensor& u = b.tensors.at(name);
    CHECK(t.dtype == u.dtype);
    CHECK(t.shape == u.shape);
    CHECK(t.bytes == u.bytes);
  }
}

// A fresh directory under the system temp dir, removed with everything in it.
struct TempDir {
  fs::path path;
  TempDir() {
    std::random_device random;
    path = fs::temp_directory_path() /
           ("boundary-st-" + std::to_string(::getpid()) + "-" + std::to_string(random()));
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::vector<std::string> entries() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(path)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
  }
};

Bytes slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return Bytes(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

// ---- format: names, writer and reader against the reference implementation's bytes ----------

TEST_CASE("dtype names and sizes are the format's") {
  CHECK(st::dtype_name(st::Dtype::BF16) == "BF16");
  CHECK(st::dtype_name(st::Dtype::F16) == "F16");
  CHECK(st::dtype_name(st::Dtype::F32) == "F32");
  CHECK(st::dtype_size(st::Dtype::BF16) == 2);
  CHECK(st::dtype_size(st::Dtype::F16) == 2);
  CHECK(st::dtype_size(st::Dtype::F32) == 4);
  CHECK(st::shape_string({4, 8192}) == "[4, 8192]");
  CHECK(st::shape_string({}) == "[]");
}

TEST_CASE("round trip of BF16, F16 and F32 with metadata preserves every byte") {
  const st::File f = sample_file();
  const Bytes bytes = st::serialize(f);
  const st::File back = parse(bytes);
  check_same(f, back);
  CHECK(st::serialize(back) == bytes);  // the writer is deterministic

  TempDir dir;
  const fs::path path = dir.path / "out.safetensors";
  st::write_file(path, f);
  CHECK(slurp(path) == bytes);
  check_same(f, st::read_file(path));
}

// Byte vectors of the reference Rust implementation's own serialization tests.
TEST_CASE("the writer reproduces the reference implementation's bytes") {
  SUBCASE("one F32 tensor, header padded with spaces to 8 bytes") {
    st::File f;
    st::Tensor t = st::make_tensor(st::Dtype::F32, {1, 1, 2, 3});
    t.bytes = f32_bytes({0, 1, 2, 3, 4, 5});
    f.tensors.emplace("attn0", t);
    const Bytes expected =
        raw_file(R"({"attn0":{"dtype":"F32","shape":[1,1,2,3],"data_offsets":[0,24]}}       )", t.bytes);
    CHECK(expected[0] == 72);
    CHECK(st::serialize(f) == expected);
  }
  SUBCASE("no tensors") {
    CHECK(st::serialize(st::File{}) == raw_file("{}      ", {}));
  }
  SUBCASE("metadata only") {
    st::File f;
    f.metadata["framework"] = "pt";
    CHECK(st::serialize(f) == raw_file(R"({"__metadata__":{"framework":"pt"}}     )", {}));
  }
  SUBCASE("__metadata__ comes first even before names that sort earlier") {
    st::File f;
    f.metadata["k"] = "v";
    f.tensors.emplace("A", st::make_tensor(st::Dtype::BF16, {1}));
    const std::string header = R"({"__metadata__":{"k":"v"},"A":{"dtype":"BF16","shape":[1],"data_offsets":[0,2]}})";
    CHECK(st::serialize(f) == raw_file(header + std::string((8 - header.size() % 8) % 8, ' '), {0, 0}));
  }
}

TEST_CASE("a hand-built file parses to the expected tensors") {
  // Entries out of name order, data laid out in neither name nor header order, extra whitespace.
  const std::string header = "{ \"w\": {\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]},\n"
                             "  \"__metadata__\": {\"format\": \"pt\"},\n"
                             "  \"b\": {\"data_offsets\":[0,4],\"shape\":[2],\"dtype\":\"BF16\"} }   ";
  const Bytes data = {0x80, 0x3F, 0x00, 0xC0,                           // BF16 1.0, -2.0
                      0x00, 0x00, 0x80, 0x3F, 0x00, 0x00, 0x00, 0xC0};  // F32 1.0, -2.0
  const st::File f = parse(raw_file(header, data));
  CHECK(f.metadata == std::map<std::string, std::string>{{"format", "pt"}});
  REQUIRE(f.tensors.size() == 2);
  const st::Tensor& b = f.tensors.at("b");
  CHECK(b.dtype == st::Dtype::BF16);
  CHECK(b.shape == std::vector<std::int64_t>{2});
  CHECK(b.data<std::uint16_t>()[0] == 0x3F80);
  CHECK(b.data<std::uint16_t>()[1] == 0xC000);
  const st::Tensor& w = f.tensors.at("w");
  CHECK(w.dtype == st::Dtype::F32);
  CHECK(w.numel() == 2);
  CHECK(w.data<std::uint32_t>()[0] == 0x3F800000u);
  CHECK(w.data<std::uint32_t>()[1] == 0xC0000000u);
  CHECK(w.data<float>()[1] == -2.0f);
}

TEST_CASE("the reader accepts the reference implementation's files") {
  const st::File f = parse(raw_file(R"({"attn.0":{"dtype":"F32","shape":[1,2,3],"data_offsets":[0,24]}})",
                                    f32_bytes({0, 1, 2, 3, 4, 5})));
  const st::Tensor& t = f.tensors.at("attn.0");
  CHECK(t.shape == std::vector<std::int64_t>{1, 2, 3});
  CHECK(t.bytes == f32_bytes({0, 1, 2, 3, 4, 5}));
  CHECK(parse(raw_file("{}      ", {})).tensors.empty());
}

TEST_CASE("zero-element tensors are valid") {
  const Bytes file = raw_file("{" + entry("e", "F32", "[0,4]", 0, 0) + "," + entry("s", "BF16", "[0]", 2, 2) + "," +
                                  entry("w", "BF16", "[1]", 0, 2) + "}",
                              {0x80, 0x3F});
  const st::File f = parse(file);
  CHECK(f.tensors.at("e").numel() == 0);
  CHECK(f.tensors.at("e").bytes.empty());
  CHECK(f.tensors.at("e").shape == std::vector<std::int64_t>{0, 4});
  CHECK(f.tensors.at("s").numel() == 0);
  check_same(f, parse(st::serialize(f)));
}

// ---- malformed files ---------------------------------------------------------------------

TEST_CASE("a file shorter than 8 bytes is rejected") {
  for (std::size_t n = 0; n < 8; ++n) {
    check_contains(rejection(Bytes(n, 0)), {"in.safetensors: file is", "8-byte header length"});
  }
}

TEST_CASE("a header length beyond the file is rejected") {
  Bytes file = concat(le64(std::numeric_limits<std::uint64_t>::max()), Bytes(1016, ' '));
  CHECK(rejection(file).starts_with(
      "in.safetensors: header length 18446744073709551615 exceeds the file size 1024"));
  file = concat(le64(1017), Bytes(1016, ' '));  // one byte more than follows the field
  check_contains(rejection(file), {"header length 1017 exceeds the file size 1024"});
}

TEST_CASE("a header over 100 MiB is rejected") {
  constexpr std::uint64_t kLimit = 100ull * 1024 * 1024;
  // NUL-filled: a header length the limit lets through fails fast at the NUL check instead.
  Bytes file(8 + kLimit + 1, 0);
  auto with_length = [&](std::uint64_t n) {
    const Bytes len = le64(n);
    std::copy(len.begin(), len.end(), file.begin());
    return rejection(file);
  };
  check_contains(with_length(kLimit), {"NUL byte at offset 0"});
  check_contains(with_length(kLimit + 1), {"header length 104857601 exceeds the limit of 104857600 bytes"});
}

TEST_CASE("a header that is not valid JSON is rejected") {
  check_contains(rejection(raw_file(R"({"a":)", {})), {"header is not valid JSON"});
  check_contains(rejection(raw_file("", {})), {"header is not valid JSON"});
  check_contains(rejection(raw_file("{} x", {})), {"header is not valid JSON"});
  // Padding is spaces. The JSON parser would stop at a NUL and ignore what follows.
  check_contains(rejection(raw_file(std::string("{}\0\0", 4), {})), {"header has a NUL byte at offset 2"});
  check_contains(rejection(raw_file(std::string("{}\0{\"w\":1}", 10), {})), {"NUL byte"});
  // Ill-formed UTF-8 inside a string.
  check_contains(rejection(raw_file("{\"__metadata__\":{\"k\":\"\xff\"}}", {})), {"header is not valid JSON"});
}

TEST_CASE("a header that is not a JSON object is rejected") {
  check_contains(rejection(raw_file("[]", {})), {"header is JSON array, expected an object"});
  check_contains(rejection(raw_file("\"x\"", {})), {"header is JSON string, expected an object"});
}

TEST_CASE("a deeply nested header is rejected before it is built") {
  const std::string deep = "{\"a\":" + std::string(100, '[') + std::string(100, ']') + "}";
  check_contains(rejection(raw_file(deep, {})), {"nests deeper"});
}

TEST_CASE("an entry must be an object with exactly dtype, shape and data_offsets") {
  const Bytes data(8, 0);
  auto reject = [&](const std::string& body, std::initializer_list<const char*> words) {
    check_contains(rejection(raw_file("{\"w\":" + body + "}", data)), words);
  };
  reject("5", {"tensor 'w'", "entry is 5, expected an object"});
  reject(R"({"dtype":"F32","shape":[2]})", {"tensor 'w'", "lacks data_offsets"});
  reject(R"({"shape":[2],"data_offsets":[0,8]})", {"tensor 'w'", "lacks dtype"});
  reject(R"({"dtype":"F32","data_offsets":[0,8]})", {"tensor 'w'", "lacks shape"});
  reject(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8],"extra":1})", {"tensor 'w'", "unexpected field 'extra'"});
  reject(R"({"dtype":32,"shape":[2],"data_offsets":[0,8]})", {"tensor 'w'", "dtype is 32, expected a string"});
  reject(R"({"dtype":"F32","shape":2,"data_offsets":[0,8]})", {"tensor 'w'", "shape is 2, expected an array"});
  reject(R"({"dtype":"F32","shape":[-2],"data_offsets":[0,8]})", {"tensor 'w'", "shape holds -2"});
  reject(R"({"dtype":"F32","shape":[2.0],"data_offsets":[0,8]})", {"tensor 'w'", "shape holds 2.0"});
  reject(R"({"dtype":"F32","shape":["2"],"data_offsets":[0,8]})", {"tensor 'w'", "shape holds \"2\""});
  reject(R"({"dtype":"F32","shape":[9223372036854775808],"data_offsets":[0,8]})",
         {"tensor 'w'", "9223372036854775808 exceeds 2^63-1"});
  reject(R"({"dtype":"F32","shape":[2],"data_offsets":[0,4,8]})", {"tensor 'w'", "expected [begin, end]"});
  reject(R"({"dtype":"F32","shape":[2],"data_offsets":{"a":0}})", {"tensor 'w'", "expected [begin, end]"});
  reject(R"({"dtype":"F32","shape":[2],"data_offsets":[-8,0]})", {"tensor 'w'", "data_offsets holds -8"});
  reject(R"({"dtype":"F32","shape":[0],"data_offsets":[8,0]})", {"tensor 'w'", "[8, 0] begin after end"});
}

TEST_CASE("__metadata__ must map strings to strings") {
  const Bytes data(4, 0);
  const std::string w = entry("w", "F32", "[1]", 0, 4);
  check_contains(rejection(raw_file(R"({"__metadata__":["a"],)" + w + "}", data)),
                 {"__metadata__ is [\"a\"], expected an object of strings"});
  check_contains(rejection(raw_file(R"({"__metadata__":null,)" + w + "}", data)), {"__metadata__ is null"});
  check_contains(rejection(raw_file(R"({"__metadata__":{"k":1},)" + w + "}", data)),
                 {"__metadata__ key 'k' is 1, expected a string"});
}

TEST_CASE("unsupported dtypes are rejected with the supported list") {
  CHECK(rejection(raw_file("{" + entry("w", "F64", "[1]", 0, 8) + "}", Bytes(8, 0))) ==
        "in.safetensors: tensor 'w': dtype F64 is not supported (BF16, F16, F32)");
  check_contains(rejection(raw_file("{" + entry("w", "I32", "[1]", 0, 4) + "}", Bytes(4, 0))), {"dtype I32"});
  check_contains(rejection(raw_file("{" + entry("w", "f32", "[1]", 0, 4) + "}", Bytes(4, 0))), {"dtype f32"});
}

TEST_CASE("a shape whose byte count overflows is rejected") {
  for (const char* shape : {"[4294967296,4294967296]", "[4611686018427387904,2]", "[2305843009213693952]"}) {
    INFO(std::string(shape));
    check_contains(rejection(raw_file("{" + entry("w", "F32", shape, 0, 0) + "}", {})),
                   {"tensor 'w'", "needs more than 2^63-1 bytes"});
  }
  // Just below the bound is only a size mismatch, and a zero dim makes huge ones harmless.
  check_contains(rejection(raw_file("{" + entry("w", "F32", "[2305843009213693951]", 0, 0) + "}", {})),
                 {"expected 9223372036854775804"});
  CHECK(parse(raw_file("{" + entry("w", "F32", "[4294967296,4294967296,0]", 0, 0) + "}", {}))
            .tensors.at("w").numel() == 0);
}

TEST_CASE("data_offsets that disagree with the shape are rejected") {
  check_contains(rejection(raw_file("{" + entry("w", "F32", "[2]", 0, 4) + "}", Bytes(4, 0))),
                 {"tensor 'w'", "hold 4 bytes, expected 8 for F32 [2]"});
  check_contains(rejection(raw_file("{" + entry("w", "BF16", "[2]", 0, 8) + "}", Bytes(8, 0))),
                 {"tensor 'w'", "hold 8 bytes, expected 4 for BF16 [2]"});
}

TEST_CASE("offsets past the data buffer report truncation") {
  check_contains(rejection(raw_file("{" + entry("w", "F32", "[2]", 0, 8) + "}", Bytes(4, 0))),
                 {"tensor 'w'", "[0, 8)", "data buffer of 4 bytes", "truncated"});
  const std::string huge = std::to_string(std::numeric_limits<std::uint64_t>::max());
  check_contains(rejection(raw_file(R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[)" + std::to_string(
                                        std::numeric_limits<std::uint64_t>::max() - 4) + "," + huge + "]}}",
                                    Bytes(4, 0))),
                 {"tensor 'w'", "truncated"});
}

TEST_CASE("overlapping tensors are rejected") {
  const Bytes data(12, 0);
  check_contains(rejection(raw_file("{" + entry("a", "F32", "[2]", 0, 8) + "," + entry("b", "F32", "[2]", 4, 12) + "}",
                                    data)),
                 {"tensor 'b'", "[4, 12) overlap tensor 'a' at [0, 8)"});
  // The same range twice.
  check_contains(rejection(raw_file("{" + entry("a", "F32", "[2]", 0, 8) + "," + entry("b", "F32", "[2]", 0, 8) + "}",
                                    Bytes(8, 0))),
                 {"overlap tensor 'a'"});
}

TEST_CASE("bytes not covered by any tensor are rejected") {
  SUBCASE("a hole between tensors") {
    const std::string h = "{" + entry("a", "F32", "[1]", 0, 4) + "," + entry("b", "F32", "[1]", 8, 12) + "}";
    check_contains(rejection(raw_file(h, Bytes(12, 0))), {"data bytes [4, 8) before tensor 'b' are not covered"});
  }
  SUBCASE("a hole at the start") {
    check_contains(rejection(raw_file("{" + entry("a", "F32", "[1]", 4, 8) + "}", Bytes(8, 0))),
                   {"data bytes [0, 4) before tensor 'a' are not covered"});
  }
  SUBCASE("trailing bytes") {
    check_contains(rejection(raw_file("{" + entry("a", "F32", "[1]", 0, 4) + "}", Bytes(8, 0))),
                   {"4 trailing bytes [4, 8) not covered by any tensor"});
    check_contains(rejection(raw_file("{}", Bytes(1, 0))), {"1 trailing bytes [0, 1) not covered"});
  }
}

TEST_CASE("duplicate names in the header are rejected") {
  const std::string a = entry("a", "F32", "[1]", 0, 4);
  check_contains(rejection(raw_file("{" + a + "," + a + "}", Bytes(4, 0))), {"duplicate tensor 'a'"});
  check_contains(rejection(raw_file(R"({"__metadata__":{},"__metadata__":{},)" + a + "}", Bytes(4, 0))),
                 {"duplicate key '__metadata__'"});
  check_contains(rejection(raw_file(R"({"a":{"dtype":"F32","dtype":"F32","shape":[1],"data_offsets":[0,4]}})",
                                    Bytes(4, 0))),
                 {"duplicate key 'dtype'"});
  check_contains(rejection(raw_file(R"({"__metadata__":{"k":"1","k":"2"},)" + a + "}", Bytes(4, 0))),
                 {"duplicate key 'k'"});
}

// ---- robustness: every damaged variant of a valid file parses or throws InputError ---------

TEST_CASE("every truncation of a valid file throws InputError") {
  const Bytes good = st::serialize(sample_file());
  REQUIRE_NOTHROW(parse(good));
  for (std::size_t n = 0; n < good.size(); ++n) {
    INFO("truncated to ", n, " of ", good.size(), " bytes");
    // The tensors must cover the buffer exactly, so no prefix is a valid file.
    CHECK_THROWS_AS(parse(Bytes(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n))), InputError);
  }
}

TEST_CASE("every byte flip of a valid file parses or throws InputError") {
  const Bytes good = st::serialize(sample_file());
  int accepted = 0;
  int rejected = 0;
  auto attempt = [&](const Bytes& variant, const std::string& what) {
    try {
      parse(variant);
      ++accepted;
    } catch (const InputError&) {
      ++rejected;
    } catch (const std::exception& e) {
      FAIL_CHECK(what, ": ", typeid(e).name(), ": ", e.what());
    }
  };
  for (std::size_t i = 0; i < good.size(); ++i) {
    const std::uint8_t b = good[i];
    for (int v : {0x00, 0xFF, b ^ 0x01, b ^ 0x02, b ^ 0x10, b ^ 0x80, int{'"'}, int{'}'}, int{'9'}, int{'-'}, int{' '}}) {
      if (v == b) continue;
      Bytes variant = good;
      variant[i] = static_cast<std::uint8_t>(v);
      attempt(variant, "byte " + std::to_string(i) + " = " + std::to_string(v));
    }
  }
  // Every header length the file could hold.
  for (std::uint64_t n = 0; n <= good.size() - 8; ++n) {
    Bytes variant = good;
    const Bytes len = le64(n);
    std::copy(len.begin(), len.end(), variant.begin());
    attempt(variant, "header length " + std::to_string(n));
  }
  // Flips in tensor data parse; flips in the header mostly do not: both paths were exercised.
  CHECK(accepted > 0);
  CHECK(rejected > 0);
}

// ---- require ---------------------------------------------------------------------------

TEST_CASE("require returns a tensor of an allowed dtype and the exact shape") {
  const st::File f = sample_file();
  // The address, not a reference: GCC 13 takes a reference bound to a call with temporary
  // arguments for a dangling one (-Wdangling-reference).
  const st::Tensor* t = &st::require(f, kSource, "stream", {st::Dtype::F32, st::Dtype::BF16}, {2, 3});
  CHECK(t == &f.tensors.at("stream"));
}

TEST_CASE("require rejects a missing tensor") {
  CHECK_THROWS_WITH_AS(st::require(sample_file(), kSource, "beta", {st::Dtype::F32}, {2}),
                       "in.safetensors: no tensor 'beta' (found: 'empty', 'gamma', 'half', 'stream')", InputError);
  CHECK_THROWS_WITH_AS(st::require(st::File{}, kSource, "beta", {st::Dtype::F32}, {2}),
                       doctest::Contains("(found: none)"), InputError);
}

TEST_CASE("require rejects a wrong dtype") {
  CHECK_THROWS_WITH_AS(st::require(sample_file(), kSource, "half", {st::Dtype::F32, st::Dtype::BF16}, {2, 2}),
                       "in.safetensors: tensor 'half': dtype F16, expected F32 or BF16", InputError);
  CHECK_THROWS_WITH_AS(st::require(sample_file(), kSource, "half", {st::Dtype::F32}, {2, 2}),
                       "in.safetensors: tensor 'half': dtype F16, expected F32", InputError);
  CHECK_THROWS_WITH_AS(
      st::require(sample_file(), kSource, "stream", {st::Dtype::BF16, st::Dtype::F16, st::Dtype::F16}, {2, 3}),
      "in.safetensors: tensor 'stream': dtype F32, expected BF16, F16 or F16", InputError);
}

TEST_CASE("require rejects a wrong shape") {
  CHECK_THROWS_WITH_AS(st::require(sample_file(), kSource, "stream", {st::Dtype::F32}, {4, 8192}),
                       "in.safetensors: tensor 'stream': shape [2, 3], expected [4, 8192]", InputError);
  CHECK_THROWS_WITH_AS(st::require(sample_file(), kSource, "gamma", {st::Dtype::BF16}, {1, 3}),
                       "in.safetensors: tensor 'gamma': shape [3], expected [1, 3]", InputError);
}

// ---- tensors built in code ---------------------------------------------------------------

TEST_CASE("make_tensor zero-fills and data<T>() checks the element size") {
  st::Tensor t = st::make_tensor(st::Dtype::F32, {2, 3});
  CHECK(t.numel() == 6);
  CHECK(t.bytes == Bytes(24, 0));
  t.data<float>()[5] = 1.0f;
  CHECK(t.bytes[23] == 0x3F);
  CHECK_THROWS_AS(t.data<std::uint16_t>(), std::logic_error);
  CHECK_THROWS_AS(st::make_tensor(st::Dtype::BF16, {2}).data<float>(), std::logic_error);
  // An empty tensor holds the same zero bytes for either size: only the type check catches it.
  CHECK_THROWS_AS(st::make_tensor(st::Dtype::F32, {0}).data<std::uint16_t>(), std::logic_error);
  t.shape = {2, 4};  // bytes no longer match: a view would run past them
  CHECK_THROWS_AS(t.data<float>(), std::logic_error);
  t.shape = {std::int64_t{1} << 62};  // numel * 4 wraps to 0 in 64 bits
  t.bytes.clear();
  CHECK_THROWS_AS(t.data<float>(), std::logic_error);
  CHECK_THROWS_AS(st::make_tensor(st::Dtype::F32, {-1}), std::invalid_argument);
  CHECK_THROWS_AS(st::make_tensor(st::Dtype::F32, {-1, 0}), std::invalid_argument);
  CHECK_THROWS_AS(st::make_tensor(st::Dtype::F32, {std::int64_t{1} << 62}), std::invalid_argument);
}

TEST_CASE("serialize refuses a File no valid file can represent") {
  st::File f;
  f.tensors.emplace("__metadata__", st::make_tensor(st::Dtype::F32, {1}));
  CHECK_THROWS_AS(st::serialize(f), std::invalid_argument);
  st::File g;
  st::Tensor t = st::make_tensor(st::Dtype::F32, {2});
  t.bytes.pop_back();
  g.tensors.emplace("w", t);
  CHECK_THROWS_WITH_AS(st::serialize(g), doctest::Contains("'w' holds 7 bytes"), std::invalid_argument);
}

// ---- files on disk -----------------------------------------------------------------------

TEST_CASE("read_file names the path of a file it cannot read") {
  TempDir dir;
  const fs::path missing = dir.path / "missing.safetensors";
  CHECK_THROWS_WITH_AS(st::read_file(missing), doctest::Contains((missing.string() + ": cannot open").c_str()), InputError);
  CHECK_THROWS_WITH_AS(st::read_file(dir.path), doctest::Contains((dir.path.string() + ": is a directory").c_str()),
                       InputError);
  // A damaged file's messages name its path too.
  std::ofstream(dir.path / "short.safetensors", std::ios::binary) << "abc";
  CHECK_THROWS_WITH_AS(st::read_file(dir.path / "short.safetensors"),
                       doctest::Contains(((dir.path / "short.safetensors").string() + ": file is 3 bytes").c_str()), InputError);
}

TEST_CASE("write_file into a missing directory leaves nothing and names the path") {
  TempDir dir;
  const fs::path target = dir.path / "absent" / "out.safetensors";
  CHECK_THROWS_WITH_AS(st::write_file(target, sample_file()), doctest::Contains(target.string().c_str()), InputError);
  CHECK_FALSE(fs::exists(dir.path / "absent"));
  CHECK(dir.entries().empty());
}

TEST_CASE("write_file replaces an existing file atomically") {
  TempDir dir;
  const fs::path target = dir.path / "out.safetensors";
  st::File first = sample_file();
  st::write_file(target, first);
  const Bytes old_bytes = slurp(target);

  // A reader holding the old file keeps reading the old bytes: the new file is a new inode
  // renamed into place, not the old one truncated and rewritten.
  std::ifstream reader(target, std::ios::binary);
  st::File second = sample_file();
  second.metadata["generation"] = "2";
  second.tensors.at("stream").bytes[0] ^= 0xFF;
  st::write_file(target, second);
  CHECK(Bytes(std::istreambuf_iterator<char>(reader), std::istreambuf_iterator<char>()) == old_bytes);
  check_same(second, st::read_file(target));
  CHECK(dir.entries() == std::vector<std::string>{"out.safetensors"});

  SUBCASE("a File that cannot be serialized leaves the old file and no temporary") {
    st::File bad = sample_file();
    bad.tensors.at("stream").bytes.pop_back();
    CHECK_THROWS_AS(st::write_file(target, bad), std::invalid_argument);
    check_same(second, st::read_file(target));
    CHECK(dir.entries() == std::vector<std::string>{"out.safetensors"});
  }
  SUBCASE("a failed rename removes the temporary") {
    const fs::path blocked = dir.path / "blocked";
    fs::create_directories(blocked / "inside");  // renaming a file over a non-empty directory fails
    CHECK_THROWS_WITH_AS(st::write_file(blocked, first), doctest::Contains((blocked.string() + ": cannot rename").c_str()),
                         InputError);
    CHECK(dir.entries() == std::vector<std::string>{"blocked", "out.safetensors"});
  }
}
