// run_emulator: a Mutant to the entry point of its build.
#include "emulator_twins.hpp"

#include <boundary/mutant_emulators.hpp>

#include <stdexcept>
#include <string>

namespace boundary::mutants {

void run_emulator(Mutant m, const Constants& constants, const ref::Operands& operands,
                  const ref::Inputs& inputs, const ref::Outputs& outputs, unsigned threads) {
  switch (m) {
    case Mutant::none:
      ref::Boundary(constants, operands).run(inputs, outputs, threads);
      return;
#define BOUNDARY_RUN_TWIN(name) \
  case Mutant::name:            \
    return detail::run_twin<Mutant::name>(constants, operands, inputs, outputs, threads);
#define BOUNDARY_MUTANT_ROW(name, where, what) BOUNDARY_IF_TWIN(where, BOUNDARY_RUN_TWIN(name))
#include <boundary/mutants.def>
#undef BOUNDARY_MUTANT_ROW
#undef BOUNDARY_RUN_TWIN
    default:
      break;
  }
  throw std::invalid_argument("mutant '" + std::string(mutant_name(m)) +
                              "' has no emulator twin: it exists only on the GPU launch path");
}

}  // namespace boundary::mutants
