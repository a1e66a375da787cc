// One planted-bug build's entry point, compiled once per emulator twin with BOUNDARY_MUTANT set
// (and BOUNDARY_TWIN_NAME, its name, to check that CMake's number is the mutant it means).
#include "emulator_twins.hpp"

static_assert(boundary::has_emulator_twin(boundary::kMutant), "BOUNDARY_MUTANT names no emulator twin");
static_assert(boundary::mutant_name(boundary::kMutant) == BOUNDARY_TWIN_NAME,
              "BOUNDARY_MUTANT and BOUNDARY_TWIN_NAME name different mutants");

namespace boundary::mutants::detail {

template <>
void run_twin<kMutant>(const Constants& constants, const ref::Operands& operands, const ref::Inputs& inputs,
                       const ref::Outputs& outputs, unsigned threads) {
  ref::Boundary(constants, operands).run(inputs, outputs, threads);  // this build's Boundary
}

}  // namespace boundary::mutants::detail
