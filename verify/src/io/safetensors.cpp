#include "boundary/verify/safetensors.hpp"

#include "boundary/verify/atomic_file.hpp"
#include "boundary/verify/input_limits.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <set>
#include <stdexcept>
#include <tuple>
#include <utility>

#include <nlohmann/json.hpp>

namespace boundary::safetensors {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

// The reference implementation caps the header too; ours is 100 MiB.
constexpr std::uint64_t kMaxHeader = 100ull * 1024 * 1024;
// A valid header nests three deep (root, entry, shape); the cap keeps a hostile header of
// brackets from building a huge tree before the structural checks would reject it.
constexpr int kMaxDepth = io::kMaxJsonDepth;
constexpr std::uint64_t kMaxBytes = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
constexpr const char* kMetadataKey = "__metadata__";
constexpr const char* kSupported = "(BF16, F16, F32)";

[[noreturn]] void fail(const std::string& source, const std::string& what) {
  throw InputError(source + ": " + what);
}

// A name from the file, cut short so a hostile header cannot bloat the message.
std::string quoted(const std::string& s) { return "'" + io::brief_text(s) + "'"; }

[[noreturn]] void fail_tensor(const std::string& source, const std::string& name, const std::string& what) {
  fail(source, "tensor " + quoted(name) + ": " + what);
}

using io::brief;

std::string range_string(std::uint64_t begin, std::uint64_t end) {
  return "[" + std::to_string(begin) + ", " + std::to_string(end) + ")";
}

bool dtype_from_name(std::string_view name, Dtype& out) {
  for (Dtype d : {Dtype::BF16, Dtype::F16, Dtype::F32}) {
    if (dtype_name(d) == name) {
      out = d;
      return true;
    }
  }
  return false;
}

// Element count of a shape whose dims are each within int64, or false when the byte count
// numel * element_size would exceed int64 (then no file or vector could hold it).
bool checked_bytes(const std::vector<std::int64_t>& shape, std::size_t element_size, std::uint64_t& bytes) {
  if (std::any_of(shape.begin(), shape.end(), [](std::int64_t d) { return d < 0; })) return false;
  if (std::find(shape.begin(), shape.end(), 0) != shape.end()) {
    bytes = 0;  // a zero dim makes any other dim harmless
    return true;
  }
  std::uint64_t count = element_size;
  for (std::int64_t dim : shape) {
    const auto d = static_cast<std::uint64_t>(dim);
    if (count > kMaxBytes / d) return false;
    count *= d;
  }
  bytes = count;
  return true;
}

// ---- header JSON -------------------------------------------------------------------------

// nlohmann keeps the last of duplicate keys silently; a file with two tensors of one name is
// ambiguous, so the callback sees every key and rejects repeats at any depth.
json parse_header_json(std::span<const std::uint8_t> text, const std::string& source) {
  // nlohmann takes a NUL byte for the end of input and would ignore everything after it;
  // valid JSON has none (inside strings it must be escaped), so reject it outright.
  if (const auto nul = std::find(text.begin(), text.end(), std::uint8_t{0}); nul != text.end()) {
    fail(source, "header has a NUL byte at offset " + std::to_string(nul - text.begin()) + ", expected JSON text");
  }
  std::vector<std::set<std::string>> keys;  // one set per open object
  int depth = 0;
  auto callback = [&](int, json::parse_event_t event, json& parsed) {
    switch (event) {
      case json::parse_event_t::object_start:
      case json::parse_event_t::array_start:
        if (++depth > kMaxDepth) fail(source, "header nests deeper than " + std::to_string(kMaxDepth) + " levels");
        if (event == json::parse_event_t::object_start) keys.emplace_back();
        break;
      case json::parse_event_t::object_end:
        keys.pop_back();
        --depth;
        break;
      case json::parse_event_t::array_end:
        --depth;
        break;
      case json::parse_event_t::key: {
        const std::string& key = parsed.get_ref<const std::string&>();
        if (!keys.back().insert(key).second) {
          const bool tensor = keys.size() == 1 && key != kMetadataKey;
          fail(source, (tensor ? "duplicate tensor " : "duplicate key ") + quoted(key) + " in the header");
        }
        break;
      }
      case json::parse_event_t::value:
        break;
    }
    return true;
  };
  try {
    json header = json::parse(text.begin(), text.end(), callback);
    if (!header.is_object()) fail(source, "header is JSON " + std::string(header.type_name()) + ", expected an object");
    return header;
  } catch (const json::exception& e) {
    fail(source, std::string("header is not valid JSON: ") + e.what());
  }
}

std::uint64_t read_u64_le(std::span<const std::uint8_t> b) {
  std::uint64_t v = 0;
  for (std::size_t i = 0; i < 8; ++i) v |= static_cast<std::uint64_t>(b[i]) << (8 * i);
  return v;
}

std::map<std::string, std::string> parse_metadata(const json& j, const std::string& source) {
  if (!j.is_object()) fail(source, "__metadata__ is " + brief(j) + ", expected an object of strings");
  std::map<std::string, std::string> out;
  for (const auto& [key, value] : j.items()) {
    if (!value.is_string()) {
      fail(source, "__metadata__ key " + quoted(key) + " is " + brief(value) + ", expected a string");
    }
    out.emplace(key, value.get<std::string>());
  }
  return out;
}

// One header entry, checked on its own; placement in the buffer is checked across entries.
struct Entry {
  std::string name;
  Dtype dtype = Dtype::F32;
  std::vector<std::int64_t> shape;
  std::uint64_t begin = 0;
  std::uint64_t end = 0;
};

std::uint64_t non_negative(const json& j, const std::string& source, const std::string& name,
                           const char* field) {
  if (!j.is_number_unsigned()) {
    fail_tensor(source, name, std::string(field) + " holds " + brief(j) + ", expected non-negative integers");
  }
  return j.get<std::uint64_t>();
}

Dtype entry_dtype(const json& j, const std::string& source, const std::string& name) {
  if (!j.is_string()) fail_tensor(source, name, "dtype is " + brief(j) + ", expected a string");
  const auto& text = j.get_ref<const std::string&>();
  Dtype d{};
  if (!dtype_from_name(text, d)) fail_tensor(source, name, "dtype " + io::brief_text(text) + " is not supported " + kSupported);
  return d;
}

std::vector<std::int64_t> entry_shape(const json& j, const std::string& source, const std::string& name) {
  if (!j.is_array()) fail_tensor(source, name, "shape is " + brief(j) + ", expected an array of non-negative integers");
  std::vector<std::int64_t> shape;
  for (const json& dim : j) {
    const std::uint64_t d = non_negative(dim, source, name, "shape");
    if (d > kMaxBytes) fail_tensor(source, name, "shape dimension " + std::to_string(d) + " exceeds 2^63-1");
    shape.push_back(static_cast<std::int64_t>(d));
  }
  return shape;
}

Entry parse_entry(const std::string& name, const json& j, const std::string& source) {
  if (!j.is_object()) fail_tensor(source, name, "entry is " + brief(j) + ", expected an object");
  for (const char* field : {"dtype", "shape", "data_offsets"}) {
    if (!j.contains(field)) fail_tensor(source, name, std::string("entry lacks ") + field);
  }
  if (j.size() != 3) {
    for (const auto& [key, value] : j.items()) {
      if (key != "dtype" && key != "shape" && key != "data_offsets") {
        fail_tensor(source, name, "unexpected field " + quoted(key) + ", expected only dtype, shape, data_offsets");
      }
    }
  }
  Entry e;
  e.name = name;
  e.dtype = entry_dtype(j["dtype"], source, name);
  e.shape = entry_shape(j["shape"], source, name);
  const json& offsets = j["data_offsets"];
  if (!offsets.is_array() || offsets.size() != 2) {
    fail_tensor(source, name, "data_offsets is " + brief(offsets) + ", expected [begin, end]");
  }
  e.begin = non_negative(offsets[0], source, name, "data_offsets");
  e.end = non_negative(offsets[1], source, name, "data_offsets");
  if (e.begin > e.end) {
    fail_tensor(source, name, "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                                  "] begin after end");
  }
  return e;
}

// Size against shape, then against the buffer: a mismatch is a bad header, an overrun a short file.
void check_extent(const Entry& e, std::uint64_t buffer_size, std::uint64_t file_size, std::uint64_t data_start,
                  const std::string& source) {
  std::uint64_t expected = 0;
  if (!checked_bytes(e.shape, dtype_size(e.dtype), expected)) {
    fail_tensor(source, e.name, "shape " + shape_string(e.shape) + " of " + std::string(dtype_name(e.dtype)) +
                                    " needs more than 2^63-1 bytes");
  }
  if (e.end - e.begin != expected) {
    fail_tensor(source, e.name, "data_offsets " + range_string(e.begin, e.end) + " hold " +
                                    std::to_string(e.end - e.begin) + " bytes, expected " + std::to_string(expected) +
                                    " for " + std::string(dtype_name(e.dtype)) + " " + shape_string(e.shape));
  }
  if (e.end > buffer_size) {
    // Stated relative to the buffer: data_start + end may not fit in 64 bits.
    fail_tensor(source, e.name, "data_offsets " + range_string(e.begin, e.end) + " end past the data buffer of " +
                                    std::to_string(buffer_size) + " bytes (bytes " + std::to_string(data_start) +
                                    " to " + std::to_string(file_size) + " of the file): the file is truncated");
  }
}

// The reference implementation requires the tensors to tile the buffer exactly, in offset
// order; a gap would hide bytes no reader sees, an overlap would alias two tensors.
void check_coverage(std::vector<Entry>& entries, std::uint64_t buffer_size, const std::string& source) {
  std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
  });
  std::uint64_t covered = 0;
  const Entry* previous = nullptr;
  for (const Entry& e : entries) {
    if (e.begin < covered) {
      fail_tensor(source, e.name, "bytes " + range_string(e.begin, e.end) + " overlap tensor " +
                                      quoted(previous->name) + " at " + range_string(previous->begin, previous->end));
    }
    if (e.begin > covered) {
      fail(source, "data bytes " + range_string(covered, e.begin) + " before tensor " + quoted(e.name) +
                       " are not covered by any tensor (safetensors requires the tensors to cover the buffer exactly)");
    }
    covered = e.end;
    previous = &e;
  }
  if (covered != buffer_size) {
    fail(source, "data buffer has " + std::to_string(buffer_size - covered) + " trailing bytes " +
                     range_string(covered, buffer_size) +
                     " not covered by any tensor (safetensors requires the tensors to cover the buffer exactly)");
  }
}

// ---- writing -----------------------------------------------------------------------------

void check_writable(const std::string& name, const Tensor& t) {
  if (name == kMetadataKey) throw std::invalid_argument("safetensors: a tensor may not be named __metadata__");
  std::uint64_t expected = 0;
  if (!checked_bytes(t.shape, dtype_size(t.dtype), expected) || t.bytes.size() != expected) {
    throw std::invalid_argument("safetensors: tensor '" + name + "' holds " + std::to_string(t.bytes.size()) +
                                " bytes, which do not match " + std::string(dtype_name(t.dtype)) + " " +
                                shape_string(t.shape));
  }
}

std::string header_text(const File& file) {
  // ordered_json: __metadata__ first and entry fields in the reference order.
  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!file.metadata.empty()) header[kMetadataKey] = file.metadata;
  std::uint64_t offset = 0;
  for (const auto& [name, t] : file.tensors) {
    check_writable(name, t);
    nlohmann::ordered_json entry = nlohmann::ordered_json::object();
    entry["dtype"] = std::string(dtype_name(t.dtype));
    entry["shape"] = t.shape;
    entry["data_offsets"] = nlohmann::ordered_json::array({offset, offset + t.bytes.size()});
    header[name] = std::move(entry);
    offset += t.bytes.size();
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::ordered_json::exception& e) {
    throw std::invalid_argument(std::string("safetensors: a name or metadata string is not UTF-8: ") + e.what());
  }
  // Padding to a multiple of 8, as the reference writer does, aligns the data buffer.
  text.append((8 - text.size() % 8) % 8, ' ');
  return text;
}

}  // namespace

// ---- public ------------------------------------------------------------------------------

std::string_view dtype_name(Dtype d) {
  switch (d) {
    case Dtype::BF16: return "BF16";
    case Dtype::F16: return "F16";
    case Dtype::F32: return "F32";
  }
  throw std::logic_error("safetensors: invalid Dtype value");
}

std::size_t dtype_size(Dtype d) {
  switch (d) {
    case Dtype::BF16: return 2;
    case Dtype::F16: return 2;
    case Dtype::F32: return 4;
  }
  throw std::logic_error("safetensors: invalid Dtype value");
}

std::string shape_string(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + "]";
}

std::int64_t Tensor::numel() const {
  std::uint64_t n = 0;
  if (!checked_bytes(shape, 1, n)) throw std::logic_error("safetensors: invalid shape " + shape_string(shape));
  return static_cast<std::int64_t>(n);
}

void Tensor::check_view(std::size_t element_size) const {
  if (element_size != dtype_size(dtype)) {
    throw std::logic_error("safetensors: viewing " + std::string(dtype_name(dtype)) + " data as a " +
                           std::to_string(element_size) + "-byte type");
  }
  std::uint64_t expected = 0;
  // checked_bytes, not numel() * size: that product can wrap and match an empty vector.
  if (!checked_bytes(shape, element_size, expected) || bytes.size() != expected) {
    throw std::logic_error("safetensors: tensor holds " + std::to_string(bytes.size()) + " bytes, expected " +
                           std::string(dtype_name(dtype)) + " " + shape_string(shape));
  }
}

Tensor make_tensor(Dtype dtype, std::vector<std::int64_t> shape) {
  std::uint64_t size = 0;
  if (!checked_bytes(shape, dtype_size(dtype), size)) {
    throw std::invalid_argument("safetensors: cannot make a " + std::string(dtype_name(dtype)) + " tensor of shape " +
                                shape_string(shape));
  }
  return Tensor{dtype, std::move(shape), std::vector<std::uint8_t>(static_cast<std::size_t>(size), 0)};
}

File parse(std::span<const std::uint8_t> bytes, const std::string& source) {
  if (bytes.size() < 8) {
    fail(source, "file is " + std::to_string(bytes.size()) + " bytes, too short for the 8-byte header length");
  }
  const std::uint64_t n = read_u64_le(bytes.first(8));
  if (n > bytes.size() - 8) {
    fail(source, "header length " + std::to_string(n) + " exceeds the file size " + std::to_string(bytes.size()) +
                     " (" + std::to_string(bytes.size() - 8) + " bytes follow the length)");
  }
  if (n > kMaxHeader) {
    fail(source, "header length " + std::to_string(n) + " exceeds the limit of " + std::to_string(kMaxHeader) +
                     " bytes (100 MiB)");
  }
  const std::size_t data_start = 8 + static_cast<std::size_t>(n);
  const json header = parse_header_json(bytes.subspan(8, static_cast<std::size_t>(n)), source);
  const std::span<const std::uint8_t> buffer = bytes.subspan(data_start);

  File file;
  std::vector<Entry> entries;
  for (const auto& [key, value] : header.items()) {
    if (key == kMetadataKey) {
      file.metadata = parse_metadata(value, source);
      continue;
    }
    Entry e = parse_entry(key, value, source);
    check_extent(e, buffer.size(), bytes.size(), data_start, source);
    entries.push_back(std::move(e));
  }
  check_coverage(entries, buffer.size(), source);
  for (Entry& e : entries) {
    const auto first = buffer.begin() + static_cast<std::ptrdiff_t>(e.begin);
    const auto last = buffer.begin() + static_cast<std::ptrdiff_t>(e.end);
    file.tensors.emplace(e.name, Tensor{e.dtype, std::move(e.shape), std::vector<std::uint8_t>(first, last)});
  }
  return file;
}

File read_file(const fs::path& path) {
  return parse(io::read_input_file(path, io::kMaxSafetensorsBytes, "a safetensors file"), path.string());
}

std::vector<std::uint8_t> serialize(const File& file) {
  const std::string header = header_text(file);
  std::vector<std::uint8_t> out;
  const std::uint64_t n = header.size();
  for (std::size_t i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(n >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  for (const auto& [name, t] : file.tensors) out.insert(out.end(), t.bytes.begin(), t.bytes.end());
  return out;
}

void write_file(const fs::path& path, const File& file) {
  // Serialize first: a File that cannot be written never touches the disk.
  io::write_file_atomically(path, serialize(file));
}

const Tensor& require(const File& file, const std::string& source, const std::string& name,
                      std::initializer_list<Dtype> allowed, const std::vector<std::int64_t>& shape) {
  if (allowed.size() == 0) throw std::logic_error("safetensors::require: no dtype allowed");
  const auto it = file.tensors.find(name);
  if (it == file.tensors.end()) {
    std::string found;
    for (const auto& [other, t] : file.tensors) found += (found.empty() ? "" : ", ") + quoted(other);
    fail(source, "no tensor " + quoted(name) + " (found: " + (found.empty() ? "none" : found) + ")");
  }
  const Tensor& t = it->second;
  if (std::find(allowed.begin(), allowed.end(), t.dtype) == allowed.end()) {
    std::string expected;
    std::size_t i = 0;
    for (Dtype d : allowed) {
      if (i > 0) expected += (i + 1 == allowed.size()) ? " or " : ", ";
      expected += dtype_name(d);
      ++i;
    }
    fail_tensor(source, name, "dtype " + std::string(dtype_name(t.dtype)) + ", expected " + expected);
  }
  if (t.shape != shape) {
    fail_tensor(source, name, "shape " + shape_string(t.shape) + ", expected " + shape_string(shape));
  }
  return t;
}

}  // namespace boundary::safetensors
