// The decode-attention producer's building blocks (split_kv_kernel.cuh): the K/V tile and its
// shared-memory layout, the tensor-core ops on it, and the CTA's packed query rows.
#pragma once

#include <type_traits>

#include "attention/attention_common.cuh"

namespace baton::attention {

constexpr int kMmaTileKeys = 16;
static_assert(kMmaTileKeys == int(kSplitAlign), "split ranges (split_range.h) are cut at whole tiles");
#ifndef BATON_ATTENTION_STAGES
#define BATON_ATTENTION_STAGES 3  // experiments only: -DBATON_ATTENTION_STAGES=2
#endif
constexpr int kDefaultStages = BATON_ATTENTION_STAGES;  // tiles in flight per warp (3: 2 CTAs per SM at D = 128)

// K/V tile rows in shared memory: D elements each, unpadded, so that every row starts on a
// 128-byte boundary, with 16-byte chunk c of row r stored at chunk c ^ (r % 8) so that the 8
// rows an ldmatrix reads at one chunk fall in 8 different bank groups. Padded rows (D + 8,
// the layout before) kept ldmatrix conflict-free too, but rows off the 128-byte grid made the
// cp.async stream ~8% slower from DRAM (bench/probes/stream_probe.cu: 32x8K 233 -> 252 us
// with 272- or 288-byte rows; 256-byte rows, plain or swizzled, 232-234).
template <int D>
__device__ __forceinline__ int kv_smem(int r, int c) {  // element offset of chunk c of row r
  static_assert(D / 8 >= 8, "the swizzle permutes 8 chunks of a row");
  return r * D + ((c ^ (r & 7)) << 3);
}

// kRows: the CTA's packed rows (16, or 32 in the paired wide form: row_chunks.h).
template <int D, int kStagesT, int kRows = kRowsPerCta>
struct MmaSmem {
  static constexpr int kQPitch = D + 8;  // q rows: elements; 16-byte padded, ldmatrix conflict-free
  static constexpr size_t kQBytes = size_t(kRows) * kQPitch * 2;
  static_assert(kQBytes % 128 == 0, "the K/V tiles after q start on a 128-byte boundary");
  static constexpr size_t kStageBytes = size_t(2) * kMmaTileKeys * D * 2;  // K and V tiles (kv_smem)
  static constexpr int kStages = kStagesT;  // tiles in flight per warp
  static constexpr size_t kWarpBytes = kStages * kStageBytes;
  static constexpr size_t kMergeBytes = size_t(kWarps) * kRows * (D + 8) * sizeof(float);  // attend_split's merge rows
  static constexpr size_t kKvBytes = kWarps * kWarpBytes;
  static constexpr size_t kBytes = kQBytes + (kKvBytes > kMergeBytes ? kKvBytes : kMergeBytes);
  // kChain instances: then the next item's first page ids, two per lane (attend_split).
  static constexpr size_t kIdsBytes = size_t(kWarps) * 32 * 2 * sizeof(int32_t);
  static constexpr size_t kChainBytes = kBytes + kIdsBytes;
  // What a launch of the producer instance gives it (every launch site sizes it from here).
  static constexpr size_t launch_bytes(bool chain) { return chain ? kChainBytes : kBytes; }
};

// D[16 x 8] += A[16 x 16] . B[16 x 8] in fp32 (AB: the PTX type of A and B).
#define BATON_MMA_M16N8K16(AB, d, a, b0, b1)                                                          \
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." AB "." AB ".f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, " \
               "{%8,%9}, {%0,%1,%2,%3};"                                                              \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])                                        \
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1))

// The tensor-core op and the float -> 2 x T packing for T = bf16 or fp16.
template <class T>
struct MmaOp {
  static_assert(std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>, "bf16 or fp16");
  static __device__ __forceinline__ void run(float (&d)[4], uint32_t const (&a)[4], uint32_t b0, uint32_t b1) {
    if constexpr (std::is_same_v<T, __nv_bfloat16>) {
      BATON_MMA_M16N8K16("bf16", d, a, b0, b1);
    } else {
      BATON_MMA_M16N8K16("f16", d, a, b0, b1);
    }
  }
  static __device__ __forceinline__ uint32_t pack(float lo, float hi) { return pack_pair<T>(lo, hi); }
};
#undef BATON_MMA_M16N8K16

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], void const* smem) {
  unsigned const addr = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], void const* smem) {
  unsigned const addr = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}

// Transpose of an 8 x 8 b16 matrix held in the standard fragment layout (lane: row lane / 4,
// columns (lane % 4) * 2, + 1), returned in the same layout.
__device__ __forceinline__ uint32_t movmatrix_trans(uint32_t x) {
  uint32_t y;
  asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;" : "=r"(y) : "r"(x));
  return y;
}

// acc[i][e] *= f_e for every accumulator fragment i: the online softmax's rescale of O when
// a row's running max moved (f_e: the factor of element e's row).
template <int N>
__device__ __forceinline__ void scale_fragments(float (&acc)[N][4], float f0, float f1, float f2, float f3) {
#pragma unroll
  for (int i = 0; i < N; ++i) {
    acc[i][0] *= f0;
    acc[i][1] *= f1;
    acc[i][2] *= f2;
    acc[i][3] *= f3;
  }
}

// The CTA's packed rows r (= t * group + g): draft token t and query head h, computed once per
// CTA from kernel parameters (before the PDL wait) instead of a division by the group at each
// use on the critical path. Rows past the live ones hold harmless values (never stored).
struct RowTable {
  int t[kPairRowsPerCta], h[kPairRowsPerCta];  // the first 16 or 32 (the CTA's kRows) are set
};

}  // namespace baton::attention
