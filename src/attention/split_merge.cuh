// The log-sum-exp merge of one row's split partials (decode-attention.md "Reducer"), shared
// by the reducer kernel (merge_splits_kernel.cuh) and the single-launch producer's last CTA
// per (request, kv head) (split_kv_merge_last.cuh), so that both paths give the same bits.
//
// For a row of n splits with partial lse_s and normalised partial outputs o_s:
//   M   = max(max_s lse_s, sink)            (the sink only when some split is non-empty, so a
//                                            large sink cannot overflow the denominator)
//   w_s = exp(lse_s - M), 0 for an empty split (lse_s = -inf), never NaN
//   acc = sum_s w_s * o_s, den = sum_s w_s  (both in split order s = 0, 1, ..., n - 1, one
//                                            fused multiply-add per term)
//   den += exp(sink - M)                    (the sink, counted exactly once)
//   out = acc / den, lse = M + log(den); a row whose splits are all empty is 0, lse = -inf.
// Every sum runs in split order whatever the thread layout, and the max is exact, so any
// layout that feeds these helpers the same values produces the same bits.
#pragma once

#include "attention/attention_common.cuh"

namespace baton::attention {

// M with the sink: a finite max (some split non-empty) grows to the sink when it is larger.
__device__ __forceinline__ float merge_max_with_sink(float m, float const* sinks, int h) {
  return sinks != nullptr && m != -INFINITY ? fmaxf(m, sinks[h]) : m;
}

__device__ __forceinline__ float merge_weight(float lse, float m) { return lse == -INFINITY ? 0.f : __expf(lse - m); }

// One split's term, in split order: acc[k] += w * x[k], den += w.
template <int K>
__device__ __forceinline__ void merge_add(float (&acc)[K], float& den, float w, float const (&x)[K]) {
#pragma unroll
  for (int k = 0; k < K; ++k) acc[k] = w != 0.f ? __fmaf_rn(w, x[k], acc[k]) : acc[k];  // empty split: skipped
  den += w;
}

// The sink term (m finite), then 1 / den (0 for an all-empty row) and the row's lse.
struct MergeEnd {
  float inv, lse;
};
__device__ __forceinline__ MergeEnd merge_end(float m, float den, float const* sinks, int h) {
  if (m == -INFINITY) return {0.f, -INFINITY};
  if (sinks != nullptr) den += __expf(sinks[h] - m);
  return {den > 0 ? 1.f / den : 0.f, m + __logf(den)};
}

}  // namespace baton::attention
