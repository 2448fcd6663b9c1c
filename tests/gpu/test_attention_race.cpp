// The PDL race harness on decode_attention: the producer (split_kv) must wait before reading
// q, lengths, page table and split counts written by the previous kernel; the reducer
// (merge_splits) must wait before reading the producer's scratch, which is poisoned too.
#include <gtest/gtest.h>

#include "baton/attention.h"
#include "common/gpu.h"
#include "common/race_harness.h"
#include "gpu/attention_case.h"

namespace baton::test {
namespace {

class AttentionRace : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    if (pdl_disabled_by_env()) GTEST_SKIP() << "BATON_PDL=0: the race harness needs PDL";
  }
};

template <class T>
DeviceBuffer<T> copy_of(DeviceBuffer<T> const& b) {
  return DeviceBuffer<T>::from(b.download());
}

void run_harness(AttnShape const& s) {
  DeviceAttention d(s);
  auto src_q = copy_of(d.q);
  auto src_lens = copy_of(d.seqlens);
  auto src_pt = copy_of(d.page_table);
  auto src_splits = copy_of(d.splits);
  RaceHarness h;
  h.inputs = {{d.q.get(), src_q.get(), src_q.bytes(), 0xFF},               // NaN queries
              {d.seqlens.get(), src_lens.get(), src_lens.bytes(), 0x00},   // empty requests
              {d.page_table.get(), src_pt.get(), src_pt.bytes(), 0x00}};   // every page 0
  if (d.splits.size()) h.inputs.push_back({d.splits.get(), src_splits.get(), src_splits.bytes(), 0x00});
  h.outputs = {{d.out.get(), d.out.bytes(), 0xFF}, {d.lse.get(), d.lse.bytes(), 0xFF},
               {d.workspace.get(), d.workspace.bytes(), 0xFF}};
  h.consumer = [&](cudaStream_t stream) { return decode_attention(d.args, d.ws(), {stream, PdlMode::kOn}); };
  h.check = [&] { return d.matches_reference(); };
  EXPECT_TRUE(h.run());
}

TEST_F(AttentionRace, ProducerAndReducerWait) {
  AttnShape s;
  s.lens = {3000, 17, 800, 1};
  s.max_splits = 8;
  s.splits = {8, 1, 3, 2};
  s.sinks = true;
  run_harness(s);
}

TEST_F(AttentionRace, SingleSplitProducerWaits) {
  AttnShape s;
  s.lens = {1024, 5};
  run_harness(s);
}

}  // namespace
}  // namespace baton::test
