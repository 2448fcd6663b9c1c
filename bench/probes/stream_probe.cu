// Streaming probe: the ceiling of a decode-attention-shaped K/V stream on this GPU, and what
// the copy engine, the shared-memory layout and dynamic work balance do to it. Each CTA of 4
// warps streams (kv head, key range) K and V tiles of 16 keys (rows of 256 B, NHD: 8 heads x
// 128 bf16 per token) through a private 3-stage ring per warp (8 KB per stage, 2 CTAs per
// SM), as the decode-attention producer does, and consumes each tile with one shared-memory
// read: no attention math (the producer without its math streamed within 1% of the producer
// with it, docs/benchmarking.md). Standalone; not part of the library.
//
//   baton-stream-probe                       every mode, one table
//   baton-stream-probe MODE [PITCH SWZ ILV]  one mode; for mode 2: shared-memory row pitch in
//                                            bytes, XOR swizzle of 16-byte chunks (0/1), K/V
//                                            copies interleaved as the producer issues them (0/1)
//
// Found with it (sixth session of 2026-11-29): rows padded to 272 or 288 bytes stream ~8%
// slower than 256-byte rows (plain or swizzled), which is why the producer's K/V rows are
// unpadded and swizzled (split_kv_kernel.cuh, kv_smem). cp.async carries no L2 hint here:
// with the hint (createpolicy + cp.async...L2::cache_hint) this probe's kernels failed with
// an illegal instruction under CUDA 13.0, though the library's own copies with the same
// helper run clean; not pursued.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "probe_util.cuh"

namespace {

constexpr int kWarps = 4, kStages = 3, kRow = 256, kTileKeys = 16, kHeads = 8;
constexpr int kStageBytes = 2 * kTileKeys * kRow;  // K + V at 256-byte rows

enum Mode {
  kPlain = 0,         // cp.async 16 B, logical keys are physical keys
  kPaged = 1,         // + page ids from a random page table, loaded one tile ahead
  kPagedLayout = 2,   // + the shared-memory row pitch, swizzle and copy order given
  kBulkRows = 3,      // cp.async.bulk of each 256-byte row, mbarrier completion
  kBulkTile = 4,      // cp.async.bulk of a 16-key tile (4 KB, HND pages)
  kDynamic = 5,       // cp.async, items of chunk_keys keys claimed per warp from a counter
  kDynamicBulk = 6,   // the same with bulk row copies
  kModes = 7
};
__host__ __device__ constexpr bool is_bulk(int m) { return m == kBulkRows || m == kBulkTile || m == kDynamicBulk; }
__host__ __device__ constexpr bool is_dynamic(int m) { return m == kDynamic || m == kDynamicBulk; }
__host__ __device__ constexpr bool is_paged(int m) { return m == kPaged || m == kPagedLayout; }

struct Args {
  char const* k;
  char const* v;
  int64_t base_key;        // rotates through the pool between launches (no L2 reuse)
  int keys_per_cta;        // static modes: CTA c streams head c % 8, keys [(c / 8) * n, +n)
  int chunk_keys;          // dynamic: an item is (head, chunk_keys keys)
  int items;               // dynamic: number of items
  int* counter;            // dynamic: claim counter, zeroed per launch
  unsigned long long* t;   // [ctas][2]: start, end (globaltimer)
  unsigned* sink;
  int const* pages;        // paged: physical page of each logical 64-key page
  int pitch;               // kPagedLayout: bytes per shared-memory row
  int swizzle;             // kPagedLayout: 16-byte chunk c of row r at c ^ (r % 8)
  int interleave;          // kPagedLayout: K and V copies of rows 2i, 2i + 1 alternate
};

__device__ __forceinline__ char const* nhd_row(char const* base, int64_t key, int head) {
  return base + (key * kHeads + head) * kRow;
}
__device__ __forceinline__ char const* hnd_row(char const* base, int64_t key, int head) {  // [page][head][64][128]
  return base + (((key >> 6) * kHeads + head) * 64 + (key & 63)) * kRow;
}
__device__ __forceinline__ void cp_async(void* dst, void const* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_u32(dst)), "l"(src) : "memory");
}

template <int M>
__global__ void __launch_bounds__(kWarps * 32, 2) stream_kernel(Args a) {
  extern __shared__ __align__(128) char smem[];
  __shared__ __align__(8) unsigned long long bars[kWarps][kStages];
  int const warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  int const slot_bytes = M == kPagedLayout ? 2 * kTileKeys * a.pitch : kStageBytes;
  char* ring = smem + warp * kStages * slot_bytes;
  if (threadIdx.x == 0) a.t[blockIdx.x * 2] = probe_now();
  if (is_bulk(M)) {
    if (lane == 0)
      for (int s = 0; s < kStages; ++s) mbar_init(smem_u32(&bars[warp][s]));
    mbar_init_fence();
    __syncwarp();
  }

  // The warp's tiles: static = tiles warp, warp + 4, ... of the CTA's range (as the producer);
  // dynamic = every tile of each claimed item, the next item claimed one ahead.
  int head = blockIdx.x % kHeads;
  int64_t key0 = a.base_key + int64_t(blockIdx.x / kHeads) * a.keys_per_cta;
  int tiles = a.keys_per_cta / kTileKeys, tile = warp, step = kWarps, next_item = 0;
  auto take = [&](int item) {
    head = item % kHeads;
    key0 = a.base_key + int64_t(item / kHeads) * a.chunk_keys;
    tile = 0;
  };
  if (is_dynamic(M)) {
    int item = lane == 0 ? atomicAdd(a.counter, 1) : 0;
    item = __shfl_sync(~0u, item, 0);
    if (lane == 0) next_item = atomicAdd(a.counter, 1);
    step = 1;
    tiles = item < a.items ? a.chunk_keys / kTileKeys : 0;
    take(item);
  }
  auto advance = [&]() -> bool {  // true when tile `tile` of the current range is next
    if (tile < tiles) return true;
    if (!is_dynamic(M)) return false;
    int const item = __shfl_sync(~0u, next_item, 0);
    if (item >= a.items) return false;
    if (lane == 0) next_item = atomicAdd(a.counter, 1);
    take(item);
    return true;
  };
  int pending_page = -1;  // paged: the next tile's page id, loaded a tile ahead
  auto issue = [&](int slot) {
    char* dst = ring + slot * slot_bytes;
    int64_t k = key0 + int64_t(tile) * kTileKeys;
    if (is_paged(M)) {
      int const pg = pending_page >= 0 ? pending_page : a.pages[k >> 6];
      k = int64_t(pg) * 64 + (k & 63);
    }
    if (is_bulk(M)) {
      unsigned const bar = smem_u32(&bars[warp][slot]);
      if (lane == 0) mbar_expect_tx(bar, kStageBytes);
      __syncwarp();
      if (M != kBulkTile)  // lane = row: K rows 0..15, V rows 16..31
        bulk_copy(dst + lane * kRow, nhd_row(lane < 16 ? a.k : a.v, k + lane % 16, head), kRow, bar);
      else if (lane < 2)  // one 4 KB copy for K, one for V
        bulk_copy(dst + lane * kTileKeys * kRow, hnd_row(lane == 0 ? a.k : a.v, k, head), kTileKeys * kRow, bar);
    } else if (M == kPagedLayout) {
      int const key = lane / 16, col = lane % 16;
#pragma unroll
      for (int n = 0; n < 16; ++n) {
        bool const is_v = a.interleave ? (n & 1) : n >= 8;
        int const r = a.interleave ? 2 * (n / 2) + key : 2 * (n % 8) + key;
        int const c = a.swizzle ? col ^ (r % 8) : col;
        cp_async(dst + ((is_v ? kTileKeys : 0) + r) * a.pitch + c * 16, nhd_row(is_v ? a.v : a.k, k + r, head) + col * 16);
      }
    } else {
#pragma unroll
      for (int i = 0; i < 16; ++i) {  // instruction i: rows 2i, 2i + 1 (K rows 0..15, then V)
        int const idx = i * 32 + lane, row = idx >> 4, col = idx & 15;
        cp_async(dst + row * kRow + col * 16, nhd_row(row < 16 ? a.k : a.v, k + row % 16, head) + col * 16);
      }
    }
    tile += step;
    pending_page = -1;
  };

  unsigned acc = 0;
  int issued = 0, consumed = 0;
  for (int s = 0; s < kStages; ++s) {
    if (advance()) {
      issue(s);
      ++issued;
    }
    if (!is_bulk(M)) asm volatile("cp.async.commit_group;" ::: "memory");
  }
  while (consumed < issued) {
    int const slot = consumed % kStages;
    if (is_bulk(M)) {
      mbar_wait(smem_u32(&bars[warp][slot]), (consumed / kStages) & 1);
    } else {
      asm volatile("cp.async.wait_group %0;" ::"n"(kStages - 1) : "memory");
      __syncwarp();
    }
    uint4 const x = *reinterpret_cast<uint4 const*>(ring + slot * slot_bytes + lane * kRow + (consumed & 15) * 16);
    acc ^= x.x ^ x.y ^ x.z ^ x.w;
    __syncwarp();
    if (is_bulk(M)) asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    ++consumed;
    if (advance()) {
      issue(slot);
      ++issued;
      if (is_paged(M) && tile < tiles) pending_page = a.pages[(key0 + int64_t(tile) * kTileKeys) >> 6];
    }
    if (!is_bulk(M)) asm volatile("cp.async.commit_group;" ::: "memory");
  }
  if (acc == 0x12345678u) a.sink[0] = acc;  // keeps the reads
  __syncthreads();
  if (threadIdx.x == 0) a.t[blockIdx.x * 2 + 1] = probe_now();
}

struct Result {
  double span_us, end_p10, end_p50;  // the span is also the last CTA's end
};

// Median over `reps` launches (after two warm-ups) of the kernel's span (first CTA start to
// last CTA end), and of the CTAs' end times.
template <int M>
Result run(Args a, int ctas, int64_t pool_keys, int64_t keys_per_launch, int reps) {
  int const smem_bytes = kWarps * kStages * (M == kPagedLayout ? 2 * kTileKeys * a.pitch : kStageBytes);
  CK(cudaFuncSetAttribute(stream_kernel<M>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes));
  std::vector<unsigned long long> h(size_t(ctas) * 2);
  std::vector<double> span, p10, p50;
  for (int r = 0; r < reps + 2; ++r) {
    a.base_key = ((int64_t(r) * keys_per_launch) % (pool_keys - keys_per_launch + 1)) & ~int64_t(63);
    CK(cudaMemset(a.counter, 0, sizeof(int)));
    stream_kernel<M><<<ctas, kWarps * 32, smem_bytes>>>(a);
    CK(cudaGetLastError());
    CK(cudaDeviceSynchronize());
    if (r < 2) continue;
    CK(cudaMemcpy(h.data(), a.t, h.size() * 8, cudaMemcpyDeviceToHost));
    unsigned long long t0 = ~0ull;
    for (int c = 0; c < ctas; ++c) t0 = std::min(t0, h[c * 2]);
    std::vector<double> ends;
    for (int c = 0; c < ctas; ++c) ends.push_back((h[c * 2 + 1] - t0) * 1e-3);
    std::sort(ends.begin(), ends.end());
    span.push_back(ends.back());
    p10.push_back(ends[ctas / 10]);
    p50.push_back(ends[ctas / 2]);
  }
  auto med = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  return {med(span), med(p10), med(p50)};
}

}  // namespace

int main(int argc, char** argv) {
  int const only = argc > 1 ? std::atoi(argv[1]) : -1;
  int64_t const pool_keys = int64_t(1) << 19;  // 512 K keys x 8 heads x 256 B = 1 GiB per pool
  size_t const pool_bytes = size_t(pool_keys) * kHeads * kRow;
  char *k, *v;
  CK(cudaMalloc(&k, pool_bytes));
  CK(cudaMalloc(&v, pool_bytes));
  CK(cudaMemset(k, 0x3c, pool_bytes));
  CK(cudaMemset(v, 0x5a, pool_bytes));
  unsigned long long* t;
  unsigned* sink;
  int *counter, *pages;
  CK(cudaMalloc(&t, 8192 * 2 * 8));
  CK(cudaMalloc(&sink, 4));
  CK(cudaMalloc(&counter, 4));
  {
    std::vector<int> h(pool_keys / 64);  // a random permutation of the pool's 64-key pages
    for (size_t i = 0; i < h.size(); ++i) h[i] = int(i);
    uint64_t x = 88172645463325252ull;
    for (size_t i = h.size() - 1; i > 0; --i) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      std::swap(h[i], h[x % (i + 1)]);
    }
    CK(cudaMalloc(&pages, h.size() * sizeof(int)));
    CK(cudaMemcpy(pages, h.data(), h.size() * sizeof(int), cudaMemcpyHostToDevice));
  }
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  std::printf("stream probe: %s, %d SMs; K and V rows of 256 B, 8 heads; 4 warps x 3 stages x 8 KB per CTA\n", prop.name,
              prop.multiProcessorCount);
  std::printf("| shape | mode | CTAs | span us | TB/s | CTA end p10 / p50 / max us |\n|---|---|---|---|---|---|\n");
  struct Shape {
    char const* name;
    int batch, context, splits;
  };
  Shape const shapes[] = {{"32x8K", 32, 8192, 1}, {"16x32K", 16, 32768, 2}, {"1x32K", 1, 32768, 32}, {"1x8K", 1, 8192, 32},
                          {"1x1K", 1, 1024, 8}};
  struct Variant {
    int mode, pitch, swizzle, interleave, chunk;
    char const* name;
  };
  std::vector<Variant> variants = {
      {kPlain, 256, 0, 0, 0, "cp.async"},
      {kPaged, 256, 0, 0, 0, "cp.async + page table"},
      {kPagedLayout, 272, 0, 1, 0, "+ 272 B rows, producer's copy order (before rev 0726eff)"},
      {kPagedLayout, 256, 1, 1, 0, "+ 256 B rows swizzled, producer's copy order (rev 0726eff)"},
      {kBulkRows, 256, 0, 0, 0, "bulk copies of 256 B rows"},
      {kBulkTile, 256, 0, 0, 0, "bulk copies of 4 KB tiles (HND)"},
      {kDynamic, 256, 0, 0, 256, "dynamic, 256-key items per warp"},
      {kDynamicBulk, 256, 0, 0, 1024, "dynamic bulk, 1024-key items per warp"}};
  if (only >= 0) {
    if (only >= kModes) {
      std::fprintf(stderr, "mode %d: expected 0..%d\n", only, kModes - 1);
      return 2;
    }
    Variant w{only, argc > 2 ? std::atoi(argv[2]) : 256, argc > 3 ? std::atoi(argv[3]) : 0,
              argc > 4 ? std::atoi(argv[4]) : 0, 256, "as given"};
    if (w.mode == kPagedLayout && (w.pitch < 256 || w.pitch % 16 != 0 || w.pitch > 304)) {
      std::fprintf(stderr, "pitch %d: expected a multiple of 16 in [256, 304]\n", w.pitch);
      return 2;
    }
    variants = {w};
  }
  for (Shape const& s : shapes) {
    int64_t const keys = int64_t(s.batch) * s.context;  // per head
    double const bytes = double(keys) * kHeads * kRow * 2;
    for (Variant const& w : variants) {
      Args a{k, v, 0, s.context / s.splits, w.chunk, 0, counter, t, sink, pages, w.pitch, w.swizzle, w.interleave};
      int ctas = s.batch * kHeads * s.splits;
      Result r;
      switch (w.mode) {
        case kPlain: r = run<kPlain>(a, ctas, pool_keys, keys, 7); break;
        case kPaged: r = run<kPaged>(a, ctas, pool_keys, keys, 7); break;
        case kPagedLayout: r = run<kPagedLayout>(a, ctas, pool_keys, keys, 7); break;
        case kBulkRows: r = run<kBulkRows>(a, ctas, pool_keys, keys, 7); break;
        case kBulkTile: r = run<kBulkTile>(a, ctas, pool_keys, keys, 7); break;
        default:
          a.items = int(keys / a.chunk_keys) * kHeads;
          ctas = 2 * prop.multiProcessorCount;  // one wave of workers
          r = w.mode == kDynamic ? run<kDynamic>(a, ctas, pool_keys, keys, 7) : run<kDynamicBulk>(a, ctas, pool_keys, keys, 7);
      }
      std::printf("| %s | %s | %d | %.1f | %.2f | %.1f / %.1f / %.1f |\n", s.name, w.name, ctas, r.span_us,
                  bytes / (r.span_us * 1e-6) * 1e-12, r.end_p10, r.end_p50, r.span_us);
    }
  }
  return 0;
}
