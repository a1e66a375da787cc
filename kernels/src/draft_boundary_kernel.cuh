// The fused boundary's persistent layouts (Variant::layout cta, pair and quad): a row on a cluster
// of kCtas CTAs (1: a plain CTA) of 1024 / kCtas threads, one 8-column fragment a thread in
// row_fragment's layout (row_sum.cuh: CTA j holds 8 / kCtas reference warps whole), the row sums
// through the CTA layer (kCtas = 1, row_sum.cuh) or the cluster layer (cluster_row_sum.cuh). The grid is persistent: a cluster runs rows c, c + clusters, ...,
// streaming its slice of each row through a ring of shared-memory stages that the copy engine
// fills (cp.async.bulk), so that the next rows land while one reduces; gates and weights are
// loaded once per CTA. It serves the DraftBoundary (one rank: the branch, passed unchanged) and
// the all-reduce boundary (R partials summed in rank order). Layout::cluster, one row per cluster
// of 8 CTAs and no ring, is in cluster_boundary_kernel.cuh. The cta layout of one rank and the
// quad layout of R ranks have a second build, with rows handed out (kHandout; chosen by
// launch_ring_build from the object's HandoutThresholds): each cluster's first rows are fixed as above and every later
// one is taken from the boundary object's counter (row_handout.cuh), so that an SM that streams
// faster takes more rows. On a quad the leader CTA takes the tickets and pushes each row to the
// cluster's CTAs.
//
// One source, several builds: the production kernel (draft_boundary_kernel.cu), the debug build
// that also writes the intermediates (draft_boundary_debug.cu), and the planted-bug builds
// (draft_boundary_mutant.cu, once per BOUNDARY_MUTANT); how each layout is launched is in
// layout_launch.cuh. Everything here has internal linkage, so that the builds link side by side,
// each in its translation unit's own unnamed namespace.
#pragma once

#include "cluster_boundary_kernel.cuh"
#include "launch.hpp"

#include <boundary/device/bulk_copy.cuh>
#include <boundary/device/fragment_stages.cuh>
#include <boundary/device/row_handout.cuh>
#include <boundary/gpu/diagnostics.hpp>
#include <boundary/mutant.hpp>

#include <type_traits>

namespace boundary::gpu::detail {

namespace {

using namespace boundary::dev;

inline constexpr int kMaxStages = 8;

// A CTA's shared memory before its ring of stages: the gammas of its columns (computed once per
// CTA; shared memory as room the registers lack), the row sums' scratch (two alternating ones on
// a cluster, cluster_row_sum) and two barriers a stage: its branch (the partials) landed, its
// stream landed. The post norm needs only the branch, so it starts while the stream, two thirds
// of a row's bytes with an F32 stream, is still on its way. With rows handed out, also the row a
// stage holds (-1: none, the CTA's rows are done).
template <int kCtas>
struct RingSharedFixed {
  float post_gamma[kH / kCtas], pre_gamma[kH / kCtas];
  std::conditional_t<kCtas == 1, FragmentSumScratch, ClusterSumScratch<kCtas>> sum[kCtas == 1 ? 1 : 2];
  std::uint64_t branch_landed[kMaxStages], stream_landed[kMaxStages];
};
template <int kCtas, bool kHandout>
struct RingShared : RingSharedFixed<kCtas> {};
template <>
struct RingShared<1, true> : RingSharedFixed<1> {
  std::int64_t stage_row[kMaxStages];
};
// On a cluster, also a stage's next row, which the leader CTA took from the hand-out and stores
// into every CTA of the cluster, and the barrier that completes when it has landed (one phase a
// row).
template <int kCtas>
struct RingShared<kCtas, true> : RingSharedFixed<kCtas> {
  std::int64_t stage_row[kMaxStages], next_row[kMaxStages];
  std::uint64_t row_pushed[kMaxStages];
};

// The builds with rows handed out: where the dispatch runs many rows on each cluster, the cta
// layout of one rank (the DraftBoundary) and the quad layout of R ranks (the all-reduce boundary).
template <int kCtas, bool kOneRank>
inline constexpr bool kHandsOut = kCtas == 1 ? kOneRank : kCtas == 4 && !kOneRank;
template <int kCtas, bool kHandout>
inline constexpr std::uint32_t kRingFixedBytes = (sizeof(RingShared<kCtas, kHandout>) + 127) / 128 * 128;

// One stage: this CTA's slice of a row of each rank's partial, then of the stream. A slice is the
// columns of its reference warps: kSegments runs of the row (one a fragment; one run with one CTA
// a row), which the stage holds one after the other, so that thread u's 8 columns sit at 8 u.
template <int kCtas, bool kStreamF32>
__host__ __device__ constexpr std::uint32_t ring_stage_bytes(int ranks) {
  return static_cast<std::uint32_t>(kH / kCtas) * (2u * static_cast<std::uint32_t>(ranks) + (kStreamF32 ? 4u : 2u));
}

__device__ __forceinline__ void store_row_value(float* p, std::int64_t row, float v, bool leader) {
  if (p && leader && threadIdx.x == 0) p[row] = v;
}

// The rows of one CTA; the kernels below differ only in what else they write (d).
//
// The gates stay in registers and the gammas in shared memory for all the CTA's rows: loaded
// once, before the PDL wait (overlapping the previous grid's tail) unless late; the first rows'
// streams are asked of L2 there too. Warp 0 keeps p.stages rows in flight: it refills a stage
// when it is done with that stage's row, with the row `stages` further on, or (kHandout) with a
// row from the hand-out, p.handout, whose tickets thread 0 of the cluster's leader CTA takes.
template <int kCtas, bool kStreamF32, bool kStore, bool kOneRank, bool kHandout, class Intermediates>
__device__ __forceinline__ void ring_rows(const AllReduceParams& a, const Intermediates& d) {
  static_assert(!kHandout || kHandsOut<kCtas, kOneRank>, "rows are handed out in the cta layout of one rank and the quad of R");
  constexpr bool kDebug = !std::is_same_v<Intermediates, NoIntermediates>;
  constexpr int kSlice = kH / kCtas;
  using Stream = std::conditional_t<kStreamF32, float, std::uint16_t>;
  extern __shared__ __align__(128) unsigned char shared_bytes[];
  RingShared<kCtas, kHandout>& sh = *reinterpret_cast<RingShared<kCtas, kHandout>*>(shared_bytes);
  const BoundaryParams& p = a.boundary;
  const int ranks = kOneRank ? 1 : a.ranks;
  const std::uint32_t stage_bytes = ring_stage_bytes<kCtas, kStreamF32>(ranks);
  const auto stage = [&](int slot) { return shared_bytes + kRingFixedBytes<kCtas, kHandout> + slot * stage_bytes; };
  constexpr int kSegments = kCtas == 1 ? 1 : kFragments;   // runs of the row in a slice
  constexpr int kSegment = kSlice / kSegments;              // columns a run
  const int part = static_cast<int>(blockIdx.x % kCtas);  // which slice of the row
  const int local = kVec * static_cast<int>(threadIdx.x);   // this thread's columns in the slice
  const int column = kVec * row_fragment<kCtas>(part, static_cast<int>(threadIdx.x));  // ... and in the row

  // Rank r's partial, by a chain of selects: a run-time index into the parameter array would
  // copy it to local memory.
  const auto partial = [&](int r) {
    const std::uint16_t* q = a.partials[0];
    if constexpr (!kOneRank) {
#pragma unroll
      for (int i = 1; i < kMaxRanks; ++i)
        if (r == i) q = a.partials[i];
    }
    return q;
  };
  // Where run k of this CTA's slice of row `row` starts in a tensor of the row's layout: the
  // row's columns kThreads kVec k + kSegment part on.
  const auto run_at = [part](std::int64_t row, int k) {
    return static_cast<std::size_t>(row) * kH + kThreads * kVec * k + kSegment * part;
  };
  // Starts the copies of this CTA's slice of row `row` into stage `slot`; called by warp 0, whose
  // lanes issue one copy each: (R + 1) tensors of kSegments runs, up to 36 on a quad with 8
  // partials, which one thread issuing alone made the wait of every row sum.
  const std::uint32_t branch_bytes = static_cast<std::uint32_t>(ranks) * kSlice * 2;
  const auto load_row = [&](std::int64_t row, int slot) {
    unsigned char* st = stage(slot);
    const int lane = static_cast<int>(threadIdx.x);
    if (lane == 0) {
      barrier_arrive_expect_bytes(&sh.branch_landed[slot], branch_bytes);
      barrier_arrive_expect_bytes(&sh.stream_landed[slot], stage_bytes - branch_bytes);
    }
#pragma unroll 1
    for (int c = lane; c < (ranks + 1) * kSegments; c += 32) {
      // Tensor r (r = R: the stream), run k (run_at), at k kSegment in the tensor's part of the stage.
      const int r = c / kSegments, k = c % kSegments;
      const std::size_t at = run_at(row, k);
      const int to = k * kSegment;
      if (r < ranks)
        bulk_copy_to_shared(st + (r * kSlice + to) * 2, partial(r) + at, kSegment * 2, &sh.branch_landed[slot]);
      else
        bulk_copy_to_shared(st + ranks * kSlice * 2 + to * sizeof(Stream), static_cast<const Stream*>(p.stream) + at,
                            kSegment * sizeof(Stream), &sh.stream_landed[slot]);
    }
  };
  // With rows handed out: stage `slot` gets row `row`, or none (-1: the barriers complete with no
  // bytes). Lane 0 writes the row before its arrival, which releases it to the threads that wait
  // for the stage.
  const auto issue = [&](std::int64_t row, int slot) {
    if constexpr (kHandout) {
      if (threadIdx.x == 0) sh.stage_row[slot] = row;
      if (row >= 0) load_row(row, slot);
      else if (threadIdx.x == 0) barrier_arrive(&sh.branch_landed[slot]), barrier_arrive(&sh.stream_landed[slot]);
    }
  };
  // This thread's fragment of a landed stage: the branch (all-reduced) in x; the stream in s.
  const auto read_branch = [&](int slot, float (&x)[kVec]) {
    const unsigned char* st = stage(slot);
    const auto rank = [&](int r) { return *reinterpret_cast<const uint4*>(st + r * kSlice * 2 + local * 2); };
    if constexpr (kOneRank) unpack_bf16x8(rank(0), x);  // one rank: P_0 unchanged
    else dev::all_reduce(ranks, rank, x);
  };
  const auto read_stream = [&](int slot, float (&s)[kVec]) {
    const unsigned char* stream = stage(slot) + ranks * kSlice * 2;
    if constexpr (kStreamF32) read_f32x8(reinterpret_cast<const float*>(stream) + local, s);
    else unpack_bf16x8(*reinterpret_cast<const uint4*>(reinterpret_cast<const std::uint16_t*>(stream) + local), s);
  };

  const int stages = p.stages;
  if (threadIdx.x == 0) {
    for (int i = 0; i < stages; ++i) barrier_init(&sh.branch_landed[i], 1), barrier_init(&sh.stream_landed[i], 1);
    if constexpr (kHandout && kCtas > 1)
      for (int i = 0; i < stages; ++i) barrier_init(&sh.row_pushed[i], 1);  // made visible to the cluster below
    if constexpr (kCtas > 1) cluster_sum_init(sh.sum[0]), cluster_sum_init(sh.sum[1]);
    fence_proxy_async_shared();
  }
  if constexpr (kCtas > 1) cluster_arrive_started();
  // The gates and weights: loads issued (before the PDL wait unless late), their latency taken
  // only after the first rows' copies are under way, when the gammas are computed. A thread
  // stores and reads only its own columns' gammas: no barrier between.
  float alpha[kVec], beta[kVec];
  WeightFragment post_weight{}, pre_weight{};
  const bool late = p.late_gates;
  const auto load_gates = [&] {
    const int c = gate_column(column, late);
    load_f32x8(p.alpha + c, alpha);
    load_f32x8(p.beta + c, beta);
    if (has_weight(p.post)) post_weight = load_weight(p.post, c);
    if (has_weight(p.pre)) pre_weight = load_weight(p.pre, c);
  };
  if (!late) load_gates();
  const std::int64_t first = blockIdx.x / kCtas, step = gridDim.x / kCtas;
  // The streams of the CTA's first rows asked of L2 before the PDL wait: the previous grid's tail
  // leaves the DRAM idle (its CTAs end over microseconds), and the stream was written a kernel
  // or more before this one (the previous boundary's new_stream), so the bytes come in the gap.
  // The branch is the previous grid's output: not asked early. On an H100 (2026-12-07) 0.94x the
  // time at m = 1024 and 0.96x at 2048 (docs/benchmarks.md).
  if (threadIdx.x < 32)
    for (int c = static_cast<int>(threadIdx.x); c < stages * kSegments; c += 32) {
      const std::int64_t row = first + (c / kSegments) * step;
      if (row < p.rows)
        bulk_prefetch_to_l2(static_cast<const Stream*>(p.stream) + run_at(row, c % kSegments),
                            kSegment * sizeof(Stream));
    }
  __syncthreads();  // the barriers are initialised
  pdl_wait();
  pdl_launch_dependents();
  const std::int64_t fixed = stages * step;  // rows fixed per CTA: stage i of CTA c starts with c + i step
  if (threadIdx.x < 32)
    for (int i = 0; i < stages; ++i) {
      const std::int64_t row = first + i * step;
      if constexpr (kHandout) issue(row < p.rows ? row : -1, i);
      else if (row < p.rows) load_row(row, i);
    }
  const bool leader = part == 0;
  const bool taker = leader && threadIdx.x == 0;  // of the hand-out's tickets
  // On a cluster the leader pushes a ticket taken a row before the one it is pushed in (held), so
  // that its round trip has a whole row to come back; the first is taken here. A ticket taken
  // and never pushed is one taken after the cluster pushed a row past the end: past it too.
  unsigned long long held = 0;
  if constexpr (kHandout)
    if (taker) {
      handout_join(p.handout);  // while the first copies land
      if constexpr (kCtas > 1) held = handout_take(p.handout);
    }
  // Warp 0's next row for a stage from the hand-out (>= p.rows: none). In a CTA: the ticket that
  // thread 0 took when the stage's current row began, read at the refill. On a cluster: the row
  // the leader pushed (push_row) during the stage's current row, whose 8 bytes lane 0 announces.
  const auto handed_out = [&](unsigned long long ticket, int slot, std::uint32_t phase) {
    std::int64_t next = 0;
    if constexpr (kCtas == 1) {
      if (threadIdx.x == 0) next = fixed + handout_index(p.handout, ticket);
      next = __shfl_sync(0xFFFFFFFFu, next, 0);
    } else if constexpr (kHandout) {
      if (threadIdx.x == 0) barrier_arrive_expect_bytes(&sh.row_pushed[slot], sizeof(std::int64_t));
      barrier_wait_cluster(&sh.row_pushed[slot], phase);
      next = sh.next_row[slot];
    }
    return next;
  };
  // The leader's thread 0, once the row's post norm is summed (so that every CTA has refilled
  // this stage's previous row, and read the previous push): the stage's next row into every CTA
  // by st.async, as the row sums send their totals. Not a store and a release-ordered remote
  // arrival: the release waits for this thread's connection stores, and that measured 1.3 to 1.6
  // times the static layout's time on an H100.
  const auto push_row = [&](unsigned long long ticket, int slot) {
    if constexpr (kHandout && kCtas > 1) {
      const std::int64_t next = fixed + handout_index(p.handout, ticket);
#pragma unroll
      for (int q = 0; q < kCtas; ++q) store_to_cluster_cta(&sh.next_row[slot], next, &sh.row_pushed[slot], q);
    }
  };
  if (late) load_gates();  // while the first rows' copies are under way
  {
    float g[kVec];
    if (has_weight(p.post)) gamma(p.post, post_weight, g), store_f32x8(sh.post_gamma + local, g);
    if (has_weight(p.pre)) gamma(p.pre, pre_weight, g), store_f32x8(sh.pre_gamma + local, g);
  }
  if constexpr (kCtas > 1) cluster_wait();  // every CTA of the cluster has started

  std::uint32_t parity = 0;      // of the stage barriers' phases
  std::uint32_t sum_parity = 0;  // of the row sums' on a cluster: one phase a row
  const auto post_sum = [&](float t) {
    if constexpr (kCtas == 1) return cta_fragment_row_sum(t, sh.sum[0]);
    else return cluster_row_sum<kCtas>(t, sh.sum[0], sum_parity);
  };
  const auto pre_sum = [&](float t) {
    if constexpr (kCtas == 1) return cta_fragment_row_sum(t, sh.sum[0]);
    else return cluster_row_sum<kCtas>(t, sh.sum[1], sum_parity);
  };
  const auto gains_in_shared = [local](const float* gains) {
    return [gains, local](int, float (&g)[kVec]) { read_f32x8(gains + local, g); };
  };
  int slot = 0;
  for (std::int64_t row = first;; row += step) {
    if constexpr (!kHandout)
      if (row >= p.rows) break;
    barrier_wait(&sh.branch_landed[slot], parity);
    unsigned long long ticket = 0;  // this stage's next row, taken now and read at its refill
    if constexpr (kHandout) {
      row = sh.stage_row[slot];
      if (row < 0) break;  // every later stage is empty too: rows are issued in stage order
      if (taker) ticket = handout_take(p.handout);
    }
    float x[1][kVec], s[1][kVec];
    read_branch(slot, x[0]);

    // Post norm -> y_b.
    const RowNorm post = post_norm(p.post, gains_in_shared(sh.post_gamma), x, post_sum);
    const std::size_t at = static_cast<std::size_t>(row) * kH + column;
    if constexpr (kDebug) {
      store_row_value(d.post_row_sum, row, post.s, leader);
      store_row_value(d.r1, row, post.r, leader);
      if (d.y_b) *reinterpret_cast<uint4*>(d.y_b + at) = pack_bf16x8(x[0]);
    }
    // Connection: res (kept in s: it is the new stream), z = bf16(res) (in x).
    barrier_wait(&sh.stream_landed[slot], parity);
    read_stream(slot, s[0]);
    connection(alpha, beta, x[0], s[0]);
    if constexpr (kStore) store_warp_f32x8(p.new_stream + at, s[0]);
    if constexpr (kDebug) {
      if (d.res) store_warp_f32x8(d.res + at, s[0]);
      if (d.z) *reinterpret_cast<uint4*>(d.z + at) = pack_bf16x8(x[0]);
    }
    if constexpr (kHandout && kCtas > 1)
      if (taker) push_row(held, slot), held = ticket;
    // Pre norm -> out.
    uint4 out[1];
    const RowNorm pre = pre_norm(p.pre, gains_in_shared(sh.pre_gamma), x, pre_sum, out);
    if constexpr (kDebug) {
      store_row_value(d.pre_row_sum, row, pre.s, leader);
      store_row_value(d.r2, row, pre.r, leader);
    }
    *reinterpret_cast<uint4*>(p.out + at) = out[0];
    // Refill the stage: every thread has read it (its row, and the stream at the connection)
    // before the pre norm's row sum, whose barrier warp 0 has passed. Here, with the row's values
    // dead, warp 0 has the registers that the copies' addresses need; the ticket, taken when the
    // row began, has long come back.
    if (threadIdx.x < 32) {
      if constexpr (kHandout) {
        const std::int64_t next = handed_out(ticket, slot, parity);
        if (next < p.rows) fence_proxy_async_shared();
        issue(next < p.rows ? next : -1, slot);
      } else if (row + fixed < p.rows) {
        fence_proxy_async_shared();
        load_row(row + fixed, slot);
      }
    }
    if (++slot == stages) slot = 0, parity ^= 1u;
    sum_parity ^= 1u;
  }
  if constexpr (kHandout)
    if (taker) handout_leave(p.handout, gridDim.x / kCtas);
}

// At most 64 registers a thread: 1024 of them fill an SM's register file. The debug build, whose
// speed does not matter, may take more (its intermediates' pointers) rather than spill.
template <int kCtas, bool kStreamF32, bool kStore, bool kOneRank, bool kHandout, class Intermediates>
__global__ void __launch_bounds__(kRowThreads / kCtas, std::is_same_v<Intermediates, NoIntermediates> ? kCtas : 1)
    ring_kernel(const AllReduceParams a, const Intermediates d) {
  ring_rows<kCtas, kStreamF32, kStore, kOneRank, kHandout>(a, d);
}

template <int kCtas, bool kOneRank, bool kHandout, class Intermediates>
auto ring_kernel_for(const Variant& v) {
  return for_variant(v, [](auto f32, auto store) {
    return ring_kernel<kCtas, decltype(f32)::value, decltype(store)::value, kOneRank, kHandout, Intermediates>;
  });
}

}  // namespace

}  // namespace boundary::gpu::detail
