// run_emulator: a Mutant to the entry point of its build.
#include "emulator_twins.hpp"

#include <boundary/mutant_emulators.hpp>

#include <stdexcept>
#include <string>

namespace boundary::mutants {

namespace {

// The list of emulator_twins.hpp is exactly the mutants with an emulator twin.
#define BOUNDARY_COUNT_TWIN(name) +(has_emulator_twin(Mutant::name) ? 1 : 1000)
static_assert(0 BOUNDARY_EMULATOR_TWINS(BOUNDARY_COUNT_TWIN) == kEmulatorTwins.size(),
              "BOUNDARY_EMULATOR_TWINS must list every mutant with an emulator twin, and only those");
#undef BOUNDARY_COUNT_TWIN

}  // namespace

void run_emulator(Mutant m, const Constants& constants, const ref::Operands& operands,
                  const ref::Inputs& inputs, const ref::Outputs& outputs, unsigned threads) {
  switch (m) {
    case Mutant::none:
      ref::Boundary(constants, operands).run(inputs, outputs, threads);
      return;
#define BOUNDARY_RUN_TWIN(name) \
  case Mutant::name:            \
    return detail::run_twin<Mutant::name>(constants, operands, inputs, outputs, threads);
      BOUNDARY_EMULATOR_TWINS(BOUNDARY_RUN_TWIN)
#undef BOUNDARY_RUN_TWIN
    default:
      break;
  }
  throw std::invalid_argument("mutant '" + std::string(mutant_name(m)) +
                              "' has no emulator twin: it exists only on the GPU launch path");
}

}  // namespace boundary::mutants
