#include "ptx_audit.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <set>
#include <sstream>

namespace boundary::ptx {

namespace {

std::string_view trim(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r{}");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r{}");
  return s.substr(first, last - first + 1);
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> parts;
  std::size_t start = 0;
  while (true) {
    const auto end = s.find(sep, start);
    parts.emplace_back(trim(s.substr(start, end == std::string_view::npos ? std::string_view::npos : end - start)));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

bool has_part(const std::vector<std::string>& parts, std::string_view p) {
  return std::find(parts.begin(), parts.end(), p) != parts.end();
}

bool is_float_type(std::string_view t) {
  return t == "f16" || t == "f16x2" || t == "bf16" || t == "bf16x2" || t == "f32" || t == "f64";
}

bool is_narrow_float(std::string_view t) { return t == "f16" || t == "f16x2" || t == "bf16" || t == "bf16x2"; }

bool is_float_arithmetic(const std::vector<std::string>& parts) {
  static const std::set<std::string, std::less<>> kBases = {"add", "sub",  "mul", "fma", "mad", "div",  "rcp",
                                                             "sqrt", "rsqrt", "ex2", "lg2", "sin", "cos", "tanh",
                                                             "abs", "neg", "min", "max", "copysign"};
  return kBases.contains(parts.front()) && std::any_of(parts.begin() + 1, parts.end(), is_float_type);
}

// The name after .entry or .func (past a .func's return parameter in parentheses).
std::string unit_name(std::string_view rest) {
  rest = trim(rest);
  if (!rest.empty() && rest.front() == '(') rest = trim(rest.substr(std::min(rest.size(), rest.find(')') + 1)));
  return std::string(rest.substr(0, rest.find_first_of("( \t;")));
}

// The start of a unit on a line at depth 0: ".entry" or ".func", after .visible/.weak/.extern.
bool unit_start(std::string_view line, bool& entry, std::string& name) {
  std::string_view s = trim(line);
  for (std::string_view linkage : {".visible ", ".weak ", ".extern "})
    if (s.starts_with(linkage)) s = trim(s.substr(linkage.size()));
  for (auto [word, is_entry] : {std::pair{std::string_view(".entry "), true}, {std::string_view(".func "), false}}) {
    if (s.starts_with(word)) {
      entry = is_entry;
      name = unit_name(s.substr(word.size()));
      return true;
    }
  }
  return false;
}

void add_statement(Unit& u, int line, std::string_view stmt) {
  stmt = trim(stmt);
  if (stmt.empty()) return;
  if (stmt.starts_with(".local")) u.declares_local = true;
  if (stmt.front() == '.') return;  // a declaration
  if (stmt.back() == ':') return;   // a label
  if (stmt.front() == '@') stmt = trim(stmt.substr(std::min(stmt.size(), stmt.find_first_of(" \t"))));
  Instruction ins;
  ins.line = line;
  ins.text = std::string(stmt);
  const auto space = stmt.find_first_of(" \t");
  ins.opcode = std::string(stmt.substr(0, space));
  if (space != std::string_view::npos) ins.operands = split(stmt.substr(space), ',');
  if (ins.opcode.find(".local") != std::string::npos) u.declares_local = true;
  u.instructions.push_back(std::move(ins));
}

}  // namespace

std::vector<Unit> split_units(std::string_view ptx) {
  std::vector<Unit> units;
  Unit* open = nullptr;  // the unit whose declaration or body is being read
  bool in_body = false;
  int depth = 0;
  int line_number = 0;
  std::size_t pos = 0;
  while (pos <= ptx.size()) {
    const auto end = std::min(ptx.size(), ptx.find('\n', pos));
    std::string_view line = ptx.substr(pos, end - pos);
    pos = end + 1;
    ++line_number;
    if (const auto comment = line.find("//"); comment != std::string_view::npos) line = line.substr(0, comment);
    if (depth == 0 && !in_body) {
      bool entry = false;
      std::string name;
      if (unit_start(line, entry, name)) {
        units.push_back(Unit{name, entry, false, {}});
        open = &units.back();
      }
    }
    Unit* const reading = open;
    const bool body_before = in_body;
    for (char c : line) {
      if (c == '{') {
        if (depth++ == 0 && open) in_body = true;
      } else if (c == '}' && depth > 0 && --depth == 0 && in_body) {
        in_body = false;
        open = nullptr;
      }
    }
    if (body_before || in_body) {
      for (const std::string& stmt : split(line, ';')) add_statement(*reading, line_number, stmt);
    } else if (open && line.find(';') != std::string_view::npos) {
      units.pop_back();  // a prototype (.extern .func ...;), no body
      open = nullptr;
    }
    if (end == ptx.size()) break;
  }
  return units;
}

std::string_view rule_name(Rule r) {
  switch (r) {
    case Rule::unnamed_arithmetic: return "unnamed_arithmetic";
    case Rule::flush_to_zero: return "flush_to_zero";
    case Rule::conversion_rounding: return "conversion_rounding";
    case Rule::fma_outside_squares: return "fma_outside_squares";
    case Rule::rsqrt_count: return "rsqrt_count";
    case Rule::local_memory: return "local_memory";
  }
  return "?";
}

std::vector<Finding> audit(const Unit& u, bool fused) {
  static const std::set<std::string, std::less<>> kContract = {"add.rn.f32", "mul.rn.f32", "fma.rn.f32",
                                                               "rsqrt.approx.ftz.f32"};
  const std::string name = demangle(u.name);
  std::vector<Finding> out;
  std::set<std::string> rsqrt_operands;
  int rsqrts = 0;
  for (const Instruction& ins : u.instructions) {
    if (ins.opcode.starts_with("rsqrt.") && ins.operands.size() >= 2) rsqrt_operands.insert(ins.operands[1]);
    if (ins.opcode == "rsqrt.approx.ftz.f32") ++rsqrts;
  }
  for (const Instruction& ins : u.instructions) {
    const std::vector<std::string> parts = split(ins.opcode, '.');
    if (is_float_arithmetic(parts)) {
      if (!kContract.contains(ins.opcode))
        out.push_back({name, Rule::unnamed_arithmetic, ins.line, ins.text});
      if (parts.front() == "fma" && ins.operands.size() == 4 && ins.operands[1] != ins.operands[2] &&
          !rsqrt_operands.contains(ins.operands[0]))
        out.push_back({name, Rule::fma_outside_squares, ins.line, ins.text});
    } else if (has_part(parts, "ftz")) {
      out.push_back({name, Rule::flush_to_zero, ins.line, ins.text});
    }
    if (parts.front() == "cvt" && parts.size() >= 3) {
      const std::string& to = parts[parts.size() - 2];
      const std::string& from = parts.back();
      if (is_narrow_float(to) && (from == "f32" || from == "f64") &&
          (!has_part(parts, "rn") || has_part(parts, "relu") || has_part(parts, "satfinite")))
        out.push_back({name, Rule::conversion_rounding, ins.line, ins.text});
    }
  }
  if (fused && u.entry) {
    if (rsqrts != 2)
      out.push_back({name, Rule::rsqrt_count, 0, std::to_string(rsqrts) + " rsqrt.approx.ftz.f32, the contract's two norms owe 2"});
    if (u.declares_local) out.push_back({name, Rule::local_memory, 0, ".local state space declared or used"});
  }
  return out;
}

std::vector<Finding> audit_module(std::string_view ptx, bool fused) {
  std::vector<Finding> out;
  for (const Unit& u : split_units(ptx)) {
    std::vector<Finding> f = audit(u, fused);
    out.insert(out.end(), f.begin(), f.end());
  }
  return out;
}

std::string format_findings(const std::vector<Finding>& findings, std::size_t limit) {
  std::ostringstream s;
  for (std::size_t i = 0; i < findings.size() && i < limit; ++i) {
    const Finding& f = findings[i];
    s << rule_name(f.rule) << ": " << f.unit;
    if (f.line > 0) s << ", PTX line " << f.line;
    s << ": " << f.detail << "\n";
  }
  if (findings.size() > limit) s << "... and " << findings.size() - limit << " more\n";
  return s.str();
}

std::vector<Resources> parse_ptxas_report(std::string_view report) {
  std::vector<Resources> out;
  std::istringstream lines{std::string(report)};
  std::string line;
  constexpr std::string_view kCompiling = "Compiling entry function '";
  while (std::getline(lines, line)) {
    if (const auto at = line.find(kCompiling); at != std::string::npos) {
      const auto start = at + kCompiling.size();
      out.push_back(Resources{line.substr(start, line.find('\'', start) - start)});
    } else if (out.empty()) {
      continue;
    } else if (line.find("bytes stack frame") != std::string::npos) {
      Resources& r = out.back();
      if (std::sscanf(line.c_str(), " %d bytes stack frame, %d bytes spill stores, %d bytes spill loads", &r.stack_frame,
                      &r.spill_stores, &r.spill_loads) != 3)
        r.stack_frame = r.spill_stores = r.spill_loads = -1;
    } else if (const auto used = line.find("Used "); used != std::string::npos) {
      if (std::sscanf(line.c_str() + used, "Used %d registers", &out.back().registers) != 1) out.back().registers = -1;
    }
  }
  return out;
}

std::string demangle(const std::string& mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> d(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && d ? std::string(d.get()) : mangled;
}

}  // namespace boundary::ptx
