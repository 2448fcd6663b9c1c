// The PDL race harness on decode_attention: the producer (split_kv) must wait before reading
// q, lengths, page table and split counts written by the previous kernel; the reducer
// (merge_splits) must wait before reading the producer's scratch, which is poisoned too.
#include <gtest/gtest.h>

#include <algorithm>

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
  // The workspace is poisoned too; single launch's counters stay as the last call left them (0).
  h.outputs = {{d.out.get(), d.out.bytes(), 0xFF}, {d.lse.get(), d.lse.bytes(), 0xFF},
               {d.workspace.get(), d.workspace.bytes(), 0xFF}};
  h.consumer = [&](cudaStream_t stream) { return decode_attention(d.args, d.ws(), {stream, PdlMode::kOn}); };
  h.check = [&] { return d.matches_reference(); };
  EXPECT_TRUE(h.run());
}

// inputs_written_before_chain: lengths, page table and split counts are in place before the
// chain; the stalled predecessor writes q and this step's new K/V rows (the last q_len
// positions of each request), which the producer must still read after its wait.
void run_early_harness(AttnShape s) {
  s.early = true;
  DeviceAttention d(s);
  auto src_q = copy_of(d.q);
  auto src_k = copy_of(d.k);
  auto src_v = copy_of(d.v);
  RaceHarness h;
  h.inputs = {{d.q.get(), src_q.get(), src_q.bytes(), 0xFF}};  // NaN queries
  size_t const row_bytes = size_t(s.head_dim) * 2;
  for (int b = 0; b < int(s.lens.size()); ++b) {
    for (int t = std::max(0, s.lens[b] - s.q_len); t < s.lens[b]; ++t) {
      for (int kvh = 0; kvh < s.num_kv_heads; ++kvh) {
        size_t const off = size_t(d.c.kv_offset(b, t, kvh)) * 2;
        h.inputs.push_back({reinterpret_cast<char*>(d.k.get()) + off, reinterpret_cast<char*>(src_k.get()) + off,
                            row_bytes, 0xFF});
        h.inputs.push_back({reinterpret_cast<char*>(d.v.get()) + off, reinterpret_cast<char*>(src_v.get()) + off,
                            row_bytes, 0xFF});
      }
    }
  }
  h.outputs = {{d.out.get(), d.out.bytes(), 0xFF}, {d.lse.get(), d.lse.bytes(), 0xFF},
               {d.workspace.get(), d.workspace.bytes(), 0xFF}};
  h.consumer = [&](cudaStream_t stream) { return decode_attention(d.args, d.ws(), {stream, PdlMode::kOn}); };
  h.check = [&] { return d.matches_reference(); };
  EXPECT_TRUE(h.run());
}

TEST_F(AttentionRace, EarlyReadsStillWaitForQAndNewKeys) {
  AttnShape s;
  s.lens = {3000, 17, 40, 2};
  s.q_len = 2;
  s.num_q_heads = 8;
  s.num_kv_heads = 2;
  s.page_size = 16;
  s.max_splits = 8;
  s.splits = {8, 1, 3, 2};
  run_early_harness(s);
}

AttnShape split_case(bool single_launch) {
  AttnShape s;
  s.lens = {3000, 17, 800, 1};
  s.max_splits = 8;
  s.splits = {8, 1, 3, 2};
  s.sinks = true;
  s.single_launch = single_launch;
  return s;
}

TEST_F(AttentionRace, ProducerAndReducerWait) { run_harness(split_case(false)); }

// Single launch: the producer's last CTA merges; its wait still guards every input.
TEST_F(AttentionRace, SingleLaunchProducerWaits) { run_harness(split_case(true)); }

TEST_F(AttentionRace, SingleSplitProducerWaits) {
  AttnShape s;
  s.lens = {1024, 5};
  run_harness(s);
}

}  // namespace
}  // namespace baton::test
