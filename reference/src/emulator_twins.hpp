// The entry point of each planted-bug build of the emulator: run_twin<m> is defined by
// emulator_twin.cpp compiled with BOUNDARY_MUTANT = m (reference/CMakeLists.txt), and called by
// run_emulator. The list names every mutant with an emulator twin; mutant_emulators.cpp checks
// it against has_emulator_twin, and the linker finds any build that CMake left out.
#pragma once

#include <boundary/mutant.hpp>
#include <boundary/reference.hpp>

#define BOUNDARY_EMULATOR_TWINS(X)                                                             \
  X(warp_order) X(cross_warp_order) X(connection_fma) X(y_b_unrounded) X(z_unrounded)          \
  X(rsqrt_recip_sqrt) X(ftz_products) X(gain_unrounded) X(r1_ulp_off)

namespace boundary::mutants::detail {

template <Mutant m>
void run_twin(const Constants& constants, const ref::Operands& operands, const ref::Inputs& inputs,
              const ref::Outputs& outputs, unsigned threads);

#define BOUNDARY_DECLARE_TWIN(name)                                                              \
  template <>                                                                                    \
  void run_twin<Mutant::name>(const Constants&, const ref::Operands&, const ref::Inputs&,        \
                              const ref::Outputs&, unsigned);
BOUNDARY_EMULATOR_TWINS(BOUNDARY_DECLARE_TWIN)
#undef BOUNDARY_DECLARE_TWIN

}  // namespace boundary::mutants::detail
