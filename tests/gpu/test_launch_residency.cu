// Where decode_attention's producer triggers with early reads, and the residency arithmetic
// that decides it (detail::ctas_beside_per_sm): the arithmetic against the CUDA occupancy API
// on the library's own kernels, and the decision on the shapes it was measured on.
#include <gtest/gtest.h>

#include <cuda_bf16.h>

#include "attention/merge_splits_kernel.cuh"
#include "attention/split_kv_kernel.cuh"
#include "attention/trigger_plan.h"
#include "common/gpu.h"
#include "gpu/attention_case.h"
#include "runtime/launch.h"

namespace baton::test {
namespace {

using LaunchResidency = GpuTest;

int occupancy(void const* func, int threads, size_t smem) {
  int n = 0;
  EXPECT_EQ(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, func, threads, smem), cudaSuccess);
  return n;
}

// Alone (beside 0 CTAs), a kernel's count is the occupancy API's; beside k CTAs of itself, what
// is left of it; beside more than fit, 0. The producers are bound by shared memory (and the
// wide one by registers too), the reducer by registers: 6 CTAs of 4 warps at ~80 registers.
TEST_F(LaunchResidency, MatchesTheOccupancyApi) {
  size_t const smem = attention::MmaSmem<128, attention::kDefaultStages>::launch_bytes(false);
  void const* narrow =
      reinterpret_cast<void const*>(attention::split_kv_kernel<__nv_bfloat16, 128, attention::kDefaultStages, true>);
  void const* wide =
      reinterpret_cast<void const*>(attention::split_kv_kernel<__nv_bfloat16, 128, attention::kDefaultStages, false>);
  void const* merge = reinterpret_cast<void const*>(attention::merge_splits_kernel<__nv_bfloat16, 128>);
  for (void const* f : {narrow, wide}) {
    ASSERT_EQ(cudaFuncSetAttribute(f, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)), cudaSuccess);
  }
  detail::KernelShape const shapes[] = {{narrow, attention::kThreads, smem, "narrow producer"},
                                        {wide, attention::kThreads, smem, "wide producer"},
                                        {merge, 128, 0, "small reducer"}};
  for (detail::KernelShape const& k : shapes) {
    SCOPED_TRACE(k.name);
    int const alone = occupancy(k.func, k.threads, k.smem_bytes);
    ASSERT_GE(alone, 1);
    for (int beside = 0; beside <= alone + 1; ++beside) {
      int n = -1;
      ASSERT_TRUE(detail::ctas_beside_per_sm(k, k, beside, &n).is_ok());
      EXPECT_EQ(n, beside <= alone ? alone - beside : 0) << "beside " << beside << " of itself";
    }
  }
  cudaFuncAttributes merge_attr{};
  ASSERT_EQ(cudaFuncGetAttributes(&merge_attr, merge), cudaSuccess);
  int const merge_regs_bound = 65536 / 4 / ((merge_attr.numRegs * 32 + 255) / 256 * 256);  // per partition
  EXPECT_EQ(occupancy(merge, 128, 0), merge_regs_bound) << "the reducer case no longer tests the register arithmetic";
  // Beside two producer CTAs (a full wave), fewer reducer CTAs fit than alone.
  for (int p = 0; p < 2; ++p) {
    int n = -1;
    ASSERT_TRUE(detail::ctas_beside_per_sm(shapes[2], shapes[p], 2, &n).is_ok());
    EXPECT_GE(n, 0);
    EXPECT_LT(n, occupancy(merge, 128, 0));
  }
}

// The decision on the shapes it was measured on (docs/benchmarking.md, nineteenth session):
// with early reads and a small reducer whose CTAs fit beside the producer's (8x1K: 256 rows,
// two reducer CTAs per SM beside the narrow producer's two), right after the wait; with 8
// draft tokens (256 rows; the paired wide producer's 255 registers leave room for no reducer
// CTA beside it, the 16-row wide form's 204 for one, fewer than a CTA per row), without
// early reads, and with the medium reducer, after the KV loop; single launch with early reads,
// after the wait. Each case then runs and is checked against the reference, so that both
// trigger places run under early reads with the small reducer (no other test runs the small
// reducer that does not fit beside, with early reads, at head_dim 128).
TEST_F(LaunchResidency, EarlyTriggerWhereTheReducerFits) {
  struct Case {
    char const* what;
    int batch, q_len;
    bool early, single;
    bool expect;
  };
  Case const cases[] = {{"8x1K, early", 8, 1, true, false, true},
                        {"1x1K, early", 1, 1, true, false, true},
                        {"8x1K, default", 8, 1, false, false, false},
                        {"1x1K with 8 draft tokens, early", 1, 8, true, false, false},
                        {"16 requests (medium reducer), early", 16, 1, true, false, false},
                        {"8x1K single launch, early", 8, 1, true, true, true}};
  for (Case const& c : cases) {
    SCOPED_TRACE(c.what);
    AttnShape s;
    s.lens.assign(c.batch, 1024);
    s.q_len = c.q_len;
    s.page_size = 64;
    s.max_splits = 32;
    s.splits.assign(c.batch, 8);
    s.early = c.early;
    s.single_launch = c.single;
    DeviceAttention d(s);
    bool after_wait = !c.expect;
    ASSERT_TRUE(attention::planned_trigger_after_wait(d.args, &after_wait).is_ok());
    EXPECT_EQ(after_wait, c.expect);
    d.poison();
    BATON_ASSERT_OK(decode_attention(d.args, d.ws(), {nullptr, PdlMode::kOn}));
    CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_TRUE(d.matches_reference());
  }
}

}  // namespace
}  // namespace baton::test
