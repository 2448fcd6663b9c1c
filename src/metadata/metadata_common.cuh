// Device pieces shared by the metadata kernels: the length clamp, the block-wide prefix sum
// that writes cache_seqlens / cu_seqlens_k, and the split heuristic.
#pragma once

#include <cstdint>

#include "common/index.cuh"
#include "common/pdl.cuh"

namespace baton::metadata {

constexpr int kThreads = 256;        // every metadata kernel uses 256-thread CTAs
constexpr int kColsPerThread = 8;    // page-table columns one thread writes per work item
// (16 measured slower on H200: more registers, fewer resident CTAs; see docs/benchmarking.md)
constexpr int kColsPerItem = kThreads * kColsPerThread;
constexpr int kSectorColsPerItem = 64;  // decode metadata, page_size >= 8 (one sector per entry)

// Split-heuristic inputs with the per-request grid precomputed on the host.
struct SplitPlanDevice {
  int32_t* num_kv_splits = nullptr;  // [batch_size], null: no plan
  int max_splits = 1;
  int num_sms = 1;
  int ctas_per_request = 1;  // validate.h split_plan_ctas_per_request: the attention grid's CTAs per request
  int min_keys_per_split = 0;
  int ctas_per_wave = 0;  // > 0: balanced plan (SplitPlanParams::ctas_per_wave)
  bool doubled = false;   // set by plan_waves when it plans a ragged batch for 2 x the wave
};

__device__ __forceinline__ void set_error(int32_t* flags, int32_t bits) {
  if (flags != nullptr) atomicOr(flags, bits);
}

// Clamps a length to [0, max_len]; ORs what it clamped into `bits` (MetadataError), which the
// caller reports after its PDL wait.
__device__ __forceinline__ int64_t clamp_length(int64_t len, int64_t max_len, int32_t& bits) {
  if (len < 0) {
    bits |= 1 << 0;
    return 0;
  }
  if (len > max_len) {
    bits |= 1 << 1;
    return max_len;
  }
  return len;
}

// a + b, saturated at the int64 limits (a length near INT64_MAX plus seq_len_delta must clamp
// as "past the row", not overflow, which is undefined and in practice reads as negative).
__device__ __forceinline__ int64_t add_sat(int64_t a, int64_t b) {
  if (b > 0 && a > INT64_MAX - b) return INT64_MAX;
  if (b < 0 && a < INT64_MIN - b) return INT64_MIN;
  return a + b;
}

__device__ __forceinline__ int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Exclusive scan over the CTA's kThreads values; *total gets the CTA sum. Ends with a barrier
// so `warp_sums` can be reused by the next call.
__device__ __forceinline__ int64_t block_exclusive_scan(int64_t value, int64_t* total,
                                                        int64_t* warp_sums /* [kThreads/32] */) {
  constexpr int kWarps = kThreads / 32;
  int const lane = threadIdx.x & 31;
  int const warp = threadIdx.x >> 5;
  int64_t inclusive = value;
#pragma unroll
  for (int offset = 1; offset < 32; offset <<= 1) {
    int64_t up = __shfl_up_sync(0xffffffffu, inclusive, offset);
    if (lane >= offset) inclusive += up;
  }
  if (lane == 31) warp_sums[warp] = inclusive;
  __syncthreads();
  if (warp == 0) {
    int64_t s = lane < kWarps ? warp_sums[lane] : 0;
#pragma unroll
    for (int offset = 1; offset < kWarps; offset <<= 1) {
      int64_t up = __shfl_up_sync(0xffffffffu, s, offset);
      if (lane >= offset) s += up;
    }
    if (lane < kWarps) warp_sums[lane] = s;  // inclusive prefix over warps
  }
  __syncthreads();
  int64_t const warp_prefix = warp == 0 ? 0 : warp_sums[warp - 1];
  *total = warp_sums[kWarps - 1];
  __syncthreads();
  return warp_prefix + inclusive - value;
}

// Balanced plan: the chunk that cuts the whole batch into about `waves` x ctas_per_wave CTAs
// of equal work (total_len: sum of the clamped lengths). waves 1: the first pass. waves 2:
// past one wave (the batch alone fills it, or a fit would starve the long requests), so that
// the producer's CTAs, which loop over the items past the wave, get items of about half a
// one-wave chunk -- finer items even out the CTAs' loops.
__device__ __forceinline__ int64_t balanced_chunk(int64_t total_len, SplitPlanDevice const& p, int waves = 1) {
  total_len = total_len < 1 ? 1 : total_len;
  int64_t chunk = ceil_div(total_len * p.ctas_per_request, waves * int64_t(p.ctas_per_wave));
  chunk = chunk > p.min_keys_per_split ? chunk : p.min_keys_per_split;
  return chunk < 1 ? 1 : chunk;
}

// A request longer than the first-pass chunk is "long".
__device__ __forceinline__ bool balanced_long(int64_t len, int64_t chunk) { return (len < 1 ? 1 : len) > chunk; }

constexpr int kPlanBisectSteps = 8;  // balanced plan, second pass: bisection steps for the chunk

// Splits a request may take below the key floor's count (balanced_splits): the attention
// reducer merges up to 8 splits in its first round trip in the default mode
// (merge_splits_kernel.cuh, kEarly), so up to 8 the rounded-up count costs no round trip.
constexpr int64_t kPlanRoundUpSplits = 8;

// Balanced plan: split count of a request of len keys (>= 1) for a chunk of keys per split:
// ceil(len / chunk); with a key floor, at most floor(len / min_keys_per_split), except that a
// request the floor already splits (into 2 or more) may round up while the count stays within
// kPlanRoundUpSplits (splits of at most chunk keys, the last one shorter); in [1, max_splits].
// This is for short requests whose chunk is the floor (a single request, or a few): 1001 keys
// at floor 128 take 8 splits of 8 tiles (2 per producer warp), not 7 of 9 (a warp with 3).
// One request, 32/8 heads, head_dim 128, page 64, in-graph us, the floor alone -> rounding up
// (GPU-b3f8fe2e, 2 runs each, `baton-bench attention --graph-only --only 1x1K --len-delta N`):
// 300 keys 6.81 -> 6.23, 400 6.15 -> 5.64, 500 6.79 -> 6.24, 600 6.25 -> 6.17, 700 6.41 ->
// 5.96, 840 6.42 -> 6.32, 920 6.48 -> 6.10, 964 6.50 -> 6.36, 1001 6.89 -> 6.35; with early
// reads -0.44 to -0.69 at 300-500, 700, 920 and 1001, +0.12 at 840, within 0.05 elsewhere;
// 8 requests of 500 keys 10.05 -> 9.21 (one run, GPU-14510562). Not past 8 splits: 9 at 1124
// keys cost 6.61 -> 6.76 (the reducer's second round trip). Not from one split to two (len <
// 2 x the floor): 150 / 200 keys gained 0.1-0.4 us by default but with early reads 150 keys
// lost 0.11 and 8 requests of 200 lost 0.35 (their one-split rows skip the reducer's merge
// then). docs/benchmarking.md, thirty-third session.
__device__ __forceinline__ int64_t balanced_splits(int64_t len, int64_t chunk, SplitPlanDevice const& p) {
  // 32-bit: len and chunk are in [1, 2^31) (lengths are int32; a chunk is at most the longest).
  // 64-bit divisions made the page-1 metadata kernel (40 registers) spill in its length scan
  // (docs/benchmarking.md, forty-sixth session).
  unsigned const l = static_cast<unsigned>(len), c = static_cast<unsigned>(chunk);
  unsigned n = (l + c - 1) / c;
  unsigned const floor_n = p.min_keys_per_split > 0 ? l / static_cast<unsigned>(p.min_keys_per_split) : n;
  if (n > floor_n && (n > kPlanRoundUpSplits || floor_n < 2)) n = floor_n;
  return n < 1 ? 1 : (n > static_cast<unsigned>(p.max_splits) ? p.max_splits : n);
}

// Balanced plan, past the wave without a fit (plan_one): request of len keys (>= 1) with the
// two-wave chunk gets floor(len / chunk) splits, at least 1, at most max_splits.
__device__ __forceinline__ int64_t past_wave_splits(int64_t len, int64_t chunk_over, SplitPlanDevice const& p) {
  int64_t const n = len / chunk_over;
  return n < 1 ? 1 : (n > p.max_splits ? p.max_splits : n);
}

// A batch that plan_waves keeps in one wave (not ragged) is planned past the wave instead
// when its one-wave fit is poor (balanced_chunk2), because the fit cuts each
// request into whole splits: with requests of about one length it can leave much of the wave
// empty (12 x 32K at 32/8 heads: 2 splits, 192 of 264 CTAs; 17 x 32K: 1 split, 136), or fill
// it unevenly (12 requests of 30000 + 250 b keys: the busiest CTA 15.2K keys against an
// equal share of 11.4K). Past the wave the plan is the two-wave fit (fit_chunk for 2 x the
// wave: the smallest chunk whose splits fit it), so the producer's CTAs loop over about two
// items each; compare the busiest CTA of each plan: B1, the fit's longest split (one item per
// CTA), and B2 = ceil(items per kv head / CTAs per kv head) x the longest item past the wave
// (a bound: the CTAs take items c, c + G, ... of their kv head). Poor: B2 < 19/20 of B1, or a
// fit of fewer than 5/6 of the wave's CTAs with B2 <= B1 (idle SMs cost stream rate beyond
// the busiest CTA: 24 x 16K and 24 x 8K, B2 = B1, gained 3.5-5.7%). Like the ragged rule
// (plan_waves) it needs a two-wave chunk of at least kTwoWaveMinKeys.
// Forty-fourth session (GPU-e18fae57, in graphs, one wave -> past the wave, `baton-bench
// attention --graph-only --shape B,CTX,64 --wave 264 / 528`): 12 x 32K 402.4-410.3 ->
// 368.1-368.2 us, 17 x 32K 580.4-580.8 -> 528.3-528.4, 13 x 16K 226.3 -> 201.3-201.5, 24 x
// 16K 401.7 -> 378.7-387.8, 20 x 4K 89.6 -> 83.9, 20 x 2K 47.2-47.3 -> 45.5-45.6. At 97%
// fills with B2 = B1 (32 x 8K, 16 x 32K) the fit stays: past the wave 32 x 8K lost 2.9-3.1 us.
// Forty-fifth session: the plan past the wave was floor(len / two-wave chunk), which rounds
// down (22 x 32K: 2 splits, 44 items on 33 CTAs per kv head, so a third of the CTAs streamed
// two 16K items; 6 x 32K: 10 splits, B2 = B1, so the fit stayed). The two-wave fit instead,
// old -> new, `baton-bench attention --graph-only --shape ...`, two machines (GPU-238f788f,
// GPU-4e74d5c4): 22 x 32K 704.6-704.9 -> 644.0-644.2 us, 22 x 8K 178.1-187.2 -> 166.0-166.2,
// 6 x 32K 186.8-187.1 -> 180.8-181.0, 24 requests of 16384 - 200 b 315.3-316.0 -> 308.7-309.2,
// 26 of 8192 - 100 b 173.2-175.4 -> 167.5-168.1, 12 of 32750 - 250 b 344.4-344.5 -> 339.2-339.3,
// 20 of 8192 - 100 b 141.7 -> 136.0-136.1; a third (GPU-dad7d615), two-wave chunks of 683-1675
// keys: 22 x 4K 92.7-95.5 -> 89.5, 22 x 2K 50.3-51.8 -> 48.5-48.7, 6 x 16K 98.3-98.4 -> 96.6-96.8,
// 7 of 16384 - 200 b 109.5-109.6 -> 107.5-107.8, 12 of 8192 - 100 b 92.2-92.5 -> 91.0-91.2,
// 13 of 8192 - 100 b -1.1%, 14 of 8192 - 100 b and 24 of 4096 - 50 b -0.1 to -0.9%. It lost at
// five requests whose fits fill the wave: 5 of 8192 - 100 b 41.85 -> 42.97 (7 -> 14 splits), 5
// of 16384 - 200 b 77.9-78.0 -> 78.2 (docs/benchmarking.md, forty-fifth session).
constexpr int64_t kPoorFitNum = 19, kPoorFitDen = 20;    // B2 below 19/20 of B1: past the wave
constexpr int64_t kUnderfillNum = 5, kUnderfillDen = 6;  // a fit below 5/6 of the wave is underfilled
constexpr int64_t kTwoWaveMinKeys = 512;

// Sum of a 64-bit value over the warp, in every lane (all 32 lanes call it): three 32-bit
// redux of 21-bit parts, exact modulo 2^64, and no shuffle chain.
__device__ __forceinline__ unsigned long long warp_sum(unsigned long long v) {
  unsigned const m = (1u << 21) - 1;
  unsigned long long const a = __reduce_add_sync(0xffffffffu, static_cast<unsigned>(v) & m);
  unsigned long long const b = __reduce_add_sync(0xffffffffu, static_cast<unsigned>(v >> 21) & m);
  unsigned long long const c = __reduce_add_sync(0xffffffffu, static_cast<unsigned>(v >> 42));  // < 2^22
  return a + (b << 21) + (c << 42);
}

// The bisection of fit_chunk runs kPlanLevelsPerRound levels per round: the 2^L - 1 nodes of
// the next L levels (heap order: node j's children 2j + 1, its chunk fits, and 2j + 2) are
// evaluated at once, a warp per node, and every thread then walks them. The walk takes the
// steps one bisection step at a time would take, so the chunk is the same, in
// ceil(kPlanBisectSteps / L) rounds of one barrier each instead of one block reduction per
// step (~0.5 us each). L 3 (7 nodes on the 8 warps) against 2 and 4 (15 nodes, two per
// warp): docs/benchmarking.md, forty-sixth session.
constexpr int kPlanLevelsPerRound = 3;
constexpr int kPlanRounds = (kPlanBisectSteps + kPlanLevelsPerRound - 1) / kPlanLevelsPerRound;
static_assert((1 << kPlanLevelsPerRound) - 1 <= 8, "a round's flags are the bytes of one 64-bit word");

// Balanced plan: about the smallest chunk whose balanced_splits fit `wave` CTAs, once per CTA
// (every thread calls it; barriers inside). Every request takes at least one CTA per kv head;
// the CTAs left over are shared by the long requests' keys (longer than `lo`, the equal-share
// chunk for that wave). c_hi = max(lo, ceil(long keys * CTAs per request / CTAs left)) always
// fits (the sum of ceil(len / c_hi) over the long requests is at most long keys / c_hi + their
// count); kPlanBisectSteps bisection steps over [lo, min(c_hi, longest)] then find about the
// smallest chunk that fits -- the least work for the busiest CTA. Returns 0 when no CTA is left
// over or no request is long. Every warp sums the batch itself (lanes over the requests), so
// the warps agree on every step (and reach the same barriers) only because the lengths are
// stable: they are read after the PDL wait. `fits`: shared, kPlanRounds words, a byte per node.
template <class LenOf>
__device__ int64_t fit_chunk(LenOf const& len_of, int batch_size, int64_t longest, int64_t lo, int64_t wave,
                             SplitPlanDevice const& p, unsigned long long* fits) {
  int64_t const slots = wave - int64_t(batch_size) * p.ctas_per_request;
  if (slots <= 0) return 0;
  int const lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  unsigned long long long_len = 0;
#pragma unroll 1
  for (int i = lane; i < batch_size; i += 32) {
    int64_t const len = len_of(i);
    if (balanced_long(len, lo)) long_len += static_cast<unsigned long long>(len);
  }
  long_len = warp_sum(long_len);
  if (long_len == 0) return 0;
  int64_t hi = ceil_div(static_cast<int64_t>(long_len) * p.ctas_per_request, slots);
  hi = hi < longest ? hi : longest;  // longest > lo: one is long
  hi = hi > lo ? hi : lo;
  __syncthreads();  // a previous call's walkers of fits are done
#pragma unroll 1
  for (int round = 0, step = 0; round < kPlanRounds && lo < hi; ++round, step += kPlanLevelsPerRound) {
    int const levels = kPlanBisectSteps - step < kPlanLevelsPerRound ? kPlanBisectSteps - step : kPlanLevelsPerRound;
    unsigned char* const fit = reinterpret_cast<unsigned char*>(&fits[round]);
#pragma unroll 1
    for (int j = warp; j < (1 << levels) - 1; j += kThreads / 32) {
      int64_t l = lo, h = hi;  // node j's interval: the path to it, from the bits of j + 1 below its top bit
      int const n = j + 1, depth = 31 - __clz(n);
      for (int d = depth - 1; d >= 0 && l < h; --d) {
        int64_t const mid = l + (h - l) / 2;
        if ((n >> d) & 1) {
          l = mid + 1;
        } else {
          h = mid;
        }
      }
      if (l >= h) continue;  // the walk stops before it: lo == hi
      int64_t const mid = l + (h - l) / 2;
      unsigned long long ctas = 0;
#pragma unroll 1
      for (int i = lane; i < batch_size; i += 32) {
        int64_t const len = len_of(i);
        ctas += static_cast<unsigned long long>(balanced_splits(len < 1 ? 1 : len, mid, p));
      }
      ctas = warp_sum(ctas);
      if (lane == 0) fit[j] = static_cast<int64_t>(ctas) * p.ctas_per_request <= wave;
    }
    __syncthreads();
    unsigned long long const flags = fits[round];  // one load: node j's flag is byte j
    for (int d = 0, j = 0; d < levels && lo < hi; ++d) {  // the same steps in every thread
      int64_t const mid = lo + (hi - lo) / 2;
      if ((flags >> (8 * j)) & 1) {
        hi = mid;
        j = 2 * j + 1;
      } else {
        lo = mid + 1;
        j = 2 * j + 2;
      }
    }
  }
  return hi;
}

// The plan of a chunk over the batch, in every warp (lanes over the requests, no barrier):
// the requests' split counts (balanced_splits) summed, and their longest split.
struct PlanStats {
  int64_t splits, longest;
};
template <class LenOf>
__device__ PlanStats plan_stats(LenOf const& len_of, int batch_size, int64_t chunk, SplitPlanDevice const& p) {
  unsigned long long n = 0;
  unsigned longest = 0;  // a split is at most a length: < 2^31
#pragma unroll 1
  for (int i = threadIdx.x % 32; i < batch_size; i += 32) {
    int64_t len = len_of(i);
    len = len < 1 ? 1 : len;
    int64_t const splits = balanced_splits(len, chunk, p);
    n += static_cast<unsigned long long>(splits);
    unsigned const split_len = static_cast<unsigned>(ceil_div(len, splits));
    longest = split_len > longest ? split_len : longest;
  }
  return {static_cast<int64_t>(warp_sum(n)), static_cast<int64_t>(__reduce_max_sync(0xffffffffu, longest))};
}

// Balanced plan, second pass, once per CTA (every thread calls it; barriers inside): the
// one-wave fit (fit_chunk from the first-pass chunk c1). Returns 0 -- past the wave,
// floor(len / the two-wave chunk) splits (plan_one) -- when no CTA is left over, no request is
// long, or the fit would give a split more than 2 x c1 keys. For a one-wave plan (not
// plan_waves' doubled one) whose two-wave chunk is at least kTwoWaveMinKeys, a poor fit
// (kPoorFitNum) returns the chunk of the plan past the wave instead: fit_chunk for two waves.
// len_of(i): clamped length (>= 0) of request i; total: their sum; longest: their max (both
// already reduced by the caller).
template <class LenOf>
__device__ int64_t balanced_chunk2(LenOf const& len_of, int batch_size, int64_t total, int64_t longest,
                                   SplitPlanDevice const& p) {
  __shared__ unsigned long long fits[kPlanRounds];
  int64_t const c1 = balanced_chunk(total, p);
  int64_t const hi = fit_chunk(len_of, batch_size, longest, c1, p.ctas_per_wave, p, fits);
  // A fit whose splits are more than twice the first-pass chunk starves the long requests (few
  // CTAs left over: batch x CTAs per request just under the wave, e.g. 1 x 4K among 31 x 256,
  // whose two-wave chunk is under kTwoWaveMinKeys, would get 2 splits of 2K keys): past the
  // wave instead (plan_one: the two-wave chunk).
  if (hi == 0 || hi > 2 * c1) return 0;
  int64_t const chunk_over = balanced_chunk(total, p, 2);
  if (p.doubled || chunk_over < kTwoWaveMinKeys) return hi;
  // The fit's CTAs and busiest CTA B1 (see kPoorFitNum), in one pass.
  PlanStats const fit = plan_stats(len_of, batch_size, hi, p);
  int64_t const ctas_per_head = p.ctas_per_wave / p.ctas_per_request;  // >= 1: slots > 0
  int64_t const busiest1 = fit.longest;
  bool const underfilled = fit.splits * p.ctas_per_request * kUnderfillDen < kUnderfillNum * int64_t(p.ctas_per_wave);
  // No plan past the wave has a busiest CTA below the equal share, ceil(total / CTAs per kv
  // head) (its items cover every key): where that is at least 19/20 of B1 and the fit fills
  // the wave, the fit stays without the two-wave bisection (~4 us of the planner at 8 x 16K
  // before the forty-sixth session; 32 x 8K and 16 x 32K skip it too).
  if (!underfilled && ceil_div(total, ctas_per_head) * kPoorFitDen >= busiest1 * kPoorFitNum) return hi;
  // The plan past the wave: about the smallest chunk whose splits fit two waves. Where
  // floor(len / chunk_over) rounds down it takes more splits (22 x 32K: 3 of 10.9K keys, 66
  // items on the 33 CTAs of a kv head, where the floor gave 2 of 16K, 44 items). over > 0:
  // some request is longer than c1 >= chunk_over (hi > 0), and two waves leave more CTAs over
  // than one.
  int64_t const over = fit_chunk(len_of, batch_size, longest, chunk_over, 2 * int64_t(p.ctas_per_wave), p, fits);
  // Its items and longest item, in one more pass: B2.
  PlanStats const past = plan_stats(len_of, batch_size, over, p);
  int64_t const busiest2 = ceil_div(past.splits, ctas_per_head) * past.longest;
  bool const poor = busiest2 * kPoorFitDen < busiest1 * kPoorFitNum || (underfilled && busiest2 <= busiest1);
  return poor ? over : hi;
}

// Balanced plan, ragged batches: a one-wave plan cannot give CTAs equal work when the lengths
// differ widely (a short request still takes a whole CTA per kv head, and a long one is cut
// into whole splits), so when the longest planned length is more than twice the shortest,
// the batch leaves room in the wave, and the two-wave chunk is at least kTwoWaveMinKeys, the
// plan is made for twice ctas_per_wave: the producer's CTAs then loop over about two items
// each, and the finer items even out their loops. The key floor keeps an item's fixed cost
// (page ids, first tiles, merge: ~2-3 us) small against its stream. Same machine, baton-bench
// attention --graph-only, in-graph us, one wave -> two: 1x32K+15x1K 58.1-58.4 -> 55.8-56.1,
// mix64..16K 92.6-98.3 -> 88.4-91.2; uniform batches keep one wave (two lost at 32x8K 260.3
// -> 263.5 and 8x1K 14.2 -> 16.3, items of 128 keys; 16x32K was not conclusive), unless
// their one-wave fit is poor (balanced_chunk2).
__device__ __forceinline__ SplitPlanDevice plan_waves(SplitPlanDevice p, int batch_size, int64_t total_len,
                                                      int64_t max_len, int64_t min_len) {
  if (p.ctas_per_wave <= 0 || p.ctas_per_wave > (1 << 29)) return p;
  max_len = max_len < 1 ? 1 : max_len;
  min_len = min_len < 1 ? 1 : min_len;
  bool const ragged = max_len - min_len > min_len;  // max > 2 x min, no overflow at min = INT64_MAX (empty batch)
  bool const room = int64_t(batch_size) * p.ctas_per_request < p.ctas_per_wave;
  if (ragged && room && balanced_chunk(total_len, p, 2) >= kTwoWaveMinKeys) {
    p.ctas_per_wave *= 2;
    p.doubled = true;
  }
  return p;
}

// Split count of one request: SGLang's heuristic (decode-metadata.md section 3), or baton's
// balanced plan when ctas_per_wave > 0. Lengths are planned as at least one token, so a
// length of 0 gets one split and nothing divides by 0. total_len: sum of the clamped lengths;
// chunk2: balanced_chunk2 (balanced plan only).
__device__ __forceinline__ int plan_one(int64_t len, int64_t max_len, int64_t min_len, int64_t total_len,
                                        int64_t chunk2, int batch_size, SplitPlanDevice const& p) {
  len = len < 1 ? 1 : len;
  if (p.ctas_per_wave > 0) {
    if (chunk2 > 0) return static_cast<int>(balanced_splits(len, chunk2, p));
    return static_cast<int>(past_wave_splits(len, balanced_chunk(total_len, p, 2), p));  // about one chunk per split
  }
  max_len = max_len < 1 ? 1 : max_len;
  min_len = min_len < 1 ? 1 : min_len;
  if (max_len * 8 < min_len * 10) min_len = max_len;  // max < 1.25 min: uniform batch
  int64_t s1 = ceil_div(max_len, min_len);
  s1 = s1 < p.max_splits ? s1 : p.max_splits;
  int64_t const c1 = ceil_div(max_len, s1);
  double const ext = log2(static_cast<double>(max_len) / 64.0);
  int64_t const cores = static_cast<int64_t>(p.num_sms * (ext > 1.0 ? ext : 1.0));
  int64_t const grid = static_cast<int64_t>(batch_size) * p.ctas_per_request;
  int64_t s2 = ceil_div(cores, grid);
  s2 = s2 < p.max_splits ? s2 : p.max_splits;
  int64_t const c2 = ceil_div(max_len, s2);
  int64_t const a = ceil_div(len, c1), b = ceil_div(len, c2);
  int64_t splits = a > b ? a : b;
  if (p.min_keys_per_split > 0) {
    int64_t const cap = ceil_div(len, p.min_keys_per_split);
    splits = splits < cap ? splits : cap;
  }
  return static_cast<int>(splits);
}

// One CTA: cache_seqlens[i] = clamp(len(i)), cu_seqlens_k = exclusive prefix with the total
// last, and (if planned) num_kv_splits. `length_of(i, bits)` returns the clamped length of row
// i and ORs clamping faults into bits, reported to `error_flags` after the wait.
template <class LengthOf, class Gate>
__device__ void write_lengths(int batch_size, LengthOf const& length_of, int32_t* cache_seqlens,
                              int32_t* cu_seqlens_k, SplitPlanDevice const& plan, Gate& gate,
                              int32_t* error_flags) {
  int32_t bits = 0;
  __shared__ int64_t warp_sums[kThreads / 32];
  __shared__ unsigned max_u, min_u;  // lengths are clamped to int32: < 2^31
  if (threadIdx.x == 0) {
    max_u = 0;
    min_u = 0xffffffffu;
  }
  __syncthreads();
  int64_t carry = 0;
  int64_t max_len = 0, min_len = INT64_MAX;
  for (int base = 0; base < batch_size; base += kThreads) {
    int const i = base + threadIdx.x;
    gate.before_read();
    int64_t const len = i < batch_size ? length_of(i, bits) : 0;
    int64_t total = 0;
    int64_t const excl = block_exclusive_scan(len, &total, warp_sums);
    gate.before_write();
    if (i < batch_size) {
      cache_seqlens[i] = static_cast<int32_t>(len);
      cu_seqlens_k[i] = static_cast<int32_t>(carry + excl);
      max_len = len > max_len ? len : max_len;
      min_len = len < min_len ? len : min_len;
    }
    carry += total;
  }
  gate.before_write();  // batch_size == 0: no loop iteration waited
  if (threadIdx.x == 0) cu_seqlens_k[batch_size] = static_cast<int32_t>(carry);
  if (bits != 0) set_error(error_flags, bits);
  if (plan.num_kv_splits == nullptr) return;

  // The longest and shortest length: a redux per warp, then one shared atomic per warp (64-bit
  // shared atomics from every thread contended: plan_kv_splits' first pass took 12.4 us at
  // batch 256 with them, docs/benchmarking.md, forty-fifth session).
  unsigned const warp_max = __reduce_max_sync(0xffffffffu, static_cast<unsigned>(max_len));
  unsigned const own_min = min_len < 0xffffffffll ? static_cast<unsigned>(min_len) : 0xffffffffu;  // none: INT64_MAX
  unsigned const warp_min = __reduce_min_sync(0xffffffffu, own_min);
  if (threadIdx.x % 32 == 0) {
    atomicMax(&max_u, warp_max);
    atomicMin(&min_u, warp_min);
  }
  __syncthreads();
  int64_t const max_len_s = max_u;
  int64_t const min_len_s = min_u == 0xffffffffu ? INT64_MAX : min_u;  // empty batch: as plan_kv_splits
  SplitPlanDevice const planned = plan_waves(plan, batch_size, carry, max_len_s, min_len_s);
  int64_t const chunk2 =
      planned.ctas_per_wave > 0
          ? balanced_chunk2([&](int i) { return length_of(i, bits); }, batch_size, carry, max_len_s, planned)
          : 0;
  for (int i = threadIdx.x; i < batch_size; i += kThreads) {
    plan.num_kv_splits[i] = plan_one(length_of(i, bits), max_len_s, min_len_s, carry, chunk2, batch_size, planned);
  }
}

}  // namespace baton::metadata
