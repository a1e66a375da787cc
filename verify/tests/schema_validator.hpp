// A validator for the subset of JSON Schema (draft 2020-12) that verify/report-schema.json uses,
// shared by the replay and gate tests. Unknown keywords are errors, so the schema cannot lean on
// something this does not check.
#pragma once

#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>
#include <vector>

namespace boundary::test {

using nlohmann::json;

struct SchemaValidator {
  const json& root;
  std::vector<std::string> errors;

  static bool has_type(const json& v, const std::string& t) {
    if (t == "integer") return v.is_number_integer();
    if (t == "number") return v.is_number();
    if (t == "null") return v.is_null();
    return v.type_name() == t;  // object, array, string, boolean
  }

  void validate(const json& s, const json& v, const std::string& at) {
    for (const auto& [key, arg] : s.items()) {
      if (key == "type") {
        const json types = arg.is_array() ? arg : json::array({arg});
        if (std::none_of(types.begin(), types.end(), [&](const json& t) { return has_type(v, t); }))
          errors.push_back(at + ": is " + v.type_name() + ", schema wants " + arg.dump());
      } else if (key == "enum") {
        if (std::find(arg.begin(), arg.end(), v) == arg.end()) errors.push_back(at + ": " + v.dump() + " not in enum");
      } else if (key == "required" && v.is_object()) {
        for (const json& k : arg)
          if (!v.contains(k.get<std::string>())) errors.push_back(at + ": missing key " + k.dump());
      } else if (key == "properties" && v.is_object()) {
        for (const auto& [name, sub] : arg.items())
          if (v.contains(name)) validate(sub, v[name], at + "." + name);
      } else if (key == "additionalProperties" && v.is_object()) {
        for (const auto& [name, value] : v.items())
          if (!s.contains("properties") || !s["properties"].contains(name)) validate(arg, value, at + "." + name);
      } else if (key == "items" && v.is_array()) {
        for (std::size_t i = 0; i < v.size(); ++i) validate(arg, v[i], at + "[" + std::to_string(i) + "]");
      } else if (key == "pattern" && v.is_string()) {
        if (!std::regex_search(v.get<std::string>(), std::regex(arg.get<std::string>())))
          errors.push_back(at + ": " + v.dump() + " does not match " + arg.dump());
      } else if (key == "minimum" && v.is_number()) {
        if (v.get<double>() < arg.get<double>()) errors.push_back(at + ": " + v.dump() + " below minimum");
      } else if (key == "$ref") {
        validate(root.at(json::json_pointer(arg.get<std::string>().substr(1))), v, at);
      } else if (key != "$schema" && key != "$id" && key != "$defs" && key != "title" && key != "description" &&
                 key != "required" && key != "properties" && key != "additionalProperties" && key != "items" &&
                 key != "pattern" && key != "minimum") {
        errors.push_back(at + ": schema keyword '" + key + "' is not supported by this validator");
      }
    }
  }
};

inline std::vector<std::string> schema_errors(const std::filesystem::path& schema_file, const json& instance) {
  std::ifstream in(schema_file);
  const json schema = json::parse(in);
  SchemaValidator v{schema, {}};
  v.validate(schema, instance, "$");
  return v.errors;
}

}  // namespace boundary::test
