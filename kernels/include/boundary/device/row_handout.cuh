// Rows handed out at run time: a persistent grid whose CTAs take their next row from a counter
// instead of a fixed stride. SMs stream at different rates (on an H200 the CTAs of a statically
// divided m = 8192 finished 179 to 219 us after their start); taken from a counter, every CTA
// ends within a row of the others.
//
// The counter is state that outlives a launch: it belongs to one boundary object, and it must be
// back at zero when the next launch starts. Two words:
//   rows = tag << 32 | rows handed out;   done = CTAs that have left,
// the tag naming the launch that holds the counter (the host's sequence number, a kernel
// parameter, never 0, baked into a CUDA graph like any other). A launch claims the idle word (0)
// for its tag; the CTA that leaves last resets both words. A
// CTA that finds another launch's tag traps: two launches of one object at once (two streams)
// would otherwise skip and repeat rows silently. The words are only touched after the PDL wait,
// when the previous launch on the stream has finished, reset included: handout_join waits for it
// itself, since a planted-bug build may leave out the kernel's own PDL wait.
#pragma once

#include <boundary/device/row_handout.hpp>

namespace boundary::dev {

// The thread that takes tickets, before its first: waits for the previous grid to finish (a
// no-op after the kernel's own PDL wait), then claims the word for this launch if it is idle, and
// traps if another launch holds it. Once per taker, not per ticket: the word cannot go back to
// idle before every taker has left (handout_leave).
__device__ __forceinline__ void handout_join(const RowHandout& h) {
  asm volatile("griddepcontrol.wait;" ::: "memory");
  const unsigned long long claimed = atomicCAS(h.words, 0ull, static_cast<unsigned long long>(h.tag) << 32);
  if (claimed != 0 && static_cast<std::uint32_t>(claimed >> 32) != h.tag) __trap();
}

// A ticket in two steps, so that its round trip to the L2 hides behind other work: take it (the
// atomic, whose result nothing waits for until it is read), then, where the row is needed, read
// its index, which traps when the word held another launch's tag. The atomic is written in PTX:
// the compiler aggregates an atomicAdd over the warp unless it can tell that one thread takes it,
// and the aggregation's shuffle waits for the result at once.
__device__ __forceinline__ unsigned long long handout_take(const RowHandout& h) {
  unsigned long long ticket;
  asm volatile("atom.relaxed.gpu.global.add.u64 %0, [%1], 1;" : "=l"(ticket) : "l"(h.words) : "memory");
  return ticket;
}
__device__ __forceinline__ std::uint32_t handout_index(const RowHandout& h, unsigned long long ticket) {
  if (static_cast<std::uint32_t>(ticket >> 32) != h.tag) __trap();
  return static_cast<std::uint32_t>(ticket);
}

// The one thread of each of the grid's `takers` (its CTAs, or its clusters' leaders) that takes
// tickets, after its last: the one that leaves last resets both words for the next launch (whose
// tickets come after its PDL wait, so after this grid's end).
__device__ __forceinline__ void handout_leave(const RowHandout& h, unsigned takers) {
  __threadfence();  // this taker's tickets before its count
  if (atomicAdd(h.words + 1, 1ull) == takers - 1ull) {
    __threadfence();  // every CTA's count (and so its tickets) before the reset
    // done first: until rows is idle it still carries this launch's tag, so a launch that
    // meets it in between traps instead of counting into a done that is about to be cleared.
    atomicExch(h.words + 1, 0ull);
    __threadfence();
    atomicExch(h.words, 0ull);
  }
}

}  // namespace boundary::dev
