// plan_kv_splits kernel (decode-metadata.md section 3): SGLang's split heuristic on device,
// so a captured attention grid (sized by max_splits) serves every batch of lengths.
//
// Grid map: one CTA of 256 threads; a max/min/sum reduction over the batch (and, for the
// balanced plan, plan_waves -- two waves for ragged batches -- and its second pass:
// balanced_chunk2, which also sends poor one-wave fits past the wave), then one split
// count per request. Bytes are negligible (8 B per request); the kernel is a chain of
// dependent steps: every warp reduces the batch itself (lanes over the requests, redux sums),
// and each bisection runs as rounds of 3 levels, a warp per node, one barrier per round
// (fit_chunk). 1.9-2.3 us at batches that fill the wave, 2.2-4.7 at batches of 1-8, 7.3 us
// with both bisections (22 x 32K); docs/benchmarking.md, forty-sixth session.
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
  __shared__ long long max_len_s, min_len_s;
  __shared__ unsigned long long total_s;
  if (threadIdx.x == 0) {
    max_len_s = 0;
    min_len_s = INT64_MAX;
    total_s = 0;
  }
  __syncthreads();
  auto len_of = [&](int i) -> int64_t { return p.cache_seqlens[i] < 0 ? 0 : p.cache_seqlens[i]; };
  long long max_len = 0, min_len = INT64_MAX, total = 0;
  for (int i = threadIdx.x; i < p.batch_size; i += kThreads) {
    long long const len = len_of(i);
    max_len = len > max_len ? len : max_len;
    min_len = len < min_len ? len : min_len;
    total += len;
  }
  block_max(&max_len_s, max_len);
  block_min(&min_len_s, min_len);
  block_add(&total_s, static_cast<unsigned long long>(total));
  __syncthreads();
  int64_t const sum = static_cast<int64_t>(total_s);
  SplitPlanDevice const planned = plan_waves(p.plan, p.batch_size, sum, max_len_s, min_len_s);
  int64_t const chunk2 =
      planned.ctas_per_wave > 0 ? balanced_chunk2(len_of, p.batch_size, sum, max_len_s, planned) : 0;
  for (int i = threadIdx.x; i < p.batch_size; i += kThreads) {
    p.plan.num_kv_splits[i] =
        plan_one(p.cache_seqlens[i], max_len_s, min_len_s, sum, chunk2, p.batch_size, planned);
  }
}

}  // namespace baton::metadata
