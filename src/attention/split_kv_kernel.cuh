// Paged split-K decode attention: the producer (decode-attention.md).
//
// Files: this one (the kernel: rows, item search, the loop over items), split_kv_item.cuh
// (attend_split: one item, from page ids to partial stores, and the hand-over to the next),
// split_kv_search.cuh (find_items, past kFewRequests requests; prefetch_page_rows, up to
// them), split_kv_tile.cuh (tile layout, MmaSmem, mma and ldmatrix helpers, RowTable),
// split_kv_merge_last.cuh (the single-launch merge).
//
// What: for request b, kv head kvh and split s, the partial attention of the packed query rows
// of kvh (row = t * group + g: draft token t, query head kvh * group + g) over the split's key
// range (attention_common.cuh: split_range), streamed once from the paged cache. The math runs
// on mma.sync m16n8k16 (bf16 / fp16 in, fp32 accumulate):
//   S[16 rows x 16 keys] = Q[16 x D] . K^T   (Q fragments by ldmatrix, held in registers
//                                             at D <= 128; two accumulation chains)
//   online softmax per row in registers (quad shuffles), P re-packed as the A operand
//   O[16 x D] += P[16 x 16] . V[16 x D]      (V fragments by ldmatrix.trans)
// (at most 8 rows: keys as M instead, split_kv_item.cuh; more than 16 at D <= 128: the same
// on two 16-row halves per tile, kRows = 32, q fragments read from shared memory per tile).
//
// Grid: (num_kv_heads * row_chunks, G), 128 threads; up to kRows packed rows per CTA (16, or
// 32 in the paired wide form: row_chunks.h), so one K/V tile load serves every query head of
// the kv head (or 32 of its rows). G (<= one wave of the device, see
// split_kv_kernel below) CTAs per kv head find their work items -- (request, split) pairs
// with split < num_kv_splits[b] -- on the device and loop over them (find_items); a CTA
// without an item exits after the PDL wait. Per item, each of the 4 warps streams its own
// tiles of 16 keys (tiles w, w + 4, ...) through a private kStages-deep cp.async ring, so the
// loop needs no CTA barrier; at the end the warps' (m, l, O) are merged through shared memory.
//
// Latency chain of a CTA (what small shapes pay): after the PDL wait, (1) every
// num_kv_splits[b] and cache_seqlens[b] in one round trip, prefix-summed (a warp scan up to
// 32 requests, else across the CTA: two kernel instances, picked by batch; up to 32, in the
// default mode, warps 1-3 meanwhile prefetch the requests' page-table rows into L2:
// prefetch_page_rows); (2) the page ids
// of the first kStages + 1 tiles (two tiles per register) and the q rows (cp.async), in one
// round trip; (3) the first kStages tiles in one round trip (no L2 prefetch past the ring:
// its instructions stalled the warps behind the ring's copies, split_kv_item.cuh). Index math
// that needs only kernel parameters (the packed rows' token and head) is done before the
// wait; baton-bench attention --trace measures each phase. In the loop, the page ids of the
// tile after next are loaded while the current tile is consumed, so no page-table load stands
// between a tile's turn and its copy. In the many-requests instance (a CTA loops over several items of one
// find_items pass), the next item's first page ids are copied (cp.async, into shared memory)
// with the current item's fill, so items after the first skip round trip (2) (NextItem,
// PageCarry); with at most 8 packed rows, its first tiles and q are requested during the
// current item's merge too.
//
// Shared memory: Q kRows x (D + 8) + 4 warps x kStages x (K, V) x 16 x D elements (K/V rows
// unpadded and swizzled, kv_smem): 100 KB at D = 128 (2 CTAs per SM; 104.5 KB with 32 rows),
// 200 KB at D = 256, 50 KB at D = 64 (52.5 KB with 32 rows); the many-requests (kChain)
// instance adds 1 KB for the next item's page ids (MmaSmem::kChainBytes), which keeps the same
// CTAs per SM.
//
// Bytes: 2 * head_dim * sizeof(T) per key per kv head (K and V), read once per row chunk,
// with an L2 evict-first policy when there is one row chunk (evict-unchanged when several
// chunks' CTAs read the same K/V: attention_common.cuh, l2_stream_policy), so the stream
// leaves the small data every call reuses (lengths, page table, q, partials) in L2 (same
// machine: 1x1K 7.57 -> 7.52 us, 8x1K 15.45 -> 15.26, 1x8K 15.06 -> 14.92, 1x32K+15x1K 58.35
// -> 57.23).
//
// Bounds: lengths are clamped to the page table's width, split counts to [1, max_splits],
// and a page id outside [0, num_pages) reads nothing (its keys load as zeros).
//
// Numerics: fp32 accumulation; softmax_scale applied to S in fp32; P rounded to the input
// dtype for the P.V product (as FlashAttention does). One split (n == 1): out = O / (l +
// sink term) and lse, no scratch round trip. Several: part_o = O / l and part_lse = m +
// log(l) (-inf for an empty split) in float, merged by merge_splits_kernel.
//
// PDL contract. Default: nothing but kernel parameters (and in trace builds the tracer's
// host-written focus, src/common/trace.cuh) is read before wait_on_prior_grid() (q, the new
// keys, lengths, page table and split counts may come from earlier kernels of the step).
// With early_reads (DecodeAttentionArgs::inputs_written_before_chain: the caller
// asserts cache_seqlens, page_table and num_kv_splits were written before the step's PDL
// chain started), the CTA reads those three and copies the K/V rows of old keys (positions <
// L - q_len: pages nothing in the chain writes) of its first item's first kStages tiles
// (a warp with kStages or kStages + 1 tiles, or with more unless single launch is taken: the first
// kStages - 1, and its last ring tile after the wait, behind q; with several row chunks per kv
// head a warp of more tiles keeps its last two for after the wait, and so does a paired-form
// warp of exactly kStages + 1 tiles), before the wait -- in a
// warp of kStages tiles or more one at a time, each once the one before has landed
// (split_kv_item.cuh: a short queue for the loads issued after them); q and this step's keys
// come after it. Either way every CTA waits, and CTAs without an item exit after
// the wait. The next item's page ids and q (the many-requests instance's hand-over and
// run-on) are read during the current item: q after
// the wait, the page ids with the current item's fill tile kStages - 1 -- after the wait too,
// except under early_reads on the CTA's first item (the page table is then one of the
// inputs it covers). Triggers after the KV loop of its last item,
// before that item's merge and final stores (a CTA without items: at exit);
// merge_splits_kernel follows and waits before reading the scratch.
// Single launch (p.counters set, merge_if_last): no reducer follows; the counters and the
// other CTAs' partials are touched only after the wait, and whatever kernel follows waits
// for this grid's completion, so the early trigger only lets it be scheduled. With
// early_reads, when no reducer follows (single launch or max_splits 1) or the small reducer
// does (at most 2 rows per SM; it triggers at entry under early reads) and all its CTAs fit
// on the SMs beside this grid's (producer_launch.cuh, launch_producer), the trigger comes
// right after the wait (producer_wait): the reducer launches and sits in its wait, and the
// next kernel's launch and pre-wait reads overlap this whole grid, one grid deep. All of this
// holds for every instance, the small-page ones (SmallPages<T>) included: their row-by-row copy
// takes the same old / new split of keys on either side of the wait.
#pragma once

#include "attention/split_kv_item.cuh"
#include "attention/split_kv_search.cuh"
#include "attention/split_kv_tile.cuh"
#include "common/trace.cuh"

namespace baton::attention {

// The producer's element type tagged as the instance for pages below 16 keys
// (decode_attention_small_pages.cu); ElementOf and kIsSmallPages take it apart. A tag on T
// rather than one more template parameter, so that the other instances keep their names and
// their cubin stays byte for byte as before (scripts/cubin_same.sh).
template <class T>
struct SmallPages {};
template <class T>
struct ElementType {
  using type = T;
  static constexpr bool small_pages = false;
};
template <class T>
struct ElementType<SmallPages<T>> {
  using type = T;
  static constexpr bool small_pages = true;
};
template <class T>
using ElementOf = typename ElementType<T>::type;
template <class T>
constexpr bool kIsSmallPages = ElementType<T>::small_pages;
// Pages below 2^4 = 16 keys (one tile, kMmaTileKeys) take the small-page instances.
constexpr int kSmallPageShift = 4;
static_assert(1 << kSmallPageShift == kMmaTileKeys, "a tile of a page of 16 keys or more lies in one page");

// CTAs per SM that shared memory allows (MmaSmem::kBytes: 50 / 100 / 200 KB at head_dim 64 /
// 128 / 256, 1 KB more for kChain); the register budget is held to the same occupancy.
template <int D>
constexpr int kMinCtasPerSm = D <= 64 ? 4 : (D <= 128 ? 2 : 1);

// T: the element type (bf16 or fp16), or SmallPages<element type> for pages below 16 keys
// (attend_split's kSmallPages: every tile row by row), compiled in a translation unit of its
// own: the small shapes' times move with a producer's compiled code as a whole, even with code
// they never run (docs/benchmarking.md, thirty-fourth session), so the instances for larger
// pages compile exactly as they did before it.
// kRows: the CTA's packed rows, 16 or 32 (the paired wide form, head_dim <= 128: row_chunks.h).
template <class T, int D, int kStages, bool kNarrow = false, bool kWait = true, bool kMany = false,
          int kRows = kRowsPerCta>
__global__ void __launch_bounds__(kThreads, kMinCtasPerSm<D>)
    split_kv_kernel(__grid_constant__ AttentionParams const p) {
  extern __shared__ __align__(128) unsigned char smem_raw[];  // 128: the K/V rows (kv_smem)
  __shared__ ItemList list;
  __shared__ RowTable rows;
  BATON_SELECT(p.k);
  BATON_MARK(0, 0);
  BATON_MARK_SM(0, 11);
  int const kv_head = static_cast<int>(blockIdx.x) / p.row_chunks;
  int const chunk = static_cast<int>(blockIdx.x) % p.row_chunks;
  static_assert(kRows == kRowsPerCta || (kRows == kPairRowsPerCta && !kNarrow && D <= 128), "16 rows, or 32 wide");
  if (threadIdx.x < kRows) {  // kernel parameters only: before the wait
    int const g = chunk * kRows + threadIdx.x;
    rows.t[threadIdx.x] = g / p.group;
    rows.h[threadIdx.x] = kv_head * p.group + g % p.group;
  }
  __syncthreads();
  int const c = blockIdx.y, G = gridDim.y;
  // Default: everything below depends on earlier kernels, so the wait comes first. With
  // early_reads (the caller asserts lengths, page table and split counts were written before
  // the chain started), the items are found, and the first one's old keys requested, before it.
  bool waited = !p.early_reads;
  if (waited) producer_wait<kWait>(p);
  if (waited) BATON_MARK(0, 1);
  // The CTA's items come from one search, chosen at compile time (kMany), and go through one
  // call site of attend_split: each call site inlines the whole item (page ids, fill, KV loop,
  // merge), and the kernel's code is what small shapes, running it once per call, pay for in
  // instruction fetch (docs/benchmarking.md, thirteenth session: one call site for both
  // searches, 116 -> 66 KB, 1x1K 6.67 -> 6.36 us in graphs; fourteenth session: one search per
  // instance, 66 -> 58 KB, 1x1K 6.31 -> 6.21, 64x4K 240.27 -> 239.61).
  // - Few requests (batch <= kFewRequests): warp 0 reads request `lane`'s split count and
  //   length and scans the counts (no CTA prefix sum; the list's arrays only as scratch for
  //   the hand-over); one barrier hands the 32 values
  //   to every warp, so all warps loop over the same items even if the inputs were (against
  //   the contract) being written meanwhile. Item ordinal k belongs to the first request whose
  //   items reach past k (ballot): the same ordinals c, c + G, ... as find_items.
  // - More (kMany): find_items lists kMaxItems of the CTA's items per pass. Launched with
  //   batch <= kFewRequests it would be right too; the few instance with more would miss
  //   requests, which is why the host alone picks (decode_attention.cu, launch_typed).
  constexpr bool few = !kMany;  // the host launches kMany exactly when batch > kFewRequests
  int const lane = threadIdx.x % 32;
  int end = 0, nb = 0, len = 0, total = 0;  // few: request `lane`'s inclusive item end, count, length
  if (few) {
    if (threadIdx.x < 32) {
      int32_t const raw = lane < p.batch && p.num_kv_splits != nullptr ? p.num_kv_splits[lane] : 0;
      int32_t const l = lane < p.batch ? p.cache_seqlens[lane] : 0;
      int const cnt = lane < p.batch ? clamp_splits(p, raw) : 0;
      int e = cnt;  // items of requests 0..lane
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        int const up = __shfl_up_sync(0xffffffffu, e, o);
        if (lane >= o) e += up;
      }
      list.b[lane] = e;  // the list's arrays as scratch: inclusive ends, counts, lengths
      list.n[lane] = cnt;
      list.len[lane] = l;
    } else if (waited) {
      prefetch_page_rows(p);  // warps 1-3, during warp 0's round trip
    }
    __syncthreads();
    end = list.b[lane];
    nb = list.n[lane];
    len = list.len[lane];
    total = list.b[31];
    BATON_MARK(0, 2);
  }
  int pass = 0, count = 0;  // find_items: passes done, items in the current pass
  PageCarry carry;          // kMany: the next item's page ids, from the current one
  int k = few ? c : 0;      // few: the next item ordinal; else: the next index in the pass
#if defined(BATON_TRACE)
  [[maybe_unused]] int traced_items = 0;  // trace: the CTA's items so far
#endif
#pragma unroll 1
  for (;;) {
    int b, split, n, l;
    bool last;  // the CTA's last item (its KV loop triggers the next grid)
    if (few) {
      if (k >= total) break;
      b = __ffs(__ballot_sync(0xffffffffu, end > k)) - 1;
      n = __shfl_sync(0xffffffffu, nb, b);
      split = k - (__shfl_sync(0xffffffffu, end, b) - n);
      l = __shfl_sync(0xffffffffu, len, b);
      last = k + G >= total;
      k += G;
    } else {
      if (k == count) {
        if (pass > 0 && count < kMaxItems) break;  // a short pass was the last
        count = find_items(p, c, G, pass, list);
        if (pass == 0) BATON_MARK(0, 2);
        ++pass;
        k = 0;
        if (count == 0) break;
      }
      b = list.b[k];
      split = list.split[k];
      n = list.n[k];
      l = list.len[k];
      // The last item of a short pass is the CTA's last (a full pass may be followed by an
      // empty one: that CTA triggers at exit).
      last = k + 1 == count && count < kMaxItems;
      ++k;
    }
    NextItem nx;  // kMany: the next item of this pass (none across passes: the list is reused)
    if (!few && k < count) {
      nx.b = list.b[k];
      nx.split = list.split[k];
      nx.n = list.n[k];
      nx.len = list.len[k];
    }
#if defined(BATON_TRACE)
    BATON_ITEM_BEGIN(traced_items++);
#endif
    attend_split<ElementOf<T>, D, kStages, kNarrow, kWait, kMany, kRows, kIsSmallPages<T>>(
        p, rows, smem_raw, kv_head, chunk, b, split, n, l, !waited, last, nx, &carry);
    BATON_ITEM_MARK(3);
    waited = true;
    __syncthreads();  // shared memory (and, with find_items, the list) is reused next
  }
  if (!waited) producer_wait<kWait>(p);  // a CTA without items still waits (every path waits)
  BATON_MARK(0, 7);
}

}  // namespace baton::attention
