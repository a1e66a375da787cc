// Planted bugs for the self-test (boundary-verify self-test, the CPU mutant replays): each is a
// plausible mistake a kernel engineer could make, compiled in only where BOUNDARY_MUTANT names it.
// Production code (BOUNDARY_MUTANT undefined or 0) compiles every `if constexpr (kMutant == ...)`
// branch away. The same switch drives the emulator's twin of a kernel mutant, so one grep for a
// mutant's name finds both.
#pragma once

#include <array>
#include <string_view>

#ifndef BOUNDARY_MUTANT
#define BOUNDARY_MUTANT 0
#endif

namespace boundary {

enum class Mutant : int {
  none = 0,
  warp_order,               // butterfly distances 1, 2, 4, 8, 16 instead of 16 .. 1
  cross_warp_order,         // warp totals added 7 .. 0 instead of 0 .. 7
  connection_fma,           // res = fma(alpha, s, beta * y_b): one rounding fewer
  y_b_unrounded,            // y used where y_b = bf16(y) is due
  z_unrounded,              // res used where z = bf16(res) is due
  rsqrt_recip_sqrt,         // r = 1 / sqrtf(...) instead of rsqrt.approx.ftz
  ftz_products,             // products flushed to zero when subnormal
  gain_unrounded,           // gamma = weight + g kept in FP32, not rounded to the weight dtype
  late_gates_wrong_columns, // late gates read column + 8 (GPU launch path only)
  pdl_wait_missing,         // griddepcontrol.wait left out (GPU launch path only)
  r1_ulp_off,               // r1 one ulp too large (next float up)
};

// Not `inline`: each translation unit keeps its own value, since one program links builds of the
// same sources with different BOUNDARY_MUTANT (an inline variable must be one entity program-wide).
constexpr Mutant kMutant = static_cast<Mutant>(BOUNDARY_MUTANT);

inline constexpr std::array<Mutant, 11> kAllMutants = {
    Mutant::warp_order,     Mutant::cross_warp_order, Mutant::connection_fma,
    Mutant::y_b_unrounded,  Mutant::z_unrounded,      Mutant::rsqrt_recip_sqrt,
    Mutant::ftz_products,   Mutant::gain_unrounded,   Mutant::late_gates_wrong_columns,
    Mutant::pdl_wait_missing, Mutant::r1_ulp_off};

constexpr std::string_view mutant_name(Mutant m) {
  switch (m) {
    case Mutant::none: return "none";
    case Mutant::warp_order: return "warp_order";
    case Mutant::cross_warp_order: return "cross_warp_order";
    case Mutant::connection_fma: return "connection_fma";
    case Mutant::y_b_unrounded: return "y_b_unrounded";
    case Mutant::z_unrounded: return "z_unrounded";
    case Mutant::rsqrt_recip_sqrt: return "rsqrt_recip_sqrt";
    case Mutant::ftz_products: return "ftz_products";
    case Mutant::gain_unrounded: return "gain_unrounded";
    case Mutant::late_gates_wrong_columns: return "late_gates_wrong_columns";
    case Mutant::pdl_wait_missing: return "pdl_wait_missing";
    case Mutant::r1_ulp_off: return "r1_ulp_off";
  }
  return "unknown";
}

// Whether the emulator has a twin of the mutant: the two launch-path bugs exist only on a GPU.
constexpr bool has_emulator_twin(Mutant m) {
  return m != Mutant::none && m != Mutant::late_gates_wrong_columns && m != Mutant::pdl_wait_missing;
}

}  // namespace boundary
