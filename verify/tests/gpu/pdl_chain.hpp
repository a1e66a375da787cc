// Kernels that surround the boundary in the GPU tests: a consumer of the outputs (programmatic
// dependent launch after the boundary) and a poison fill; the producer of the branch in front of
// it is the diagnostics library's launch_producer (boundary/gpu/diagnostics.hpp).
// Each launcher returns the launch's error; the tests check it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace boundary::gpu::test {

// Launched with cudaLaunchAttributeProgrammaticStreamSerialization: executes griddepcontrol.wait,
// then copies a -> a_copy and b -> b_copy (byte counts multiples of 16; b may be null with
// b_bytes 0). Without its wait it could read the boundary's outputs before they are written.
cudaError_t launch_consumer(const void* a, void* a_copy, std::size_t a_bytes, const void* b, void* b_copy,
                            std::size_t b_bytes, cudaStream_t stream);

// Writes 0xFF into `bytes` (a multiple of 16) at dst. A kernel rather than cudaMemsetAsync, so
// that in a captured graph the boundary's programmatic edge comes from a kernel node, the case
// PDL in graphs is defined for.
cudaError_t launch_poison(void* dst, std::size_t bytes, cudaStream_t stream);

// Loads the consumer's, the poison's and the producer's modules now, as DraftBoundary::prepare
// does for its own: a lazily loaded kernel's first launch must not happen inside a stream capture.
cudaError_t prepare_kernels();

}  // namespace boundary::gpu::test
