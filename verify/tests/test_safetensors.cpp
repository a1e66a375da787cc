// The safetensors reader and writer: dtype names, round trips, the reference implementation's
// bytes both ways, require(), tensors built in code and files on disk. The malformed files the
// reader must refuse are in test_safetensors_malformed.cpp.
#include "safetensors_test_files.hpp"
#include "temp_dir.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace fs = std::filesystem;
using namespace boundary::test;
using boundary::InputError;

namespace {

Bytes f32_bytes(std::initializer_list<float> values) {
  Bytes b;
  for (float v : values) {
    std::uint8_t word[4];
    std::memcpy(word, &v, 4);
    b.insert(b.end(), word, word + 4);
  }
  return b;
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

// The names in a directory, sorted: what a failed write must not leave behind.
std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> names;
  for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  return names;
}

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
  CHECK(entries(dir.path).empty());
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
  CHECK(entries(dir.path) == std::vector<std::string>{"out.safetensors"});

  SUBCASE("a File that cannot be serialized leaves the old file and no temporary") {
    st::File bad = sample_file();
    bad.tensors.at("stream").bytes.pop_back();
    CHECK_THROWS_AS(st::write_file(target, bad), std::invalid_argument);
    check_same(second, st::read_file(target));
    CHECK(entries(dir.path) == std::vector<std::string>{"out.safetensors"});
  }
  SUBCASE("a failed rename removes the temporary") {
    const fs::path blocked = dir.path / "blocked";
    fs::create_directories(blocked / "inside");  // renaming a file over a non-empty directory fails
    CHECK_THROWS_WITH_AS(st::write_file(blocked, first), doctest::Contains((blocked.string() + ": cannot rename").c_str()),
                         InputError);
    CHECK(entries(dir.path) == std::vector<std::string>{"blocked", "out.safetensors"});
  }
}
