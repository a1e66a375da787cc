// JUnit XML for CI systems: the gate's report as test cases, one per suite x implementation x
// pair (failures carry the first mismatches), plus the vacuity check, the fixture replay and,
// when they did not run, the GPU checks as skipped.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace boundary::junit {

struct TestCase {
  std::string classname, name;
  std::optional<std::string> failure_message, failure_text;
  std::optional<std::string> skipped;
};

// XML text with &, <, >, " and ' escaped, and control characters other than tab and newline
// dropped (XML 1.0 cannot hold them).
std::string escape(std::string_view text);
std::string to_xml(const std::string& suite_name, const std::vector<TestCase>& cases);

// The test cases of a gate report (report-schema.json, command "gate").
std::vector<TestCase> gate_cases(const nlohmann::json& report);
std::string gate_xml(const nlohmann::json& report);

}  // namespace boundary::junit
