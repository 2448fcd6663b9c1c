// Paged split-K decode attention: the reducer (decode-attention.md "Reducer").
//
// What: for each (token, query head) of a request that used n > 1 splits, merge the partial
// results with log-sum-exp weights: M = max_s lse_s, w_s = exp(lse_s - M) (0 for an empty
// split, never NaN), denom = sum_s w_s + exp(sink - M) (the sink counted exactly once, here),
// out = sum_s w_s * o_s / denom, lse = M + log(denom). A row with no visible key (all splits
// empty) is zeros with lse = -inf. Requests with one split were finished by the producer and
// are skipped.
//
// Grid: one warp per (token, head), 4 per CTA; a lane owns head_dim / 32 dims.
// Bytes: n * (head_dim + 1) floats read and head_dim outputs written per row.
// Latency: after the wait, num_kv_splits[b], the lse of the first 32 splits and the partial
// outputs of the first 8 are loaded together (bounded by max_splits, not by n, which is not
// known yet; values past n are discarded): one round trip for n <= 8, one more per further 8.
//
// PDL contract: launched with PDL right behind split_kv_kernel. Before the wait it reads
// only kernel parameters; it waits right before its first read of num_kv_splits and the
// scratch. It triggers first thing: whatever follows (the next layer) waits for completion.
#pragma once

#include "attention/attention_common.cuh"

namespace baton::attention {

template <class T, int D, bool kWait = true>
__global__ void __launch_bounds__(kThreads)
    merge_splits_kernel(__grid_constant__ AttentionParams const p) {
  constexpr int kDimsPerLane = D / 32;
  constexpr int kBatch = 8;  // splits whose partial outputs are loaded together
  allow_next_grid();
  int const lane = threadIdx.x % 32;
  int64_t const row = int64_t(blockIdx.x) * kWarps + threadIdx.x / 32;  // (token, head)
  int64_t const total = int64_t(p.batch) * p.q_len * p.num_q_heads;
  if constexpr (kWait) wait_on_prior_grid();  // before the first read of producer data
  if (row >= total) return;
  int64_t const token = row / p.num_q_heads;
  int const h = static_cast<int>(row % p.num_q_heads);
  int const b = static_cast<int>(token / p.q_len), t = static_cast<int>(token % p.q_len);
  int64_t const first = ((int64_t(b) * p.max_splits) * p.q_len + t) * p.num_q_heads + h;
  int64_t const split_stride = int64_t(p.q_len) * p.num_q_heads;

  // One round trip: the split count, 32 lse values and the first kBatch partial outputs.
  int32_t const n_raw = p.num_kv_splits != nullptr ? p.num_kv_splits[b] : 0;
  float lse_lane = lane < p.max_splits ? p.part_lse[first + lane * split_stride] : -INFINITY;
  float lse_b[kBatch], o_b[kBatch][kDimsPerLane];
  auto load_batch = [&](int s0, int limit) {
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      bool const in = s0 + u < limit;
      int64_t const prow = first + int64_t(in ? s0 + u : 0) * split_stride;
      lse_b[u] = in ? p.part_lse[prow] : -INFINITY;
      float const* o = p.part_o + prow * D + lane * kDimsPerLane;
#pragma unroll
      for (int e = 0; e < kDimsPerLane; ++e) o_b[u][e] = in ? o[e] : 0.f;
    }
  };
  load_batch(0, p.max_splits);
  int const n = clamp_splits(p, n_raw);
  if (n == 1) return;  // written by the producer

  float M = lane < n ? lse_lane : -INFINITY;
  for (int s = lane + 32; s < n; s += 32) M = fmaxf(M, p.part_lse[first + s * split_stride]);
  M = warp_max(M);

  float acc[kDimsPerLane];
#pragma unroll
  for (int e = 0; e < kDimsPerLane; ++e) acc[e] = 0;
  float denom = 0;
  if (M != -INFINITY) {
    for (int s0 = 0; s0 < n; s0 += kBatch) {
      if (s0 > 0) load_batch(s0, n);
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        // Splits past n hold stale scratch: their weight is 0 and their values are not read.
        bool const in = s0 + u < n && lse_b[u] != -INFINITY;
        float const w = in ? __expf(lse_b[u] - M) : 0.f;
        denom += w;
#pragma unroll
        for (int e = 0; e < kDimsPerLane; ++e) acc[e] += in ? w * o_b[u][e] : 0.f;
      }
    }
    if (p.sinks != nullptr) denom += __expf(p.sinks[h] - M);
  }
  float const inv = denom > 0 ? 1.f / denom : 0.f;
  T* o = static_cast<T*>(p.out) + token * p.out_stride_token + h * p.out_stride_head + lane * kDimsPerLane;
#pragma unroll
  for (int e = 0; e < kDimsPerLane; ++e) o[e] = from_float<T>(acc[e] * inv);
  if (p.lse != nullptr && lane == 0) {
    p.lse[token * p.lse_stride_token + h] = M == -INFINITY ? -INFINITY : M + __logf(denom);
  }
}

}  // namespace baton::attention
