// The launch helper's residency arithmetic (detail::ctas_beside_per_sm), which decides where
// decode_attention's producer triggers with early reads (decode_attention.cu): checked on the
// library's own kernels against the CUDA occupancy API.
#include <gtest/gtest.h>

#include <cuda_bf16.h>

#include "attention/merge_splits_kernel.cuh"
#include "attention/split_kv_kernel.cuh"
#include "common/gpu.h"
#include "runtime/launch.h"

namespace baton::test {
namespace {

using LaunchResidency = GpuTest;

detail::KernelTraits const kTraits{"test.residency", false};

int occupancy(void const* func, int threads, size_t smem) {
  int n = 0;
  EXPECT_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, func, threads, smem), cudaSuccess);
  return n;
}

// Alone (beside 0 CTAs), a kernel's count is the occupancy API's; beside k CTAs of itself, it
// is what is left of that count; beside more than fit, 0.
TEST_F(LaunchResidency, MatchesTheOccupancyApi) {
  using Smem = attention::MmaSmem<128, attention::kDefaultStages>;
  auto* narrow = attention::split_kv_kernel<__nv_bfloat16, 128, attention::kDefaultStages, true>;
  auto* wide = attention::split_kv_kernel<__nv_bfloat16, 128, attention::kDefaultStages, false>;
  size_t const smem = Smem::launch_bytes(false);
  for (auto* producer : {narrow, wide}) {
    void const* f = reinterpret_cast<void const*>(producer);
    ASSERT_EQ(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)), cudaSuccess);
    detail::KernelShape const self{f, attention::kThreads, smem};
    int const alone = occupancy(f, attention::kThreads, smem);
    ASSERT_GE(alone, 1);
    for (int k = 0; k <= alone + 1; ++k) {
      int n = -1;
      ASSERT_TRUE(detail::ctas_beside_per_sm(self, self, k, kTraits, &n).is_ok());
      EXPECT_EQ(n, k <= alone ? alone - k : 0) << "beside " << k << " of itself";
    }
  }
  void const* merge = reinterpret_cast<void const*>(attention::merge_splits_kernel<__nv_bfloat16, 128>);
  detail::KernelShape const reducer{merge, 128, 0};
  int n = -1;
  ASSERT_TRUE(detail::ctas_beside_per_sm(reducer, reducer, 0, kTraits, &n).is_ok());
  EXPECT_EQ(n, occupancy(merge, 128, 0));
  // Beside a producer, fewer reducer CTAs fit than alone, and fewer beside two than one.
  detail::KernelShape const prod{reinterpret_cast<void const*>(wide), attention::kThreads, smem};
  int one = -1, two = -1;
  ASSERT_TRUE(detail::ctas_beside_per_sm(reducer, prod, 1, kTraits, &one).is_ok());
  ASSERT_TRUE(detail::ctas_beside_per_sm(reducer, prod, 2, kTraits, &two).is_ok());
  EXPECT_LT(one, n);
  EXPECT_LE(two, one);
  EXPECT_GE(two, 0);
}

}  // namespace
}  // namespace baton::test
