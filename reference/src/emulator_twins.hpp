// The entry point of each planted-bug build of the emulator: run_twin<m> is defined by
// emulator_twin.cpp compiled with BOUNDARY_MUTANT = m (reference/CMakeLists.txt), and called by
// run_emulator, for each `twin` row of <boundary/mutants.def>.
#pragma once

#include <boundary/mutant.hpp>
#include <boundary/reference.hpp>

// BOUNDARY_IF_TWIN(where, code): code for a `twin` row of the list, nothing for a `gpu` row.
#define BOUNDARY_IF_TWIN(where, ...) BOUNDARY_IF_TWIN_##where(__VA_ARGS__)
#define BOUNDARY_IF_TWIN_twin(...) __VA_ARGS__
#define BOUNDARY_IF_TWIN_gpu(...)

namespace boundary::mutants::detail {

template <Mutant m>
void run_twin(const Constants& constants, const ref::Operands& operands, const ref::Inputs& inputs,
              const ref::Outputs& outputs, unsigned threads);

#define BOUNDARY_DECLARE_TWIN(name)                                                              \
  template <>                                                                                    \
  void run_twin<Mutant::name>(const Constants&, const ref::Operands&, const ref::Inputs&,        \
                              const ref::Outputs&, unsigned);
#define BOUNDARY_MUTANT_ROW(name, where, what) BOUNDARY_IF_TWIN(where, BOUNDARY_DECLARE_TWIN(name))
#include <boundary/mutants.def>
#undef BOUNDARY_MUTANT_ROW
#undef BOUNDARY_DECLARE_TWIN

}  // namespace boundary::mutants::detail
