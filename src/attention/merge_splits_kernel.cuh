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
// Three forms, by the number of rows (decode_attention.cu):
// - small (merge_splits_kernel, at most 2 rows per SM): one CTA of head_dim threads per
//   (token, head), thread d owning output dim d, no CTA barrier. Every warp finds M = max lse
//   over all n splits itself (lane s holds split s's lse; more than 32 splits take more
//   turns) and lane s its weight, which the warp shares through shared memory (WarpWeights);
//   thread d then sums its dim of the splits' partial outputs, and the weights, in
//   order s = 0, 1, ..., n - 1 (splits past 32: 8 at a time with their loads in flight
//   together). Small on purpose: the reducer's cost at small shapes is its latency chain and
//   its cold instruction cache, not its math.
// - medium (merge_splits_medium_kernel, up to 6 rows per SM: most of its CTAs fit beside the
//   producer's): the same layout at 32 registers, the split count first.
// - large (merge_splits_large_kernel, more rows): a warp per row, 4 rows per CTA, so that
//   the hardware has a quarter of the CTAs to launch once the producer has ended.
// Bytes: n * (head_dim + 1) floats read and head_dim outputs written per row.
// Latency: by default the split count is read after the PDL wait (it may come from an
// earlier kernel of the step), so in the small form the count, the lse values and the
// partial outputs of the first 8 splits are loaded together -- bounded by max_splits, not by
// n, which is not known yet; values past n are discarded -- so n <= 8 costs one round trip,
// n <= 32 two. With early reads (inputs_written_before_chain: the caller asserts
// num_kv_splits was written before the chain started) the count is read before the wait, so
// a row loads exactly its n splits, up to 32 in one round trip, and a one-split row nothing.
// Same machine, alternating runs, in-graph, with the count before the wait in every mode (an
// experiment: docs/benchmarking.md, ninth session): 1x8K 14.62 -> 14.09 us, 1x32K 37.77 ->
// 37.12, 128x2K 251.93 -> 250.70, the ragged batch 55.72 -> 55.12. The medium and large forms
// read the split count first, so that rows of one-split requests read 4 bytes, not 8 splits
// of stale scratch.
// Code: the loads and the merge of splits 8..31 sit behind one uniform branch (n > 8), and
// the merge of splits 4..7 behind another (n > 4), so a row of few splits does not fetch and
// step through predicated-off unrolled terms (same machine, alternating runs, in-graph: 1x1K
// 7.45 / 7.43 -> 6.72 / 6.71 us, 8x1K 15.26 / 15.19 -> 14.40 / 14.36 with the first branch,
// 14.28-14.31 -> 14.21-14.22 with the second; 1x8K and 1x32K, 32 splits, unchanged).
// Determinism: the order of every sum depends only on n, so padding of the split plan
// (a larger max_splits), PDL on/off, and the form (which depends on the batch size) give the
// same bits (DecodeAttention.ReducerFormsMatchBitwise).
//
// PDL contract: launched with PDL right behind split_kv_kernel. Before the wait it reads
// kernel parameters only (trace builds: also the tracer's host-written focus), and with early
// reads num_kv_splits[b] (rule 1: the caller asserts it was written before the chain started).
// Every CTA waits, right before its first read of the scratch (and, by default, of
// num_kv_splits) (AttentionRace.HarnessCatchesAReducerWithoutItsWait: each form compiled
// without the wait fails the race harness). The small
// form triggers right after the wait (with early reads: at entry), the medium and large forms
// at exit: whatever follows (the next layer) waits for its completion either way.
#pragma once

#include "attention/attention_common.cuh"
#include "attention/split_merge.cuh"
#include "common/trace.cuh"

namespace baton::attention {

// One row (token, head) of the reducer's grid, the dims [dim0, dim0 + K) this thread owns:
// its place in the scratch, the merge of its splits past the 32 that lanes hold, and its
// stores. Shared by the three forms below (small and medium: a CTA per row, K = 1; large: a
// warp per row, K = D / 32).
template <int D, int K = 1>
struct MergeRow {
  int64_t token;
  int h, b, dim0;
  int64_t split_stride, o_stride;  // floats between splits: lse, partial outputs
  float const* lse_row;            // lse of split 0
  float const* o_row;              // dim dim0 of split 0's partial output

  __device__ __forceinline__ MergeRow(AttentionParams const& p, int64_t row, int d0) : dim0(d0) {
    token = row / p.num_q_heads;
    h = static_cast<int>(row % p.num_q_heads);
    b = static_cast<int>(token / p.q_len);
    int const t = static_cast<int>(token % p.q_len);
    split_stride = int64_t(p.q_len) * p.num_q_heads;
    o_stride = split_stride * D;
    int64_t const first = scratch_row(p, b, 0, t, h);
    lse_row = p.part_lse + first;
    o_row = p.part_o + first * D + dim0;
  }

  // The row's split count (clamped as the producer clamps it).
  __device__ __forceinline__ int split_count(AttentionParams const& p) const {
    return clamp_splits(p, p.num_kv_splits != nullptr ? p.num_kv_splits[b] : 0);
  }

  // Dims [dim0, dim0 + K) of split s's partial output (K = 2, 4: one vector load; 8: two).
  __device__ __forceinline__ void load(int s, float (&x)[K]) const {
    float const* src = o_row + s * o_stride;
    if constexpr (K == 1) {
      x[0] = src[0];
    } else if constexpr (K == 2) {
      float2 const v = *reinterpret_cast<float2 const*>(src);
      x[0] = v.x, x[1] = v.y;
    } else {
      static_assert(K % 4 == 0, "K: 1, 2 or a multiple of 4 dims per thread");
#pragma unroll
      for (int k = 0; k < K; k += 4) {
        float4 const v = *reinterpret_cast<float4 const*>(src + k);
        x[k] = v.x, x[k + 1] = v.y, x[k + 2] = v.z, x[k + 3] = v.w;
      }
    }
  }

  // M = max over the n splits' lse (lane s holds split s's, -inf past n; more than 32 take
  // more turns), with the sink; the same value in every lane.
  __device__ __forceinline__ float max_lse(AttentionParams const& p, float lse_lane, int n) const {
    float m = lse_lane;
    for (int s = threadIdx.x % 32 + 32; s < n; s += 32) m = fmaxf(m, lse_row[s * split_stride]);
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    return merge_max_with_sink(m, p.sinks, h);
  }

  // Splits 32..n-1 in order, kTail at a time with their loads in flight together.
  template <int kTail>
  __device__ __forceinline__ void merge_past_lanes(int n, float m, float (&acc)[K], float& den) const {
    for (int s0 = 32; s0 < n; s0 += kTail) {
      float lse_t[kTail], x_t[kTail][K];
#pragma unroll
      for (int u = 0; u < kTail; ++u) {
        bool const in = s0 + u < n;
        lse_t[u] = in ? lse_row[(s0 + u) * split_stride] : -INFINITY;
        if (in) {
          load(s0 + u, x_t[u]);
        } else {
#pragma unroll
          for (int k = 0; k < K; ++k) x_t[u][k] = 0.f;
        }
      }
#pragma unroll
      for (int u = 0; u < kTail; ++u) {
        if (s0 + u < n) merge_add(acc, den, merge_weight(lse_t[u], m), x_t[u]);
      }
    }
  }

  template <class T>
  __device__ __forceinline__ void store(AttentionParams const& p, float const (&acc)[K], MergeEnd const& end) const {
    T* out = static_cast<T*>(p.out) + token * p.out_stride_token + h * p.out_stride_head + dim0;
    constexpr int kBytes = K * int(sizeof(T));
    // Pairs of outputs packed into 32-bit words, then one 4-, 8- or 16-byte store where aligned.
    if constexpr (kBytes == 4 || kBytes == 8 || kBytes == 16) {
      uint32_t words[K / 2];
#pragma unroll
      for (int k = 0; k < K / 2; ++k) words[k] = pack_out_pair<T>(acc[2 * k] * end.inv, acc[2 * k + 1] * end.inv);
      if ((reinterpret_cast<uintptr_t>(out) & (kBytes - 1)) == 0) {
        // PTX vector stores: nvcc 13.0 splits a uint2 / uint4 assignment here into 4-byte stores.
        size_t const dst = __cvta_generic_to_global(out);
        if constexpr (kBytes == 4) {
          asm volatile("st.global.b32 [%0], %1;" ::"l"(dst), "r"(words[0]) : "memory");
        } else if constexpr (kBytes == 8) {
          asm volatile("st.global.v2.b32 [%0], {%1, %2};" ::"l"(dst), "r"(words[0]), "r"(words[1]) : "memory");
        } else {
          asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};" ::"l"(dst), "r"(words[0]), "r"(words[1]),
                       "r"(words[2]), "r"(words[3])
                       : "memory");
        }
      } else {
#pragma unroll
        for (int k = 0; k < K; ++k) out[k] = from_float<T>(acc[k] * end.inv);
      }
    } else {
#pragma unroll
      for (int k = 0; k < K; ++k) out[k] = from_float<T>(acc[k] * end.inv);
    }
    if (p.lse != nullptr && dim0 == 0) p.lse[token * p.lse_stride_token + h] = end.lse;
  }
};

// The weights of a row's first 32 splits, w_s = merge_weight(lse_s, M) computed by lane s,
// handed to every lane through the warp's own slot of shared memory: a lane then reads them
// (4 at a time in the small form), where one shuffle per term made the merge a serial chain (SASS: per term a
// divergence check, the shuffle, its ~25-cycle wait and a branch on s < n; trace, 1x32K: 2100
// of the small form's 4400 cycles from its wait to its exit went to the 32 terms; with this,
// the wait to the merged row 1.28 us instead of 2.04, and 1x1K's 8 terms 535 cycles, not 848).
// Same machine (GPU-6766530d), alternating runs, in-graph: 1x8K 14.52 -> 13.91 us, 1x32K
// 37.50 -> 36.91, the ragged batch 55.31 -> 53.80, mix 82.24 -> 81.68, 1x1K 6.79 -> 6.67;
// large batches unchanged (docs/benchmarking.md, eleventh session). Slots past n,
// and the kPad past 32, hold 0: merge_add skips w == 0 and den + 0 keeps den's bits, so a
// term past n changes nothing and batches need no bound per term.
template <int kPad>
struct WarpWeights {
  static constexpr int kSlots = (32 + kPad + 3) / 4 * 4;
  alignas(16) float w[kSlots];  // read as float4 by quad()

  // Lane s's weight (already 0 past n) into slot s, zeros past 32; then the warp's lanes may read.
  __device__ __forceinline__ void publish(float w_lane) {
    int const lane = threadIdx.x % 32;
    w[lane] = w_lane;
    if (lane < kSlots - 32) w[32 + lane] = 0.f;
    __syncwarp();
  }
  __device__ __forceinline__ float4 quad(int q) const { return reinterpret_cast<float4 const*>(w)[q]; }
};

// Terms 4q .. 4q + 3 of one dim (the small and medium forms' thread per dim).
template <class Weights>
__device__ __forceinline__ void merge_add4(Weights const& ws, int q, float const* x, float (&acc)[1], float& den) {
  float4 const w = ws.quad(q);
  float const wq[4] = {w.x, w.y, w.z, w.w};
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    float const xk[1] = {x[k]};
    merge_add(acc, den, wq[k], xk);
  }
}

template <class T, int D, bool kWait = true>
__global__ void __launch_bounds__(D)
    merge_splits_kernel(__grid_constant__ AttentionParams const p) {
  constexpr int kSpec = 32;   // splits summed from registers (one per lane's lse)
  constexpr int kEarly = 8;   // of which loaded with the split count when n is not known yet
                              // (the balanced plan rounds split counts up to it: kPlanRoundUpSplits)
  constexpr int kTail = 8;    // splits past kSpec: loads in flight per batch
  __shared__ WarpWeights<0> weights[D / 32];
  BATON_SELECT(p.k);
  BATON_MARK(1, 0);
  BATON_MARK_SM(1, 11);
  int const lane = threadIdx.x % 32;
  MergeRow<D> const r(p, blockIdx.x, threadIdx.x);
  // With early reads the caller asserts num_kv_splits was written before the chain started
  // (pdl-contract.md rule 1): read it before the wait. Otherwise it may come from an earlier
  // kernel of the step: after the wait.
  int n = p.early_reads ? r.split_count(p) : 0;
  // Next: the following layer's kernels (they wait for this grid's completion). With early
  // reads this small grid triggers at entry, and the producer ahead triggers right after its
  // own wait when this grid fits beside it (decode_attention.cu), so this grid launches while
  // the producer streams, and the next kernel -- in a chain of layers the next producer,
  // whose item search and old-key copies come before its wait -- launches right behind it and
  // copies on the SMs the producer leaves free (same machine, alternating runs, in-graph,
  // early reads: at entry instead of after the wait, with the producer still triggering after
  // its KV loop, 1x32K 35.91 -> 35.12 and 35.88 -> 35.21 us on two machines, eighteenth
  // session; then the producer's trigger after its wait, 1x1K 6.25 -> 5.62, 8x1K 12.62 ->
  // 11.30, nineteenth session; docs/benchmarking.md). By default it triggers right after the
  // wait (the next producer could only wait; a trigger at entry measured slower at 1x1K, rev
  // 5a6b2b9). The medium and large forms trigger at exit in both modes (below): at entry
  // under early reads they moved the ragged batch by -1.7 us, the mix by +1.6 and 64x4K by +3.7.
  bool const entry_trigger = p.early_reads != 0;
  if (entry_trigger) allow_next_grid();
  if constexpr (kWait) wait_on_prior_grid();  // before the first read of producer data
  if (!entry_trigger) allow_next_grid();
  BATON_MARK(1, 1);

  // Latency-bound. n known (early reads): lse of split `lane` and dim d of up to 32 splits in
  // one round trip, nothing for one split. Otherwise the split count, the lse values and dim
  // d of the first kEarly splits in one round trip -- loaded before n is known, bounded by
  // max_splits; values past n are discarded -- then splits kEarly..31 in a second.
  bool const known = p.early_reads != 0;
  if (known && n == 1) return;  // written by the producer
  int const bound = known ? n : p.max_splits;
  int32_t const n_raw = known || p.num_kv_splits == nullptr ? 0 : p.num_kv_splits[r.b];
  float lse_lane = lane < bound ? r.lse_row[lane * r.split_stride] : -INFINITY;
  float x[kSpec];
#pragma unroll
  for (int u = 0; u < kEarly; ++u) x[u] = u < bound ? r.o_row[u * r.o_stride] : 0.f;
  if (!known) n = clamp_splits(p, n_raw);
  if (n == 1) return;  // written by the producer
  BATON_MARK(1, 4);
  if (n > kEarly) {  // splits past the first 8: their code runs only when they exist
#pragma unroll
    for (int u = kEarly; u < kSpec; ++u) x[u] = u < n ? r.o_row[u * r.o_stride] : 0.f;  // in flight together
  }
  if (lane >= n) lse_lane = -INFINITY;  // stale scratch past n (speculative loads)

  // M = max lse (with the sink), then acc and den in split order (split_merge.cuh).
  float const m = r.max_lse(p, lse_lane, n);
  BATON_MARK(1, 5);
  float acc[1] = {0.f}, den = 0.f;
  if (m != -INFINITY) {
    WarpWeights<0>& ws = weights[threadIdx.x / 32];
    ws.publish(lane < n ? merge_weight(lse_lane, m) : 0.f);
    merge_add4(ws, 0, x, acc, den);
    if (n > kEarly / 2) merge_add4(ws, 1, x + 4, acc, den);
    if (n > kEarly) {  // as the loads: n <= 8 (small shapes) runs a quarter of this code, n <= 4 an eighth
#pragma unroll
      for (int q = kEarly / 4; q < kSpec / 4; ++q) merge_add4(ws, q, x + 4 * q, acc, den);
    }
    r.template merge_past_lanes<kTail>(n, m, acc, den);  // more than 32 splits
  }
  MergeEnd const end = merge_end(m, den, p.sinks, r.h);
  BATON_MARK(1, 2);
  r.template store<T>(p, acc, end);
  BATON_MARK(1, 3);
}

// The medium and large forms after the split count n (> 1) is known: lse of split `lane` and
// this thread's K dims of the first kBatch splits in one round trip, then kBatch splits at a
// time, past 32 splits kTail at a time; the weights through the warp's shared memory. Same
// weights, same order of every sum per dim: the same bits as the small form.
template <class T, int kBatch, int D, int K, class Weights>
__device__ __forceinline__ void merge_counted_row(AttentionParams const& p, MergeRow<D, K> const& r, int n,
                                                  Weights& ws) {
  constexpr int kTail = 4;  // splits past 32: loads in flight per batch
  BATON_MARK(1, 4);
  int const lane = threadIdx.x % 32;
  float const lse_lane = lane < n ? r.lse_row[lane * r.split_stride] : -INFINITY;
  float x[kBatch][K];
  auto load_batch = [&](int s0, int limit) {
#pragma unroll
    for (int u = 0; u < kBatch; ++u) {
      if (s0 + u < limit) {
        r.load(s0 + u, x[u]);
      } else {
#pragma unroll
        for (int k = 0; k < K; ++k) x[u][k] = 0.f;
      }
    }
  };
  int const n_lanes = min(n, 32);
  load_batch(0, n_lanes);

  float const m = r.max_lse(p, lse_lane, n);
  BATON_MARK(1, 5);
  float acc[K] = {}, den = 0.f;
  if (m != -INFINITY) {
    ws.publish(lane < n ? merge_weight(lse_lane, m) : 0.f);
    for (int s0 = 0; s0 < n_lanes; s0 += kBatch) {
      if (s0 > 0) load_batch(s0, n_lanes);
#pragma unroll
      for (int u = 0; u < kBatch; ++u) merge_add(acc, den, ws.w[s0 + u], x[u]);  // past n_lanes: weight 0
    }
    r.template merge_past_lanes<kTail>(n, m, acc, den);  // more than 32 splits
  }
  MergeEnd const end = merge_end(m, den, p.sinks, r.h);
  BATON_MARK(1, 2);
  r.template store<T>(p, acc, end);
  BATON_MARK(1, 3);
}

// The medium and large forms' PDL wait and split count: before the wait with early reads (the
// caller's assertion, as in the small form), else first thing after it; no loads before it
// is known. Every thread waits, live or not (a spare warp of the large form's last CTA);
// returns 1 for a row that is not live (nothing to merge).
template <bool kWait, int D, int K>
__device__ __forceinline__ int split_count_after_wait(AttentionParams const& p, MergeRow<D, K> const& r, bool live) {
  int n = p.early_reads && live ? r.split_count(p) : 0;
  if constexpr (kWait) wait_on_prior_grid();  // before the first read of producer data
  BATON_MARK(1, 1);
  if (!live) return 1;
  if (!p.early_reads) n = r.split_count(p);
  return n;
}

// The medium form: more than 2 and at most 6 rows per SM (medium_reducer_rows). Batches of
// a few requests, some of many splits (one 32K request among 15 of 1K; a mix of lengths): a
// CTA per row, thread d owning dim d, the split count first (no speculative loads), then lse
// of split `lane` and dim d of the first kBatch splits in one round trip, kBatch splits at a
// time, past 32 splits kTail at a time. 32 registers, so that 2048 / D CTAs fit per SM and 4,
// not 1, beside each SM's two producer CTAs while it streams. Same weights, same order of
// every sum: the same bits as the small form. Triggers at exit.
template <class T, int D, bool kWait = true>
__global__ void __launch_bounds__(D, 2048 / D)
    merge_splits_medium_kernel(__grid_constant__ AttentionParams const p) {
  constexpr int kBatch = 11;  // splits below 32: loads in flight per batch (the most without spills at 32 registers)
  __shared__ WarpWeights<kBatch> weights[D / 32];
  BATON_SELECT(p.k);
  BATON_MARK(1, 0);
  BATON_MARK_SM(1, 11);
  MergeRow<D> const r(p, blockIdx.x, threadIdx.x);
  int const n = split_count_after_wait<kWait>(p, r, true);
  if (n == 1) return;  // written by the producer
  merge_counted_row<T, kBatch>(p, r, n, weights[threadIdx.x / 32]);
}

// The most rows the medium form takes. A CTA per row beats the large form's warp per row at
// 512 and 576 rows, where rows of up to 32 splits decide the time and 4 of the medium form's
// CTAs fit beside each SM's producer CTAs, and loses from 1024 rows, where the hardware must
// launch most of its CTAs after the producer has ended (same machines, alternating runs,
// in-graph, default mode, docs/benchmarking.md, tenth session: the ragged batch, 512 rows,
// 53.18 against 53.93 us; mix64..16K, 576 rows, 80.72 against 83.16; 32x8K, 1024 rows, 243.12
// against 242.04; 64x4K 246.22 against 240.23). The bound, 6 per SM, lies between the two;
// the point where they cross was not measured.
inline int64_t medium_reducer_rows(int num_sms) { return int64_t(6) * num_sms; }

// The large form: past medium_reducer_rows rows. Large batches, where often every request
// has one split and a row only reads its split count. A warp per row, kLargeRows rows per
// CTA, lane owning D / 32 consecutive dims: a quarter of the CTAs of a CTA per row, because
// once the producer has ended the hardware launches a large grid's remaining CTAs at a
// bounded rate (trace, 128x2K: the 4096 CTAs of a CTA per row entered over 2.5 us after the
// producer's last exit, for rows that read 4 bytes each). Rows are strided by the grid (row =
// CTA + warp * CTAs). The split count first, no speculative loads (a one-split row reads 4
// bytes, not splits of stale scratch); rows of several splits stay parallel, a warp each (a
// grid that merged rows one after another lost up to 31% with draft tokens, seventh
// session): lse of split `lane` and the lane's dims of the first kBatch splits in one round
// trip, then kBatch splits at a time, past 32 splits kTail at a time. Same weights, same
// order of every sum, per dim: the same bits as the small form. Triggers at exit. Measured
// against the medium form at these sizes (same machine, alternating runs, in-graph, default
// mode): 32x8K 243.12 -> 242.04 us, 64x4K 246.22 -> 240.23, 128x2K 247.20 -> 245.28; with 8
// draft tokens 8x1K 22.10 -> 20.13, 64x4K 329.87 -> 321.10, 128x2K 346.75 -> 333.47
// (docs/benchmarking.md, tenth session). Trace marks (BATON_TRACE) record warp 0's row only.
constexpr int kLargeRows = 4;  // rows (warps) per CTA of the large form
constexpr int kLargeThreads = kLargeRows * 32;

// CTAs of the large form for `rows` rows (validate.cpp bounds rows by 2^31 - 1).
inline unsigned large_reducer_ctas(int64_t rows) { return static_cast<unsigned>((rows + kLargeRows - 1) / kLargeRows); }

// Registers: 64 (8 CTAs per SM) at head_dim <= 128, 80 at 256 (no spill).
template <int D>
constexpr int kLargeMinCtas = D <= 128 ? 8 : 6;

template <class T, int D, bool kWait = true>
__global__ void __launch_bounds__(kLargeThreads, kLargeMinCtas<D>)
    merge_splits_large_kernel(__grid_constant__ AttentionParams const p) {
  constexpr int kVec = D / 32;                       // dims per lane
  constexpr int kBatch = kVec >= 4 ? 32 / kVec : 8;  // splits below 32: loads in flight per batch
  __shared__ WarpWeights<kBatch> weights[kLargeRows];
  BATON_SELECT(p.k);
  BATON_MARK(1, 0);
  BATON_MARK_SM(1, 11);
  int const lane = threadIdx.x % 32;
  int64_t const row = blockIdx.x + int64_t(threadIdx.x / 32) * gridDim.x;
  bool const live = row < int64_t(p.batch) * p.q_len * p.num_q_heads;  // the last rows' spare warps
  MergeRow<D, kVec> const r(p, live ? row : 0, lane * kVec);
  int const n = split_count_after_wait<kWait>(p, r, live);
  if (n == 1) return;  // written by the producer, or not a row
  merge_counted_row<T, kBatch>(p, r, n, weights[threadIdx.x / 32]);
}

}  // namespace baton::attention
