// The producer's item search for many requests (split_kv_kernel.cuh): which (request, split)
// items a CTA takes, listed a pass at a time; and, for the few-requests search, the page-table
// prefetch that runs beside it (prefetch_page_rows).
#pragma once

#include "attention/attention_common.cuh"
#include "attention/page_prefetch.h"

namespace baton::attention {

// Producer CTAs: grid (num_kv_heads * row_chunks, G), G = min(batch * max_splits,
// ctas_per_wave / (num_kv_heads * row_chunks)) -- sized at capture from max_splits and the
// device, so that every CTA is resident at once. The live work items, (request b, split s <
// num_kv_splits[b]) in request-major order, are found on the device: CTA (x, c) takes items
// c, c + G, c + 2G, ... (for its kv head and row chunk). With a split plan of at most G
// items (the balanced plan for one wave), each CTA has at most one; CTAs without an item
// exit after the PDL wait. Two instances, which the host picks by batch (kMany = batch >
// kFewRequests), each holding only its own item search: up to kFewRequests requests, warp 0
// reads and scans them (one request per lane) and one barrier shares them; each warp then maps
// item ordinals to requests by ballot. More: find_items lists kMaxItems of the CTA's items at
// a time, reading the requests' split counts and lengths 128 per round (4 rounds' loads in
// flight together) and prefix-summing them across the CTA.
constexpr int kMaxItems = 64;
constexpr int kFewRequests = 32;  // batch <= 32: the instance with the warp scan (kMany false)

struct ItemList {
  int b[kMaxItems], split[kMaxItems], n[kMaxItems], len[kMaxItems];
  int warp_sums[2][kWarps];  // find_items: the warps' totals, two rounds in turn
};

// Few requests, default mode: while warp 0 reads the lengths and split counts (round trip
// (1), split_kv_kernel.cuh), warps 1-3 of all CTAs together prefetch every request's page-table
// row into L2 (its first kPrefetchLinesPerRow 128-byte lines, at most one line per thread
// of the grid's 96 per CTA: page_prefetch.h), so that round trip (2), the page ids, hits L2 where
// the table had left it -- a cold call, or in an engine the step's GEMMs streaming their
// weights between two layers' attention. After the wait: the table may come from an earlier
// kernel of the step (pdl-contract.md, rule 1). With early reads the CTA reads the table
// before its wait instead. A small gain (docs/benchmarking.md, twenty-third session), cold
// single calls, medians of alternating runs: as an experiment in both instances (3 runs) 1x1K
// 10.82 -> 10.56 us, 1x8K 19.36 -> 19.23, 8x1K 19.42 -> 19.30, 1x32K 45.50 -> 45.28; this
// form on GPU-fd452014 (3 runs) 10.85 -> 10.69, 19.30 -> 19.23, 19.52 -> 19.42, 45.18 ->
// 44.93, then (5 runs) 1x1K 10.85 -> 10.82; the hardened form below on GPU-e9086425 (2 runs)
// 10.89 -> 10.81, 1x8K, 8x1K, 1x32K within 0.03. In graphs 1x1K 6.41 -> 6.36, 6.39 -> 6.32,
// 6.33 -> 6.30, the others within noise. Prefetching the q rows as well gained nothing more.
// Called by threads 32.. only (warp 0 is reading the lengths).
__device__ __forceinline__ void prefetch_page_rows(AttentionParams const& p) {
  int const lines = page_prefetch_lines(p.pt_cols);
  // CTAs x 96 < 2^32: the grid is at most one wave of CTAs or num_kv_heads x row_chunks
  // (producer_launch.cuh, launch_producer); page_prefetch's test is unsigned either way.
  unsigned const i = (blockIdx.y * gridDim.x + blockIdx.x) * unsigned(kThreads - 32) + (threadIdx.x - 32u);
  page_prefetch(i, p, lines, [&](int b, int64_t col) {
    int32_t const* const a = p.page_table + b * p.pt_stride + col;
    asm volatile("prefetch.global.L2 [%0];" ::"l"(a));
  });
}

// This CTA's items with ordinals [pass * kMaxItems, (pass + 1) * kMaxItems); returns how
// many there are (the rest of the list is not written). Ends with a barrier.
// Requests go 128 at a time, one per thread (kPer such rounds' loads in flight together):
// a warp scan of the split counts, one barrier for the warps' totals (double-buffered, so no
// second barrier), then each thread lists this CTA's items among its own request's (one
// division; a request of at most G items holds at most one). It stops as soon as the pass is
// full. The form before it (8 consecutive requests per thread, two barriers per step, an
// unrolled walk over the 8) took ~2000 cycles more than the warp scan at 64-128 requests
// (docs/benchmarking.md, thirteenth session).
__device__ __forceinline__ int find_items(AttentionParams const& p, int c, int G, int pass, ItemList& list) {
  constexpr int kPer = 4;  // rounds of kThreads requests whose loads are in flight together
  // 32-bit arithmetic throughout (64-bit division is a long subroutine): item ordinals are
  // < batch * max_splits <= 65535 * 1024.
  int const lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  int const k_lo = pass * kMaxItems, k_hi = k_lo + kMaxItems;
  int const full = c + (k_hi - 1) * G;  // the pass's last ordinal: past it, the pass is full
  int carry = 0;                        // items of the requests before this round
  int parity = 0;                       // which half of warp_sums this round uses
#pragma unroll 1
  for (int base = 0; base < p.batch && carry <= full; base += kThreads * kPer) {
    int nb[kPer], lb[kPer];
#pragma unroll
    for (int u = 0; u < kPer; ++u) {
      int const b = base + u * kThreads + static_cast<int>(threadIdx.x);
      int32_t const raw = b < p.batch && p.num_kv_splits != nullptr ? p.num_kv_splits[b] : 0;
      lb[u] = b < p.batch ? p.cache_seqlens[b] : 0;
      nb[u] = b < p.batch ? clamp_splits(p, raw) : 0;
    }
    int const rounds = min(kPer, (p.batch - base + kThreads - 1) / kThreads);
#pragma unroll 1
    for (int u = 0; u < rounds && carry <= full; ++u) {
      int const b = base + u * kThreads + static_cast<int>(threadIdx.x);
      int const n = nb[0], len = lb[0];
#pragma unroll
      for (int v = 0; v + 1 < kPer; ++v) {  // the next round's request to the front
        nb[v] = nb[v + 1];
        lb[v] = lb[v + 1];
      }
      int incl = n;  // inclusive prefix of the counts over the warp
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        int const up = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= o) incl += up;
      }
      int* const sums = list.warp_sums[parity];
      if (lane == 31) sums[warp] = incl;
      __syncthreads();  // the other half was last read before this barrier: no second one
      parity ^= 1;
      int before = carry + incl - n, total = 0;
#pragma unroll
      for (int w = 0; w < kWarps; ++w) {
        before += w < warp ? sums[w] : 0;
        total += sums[w];
      }
      // Request b holds the ordinals [before, before + n); this CTA's are c + k * G, k >= k_lo.
      if (n > 0 && before + n > c) {
        int k = before > c ? (before - c + G - 1) / G : 0;  // first k with c + k * G >= before
        k = k > k_lo ? k : k_lo;
        for (int i = c + k * G; i < before + n && k < k_hi; i += G, ++k) {
          int const slot = k - k_lo;
          list.b[slot] = b;
          list.split[slot] = i - before;
          list.n[slot] = n;
          list.len[slot] = len;
        }
      }
      carry += total;
    }
  }
  __syncthreads();
  // This CTA's items up to the requests scanned: all of them, or (stopped early) more than
  // the pass holds.
  int const mine = carry > c ? (carry - c + G - 1) / G : 0;
  int const left = mine - k_lo;
  return left < 0 ? 0 : (left > kMaxItems ? kMaxItems : left);
}

}  // namespace baton::attention
