// Paged split-K decode attention: the reducer (decode-attention.md "Reducer").
//
// What: for each (token, query head) of a request that used n > 1 splits, merge the partial
// results with log-sum-exp weights (split_merge.cuh: M = max(max_s lse_s, sink), w_s =
// exp(lse_s - M), 0 for an empty split, never NaN; out = sum_s w_s * o_s / (sum_s w_s +
// exp(sink - M)), the sink counted exactly once, here; lse = M + log(denominator)). A row with
// no visible key (all splits empty) is zeros with lse = -inf. Requests with one split were
// finished by the producer and are skipped. The single-launch mode does the same merge in the
// producer's last CTA instead (same helpers, same bits) and launches no reducer.
//
// Grids (decode_attention.cu picks one by the row count, rows = batch x q_len x heads):
// - merge_splits_kernel, one CTA of head_dim threads per (token, head), for up to one wave of
//   such CTAs; thread d owns output dim d; no barrier.
// - merge_splits_strided_kernel, 2 CTAs per SM striding over the rows, past one wave: a large
//   batch of one-split requests then costs a few hundred CTAs that read the split counts and
//   exit, not one CTA per row (same machine, in-graph, against a CTA per row triggering at
//   exit: 128x2K 254.2 -> 251.6 us, 64x4K 251.9 -> 250.2, 32x8K 249.5 -> 248.0). Below a
//   wave it would cost the ragged batches their parallel merges (1x32K+15x1K +1.0 us, mix +1.0).
// Merge of one row: every warp finds M = max lse over all n splits itself (lane s holds split
// s's lse; more than 32 splits take more turns); thread d then sums its dim of the splits'
// partial outputs, and the weights, in order s = 0, 1, ..., n - 1 (splits past 32: 8 at a
// time with their loads in flight together). Small on purpose: the reducer's cost at
// small shapes is its latency chain and its cold instruction cache, not its math. (Measured
// before this layout: a warp per row with float4 loads needs 4x the registers per split in
// flight; a CTA of 4 warps over interleaved splits needs a barrier.)
// Bytes: n * (head_dim + 1) floats read and head_dim outputs written per row.
// Latency: in a small grid (at most 2 CTAs per SM), after the wait, num_kv_splits[b], the
// lse values and the partial outputs of the first kMergeEarly (8) splits are loaded
// together -- bounded by max_splits, not by n, which is not known yet; values past n are
// discarded -- so n <= 8 costs one round trip, n <= 32 two (speculating on all 32 reads 32x
// the needed bytes when n = 4 of max_splits = 33). Larger grids load the split count first:
// their rows of one-split requests then read 4 bytes, not 8 splits of stale scratch (same
// machine: 128x2K 269.5 -> 267.5 us, 32x8K 262.8 -> 261.2; small grids unchanged).
// Code: the loads and the merge of splits 8..31 sit behind one uniform branch (n > 8), and
// the merge of splits 4..7 behind another (n > 4), so a row of few splits does not fetch and
// step through predicated-off unrolled terms (same machine, alternating runs, in-graph: 1x1K
// 7.45 / 7.43 -> 6.72 / 6.71 us, 8x1K 15.26 / 15.19 -> 14.40 / 14.36 with the first branch,
// 14.28-14.31 -> 14.21-14.22 with the second; 1x8K and 1x32K, 32 splits, unchanged).
// Determinism: the order of every sum depends only on n, so padding of the split plan
// (a larger max_splits), PDL on/off and the grid's form give the same bits.
//
// PDL contract: launched with PDL right behind split_kv_kernel. Before the wait it reads
// only kernel parameters; it waits right before its first read of num_kv_splits and the
// scratch, and triggers right after the wait: whatever follows (the next layer) waits for its
// completion anyway, so its launch overlaps the merge. (A grid of more CTAs than fit at once
// used to trigger at exit instead, measured worth it at the time on mix64..16K, 103.6 -> 93.9
// us; with today's producer the early trigger is within noise there and 2.4 us faster at
// 16x32K, same machine.)
#pragma once

#include "attention/attention_common.cuh"
#include "attention/split_merge.cuh"
#include "common/trace.cuh"

namespace baton::attention {

// One row's merge once its split count n (> 1) is known, given the lse of split `lane` and
// dim d of the first kEarly splits already loaded (lse_lane, x[0..kEarly)): the loads of
// splits kEarly..n - 1, the merge in split order, the stores.
constexpr int kMergeSpec = 32;   // splits summed from registers (one per lane's lse)
constexpr int kMergeEarly = 8;   // of which loaded with the split count in a small grid
constexpr int kMergeTail = 8;    // splits past kMergeSpec: loads in flight per batch

struct MergeRow {
  int b, t, h;
  int64_t token, split_stride, o_stride;
  float const* lse_row;  // split 0's lse of the row; split s at s * split_stride
  float const* o_row;    // split 0's dim d; split s at s * o_stride
};

template <int D>
__device__ __forceinline__ MergeRow merge_row_of(AttentionParams const& p, int64_t row, int d) {
  MergeRow r;
  r.token = row / p.num_q_heads;
  r.h = static_cast<int>(row % p.num_q_heads);
  r.b = static_cast<int>(r.token / p.q_len);
  r.t = static_cast<int>(r.token % p.q_len);
  r.split_stride = int64_t(p.q_len) * p.num_q_heads;
  r.o_stride = r.split_stride * D;
  int64_t const first = scratch_row(p, r.b, 0, r.t, r.h);
  r.lse_row = p.part_lse + first;
  r.o_row = p.part_o + first * D + d;
  return r;
}

template <class T, int D>
__device__ __forceinline__ void merge_row_finish(AttentionParams const& p, MergeRow const& r, int n, int d,
                                                 float lse_lane, float (&x)[kMergeSpec]) {
  int const lane = d % 32;
  if (n > kMergeEarly) {  // splits past the first 8: their code runs only when they exist
#pragma unroll
    for (int u = kMergeEarly; u < kMergeSpec; ++u) x[u] = u < n ? r.o_row[u * r.o_stride] : 0.f;  // in flight together
  }
  // M = max lse (with the sink), then acc and den in split order (split_merge.cuh); stale
  // scratch past n is ignored.
  float m = lane < n ? lse_lane : -INFINITY;
  for (int s = lane + 32; s < n; s += 32) m = fmaxf(m, r.lse_row[s * r.split_stride]);
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
  m = merge_max_with_sink(m, p.sinks, r.h);
  float acc[1] = {0.f}, den = 0.f;
  if (m != -INFINITY) {
    float const w_lane = lane < n ? merge_weight(lse_lane, m) : 0.f;
    auto add = [&](int u) {
      float const w = __shfl_sync(0xffffffffu, w_lane, u);
      float const xu[1] = {x[u]};
      if (u < n) merge_add(acc, den, w, xu);
    };
#pragma unroll
    for (int u = 0; u < kMergeEarly / 2; ++u) add(u);
    if (n > kMergeEarly / 2) {
#pragma unroll
      for (int u = kMergeEarly / 2; u < kMergeEarly; ++u) add(u);
    }
    if (n > kMergeEarly) {  // as the loads: n <= 8 (small shapes) runs a quarter of this code, n <= 4 an eighth
#pragma unroll
      for (int u = kMergeEarly; u < kMergeSpec; ++u) add(u);
    }
    for (int s0 = kMergeSpec; s0 < n; s0 += kMergeTail) {  // more than 32 splits: kMergeTail loads in flight
      float lse_t[kMergeTail], x_t[kMergeTail];
#pragma unroll
      for (int u = 0; u < kMergeTail; ++u) {
        bool const in = s0 + u < n;
        lse_t[u] = in ? r.lse_row[(s0 + u) * r.split_stride] : -INFINITY;
        x_t[u] = in ? r.o_row[(s0 + u) * r.o_stride] : 0.f;
      }
#pragma unroll
      for (int u = 0; u < kMergeTail; ++u) {
        float const xu[1] = {x_t[u]};
        if (s0 + u < n) merge_add(acc, den, merge_weight(lse_t[u], m), xu);
      }
    }
  }
  MergeEnd const end = merge_end(m, den, p.sinks, r.h);
  BATON_MARK(1, 2);
  T* out = static_cast<T*>(p.out) + r.token * p.out_stride_token + r.h * p.out_stride_head;
  out[d] = from_float<T>(acc[0] * end.inv);
  if (p.lse != nullptr && d == 0) p.lse[r.token * p.lse_stride_token + r.h] = end.lse;
}

template <class T, int D, bool kWait = true>
__global__ void __launch_bounds__(D)
    merge_splits_kernel(__grid_constant__ AttentionParams const p) {
  BATON_MARK(1, 0);
  int const d = threadIdx.x, lane = threadIdx.x % 32;
  MergeRow const r = merge_row_of<D>(p, blockIdx.x, d);  // (token, head) of this CTA
  if constexpr (kWait) wait_on_prior_grid();  // before the first read of producer data
  allow_next_grid();  // next: the following layer's kernels (they wait for this grid's completion)
  BATON_MARK(1, 1);

  // A small grid (latency-bound): one round trip for the split count, lse of split `lane`
  // and dim d of the first kMergeEarly splits, loaded before n is known. A large grid
  // (bandwidth-bound): the split count first, so that rows of one-split requests read
  // nothing more (128x2K: 4096 rows x 8 speculative splits were 17 MB of stale scratch).
  bool const speculate = p.reducer_small_grid != 0;
  int32_t const n_raw = p.num_kv_splits != nullptr ? p.num_kv_splits[r.b] : 0;
  float lse_lane = speculate && lane < p.max_splits ? r.lse_row[lane * r.split_stride] : -INFINITY;
  float x[kMergeSpec];
#pragma unroll
  for (int u = 0; u < kMergeEarly; ++u) x[u] = speculate && u < p.max_splits ? r.o_row[u * r.o_stride] : 0.f;
  int const n = clamp_splits(p, n_raw);
  if (n == 1) return;  // written by the producer
  if (!speculate) {
    lse_lane = lane < n ? r.lse_row[lane * r.split_stride] : -INFINITY;
#pragma unroll
    for (int u = 0; u < kMergeEarly; ++u) x[u] = u < n ? r.o_row[u * r.o_stride] : 0.f;
  }
  merge_row_finish<T, D>(p, r, n, d, lse_lane, x);
}

// The reducer past one wave of per-row CTAs: grid G (2 CTAs per SM), CTA c takes rows c,
// c + G, c + 2G, ...: each warp loads the split counts of 32 of them in one round trip (every
// warp the same 32, so no barrier), and the CTA merges only the rows of several splits, one
// after another, the next one's first loads in flight during the current merge
// (merge_row_finish: the same bits as a CTA per row). Rows of one split were finished by the
// producer: at large batches, where every request has one split, the grid reads one int per
// row and exits.
template <class T, int D, bool kWait = true>
__global__ void __launch_bounds__(D)
    merge_splits_strided_kernel(__grid_constant__ AttentionParams const p) {
  int const d = threadIdx.x, lane = threadIdx.x % 32;
  int64_t const rows = int64_t(p.batch) * p.q_len * p.num_q_heads;
  int64_t const G = gridDim.x;
  int64_t const per_request = int64_t(p.q_len) * p.num_q_heads;
  if constexpr (kWait) wait_on_prior_grid();  // before the first read of producer data
  allow_next_grid();  // next: the following layer's kernels (they wait for this grid's completion)
  for (int64_t base = blockIdx.x; base < rows; base += 32 * G) {
    int64_t const mine = base + lane * G;
    int n_lane = 1;
    if (mine < rows && p.num_kv_splits != nullptr) n_lane = clamp_splits(p, p.num_kv_splits[mine / per_request]);
    if (mine < rows && p.num_kv_splits == nullptr) n_lane = p.max_splits;
    // The rows of several splits among these 32, one after another; the next one's lse and
    // first kMergeEarly splits are loaded before the current one is merged.
    unsigned todo = __ballot_sync(0xffffffffu, n_lane > 1);
    if (todo == 0) continue;
    auto load = [&](int i, MergeRow& r, int& n, float& lse_lane, float (&x)[kMergeSpec]) {
      n = __shfl_sync(0xffffffffu, n_lane, i);
      r = merge_row_of<D>(p, base + i * G, d);
      lse_lane = lane < n ? r.lse_row[lane * r.split_stride] : -INFINITY;
#pragma unroll
      for (int u = 0; u < kMergeEarly; ++u) x[u] = u < n ? r.o_row[u * r.o_stride] : 0.f;
    };
    MergeRow r;
    int n;
    float lse_lane, x[kMergeSpec];
    load(__ffs(todo) - 1, r, n, lse_lane, x);
    for (todo &= todo - 1;; todo &= todo - 1) {
      MergeRow r_next;
      int n_next = 0;
      float lse_next = -INFINITY, x_next[kMergeSpec];
      if (todo != 0) load(__ffs(todo) - 1, r_next, n_next, lse_next, x_next);
      merge_row_finish<T, D>(p, r, n, d, lse_lane, x);
      if (todo == 0) break;
      r = r_next;
      n = n_next;
      lse_lane = lse_next;
#pragma unroll
      for (int u = 0; u < kMergeEarly; ++u) x[u] = x_next[u];
    }
  }
}

}  // namespace baton::attention
