// The kernels' PTX against the contract's instructions, without a GPU (ctest label cpu): every fused
// kernel (each layout and variant, the production and the debug build) computes with add.rn,
// mul.rn, fma.rn only on a square or a norm factor's argument, and two rsqrt.approx.ftz, rounds its
// conversions to nearest even and keeps no local memory (ptxas: no stack frame, no spill). The
// rules are first seen firing on written-out PTX, then on the fused kernels built with planted bugs
// (contract-breaking instructions) and with --use_fast_math: each must be caught in every kernel.
#include "ptx_audit.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

using namespace boundary::ptx;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot read " << path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fused kernel as the project writes one, in small: rounded products and sums, a square
// accumulated by fma, the norm factor's fma, two rsqrt, a BF16 pair, a comparison, inline asm.
constexpr std::string_view kClean = R"(
.extern .func (.param .b32 func_retval0) vprintf
(
	.param .b64 vprintf_param_0
)
;
.visible .entry _Z6kernelv(
	.param .u64 _Z6kernelv_param_0
)
.maxntid 128, 1, 1
{
	.reg .f32 	%f<12>;
	mul.rn.f32 	%f1, %f2, %f3;
	add.rn.f32 	%f4, %f1, %f5;
	fma.rn.f32 	%f6, %f2, %f2, %f4;
	fma.rn.f32 	%f7, %f6, %f8, %f5;
	// begin inline asm
	{ .reg .b32 t; rsqrt.approx.ftz.f32 %f9, %f7; }
	// end inline asm
	rsqrt.approx.ftz.f32 %f10, %f7;
	cvt.rn.bf16x2.f32 	%r1, %f9, %f10;
	setp.lt.f32 	%p1, %f1, 0f00000000;
	@%p1 bra 	$L__BB0_2;
$L__BB0_2:
	ret;
}
.func (.param .b32 func_retval0) _Z6helperf(
	.param .b32 _Z6helperf_param_0
)
{
	add.rn.f32 	%f1, %f2, %f3;
	ret; }
)";

// kClean with `line` added before its ret.
std::string with(std::string_view line) {
  std::string s(kClean);
  s.insert(s.find("\tret;"), std::string(line) + "\n");
  return s;
}

bool only_rule(const std::vector<Finding>& f, Rule r) {
  return f.size() == 1 && f.front().rule == r;
}

// How many of the module's entries have a finding of rule r.
int entries_with(const std::string& ptx, Rule r) {
  int n = 0;
  for (const Unit& u : split_units(ptx)) {
    if (!u.entry) continue;
    const std::vector<Finding> f = audit(u, true);
    n += std::any_of(f.begin(), f.end(), [r](const Finding& x) { return x.rule == r; }) ? 1 : 0;
  }
  return n;
}

int entry_count(const std::string& ptx) {
  int n = 0;
  for (const Unit& u : split_units(ptx)) n += u.entry ? 1 : 0;
  return n;
}

}  // namespace

TEST_CASE("split_units: entries and functions with bodies, a prototype none; inline asm's braces stay inside; a body's last line read") {
  const std::vector<Unit> units = split_units(kClean);
  REQUIRE(units.size() == 2);
  CHECK(units[0].name == "_Z6kernelv");
  CHECK(units[0].entry);
  CHECK(units[0].instructions.size() == 10);
  CHECK(units[0].instructions[4].opcode == "rsqrt.approx.ftz.f32");
  CHECK(units[0].instructions[4].operands == std::vector<std::string>{"%f9", "%f7"});
  CHECK(units[0].instructions[8].opcode == "bra");
  CHECK(units[1].name == "_Z6helperf");
  CHECK_FALSE(units[1].entry);
  CHECK(units[1].instructions.size() == 2);
}

TEST_CASE("audit: the contract's instructions pass, fused or not") {
  CHECK(audit_module(kClean, true).empty());
  CHECK(audit_module(kClean, false).empty());
}

TEST_CASE("audit: each rule fires on an instruction that breaks it") {
  struct Case {
    std::string_view line;
    Rule rule;
  };
  const std::array cases = {
      Case{"\tadd.f32 \t%f1, %f2, %f3;", Rule::unnamed_arithmetic},  // no rounding named: contractible
      Case{"\tmul.rn.ftz.f32 \t%f1, %f2, %f3;", Rule::unnamed_arithmetic},
      Case{"\tsub.rn.f32 \t%f1, %f2, %f3;", Rule::unnamed_arithmetic},
      Case{"\tsqrt.rn.f32 \t%f1, %f2;", Rule::unnamed_arithmetic},
      Case{"\trcp.rn.f32 \t%f1, %f2;", Rule::unnamed_arithmetic},
      Case{"\tabs.f32 \t%f1, %f2;", Rule::unnamed_arithmetic},
      Case{"\tadd.rn.bf16x2 \t%r1, %r2, %r3;", Rule::unnamed_arithmetic},
      Case{"\tsetp.lt.ftz.f32 \t%p2, %f1, %f2;", Rule::flush_to_zero},
      Case{"\tcvt.rz.bf16.f32 \t%rs1, %f1;", Rule::conversion_rounding},
      Case{"\tcvt.rn.relu.bf16x2.f32 \t%r1, %f1, %f2;", Rule::conversion_rounding},
      Case{"\tfma.rn.f32 \t%f11, %f2, %f3, %f4;", Rule::fma_outside_squares},
  };
  for (const Case& c : cases) {
    const std::vector<Finding> f = audit_module(with(c.line), false);
    CHECK_MESSAGE(only_rule(f, c.rule), c.line << " gave:\n" << format_findings(f));
  }
  // The fused rules: only for entries of fused kernels.
  const std::string third_rsqrt = with("\trsqrt.approx.ftz.f32 \t%f11, %f7;");
  CHECK(only_rule(audit_module(third_rsqrt, true), Rule::rsqrt_count));
  CHECK(audit_module(third_rsqrt, false).empty());
  const std::string local = with("\t.local .align 8 .b8 \t__local_depot0[8];");
  CHECK(only_rule(audit_module(local, true), Rule::local_memory));
  CHECK(audit_module(local, false).empty());
  const std::string local_store = with("\tst.local.u64 \t[%rd1], %rd2;");
  CHECK(only_rule(audit_module(local_store, true), Rule::local_memory));
}

TEST_CASE("format_findings: the rule, the kernel demangled, the PTX line and instruction") {
  const std::string ptx = with("\tabs.f32 \t%f1, %f2;");
  const auto line = 1 + std::count(ptx.begin(), ptx.begin() + static_cast<std::ptrdiff_t>(ptx.find("abs.f32")), '\n');
  const std::vector<Finding> f = audit_module(ptx, true);
  REQUIRE(f.size() == 1);
  CHECK(format_findings(f) == "unnamed_arithmetic: kernel(), PTX line " + std::to_string(line) + ": abs.f32 \t%f1, %f2\n");
}

TEST_CASE("parse_ptxas_report: registers, stack frame and spills of each entry") {
  const std::string report =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function '_Z1av' for 'sm_90'\n"
      "ptxas info    : Function properties for _Z1av\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 64 registers, used 1 barriers\n"
      "ptxas info    : Compile time = 55.207 ms\n"
      "ptxas info    : Compiling entry function '_Z1bv' for 'sm_90'\n"
      "ptxas info    : Function properties for _Z1bv\n"
      "    96 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Used 40 registers, used 0 barriers, 96 bytes cumulative stack size\n";
  const std::vector<Resources> r = parse_ptxas_report(report);
  REQUIRE(r.size() == 2);
  CHECK(r[0].name == "_Z1av");
  CHECK(r[0].registers == 64);
  CHECK(r[0].stack_frame == 0);
  CHECK(r[0].spill_stores == 0);
  CHECK(r[0].spill_loads == 0);
  CHECK(r[1].name == "_Z1bv");
  CHECK(r[1].registers == 40);
  CHECK(r[1].stack_frame == 96);
  CHECK(r[1].spill_stores == 8);
  CHECK(r[1].spill_loads == 4);
}

TEST_CASE("the fused kernels' PTX: every layout and variant keeps to the contract's instructions") {
  for (const char* path : {BOUNDARY_PTX_fused, BOUNDARY_PTX_debug}) {
    const std::string ptx = read_text(path);
    const std::vector<Unit> units = split_units(ptx);
    int cluster = 0, ring1 = 0, ring2 = 0, ring4 = 0;
    for (const Unit& u : units) {
      if (!u.entry) continue;
      const std::string name = demangle(u.name);
      cluster += name.find("cluster_boundary_kernel<") != std::string::npos;
      ring1 += name.find("ring_kernel<1,") != std::string::npos;
      ring2 += name.find("ring_kernel<2,") != std::string::npos;
      ring4 += name.find("ring_kernel<4,") != std::string::npos;
    }
    INFO(path);
    // The layouts (cluster; cta, pair, quad: ring_kernel<1, 2, 4>), each in its variants.
    CHECK(cluster >= 8);
    CHECK(ring1 >= 8);
    CHECK(ring2 >= 8);
    CHECK(ring4 >= 8);
    const std::vector<Finding> f = audit_module(ptx, true);
    CHECK_MESSAGE(f.empty(), format_findings(f));
  }
}

TEST_CASE("the eager chain's and the all-reduce kernel's PTX: the contract's arithmetic") {
  for (const char* path : {BOUNDARY_PTX_eager, BOUNDARY_PTX_all_reduce}) {
    const std::string ptx = read_text(path);
    INFO(path);
    CHECK(entry_count(ptx) >= 1);
    const std::vector<Finding> f = audit_module(ptx, false);
    CHECK_MESSAGE(f.empty(), format_findings(f));
  }
}

TEST_CASE("ptxas: no fused kernel has a stack frame or spills") {
  for (const char* path : {BOUNDARY_PTX_fused, BOUNDARY_PTX_debug}) {
    INFO(path);
    const std::string cubin = std::string(BOUNDARY_PTX_WORK_DIR) + "/test_kernel_ptx.cubin";
    const std::string command = std::string("'") + BOUNDARY_PTXAS + "' -arch=sm_90 -v '" + path + "' -o '" + cubin + "' 2>&1";
    FILE* pipe = popen(command.c_str(), "r");
    REQUIRE_MESSAGE(pipe != nullptr, "cannot run " << command);
    std::string report;
    std::array<char, 4096> buffer{};
    while (std::size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe)) report.append(buffer.data(), n);
    const int status = pclose(pipe);
    REQUIRE_MESSAGE(status == 0, command << " failed:\n" << report);
    const std::vector<Resources> resources = parse_ptxas_report(report);
    CHECK(static_cast<int>(resources.size()) == entry_count(read_text(path)));
    for (const Resources& r : resources) {
      INFO(demangle(r.name));
      CHECK(r.stack_frame == 0);
      CHECK(r.spill_stores == 0);
      CHECK(r.spill_loads == 0);
      CHECK(r.registers > 0);
    }
  }
}

TEST_CASE("planted bugs and fast math: caught in every fused kernel") {
  const std::string connection_fma = read_text(BOUNDARY_PTX_mutant_connection_fma);
  const int n = entry_count(connection_fma);
  REQUIRE(n >= 32);
  CHECK(entries_with(connection_fma, Rule::fma_outside_squares) == n);
  const std::string rsqrt_recip_sqrt = read_text(BOUNDARY_PTX_mutant_rsqrt_recip_sqrt);
  CHECK(entries_with(rsqrt_recip_sqrt, Rule::rsqrt_count) == n);
  CHECK(entries_with(rsqrt_recip_sqrt, Rule::unnamed_arithmetic) == n);  // sqrt.rn, rcp.rn
  CHECK(entries_with(read_text(BOUNDARY_PTX_mutant_ftz_products), Rule::unnamed_arithmetic) == n);  // abs, copysign
  CHECK(entries_with(read_text(BOUNDARY_PTX_fast_math), Rule::unnamed_arithmetic) == n);  // add.rn.ftz, ...
}
