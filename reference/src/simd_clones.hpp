// The emulator's hot loops are built twice, for baseline x86-64 and for x86-64-v3 (AVX2, FMA),
// and the loader picks one for the host CPU: the v3 build runs the same IEEE operations
// twice as wide. Both give the same bits: -ffp-contract=off forbids contraction in either, and
// vectorization never reassociates FP arithmetic without -ffast-math.
#pragma once

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__SANITIZE_ADDRESS__)
#define BOUNDARY_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define BOUNDARY_SIMD_CLONES
#endif

// Helpers of a cloned function must be inlined into each clone to get its instruction set.
#define BOUNDARY_INLINE [[gnu::always_inline]] inline
