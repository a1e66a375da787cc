// The constants file's documentation, written from the field table so that the README's table
// (checked against this by test_constants_json) and --help cannot drift from the reader.
#include "boundary/verify/constants_json.hpp"

#include <algorithm>
#include <string_view>
#include <vector>

namespace boundary {
namespace {

struct FieldDoc {
  std::string_view member, shape, meaning;
};

std::vector<FieldDoc> field_docs() {
  return {
#define BOUNDARY_FIELD_DOC(member, type, default_value, rule, shape, meaning) {#member, shape, meaning},
      BOUNDARY_NORM_FIELDS(BOUNDARY_FIELD_DOC)
#undef BOUNDARY_FIELD_DOC
  };
}

std::string without_backticks(std::string_view markdown) {
  std::string text(markdown);
  text.erase(std::remove(text.begin(), text.end(), '`'), text.end());
  return text;
}

}  // namespace

std::string constants_markdown_table() {
  std::string table = "| key | type | meaning |\n| --- | --- | --- |\n";
  for (const FieldDoc& f : field_docs()) {
    const std::string member(f.member);
    table += "| `post_" + member + "`, `pre_" + member + "` | " + std::string(f.shape) + " | " +
             std::string(f.meaning) + " |\n";
  }
  return table;
}

std::string constants_help() {
  std::size_t width = 0;
  for (const FieldDoc& f : field_docs()) width = std::max(width, f.member.size());
  std::string help = "Constants JSON (--constants): one flat object, keys post_<field> and pre_<field>:\n";
  for (const FieldDoc& f : field_docs()) {
    help += "  " + std::string(f.member) + std::string(width - f.member.size() + 2, ' ') + without_backticks(f.shape) +
            "; " + without_backticks(f.meaning) + "\n";
  }
  return help;
}

}  // namespace boundary
