// The kernels' PTX read against the contract's instructions (contract sections 2 and 4), without a
// GPU: the check of the CI that the SASS summary of a device run (verify/sass_summary.sh) makes on
// the machine code. PTX is what nvcc hands ptxas; ptxas keeps an operation with an explicit
// rounding (add.rn, mul.rn, fma.rn) as it is, never contracting or flushing it, so these rules on
// the PTX hold for the SASS too.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace boundary::ptx {

// One kernel (.entry) or device function (.func) of a PTX module and its instructions, each with
// its line number in the module (from 1).
struct Instruction {
  int line = 0;
  std::string text;    // without the predicate and the ';'
  std::string opcode;  // e.g. "fma.rn.f32"
  std::vector<std::string> operands;
};

struct Unit {
  std::string name;  // as mangled in the PTX
  bool entry = false;
  bool declares_local = false;  // a .local state space: a stack frame in memory
  std::vector<Instruction> instructions;
};

std::vector<Unit> split_units(std::string_view ptx);

enum class Rule {
  // Floating-point arithmetic other than the contract's four: add.rn.f32, mul.rn.f32, fma.rn.f32,
  // rsqrt.approx.ftz.f32 (an operation without .rn may be contracted; .ftz flushes subnormals).
  unnamed_arithmetic,
  // .ftz on any other instruction (a comparison or a conversion that flushes its inputs).
  flush_to_zero,
  // A narrowing conversion of a float to BF16/F16 without round-to-nearest-even (.rn).
  conversion_rounding,
  // An fma that is neither a square accumulated (fma(a, a, s), acc with fma_squares) nor the norm
  // factor's argument (its result the operand of an rsqrt): the connection is never an fma.
  fma_outside_squares,
  // A fused kernel without exactly two rsqrt.approx.ftz.f32 (r1 and r2).
  rsqrt_count,
  // Local memory in a fused kernel.
  local_memory,
};

std::string_view rule_name(Rule r);

struct Finding {
  std::string unit;  // demangled
  Rule rule;
  int line = 0;  // 0: the unit as a whole
  std::string detail;
};

// fused: the unit is a fused boundary kernel, which also owes two norm factors and no local memory.
std::vector<Finding> audit(const Unit& u, bool fused);

// Every unit of a module; the fused rules for its entries where fused is set.
std::vector<Finding> audit_module(std::string_view ptx, bool fused);

// One line per finding, the first `limit` of them.
std::string format_findings(const std::vector<Finding>& findings, std::size_t limit = 12);

// ptxas -v's report of one kernel: registers and the bytes of its stack frame and spills.
struct Resources {
  std::string name;  // as mangled
  int registers = -1;
  int stack_frame = -1;
  int spill_stores = -1;
  int spill_loads = -1;
};

std::vector<Resources> parse_ptxas_report(std::string_view report);

std::string demangle(const std::string& mangled);

}  // namespace boundary::ptx
