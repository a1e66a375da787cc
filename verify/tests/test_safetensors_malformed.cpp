// The safetensors reader's refusals: every malformed file it must reject, each with an InputError
// that names the file and the fault, and robustness against every truncation and byte flip of a
// valid file (test_safetensors.cpp has the well-formed side).
#include "safetensors_test_files.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <string>
#include <typeinfo>
#include <vector>

using namespace boundary::test;
using boundary::InputError;

namespace {

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

}  // namespace

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
