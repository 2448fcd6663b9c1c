// One work item of the decode-attention producer (split_kv_kernel.cuh): split `split` of a
// request for a CTA's packed rows -- page ids, the K/V tile ring, the KV loop, the warps'
// merge and the partial's stores -- and what it hands the CTA's next item.
#pragma once

#include "attention/split_kv_merge_last.cuh"
#include "attention/split_kv_tile.cuh"
#include "common/trace.cuh"

namespace baton::attention {

// The producer's PDL wait. With early reads and no reducer (single launch, or one split), or
// a small reducer grid that fits beside this one, it is also the trigger (p.trigger_after_wait, set by the host:
// decode_attention.cu): whatever kernel comes next waits for this grid's completion anyway,
// so it may be scheduled as soon as this grid may run -- its launch and, in a chain that
// reads early, its item search and old-key copies overlap this grid's work (the small
// reducer triggers at entry under early reads and passes the launch on). After the wait, not
// first thing: a chain of such calls keeps one grid waiting behind the running one, not every
// grid that fits (measured: a trigger at entry let the next calls' early copies crowd the
// running one).
template <bool kWait>
__device__ __forceinline__ void producer_wait(AttentionParams const& p) {
  if constexpr (kWait) wait_on_prior_grid();
  if (p.trigger_after_wait) allow_next_grid();  // next: merge_splits_kernel or any kernel of the step
}

// The CTA's next item in the same pass of find_items (b < 0: none), and what an item hands
// the next one (kChain: the many-requests instance): the next item's page ids for its first
// kStages + 1 tiles, copied into shared memory with this item's fill and read when its KV
// loop is done (attend_split: copy_nx_ids), so that the next item issues its first copies
// without the page-id round trip (same machine, 4 alternating runs, in-graph:
// 64x4K 238.95 -> 238.39 us, 128x2K 244.45 -> 243.79; docs/benchmarking.md, fifteenth
// session). With at most 8 packed rows the ring also runs on into the next item (attend_split:
// run_on): its first tiles and q are requested during this item's merge and stores (same
// machine, 4 alternating runs: 64x4K 238.38 -> 238.01 us, 128x2K 243.69 -> 242.30). Measured
// and dropped: prefetching the next item's first tiles into L2 instead, when this item's loop
// ends (cp.async.bulk.prefetch.L2): 64x4K -1.6 us but 128x2K +2.8.
struct NextItem {
  int b = -1, split = 0, n = 1;
  int32_t len = 0;
};
struct PageCarry {
  bool valid = false;  // CTA-uniform: lo / hi hold this item's page ids
  bool ran_on = false; // CTA-uniform: q and this warp's first kStages - 1 tiles were requested
  int32_t lo = -1, hi = -1;
};

// An item's keys [begin, end) go to the warps a 16-key tile at a time: warp w takes tiles w,
// w + 4, ...; its tile count (of the current item and, with kChain, of the next one;
// attend_split's start_of gives their first keys).
__device__ __forceinline__ int warp_tile_count(int begin, int end, int warp) {
  int const all = end > begin ? (end - begin + kMmaTileKeys - 1) / kMmaTileKeys : 0;
  return all > warp ? (all - warp + kWarps - 1) / kWarps : 0;
}

// The online softmax's running-max step for a lane's two rows, given the maxima x0, x1 of
// their new scores: the new maxima, the factors that rescale what was accumulated under the
// old ones (1 while a row has seen no visible key), and whether any row of the warp moved.
struct MaxStep {
  float m0, m1, c0, c1;
  bool moved;
};
__device__ __forceinline__ MaxStep max_step(float m0, float m1, float x0, float x1) {
  MaxStep s;
  s.m0 = fmaxf(m0, x0);
  s.m1 = fmaxf(m1, x1);
  s.moved = __any_sync(0xffffffffu, s.m0 != m0 || s.m1 != m1);
  s.c0 = s.m0 == -INFINITY ? 1.f : __expf(m0 - s.m0);
  s.c1 = s.m1 == -INFINITY ? 1.f : __expf(m1 - s.m1);
  return s;
}

// One work item: split `split` of n of request b, for the packed rows of (kv_head, chunk).
// With early (the CTA's first item under early_reads) the PDL wait happens in here, after
// the copies of old keys have been issued; otherwise the caller has waited.
// kRows: the CTA's packed rows (16; 32 in the paired wide form, two 16-row halves per tile).
// kSmallPages: the instance for pages below 16 keys (the host picks it from the page size),
// whose tiles always span several pages, so every tile takes the per-row copy, in its cheaper
// form; the other instances compile exactly as they did before it existed.
template <class T, int D, int kStages, bool kNarrow, bool kWait, bool kChain = false, int kRows = kRowsPerCta,
          bool kSmallPages = false>
__device__ __forceinline__ void attend_split(AttentionParams const& p, RowTable const& rows, unsigned char* smem_raw,
                                             int kv_head, int chunk, int b, int split, int n, int32_t len_raw,
                                             bool early, bool last_item, NextItem const& nx = NextItem{},
                                             PageCarry* carry = nullptr) {
  using Smem = MmaSmem<D, kStages, kRows>;
  constexpr int kQPitch = Smem::kQPitch;
  constexpr int kKSteps = D / 16;   // k-steps of S = Q.K^T
  constexpr int kONTiles = D / 8;   // n-tiles of O
  constexpr int kChunksPerKey = D / 8;
  constexpr int kLoadsPerLane = kMmaTileKeys * kChunksPerKey / 32;  // per tensor
  constexpr int kKeysPerLoad = 32 / kChunksPerKey;  // keys covered by one load of the warp
  // The wide form's 16-row halves: 2 in the paired form, whose warps read q from shared
  // memory at each tile (two halves' fragments would not fit the registers with their O).
  constexpr int kH = kNarrow ? 1 : kRows / kRowsPerCta;
  constexpr bool kQInRegisters = D <= 128 && kH == 1;  // q fragments held across the loop
  T* q_s = reinterpret_cast<T*>(smem_raw);  // [kRows][kQPitch]
  unsigned char* kv_raw = smem_raw + Smem::kQBytes;
  int const warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int const rows_here = min(kRows, p.rows - chunk * kRows);
  auto wait = [&] { producer_wait<kWait>(p); };
  // The q rows of request req (written by the previous kernel: after the wait).
  auto load_q = [&](int req) {
    for (int c = threadIdx.x; c < kRows * kChunksPerKey; c += kThreads) {
      int const r = c / kChunksPerKey, d = (c % kChunksPerKey) * 8;
      T* dst = q_s + r * kQPitch + d;
      if (r >= rows_here) {
        *reinterpret_cast<uint4*>(dst) = make_uint4(0, 0, 0, 0);  // padded rows are zero
        continue;
      }
      T const* q = static_cast<T const*>(p.q) + (int64_t(req) * p.q_len + rows.t[r]) * p.q_stride_token +
                   rows.h[r] * p.q_stride_head;
      if ((reinterpret_cast<uintptr_t>(q) & 15) == 0) {
        cp_async_16(dst, q + d, true);
      } else {
        for (int k = 0; k < 8; ++k) dst[k] = q[d + k];
      }
    }
  };
  // Positions fit in int32: lengths are int32.
  int const L = static_cast<int>(clamp_length(p, len_raw));
  KeyRange const keys = split_range(p, L, n, split);
  int const t_begin = static_cast<int>(keys.begin), t_end = static_cast<int>(keys.end);
  int const new_keys = L - p.q_len;  // keys >= new_keys were appended by this step's kernels

  // This thread's two rows of every fragment of half h: h * 16 + r0 (r0 = lane / 4) and
  // h * 16 + r1 (r1 = r0 + 8). Rows past rows_here compute on zero q and are never stored, so
  // they need no mask.
  int const r0 = lane / 4, r1 = r0 + 8;
  int qpos0[kH], qpos1[kH];
#pragma unroll
  for (int h = 0; h < kH; ++h) {
    qpos0[h] = L - p.q_len + rows.t[h * 16 + r0];
    qpos1[h] = L - p.q_len + rows.t[h * 16 + r1];
  }
  int const qpos_min = L - p.q_len + rows.t[0];              // first live row
  int const qpos_max = L - p.q_len + rows.t[rows_here - 1];  // last live row
  bool const windowed = p.window_left >= 0;
  bool const plain = p.softcap <= 0 && p.alibi == nullptr;  // scores are s * scale

  float o[kH][kONTiles][4];
  float m0[kH], m1[kH], l0[kH], l1[kH];
#pragma unroll
  for (int h = 0; h < kH; ++h) {
#pragma unroll
    for (int j = 0; j < kONTiles; ++j) o[h][j][0] = o[h][j][1] = o[h][j][2] = o[h][j][3] = 0.f;
    m0[h] = m1[h] = -INFINITY;
    l0[h] = l1[h] = 0.f;
  }

  int const part = lane % kChunksPerKey;  // this lane's 16-byte chunk of a key row
  T const* k_lane = static_cast<T const*>(p.k) + int64_t(kv_head) * p.k_stride_head + part * 8;
  T const* v_lane = static_cast<T const*>(p.v) + int64_t(kv_head) * p.v_stride_head + part * 8;
  int32_t const* pages = p.page_table + int64_t(b) * p.pt_stride;
  int const page_mask = (1 << p.page_shift) - 1;
  unsigned char* warp_kv = kv_raw + warp * Smem::kWarpBytes;

  // This warp's tiles: w, w + 4, ... of the split's ceil(keys / 16).
  int const my_tiles = warp_tile_count(t_begin, t_end, warp);
  // The first key of this warp's tile j of an item whose keys begin at `begin`.
  auto start_of = [&](int begin, int j) { return begin + (warp + j * kWarps) * kMmaTileKeys; };
  auto tile_start = [&](int j) { return start_of(t_begin, j); };
  // Page ids: a register holds two tiles' -- lanes base .. base + 15 the ids of keys 0..15 of
  // one tile (-1 past the range) -- so the first kStages + 1 (<= 4) tiles take two loads
  // per lane, in flight together.
  auto page_of = [&](int j) -> int32_t {
    int const pos = tile_start(j) + lane % kMmaTileKeys;
    return j < my_tiles && pos < t_end ? pages[pos >> p.page_shift] : -1;
  };
  // Rows of tile j into slot `slot`, page ids from lanes base..base + 15 of page_reg. kAll:
  // every row (zeros past the range or for a bad page id); kOld: skips rows of new keys
  // (copied later by kNew); kNew: only those rows. Fast path (warp-uniform): all 16 keys in
  // range and in one page -- one base address and constant row steps. Otherwise each row
  // finds its page id by shuffle. Called from two places only (the prologue loop and the
  // main loop): every inlined copy costs instruction cache, which small shapes pay cold.
  // Pages below 16 keys take every tile row by row, in the small-page instances' cheaper
  // form (kSmallPages, below). Here, in the other instances, the general per-row form stays
  // as it was: any change to it moved 8x1K at page 64, which never runs it, by 0.01-0.3 us
  // (docs/benchmarking.md, thirty-fourth session).
  enum { kAll, kOld, kNew };
  int const key_of_lane = lane / kChunksPerKey;  // + i * kKeysPerLoad for load i
  // K/V rows: evict-first in L2 when this CTA's row chunk is the only reader (attention_common.cuh).
  uint64_t const kv_policy = l2_stream_policy(p.row_chunks == 1);
  auto copy_kv = [&](void* dst, void const* src, bool valid) { cp_async_16_stream(dst, src, valid, kv_policy); };
  // The tile of keys [start, start + 16) of an item whose keys end at `end` (this item's, or
  // with kChain the next item's first tiles).
  auto load_tile_at = [&](int mode, int slot, int start, int end, int32_t page_reg, int base) {
    T* k_dst = reinterpret_cast<T*>(warp_kv + slot * Smem::kStageBytes);
    T* v_dst = k_dst + kMmaTileKeys * D;
    auto row_off = [&](int i) { return kv_smem<D>(key_of_lane + i * kKeysPerLoad, part); };  // load i's row
    if constexpr (kSmallPages) {
      // Every row its own page id (by shuffle) and address, in less arithmetic than the
      // general per-row form below: 32 x 32 -> 64-bit products in bytes (ids and strides are
      // non-negative; strides < 2^31 elements, validated), the tile's shared addresses
      // converted once, and the rows a mode skips predicated off rather than branched around.
      // Rows past the range have id -1 (page_of) and are zero-filled, as below. Against the
      // general form at page 1, in graphs: 1x1K 6.59 -> 6.20 us, 32x8K 249.99 -> 248.00, 1x32K
      // 37.39 -> 36.76; with early reads 1x8K 10.68 -> 11.05, which an int64 form of these
      // products does not pay (10.76) but which keeps only half the gains (docs/benchmarking.md,
      // thirty-fifth session).
      uint32_t const k_page = uint32_t(p.k_stride_page) * sizeof(T), k_token = uint32_t(p.k_stride_token) * sizeof(T);
      uint32_t const v_page = uint32_t(p.v_stride_page) * sizeof(T), v_token = uint32_t(p.v_stride_token) * sizeof(T);
      unsigned const k_s = static_cast<unsigned>(__cvta_generic_to_shared(k_dst));
      unsigned const v_s = static_cast<unsigned>(__cvta_generic_to_shared(v_dst));
      uint64_t const k_base = reinterpret_cast<uint64_t>(k_lane), v_base = reinterpret_cast<uint64_t>(v_lane);
#pragma unroll
      for (int i = 0; i < kLoadsPerLane; ++i) {
        int32_t const id = __shfl_sync(0xffffffffu, page_reg, base + key_of_lane + i * kKeysPerLoad);
        int const key = key_of_lane + i * kKeysPerLoad;
        bool const valid = unsigned(id) < unsigned(p.num_pages);  // 0 <= id < num_pages
        bool const is_new = valid && start + key >= new_keys;
        bool const on = mode == kAll || (mode == kOld ? !is_new : is_new);
        unsigned const page = valid ? unsigned(id) : 0u;
        unsigned const off = unsigned(start + key) & unsigned(page_mask);
        uint64_t const k_row = mad_wide_u32(off, k_token, mad_wide_u32(page, k_page, k_base));
        uint64_t const v_row = mad_wide_u32(off, v_token, mad_wide_u32(page, v_page, v_base));
        unsigned const dst = unsigned(row_off(i)) * unsigned(sizeof(T));
        cp_async_16_stream_if(k_s + dst, reinterpret_cast<void const*>(k_row), valid, on, kv_policy);
        cp_async_16_stream_if(v_s + dst, reinterpret_cast<void const*>(v_row), valid, on, kv_policy);
      }
      return;
    }
    int32_t const page0 = __shfl_sync(0xffffffffu, page_reg, base);
    int const limit = mode == kOld ? min(end, new_keys) : end;
    bool const fast = mode != kNew && start + kMmaTileKeys <= limit &&
                      (start & page_mask) + kMmaTileKeys - 1 <= page_mask && page0 >= 0 && page0 < p.num_pages;
    if (fast) {
      int const off = (start & page_mask) + key_of_lane;
      T const* k_row = k_lane + int64_t(page0) * p.k_stride_page + int64_t(off) * p.k_stride_token;
      T const* v_row = v_lane + int64_t(page0) * p.v_stride_page + int64_t(off) * p.v_stride_token;
#pragma unroll
      for (int i = 0; i < kLoadsPerLane; ++i) {
        copy_kv(k_dst + row_off(i), k_row + int64_t(i * kKeysPerLoad) * p.k_stride_token, true);
        copy_kv(v_dst + row_off(i), v_row + int64_t(i * kKeysPerLoad) * p.v_stride_token, true);
      }
      return;
    }
    int32_t pg[kLoadsPerLane];
#pragma unroll
    for (int i = 0; i < kLoadsPerLane; ++i) {
      pg[i] = __shfl_sync(0xffffffffu, page_reg, base + key_of_lane + i * kKeysPerLoad);
    }
#pragma unroll
    for (int i = 0; i < kLoadsPerLane; ++i) {
      int const key = key_of_lane + i * kKeysPerLoad;
      bool const valid = pg[i] >= 0 && pg[i] < p.num_pages;
      bool const is_new = valid && start + key >= new_keys;
      if (mode == kOld && is_new) continue;
      if (mode == kNew && !is_new) continue;
      int32_t const page = valid ? pg[i] : 0;
      int const off = (start + key) & page_mask;
      copy_kv(k_dst + row_off(i), k_lane + int64_t(page) * p.k_stride_page + int64_t(off) * p.k_stride_token, valid);
      copy_kv(v_dst + row_off(i), v_lane + int64_t(page) * p.v_stride_page + int64_t(off) * p.v_stride_token, valid);
    }
  };
  auto load_tile = [&](int mode, int slot, int j, int32_t page_reg, int base) {
    load_tile_at(mode, slot, tile_start(j), t_end, page_reg, base);
  };

  // kChain: the next item's first page ids (as page_of's, -1 past its range), copied into
  // shared memory in the commit group of fill tile kStages - 1 (before the PDL wait only
  // under early reads), read once this item's loop is done. Not loaded into registers: the
  // compiler waits on a pending register load at the loop's first warp sync, and these
  // (another request's page table, queued behind the fill's tiles) held tile 0's math back
  // ~3.5 us (trace, sixteenth session).
  int nx_begin = 0, nx_end = 0, nx_tiles = 0;
  int32_t nx_lo = -1, nx_hi = -1;
  // Past kBytes: only the kChain instances are launched with it (MmaSmem::kChainBytes).
  int32_t* const nx_ids =
      kChain ? reinterpret_cast<int32_t*>(smem_raw + Smem::kBytes) + (warp * 32 + lane) * 2 : nullptr;
  auto nx_pos = [&](int j) { return start_of(nx_begin, j) + lane % kMmaTileKeys; };
  auto nx_has = [&](int j) { return j < nx_tiles && nx_pos(j) < nx_end; };
  if constexpr (kChain) {
    if (nx.b >= 0) {
      int const nx_len = static_cast<int>(clamp_length(p, nx.len));
      KeyRange const nx_keys = split_range(p, nx_len, nx.n, nx.split);
      nx_begin = static_cast<int>(nx_keys.begin);
      nx_end = static_cast<int>(nx_keys.end);
      nx_tiles = warp_tile_count(nx_begin, nx_end, warp);
    }
  }
  auto copy_nx_ids = [&] {  // with fill tile kStages - 1's copies, before its commit
    if constexpr (kChain) {
      if (nx.b >= 0) {
        int32_t const* nx_pages = p.page_table + int64_t(nx.b) * p.pt_stride;
        int const lo = lane / kMmaTileKeys, hi = 2 + lane / kMmaTileKeys;
        if (nx_has(lo)) cp_async_4(nx_ids, nx_pages + (nx_pos(lo) >> p.page_shift));
        if (nx_has(hi)) cp_async_4(nx_ids + 1, nx_pages + (nx_pos(hi) >> p.page_shift));
      }
    }
  };
  auto read_nx_ids = [&] {  // after a wait for every group (this thread's own copies)
    if constexpr (kChain) {
      if (nx.b >= 0) {
        nx_lo = nx_has(lane / kMmaTileKeys) ? nx_ids[0] : -1;
        nx_hi = nx_has(2 + lane / kMmaTileKeys) ? nx_ids[1] : -1;
      }
    }
  };

  // Round trips 2 and 3: the page ids of the first kStages + 1 tiles together (two tiles
  // per register), then the first kStages tiles' copies, one commit group each. With early
  // reads these run before the wait for old keys only (step-invariant pages); then the
  // wait, q and this step's new keys (one more group), and for a `late` warp (below) its
  // ring's last tile, whole (one group more; with `two_late` its last two, a group each).
  static_assert(kStages >= 1 && kStages <= 3, "the first kStages + 1 tiles' page ids fill two registers");
  bool const carried = kChain && carry->valid;  // CTA-uniform
  // Ran on (kChain, narrow): the previous item requested this item's q and this warp's first
  // kStages - 1 tiles (into slots 0..kStages-2, one commit group each, then q's group), so
  // the fill requests the rest only.
  bool const ran_on = kChain && kNarrow && carry->ran_on;  // CTA-uniform
  int const first = ran_on ? kStages - 1 : 0;
  int32_t const pid_lo = carried ? carry->lo : page_of(lane / kMmaTileKeys);      // tiles 0 and 1
  int32_t const pid_hi = carried ? carry->hi : page_of(2 + lane / kMmaTileKeys);  // tiles 2 and 3
  BATON_MARK(0, 8);
  if (!early && !ran_on) {  // after the page-id loads (the tiles wait on them), landing while the tiles are fetched
    load_q(b);
    cp_async_commit();
  }
  auto first_reg = [&](int j) { return j < 2 ? pid_lo : pid_hi; };  // j <= kStages
  // No L2 prefetch of the tiles past the ring. Revs 7493e02 and 4fcf572 (early reads: tile
  // kStages before the wait) and bc6dd3b (tile kStages after the ring's copies, and kStages + 1
  // after the wait with early reads) had one, measured as a gain under the bench's old
  // rotation of a few KV pools. Under one pool per call it was a loss: its instructions queue
  // behind the warp's own ring copies: the warp left its fill 4.9 us after its page-id loads
  // at 1x8K (trace; 1.3 us without the prefetch), and its tile 0 landed 0.5 us later. A
  // per-line prefetch.global.L2 stalled the same way. Same machine, 3 alternating rounds,
  // without / with: in graphs 1x8K 13.23 / 13.63 us, 8x1K 12.88 / 13.32, 1x32K 35.21 / 35.51,
  // 128x2K 240.49 / 241.56; early 8x1K 10.58 / 11.90, 1x32K 33.21 / 34.00 (docs/benchmarking.md,
  // twenty-sixth session).

  // With early reads, a warp of kStages or kStages + 1 tiles (its ring full before the wait)
  // copies its ring's last tile after the wait instead, behind q, in a group of its own (one
  // more round, r = 2 kStages).
  // In a chain the wait releases while the DRAM still serves this call's pre-wait copies, and
  // q, requested after the wait, queued behind all of them (trace, twenty-second session:
  // 1.3-1.8 us from the wait to q at 8x1K, 0.8 in a graph's last call), so the warps' first
  // tiles waited for q with their data landed. Same machine, 3 alternating rounds, early
  // column: 8x1K 11.53 -> 11.16 us, 1x8K 12.13 -> 11.88, 1x32K and 1x1K within +0.12
  // (docs/benchmarking.md); measured again without the L2 prefetch above, one pool per call
  // (twenty-sixth session, 3 rounds): early 8x1K 10.64 against 11.41 without the late tile,
  // 1x8K 11.88 against 12.20 (1x8K is kStages + 1 tiles per warp). Warps with more tiles:
  // moving their tile too cost early 1x32K 0.7 us in the twenty-second session (under the old
  // pool rotation); in the twenty-sixth it gained early 1x32K 0.36 us but cost early + single
  // launch 0.5-0.8 us (32x8K, 128x2K, ragged). So warps of more tiles go late only when a reducer
  // follows (no single launch), where it paid: early 1x32K 33.88 -> 33.53 us, ragged 52.21 ->
  // 51.43, 128x2K 246.73 -> 245.77, 32x8K 247.52 -> 247.03, 1x8K / 8x1K within 0.03 (same
  // machine, same bench, 3 rounds; twenty-sixth session). Fewer pre-wait copies leave the
  // reducer ahead less traffic to queue behind.
  // With several row chunks per kv head (group x q_len > 32 at D <= 128, > 16 at D = 256: draft
  // tokens; measured when 16 rows made a chunk, so group 4 x q_len 8 had two) every chunk's CTAs
  // copy the same tiles (twice the pre-wait requests at two chunks), and such a warp of more
  // tiles copies its ring's last two tiles after the wait (`two_late`: each in a group of its
  // own, in tile order after q's). Twenty-seventh session, `--q-len 8`, early column, 3 rounds:
  // - one / two / three late tiles for every warp of more tiles (GPU-5be8fe8b): 8x1K 18.89 /
  //   18.15 / 18.56 us, ragged 78.02 / 77.31 / 77.60, 1x8K 17.26 / 17.18 / 18.32, 1x32K 43.30
  //   / 43.48 / 44.36;
  // - at one row chunk (q_len 1) two late tiles lost (GPU-b17b7beb: early 1x32K 32.94 ->
  //   33.64, ragged 50.27 -> 50.78; three: 35.05 / 51.43), hence the row-chunk condition;
  // - this form against one late tile (GPU-3a6689d4): 8x1K 18.74 -> 18.02, 32x8K 316.76 ->
  //   311.41, ragged 77.86 -> 76.56, 1x32K 44.18 -> 43.86, 1x8K 17.18 -> 17.07.
  // A warp of more tiles never holds this step's keys in its ring (they end its split, past its
  // first kStages tiles); the late tiles are copied whole anyway.
  bool const late = early && my_tiles >= kStages &&  // warp-uniform
                    (my_tiles <= kStages + 1 || p.counters == nullptr);
  // Several row chunks mean more than 16 rows, which only the wide form runs: the narrow
  // instances compile without it (their code unchanged: an earlier runtime-only form cost
  // early 8x1K 0.23 us at one row chunk, twenty-seventh session). A 2-stage ring keeps one
  // tile before the wait (not measured otherwise; the accounting would hold).
  constexpr bool kTwoLateOk = !kNarrow && kStages >= 3;
  // The paired form (17-32 rows per CTA: e.g. group 4 x q_len 8, one row chunk, where it was
  // measured; with several chunks too, not measured) copies its ring's last two tiles after the
  // wait in a warp of exactly kStages + 1 tiles too (8x1K, 1x8K: items of 256 keys), so that only
  // tile 0 comes before the wait. At 8x1K (trace) the next call's producer enters after this
  // call's reducer has exited (2048 rows: the large form, which triggers at exit), so its
  // pre-wait phase overlaps nothing and each paced pre-wait tile is a round trip in front of q.
  // `--q-len 8`, 3 alternating rounds, early column (docs/benchmarking.md, thirty-first
  // session): GPU-bc36a720 8x1K 19.45 -> 18.03 us, 1x8K 18.44 -> 17.89; GPU-4116e67a, with the
  // rule for kStages + 1 tiles or more (the same path at these shapes), 19.33 -> 18.06 and 18.43
  // -> 17.96; that wider rule lost 1x32K 0.6-0.8 us, hence `==`. q_len 1 never runs the paired
  // instances.
  constexpr bool kPaired = kRows > kRowsPerCta;
  bool const two_late =  // warp-uniform
      kTwoLateOk && late &&
      (my_tiles > kStages + 1 ? p.row_chunks > 1 : kPaired && my_tiles == kStages + 1);
  int const fill_loads = early ? 2 * kStages + int(late) + int(two_late) : kStages;
#pragma unroll 1
  for (int r = first; r < fill_loads; ++r) {
    // Round 2 kStages (and 2 kStages + 1): the late tiles, in tile order.
    int const j = r < kStages        ? r
                  : r < 2 * kStages ? r - kStages
                  : two_late        ? kStages - 2 + (r - 2 * kStages)
                                    : kStages - 1;
    if (r == kStages) {  // early reads only: the wait, then q and the new keys
      wait();
      BATON_MARK(0, 1);
      load_q(b);
    }
    // After the wait, only tiles that hold some of this step's keys copy again (q_len <= 8: one
    // or two tiles of the request): the others were complete before it (the late tiles are
    // copied whole in rounds of their own instead).
    bool const is_late = late && (j == kStages - 1 || (two_late && j == kStages - 2));
    bool const copies = j < my_tiles && (r < 2 * kStages ? !is_late && (r < kStages || tile_start(j) + kMmaTileKeys > new_keys)
                                                         : is_late);
    if (copies) {
      // Paced: with early reads the pre-wait tiles of a warp of kStages tiles or more go one
      // at a time, each requested once the one before has landed, so that what this grid
      // queues before its wait stays short. A load of L2-resident data issued behind queued
      // cp.async copies waits for part of them: ~11000 cycles instead of ~400 behind 192 KB per
      // CTA, ~4000 behind 64 KB (this grid's unpaced pre-wait copies at 1x32K), as long through
      // cp.async.bulk, ~2500 on SMs that queued nothing (half the SMs streaming); with at most
      // 32 KB per CTA in flight ~440 (bench/probes/queue_probe.cu). In a chain the running
      // call's reducer, its slow CTAs' tiles and the next call's q are issued behind these
      // copies (a 1x32K trace: its KV loops end ~1.0 us sooner, its reducer 0.5). Where the
      // trigger comes right after the wait (producer_wait), this also delays it. Same machine,
      // 3 alternating rounds, early column, unpaced / paced: 1x8K 12.02 / 11.11 us, 8x1K 10.87
      // / 10.53, 1x32K 33.59 / 33.02, 32x8K 242.24 / 241.88, ragged 50.75 / 50.83; early +
      // single launch 1x32K 35.42 / 33.97, 1x8K 13.69 / 13.03. Shorter warps (1x1K: 2 tiles)
      // queue little, and pacing them only delayed their second tile where the wait returns at
      // once: cold early 1x1K 10.91 us unpaced, 11.71 paced, 11.01 with this bound
      // (docs/benchmarking.md, twenty-eighth session).
      if (early && r >= 1 && r < kStages && my_tiles >= kStages) cp_async_wait<0>();
      // The same in every round that occurs; the two forms keep the narrow code unchanged.
      bool const late_round = kTwoLateOk ? r >= 2 * kStages : r == 2 * kStages;
      load_tile(late_round ? kAll : r >= kStages ? kNew : early ? kOld : kAll, j, j, first_reg(j),
                (j % 2) * kMmaTileKeys);
    }
    if (r + 1 == kStages) copy_nx_ids();
    if (r < kStages || r + 1 >= 2 * kStages) cp_async_commit();
  }
  BATON_MARK(0, 9);
  float slope0[kH], slope1[kH];
#pragma unroll
  for (int h = 0; h < kH; ++h) {
    slope0[h] = p.alibi != nullptr && h * 16 + r0 < rows_here ? p.alibi[rows.h[h * 16 + r0]] : 0.f;
    slope1[h] = p.alibi != nullptr && h * 16 + r1 < rows_here ? p.alibi[rows.h[h * 16 + r1]] : 0.f;
  }
  int32_t next_page = first_reg(kStages);  // tile j + kStages's ids: lanes next_base..+15
  int next_base = (kStages % 2) * kMmaTileKeys;
  if (early) {
    if (two_late) {
      cp_async_wait<2>();  // q and the new keys: every group but the two late tiles'
    } else if (late) {
      cp_async_wait<1>();  // q and the new keys: every group but the late tile's
    } else {
      cp_async_wait<0>();  // q and the new keys are the newest group: drain once
    }
  } else if (ran_on) {
    cp_async_wait<1>();  // q (requested after this warp's first kStages - 1 tiles) has landed
  } else {
    cp_async_wait<kStages>();  // the q group (the oldest) has landed
  }
  __syncthreads();  // q_s complete for every warp
  BATON_MARK(0, 3);

  float* merge;  // [warp][row][kMergePitch]: O, then m, l (reuses the K/V buffers). D + 8 floats: rows
  // start on 16-byte boundaries (the epilogue's float4 reads), and the wide form's float2
  // stores of a C fragment (rows lane / 4, columns (lane % 4) * 2) fall in distinct banks.
  constexpr int kMergePitch = D + 8;
  // The KV loop's skeleton, shared by the two mma forms below. Tile j's K rows once it has
  // landed in `slot` (its V rows follow them):
  int slot = 0;
  auto landed_tile = [&](int j) {
    cp_async_wait<kStages - 1>();  // tile j has landed
    __syncwarp();
    if (j == 0) BATON_LOOP_MARK(0, 4);
    if (j == 0) BATON_LOOP_ITEM_MARK(1);
    // Trace: warp 0 has reached a quarter, half, three quarters of its tiles (slots 12..14).
    if (j > 0 && j == my_tiles / 4) BATON_LOOP_MARK(0, 12);
    if (j > 0 && j == my_tiles / 2) BATON_LOOP_MARK(0, 13);
    if (j > 0 && j == 3 * my_tiles / 4) BATON_LOOP_MARK(0, 14);
    return reinterpret_cast<T const*>(warp_kv + slot * Smem::kStageBytes);
  };
  // After tile j: its slot refilled with tile j + kStages, the page ids of the one after.
  auto next_tile = [&](int j) {
    __syncwarp();  // every lane is done with the slot before it is refilled
    if (j + kStages < my_tiles) load_tile(kAll, slot, j + kStages, next_page, next_base);
    cp_async_commit();  // always, even empty: landed_tile's wait counts groups (a late ring
                        // tile, committed after q, completes only through these kStages - 1)
    next_page = page_of(j + kStages + 1);
    next_base = 0;  // lands while the next tiles are consumed
    slot = slot + 1 == kStages ? 0 : slot + 1;
  };
  // kChain, narrow (at most 8 rows: a warp's merge rows fit one ring slot), a next item in
  // this pass and no single-launch merge (which takes all of shared memory): the ring runs
  // on -- once this warp's loop is done, it requests the next item's first kStages - 1 tiles
  // into slots 0.., its merge rows go to its last slot, and q of the next item is requested
  // once every warp is past its loop -- so the next item's first tiles land during this
  // item's merge and stores.
  static_assert(!(kChain && kNarrow) || kStages >= 2, "running on keeps the ring's last slot for the merge rows");
  static_assert(8 * kMergePitch * sizeof(float) <= Smem::kStageBytes, "8 merge rows fit one ring slot");
  bool const run_on = kChain && kNarrow && nx.b >= 0 && p.counters == nullptr;  // CTA-uniform
  auto loop_done = [&] {
    cp_async_wait<0>();
    read_nx_ids();
    BATON_MARK(0, 5);
    BATON_ITEM_MARK(2);
    if (run_on) {
      __syncwarp();  // every lane is done with the ring before it is refilled
#pragma unroll
      for (int j = 0; j + 1 < kStages; ++j) {
        if (j < nx_tiles) {
          load_tile_at(kAll, j, start_of(nx_begin, j), nx_end, j < 2 ? nx_lo : nx_hi,
                       (j % 2) * kMmaTileKeys);
        }
        cp_async_commit();  // one group per tile, present or not (the next item counts them)
      }
    }
    // Next: merge_splits_kernel (waits before reading the scratch). After the CTA's last
    // item only: a CTA with several items would otherwise let the reducer's grid launch, and
    // sit resident and waiting, while it still streams whole items. (With
    // p.trigger_after_wait the CTA triggered after its wait already; this is then a no-op.)
    if (last_item) allow_next_grid();
  };
  // This warp's rows of the merge buffer, once every warp is done with its K/V buffers; m
  // and l of row r go after its D dims.
  // Ran on: warp w's rows (at most 8) in its last ring slot, and the next item's q
  // requested (q_s is free once every warp is past its loop).
  auto merge_row = [&](int w, int r) -> float const* {
    return run_on ? reinterpret_cast<float const*>(kv_raw + w * Smem::kWarpBytes + (kStages - 1) * Smem::kStageBytes) +
                        r * kMergePitch
                  : merge + (w * kRows + r) * kMergePitch;
  };
  auto warp_merge_rows = [&] {
    __syncthreads();
    merge = reinterpret_cast<float*>(kv_raw);
    if (run_on) {
      load_q(nx.b);
      cp_async_commit();
    }
    return const_cast<float*>(merge_row(warp, 0));
  };
  auto store_ml = [&](float* mw, int r, float m, float l) {
    mw[r * kMergePitch + D] = m;
    mw[r * kMergePitch + D + 1] = l;
  };
  if constexpr (kNarrow) {
  // Keys as the mma M dimension (docs/attention_next.md): S^T = K.Q^T and O^T += V^T.P^T
  // with the (at most 8) packed rows as N. Lane: keys lane / 4 (+ 8), rows ra = (lane % 4) * 2
  // and rb = ra + 1; O^T accumulators: dims m * 16 + lane / 4 (+ 8), rows ra, rb.
  int const lm = lane / 8, li = lane % 8;
  int const ra = (lane % 4) * 2, rb = ra + 1;
  int const qpos_a = L - p.q_len + rows.t[ra];
  int const qpos_b = L - p.q_len + rows.t[rb];
  float const slope_a = p.alibi != nullptr && ra < rows_here ? p.alibi[rows.h[ra]] : 0.f;
  float const slope_b = p.alibi != nullptr && rb < rows_here ? p.alibi[rows.h[rb]] : 0.f;
  // Q^T as the B operand, two k-steps per ldmatrix.x4: (ks lo, ks hi, ks+1 lo, ks+1 hi).
  uint32_t qb[kKSteps][2];
#pragma unroll
  for (int ks = 0; ks < kKSteps; ks += 2) {
    uint32_t r[4];
    ldmatrix_x4(r, q_s + li * kQPitch + (ks + lm / 2) * 16 + (lm % 2) * 8);
    qb[ks][0] = r[0];
    qb[ks][1] = r[1];
    qb[ks + 1][0] = r[2];
    qb[ks + 1][1] = r[3];
  }
  constexpr int kMTiles = D / 16;
  float ot[kMTiles][4];
#pragma unroll
  for (int m = 0; m < kMTiles; ++m) ot[m][0] = ot[m][1] = ot[m][2] = ot[m][3] = 0.f;
  float ma = -INFINITY, mb = -INFINITY, la = 0.f, lb = 0.f;

  for (int j = 0; j < my_tiles; ++j) {
    T const* k_tile = landed_tile(j);
    T const* v_tile = k_tile + kMmaTileKeys * D;

    // S^T[16 keys x 8 rows]: A = K (keys 0-7 / 8-15 x dims lo / hi), two chains.
    float st[4] = {0.f, 0.f, 0.f, 0.f}, st_odd[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks) {
      uint32_t ka[4];
      ldmatrix_x4(ka, k_tile + kv_smem<D>((lm % 2) * 8 + li, 2 * ks + lm / 2));
      MmaOp<T>::run(ks % 2 == 0 ? st : st_odd, ka, qb[ks][0], qb[ks][1]);
    }
#pragma unroll
    for (int e = 0; e < 4; ++e) st[e] += st_odd[e];

    int const key0 = tile_start(j);
    bool const interior = key0 + kMmaTileKeys <= t_end && key0 + kMmaTileKeys - 1 <= qpos_min &&
                          (!windowed || key0 >= qpos_max - p.window_left);
    if (plain && interior) {
#pragma unroll
      for (int e = 0; e < 4; ++e) st[e] *= p.scale;
    } else {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        bool const row_b = e & 1;
        int const kp = key0 + lane / 4 + (e >= 2 ? 8 : 0);
        int const qp = row_b ? qpos_b : qpos_a;
        float x = st[e] * p.scale;
        if (p.softcap > 0) x = p.softcap * tanhf(x / p.softcap);
        x -= (row_b ? slope_b : slope_a) * static_cast<float>(qp - kp);
        bool visible = kp < t_end && kp <= qp;
        if (windowed) visible = visible && kp >= qp - p.window_left;
        st[e] = visible ? x : -INFINITY;
      }
    }
    float xa = fmaxf(st[0], st[2]), xb = fmaxf(st[1], st[3]);
#pragma unroll
    for (int o = 4; o < 32; o <<= 1) {
      xa = fmaxf(xa, __shfl_xor_sync(0xffffffffu, xa, o));
      xb = fmaxf(xb, __shfl_xor_sync(0xffffffffu, xb, o));
    }
    MaxStep const step = max_step(ma, mb, xa, xb);
    float const na = step.m0, nb = step.m1, ca = step.c0, cb = step.c1;
    bool const moved = step.moved;
    ma = na;
    mb = nb;
    float const p0 = na == -INFINITY ? 0.f : __expf(st[0] - na);
    float const p1 = nb == -INFINITY ? 0.f : __expf(st[1] - nb);
    float const p2 = na == -INFINITY ? 0.f : __expf(st[2] - na);
    float const p3 = nb == -INFINITY ? 0.f : __expf(st[3] - nb);
    if (moved) {
      la *= ca;
      lb *= cb;
      scale_fragments(ot, ca, cb, ca, cb);  // rows ra, rb, ra, rb
    }
    la += p0 + p2;
    lb += p1 + p3;
    // P^T (keys x rows, C layout) -> B layout (keys (lane % 4) * 2 .. + 1 of row lane / 4).
    uint32_t const pb0 = movmatrix_trans(MmaOp<T>::pack(p0, p1));
    uint32_t const pb1 = movmatrix_trans(MmaOp<T>::pack(p2, p3));
    // O^T += V^T . P^T: A = V^T by ldmatrix.trans: (dims lo, keys 0-7), (dims hi, keys 0-7),
    // (dims lo, keys 8-15), (dims hi, keys 8-15).
#pragma unroll
    for (int m = 0; m < kMTiles; ++m) {
      uint32_t va[4];
      ldmatrix_x4_trans(va, v_tile + kv_smem<D>((lm / 2) * 8 + li, 2 * m + lm % 2));
      MmaOp<T>::run(ot[m], va, pb0, pb1);
    }
    if (j == 0) BATON_LOOP_MARK(0, 15);  // trace: tile 0's math issued (its P.V mma in flight)
    next_tile(j);
  }
  loop_done();

#pragma unroll
  for (int o = 4; o < 32; o <<= 1) {
    la += __shfl_xor_sync(0xffffffffu, la, o);
    lb += __shfl_xor_sync(0xffffffffu, lb, o);
  }
  float* mw = warp_merge_rows();
#pragma unroll
  for (int m = 0; m < kMTiles; ++m) {
    int const d = m * 16 + lane / 4;
    mw[ra * kMergePitch + d] = ot[m][0];
    mw[rb * kMergePitch + d] = ot[m][1];
    mw[ra * kMergePitch + d + 8] = ot[m][2];
    mw[rb * kMergePitch + d + 8] = ot[m][3];
  }
  if (lane < 4) {
    store_ml(mw, ra, ma, la);
    store_ml(mw, rb, mb, lb);
  }
  __syncthreads();
  BATON_MARK(0, 10);
  } else {
  // Rows as M, 16 per half (kH halves: the paired form computes both on each tile it loads,
  // sharing the K and V fragments; its halves are independent chains that overlap).
  int const lm = lane / 8, li = lane % 8;  // ldmatrix: matrix and row of this lane's address
  uint32_t qf[kQInRegisters ? kKSteps : 1][4];
  if constexpr (kQInRegisters) {
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks) ldmatrix_x4(qf[ks], q_s + ((lm % 2) * 8 + li) * kQPitch + ks * 16 + (lm / 2) * 8);
  }

  for (int j = 0; j < my_tiles; ++j) {
    T const* k_tile = landed_tile(j);
    T const* v_tile = k_tile + kMmaTileKeys * D;

    // S = Q . K^T: two n-tiles of 8 keys per half, each accumulated in two chains (even and
    // odd k-steps) so that four independent mma chains of D / 32 per half overlap their latencies.
    float s[kH][2][4], s_odd[kH][2][4];
#pragma unroll
    for (int h = 0; h < kH; ++h) {
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
        for (int e = 0; e < 4; ++e) s[h][nt][e] = s_odd[h][nt][e] = 0.f;
      }
    }
#pragma unroll
    for (int ks = 0; ks < kKSteps; ++ks) {
      uint32_t kb[4];
      // K matrices: (keys 0-7, dims lo), (keys 0-7, dims hi), (keys 8-15, lo), (keys 8-15, hi)
      ldmatrix_x4(kb, k_tile + kv_smem<D>((lm / 2) * 8 + li, 2 * ks + lm % 2));
#pragma unroll
      for (int h = 0; h < kH; ++h) {
        float(&acc)[2][4] = ks % 2 == 0 ? s[h] : s_odd[h];
        if constexpr (kQInRegisters) {
          MmaOp<T>::run(acc[0], qf[ks], kb[0], kb[1]);
          MmaOp<T>::run(acc[1], qf[ks], kb[2], kb[3]);
        } else {
          uint32_t a[4];
          ldmatrix_x4(a, q_s + (h * 16 + (lm % 2) * 8 + li) * kQPitch + ks * 16 + (lm / 2) * 8);
          MmaOp<T>::run(acc[0], a, kb[0], kb[1]);
          MmaOp<T>::run(acc[1], a, kb[2], kb[3]);
        }
      }
    }
#pragma unroll
    for (int h = 0; h < kH; ++h) {
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
        for (int e = 0; e < 4; ++e) s[h][nt][e] += s_odd[h][nt][e];
      }
    }

    // Scores. Interior tiles (every key in range, causally visible to every live row, inside
    // the window) take the plain path; boundary tiles apply the masks per element.
    int const key0 = tile_start(j);
    bool const interior = key0 + kMmaTileKeys <= t_end && key0 + kMmaTileKeys - 1 <= qpos_min &&
                          (!windowed || key0 >= qpos_max - p.window_left);
    if (plain && interior) {  // warp-uniform
#pragma unroll
      for (int h = 0; h < kH; ++h) {
#pragma unroll
        for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
          for (int e = 0; e < 4; ++e) s[h][nt][e] *= p.scale;
        }
      }
    } else {
#pragma unroll
      for (int h = 0; h < kH; ++h) {
#pragma unroll
        for (int nt = 0; nt < 2; ++nt) {
#pragma unroll
          for (int e = 0; e < 4; ++e) {
            bool const upper = e >= 2;
            float x = s[h][nt][e] * p.scale;
            int const kp = key0 + nt * 8 + (lane % 4) * 2 + (e & 1);
            int const qp = upper ? qpos1[h] : qpos0[h];
            if (p.softcap > 0) x = p.softcap * tanhf(x / p.softcap);
            x -= (upper ? slope1[h] : slope0[h]) * static_cast<float>(qp - kp);
            bool visible = kp < t_end && kp <= qp;
            if (windowed) visible = visible && kp >= qp - p.window_left;
            s[h][nt][e] = visible ? x : -INFINITY;
          }
        }
      }
    }
    uint32_t pa[kH][4];  // P as the A operand: (r0, keys 0-7), (r1, 0-7), (r0, 8-15), (r1, 8-15)
#pragma unroll
    for (int h = 0; h < kH; ++h) {
      float mx0 = -INFINITY, mx1 = -INFINITY;
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        mx0 = fmaxf(mx0, fmaxf(s[h][nt][0], s[h][nt][1]));
        mx1 = fmaxf(mx1, fmaxf(s[h][nt][2], s[h][nt][3]));
      }
      mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 1));
      mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, 2));
      mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 1));
      mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, 2));
      // O and l are rescaled only when some row's running max moved (rare after a few tiles).
      MaxStep const step = max_step(m0[h], m1[h], mx0, mx1);
      float const mn0 = step.m0, mn1 = step.m1, c0 = step.c0, c1 = step.c1;
      bool const moved = step.moved;
      m0[h] = mn0;
      m1[h] = mn1;
      float ps0 = 0.f, ps1 = 0.f;
#pragma unroll
      for (int nt = 0; nt < 2; ++nt) {
        float const p00 = mn0 == -INFINITY ? 0.f : __expf(s[h][nt][0] - mn0);
        float const p01 = mn0 == -INFINITY ? 0.f : __expf(s[h][nt][1] - mn0);
        float const p10 = mn1 == -INFINITY ? 0.f : __expf(s[h][nt][2] - mn1);
        float const p11 = mn1 == -INFINITY ? 0.f : __expf(s[h][nt][3] - mn1);
        ps0 += p00 + p01;
        ps1 += p10 + p11;
        pa[h][nt * 2 + 0] = MmaOp<T>::pack(p00, p01);
        pa[h][nt * 2 + 1] = MmaOp<T>::pack(p10, p11);
      }
      if (moved) {
        l0[h] *= c0;
        l1[h] *= c1;
        scale_fragments(o[h], c0, c0, c1, c1);  // rows r0, r0, r1, r1
      }
      l0[h] += ps0;
      l1[h] += ps1;
    }
    // O += P . V: V matrices (keys 0-7, dims ot), (keys 8-15, dims ot), (0-7, ot+1), (8-15, ot+1)
#pragma unroll
    for (int ot = 0; ot < kONTiles; ot += 2) {
      uint32_t vb[4];
      ldmatrix_x4_trans(vb, v_tile + kv_smem<D>((lm % 2) * 8 + li, ot + lm / 2));
#pragma unroll
      for (int h = 0; h < kH; ++h) {
        MmaOp<T>::run(o[h][ot], pa[h], vb[0], vb[1]);
        MmaOp<T>::run(o[h][ot + 1], pa[h], vb[2], vb[3]);
      }
    }
    if (j == 0) BATON_LOOP_MARK(0, 15);  // trace: tile 0's math issued (its P.V mma in flight)
    next_tile(j);
  }
  loop_done();

  // Merge the 4 warps' (m, l, O) through shared memory (reusing the K/V buffers).
#pragma unroll
  for (int h = 0; h < kH; ++h) {
    l0[h] += __shfl_xor_sync(0xffffffffu, l0[h], 1);
    l0[h] += __shfl_xor_sync(0xffffffffu, l0[h], 2);
    l1[h] += __shfl_xor_sync(0xffffffffu, l1[h], 1);
    l1[h] += __shfl_xor_sync(0xffffffffu, l1[h], 2);
  }
  float* mw = warp_merge_rows();
#pragma unroll
  for (int h = 0; h < kH; ++h) {
    int const ra = h * 16 + r0, rb = h * 16 + r1;
#pragma unroll
    for (int j = 0; j < kONTiles; ++j) {
      int const d = j * 8 + (lane % 4) * 2;
      *reinterpret_cast<float2*>(mw + ra * kMergePitch + d) = make_float2(o[h][j][0], o[h][j][1]);
      *reinterpret_cast<float2*>(mw + rb * kMergePitch + d) = make_float2(o[h][j][2], o[h][j][3]);
    }
    if (lane % 4 == 0) {
      store_ml(mw, ra, m0[h], l0[h]);
      store_ml(mw, rb, m1[h], l1[h]);
    }
  }
  __syncthreads();
  BATON_MARK(0, 10);
  }

  // 8 dims of a row per thread, 4 contiguous in each half of the row (dims d0.. and D / 2 +
  // d0..: consecutive threads read consecutive float4s of a warp's row, conflict-free at pitch
  // kMergePitch). Each such thread also finds its row's CTA max M over the warps, each warp's
  // weight exp(m_w - M) and the denominator (with the sink for a single split) itself -- the
  // same expressions in the same order as one thread per row would, so the same bits, without
  // a barrier and a serial per-row step between; the row's first thread writes its lse.
  constexpr int kVec = 4;  // dims per half
  constexpr int kHalf = D / 2;
  bool const single = n == 1;
  for (int c = threadIdx.x; c < rows_here * (kHalf / kVec); c += kThreads) {
    int const r = c / (kHalf / kVec), d0 = (c % (kHalf / kVec)) * kVec;
    int const t = rows.t[r], h = rows.h[r];
    int64_t const token = int64_t(b) * p.q_len + t;
    float M = -INFINITY;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) M = fmaxf(M, merge_row(w, r)[D]);
    if (single) M = merge_max_with_sink(M, p.sinks, h);  // a large sink cannot overflow den
    float sc[kWarps], den = 0.f;
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
      float const* rw = merge_row(w, r);
      sc[w] = merge_weight(rw[D], M);  // the warp's weight: 0 for a warp without keys
      den += sc[w] * rw[D + 1];
    }
    float v[2][kVec] = {};
#pragma unroll
    for (int w = 0; w < kWarps; ++w) {
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        float4 const x = *reinterpret_cast<float4 const*>(merge_row(w, r) + half * kHalf + d0);
        v[half][0] += sc[w] * x.x;
        v[half][1] += sc[w] * x.y;
        v[half][2] += sc[w] * x.z;
        v[half][3] += sc[w] * x.w;
      }
    }
    if (single) {
      MergeEnd const end = merge_end(M, den, p.sinks, h);  // the sink, counted once
      if (p.lse != nullptr && d0 == 0) p.lse[token * p.lse_stride_token + h] = end.lse;
      T* const row = static_cast<T*>(p.out) + token * p.out_stride_token + h * p.out_stride_head;
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        T* dst = row + half * kHalf + d0;
        alignas(8) T packed[kVec];
#pragma unroll
        for (int k = 0; k < kVec; ++k) packed[k] = from_float<T>(v[half][k] * end.inv);
        if ((reinterpret_cast<uintptr_t>(dst) & 7) == 0) {
          *reinterpret_cast<uint2*>(dst) = *reinterpret_cast<uint2 const*>(packed);
        } else {
          for (int k = 0; k < kVec; ++k) dst[k] = packed[k];
        }
      }
    } else {
      float const inv = den > 0 ? 1.f / den : 0.f;
      int64_t const prow = scratch_row(p, b, split, t, h);
      if (d0 == 0) p.part_lse[prow] = den > 0 ? M + __logf(den) : -INFINITY;
      float* const dst = p.part_o + prow * D + d0;  // 16-byte aligned workspace
#pragma unroll
      for (int half = 0; half < 2; ++half) {
        *reinterpret_cast<float4*>(dst + half * kHalf) =
            make_float4(v[half][0] * inv, v[half][1] * inv, v[half][2] * inv, v[half][3] * inv);
      }
    }
  }
  BATON_MARK(0, 6);
  if constexpr (kChain) {
    carry->valid = nx.b >= 0;
    carry->ran_on = run_on;
    carry->lo = nx_lo;
    carry->hi = nx_hi;
  }
  if (!single && p.counters != nullptr) {
    merge_if_last<T, D, kRows>(p, rows, kv_head, chunk, b, n, rows_here, reinterpret_cast<float*>(smem_raw));
  }
}

}  // namespace baton::attention
