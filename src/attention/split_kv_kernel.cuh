// Paged split-K decode attention: the producer (decode-attention.md).
//
// What: for request b, kv head kvh and split s, the partial attention of the packed query rows
// of kvh (row = t * group + g: draft token t, query head kvh * group + g) over the split's
// key range, streamed once from the paged cache.
//
// Grid: (max_splits, num_kv_heads * row_chunks, batch). A CTA is 4 warps and owns up to 16
// packed rows (row_chunks = ceil(group * q_len / 16)); one K/V tile load serves all of them.
// Split s of a request with n = num_kv_splits[b] splits covers an equal share of the visible
// key span [lo, L) (lo = L - q_len - window_left with a window, else 0). CTAs with s >= n
// exit after the PDL wait.
// Tiles of 32 keys are double-buffered in shared memory with cp.async (zero-filled past the
// span). Scores: lane j of warp w computes key j against rows w, w+4, w+8, w+12; online
// softmax per row with warp reductions; P.V: lane owns head_dim / 32 contiguous dims.
//
// Bytes: 2 * head_dim * sizeof(T) per key per kv head (K and V) read once per row chunk;
// 32 x 8K x 8 heads x 128 x 2 x 2 B = 1 GiB for the 32 x 8K shape.
//
// Numerics: fp32 accumulation; q is pre-scaled by softmax_scale; exp via __expf.
// One split (n == 1): out = acc / (l + sink term), lse written; no scratch round trip.
// Several: part_o = acc / l and part_lse = m + log(l) (-inf for an empty split) in float.
//
// PDL contract: q (qk_norm_rope), the new KV (append), cache_seqlens, page_table and
// num_kv_splits (metadata) all come from earlier kernels of the step, so nothing but kernel
// parameters is read before wait_on_prior_grid(); every CTA waits, including those past the
// request's split count. Triggers after the KV loop, before the final stores: the reducer
// (merge_splits_kernel) is expected to follow and waits before reading the scratch.
#pragma once

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "common/pdl.cuh"

namespace baton::attention {

constexpr int kWarps = 4;
constexpr int kThreads = kWarps * 32;
constexpr int kTileKeys = 32;
constexpr int kRowsPerCta = 16;
constexpr int kRowsPerWarp = kRowsPerCta / kWarps;

struct AttentionParams {
  void const* q;  // [batch * q_len, num_q_heads, head_dim]
  int64_t q_stride_token, q_stride_head;
  void const* k;  // paged pool
  void const* v;
  int64_t k_stride_page, k_stride_token, k_stride_head;
  int64_t v_stride_page, v_stride_token, v_stride_head;
  int32_t const* cache_seqlens;  // [batch]
  int32_t const* page_table;     // [batch, pt_stride]
  int64_t pt_stride;
  int32_t const* num_kv_splits;  // [batch] or null (max_splits for all)
  int max_splits;
  int batch, q_len, num_q_heads, num_kv_heads, group, rows, row_chunks;
  int page_shift;
  float scale;
  int window_left;
  float softcap;
  float const* sinks;  // [num_q_heads] or null
  float const* alibi;  // [num_q_heads] or null
  void* out;           // [batch * q_len, num_q_heads, head_dim]
  int64_t out_stride_token, out_stride_head;
  float* lse;          // [batch * q_len, num_q_heads] or null
  int64_t lse_stride_token;
  float* part_o;       // [batch, max_splits, q_len, num_q_heads, head_dim]
  float* part_lse;     // [batch, max_splits, q_len, num_q_heads]
};

template <class T>
struct Vec8 {  // 8 elements of T <-> float
  static __device__ __forceinline__ void to_float(uint4 const& u, float (&f)[8]) {
    T const* h = reinterpret_cast<T const*>(&u);
#pragma unroll
    for (int i = 0; i < 8; ++i) f[i] = static_cast<float>(h[i]);
  }
};

template <class T>
__device__ __forceinline__ T from_float(float f);
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float f) { return __float2bfloat16_rn(f); }
template <>
__device__ __forceinline__ __half from_float<__half>(float f) { return __float2half_rn(f); }

__device__ __forceinline__ void cp_async_16(void* smem, void const* gmem, bool valid) {
  unsigned const addr = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  int const bytes = valid ? 16 : 0;  // 0: zero-fill, nothing read
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(addr), "l"(gmem), "r"(bytes) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
template <int kPending>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory"); }

__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Number of splits request b uses, in [1, max_splits].
__device__ __forceinline__ int splits_of(AttentionParams const& p, int b) {
  if (p.num_kv_splits == nullptr) return p.max_splits;
  int n = p.num_kv_splits[b];
  return n < 1 ? 1 : (n > p.max_splits ? p.max_splits : n);
}

template <int D>
struct SmemLayout {
  static constexpr int kPitch = D + 8;  // bf16/fp16 elements per K/V row: 16 B pad, no conflicts
  static constexpr size_t kQBytes = size_t(kRowsPerCta) * D * sizeof(float);
  static constexpr size_t kTileBytes = size_t(kTileKeys) * kPitch * 2;
  static constexpr size_t kBytes = kQBytes + 4 * kTileBytes;  // q + (K, V) x 2 stages
};

template <class T, int D, bool kWait = true>
__global__ void __launch_bounds__(kThreads)
    split_kv_kernel(__grid_constant__ AttentionParams const p) {
  using Smem = SmemLayout<D>;
  constexpr int kPitch = Smem::kPitch;
  constexpr int kDimsPerLane = D / 32;
  constexpr int kChunksPerKey = D / 8;                        // 16-byte chunks
  constexpr int kChunksPerThread = kTileKeys * kChunksPerKey / kThreads;
  extern __shared__ __align__(16) unsigned char smem_raw[];
  float* q_s = reinterpret_cast<float*>(smem_raw);           // [16][D], pre-scaled
  T* kv_s = reinterpret_cast<T*>(smem_raw + Smem::kQBytes);  // [stage][K|V][32][kPitch]

  int const split = blockIdx.x;
  int const kv_head = blockIdx.y / p.row_chunks;
  int const chunk = blockIdx.y % p.row_chunks;
  int const b = blockIdx.z;
  int const warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  if constexpr (kWait) wait_on_prior_grid();  // everything below depends on earlier kernels
  int const n = splits_of(p, b);
  if (split >= n) return;

  int64_t const L = p.cache_seqlens[b];
  int64_t lo = 0;
  if (p.window_left >= 0) {
    lo = L - p.q_len - p.window_left;
    lo = lo < 0 ? 0 : lo;
  }
  int64_t const span = L > lo ? L - lo : 0;
  int64_t const per_split = (span + n - 1) / n;
  int64_t const t_begin = lo + split * per_split;
  int64_t t_end = t_begin + per_split;
  t_end = t_end < L ? t_end : L;
  int const rows_here = min(kRowsPerCta, p.rows - chunk * kRowsPerCta);

  // Packed rows of this CTA: q rows into shared memory as float, pre-scaled. All loads of a
  // thread are issued before any store (one latency, not kQChunks).
  {
    constexpr int kQChunks = kRowsPerCta * D / 8 / kThreads;  // 16-byte chunks per thread
    uint4 raw[kQChunks];
#pragma unroll
    for (int i = 0; i < kQChunks; ++i) {
      int const c = threadIdx.x + i * kThreads, r = c / (D / 8), d = (c % (D / 8)) * 8;
      raw[i] = make_uint4(0, 0, 0, 0);
      if (r < rows_here) {
        int const g = chunk * kRowsPerCta + r;
        int const t = g / p.group, h = kv_head * p.group + g % p.group;
        T const* q = static_cast<T const*>(p.q) + (int64_t(b) * p.q_len + t) * p.q_stride_token + h * p.q_stride_head;
        if ((reinterpret_cast<uintptr_t>(q) & 15) == 0) {
          raw[i] = *reinterpret_cast<uint4 const*>(q + d);
        } else {
          T* e = reinterpret_cast<T*>(&raw[i]);
#pragma unroll
          for (int k = 0; k < 8; ++k) e[k] = q[d + k];
        }
      }
    }
#pragma unroll
    for (int i = 0; i < kQChunks; ++i) {
      int const c = threadIdx.x + i * kThreads, r = c / (D / 8), d = (c % (D / 8)) * 8;
      float f[8];
      Vec8<T>::to_float(raw[i], f);
#pragma unroll
      for (int k = 0; k < 8; ++k) q_s[r * D + d + k] = f[k] * p.scale;
    }
  }

  // Per-row state: row r = warp + 4 * i.
  float m[kRowsPerWarp], l[kRowsPerWarp], acc[kRowsPerWarp][kDimsPerLane];
  int64_t qpos[kRowsPerWarp];
  int head[kRowsPerWarp];
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    int const g = chunk * kRowsPerCta + warp + kWarps * i;
    int const t = g / p.group;
    head[i] = kv_head * p.group + g % p.group;
    qpos[i] = L - p.q_len + t;
    m[i] = -INFINITY;
    l[i] = 0;
#pragma unroll
    for (int e = 0; e < kDimsPerLane; ++e) acc[i][e] = 0;
  }

  T const* k_base = static_cast<T const*>(p.k) + int64_t(kv_head) * p.k_stride_head;
  T const* v_base = static_cast<T const*>(p.v) + int64_t(kv_head) * p.v_stride_head;
  int32_t const* pages = p.page_table + int64_t(b) * p.pt_stride;
  int64_t const page_mask = (int64_t(1) << p.page_shift) - 1;

  auto load_tile = [&](int stage, int64_t tile_start) {
    T* k_dst = kv_s + size_t(stage) * 2 * kTileKeys * kPitch;
    T* v_dst = k_dst + kTileKeys * kPitch;
#pragma unroll
    for (int i = 0; i < kChunksPerThread; ++i) {
      int const c = threadIdx.x + i * kThreads;
      int const key = c / kChunksPerKey, part = c % kChunksPerKey;
      int64_t const pos = tile_start + key;
      bool const valid = pos < t_end;
      int64_t page = 0, off = 0;
      if (valid) {
        page = pages[pos >> p.page_shift];
        off = pos & page_mask;
      }
      T const* ks = k_base + page * p.k_stride_page + off * p.k_stride_token + part * 8;
      T const* vs = v_base + page * p.v_stride_page + off * p.v_stride_token + part * 8;
      cp_async_16(k_dst + key * kPitch + part * 8, ks, valid);
      cp_async_16(v_dst + key * kPitch + part * 8, vs, valid);
    }
  };

  int64_t const num_tiles = t_end > t_begin ? (t_end - t_begin + kTileKeys - 1) / kTileKeys : 0;
  if (num_tiles > 0) load_tile(0, t_begin);
  cp_async_commit();
  for (int64_t tile = 0; tile < num_tiles; ++tile) {
    int const stage = tile & 1;
    if (tile + 1 < num_tiles) load_tile(stage ^ 1, t_begin + (tile + 1) * kTileKeys);
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();  // the tile (and, first time, q_s) is visible to every warp

    T const* k_tile = kv_s + size_t(stage) * 2 * kTileKeys * kPitch;
    T const* v_tile = k_tile + kTileKeys * kPitch;
    int64_t const key_pos = t_begin + tile * kTileKeys + lane;
    bool const key_valid = key_pos < t_end;

    // Scores: lane = key.
    float s[kRowsPerWarp];
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; ++i) s[i] = 0;
#pragma unroll 4
    for (int d = 0; d < D; d += 8) {
      float kf[8];
      Vec8<T>::to_float(*reinterpret_cast<uint4 const*>(k_tile + lane * kPitch + d), kf);
#pragma unroll
      for (int i = 0; i < kRowsPerWarp; ++i) {
        float4 const q0 = *reinterpret_cast<float4 const*>(q_s + (warp + kWarps * i) * D + d);
        float4 const q1 = *reinterpret_cast<float4 const*>(q_s + (warp + kWarps * i) * D + d + 4);
        s[i] += q0.x * kf[0] + q0.y * kf[1] + q0.z * kf[2] + q0.w * kf[3] + q1.x * kf[4] + q1.y * kf[5] +
                q1.z * kf[6] + q1.w * kf[7];
      }
    }
    // Masks, softcap, ALiBi; online softmax per row.
    float pr[kRowsPerWarp];
#pragma unroll
    for (int i = 0; i < kRowsPerWarp; ++i) {
      bool visible = key_valid && key_pos <= qpos[i] && warp + kWarps * i < rows_here;
      if (p.window_left >= 0) visible = visible && key_pos >= qpos[i] - p.window_left;
      float score = s[i];
      if (p.softcap > 0) score = p.softcap * tanhf(score / p.softcap);
      if (p.alibi != nullptr && visible) score -= p.alibi[head[i]] * static_cast<float>(qpos[i] - key_pos);
      score = visible ? score : -INFINITY;
      float const m_new = fmaxf(m[i], warp_max(score));
      float const corr = m_new == -INFINITY ? 1.f : __expf(m[i] - m_new);
      pr[i] = m_new == -INFINITY ? 0.f : __expf(score - m_new);
      l[i] = l[i] * corr + warp_sum(pr[i]);
      m[i] = m_new;
#pragma unroll
      for (int e = 0; e < kDimsPerLane; ++e) acc[i][e] *= corr;
    }
    // P . V: lane owns dims [lane * kDimsPerLane, +kDimsPerLane).
#pragma unroll 4
    for (int j = 0; j < kTileKeys; ++j) {
      float vf[kDimsPerLane];
      T const* vrow = v_tile + j * kPitch + lane * kDimsPerLane;
#pragma unroll
      for (int e = 0; e < kDimsPerLane; ++e) vf[e] = static_cast<float>(vrow[e]);
#pragma unroll
      for (int i = 0; i < kRowsPerWarp; ++i) {
        float const pj = __shfl_sync(0xffffffffu, pr[i], j);
#pragma unroll
        for (int e = 0; e < kDimsPerLane; ++e) acc[i][e] += pj * vf[e];
      }
    }
    __syncthreads();  // every warp is done with this stage before it is refilled
  }
  cp_async_wait<0>();

  allow_next_grid();  // next: merge_splits_kernel (waits before reading the scratch)

  bool const single = n == 1;
#pragma unroll
  for (int i = 0; i < kRowsPerWarp; ++i) {
    int const r = warp + kWarps * i;
    if (r >= rows_here) continue;
    int const g = chunk * kRowsPerCta + r;
    int const t = g / p.group, h = head[i];
    int64_t const token = int64_t(b) * p.q_len + t;
    if (single) {
      float denom = l[i];
      if (p.sinks != nullptr && m[i] != -INFINITY) denom += __expf(p.sinks[h] - m[i]);
      float const inv = denom > 0 ? 1.f / denom : 0.f;
      T* o = static_cast<T*>(p.out) + token * p.out_stride_token + h * p.out_stride_head + lane * kDimsPerLane;
#pragma unroll
      for (int e = 0; e < kDimsPerLane; ++e) o[e] = from_float<T>(acc[i][e] * inv);
      if (p.lse != nullptr && lane == 0) {
        p.lse[token * p.lse_stride_token + h] = m[i] == -INFINITY ? -INFINITY : m[i] + __logf(denom);
      }
    } else {
      int64_t const prow = ((int64_t(b) * p.max_splits + split) * p.q_len + t) * p.num_q_heads + h;
      float const inv = l[i] > 0 ? 1.f / l[i] : 0.f;
      float* o = p.part_o + prow * D + lane * kDimsPerLane;
#pragma unroll
      for (int e = 0; e < kDimsPerLane; ++e) o[e] = acc[i][e] * inv;
      if (lane == 0) p.part_lse[prow] = l[i] > 0 ? m[i] + __logf(l[i]) : -INFINITY;
    }
  }
}

}  // namespace baton::attention
