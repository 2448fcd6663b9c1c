// Paged split-K decode attention: the reducer (decode-attention.md "Reducer").
//
// What: for each (token, query head) of a request that used n > 1 splits, merge the partial
// results with log-sum-exp weights: M = max_s lse_s, w_s = exp(lse_s - M) (0 for an empty
// split, never NaN), denom = sum_s w_s + exp(sink - M) (the sink counted exactly once, here),
// out = sum_s w_s * o_s / denom, lse = M + log(denom). A row with no visible key (all splits
// empty) is zeros with lse = -inf. Requests with one split were finished by the producer and
// are skipped.
//
// Grid: one CTA of 4 warps per (token, head). Warp w merges splits [8w, 8w + 8) (then
// [32 + 8w, ...) while n > 32) into (M_w, den_w, num_w[D]) relative to its own max; the
// warps' results are combined through shared memory. A lane owns head_dim / 32 dims.
// Bytes: n * (head_dim + 1) floats read and head_dim outputs written per row.
// Latency: after the wait, num_kv_splits[b] and each warp's first 8 splits (lse and partial
// outputs) are loaded together -- bounded by max_splits, not by n, which is not known yet;
// values past n are discarded -- so n <= 32 costs one round trip.
// Determinism: the order of every sum depends only on n, so padding of the split plan
// (a larger max_splits) and PDL on/off give the same bits.
//
// PDL contract: launched with PDL right behind split_kv_kernel. Before the wait it reads
// only kernel parameters; it waits right before its first read of num_kv_splits and the
// scratch. It triggers right after the wait: whatever follows (the next layer) waits for
// its completion.
#pragma once

#include "attention/attention_common.cuh"

namespace baton::attention {

template <class T, int D, bool kWait = true>
__global__ void __launch_bounds__(kThreads)
    merge_splits_kernel(__grid_constant__ AttentionParams const p) {
  constexpr int kDimsPerLane = D / 32;
  constexpr int kBatch = 8;  // splits per warp per pass
  __shared__ float num_s[kWarps][D];
  __shared__ float m_s[kWarps], den_s[kWarps];
  int const warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int64_t const row = blockIdx.x;  // (token, head)
  int64_t const token = row / p.num_q_heads;
  int const h = static_cast<int>(row % p.num_q_heads);
  int const b = static_cast<int>(token / p.q_len), t = static_cast<int>(token % p.q_len);
  int64_t const first = ((int64_t(b) * p.max_splits) * p.q_len + t) * p.num_q_heads + h;
  int64_t const split_stride = int64_t(p.q_len) * p.num_q_heads;
  if constexpr (kWait) wait_on_prior_grid();  // before the first read of producer data
  // Next: the following layer's kernels (they wait for this grid's completion). Triggering
  // after the wait, not before it, keeps the next producer's large CTAs from taking the SMs
  // while this grid's CTAs are still being scheduled.
  allow_next_grid();

  // One round trip: the split count and this warp's first kBatch splits.
  int32_t const n_raw = p.num_kv_splits != nullptr ? p.num_kv_splits[b] : 0;
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
  load_batch(warp * kBatch, p.max_splits);
  int const n = clamp_splits(p, n_raw);
  if (n == 1) return;  // written by the producer

  // This warp's splits, relative to its running max (online rescaling across passes).
  float M = -INFINITY, den = 0.f, acc[kDimsPerLane];
#pragma unroll
  for (int e = 0; e < kDimsPerLane; ++e) acc[e] = 0.f;
  for (int s0 = warp * kBatch; s0 < n; s0 += kWarps * kBatch) {
    if (s0 != warp * kBatch) load_batch(s0, n);
    float bm = -INFINITY;
#pragma unroll
    for (int u = 0; u < kBatch; ++u) bm = s0 + u < n ? fmaxf(bm, lse_b[u]) : bm;
    if (bm == -INFINITY) continue;  // only empty splits in this pass
    float const nm = fmaxf(M, bm);
    float const c = M == -INFINITY ? 0.f : __expf(M - nm);
    den *= c;
#pragma unroll
    for (int e = 0; e < kDimsPerLane; ++e) acc[e] *= c;
    M = nm;
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      // Splits past n hold stale scratch: weight 0, values not read.
      bool const in = s0 + u < n && lse_b[u] != -INFINITY;
      float const w = in ? __expf(lse_b[u] - M) : 0.f;
      den += w;
#pragma unroll
      for (int e = 0; e < kDimsPerLane; ++e) acc[e] += in ? w * o_b[u][e] : 0.f;
    }
  }
  if (lane == 0) {
    m_s[warp] = M;
    den_s[warp] = den;
  }
#pragma unroll
  for (int e = 0; e < kDimsPerLane; ++e) num_s[warp][lane * kDimsPerLane + e] = acc[e];
  __syncthreads();

  // Combine the 4 warps (fixed order); then the sink, counted once, here.
  float Mt = -INFINITY;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) Mt = fmaxf(Mt, m_s[w]);
  float scale_w[kWarps], denom = 0.f;
#pragma unroll
  for (int w = 0; w < kWarps; ++w) {
    scale_w[w] = m_s[w] == -INFINITY ? 0.f : __expf(m_s[w] - Mt);
    denom += scale_w[w] * den_s[w];
  }
  if (Mt != -INFINITY && p.sinks != nullptr) denom += __expf(p.sinks[h] - Mt);
  float const inv = denom > 0 ? 1.f / denom : 0.f;
  T* out = static_cast<T*>(p.out) + token * p.out_stride_token + h * p.out_stride_head;
  for (int d = threadIdx.x; d < D; d += kThreads) {
    float v = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) v += scale_w[w] * num_s[w][d];
    out[d] = from_float<T>(v * inv);
  }
  if (p.lse != nullptr && threadIdx.x == 0) {
    p.lse[token * p.lse_stride_token + h] = Mt == -INFINITY ? -INFINITY : Mt + __logf(denom);
  }
}

}  // namespace baton::attention
