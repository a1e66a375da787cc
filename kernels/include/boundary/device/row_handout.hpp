// A kernel's row hand-out as the kernels take it (row_handout.cuh): a plain struct, shared by
// host and device code.
#pragma once

#include <cstdint>

namespace boundary::dev {

struct RowHandout {
  unsigned long long* words = nullptr;  // [rows, done] of the boundary object; nullptr: rows fixed per CTA
  std::uint32_t tag = 0;                // this launch's, never 0
};

}  // namespace boundary::dev
