// The PDL race harness on decode_attention: the producer (split_kv) must wait before reading
// q, lengths, page table and split counts written by the previous kernel; the reducer
// (merge_splits) must wait before reading the producer's scratch, which is poisoned too. A
// mutation test proves the harness catches a producer compiled without its wait.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <string>
#include <vector>

#include "attention/merge_splits_kernel.cuh"
#include "attention/params.h"
#include "attention/split_kv_kernel.cuh"
#include "attention/validate.h"
#include "baton/attention.h"
#include "runtime/launch.h"
#include "common/gpu.h"
#include "common/race_harness.h"
#include "gpu/attention_case.h"

namespace baton::test {
namespace {

using AttentionRace = RaceTest;

template <class T>
DeviceBuffer<T> copy_of(DeviceBuffer<T> const& b) {
  return DeviceBuffer<T>::from(b.download());
}

using Consumer = std::function<Status(DeviceAttention&, cudaStream_t)>;

Status library_call(DeviceAttention& d, cudaStream_t stream) {
  return decode_attention(d.args, d.ws(), {stream, PdlMode::kOn});
}

// The consumer's outputs (out's and lse's bits) from a call with no race: its inputs in place,
// outputs poisoned, synchronised.
std::vector<unsigned char> unraced_bytes(DeviceAttention& d, Consumer const& consumer) {
  d.poison();
  Status const st = consumer(d, nullptr);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  return d.output_bytes();
}

// The harness's check: the reference, and the un-raced call's bits (the kernels are
// deterministic), so that an early read that changes the plan but not the accuracy fails too.
::testing::AssertionResult matches_unraced(DeviceAttention const& d, std::vector<unsigned char> const& want) {
  ::testing::AssertionResult r = d.matches_reference();
  if (!r) return r;
  std::vector<unsigned char> const got = d.output_bytes();
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "output sizes differ";
  return bitwise_equal(got.data(), want.data(), got.size(), "raced call against the un-raced call");
}

// The harness on s with `consumer`: how it ended, and its message in *message.
RaceHarness::Outcome harness_outcome(AttnShape const& s, Consumer const& consumer, std::string* message) {
  DeviceAttention d(s);
  auto src_q = copy_of(d.q);
  auto src_lens = copy_of(d.seqlens);
  auto src_pt = copy_of(d.page_table);
  auto src_splits = copy_of(d.splits);
  RaceHarness h;
  h.inputs = {{d.q.get(), src_q.get(), src_q.bytes(), 0xFF},               // NaN queries
              {d.seqlens.get(), src_lens.get(), src_lens.bytes(), 0x00},   // empty requests
              {d.page_table.get(), src_pt.get(), src_pt.bytes(), 0x00}};   // every page 0
  // Split counts of 0x7F7F7F7F, which clamp to max_splits: a count read before the wait changes
  // the plan (0 would clamp to one split, a plan that also meets the reference).
  if (d.splits.size()) h.inputs.push_back({d.splits.get(), src_splits.get(), src_splits.bytes(), 0x7F});
  // The workspace is poisoned too; single launch's counters stay as the last call left them (0).
  h.outputs = {{d.out.get(), d.out.bytes(), 0xFF}, {d.lse.get(), d.lse.bytes(), 0xFF},
               {d.workspace.get(), d.workspace.bytes(), 0xFF}};
  std::vector<unsigned char> const want = unraced_bytes(d, consumer);
  h.consumer = [&](cudaStream_t stream) { return consumer(d, stream); };
  h.check = [&] { return matches_unraced(d, want); };
  RaceHarness::Outcome how = RaceHarness::Outcome::kError;
  ::testing::AssertionResult const r = h.run(&how);
  *message = r.message();
  return how;
}

void run_harness(AttnShape const& s) {
  std::string message;
  EXPECT_EQ(harness_outcome(s, library_call, &message), RaceHarness::Outcome::kPassed) << message;
}

// inputs_written_before_chain: lengths, page table and split counts are in place before the
// chain; the stalled predecessor writes q and this step's new K/V rows (the last q_len
// positions of each request), which the producer must still read after its wait. How the
// harness ended with `consumer`, and its message in *message.
// stage_q false: q stays in place and only the new K/V rows are staged. truncate: stage as many
// new K/V rows as the harness takes (64 inputs) and leave the rest in place; otherwise every
// one is staged, or the harness reports an error.
struct EarlyStaging {
  bool stage_q = true;
  bool truncate = false;
};
RaceHarness::Outcome early_harness_outcome(AttnShape s, Consumer const& consumer, std::string* message,
                                           EarlyStaging staging = {}) {
  s.early = true;
  DeviceAttention d(s);
  auto src_q = copy_of(d.q);
  auto src_k = copy_of(d.k);
  auto src_v = copy_of(d.v);
  RaceHarness h;
  if (staging.stage_q) h.inputs = {{d.q.get(), src_q.get(), src_q.bytes(), 0xFF}};  // NaN queries
  size_t const row_bytes = size_t(s.head_dim) * 2;
  auto room = [&] { return !staging.truncate || h.inputs.size() + 2 * s.num_kv_heads <= 64; };
  for (int b = 0; b < int(s.lens.size()) && room(); ++b) {
    for (int t = std::max(0, s.lens[b] - s.q_len); t < s.lens[b] && room(); ++t) {
      for (int kvh = 0; kvh < s.num_kv_heads; ++kvh) {
        size_t const off = size_t(d.c.kv_offset(b, t, kvh)) * 2, v_off = size_t(d.c.v_offset(b, t, kvh)) * 2;
        h.inputs.push_back({reinterpret_cast<char*>(d.k.get()) + off, reinterpret_cast<char*>(src_k.get()) + off,
                            row_bytes, 0xFF});
        h.inputs.push_back({reinterpret_cast<char*>(d.v.get()) + v_off, reinterpret_cast<char*>(src_v.get()) + v_off,
                            row_bytes, 0xFF});
      }
    }
  }
  h.outputs = {{d.out.get(), d.out.bytes(), 0xFF}, {d.lse.get(), d.lse.bytes(), 0xFF},
               {d.workspace.get(), d.workspace.bytes(), 0xFF}};
  std::vector<unsigned char> const want = unraced_bytes(d, consumer);
  h.consumer = [&](cudaStream_t stream) { return consumer(d, stream); };
  h.check = [&] { return matches_unraced(d, want); };
  RaceHarness::Outcome how = RaceHarness::Outcome::kError;
  *message = h.run(&how).message();
  return how;
}

void run_early_harness(AttnShape const& s) {
  std::string message;
  EXPECT_EQ(early_harness_outcome(s, library_call, &message), RaceHarness::Outcome::kPassed) << message;
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

// A warp of kStages or kStages + 1 tiles (or more, when a reducer follows, as here) copies its
// ring's last tile (tile 2 at 3 stages) after the wait (split_kv_item.cuh, `late`). Here that tile
// holds this step's keys: 150 and 140 keys in one split put keys 148-149 in warp 1's tile 2 and
// 138-139 in warp 0's (partial tiles: the row-by-row copy); 160 keys put 158-159 at the end of warp
// 1's full tile 2 (the one-page fast copy); 96 keys put 94-95 in warp 1's tile 1, the late tile of
// a 2-stage build. The late copy must read them after the wait too. The 3000-key request's warps (6
// tiles in 8 splits) are late too, with old keys only in that tile.
TEST_F(AttentionRace, EarlyReadsLateRingTileHoldsNewKeys) {
  AttnShape s;
  s.lens = {150, 140, 160, 96, 3000};
  s.q_len = 2;
  s.num_q_heads = 8;
  s.num_kv_heads = 2;
  s.page_size = 64;
  s.max_splits = 8;
  s.splits = {1, 1, 1, 1, 8};
  run_early_harness(s);
}

// Two row chunks per kv head: group 4 x q_len 8 = 32 rows at head_dim 256 (16 per CTA), group
// 8 x q_len 8 = 64 rows at head_dim 128 (the paired form, 32 per CTA). The 3000-key request's
// warps of 6 tiles copy their ring's last two tiles after the wait (`two_late`; old keys only:
// a warp of that many tiles never has this step's keys in its ring); the 150-key request's
// warps of 3 tiles one, which holds this step's keys 142-149 in warps 0 and 1. q and the new
// keys come after the wait. One kv head: the harness stages at most 64 inputs (q, and 48 new
// K/V rows here).
TEST_F(AttentionRace, EarlyReadsTwoRowChunks) {
  for (int head_dim : {256, 128}) {
    SCOPED_TRACE("head_dim " + std::to_string(head_dim));
    run_early_harness(two_row_chunks_case(head_dim, 1));
  }
}

// The paired form (q_len 8, 32 rows per CTA; one row chunk at group 4, two at group 8): warps
// of exactly kStages + 1 tiles copy their ring's last two tiles after the wait (`two_late`), so
// only tile 0 comes before it; this step's keys are in their tile 3, copied in the loop. Two
// kernels, and single launch (whose `late` rule differs past kStages + 1 tiles; 32 rows hold
// at most 6 splits in its merge, so the 3000-key request takes 6 there).
TEST_F(AttentionRace, EarlyReadsPairedWarpsOfFourTiles) {
  for (int group : {4, 8}) {
    for (bool single : {false, true}) {
      SCOPED_TRACE("group " + std::to_string(group) + (single ? ", single launch" : ", two kernels"));
      AttnShape s = paired_ring_case(1, group);
      s.single_launch = single;
      if (single) {
        s.max_splits = 6;
        s.splits = {1, 1, 6};
        ASSERT_TRUE((attention::single_launch_fits<128, attention::kDefaultStages>(group * s.q_len, s.max_splits)))
            << "single launch would fall back to two kernels: the case would not test it";
      }
      run_early_harness(s);
    }
  }
}

// Pages below 16 keys (the small-page producer instances, every tile row by row; each row's
// copy predicated on old / new keys on either side of the wait): page 1 and 8, this step's
// keys in partial and full tiles, several splits.
TEST_F(AttentionRace, EarlyReadsSmallPagesWaitForNewKeys) {
  for (int page : {1, 8}) {
    SCOPED_TRACE("page " + std::to_string(page));
    AttnShape s;
    s.lens = {150, 160, 1000, 7};
    s.q_len = 2;
    s.num_q_heads = 8;
    s.num_kv_heads = 2;
    s.page_size = page;
    s.max_splits = 4;
    s.splits = {1, 1, 4, 1};
    run_early_harness(s);
  }
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

// The same at pages below 16 keys (the small-page producer instances).
TEST_F(AttentionRace, SmallPagesProducerAndReducerWait) {
  for (int page : {1, 4}) {
    SCOPED_TRACE("page " + std::to_string(page));
    AttnShape s = split_case(false);
    s.page_size = page;
    run_harness(s);
  }
}

// A reducer grid past one wave (80 x 32 = 2560 rows: the large form, a warp per row, split
// count first, trigger at exit) must wait before reading split counts and scratch, as the small grid of
// ProducerAndReducerWait does.
TEST_F(AttentionRace, LargeReducerGridWaits) {
  AttnShape s;
  s.lens.clear();
  s.splits.clear();
  for (int b = 0; b < 80; ++b) {
    s.lens.push_back(b % 7 == 0 ? 1500 : 40 + 13 * b);
    s.splits.push_back(1 + b % 5);
  }
  s.max_splits = 5;
  s.sinks = true;
  run_harness(s);
}

// Single launch: the producer's last CTA merges; its wait still guards every input.
TEST_F(AttentionRace, SingleLaunchProducerWaits) { run_harness(split_case(true)); }

// The paired wide form (group 4 x q_len 8 = 32 rows in one CTA at head_dim 128), split and
// single launch: its waits guard q, the lengths, page table, split counts and scratch too.
TEST_F(AttentionRace, PairedRowsProducerAndReducerWait) {
  for (bool single : {false, true}) {
    SCOPED_TRACE(single ? "single launch" : "two kernels");
    AttnShape s = split_case(single);
    s.q_len = 8;
    s.max_splits = 6;  // 32 rows x 6 splits fit the single-launch merge: single launch is taken
    static_assert(attention::single_launch_fits<128, attention::kDefaultStages>(4 * 8, 6));
    s.splits = {6, 1, 3, 2};
    s.lens = {3000, 17, 800, 8};
    run_harness(s);
  }
}

TEST_F(AttentionRace, SingleSplitProducerWaits) {
  AttnShape s;
  s.lens = {1024, 5};
  run_harness(s);
}

}  // namespace
}  // namespace baton::test

namespace baton::test {
namespace {

// The narrow head_dim-128 producer of element type E (bf16, or SmallPages<bf16> for pages
// below 16 keys) for the batch, with or without its PDL wait.
template <class E>
auto* producer_instance(bool many, bool wait) {
  using attention::kDefaultStages;
  using attention::split_kv_kernel;
  return many ? (wait ? split_kv_kernel<E, 128, kDefaultStages, true, true, true>
                      : split_kv_kernel<E, 128, kDefaultStages, true, false, true>)
              : (wait ? split_kv_kernel<E, 128, kDefaultStages, true, true, false>
                      : split_kv_kernel<E, 128, kDefaultStages, true, false, false>);
}

// Launches the library's producer (split_kv_kernel: bf16, head_dim 128, the narrow form, the
// instance decode_attention picks for the batch and page size: warp-scan search up to
// kFewRequests requests, find_items past it; the small-page instance below 16 keys) directly,
// with or without its PDL wait (kWait), as decode_attention launches it with one split per
// request (no reducer follows): one CTA per (kv head, request), PDL on; default or early reads.
Status launch_producer(DeviceAttention& d, bool wait, cudaStream_t stream) {
  using namespace attention;
  AttentionShape shape;
  BATON_RETURN_IF_ERROR(validate(d.args, &shape));
  AttentionParams const p = make_params(d.args, shape, d.ws());
  if (d.args.max_splits != 1 || p.rows > 8 || shape.head_dim != 128 || d.args.q.dtype != DType::kBFloat16 ||
      d.args.single_launch) {
    return Status::invalid_argument("launch_producer: the case must be bf16, head_dim 128, <= 8 rows, one split");
  }
  using bf16 = __nv_bfloat16;
  bool const many = p.batch > kFewRequests;
  size_t const kSmem = MmaSmem<128, kDefaultStages>::launch_bytes(many);  // kMany instances: kChain
  auto* kernel = p.page_shift < kSmallPageShift ? producer_instance<SmallPages<bf16>>(many, wait)
                                                 : producer_instance<bf16>(many, wait);
  detail::KernelTraits const traits{"decode_attention_mutation", /*waits_on_prior_grid=*/true};
  BATON_RETURN_IF_ERROR(detail::allow_dynamic_smem(reinterpret_cast<void const*>(kernel), traits, kSmem));
  detail::LaunchConfig const config{dim3(unsigned(p.num_kv_heads * p.row_chunks), unsigned(p.batch)), dim3(kThreads),
                                    kSmem};
  return detail::launch(kernel, traits, config, {stream, PdlMode::kOn}, p);
}

// The harness passes the producer launched with its wait and fails (its check, not a launch
// or the stream) the same kernel compiled without it.
void expect_harness_catches_missing_wait(AttnShape const& s) {
  std::string message;
  // Control: the hand-wired launch of the waiting kernel passes.
  auto control = [](DeviceAttention& d, cudaStream_t stream) { return launch_producer(d, true, stream); };
  ASSERT_EQ(harness_outcome(s, control, &message), RaceHarness::Outcome::kPassed)
      << "control launch (with the wait) failed, so the mutation result would mean nothing: " << message;
  // Mutant: the same kernel compiled without griddepcontrol.wait must fail the harness's
  // check -- not its setup, a launch, or the stream.
  auto mutant = [](DeviceAttention& d, cudaStream_t stream) { return launch_producer(d, false, stream); };
  EXPECT_EQ(harness_outcome(s, mutant, &message), RaceHarness::Outcome::kCheckFailed)
      << "the race harness did not catch a producer that reads before griddepcontrol.wait: " << message;
}

// The mutation tests' batch: one split per request, `batch` requests (3: the few-requests
// instance; 40: find_items'), at `page` keys per page.
AttnShape mutation_case(int page, int batch) {
  AttnShape s;
  s.lens = {1024, 5, 300};
  for (int b = 3; b < batch; ++b) s.lens.push_back(20 + 31 * b);
  s.page_size = page;
  return s;
}

// With early reads the producer reads lengths, page table and old K/V before its wait, and q
// and this step's new K/V rows after it; the early harness stages only those. The same kernel
// without its wait must fail it (it would read them before the stalled kernel wrote them), with
// q staged and with only the new rows staged, at page 16 and page 2, few requests and many.
TEST_F(AttentionRace, HarnessCatchesAnEarlyReadsProducerWithoutItsWait) {
  BATON_SKIP_WHERE_NOTHING_CAN_RACE();
  for (int page : {16, 2}) {
    for (int batch : {3, 40}) {
      SCOPED_TRACE("page " + std::to_string(page) + ", batch " + std::to_string(batch));
      AttnShape s = mutation_case(page, batch);
      s.q_len = 2;
      s.num_q_heads = 8;
      s.num_kv_heads = 2;
      auto control = [](DeviceAttention& d, cudaStream_t stream) { return launch_producer(d, true, stream); };
      auto mutant = [](DeviceAttention& d, cudaStream_t stream) { return launch_producer(d, false, stream); };
      // With q staged, and with only this step's K/V rows staged (q in place): the new rows
      // alone must catch it too. 40 requests hold more new rows than the harness stages.
      for (bool stage_q : {true, false}) {
        SCOPED_TRACE(stage_q ? "q and new K/V rows staged" : "only new K/V rows staged");
        EarlyStaging const staging{stage_q, /*truncate=*/batch > 3};
        std::string message;
        ASSERT_EQ(early_harness_outcome(s, control, &message, staging), RaceHarness::Outcome::kPassed)
            << "control launch (with the wait) failed, so the mutation result would mean nothing: " << message;
        EXPECT_EQ(early_harness_outcome(s, mutant, &message, staging), RaceHarness::Outcome::kCheckFailed)
            << "the early harness did not catch a producer that reads before its wait: " << message;
      }
    }
  }
}

// Both producer instances: the few-requests one (3 requests) and find_items' (40); at page
// 16 and at page 2 (the small-page instances).
TEST_F(AttentionRace, HarnessCatchesAProducerWithoutItsWait) {
  BATON_SKIP_WHERE_NOTHING_CAN_RACE();
  for (int page : {16, 2}) {
    for (int batch : {3, 40}) {
      SCOPED_TRACE("page " + std::to_string(page) + ", batch " + std::to_string(batch));
      expect_harness_catches_missing_wait(mutation_case(page, batch));
    }
  }
}

// The reducer's three forms (merge_splits_kernel.cuh), launched directly.
enum class ReducerForm { kSmall, kMedium, kLarge };

// Launches the library's reducer directly (bf16, head_dim 128) in the given form, with or
// without its PDL wait, PDL on, over the scratch of an earlier call.
Status launch_reducer(DeviceAttention& d, ReducerForm form, bool wait, cudaStream_t stream) {
  using namespace attention;
  AttentionShape shape;
  BATON_RETURN_IF_ERROR(validate(d.args, &shape));
  AttentionParams const p = make_params(d.args, shape, d.ws());
  if (d.args.max_splits < 2 || shape.head_dim != 128 || d.args.q.dtype != DType::kBFloat16 || d.args.single_launch) {
    return Status::invalid_argument("launch_reducer: the case must be bf16, head_dim 128, max_splits >= 2, two kernels");
  }
  using T = __nv_bfloat16;
  detail::KernelTraits const traits{"decode_attention_reducer_mutation", /*waits_on_prior_grid=*/true};
  int64_t const rows = int64_t(p.batch) * p.q_len * p.num_q_heads;
  detail::LaunchConfig const per_row{dim3(unsigned(rows)), dim3(128)};
  LaunchOptions const options{stream, PdlMode::kOn};
  switch (form) {
    case ReducerForm::kSmall:
      return detail::launch(wait ? merge_splits_kernel<T, 128, true> : merge_splits_kernel<T, 128, false>, traits,
                            per_row, options, p);
    case ReducerForm::kMedium:
      return detail::launch(wait ? merge_splits_medium_kernel<T, 128, true> : merge_splits_medium_kernel<T, 128, false>,
                            traits, per_row, options, p);
    case ReducerForm::kLarge:
      return detail::launch(wait ? merge_splits_large_kernel<T, 128, true> : merge_splits_large_kernel<T, 128, false>,
                            traits, detail::LaunchConfig{dim3(large_reducer_ctas(rows)), dim3(kLargeThreads)}, options,
                            p);
  }
  return Status::invalid_argument("launch_reducer: unknown form");
}

// The reducer alone behind the harness's stalled kernel, which writes the split counts and
// the producer's scratch (from an earlier call); every request has several splits, so the
// reducer writes every row. How it ended.
RaceHarness::Outcome reducer_outcome(ReducerForm form, bool wait, std::string* message) {
  AttnShape s;
  s.lens.clear();
  s.splits.clear();
  for (int b = 0; b < 20; ++b) {  // 640 rows
    s.lens.push_back(b == 0 ? 2000 : 60 + 37 * b);
    s.splits.push_back(b == 0 ? 40 : 2 + b % 6);
  }
  s.max_splits = 40;
  s.sinks = true;
  DeviceAttention d(s);
  if (!decode_attention(d.args, d.ws(), {nullptr, PdlMode::kOff}).is_ok() || cudaDeviceSynchronize() != cudaSuccess) {
    *message = "the call that fills the scratch failed";
    return RaceHarness::Outcome::kError;
  }
  auto src_ws = copy_of(d.workspace);
  auto src_splits = copy_of(d.splits);
  RaceHarness h;
  h.inputs = {{d.workspace.get(), src_ws.get(), src_ws.bytes(), 0xFF},   // NaN partials and lse
              {d.splits.get(), src_splits.get(), src_splits.bytes(), 0x00}};  // one split: skip
  h.outputs = {{d.out.get(), d.out.bytes(), 0xFF}, {d.lse.get(), d.lse.bytes(), 0xFF}};
  h.consumer = [&](cudaStream_t stream) { return launch_reducer(d, form, wait, stream); };
  h.check = [&] { return d.matches_reference(); };
  RaceHarness::Outcome how = RaceHarness::Outcome::kError;
  *message = h.run(&how).message();
  return how;
}

TEST_F(AttentionRace, HarnessCatchesAReducerWithoutItsWait) {
  BATON_SKIP_WHERE_NOTHING_CAN_RACE();
  for (ReducerForm form : {ReducerForm::kSmall, ReducerForm::kMedium, ReducerForm::kLarge}) {
    SCOPED_TRACE(form == ReducerForm::kSmall ? "small form" : form == ReducerForm::kMedium ? "medium form" : "large form");
    std::string message;
    ASSERT_EQ(reducer_outcome(form, true, &message), RaceHarness::Outcome::kPassed)
        << "control launch (with the wait) failed, so the mutation result would mean nothing: " << message;
    EXPECT_EQ(reducer_outcome(form, false, &message), RaceHarness::Outcome::kCheckFailed)
        << "the race harness did not catch a reducer that reads before griddepcontrol.wait: " << message;
  }
}

}  // namespace
}  // namespace baton::test
