// Planted bugs for the self-test (boundary-verify self-test, the CPU mutant replays): each is a
// plausible mistake a kernel engineer could make, compiled in only where BOUNDARY_MUTANT names it.
// The list of them is <boundary/mutants.def>, and only there.
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
#define BOUNDARY_MUTANT_ROW(name, where, what) name,
#include <boundary/mutants.def>
#undef BOUNDARY_MUTANT_ROW
};

// Not `inline`: each translation unit keeps its own value, since one program links builds of the
// same sources with different BOUNDARY_MUTANT (an inline variable must be one entity program-wide).
constexpr Mutant kMutant = static_cast<Mutant>(BOUNDARY_MUTANT);

inline constexpr std::array kAllMutants = {
#define BOUNDARY_MUTANT_ROW(name, where, what) Mutant::name,
#include <boundary/mutants.def>
#undef BOUNDARY_MUTANT_ROW
};

constexpr std::string_view mutant_name(Mutant m) {
  switch (m) {
    case Mutant::none: return "none";
#define BOUNDARY_MUTANT_ROW(name, where, what) \
  case Mutant::name:                           \
    return #name;
#include <boundary/mutants.def>
#undef BOUNDARY_MUTANT_ROW
  }
  return "unknown";
}

// Whether the emulator has a twin of the mutant (`twin` in the list; `gpu`: the launch-path bugs
// exist only on a GPU).
constexpr bool has_emulator_twin(Mutant m) {
  switch (m) {
    case Mutant::none: return false;
#define BOUNDARY_MUTANT_ROW(name, where, what) \
  case Mutant::name:                           \
    return std::string_view(#where) == "twin";
#include <boundary/mutants.def>
#undef BOUNDARY_MUTANT_ROW
  }
  return false;
}

}  // namespace boundary
