// The gate's multi-process implementation (GateVariant::Kind::multi_process): R processes of
// `boundary-verify rank` on this machine's GPU, the bound rows split over them.
#pragma once

#include <boundary/verify/gate.hpp>

namespace boundary::cli {

inline constexpr int kMultiProcessRanks = 2;

// out (and new_stream when v.store) as the R ranks computed them, fused and eager. Where any
// rank's output differs from rank 0's fused one, the element is 0xFFFF / 0xFFFFFFFF, a pattern no
// correct output has (a NaN result is canonical), so that the gate reports the disagreement as a
// mismatch whatever the emulator says. A rank that fails throws gpu::CudaError with its log.
StageValues run_multi_process(const Constants& constants, const BoundTensors& bound, const GateVariant& v);

}  // namespace boundary::cli
