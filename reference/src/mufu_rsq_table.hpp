// The packed MUFU.RSQ deltas (format: <boundary/rsqrt_model.hpp>), built into the library.
#pragma once

extern "C" const unsigned char boundary_mufu_rsq_delta[];
