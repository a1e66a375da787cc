// io::unsigned_decimal (boundary/input_limits.hpp) apart from the file limits: only the command
// line's sources compile CLI11, the parsers (and their fuzz harnesses) do not.
#include <boundary/verify/input_limits.hpp>

#include <CLI/CLI.hpp>

#include <charconv>
#include <cstdint>
#include <string>
#include <system_error>

namespace boundary::io {

CLI::Validator unsigned_decimal() {
  return CLI::Validator(
      [](const std::string& text) -> std::string {
        std::uint64_t value = 0;
        const char* end = text.data() + text.size();
        const auto [at, error] = std::from_chars(text.data(), end, value);
        if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
          return "expected a decimal integer >= 0, got '" + brief_text(text) + "'";
        if (error == std::errc::result_out_of_range || at != end)
          return "expected an integer below 2^64, got " + brief_text(text);
        return {};
      },
      "UINT64");
}

}  // namespace boundary::io
