// README.md's decode_attention example (tests/common/readme_example.h) on real buffers: its
// plan and call over a ragged batch, checked against the fp64 reference. Needs both areas.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include "common/gpu.h"
#include "common/readme_example.h"
#include "gpu/attention_case.h"

namespace baton::test {
namespace {

class AttentionReadmeGpu : public GpuTest {};

// The setup's bounds, then the step (plan_kv_splits, decode_attention) over buffers laid out
// as the README's views take them: q and out contiguous, an NHD pool of 64-token pages, a
// contiguous page table. Outputs poisoned first; lse is not requested, so only out is checked.
TEST_F(AttentionReadmeGpu, ExampleRunsAgainstTheReference) {
  std::vector<int> const lens = {1, 100, 1000, 3000};
  int const batch = static_cast<int>(lens.size());
  Planned planned;
  BATON_ASSERT_OK(readme_setup(batch, 32, 8, &planned));
  AttnShape s;
  s.lens = lens;
  s.page_size = 64;
  s.max_splits = planned.max_splits;
  s.splits.assign(batch, 1);  // allocates num_kv_splits; the example's plan overwrites it
  DeviceAttention d(s);
  ASSERT_EQ(d.workspace.size(), std::max<size_t>(1, planned.ws_bytes));
  d.poison();
  // The scratch as a user allocates it: cudaMalloc'd, never written (the other tests poison
  // theirs). Under compute-sanitizer --tool initcheck this shows what the call reads of it.
  DeviceBuffer<unsigned char> fresh_workspace(std::max<size_t>(1, planned.ws_bytes));
  int64_t const num_pages = d.args.k_cache.shape[0];
  int64_t const max_pages = d.args.page_table.stride[0];  // the rows' full width: a contiguous table
  BATON_ASSERT_OK(readme_step(batch, 32, 8, num_pages, max_pages, planned.ctas_per_wave, planned.max_splits,
                              d.q.get(), d.k.get(), d.v.get(), d.seqlens.get(), d.page_table.get(), d.splits.get(),
                              d.out.get(), fresh_workspace.get(), planned.ws_bytes, nullptr));
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<int32_t> const splits = d.splits.download();
  EXPECT_GT(*std::max_element(splits.begin(), splits.end()), 1) << "the plan split no request: the reducer never ran";
  EXPECT_TRUE(d.matches_reference(/*check_lse=*/false));
}

}  // namespace
}  // namespace baton::test
