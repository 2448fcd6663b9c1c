// Paged split-K decode attention: the reducer (decode-attention.md "Reducer").
//
// What: for each (token, query head) of a request that used n > 1 splits, merge the partial
// results with log-sum-exp weights: M = max_s lse_s, w_s = exp(lse_s - M) (0 for an empty
// split, never NaN), denom = sum_s w_s + exp(sink - M) (the sink counted exactly once, here),
// out = sum_s w_s * o_s / denom, lse = M + log(denom). A row with no visible key (all splits
// empty) is zeros with lse = -inf. Requests with one split were finished by the producer and
// are skipped.
//
// Grid: one warp per (token, head), 4 per CTA; no barrier. Lane s holds split s's lse (more
// than 32 splits take more turns) for M = max lse and the denominator; a lane owns head_dim
// / 32 contiguous dims of the output and sums the splits in order s = 0, 1, ..., n - 1,
// kSpec splits at a time with every load of a batch in flight together. Small on purpose:
// the reducer's cost at small shapes is its latency chain and its cold instruction cache,
// not its math (a CTA per row with a barrier measured 0.4-1 us slower at 1x1K and 8x1K).
// Bytes: n * (head_dim + 1) floats read and head_dim outputs written per row.
// Latency: after the wait, num_kv_splits[b], the lse values and the partial outputs of the
// first kSpec splits (16; 8 at head_dim 256) are loaded together -- bounded by max_splits, not
// by n, which is not known yet; values past n are discarded -- so n <= kSpec costs one
// round trip, and each further kSpec splits one more.
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

template <int kN>
struct FloatVec;  // kN floats, one aligned load
template <>
struct FloatVec<2> {
  float v[2];
  __device__ __forceinline__ void load(float const* src) {
    float2 const x = *reinterpret_cast<float2 const*>(src);
    v[0] = x.x, v[1] = x.y;
  }
};
template <>
struct FloatVec<4> {
  float v[4];
  __device__ __forceinline__ void load(float const* src) {
    float4 const x = *reinterpret_cast<float4 const*>(src);
    v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w;
  }
};
template <>
struct FloatVec<8> {
  float v[8];
  __device__ __forceinline__ void load(float const* src) {
    float4 const x = reinterpret_cast<float4 const*>(src)[0], y = reinterpret_cast<float4 const*>(src)[1];
    v[0] = x.x, v[1] = x.y, v[2] = x.z, v[3] = x.w, v[4] = y.x, v[5] = y.y, v[6] = y.z, v[7] = y.w;
  }
};

template <class T, int D, bool kWait = true>
__global__ void __launch_bounds__(kThreads)
    merge_splits_kernel(__grid_constant__ AttentionParams const p) {
  constexpr int kVec = D / 32;       // dims per lane
  constexpr int kSpec = kVec <= 4 ? 16 : 8;  // splits per batch of loads: <= 64 registers
  int const warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int64_t const row = int64_t(blockIdx.x) * kWarps + warp;  // (token, head)
  int64_t const rows = int64_t(p.batch) * p.q_len * p.num_q_heads;
  if constexpr (kWait) wait_on_prior_grid();  // before the first read of producer data
  // Next: the following layer's kernels (they wait for this grid's completion). Triggering
  // after the wait, not before it, keeps the next producer's large CTAs from taking the SMs
  // while this grid's CTAs are still being scheduled.
  allow_next_grid();
  if (row >= rows) return;
  int64_t const token = row / p.num_q_heads;
  int const h = static_cast<int>(row % p.num_q_heads);
  int const b = static_cast<int>(token / p.q_len), t = static_cast<int>(token % p.q_len);
  int64_t const split_stride = int64_t(p.q_len) * p.num_q_heads;
  int64_t const first = ((int64_t(b) * p.max_splits) * p.q_len + t) * p.num_q_heads + h;
  float const* lse_row = p.part_lse + first;
  float const* o_row = p.part_o + first * D + lane * kVec;
  int64_t const o_stride = split_stride * D;

  // One round trip: the split count, lse of split `lane` and the first kSpec partial outputs.
  int32_t const n_raw = p.num_kv_splits != nullptr ? p.num_kv_splits[b] : 0;
  float const lse_lane = lane < p.max_splits ? lse_row[lane * split_stride] : -INFINITY;
  FloatVec<kVec> x[kSpec];
  auto load_batch = [&](int s0, int limit) {
#pragma unroll
    for (int u = 0; u < kSpec; ++u) {
      if (s0 + u < limit) x[u].load(o_row + (s0 + u) * o_stride);
    }
  };
  load_batch(0, p.max_splits);
  int const n = clamp_splits(p, n_raw);
  if (n == 1) return;  // written by the producer

  // M = max lse, den = sum exp(lse - M) over the n splits (stale scratch past n is ignored).
  float m = lane < n ? lse_lane : -INFINITY;
  for (int s = lane + 32; s < n; s += 32) m = fmaxf(m, lse_row[s * split_stride]);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  auto weight = [&](float lse) { return lse == -INFINITY ? 0.f : __expf(lse - m); };  // m finite
  float acc[kVec];
#pragma unroll
  for (int e = 0; e < kVec; ++e) acc[e] = 0.f;
  float den = 0.f;
  if (m != -INFINITY) {
    float const w_lane = lane < n ? weight(lse_lane) : 0.f;
    den = w_lane;
    for (int s = lane + 32; s < n; s += 32) den += weight(lse_row[s * split_stride]);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) den += __shfl_xor_sync(0xffffffffu, den, o);
    for (int s0 = 0; s0 < n; s0 += kSpec) {
      if (s0 != 0) load_batch(s0, n);
#pragma unroll
      for (int u = 0; u < kSpec; ++u) {
        int const s = s0 + u;
        if (s >= n) break;
        float const w = s < 32 ? __shfl_sync(0xffffffffu, w_lane, s) : weight(lse_row[s * split_stride]);
#pragma unroll
        for (int e = 0; e < kVec; ++e) acc[e] += w != 0.f ? w * x[u].v[e] : 0.f;  // empty split: skipped
      }
    }
    if (p.sinks != nullptr) den += __expf(p.sinks[h] - m);  // the sink, counted once, here
  }
  float const inv = den > 0 ? 1.f / den : 0.f;
  T* out = static_cast<T*>(p.out) + token * p.out_stride_token + h * p.out_stride_head + lane * kVec;
  alignas(16) T packed[kVec];
#pragma unroll
  for (int e = 0; e < kVec; ++e) packed[e] = from_float<T>(acc[e] * inv);
  if ((reinterpret_cast<uintptr_t>(out) & (sizeof(packed) - 1)) == 0) {
    if constexpr (kVec == 2) *reinterpret_cast<uint32_t*>(out) = *reinterpret_cast<uint32_t const*>(packed);
    if constexpr (kVec == 4) *reinterpret_cast<uint2*>(out) = *reinterpret_cast<uint2 const*>(packed);
    if constexpr (kVec == 8) *reinterpret_cast<uint4*>(out) = *reinterpret_cast<uint4 const*>(packed);
  } else {
    for (int e = 0; e < kVec; ++e) out[e] = packed[e];
  }
  if (p.lse != nullptr && lane == 0) {
    p.lse[token * p.lse_stride_token + h] = m == -INFINITY ? -INFINITY : m + __logf(den);
  }
}

}  // namespace baton::attention
