// plan_kv_splits kernel (decode-metadata.md section 3): SGLang's split heuristic on device,
// so a captured attention grid (sized by max_splits) serves every batch of lengths.
//
// Grid map: one CTA of 256 threads; a max/min/sum reduction over the batch (and, for the
// balanced plan, plan_waves -- two waves for ragged batches -- and its second pass:
// balanced_chunk2, which also sends poor one-wave fits past the wave), then one split
// count per request. Bytes are negligible (8 B per request); the kernel is a chain of
// dependent steps: every warp reduces the batch itself (lanes over the requests, redux sums;
// no barrier), and each bisection runs as rounds of 3 levels, a warp per node, one barrier per
// round (fit_chunk). 1.5-1.7 us at batches that fill the wave and at 1 x 1K, 3.0 at 8 x 1K, 6.7
// us with both bisections (22 x 32K); docs/benchmarking.md, forty-sixth session.
//
// PDL contract: cache_seqlens comes from the metadata kernel of the same step, so nothing is
// read before wait_on_prior_grid(). Triggers first thing (next: the attention producer,
// which waits for completion before reading num_kv_splits).
#pragma once

#include <cstdint>

#include "common/pdl.cuh"
#include "metadata/metadata_common.cuh"

namespace baton::metadata {

struct PlanKvSplitsParams {
  int32_t const* cache_seqlens;  // [batch_size]
  int batch_size;
  SplitPlanDevice plan;
};

template <bool kWait = true>
__global__ void __launch_bounds__(kThreads) plan_kv_splits_kernel(__grid_constant__ PlanKvSplitsParams const p) {
  allow_next_grid();  // next: the attention producer (waits for completion)
  if constexpr (kWait) wait_on_prior_grid();
  // Every warp reduces the batch itself (lanes over the requests): no shared memory, no barrier.
  auto len_of = [&](int i) -> int64_t { return p.cache_seqlens[i] < 0 ? 0 : p.cache_seqlens[i]; };
  unsigned max_len = 0, min_len = 0xffffffffu;  // lengths are int32: < 2^31
  unsigned long long total = 0;
#pragma unroll 4  // several loads in flight per lane at large batches (256: 8 per lane)
  for (int i = threadIdx.x % 32; i < p.batch_size; i += 32) {
    unsigned const len = static_cast<unsigned>(len_of(i));
    max_len = len > max_len ? len : max_len;
    min_len = len < min_len ? len : min_len;
    total += len;
  }
  int64_t const max_len_s = __reduce_max_sync(0xffffffffu, max_len);
  unsigned const min_u = __reduce_min_sync(0xffffffffu, min_len);
  int64_t const min_len_s = min_u == 0xffffffffu ? INT64_MAX : min_u;  // empty batch: as before
  int64_t const sum = static_cast<int64_t>(warp_sum(total));
  SplitPlanDevice const planned = plan_waves(p.plan, p.batch_size, sum, max_len_s, min_len_s);
  int64_t const chunk2 =
      planned.ctas_per_wave > 0 ? balanced_chunk2(len_of, p.batch_size, sum, max_len_s, planned) : 0;
  for (int i = threadIdx.x; i < p.batch_size; i += kThreads) {
    p.plan.num_kv_splits[i] =
        plan_one(p.cache_seqlens[i], max_len_s, min_len_s, sum, chunk2, p.batch_size, planned);
  }
}

}  // namespace baton::metadata
