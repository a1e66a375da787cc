// Kernels that surround the boundary in the GPU tests: a producer of the branch, a consumer of
// the outputs (programmatic dependent launch on both sides of the boundary), and a poison fill.
// Each launcher returns the launch's error; the tests check it.
#pragma once

#include <cuda_runtime_api.h>

#include <cstddef>

namespace boundary::gpu::test {

// Copies `bytes` (a multiple of 16) from src to dst; launched normally (no PDL attribute).
// It triggers griddepcontrol.launch_dependents first and then sleeps about delay_ns before
// copying: a PDL dependent (the boundary) may then start at once, and one that read the branch
// before its griddepcontrol.wait would see the previous step's rows.
cudaError_t launch_producer(const void* src, void* dst, std::size_t bytes, unsigned delay_ns, cudaStream_t stream);

// Launched with cudaLaunchAttributeProgrammaticStreamSerialization: executes griddepcontrol.wait,
// then copies a -> a_copy and b -> b_copy (byte counts multiples of 16; b may be null with
// b_bytes 0). Without its wait it could read the boundary's outputs before they are written.
cudaError_t launch_consumer(const void* a, void* a_copy, std::size_t a_bytes, const void* b, void* b_copy,
                            std::size_t b_bytes, cudaStream_t stream);

// Writes 0xFF into `bytes` (a multiple of 16) at dst. A kernel rather than cudaMemsetAsync, so
// that in a captured graph the boundary's programmatic edge comes from a kernel node, the case
// PDL in graphs is defined for.
cudaError_t launch_poison(void* dst, std::size_t bytes, cudaStream_t stream);

// Loads the three kernels' module now, as DraftBoundary::prepare does for its own: a lazily
// loaded kernel's first launch must not happen inside a stream capture.
cudaError_t prepare_kernels();

}  // namespace boundary::gpu::test
