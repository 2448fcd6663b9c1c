// The producer's single-launch merge (split_kv_kernel.cuh): the last CTA of a (request, kv
// head, row chunk) merges every split's partial, with the reducer's helpers.
#pragma once

#include "attention/split_kv_tile.cuh"
#include "attention/split_merge.cuh"
#include "common/trace.cuh"

namespace baton::attention {

// Single-launch mode (p.counters set): after a CTA has stored its partials of split s of
// (request b, kv head, row chunk), it counts itself in; the last of the n to arrive merges
// all n partials of its rows (split_merge.cuh, same bits as merge_splits_kernel) and resets
// the counter to 0 for the next call. Release / acquire: the CTA barrier orders every
// thread's partial stores before thread 0's atomic (acq_rel, gpu scope: cumulative release);
// its acquire orders the other CTAs' partials before the reads, and the second CTA barrier
// carries that to every thread (the pattern of CUTLASS's semaphores). The rows'
// partials and lse values (rows x n x (D + 1) floats) arrive in shared memory in one round
// trip (cp.async and loads from L2, nothing held in registers), and a thread per (row, 4 dims)
// merges from there. The host uses this mode only when they fit (single_launch_fits: max_splits
// <= 49 at 4 rows, 12 at 16 rows, 6 at 32 rows, head_dim 128); otherwise it launches the reducer.
template <int D, int kStages>
constexpr bool single_launch_fits(int rows, int max_splits) {
  int const cta_rows = rows_per_cta(rows, D);
  int const per_cta = rows < cta_rows ? rows : cta_rows;
  size_t const bytes =
      cta_rows == kRowsPerCta ? MmaSmem<D, kStages>::kBytes : MmaSmem<D, kStages, kPairRowsPerCta>::kBytes;
  return int64_t(per_cta) * max_splits * (D + 1) + 3 <= int64_t(bytes / sizeof(float));
}

template <class T, int D, int kRows>
__device__ __forceinline__ void merge_if_last(AttentionParams const& p, RowTable const& rows, int kv_head, int chunk,
                                              int b, int n, int rows_here, float* smem) {
  constexpr int kVec = 4;
  __shared__ int last_s;
  __syncthreads();  // every partial of this CTA is stored
  if (threadIdx.x == 0) {
    int* counter = p.counters + (int64_t(b) * p.num_kv_heads + kv_head) * p.row_chunks + chunk;
    // Release (this CTA's partials, ordered before by the barrier) and acquire (the other
    // splits' partials, for the reads below) in one atomic, with no separate fence.
    int arrived;
    asm volatile("atom.add.acq_rel.gpu.global.s32 %0, [%1], 1;" : "=r"(arrived) : "l"(counter) : "memory");
    bool const last = arrived == n - 1;
    if (last) *reinterpret_cast<int volatile*>(counter) = 0;  // every split has arrived: reset for the next call
    last_s = last;
  }
  __syncthreads();
  if (!last_s) return;
  BATON_MARK(1, 1);  // trace: the merge's kernel-1 slots, written by the last CTA only
  int64_t const split_stride = int64_t(p.q_len) * p.num_q_heads;
  // Everything in one round trip: the partials by cp.async (nothing held in registers), the
  // lse values by L2 loads, all in flight together; then the merge from shared memory.
  __shared__ int64_t first_s[kRows];
  if (threadIdx.x < rows_here) {  // scratch row of split 0 of each row
    first_s[threadIdx.x] = scratch_row(p, b, 0, rows.t[threadIdx.x], rows.h[threadIdx.x]);
  }
  __syncthreads();
  float* lse_s = smem;                                 // [rows_here][n]
  float* part_s = smem + ((rows_here * n + 3) & ~3);  // [rows_here][n][D], 16-byte aligned
  int const warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int r = 0; r < rows_here; ++r) {
    for (int sp = warp; sp < n; sp += kWarps) {
      float const* src = p.part_o + (first_s[r] + sp * split_stride) * D;
      for (int q = lane; q < D / 4; q += 32) cp_async_16(part_s + (r * n + sp) * D + q * 4, src + q * 4, true);
    }
  }
  cp_async_commit();
  constexpr int kLse = 4;  // lse loads in flight per thread per step
  for (int i0 = 0; i0 < rows_here * n; i0 += kLse * kThreads) {
    float v[kLse];
#pragma unroll
    for (int k = 0; k < kLse; ++k) {
      int const i = i0 + k * kThreads + threadIdx.x;
      v[k] = i < rows_here * n ? __ldcg(p.part_lse + first_s[i / n] + (i % n) * split_stride) : 0.f;
    }
#pragma unroll
    for (int k = 0; k < kLse; ++k) {
      int const i = i0 + k * kThreads + threadIdx.x;
      if (i < rows_here * n) lse_s[i] = v[k];
    }
  }
  cp_async_wait<0>();
  __syncthreads();
  BATON_MARK(1, 2);
  for (int unit = threadIdx.x; unit < rows_here * (D / kVec); unit += kThreads) {
    int const r = unit / (D / kVec), d0 = (unit % (D / kVec)) * kVec;
    int const h = rows.h[r];
    int64_t const token = int64_t(b) * p.q_len + rows.t[r];
    float const* lse_r = lse_s + r * n;
    float m = -INFINITY;
    for (int sp = 0; sp < n; ++sp) m = fmaxf(m, lse_r[sp]);
    m = merge_max_with_sink(m, p.sinks, h);
    float acc[kVec] = {}, den = 0.f;
    if (m != -INFINITY) {
      for (int sp = 0; sp < n; ++sp) {
        float4 const v = *reinterpret_cast<float4 const*>(part_s + (r * n + sp) * D + d0);
        float const x[kVec] = {v.x, v.y, v.z, v.w};
        merge_add(acc, den, merge_weight(lse_r[sp], m), x);
      }
    }
    MergeEnd const end = merge_end(m, den, p.sinks, h);
    T* dst = static_cast<T*>(p.out) + token * p.out_stride_token + h * p.out_stride_head + d0;
#pragma unroll
    for (int k = 0; k < kVec; ++k) dst[k] = from_float<T>(acc[k] * end.inv);
    if (p.lse != nullptr && d0 == 0) p.lse[token * p.lse_stride_token + h] = end.lse;
  }
  BATON_MARK(1, 3);
}

}  // namespace baton::attention
