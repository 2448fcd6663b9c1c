// decode_attention on the GPU against the fp64 reference: edge cases first (lengths, groups,
// layouts, strides, splits, windows, q_len > 1, sinks, softcap, ALiBi), then a seeded sweep,
// then graph replay with new inputs and bitwise PDL on/off, graph/eager and split padding.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <cuda.h>

#include "baton/attention.h"
#include "attention/trigger_plan.h"
#include "baton/device_info.h"
#include "common/gpu.h"
#include "runtime/launch.h"
#include "gpu/attention_case.h"

namespace baton::test {
namespace {

// A ragged batch: per request a length in [0, max_len) and a split count in [1, max_splits].
AttnShape ragged(std::mt19937_64& rng, AttnShape s, int batch, int max_len) {
  s.lens.clear();
  s.splits.clear();
  for (int b = 0; b < batch; ++b) {
    s.lens.push_back(int(rng() % max_len));
    s.splits.push_back(1 + int(rng() % s.max_splits));
  }
  return s;
}

class DecodeAttention : public GpuTest {
 protected:
  void early_reads_match_bitwise(AttnShape s);  // EarlyReadsTwoRowChunksMatchBitwise, ...
  void check(AttnShape const& s, PdlMode pdl = PdlMode::kAuto) {
    DeviceAttention d(s);
    d.poison();
    BATON_ASSERT_OK(decode_attention(d.args, d.ws(), {nullptr, pdl}));
    CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_TRUE(d.matches_reference());
  }
  // d's arguments narrowed to the first `sub` requests of `whole` (same buffers): a view with
  // fewer reducer rows, so that another reducer form merges the same splits.
  static void view_first_requests(DeviceAttention& d, DecodeAttentionArgs const& whole, int sub) {
    int64_t const tokens = int64_t(sub) * whole.q_len;
    d.args = whole;
    d.args.q.shape[0] = tokens;
    d.args.out.shape[0] = tokens;
    d.args.lse.shape[0] = tokens;
    d.args.cache_seqlens.shape[0] = sub;
    d.args.page_table.shape[0] = sub;
    d.args.num_kv_splits.shape[0] = sub;
  }
  // A view's output_bytes() against the whole batch's, over the view's `rows` (token, head)
  // rows: out (head_dim values each) and lse (after the whole batch's `all_rows` rows of out).
  static void expect_view_matches(std::vector<unsigned char> const& view, std::vector<unsigned char> const& whole,
                                  size_t rows, size_t all_rows, int head_dim) {
    size_t const all_out_bytes = all_rows * head_dim * 2;
    EXPECT_TRUE(bitwise_equal(view.data(), whole.data(), rows * head_dim * 2, "out: this form vs the large form"));
    EXPECT_TRUE(bitwise_equal(view.data() + all_out_bytes, whole.data() + all_out_bytes, rows * 4,
                              "lse: this form vs the large form"));
  }
};

std::vector<int> edge_lengths(int ps) { return {0, 1, ps - 1, ps, ps + 1, 17, 97, 1000}; }

TEST_F(DecodeAttention, EdgeLengthsOneSplit) {
  AttnShape s;
  s.lens = edge_lengths(16);
  check(s);
}

TEST_F(DecodeAttention, EdgeLengthsThreeAndMaxSplits) {
  AttnShape s;
  s.lens = edge_lengths(64);
  s.page_size = 64;
  s.max_splits = 3;
  check(s);  // every request 3 splits (no num_kv_splits tensor)
  s.max_splits = 16;
  s.splits = {1, 1, 2, 16, 3, 16, 7, 16};  // per request, incl. more splits than keys
  check(s);
}

// More work items (request, split) than producer CTAs per kv head (one wave of the device):
// CTAs loop over several items, and past 64 items per CTA they find them in several passes.
TEST_F(DecodeAttention, MoreItemsThanCtasAndSeveralPasses) {
  std::mt19937_64 rng(99);
  AttnShape s;  // 8 kv heads x group 16: ~wave / 8 CTAs per head, 40 x up to 4 items
  s.num_q_heads = 128;
  s.num_kv_heads = 8;
  s.head_dim = 64;
  s.page_size = 32;
  s.max_splits = 4;
  s = ragged(rng, s, 40, 900);
  check(s);
  s.early = true;
  check(s);
  AttnShape w;  // 64 kv heads, group 1: ~wave / 64 CTAs per head (8), 1000 items -> ~125 per CTA
  w.num_q_heads = 64;
  w.num_kv_heads = 64;
  w.head_dim = 64;
  w.page_size = 16;
  w.max_splits = 2;  // no num_kv_splits: 2 items per request
  w.lens.clear();
  for (int b = 0; b < 500; ++b) w.lens.push_back(int(rng() % 100));
  check(w);
}

// find_items (batches past 32) reads requests 128 per round, 4 rounds' loads at a time: 129
// requests take two rounds, 1100 nine rounds in three load steps; with several splits per
// request each CTA takes several passes of 64 items, and every pass but the last stops
// reading inside the batch once it is full. (8 kv heads and short lengths keep the pool
// small: its random fill is what a test this size spends its time on.)
TEST_F(DecodeAttention, ManyRequestsSeveralStepsAndPasses) {
  std::mt19937_64 rng(4242);
  AttnShape base;  // 8 kv heads, group 1: ~wave / 8 CTAs per head (66 at head_dim 64)
  base.num_q_heads = 8;
  base.num_kv_heads = 8;
  base.head_dim = 64;
  base.page_size = 16;
  base.max_splits = 8;
  for (int batch : {129, 1100}) {
    AttnShape s = ragged(rng, base, batch, 30);
    check(s);
    s.splits.clear();  // no num_kv_splits: 8 items per request (1100 x 8 / 66: 3 passes)
    check(s);
  }
  AttnShape f = ragged(rng, base, 528, 30);  // 528 x 8 = 64 x 66 items: on 132 SMs every CTA
  f.splits.clear();                           // one exactly full pass, then an empty one
  check(f);
  f = ragged(rng, base, 33, 30);  // 33 items on 66 CTAs per head: half of them without an item
  f.splits.assign(33, 1);
  check(f);
}

// The many-requests instance with at most 8 packed rows hands each item's next item its first
// page ids and runs its ring on into it (the next item's first tiles requested when a warp's
// loop ends, q after the merge's barrier, the merge rows in each ring's last slot). 36
// requests at 8 kv heads (~33 CTAs per head at head_dim 128): ~5 items per CTA, some long
// (a request of max_len keys in max_splits splits: 3+ tiles for warp 0, so the run-on fill's
// last tile and the ring's full turn are reached). Against the fp64 reference across head
// dims, dtypes, layouts, q_len 2 (8 packed rows) with a window, early reads and single launch
// (which does not run on); and bit for bit against a view of the first 32 requests, which the
// few-requests instance (no hand-over) computes with the same splits, and PDL off against on.
TEST_F(DecodeAttention, ManyRequestsRunOnIntoTheNextItem) {
  std::mt19937_64 rng(2026);
  AttnShape base;  // 32 / 8 heads: group 4, narrow
  base.page_size = 64;
  base.max_splits = 8;
  auto shape = [&](int head_dim, DType dtype, int max_len) {
    AttnShape s = base;
    s.head_dim = head_dim;
    s.dtype = dtype;
    s = ragged(rng, s, 36, max_len);
    s.lens[0] = max_len;
    s.splits[0] = s.max_splits;
    return s;
  };
  AttnShape s = shape(128, DType::kBFloat16, 1200);
  {
    SCOPED_TRACE("head_dim 128 bf16: 36 requests against a view of the first 32");
    DeviceAttention d(s);
    DecodeAttentionArgs const whole = d.args;
    std::vector<unsigned char> const all = d.call_bytes(false, PdlMode::kOn);
    EXPECT_TRUE(d.matches_reference());
    std::vector<unsigned char> const off = d.call_bytes(false, PdlMode::kOff);
    EXPECT_TRUE(bitwise_equal(off.data(), all.data(), all.size(), "PDL off vs on"));
    view_first_requests(d, whole, 32);
    std::vector<unsigned char> const view = d.call_bytes(false, PdlMode::kOn);
    expect_view_matches(view, all, size_t(32) * s.q_len * s.num_q_heads,
                        size_t(s.lens.size()) * s.q_len * s.num_q_heads, s.head_dim);
    d.args = whole;
  }
  s.early = true;
  check(s);
  s.early = false;
  s.single_launch = true;
  check(s);
  AttnShape q2 = shape(128, DType::kFloat16, 1200);  // 2 draft tokens x group 4: 8 packed rows
  q2.q_len = 2;
  q2.window_left = 500;
  q2.layout = KvLayout::kHND;
  q2.padded = true;
  check(q2);
  check(shape(256, DType::kBFloat16, 800));  // 1 CTA per SM: ~10 items per CTA
  check(shape(64, DType::kFloat16, 1500));   // 4 CTAs per SM: ~2.5 items per CTA
}

// Batches of at most 32 requests find their items per warp (ballot over a warp scan), larger
// ones through the CTA's list: both at the boundary, with several items per CTA (64 kv heads
// leave ~4 CTAs per head) and ragged split counts; default, early reads, and single launch.
TEST_F(DecodeAttention, ItemSearchAtThirtyTwoRequests) {
  std::mt19937_64 rng(321);
  for (int batch : {31, 32, 33}) {
    AttnShape s;
    s.num_q_heads = 64;
    s.num_kv_heads = 64;
    s.head_dim = 64;
    s.page_size = 16;
    s.max_splits = 5;
    s = ragged(rng, s, batch, 700);
    check(s);
    s.early = true;
    check(s);
    s.single_launch = true;
    check(s);
    s.splits.clear();  // no num_kv_splits: max_splits for every request, ~10x the CTAs' items
    s.single_launch = false;
    check(s);
  }
}

TEST_F(DecodeAttention, LongRequest20548) {
  AttnShape s;
  s.lens = {20548};
  s.num_q_heads = 64;
  s.num_kv_heads = 8;
  s.max_splits = 32;
  s.splits = {29};
  check(s);
}

// The reducer sums the first 32 splits from registers and the rest 8 at a time: split
// counts past 32, with empty splits (more splits than keys), sinks, and a padded plan.
TEST_F(DecodeAttention, ManySplitsPastThirtyTwo) {
  AttnShape s;
  s.lens = {5000, 40, 3000, 0};
  s.max_splits = 72;
  s.splits = {33, 41, 70, 72};  // 40 keys in 41 splits, 0 keys in 72: empty splits
  s.sinks = true;
  check(s);
  DeviceAttention d(s);
  d.poison();
  BATON_ASSERT_OK(decode_attention(d.args, d.ws(), {nullptr, PdlMode::kOn}));
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<unsigned char> const base = d.output_bytes();
  DecodeAttentionArgs padded = d.args;  // same split counts, a larger grid and scratch
  padded.max_splits = 100;
  DeviceBuffer<unsigned char> ws(decode_attention_workspace_bytes(4, 1, 32, 128, 100));
  CUDA_CHECK(cudaMemset(ws.get(), 0x7F, ws.size()));  // finite stale partials (3.4e38), as in poison()
  d.poison();
  BATON_ASSERT_OK(decode_attention(padded, {ws.get(), ws.size()}, {nullptr, PdlMode::kOn}));
  CUDA_CHECK(cudaDeviceSynchronize());
  std::vector<unsigned char> const bytes = d.output_bytes();
  EXPECT_TRUE(bitwise_equal(bytes.data(), base.data(), base.size(), "max_splits 100 vs 72 (out and lse)"));
  // ALiBi with steep slopes (0.84 to 0.06 over the first 16 heads): a row's last split, past
  // the 32 the reducer holds in registers, outweighs the others by orders of magnitude, so a
  // partial merged with another split's weight misses the reference (with near-equal splits it
  // moved out by less than the tolerance). The reducer at 72 splits; single launch's merge at
  // 48 (72 do not fit its shared memory at 4 rows per CTA, where the host falls back), its
  // kernel count checked.
  s.alibi = true;
  check(s);
  s.max_splits = 48;
  s.splits = {33, 41, 48, 48};
  s.single_launch = true;
  DeviceAttention one(s);
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  EXPECT_EQ(one.kernels_per_call(stream), 1u) << "single launch was not taken at 48 splits";
  CUDA_CHECK(cudaStreamDestroy(stream));
  one.poison();
  BATON_ASSERT_OK(decode_attention(one.args, one.ws(), {nullptr, PdlMode::kOn}));
  CUDA_CHECK(cudaDeviceSynchronize());
  EXPECT_TRUE(one.matches_reference()) << "ALiBi, single launch, 48 splits";
}

// A K/V dim of size 1 takes any stride, even one past 2^31 - 1 (validation allows it; the
// kernel is given 0 for it): one kv head with a head stride of 2^40 elements (NHD and HND), and
// pages of one key with a token stride of 2^40 + 8. The same bits as the dense views.
TEST_F(DecodeAttention, SizeOneDimsTakeAnyStride) {
  for (KvLayout layout : {KvLayout::kNHD, KvLayout::kHND}) {
    for (int ps : {1, 16}) {
      SCOPED_TRACE(std::string(layout == KvLayout::kNHD ? "NHD" : "HND") + ", page " + std::to_string(ps));
      AttnShape s;
      s.lens = {300, 17};
      s.num_q_heads = 8;
      s.num_kv_heads = 1;
      s.page_size = ps;
      s.layout = layout;
      s.max_splits = 3;
      s.splits = {3, 1};
      DeviceAttention d(s);
      std::vector<unsigned char> const want = d.call_bytes(false, PdlMode::kOn);
      EXPECT_TRUE(d.matches_reference());
      int const heads_axis = layout == KvLayout::kNHD ? 2 : 1, token_axis = layout == KvLayout::kNHD ? 1 : 2;
      for (TensorView* t : {&d.args.k_cache, &d.args.v_cache}) {
        t->stride[heads_axis] = int64_t(1) << 40;
        if (ps == 1) t->stride[token_axis] = (int64_t(1) << 40) + 8;
      }
      std::vector<unsigned char> const got = d.call_bytes(false, PdlMode::kOn);
      EXPECT_TRUE(bitwise_equal(got.data(), want.data(), want.size(), "huge strides on size-1 dims vs dense"));
    }
  }
}

TEST_F(DecodeAttention, GroupsAndLayouts) {
  for (int group : {1, 4, 8, 16}) {
    for (KvLayout layout : {KvLayout::kNHD, KvLayout::kHND}) {
      SCOPED_TRACE("group " + std::to_string(group) + (layout == KvLayout::kNHD ? " NHD" : " HND"));
      AttnShape s;
      s.lens = {5, 300, 77};
      s.num_kv_heads = 2;
      s.num_q_heads = 2 * group;
      s.layout = layout;
      s.max_splits = 4;
      s.splits = {1, 4, 2};
      s.seed = group * 10 + (layout == KvLayout::kHND);
      check(s);
    }
  }
}

TEST_F(DecodeAttention, NonContiguousStrides) {
  for (KvLayout layout : {KvLayout::kNHD, KvLayout::kHND}) {
    AttnShape s;
    s.lens = {129, 64, 1};
    s.layout = layout;
    s.padded = true;
    s.max_splits = 2;
    check(s);
  }
}

// V's pool strides differ from K's (V rows and pages padded, K's not, or both padded
// otherwise): a copy that took K's strides for V reads the wrong rows. Every copy form: pages 1
// and 4 (the small-page producers), 16 and 64; NHD and HND; by default and with early reads.
TEST_F(DecodeAttention, VStridesDifferFromK) {
  for (int ps : {1, 4, 16, 64}) {
    for (KvLayout layout : {KvLayout::kNHD, KvLayout::kHND}) {
      for (bool early : {false, true}) {
        SCOPED_TRACE("page " + std::to_string(ps) + (layout == KvLayout::kNHD ? " NHD" : " HND") +
                     (early ? ", early reads" : ""));
        AttnShape s;
        s.lens = {700, 33, 1};
        s.page_size = ps;
        s.layout = layout;
        s.v_padded = true;
        s.padded = ps == 16;  // K padded too, by other amounts
        s.max_splits = 3;
        s.splits = {3, 2, 1};
        s.early = early;
        s.seed = uint64_t(ps) * 4 + (layout == KvLayout::kHND) * 2 + early;
        check(s);
      }
    }
  }
}

TEST_F(DecodeAttention, HeadDimsAndDtypes) {
  for (int d : {64, 128, 256}) {
    for (DType t : {DType::kBFloat16, DType::kFloat16}) {
      SCOPED_TRACE("head_dim " + std::to_string(d) + (t == DType::kBFloat16 ? " bf16" : " fp16"));
      AttnShape s;
      s.lens = {333, 40};
      s.head_dim = d;
      s.dtype = t;
      s.max_splits = 3;
      s.seed = d + (t == DType::kFloat16);
      check(s);
    }
  }
}

// The launch helper's driver path (cuLaunchKernelEx with the kernels' context-free handles)
// takes every launch: the producers with 50, 100 and 200 KB of dynamic shared memory (the
// limit is raised through the runtime), and the reducers. A launch the driver refused and
// the runtime accepted would have dropped the driver path, here or in any earlier test.
TEST_F(DecodeAttention, LaunchesGoThroughTheDriver) {
  for (int d : {64, 128, 256}) {
    SCOPED_TRACE("head_dim " + std::to_string(d));
    AttnShape s;
    s.lens = {1000, 77};
    s.head_dim = d;
    s.max_splits = 4;
    check(s);
  }
  EXPECT_TRUE(detail::driver_launch_in_use());
}

// Engines call from several host threads at once, each with its own stream and workspace.
// Four threads start together, each on a shape of its own (head_dims 64, 128 and 256, fp16,
// draft tokens, single launch, early reads: different kernel instances, whose facts the
// threads may look up for the first time at once), and call 12 times; every call must give
// the bits of the thread's first, and the last must match the reference.
TEST_F(DecodeAttention, ConcurrentCallsFromThreads) {
  std::vector<AttnShape> shapes(4);
  shapes[0].lens = {1500, 33};
  shapes[0].max_splits = 4;
  shapes[1].lens = {700, 2000, 5};
  shapes[1].head_dim = 256;
  shapes[1].dtype = DType::kFloat16;
  shapes[1].max_splits = 6;
  shapes[1].single_launch = true;
  shapes[2].lens = {900};
  shapes[2].head_dim = 64;
  shapes[2].q_len = 3;
  shapes[2].max_splits = 3;
  shapes[2].early = true;
  shapes[3].lens = {3000, 64, 128, 17};
  shapes[3].num_q_heads = 16;
  shapes[3].num_kv_heads = 2;
  shapes[3].max_splits = 8;
  shapes[3].splits = {8, 1, 2, 1};
  std::vector<std::unique_ptr<DeviceAttention>> ds;
  for (AttnShape const& s : shapes) ds.push_back(std::make_unique<DeviceAttention>(s));
  CUDA_CHECK(cudaDeviceSynchronize());  // the buffers' uploads, before the threads' streams use them
  std::vector<int> mismatches(shapes.size(), 0), failures(shapes.size(), 0);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (size_t i = 0; i < shapes.size(); ++i) {
    threads.emplace_back([&, i] {
      DeviceAttention& d = *ds[i];
      cudaStream_t stream = nullptr;
      bool const created = cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) == cudaSuccess;
      ready.fetch_add(1);  // also on failure: the others must not wait for this thread
      if (!created) {
        ++failures[i];
        return;
      }
      while (ready.load() < int(shapes.size())) std::this_thread::yield();
      std::vector<unsigned char> first;
      for (int call = 0; call < 12; ++call) {
        // Poisoned on the thread's own stream (poison() synchronises the device, which would
        // serialise the threads' kernels): out and lse NaN, the workspace NaN or finite 3.4e38.
        failures[i] += cudaMemsetAsync(d.out.get(), 0xFF, d.out.bytes(), stream) != cudaSuccess;
        failures[i] += cudaMemsetAsync(d.lse.get(), 0xFF, d.lse.bytes(), stream) != cudaSuccess;
        failures[i] += cudaMemsetAsync(d.workspace.get(), call % 2 ? 0x7F : 0xFF, d.workspace.bytes(), stream) != cudaSuccess;
        Status const st = decode_attention(d.args, d.ws(), {stream, PdlMode::kOn});
        failures[i] += !st.is_ok() || cudaStreamSynchronize(stream) != cudaSuccess;
        std::vector<unsigned char> const bytes = d.output_bytes();
        if (call == 0) first = bytes;
        mismatches[i] += bytes != first;
      }
      failures[i] += cudaStreamDestroy(stream) != cudaSuccess;
    });
  }
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < shapes.size(); ++i) {
    SCOPED_TRACE("thread " + std::to_string(i));
    EXPECT_EQ(failures[i], 0);
    EXPECT_EQ(mismatches[i], 0);
    EXPECT_TRUE(ds[i]->matches_reference());
  }
  EXPECT_TRUE(detail::driver_launch_in_use());
}

// One thread per device (cudaSetDevice), calling at once: the facts baton keeps per device
// (the producers' raised shared-memory limit, 200 KB at head_dim 256, among them) must be
// set on each. Needs two GPUs; skips with one.
TEST_F(DecodeAttention, TwoDevicesFromTwoThreads) {
  int devices = 0;
  CUDA_CHECK(cudaGetDeviceCount(&devices));
  if (devices < 2) GTEST_SKIP() << "needs two GPUs, found " << devices;
  int original = 0;
  CUDA_CHECK(cudaGetDevice(&original));
  std::vector<int> failures(2, 0);
  std::vector<std::string> why(2);
  std::vector<std::thread> threads;
  for (int dev = 0; dev < 2; ++dev) {
    threads.emplace_back([&, dev] {
      if (cudaSetDevice(dev) != cudaSuccess) {
        ++failures[dev];
        return;
      }
      for (int head_dim : {256, 128}) {
        AttnShape s;
        s.lens = {2500, 40 + dev};
        s.head_dim = head_dim;
        s.max_splits = 5;
        s.seed = uint64_t(dev) * 10 + head_dim;
        DeviceAttention d(s);
        d.poison();
        Status const st = decode_attention(d.args, d.ws(), {nullptr, PdlMode::kOn});
        if (!st.is_ok() || cudaDeviceSynchronize() != cudaSuccess) {
          ++failures[dev];
          why[dev] += st.to_string() + "; ";
          continue;
        }
        ::testing::AssertionResult const r = d.matches_reference();
        if (!r) {
          ++failures[dev];
          why[dev] += "head_dim " + std::to_string(head_dim) + ": " + r.message() + "; ";
        }
      }
    });
  }
  for (std::thread& t : threads) t.join();
  CUDA_CHECK(cudaSetDevice(original));
  for (int dev = 0; dev < 2; ++dev) EXPECT_EQ(failures[dev], 0) << "device " << dev << ": " << why[dev];
}

// Every "PDL on against off" comparison means something only if the calls really chain with
// PDL. Captured, two calls give a graph whose edges are all programmatic with PDL on: producer
// -> reducer -> next producer -> reducer, or producer -> next producer with single launch;
// with PDL off none is.
TEST_F(DecodeAttention, CapturedCallsChainProgrammatically) {
  if (pdl_disabled_by_env()) GTEST_SKIP() << "BATON_PDL=0 turns PDL off everywhere";
  AttnShape s;
  s.lens = {1000, 77};
  s.max_splits = 4;
  DeviceAttention d(s);
  cudaStream_t stream = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (bool single : {false, true}) {
    SCOPED_TRACE(single ? "single launch" : "producer + reducer");
    d.call_bytes(single, PdlMode::kOn);  // sets single_launch and the counters in d.args
    size_t const kernels = single ? 2 : 4;  // two calls: (nodes, edges, programmatic edges)
    EXPECT_EQ(d.captured(stream, PdlMode::kOn, 2), (DeviceAttention::Captured{kernels, kernels - 1, kernels - 1}));
    EXPECT_EQ(d.captured(stream, PdlMode::kOff, 2), (DeviceAttention::Captured{kernels, kernels - 1, 0}));
  }
  CUDA_CHECK(cudaStreamDestroy(stream));
}

// A thread whose first CUDA work is a baton call on the legacy stream has no current context:
// cudaGetDevice and the facts baton cached on another thread make none current. The driver
// would refuse that launch (CUDA_ERROR_INVALID_CONTEXT); the launch helper sends it through the
// runtime, which makes the context current. The driver path must stay on for the process: it
// used to be tried, refused, and then dropped for every thread (a helper's review, fiftieth
// session; that code fails this test).
TEST_F(DecodeAttention, AThreadWithoutAContextKeepsTheDriverPath) {
#if CUDART_VERSION >= 12050
  AttnShape s;
  s.lens = {1000, 77};
  s.max_splits = 4;
  DeviceAttention d(s);
  d.poison();
  ASSERT_TRUE(decode_attention(d.args, d.ws()).is_ok());  // this thread fills baton's caches
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_TRUE(detail::driver_launch_in_use());
  d.poison();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  // The driver's cuCtxGetCurrent, looked up here so that the new thread makes no runtime call
  // before decode_attention: the test means something only if that thread has no context.
  using GetCurrent = CUresult (*)(CUcontext*);
  void* fn = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  ASSERT_EQ(cudaGetDriverEntryPointByVersion("cuCtxGetCurrent", &fn, 12000, cudaEnableDefault, &found), cudaSuccess);
  ASSERT_EQ(found, cudaDriverEntryPointSuccess);
  GetCurrent const get_current = reinterpret_cast<GetCurrent>(fn);
  Status called = Status::internal("not called");
  CUcontext before = reinterpret_cast<CUcontext>(1);
  std::thread other([&] {
    get_current(&before);
    called = decode_attention(d.args, d.ws());  // its first CUDA work
  });
  other.join();
  ASSERT_EQ(before, nullptr) << "the new thread had a current context: the case is not tested";
  ASSERT_TRUE(called.is_ok()) << called.to_string();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_TRUE(d.matches_reference());
  EXPECT_TRUE(detail::driver_launch_in_use());
#else
  GTEST_SKIP() << "built with CUDA " << CUDART_VERSION << ": the driver launch path needs 12.5+";
#endif
}

// A stream of a green context: an SM partition of the device (CUDA 12.5+), as engines that
// split the GPU between prefill and decode create. baton raises the producer's shared-memory
// limit through the runtime (cudaFuncSetAttribute, in the primary context, which earlier tests
// of this process used) and launches the context-free kernel handle on the green stream, whose
// context is another one. The call must run there, on the driver path, and give the primary
// stream's bits, at head_dim 128 and 256 (the largest shared memory), with two kernels and
// with single launch, with PDL on and off, eager and captured in a graph.
TEST_F(DecodeAttention, GreenContextStream) {
#if CUDART_VERSION >= 12050
  std::string missing;
  auto entry = [&](char const* name) {
    void* fn = nullptr;
    cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
    cudaError_t const err = cudaGetDriverEntryPointByVersion(name, &fn, 12050, cudaEnableDefault, &found);
    if (err != cudaSuccess || found != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      missing += std::string(" ") + name + " (" + cudaGetErrorName(err) + ", " + std::to_string(int(found)) + ")";
      return static_cast<void*>(nullptr);
    }
    return fn;
  };
  using DeviceGet = CUresult (*)(CUdevice*, int);
  using GetResource = CUresult (*)(CUdevice, CUdevResource*, CUdevResourceType);
  using Split = CUresult (*)(CUdevResource*, unsigned*, CUdevResource const*, CUdevResource*, unsigned, unsigned);
  using Describe = CUresult (*)(CUdevResourceDesc*, CUdevResource*, unsigned);
  using Create = CUresult (*)(CUgreenCtx*, CUdevResourceDesc, CUdevice, unsigned);
  using StreamCreate = CUresult (*)(CUstream*, CUgreenCtx, unsigned, int);
  using Destroy = CUresult (*)(CUgreenCtx);
  auto const device_get = reinterpret_cast<DeviceGet>(entry("cuDeviceGet"));
  auto const get_resource = reinterpret_cast<GetResource>(entry("cuDeviceGetDevResource"));
  auto const split = reinterpret_cast<Split>(entry("cuDevSmResourceSplitByCount"));
  auto const describe = reinterpret_cast<Describe>(entry("cuDevResourceGenerateDesc"));
  auto const create = reinterpret_cast<Create>(entry("cuGreenCtxCreate"));
  auto const stream_create = reinterpret_cast<StreamCreate>(entry("cuGreenCtxStreamCreate"));
  auto const destroy = reinterpret_cast<Destroy>(entry("cuGreenCtxDestroy"));
  if (!device_get || !get_resource || !split || !describe || !create || !stream_create || !destroy) {
    GTEST_SKIP() << "the driver has no green-context streams (CUDA 12.5+):" << missing;
  }
  int ordinal = 0;
  CUDA_CHECK(cudaGetDevice(&ordinal));
  CUdevice dev = 0;
  ASSERT_EQ(device_get(&dev, ordinal), CUDA_SUCCESS);
  CUdevResource all{}, part{}, rest{};
  ASSERT_EQ(get_resource(dev, &all, CU_DEV_RESOURCE_TYPE_SM), CUDA_SUCCESS);
  unsigned groups = 1;
  CUresult const split_result = split(&part, &groups, &all, &rest, 0, all.sm.smCount / 2);  // about half
  if (split_result == CUDA_ERROR_NOT_SUPPORTED) GTEST_SKIP() << "SM partitions are not supported here (MPS, MIG?)";
  ASSERT_EQ(split_result, CUDA_SUCCESS);
  ASSERT_EQ(groups, 1u);
  CUdevResourceDesc desc = nullptr;
  ASSERT_EQ(describe(&desc, &part, 1), CUDA_SUCCESS);
  CUgreenCtx green = nullptr;
  CUresult const created = create(&green, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM);
  if (created == CUDA_ERROR_NOT_SUPPORTED) GTEST_SKIP() << "green contexts are not supported here (MPS, MIG?)";
  ASSERT_EQ(created, CUDA_SUCCESS);
  // Released on every path, a failed assertion included: the streams before the context.
  cudaStream_t gs = nullptr, primary = nullptr;
  auto release = [&](void*) {
    if (gs != nullptr) cudaStreamDestroy(gs);
    if (primary != nullptr) cudaStreamDestroy(primary);
    EXPECT_EQ(destroy(green), CUDA_SUCCESS);
  };
  std::unique_ptr<void, decltype(release)> guard(&green, release);
  CUstream green_stream = nullptr;
  ASSERT_EQ(stream_create(&green_stream, green, CU_STREAM_NON_BLOCKING, 0), CUDA_SUCCESS);
  gs = reinterpret_cast<cudaStream_t>(green_stream);
  CUDA_CHECK(cudaStreamCreateWithFlags(&primary, cudaStreamNonBlocking));
  std::printf("green context of %u of %u SMs\n", part.sm.smCount, all.sm.smCount);
  // The launches below must stay on the driver path (a refusal would send them to the
  // runtime and drop the path for the process), so it must be on to begin with.
  ASSERT_TRUE(detail::driver_launch_in_use());
  for (int head_dim : {128, 256}) {
    for (bool single : {false, true}) {
      SCOPED_TRACE("head_dim " + std::to_string(head_dim) + (single ? ", single launch" : ""));
      AttnShape s;
      s.lens = {3000, 77, 1000};
      s.head_dim = head_dim;
      s.max_splits = 8;
      s.single_launch = single;
      DeviceAttention d(s);
      std::vector<unsigned char> const want = d.call_bytes(single, PdlMode::kOn, primary);  // sets single_launch
      EXPECT_TRUE(d.matches_reference());
      if (single) EXPECT_EQ(d.kernels_per_call(gs), 1u) << "single launch was not taken";
      // On the green stream: PDL off and on, eager and captured in a graph.
      auto const configs = run_pdl_and_graph_configs(
          [&](cudaStream_t st, PdlMode pdl) { return decode_attention(d.args, d.ws(), {st, pdl}); },
          [&] { d.poison(); }, [&] { return d.output_bytes(); }, gs);
      ASSERT_EQ(configs.size(), 4u);
      for (size_t i = 0; i < configs.size(); ++i) EXPECT_EQ(configs[i], want) << "green stream, config " << i;
      EXPECT_TRUE(d.matches_reference());
    }
  }
  EXPECT_TRUE(detail::driver_launch_in_use()) << "the green stream's launches dropped the driver path";
#else
  GTEST_SKIP() << "built with CUDA " << CUDART_VERSION << ": the green-context test needs 12.5+";
#endif
}

TEST_F(DecodeAttention, AllPageSizes) {
  for (int ps = 1; ps <= 256; ps *= 2) {
    SCOPED_TRACE("page_size " + std::to_string(ps));
    AttnShape s;
    s.lens = {ps - 1 > 0 ? ps - 1 : 1, ps + 1, 3 * ps + 5};
    s.page_size = ps;
    s.max_splits = 2;
    s.seed = ps;
    check(s);
  }
}

// Pages below 16 keys run producer instances of their own (split_kv_kernel<SmallPages<T>>:
// every tile row by row). Same logical K/V, q, lengths and splits at page P and at page 64
// (whose instances copy whole tiles from one page) must give the same bits, since the split
// ranges and the math do not depend on the page size; and match the fp64 reference. The
// small-page pool's other rows (past each request's length, pages no request holds) are NaN,
// so a row read that should have been zero-filled or skipped shows. Each producer form:
// narrow (<= 8 packed rows), wide (16), paired (32); head_dim 64 / 128 / 256; few requests
// and many (8 kv heads: several items per CTA, so the many-requests instance hands each
// item's page ids to the next and runs its ring on into it); early reads (old and new keys
// copied on either side of the wait: q_len 2 and 8; whether the new ones are read after it
// is the race tests' part); single launch; windows, sinks, padded HND pools.
namespace small_pages {

// Copies every visible (request, position, kv head) row of K and V, and the sinks, from
// `from` into `to`, which has the same lengths and heads at another page size; every other
// element of `to`'s pools becomes NaN.
void copy_logical_kv(DeviceAttention const& from, DeviceAttention& to) {
  std::vector<uint16_t> const fk = from.k.download(), fv = from.v.download();
  std::vector<uint16_t> tk(to.k.size(), 0xFFFF), tv(to.v.size(), 0xFFFF);  // NaN in bf16 and fp16
  std::fill(to.c.k.begin(), to.c.k.end(), std::nanf(""));
  std::fill(to.c.v.begin(), to.c.v.end(), std::nanf(""));
  int const D = from.c.head_dim;
  for (int b = 0; b < from.c.batch; ++b) {
    for (int t = 0; t < from.c.cache_seqlens[b]; ++t) {
      for (int h = 0; h < from.c.num_kv_heads; ++h) {
        int64_t const src = from.c.kv_offset(b, t, h), dst = to.c.kv_offset(b, t, h);
        int64_t const v_src = from.c.v_offset(b, t, h), v_dst = to.c.v_offset(b, t, h);
        for (int d = 0; d < D; ++d) {
          tk[dst + d] = fk[src + d];
          tv[v_dst + d] = fv[v_src + d];
          to.c.k[dst + d] = from.c.k[src + d];
          to.c.v[v_dst + d] = from.c.v[v_src + d];
        }
      }
    }
  }
  to.k.upload(tk);
  to.v.upload(tv);
  if (!from.c.sinks.empty()) {
    to.c.sinks = from.c.sinks;
    to.sinks.upload(to.c.sinks);
  }
}

struct Form {
  char const* name;
  int kv_heads, group, q_len, head_dim;
  DType dtype;
  KvLayout layout;
  bool padded;
  int batch;    // > 32: the many-requests instance
  int max_len;  // the requests' lengths below it (but request 0's with few requests: 1500)
  int window_left;
  bool sinks;
};

}  // namespace small_pages

// Every producer instance the host can pick (decode_attention.cu, launch_producer_form), each
// against the reference: bf16 and fp16; head_dim 64, 128 and 256; the narrow form (<= 8 packed
// rows per kv head: group 4), the wide one (9..16: group 4 x 3 draft tokens) and the paired one
// (17..32 at head_dim <= 128: group 8 x 3 draft tokens; at head_dim 256 those rows take the
// wide form in two row chunks, the same instance); few requests (3) and many (33: kMany, past
// kFewRequests); pages of 8 (the small-page instances) and 64. 64 cases, one per instance
// compiled. Default and early reads alternate so that every (dtype, head_dim, form, page) gets
// both, one with few requests and one with many. Ragged lengths (some shorter than q_len), up
// to 4 splits, request 0 with 4.
TEST_F(DecodeAttention, EveryProducerInstance) {
  struct FormRows {
    char const* name;
    int group, q_len;
  };
  std::mt19937_64 rng(4242);
  int index = 0;
  for (DType dtype : {DType::kBFloat16, DType::kFloat16}) {
    for (int d : {64, 128, 256}) {
      for (FormRows f : {FormRows{"narrow", 4, 1}, FormRows{"wide", 4, 3}, FormRows{"paired", 8, 3}}) {
        if (d == 256 && f.group == 8) continue;  // wide again, in two row chunks
        for (int batch : {3, 33}) {
          bool const few = batch == 3;
          for (int page : {8, 64}) {
            bool const early = (index++ + (few ? 0 : 1)) % 2 == 1;
            SCOPED_TRACE(std::string(dtype == DType::kBFloat16 ? "bf16" : "fp16") + ", head_dim " +
                         std::to_string(d) + ", " + f.name + ", batch " + std::to_string(batch) + ", page " +
                         std::to_string(page) + (early ? ", early reads" : ""));
            AttnShape s;
            s.dtype = dtype;
            s.head_dim = d;
            s.num_kv_heads = 2;
            s.num_q_heads = 2 * f.group;
            s.q_len = f.q_len;
            s.page_size = page;
            s.max_splits = 4;
            s.early = early;
            s.seed = rng();
            s = ragged(rng, s, batch, few ? 700 : 160);
            s.lens[0] = few ? 650 : 150;
            s.splits[0] = 4;
            check(s);
          }
        }
      }
    }
  }
}

TEST_F(DecodeAttention, SmallPagesMatchPage64Bitwise) {
  using small_pages::Form;
  Form const forms[] = {
      {"narrow, few", 2, 4, 1, 128, DType::kBFloat16, KvLayout::kNHD, false, 6, 900, -1, true},
      {"narrow, q_len 2, many", 8, 4, 2, 128, DType::kFloat16, KvLayout::kHND, true, 36, 250, -1, false},
      {"wide, head_dim 64", 2, 16, 1, 64, DType::kFloat16, KvLayout::kHND, true, 5, 900, 300, false},
      {"paired, q_len 8", 2, 4, 8, 128, DType::kBFloat16, KvLayout::kNHD, false, 3, 900, -1, true},
      {"paired, q_len 8, many", 8, 4, 8, 128, DType::kFloat16, KvLayout::kNHD, false, 34, 120, 100, false},
      {"head_dim 256, q_len 2, many", 2, 8, 2, 256, DType::kBFloat16, KvLayout::kNHD, false, 34, 250, -1, false},
  };
  std::mt19937_64 rng(1616);
  for (Form const& f : forms) {
    AttnShape base;
    base.num_kv_heads = f.kv_heads;
    base.num_q_heads = f.kv_heads * f.group;
    base.q_len = f.q_len;
    base.head_dim = f.head_dim;
    base.dtype = f.dtype;
    base.layout = f.layout;
    base.padded = f.padded;
    base.max_splits = 6;
    base.window_left = f.window_left;
    base.sinks = f.sinks;
    base.seed = rng();
    base = ragged(rng, base, f.batch, f.max_len);
    // Few requests: one of 1500 keys (6 splits of 256 keys: 4 tiles per warp, the ring's full
    // turn). Not with many: the test's pools hold batch x the longest request's pages.
    if (f.batch <= 8) base.lens[0] = 1500;
    base.splits[0] = 6;
    base.lens[1 % f.batch] = f.q_len;  // only this step's keys
    for (int ps : {1, 2, 4, 8}) {
      for (int mode = 0; mode < 3; ++mode) {  // default, early reads, single launch
        bool const early = mode == 1, single = mode == 2;
        SCOPED_TRACE(std::string(f.name) + ", page " + std::to_string(ps) + (early ? ", early reads" : "") +
                     (single ? ", single launch" : ""));
        AttnShape s64 = base, sp = base;
        s64.page_size = 64;
        sp.page_size = ps;
        s64.early = sp.early = early;
        DeviceAttention a(s64), b(sp);
        small_pages::copy_logical_kv(a, b);
        std::vector<unsigned char> const want = a.call_bytes(single, PdlMode::kOn);
        std::vector<unsigned char> const got = b.call_bytes(single, PdlMode::kOn);
        EXPECT_TRUE(bitwise_equal(got.data(), want.data(), want.size(), "page P vs page 64"));
        EXPECT_TRUE(b.matches_reference());
      }
    }
  }
}

TEST_F(DecodeAttention, SlidingWindowShorterAndLonger) {
  for (int window : {0, 31, 100, 5000, 2147483647}) {
    SCOPED_TRACE("window " + std::to_string(window));
    AttnShape s;
    s.lens = {1000, 64, 3};
    s.window_left = window;
    s.max_splits = 4;
    check(s);
  }
  // Draft tokens of requests shorter than q_len (token positions below 0: rows with no key)
  // under the shortest and the longest windows.
  for (int window : {0, 3, 2147483647}) {
    SCOPED_TRACE("q_len 4, window " + std::to_string(window));
    AttnShape s;
    s.lens = {2, 1000, 0, 4};
    s.q_len = 4;
    s.window_left = window;
    s.max_splits = 4;
    s.splits = {1, 4, 2, 1};
    check(s);
  }
}

TEST_F(DecodeAttention, DraftTokensCausal) {
  for (int q_len : {2, 4, 8}) {
    SCOPED_TRACE("q_len " + std::to_string(q_len));
    AttnShape s;
    s.lens = {q_len - 1, q_len, 500};  // the first request has rows with no visible key
    s.q_len = q_len;
    s.max_splits = 3;
    s.seed = q_len;
    check(s);
  }
}

// The paired wide form (row_chunks.h: past 16 packed rows, head_dim <= 128 takes 32 rows per
// CTA, two 16-row halves per tile load): a full pair (group 4 x q_len 8), a pair whose second
// half is partly live (group 8 x 3 = 24 rows) and a kv head whose second CTA holds 16 rows, a
// dead second half (group 16 x 3 = 48), at head_dim 64 and 128, both dtypes and layouts, with
// the masks (window, softcap, ALiBi), sinks, early reads and single launch (5 splits of 32 rows
// fit its shared memory); then more than kFewRequests requests (the find_items instance).
TEST_F(DecodeAttention, PairedRowsMatchReference) {
  struct Heads {
    int q, kv, q_len;
  };
  int i = 0;
  for (Heads h : {Heads{8, 2, 8}, Heads{16, 2, 3}, Heads{32, 2, 3}}) {
    for (int head_dim : {64, 128}) {
      AttnShape s;
      s.num_q_heads = h.q;
      s.num_kv_heads = h.kv;
      s.q_len = h.q_len;
      s.head_dim = head_dim;
      s.lens = {h.q_len - 1, 700, 2100, 33};
      s.max_splits = 5;
      s.splits = {1, 5, 4, 2};
      s.dtype = i % 2 ? DType::kFloat16 : DType::kBFloat16;
      s.layout = i % 3 == 0 ? KvLayout::kHND : KvLayout::kNHD;
      s.window_left = i % 3 == 1 ? 300 : -1;
      s.softcap = i % 2 ? 25.f : 0.f;
      s.alibi = i % 4 == 2;
      s.sinks = i % 2 == 0;
      s.seed = 40 + i;
      SCOPED_TRACE("heads " + std::to_string(h.q) + "/" + std::to_string(h.kv) + " q_len " + std::to_string(h.q_len) +
                   " head_dim " + std::to_string(head_dim));
      check(s);
      s.early = true;
      check(s);
      s.early = false;
      s.single_launch = true;
      check(s);
      ++i;
    }
  }
  AttnShape s;
  s.num_q_heads = 8;
  s.num_kv_heads = 2;
  s.q_len = 8;
  std::mt19937_64 rng(77);
  s.lens.clear();
  for (int b = 0; b < 40; ++b) s.lens.push_back(int(rng() % 1500));
  s.max_splits = 3;
  s.seed = 50;
  check(s);
  s.early = true;
  check(s);
}

TEST_F(DecodeAttention, SinksCountedOnceWithManySplits) {
  AttnShape s;
  s.lens = {2000, 10, 0};
  s.sinks = true;
  s.max_splits = 16;
  s.splits = {16, 3, 1};
  check(s);
  s.max_splits = 1;
  s.splits = {};
  check(s);
}

// A sink far above every score: the denominator is dominated by exp(sink - M), which
// overflows float unless M includes the sink; lse = about the sink, the output about 0.
TEST_F(DecodeAttention, LargeSinkDoesNotOverflow) {
  AttnShape s;
  s.lens = {700, 5, 0};
  s.sinks = true;
  s.sink_bias = 150.f;
  check(s);  // one split: the producer's epilogue
  s.max_splits = 6;
  s.splits = {6, 2, 1};
  check(s);  // the reducer
  s.single_launch = true;
  check(s);  // the producer's last CTA
}

TEST_F(DecodeAttention, SoftcapAlibiAndScale) {
  AttnShape s;
  s.lens = {700, 33};
  s.softcap = 30.f;
  s.alibi = true;
  s.max_splits = 5;
  check(s);
}

// ---- seeded sweep --------------------------------------------------------------------------

TEST_F(DecodeAttention, SeededSweep) {
  std::mt19937_64 rng(2026);
  for (int i = 0; i < 24; ++i) {
    AttnShape s;
    int const batch = 1 + int(rng() % 6);
    s.lens.clear();
    for (int b = 0; b < batch; ++b) s.lens.push_back(int(rng() % 3000));
    int const groups[] = {1, 2, 4, 8, 16};
    int const group = groups[rng() % 5];
    s.num_kv_heads = 1 + int(rng() % 3);
    s.num_q_heads = s.num_kv_heads * group;
    s.head_dim = 64 << (rng() % 3);
    s.page_size = 1 << (rng() % 9);
    s.q_len = 1 + int(rng() % 4);
    s.dtype = rng() % 2 ? DType::kBFloat16 : DType::kFloat16;
    s.layout = rng() % 2 ? KvLayout::kNHD : KvLayout::kHND;
    s.padded = rng() % 3 == 0;
    s.max_splits = 1 + int(rng() % 8);
    if (rng() % 2) {
      for (int b = 0; b < batch; ++b) s.splits.push_back(1 + int(rng() % s.max_splits));
    }
    s.window_left = rng() % 4 == 0 ? int(rng() % 500) : -1;
    s.softcap = rng() % 4 == 0 ? 20.f : 0.f;
    s.sinks = rng() % 3 == 0;
    s.alibi = rng() % 5 == 0;
    s.early = rng() % 2 == 0;
    s.seed = 1000 + i;
    SCOPED_TRACE("sweep case " + std::to_string(i));
    check(s);
  }
}

// One workspace and one counter buffer shared by calls of different shapes (decode batches
// change every step): a larger call's partials must not disturb a smaller call's counters.
TEST_F(DecodeAttention, SingleLaunchCountersSurviveShapeChanges) {
  AttnShape big;
  big.lens = {3000, 900, 2000, 64};
  big.max_splits = 8;
  big.splits = {8, 3, 8, 1};
  big.single_launch = true;
  AttnShape small = big;
  small.lens = {1500, 700};
  small.splits = {8, 5};
  small.seed = 2;
  DeviceAttention b(big), s(small);
  s.args.merge_counters = b.args.merge_counters;  // big's buffers serve both
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    b.poison();
    BATON_ASSERT_OK(decode_attention(b.args, b.ws(), {nullptr, PdlMode::kOn}));
    CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_TRUE(b.matches_reference());
    s.out.poison(0xFF);  // the workspace the small call uses still holds the big call's partials:
    s.lse.poison(0xFF);  // finite stale values, which a merge must not take in
    BATON_ASSERT_OK(decode_attention(s.args, b.ws(), {nullptr, PdlMode::kOn}));
    CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_TRUE(s.matches_reference());
  }
  for (int32_t c : b.counters()) ASSERT_EQ(c, 0) << "a single-launch counter was not reset";
}

// A reducer grid of more than 2 CTAs per SM (here 12 x 32 = 384 rows, a CTA per row) loads
// the split count before any partial: its path with more than 8 and 32 splits, empty splits
// and sinks, against the reference.
TEST_F(DecodeAttention, LargeReducerGridManySplits) {
  AttnShape s;
  s.lens = {6000, 64, 3000, 0, 5000, 900, 4096, 17, 2500, 1, 6100, 700};
  s.max_splits = 48;
  s.splits = {48, 1, 41, 1, 33, 9, 32, 12, 8, 1, 47, 2};
  s.sinks = true;
  s.page_size = 32;
  check(s);
  check(s, PdlMode::kOff);
}

// 80 ragged requests with sinks and split counts up to 48: a reducer grid past one wave.
AttnShape eighty_with_sinks(std::mt19937_64& rng, int page_size, int max_len) {
  AttnShape s;
  s.max_splits = 48;
  s.page_size = page_size;
  s.sinks = true;
  return ragged(rng, s, 80, max_len);
}

// Large reducer grids (the large form: a warp per row, 4 rows per CTA): 80 x 32 = 2560 rows
// at head_dim 128, ragged split counts up to 48 (the paths past 8 and 32 splits), empty
// requests and sinks; the same batch bit for bit against PDL off and against single launch
// (whose merge runs in the producer); at head_dim 256 in fp16 with 4 draft tokens and 64
// query heads, 20480 rows; and at head_dim 64.
TEST_F(DecodeAttention, LargeReducerGridPastOneWave) {
  std::mt19937_64 rng(2048);
  AttnShape s = eighty_with_sinks(rng, 32, 900);
  s.lens[3] = 0;
  s.lens[30] = 1;
  check(s);
  check(s, PdlMode::kOff);
  s.max_splits = 12;  // single launch holds at most 49 splits of 4 rows in shared memory
  for (int& n : s.splits) n = 1 + n % 12;
  DeviceAttention d(s);
  std::vector<unsigned char> const two = d.call_bytes(false, PdlMode::kAuto);
  EXPECT_TRUE(d.matches_reference());
  std::vector<unsigned char> const off = d.call_bytes(false, PdlMode::kOff);
  EXPECT_TRUE(bitwise_equal(off.data(), two.data(), two.size(), "large reducer grid, PDL off vs on"));
  std::vector<unsigned char> const one = d.call_bytes(true, PdlMode::kAuto);
  EXPECT_TRUE(bitwise_equal(one.data(), two.data(), two.size(), "single launch vs the large reducer grid"));
  {
    cudaStream_t stream;
    CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
    EXPECT_EQ(d.kernels_per_call(stream), 1u) << "single launch was not taken (d.args as call_bytes left them)";
    CUDA_CHECK(cudaStreamDestroy(stream));
  }

  AttnShape w;  // 80 x 4 tokens x 64 heads = 20480 rows
  w.head_dim = 256;
  w.dtype = DType::kFloat16;
  w.q_len = 4;
  w.num_q_heads = 64;
  w.num_kv_heads = 8;
  w.max_splits = 6;
  w.page_size = 16;
  w.sinks = true;
  w = ragged(rng, w, 80, 120);
  check(w);

  AttnShape h = eighty_with_sinks(rng, 16, 700);  // head_dim 64: the large form's third lane layout
  h.head_dim = 64;
  check(h);
}

// The reducer's three forms (merge_splits_kernel.cuh): up to 2 rows per SM the small form,
// up to 6 the medium form (a CTA per row, 32 registers), past that the large form (a warp per
// row); they must give the same bits. The first requests (n of 2..48, past 32 and past the
// batches of 8 and 11 splits) are merged once inside an 80-request batch (2560 rows: large
// form), once as a 16-request view of the same buffers (512 rows: medium form on a 132-SM
// H200) and once as a 4-request view (128 rows: small form on any sm_90 part), with sinks;
// each also with early reads, where every form reads the split count before its wait and
// the small form loads up to 32 splits at once instead of 8 with the count.
TEST_F(DecodeAttention, ReducerFormsMatchBitwise) {
  std::mt19937_64 rng(4096);
  AttnShape s = eighty_with_sinks(rng, 16, 1500);
  s.lens[0] = 1400, s.splits[0] = 48;  // splits 32..47: the tail past the lanes
  s.lens[1] = 900, s.splits[1] = 33;
  s.lens[2] = 700, s.splits[2] = 23;   // the third batch of 8 and of 11, partly
  s.lens[3] = 50, s.splits[3] = 2;
  DeviceAttention d(s);
  DecodeAttentionArgs const whole = d.args;
  std::vector<unsigned char> const large = d.call_bytes(false, PdlMode::kAuto);
  EXPECT_TRUE(d.matches_reference());
  d.args.inputs_written_before_chain = true;
  std::vector<unsigned char> const large_early = d.call_bytes(false, PdlMode::kAuto);
  EXPECT_TRUE(d.matches_reference());
  EXPECT_TRUE(bitwise_equal(large_early.data(), large.data(), large.size(), "large reducer form, early reads vs not"));
  size_t const all_rows = size_t(s.lens.size()) * s.q_len * s.num_q_heads;
  DeviceInfo info;
  BATON_ASSERT_OK(get_device_info(&info));
  int const medium = 4 * info.num_sms / s.num_q_heads;  // 16 requests on a 132-SM H200: 512 rows
  ASSERT_TRUE(medium * s.num_q_heads > 2 * info.num_sms && medium * s.num_q_heads <= 6 * info.num_sms && medium <= 80)
      << "no request count takes the medium form on this device (" << info.num_sms << " SMs)";
  for (int sub : {medium, 4}) {
    SCOPED_TRACE(sub == medium ? "medium form" : "4 requests: small form");
    int64_t const tokens = int64_t(sub) * s.q_len;
    view_first_requests(d, whole, sub);
    std::vector<unsigned char> const view = d.call_bytes(false, PdlMode::kAuto);
    d.args.inputs_written_before_chain = true;
    std::vector<unsigned char> const view_early = d.call_bytes(false, PdlMode::kAuto);
    EXPECT_TRUE(bitwise_equal(view_early.data(), view.data(), view.size(), "early reads vs not"));
    expect_view_matches(view, large, size_t(tokens) * s.num_q_heads, all_rows, s.head_dim);
  }
  d.args = whole;
}

// The three reducer forms at every head_dim, in fp16 and bf16, bit for bit: a batch past 6
// rows per SM (large form), then views of its first requests in the medium range (rows per SM
// in (2, 6], from the device's SM count) and the small one (4 requests), with ragged split
// counts up to 40 (past 32), sinks and an empty request. Out's (token, head) rows are padded
// by one element, so the packed 4-, 8- and 16-byte stores (head_dim 64 / 128 / 256 in the
// large form) take both the aligned and the unaligned path, and the padding must stay
// untouched. PDL on against off, bit for bit.
TEST_F(DecodeAttention, ReducerFormsAllHeadDims) {
  DeviceInfo info;
  BATON_ASSERT_OK(get_device_info(&info));
  std::mt19937_64 rng(6464);
  // fp16 at head_dim 64 and 256, bf16 at 128, and bf16 at 256 too (for the medium form there,
  // which EveryProducerInstance reaches only at its bound, 6 rows per SM, and without sinks).
  for (auto [d, dtype] : {std::pair{64, DType::kFloat16}, std::pair{128, DType::kBFloat16},
                          std::pair{256, DType::kFloat16}, std::pair{256, DType::kBFloat16}}) {
    SCOPED_TRACE("head_dim " + std::to_string(d) + (dtype == DType::kBFloat16 ? ", bf16" : ", fp16"));
    AttnShape s;
    s.head_dim = d;
    s.dtype = dtype;
    s.max_splits = 40;
    s.sinks = true;
    s.out_pad = 1;
    s.seed = 10 * d + (d == 256 && dtype == DType::kBFloat16);  // the other cases keep their seeds
    int const batch = 8 * info.num_sms / s.num_q_heads;
    int const medium = 4 * info.num_sms / s.num_q_heads;
    ASSERT_TRUE(int64_t(batch) * s.num_q_heads > 6 * info.num_sms);
    ASSERT_TRUE(medium * s.num_q_heads > 2 * info.num_sms && medium * s.num_q_heads <= 6 * info.num_sms)
        << "no request count takes the medium form on this device (" << info.num_sms << " SMs)";
    s = ragged(rng, s, batch, 700);
    s.lens[0] = 650, s.splits[0] = 40;  // a row of 40 splits (8 past the lanes)
    s.lens[1] = 0;                      // an empty request: zeros, lse -inf
    s.lens[2] = 500, s.splits[2] = 23;  // the medium form's third batch of 11, partly
    s.lens[3] = 40, s.splits[3] = 3;
    DeviceAttention dev(s);
    DecodeAttentionArgs const whole = dev.args;
    std::vector<unsigned char> const large = dev.call_bytes(false, PdlMode::kAuto);
    EXPECT_TRUE(dev.matches_reference());
    EXPECT_TRUE(dev.padding_untouched()) << "a store landed in out's row padding";
    std::vector<unsigned char> const off = dev.call_bytes(false, PdlMode::kOff);
    EXPECT_TRUE(bitwise_equal(off.data(), large.data(), large.size(), "PDL off vs on"));
    size_t const all_rows = size_t(batch) * s.q_len * s.num_q_heads;
    for (int sub : {medium, 4}) {
      SCOPED_TRACE(sub == medium ? "medium form" : "small form");
      int64_t const tokens = int64_t(sub) * s.q_len;
      view_first_requests(dev, whole, sub);
      std::vector<unsigned char> const view = dev.call_bytes(false, PdlMode::kAuto);
      EXPECT_TRUE(dev.padding_untouched()) << "a store landed in out's row padding";
      expect_view_matches(view, large, size_t(tokens) * s.num_q_heads, all_rows, d);
    }
    dev.args = whole;
  }
}

// ---- graphs and bitwise equality -----------------------------------------------------------

// One capture, four replays with new lengths, page assignments and split counts uploaded in
// between: at pages 16, 2 (the small-page producers) and 256, by default and with early reads
// (which read the lengths and page table before the wait), two kernels and single launch.
TEST_F(DecodeAttention, GraphCapturedOnceReplaysNewLengthsPagesAndSplits) {
  for (int mode = 0; mode < 12; ++mode) {  // page 16 / 2 / 256 x early reads off / on x single launch off / on
  int const ps = mode / 4 == 0 ? 16 : (mode / 4 == 1 ? 2 : 256);
  bool const early = mode % 4 >= 2, single = mode % 2 == 1;
  SCOPED_TRACE(std::string(single ? "single launch" : "producer + reducer") + (early ? ", early reads" : "") +
               ", page " + std::to_string(ps));
  AttnShape s;
  s.lens = {900, 50, 2000, 1};
  s.max_splits = 8;
  s.splits = {4, 1, 8, 1};
  s.single_launch = single;
  s.early = early;
  s.page_size = ps;
  DeviceAttention d(s);
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  BATON_ASSERT_OK(decode_attention(d.args, d.ws(), {stream, PdlMode::kAuto}));
  CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  std::mt19937_64 rng(5);
  for (int replay = 0; replay < 4; ++replay) {
    SCOPED_TRACE("replay " + std::to_string(replay));
    std::vector<int> lens, splits;
    for (int b = 0; b < 4; ++b) {
      lens.push_back(int(rng() % 2000));
      splits.push_back(1 + int(rng() % 8));
    }
    d.reshuffle(lens, splits, 77 + replay);
    d.poison();
    CUDA_CHECK(cudaGraphLaunch(exec, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    EXPECT_TRUE(d.matches_reference());
    for (int32_t c : d.counters()) ASSERT_EQ(c, 0) << "a single-launch counter was not reset";
  }
  CUDA_CHECK(cudaGraphExecDestroy(exec));
  CUDA_CHECK(cudaGraphDestroy(graph));
  CUDA_CHECK(cudaStreamDestroy(stream));
  }
}

// Layers as an engine chains them with early reads: back-to-back calls in one stream (eager,
// then captured in one graph), each on its own K/V, q, lengths, split counts and outputs, all
// sharing one workspace. With early reads and a small reducer grid the producer triggers
// right after its wait and the reducer at entry, so a layer's reducer launches while its
// producer streams and the next layer's producer launches during them (pdl.md); every
// layer must still match the reference. A reducer that read before its producer was done,
// or a producer that wrote the shared partials before the previous layer's reducer had read
// them, would mix layers.
TEST_F(DecodeAttention, EarlyReadsChainOfLayersSharingTheWorkspace) {
  constexpr int kLayers = 6;
  std::vector<std::unique_ptr<DeviceAttention>> layers;
  for (int l = 0; l < kLayers; ++l) {
    AttnShape s;
    s.lens = {3000 - 311 * l, 40 + 7 * l, 777, l % 3 == 0 ? 0 : 1};
    s.max_splits = 16;
    s.splits = {16, 2, 5 + l % 3, 1};
    s.page_size = 64;
    s.sinks = l % 2 == 1;
    s.early = true;
    s.seed = 11 + l;
    layers.push_back(std::make_unique<DeviceAttention>(s));
  }
  Workspace const shared = layers[0]->ws();  // every layer's workspace is the same size
  for (auto& d : layers) {  // the path this test is about: each producer triggers after its wait
    bool after_wait = false;
    ASSERT_TRUE(attention::planned_trigger_after_wait(d->args, &after_wait).is_ok());
    ASSERT_TRUE(after_wait) << "the early trigger is not chosen for this shape: the test would not test it";
  }
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  for (bool graph : {false, true}) {
    SCOPED_TRACE(graph ? "one graph" : "eager");
    for (auto& d : layers) d->poison();
    cudaGraph_t g = nullptr;
    if (graph) CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
    for (auto& d : layers) BATON_ASSERT_OK(decode_attention(d->args, shared, {stream, PdlMode::kOn}));
    if (graph) {
      CUDA_CHECK(cudaStreamEndCapture(stream, &g));
      cudaGraphExec_t exec;
      CUDA_CHECK(cudaGraphInstantiate(&exec, g, 0));
      CUDA_CHECK(cudaGraphLaunch(exec, stream));
      CUDA_CHECK(cudaStreamSynchronize(stream));
      CUDA_CHECK(cudaGraphExecDestroy(exec));
      CUDA_CHECK(cudaGraphDestroy(g));
    }
    CUDA_CHECK(cudaStreamSynchronize(stream));
    for (int l = 0; l < kLayers; ++l) EXPECT_TRUE(layers[l]->matches_reference()) << "layer " << l;
  }
  CUDA_CHECK(cudaStreamDestroy(stream));
}

// The single-launch mode (the last CTA per (request, kv head) merges) gives the same bits as
// producer + reducer, leaves every counter at 0, and is right across the mode's paths: narrow
// and wide producers, two row chunks, empty splits, more than 8 and 32 splits, sinks, windows,
// draft tokens, L = 0, every head_dim and both dtypes, and the fallback to two kernels when
// the partials do not fit a CTA's shared memory.
TEST_F(DecodeAttention, SingleLaunchMatchesTwoKernelsBitwise) {
  std::vector<AttnShape> shapes;
  {
    AttnShape s;  // narrow (4 rows), 8 splits, L = 0 and a one-split request
    s.lens = {1024, 0, 300, 5000};
    s.max_splits = 8;
    s.splits = {8, 1, 1, 8};
    s.sinks = true;
    shapes.push_back(s);
  }
  {
    // Paired wide form: group 8 x q_len 3 = 24 rows in one 32-row CTA (8 rows of its second
    // half live; 24 x 8 splits of partials fit its shared memory); window; fp16; HND. Then the
    // same rows at head_dim 256: two 16-row CTAs per kv head.
    AttnShape s;
    s.lens = {900, 20, 2500};
    s.num_q_heads = 16;
    s.num_kv_heads = 2;
    s.q_len = 3;
    s.max_splits = 8;
    s.splits = {5, 8, 8};  // 20 keys in 8 splits of 3: an empty one
    s.window_left = 700;
    s.dtype = DType::kFloat16;
    s.layout = KvLayout::kHND;
    shapes.push_back(s);
    s.head_dim = 256;
    s.max_splits = 10;
    s.splits = {10, 3, 7};
    shapes.push_back(s);
  }
  {
    AttnShape s;  // past 8 and 32 splits (the reducer's tail), sinks, page 32
    s.lens = {6000, 2100};
    s.page_size = 32;
    s.max_splits = 48;
    s.splits = {48, 41};
    s.sinks = true;
    shapes.push_back(s);
  }
  {
    AttnShape s;  // 4 rows x 72 splits x head_dim 64 exceed the CTA's shared memory: the host
    s.lens = {6000, 2100};  // falls back to producer + reducer, counters untouched
    s.head_dim = 64;
    s.max_splits = 72;
    s.splits = {70, 41};
    shapes.push_back(s);
  }
  {
    AttnShape s;  // head_dim 256, group 16 (16 rows), softcap and ALiBi
    s.lens = {1500, 64};
    s.num_q_heads = 16;
    s.num_kv_heads = 1;
    s.head_dim = 256;
    s.max_splits = 9;
    s.splits = {9, 3};
    s.softcap = 30.f;
    s.alibi = true;
    shapes.push_back(s);
  }
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  // The kernels one call launches (DeviceAttention::kernels_per_call): 1 when single launch is
  // taken, 2 when the host falls back to producer + reducer -- so that a fallback that crept in
  // would not leave this test comparing two kernels with two kernels.
  auto kernels_per_call = [&](DeviceAttention& d) { return d.kernels_per_call(stream); };
  for (size_t i = 0; i < shapes.size(); ++i) {
    SCOPED_TRACE("shape " + std::to_string(i));
    DeviceAttention d(shapes[i]);
    auto run = [&](bool single, PdlMode pdl) { return d.call_bytes(single, pdl, stream); };
    std::vector<unsigned char> const two = run(false, PdlMode::kOff);
    EXPECT_TRUE(d.matches_reference());
    EXPECT_EQ(kernels_per_call(d), 2u) << "producer + reducer";
    run(true, PdlMode::kOff);  // args now ask for single launch
    bool const falls_back = shapes[i].head_dim == 64 && shapes[i].max_splits == 72;  // the one that does not fit
    EXPECT_EQ(kernels_per_call(d), falls_back ? 2u : 1u) << (falls_back ? "the fallback" : "single launch");
    for (PdlMode pdl : {PdlMode::kOff, PdlMode::kOn}) {
      std::vector<unsigned char> const one = run(true, pdl);
      EXPECT_TRUE(d.matches_reference());
      EXPECT_TRUE(bitwise_equal(one.data(), two.data(), two.size(), "single launch vs producer + reducer"));
      for (int32_t c : d.counters()) ASSERT_EQ(c, 0) << "a single-launch counter was not reset";
    }
  }
  CUDA_CHECK(cudaStreamDestroy(stream));
}

// pdl-contract.md rule 7 at page 16 with sinks and several splits: PDL off and on, eager and in
// a graph, each behind a predecessor that PDL overlaps (run_pdl_and_graph_configs), by default
// and with early reads; and split plans that differ only in padding (max_splits 16, a larger
// grid and scratch, the same per-request counts) -- out and lse, the same bits in all, matching
// the reference.
TEST_F(DecodeAttention, BitwisePdlGraphAndSplitPadding) {
  AttnShape s;
  s.lens = {1500, 3, 777};
  s.max_splits = 8;
  s.splits = {5, 1, 3};
  s.sinks = true;
  DeviceAttention d(s);
  DeviceBuffer<unsigned char> ws16(decode_attention_workspace_bytes(3, 1, 32, 128, 16));
  DecodeAttentionArgs const base_args = d.args;
  std::vector<std::vector<unsigned char>> all;
  for (int max_splits : {8, 16}) {
    for (bool early : {false, true}) {
      SCOPED_TRACE("max_splits " + std::to_string(max_splits) + (early ? ", early reads" : ""));
      d.args = base_args;
      d.args.max_splits = max_splits;
      d.args.inputs_written_before_chain = early;
      Workspace const ws = max_splits == 8 ? d.ws() : Workspace{ws16.get(), ws16.size()};
      std::vector<std::vector<unsigned char>> const runs = run_pdl_and_graph_configs(
          [&](cudaStream_t stream, PdlMode pdl) { return decode_attention(d.args, ws, {stream, pdl}); },
          [&] {
            d.poison();
            ws16.poison(0xFF);
          },
          [&] { return d.output_bytes(); });
      ASSERT_EQ(runs.size(), 4u);
      EXPECT_TRUE(d.matches_reference());
      all.insert(all.end(), runs.begin(), runs.end());
    }
  }
  char const* const names[] = {"PDL off, eager", "PDL on, eager", "PDL off, graph", "PDL on, graph"};
  for (size_t i = 1; i < all.size(); ++i) {
    EXPECT_TRUE(bitwise_equal(all[i].data(), all[0].data(), all[0].size(), names[i % 4]))
        << "run " << i << " (max_splits " << (i < 8 ? 8 : 16) << (i % 8 >= 4 ? ", early reads" : "") << ")";
  }
  d.args = base_args;
}

// Early reads with two row chunks per kv head (group 4 x q_len 8 = 32 rows at head_dim 256, 16
// per CTA; group 8 x q_len 8 = 64 rows at head_dim 128, 32 per CTA): a warp of more than
// kStages + 1 tiles copies its ring's last two tiles after the wait, each in a commit group of
// its own (split_kv_item.cuh, `two_late`); the 3000-key request's 8 splits give warps of 6
// tiles, the 150-key request warps of 2-3 (one late tile, holding keys 142-149 of this step
// in warps 0 and 1), the 9-key one a single tile. The outputs must be the default mode's bits
// with PDL off and on, eager and in a graph.
TEST_F(DecodeAttention, EarlyReadsTwoRowChunksMatchBitwise) {
  for (int head_dim : {256, 128}) {
    SCOPED_TRACE("head_dim " + std::to_string(head_dim));
    early_reads_match_bitwise(two_row_chunks_case(head_dim, 2));
  }
}

// The paired form (q_len 8; one row chunk at group 4, two at group 8): warps of exactly kStages
// + 1 tiles copy their ring's last two tiles after the wait (split_kv_item.cuh, `two_late`), the
// others one (paired_ring_case). Same bits as the default mode.
TEST_F(DecodeAttention, EarlyReadsPairedRowsMatchBitwise) {
  for (int group : {4, 8}) {
    SCOPED_TRACE("group " + std::to_string(group));
    early_reads_match_bitwise(paired_ring_case(2, group));
  }
}

// s with sinks, early reads off and on, PDL off and on, eager and in a graph: the same bits.
void DecodeAttention::early_reads_match_bitwise(AttnShape s) {
  s.sinks = true;
  DeviceAttention d(s);
  auto runs = [&](bool early) {  // (off, eager), (on, eager), (off, graph), (on, graph)
    d.args.inputs_written_before_chain = early;
    return run_pdl_and_graph_configs(
        [&](cudaStream_t stream, PdlMode pdl) { return decode_attention(d.args, d.ws(), {stream, pdl}); },
        [&] { d.poison(); }, [&] { return d.output_bytes(); });
  };
  std::vector<std::vector<unsigned char>> const base = runs(false);
  ASSERT_EQ(base.size(), 4u);
  EXPECT_TRUE(d.matches_reference());
  std::vector<std::vector<unsigned char>> const early = runs(true);
  ASSERT_EQ(early.size(), 4u);
  EXPECT_TRUE(d.matches_reference());
  char const* const names[] = {"PDL off, eager", "PDL on, eager", "PDL off, graph", "PDL on, graph"};
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(bitwise_equal(base[i].data(), base[0].data(), base[0].size(), names[i])) << "default mode";
    EXPECT_TRUE(bitwise_equal(early[i].data(), base[0].data(), base[0].size(), names[i])) << "early reads";
  }
}

}  // namespace
}  // namespace baton::test
