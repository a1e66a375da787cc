// The emulator's planted-bug builds (every Mutant with has_emulator_twin), linked side by side with
// the production emulator: the CPU twins of the kernel mutants, and what the self-test and the
// vacuity checks run to show that a suite or a fixture set can catch each bug.
#pragma once

#include <boundary/mutant.hpp>
#include <boundary/reference.hpp>

#include <algorithm>
#include <array>

namespace boundary::mutants {

// Every mutant with an emulator twin, in enum order.
inline constexpr auto kEmulatorTwins = [] {
  std::array<Mutant, std::count_if(kAllMutants.begin(), kAllMutants.end(), has_emulator_twin)> twins{};
  std::copy_if(kAllMutants.begin(), kAllMutants.end(), twins.begin(), has_emulator_twin);
  return twins;
}();

// Runs the emulator compiled with BOUNDARY_MUTANT = m; m == Mutant::none runs the production
// emulator. Same arguments, results and errors as ref::Boundary(constants, operands).run(inputs,
// outputs, threads). Throws std::invalid_argument for a mutant without an emulator twin.
void run_emulator(Mutant m, const Constants& constants, const ref::Operands& operands,
                  const ref::Inputs& inputs, const ref::Outputs& outputs, unsigned threads = 1);

}  // namespace boundary::mutants
