// decode_attention on inputs that the case-by-case tests (test_decode_attention.cpp) leave out:
// a custom softmax scale; every visible key counted exactly once, at every page size (q = 0
// makes each key weigh 1, so lse is log(visible keys) to float rounding); device-side values
// out of range (split counts, lengths, page ids), which the kernels clamp; q as a strided view
// at every draft length; and the small-page and single-launch paths with PDL off and on, eager
// and in a graph.
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "baton/attention.h"
#include "baton/device_info.h"
#include "common/gpu.h"
#include "gpu/attention_case.h"

namespace baton::test {
namespace {

class AttentionInputs : public GpuTest {
 protected:
  // One call over poisoned outputs in the given mode (PDL on); returns out's and lse's bytes.
  static std::vector<unsigned char> run(DeviceAttention& d, bool early, bool single) {
    d.args.inputs_written_before_chain = early;
    return d.call_bytes(single, PdlMode::kOn);
  }
  // The default mode against the reference (lse to within lse_atol), then early reads and
  // single launch against the default mode's bits. single_fits: whether single launch is
  // taken (the rows' partials fit its shared memory) or the call falls back to two kernels,
  // checked, so that a "single launch" comparison is known to be one.
  static void check_modes(DeviceAttention& d, double lse_atol, double lse_rtol, bool single_fits = true) {
    std::vector<unsigned char> const base = run(d, false, false);
    EXPECT_TRUE(d.matches_reference(true, lse_atol, lse_rtol)) << "default mode";
    for (auto [early, single] : {std::pair{true, false}, {false, true}, {true, true}}) {
      std::vector<unsigned char> const other = run(d, early, single);
      EXPECT_TRUE(bitwise_equal(other.data(), base.data(), base.size(),
                                early && single ? "early reads + single launch" : early ? "early reads" : "single launch"));
    }
    cudaStream_t stream;  // d.args as the last run left them: single launch requested
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    EXPECT_EQ(d.kernels_per_call(stream), single_fits ? 1u : 2u)
        << (single_fits ? "single launch was not taken" : "single launch was taken where its merge does not fit");
    EXPECT_EQ(cudaStreamDestroy(stream), cudaSuccess);
  }
};

// softmax_scale replaces 1 / sqrt(head_dim) before the softcap and ALiBi (decode-attention.md):
// scales far from the default (0.088 at head_dim 128) with softcap, sinks and several splits,
// at a small page and at page 64, in every mode. A kernel that ignored the scale, or applied it
// after the softcap, would miss the reference by far more than the tolerance.
TEST_F(AttentionInputs, CustomSoftmaxScale) {
  for (float scale : {0.02f, 0.3f, 1.5f}) {
    for (int ps : {1, 64}) {
      SCOPED_TRACE("softmax_scale " + std::to_string(scale) + ", page " + std::to_string(ps));
      AttnShape s;
      s.lens = {1300, 77, 5};
      s.max_splits = 4;
      s.splits = {4, 2, 1};
      s.page_size = ps;
      s.softmax_scale = scale;
      s.softcap = 20.f;
      s.sinks = true;
      s.seed = uint64_t(ps) * 10 + 1;
      DeviceAttention d(s);
      check_modes(d, 2e-5, 1e-6);
    }
  }
  // Without softcap, with ALiBi and draft tokens.
  AttnShape s;
  s.lens = {900, 40};
  s.q_len = 3;
  s.max_splits = 3;
  s.splits = {3, 1};
  s.softmax_scale = 0.5f;
  s.alibi = true;
  DeviceAttention d(s);
  check_modes(d, 2e-5, 1e-6);
}

// q = 0: every score is 0, so a visible key weighs exactly 1 and lse = log(visible keys)
// (with a sink: log(keys + e^sink)), which the kernels compute to float rounding (a few 1e-6
// here). The lse bound below, 2e-5 + 1e-6 |lse|, is under the change one key more or less
// makes (1 / 20548 = 4.9e-5 at the longest request), so a tile or key read twice, or skipped,
// at a page boundary, a split boundary, a ring turn or a split count past 8 fails (the default
// bound since the fiftieth session; the 2e-3 before it could not see that at long lengths).
// out is the mean of V over the visible keys. Every page size from 1 to 256.
TEST_F(AttentionInputs, EveryKeyCountedOnce) {
  for (int ps = 1; ps <= 256; ps *= 2) {
    {
      SCOPED_TRACE("ragged batch, page " + std::to_string(ps));
      AttnShape s;
      s.lens = {1, 15, 16, 17, 33, 1001, 4099};
      s.max_splits = 9;
      s.splits = {1, 1, 2, 1, 3, 8, 9};
      s.page_size = ps;
      s.zero_q = true;
      s.sinks = ps == 8 || ps == 64;
      s.seed = uint64_t(ps) * 3 + 2;
      DeviceAttention d(s);
      check_modes(d, 2e-5, 1e-6);
    }
    {
      SCOPED_TRACE("split counts past 32 (48 and 72), page " + std::to_string(ps));
      AttnShape s;
      s.lens = {2000, 5000, 40};
      s.max_splits = 72;
      s.splits = {48, 72, 41};
      s.page_size = ps;
      s.zero_q = true;
      s.sinks = ps == 16;
      s.seed = uint64_t(ps) * 3 + 4;
      DeviceAttention d(s);
      check_modes(d, 2e-5, 1e-6, /*single_fits=*/false);  // 4 rows x 72 splits: past 49
    }
    {
      SCOPED_TRACE("one request of 20548 keys, 32 splits, page " + std::to_string(ps));
      AttnShape s;
      s.lens = {20548};
      s.max_splits = 32;
      s.splits = {32};
      s.page_size = ps;
      s.zero_q = true;
      s.seed = uint64_t(ps) * 3 + 3;
      DeviceAttention d(s);
      check_modes(d, 2e-5, 1e-6);
      if (ps == 16) {  // the bound's power: one key fewer on the device fails it, and the bound before
                       // the fiftieth session (lse within 2e-3 + 1e-4 |lse|) did not see it
        d.upload_device_inputs({20547}, d.c.page_table, {32});
        run(d, false, false);
        EXPECT_FALSE(d.matches_reference(true, 2e-5, 1e-6)) << "one key fewer passed the tight bound";
        EXPECT_TRUE(d.matches_reference(true, 2e-3, 1e-4)) << "the old lse bound saw one key fewer";
      }
    }
  }
  // Draft tokens (causal: token t sees the first L - q_len + 1 + t keys) with a window.
  for (int ps : {1, 16}) {
    SCOPED_TRACE("q_len 3, window 500, page " + std::to_string(ps));
    AttnShape s;
    s.lens = {3001, 20, 700};
    s.q_len = 3;
    s.window_left = 500;
    s.max_splits = 6;
    s.splits = {6, 1, 5};
    s.page_size = ps;
    s.zero_q = true;
    DeviceAttention d(s);
    check_modes(d, 2e-5, 1e-6);
  }
}

// The default bound's power on random data: the newest key of one long request dropped on the
// device (its length one less there; the reference keeps it) fails matches_reference(), for a
// request of 3000 keys in 8 splits and one of 1000 in 3, in bf16 and fp16. That key moves lse
// by ~3e-4 and ~1e-3 and out by less than a bf16 unit of the batch's short requests, so the
// bound before the fiftieth session (one tolerance for the whole batch, lse within 2e-3 +
// 1e-4 |lse|) passed both (a helper's emulation of the check).
TEST_F(AttentionInputs, DefaultBoundSeesOneKeyFewer) {
  for (DType t : {DType::kBFloat16, DType::kFloat16}) {
    AttnShape s;
    s.lens = {3000, 17, 1000, 5};
    s.max_splits = 8;
    s.splits = {8, 1, 3, 1};
    s.sinks = true;
    s.dtype = t;
    DeviceAttention d(s);
    run(d, false, false);
    ASSERT_TRUE(d.matches_reference()) << "the unmutated call";
    for (int b : {0, 2}) {
      SCOPED_TRACE(std::string(t == DType::kBFloat16 ? "bf16" : "fp16") + ", request " + std::to_string(b));
      std::vector<int32_t> lens(s.lens.begin(), s.lens.end());
      lens[b] -= 1;
      d.upload_device_inputs(lens, d.c.page_table, std::vector<int32_t>(s.splits.begin(), s.splits.end()));
      run(d, false, false);
      EXPECT_FALSE(d.matches_reference()) << "the newest key of request " << b << " dropped, and the bound passed it";
    }
  }
}

// Device values the host cannot check are clamped (attention_common.cuh, split_kv_item.cuh):
// a split count below 1 runs as 1 and one past max_splits as max_splits; a length below 0 as 0
// and one past the page table's columns x page_size as that many keys; a page id outside [0,
// num_pages) reads zeros for its keys. The outputs must equal, bit for bit, those of the
// clamped inputs -- with every bad page id replaced by a page of zeros -- which are valid and
// must match the reference; and under compute-sanitizer memcheck nothing is read out of bounds.
TEST_F(AttentionInputs, OutOfRangeDeviceValuesAreClamped) {
  for (int ps : {1, 16, 64}) {
    for (int mode = 0; mode < 3; ++mode) {  // default, early reads, single launch
      bool const early = mode == 1, single = mode == 2;
      SCOPED_TRACE("page " + std::to_string(ps) + (early ? ", early reads" : "") + (single ? ", single launch" : ""));
      AttnShape s;
      s.lens = {300, 40, 1000, 0, 64, 700};
      s.max_splits = 4;
      s.splits = {1, 1, 4, 1, 2, 4};  // the clamped counts
      s.page_size = ps;
      s.sinks = true;
      s.seed = uint64_t(ps) * 5 + mode;
      DeviceAttention d(s);
      int const cols = d.page_table_cols(), stride = d.c.pt_stride;
      int32_t const zero = d.zero_spare_page();
      // The clamped inputs: request 4 as long as its table row (past its own pages: the zero
      // page), request 5 with three of its pages replaced by the zero page.
      int const full = cols * ps;
      std::vector<int32_t> bad_rows = d.c.page_table;
      for (int j = (64 + ps - 1) / ps; j < cols; ++j) {
        d.c.page_table[4 * stride + j] = zero;
        bad_rows[4 * stride + j] = j % 3 == 0 ? -1 : (j % 3 == 1 ? INT_MIN : int32_t(d.pool_pages()));
      }
      int const p5 = (700 + ps - 1) / ps;
      for (int j : {0, p5 / 2, p5 - 1}) {
        d.c.page_table[5 * stride + j] = zero;
        bad_rows[5 * stride + j] = j == 0 ? int32_t(d.pool_pages()) : (j == p5 - 1 ? INT_MAX : -7);
      }
      d.c.cache_seqlens[4] = full;
      std::vector<int32_t> const good_lens(d.c.cache_seqlens.begin(), d.c.cache_seqlens.end());
      d.upload_device_inputs(good_lens, d.c.page_table, {1, 1, 4, 1, 2, 4});
      std::vector<unsigned char> const want = run(d, early, single);
      EXPECT_TRUE(d.matches_reference()) << "the clamped inputs";
      // The same call with the out-of-range values.
      d.upload_device_inputs({300, 40, 1000, -1, full + 100, 700}, bad_rows, {0, -3, 4, 1, 2, 9});
      std::vector<unsigned char> const got = run(d, early, single);
      EXPECT_TRUE(bitwise_equal(got.data(), want.data(), want.size(), "out-of-range inputs vs clamped"));
      std::vector<int32_t> const counters = d.counters();
      for (size_t i = 0; single && i < counters.size(); ++i) ASSERT_EQ(counters[i], 0) << "merge counter " << i;
    }
  }
}

// q as a view into a wider tensor (as a fused qkv projection gives it: rows past a head's
// head_dim elements, here NaN), including row starts that are not 16-byte aligned (the
// producer's element-wise q load), at every draft length 1..8; and the largest packed row
// count, group 16 x q_len 8 = 128 rows per kv head.
TEST_F(AttentionInputs, StridedQueriesAndEveryDraftLength) {
  int const pads[] = {1, 8, 0, 3, 64, 5, 2, 16};
  for (int q_len = 1; q_len <= 8; ++q_len) {
    SCOPED_TRACE("q_len " + std::to_string(q_len) + ", q_pad " + std::to_string(pads[q_len - 1]));
    AttnShape s;
    s.lens = {q_len, 700 + q_len, 2049};
    s.q_len = q_len;
    s.max_splits = 5;
    s.splits = {1, 3, 5};
    s.page_size = q_len % 2 == 0 ? 16 : 2;
    s.q_pad = pads[q_len - 1];
    s.seed = uint64_t(q_len) + 40;
    DeviceAttention d(s);
    check_modes(d, 2e-5, 1e-6);
  }
  for (int ps : {1, 64}) {
    SCOPED_TRACE("group 16, q_len 8, page " + std::to_string(ps));
    AttnShape s;
    s.lens = {1200, 9};
    s.q_len = 8;
    s.num_kv_heads = 2;
    s.num_q_heads = 32;
    s.head_dim = 64;
    s.max_splits = 4;
    s.splits = {4, 1};
    s.page_size = ps;
    s.q_pad = 1;
    DeviceAttention d(s);
    check_modes(d, 2e-5, 1e-6);
  }
}

// The largest max_splits validation accepts (1024): a 20000-key request in 1024 splits (cut at
// 16-key tile boundaries: one or two tiles each), one in 700 and a 50-key request in 1024 (most
// splits empty): the reducer's merge past 32 splits, 8 at a time, in every mode (single launch
// falls back to two kernels here: 1024 splits do not fit a CTA's merge).
// Then the same calls without lse (an optional output): out must not change.
TEST_F(AttentionInputs, MaxSplitsAtTheLimitAndNoLse) {
  AttnShape s;
  s.lens = {20000, 9000, 50};
  s.num_q_heads = 8;
  s.num_kv_heads = 2;
  s.max_splits = 1024;
  s.splits = {1024, 700, 1024};
  s.sinks = true;
  DeviceAttention d(s);
  check_modes(d, 2e-5, 1e-6, /*single_fits=*/false);
  std::vector<uint16_t> const with_lse = d.out_bits();
  d.args.lse = TensorView{};
  for (auto [early, single] : {std::pair{false, false}, {true, false}, {false, true}}) {
    SCOPED_TRACE(std::string("no lse") + (early ? ", early reads" : "") + (single ? ", single launch" : ""));
    run(d, early, single);
    std::vector<uint16_t> const bits = d.out_bits();
    EXPECT_TRUE(bitwise_equal(bits.data(), with_lse.data(), bits.size() * 2, "out without lse vs with it"));
    EXPECT_TRUE(d.matches_reference(false));
    std::vector<float> const lse = d.lse_values();
    for (float x : lse) ASSERT_TRUE(std::isnan(x)) << "lse was written though not requested";
  }
}

// pdl-contract.md rule 7 on the paths the other bitwise tests run at page 64 only: the
// small-page producers (pages 1 and 4, with ALiBi and softcap) and single launch, each with
// PDL off and on, eager and captured in a graph, by default and with early reads: the same bits
// in all eight, matching the reference.
TEST_F(AttentionInputs, SmallPagesAndSingleLaunchSameBitsPdlAndGraph) {
  for (auto [ps, single] : {std::pair{1, false}, {4, false}, {4, true}, {64, true}}) {
    SCOPED_TRACE("page " + std::to_string(ps) + (single ? ", single launch" : ""));
    AttnShape s;
    s.lens = {1500, 3, 777, 64};
    s.q_len = 2;
    s.max_splits = 6;
    s.splits = {6, 1, 3, 2};
    s.page_size = ps;
    s.alibi = true;
    s.softcap = 30.f;
    s.sinks = true;
    s.single_launch = single;
    DeviceAttention d(s);
    std::vector<std::vector<unsigned char>> all;
    for (bool early : {false, true}) {
      d.args.inputs_written_before_chain = early;
      std::vector<std::vector<unsigned char>> const runs = run_pdl_and_graph_configs(
          [&](cudaStream_t stream, PdlMode pdl) { return decode_attention(d.args, d.ws(), {stream, pdl}); },
          [&] { d.poison(); }, [&] { return d.output_bytes(); });
      ASSERT_EQ(runs.size(), 4u);
      EXPECT_TRUE(d.matches_reference()) << (early ? "early reads" : "default mode");
      all.insert(all.end(), runs.begin(), runs.end());
    }
    char const* const names[] = {"PDL off, eager", "PDL on, eager", "PDL off, graph", "PDL on, graph"};
    for (size_t i = 1; i < all.size(); ++i) {
      EXPECT_TRUE(bitwise_equal(all[i].data(), all[0].data(), all[0].size(), names[i % 4]))
          << (i >= 4 ? "early reads" : "default mode");
    }
  }
}


// fp16 outputs at the edge of the range. P is rounded to fp16 for P.V while the row sum is
// not, so a mean of V values at 65504 can come out a few parts in 10^4 above it; past 65520
// that rounds to Inf. The outputs saturate at +-65504 instead (attention_common.cuh,
// from_float, pack_out_pair). Here the exact output is +-65504 (V = +65504 in even dims, -65504
// in odd ones); q = e0; of every 16 keys one has K = 0 (score 0) and 15 have K[0] = -1 (score
// -0.6926, whose e^s = 0.500274 rounds to 0.500488 in fp16), so without saturation out = 65504
// x 1.000378 -> Inf. One split (the producer's store) and 4 (the reducer, and single launch's
// merge), group 1 (keys as M) and 16 (rows as M), default mode, early reads and single launch;
// then a batch past 6 rows per SM, which takes the large reducer form and its packed stores,
// with out's rows aligned and not (out_pad 1: the element-wise stores).
TEST_F(AttentionInputs, Fp16OutputsSaturateInsteadOfInf) {
  DeviceInfo info;
  BATON_ASSERT_OK(get_device_info(&info));
  struct Case {
    int group, splits, batch, out_pad;
  };
  int const large_batch = 8 * info.num_sms / 16;  // x 16 rows: past 6 per SM
  std::vector<Case> const cases = {{1, 1, 1, 0}, {1, 4, 1, 0}, {16, 1, 1, 0}, {16, 4, 1, 0},
                                   {16, 4, large_batch, 0}, {16, 4, large_batch, 1}};
  for (Case const& k : cases) {
    SCOPED_TRACE("group " + std::to_string(k.group) + ", " + std::to_string(k.splits) + " splits, batch " +
                 std::to_string(k.batch) + ", out_pad " + std::to_string(k.out_pad));
    AttnShape s;
    s.lens.assign(k.batch, 64);
    s.num_q_heads = k.group;
    s.num_kv_heads = 1;
    s.head_dim = 64;
    s.page_size = 16;
    s.dtype = DType::kFloat16;
    s.max_splits = k.splits;
    s.splits.assign(k.batch, k.splits);
    s.softmax_scale = 0.6926f;
    s.out_pad = k.out_pad;
    DeviceAttention d(s);
    std::fill(d.c.q.begin(), d.c.q.end(), 0.f);
    for (int r = 0; r < k.batch * k.group; ++r) d.c.q[size_t(r) * s.head_dim] = 1.f;
    for (int b = 0; b < k.batch; ++b) {
      for (int pos = 0; pos < s.lens[b]; ++pos) {
        int64_t const row = d.c.kv_offset(b, pos, 0), v_row = d.c.v_offset(b, pos, 0);
        for (int dim = 0; dim < s.head_dim; ++dim) {
          d.c.k[row + dim] = dim == 0 && pos % 16 != 0 ? -1.f : 0.f;
          d.c.v[v_row + dim] = dim % 2 == 0 ? 65504.f : -65504.f;
        }
      }
    }
    d.upload_qkv();
    for (auto [early, single] : {std::pair{false, false}, {true, false}, {false, true}}) {
      if (k.batch > 1 && single) continue;  // the large form is the reducer's
      SCOPED_TRACE(early ? "early reads" : single ? "single launch" : "default mode");
      run(d, early, single);
      std::vector<uint16_t> const bits = d.out_bits();
      ASSERT_EQ(bits.size(), size_t(k.batch) * k.group * s.head_dim);
      int wrong = 0;
      for (size_t i = 0; i < bits.size(); ++i) wrong += bits[i] != (i % 2 == 0 ? 0x7BFF : 0xFBFF);
      EXPECT_EQ(wrong, 0) << "of " << bits.size() << " outputs not +-65504 (first: 0x" << std::hex << bits[0] << ")";
      for (float x : d.lse_values()) EXPECT_TRUE(std::isfinite(x)) << x;
    }
  }
}


// Scores ~4 in size (scale 1) under a cap of 2, which bends every one of them, two splits of
// 700 keys and one of 33, page 16; the (group, q_len) pairs run keys as M (group 4), rows as M
// (group 16) and the paired form (group 4 x 8 draft tokens: 32 rows).
constexpr std::pair<int, int> kCapForms[] = {{4, 1}, {16, 1}, {4, 8}};
AttnShape cap_of_two(int group, int q_len, uint64_t seed) {
  AttnShape s;
  s.lens = {700, 33};
  s.q_len = q_len;
  s.num_kv_heads = 2;
  s.num_q_heads = 2 * group;
  s.max_splits = 3;
  s.splits = {3, 1};
  s.page_size = 16;
  s.softmax_scale = 1.f;
  s.softcap = 2.f;
  s.seed = seed;
  return s;
}

// The softcap has power here (elsewhere caps of 20-30 on scores of ~2 move them by < 0.01,
// which a kernel that ignored the cap would pass): every row form, several splits, every mode;
// and the negative control: the same outputs against a reference without the cap must fail.
TEST_F(AttentionInputs, SoftcapShapesTheScores) {
  for (auto [group, q_len] : kCapForms) {
    SCOPED_TRACE("group " + std::to_string(group) + ", q_len " + std::to_string(q_len));
    AttnShape const s = cap_of_two(group, q_len, uint64_t(group) * 10 + q_len);
    DeviceAttention d(s);
    check_modes(d, 2e-5, 1e-6);
    run(d, false, false);
    d.c.softcap = 0;  // the reference without the cap
    EXPECT_FALSE(d.matches_reference()) << "outputs with the cap also match a reference without it";
    d.c.softcap = s.softcap;
  }
}

// ALiBi comes after the softcap (decode-attention.md): with a cap of 2 the order matters (with
// caps of 20-30 it moved lse by ~0.002, under the bound). Every row form, every mode; the
// negative control: a reference that biases before the cap must fail.
TEST_F(AttentionInputs, AlibiAfterTheSoftcap) {
  for (auto [group, q_len] : kCapForms) {
    SCOPED_TRACE("group " + std::to_string(group) + ", q_len " + std::to_string(q_len));
    AttnShape s = cap_of_two(group, q_len, uint64_t(group) * 10 + q_len + 5);
    s.alibi = true;
    DeviceAttention d(s);
    check_modes(d, 2e-5, 1e-6);
    run(d, false, false);
    d.c.alibi_before_softcap = true;
    EXPECT_FALSE(d.matches_reference()) << "outputs also match a reference that applies ALiBi before the cap";
    d.c.alibi_before_softcap = false;
  }
}

// out and lse as strided views: rows of out padded (packed stores unaligned), a gap after each
// token's rows, out laid out heads-major ([head][token][dim]), lse rows padded. Every store
// path: the producer's (one split), the reducer's small and large forms, and single launch's
// merge; nothing may land outside the views.
TEST_F(AttentionInputs, OutputAndLseLayouts) {
  DeviceInfo info;
  BATON_ASSERT_OK(get_device_info(&info));
  struct Layout {
    int out_pad, token_pad;
    bool heads_major;
    int lse_pad;
  };
  for (Layout const& l : {Layout{0, 8, false, 3}, Layout{1, 5, true, 40}, Layout{8, 0, true, 1}}) {
    for (int batch : {3, 8 * info.num_sms / 32}) {  // small reducer form; large (past 6 rows per SM)
      SCOPED_TRACE("out_pad " + std::to_string(l.out_pad) + ", token_pad " + std::to_string(l.token_pad) +
                   (l.heads_major ? ", heads-major" : "") + ", lse_pad " + std::to_string(l.lse_pad) + ", batch " +
                   std::to_string(batch));
      AttnShape s;
      std::mt19937_64 rng(uint64_t(batch) * 100 + l.out_pad);
      s.max_splits = 4;
      s.lens.clear();
      for (int b = 0; b < batch; ++b) {
        s.lens.push_back(int(rng() % 900));
        s.splits.push_back(b % 3 == 0 ? 1 : 1 + int(rng() % 4));  // one split: the producer stores
      }
      s.q_len = batch == 3 ? 2 : 1;
      s.out_pad = l.out_pad;
      s.out_token_pad = l.token_pad;
      s.out_heads_major = l.heads_major;
      s.lse_pad = l.lse_pad;
      s.sinks = true;
      s.seed = uint64_t(batch) + l.lse_pad;
      DeviceAttention d(s);
      for (auto [early, single] : {std::pair{false, false}, {true, false}, {false, true}}) {
        SCOPED_TRACE(early ? "early reads" : single ? "single launch" : "default mode");
        run(d, early, single);
        EXPECT_TRUE(d.matches_reference());
        EXPECT_TRUE(d.padding_untouched()) << "a store landed outside out's or lse's view";
      }
    }
  }
}

// out == q (in place; validation allows exactly q's view): each q row is read before its own
// output row is written, so the outputs are those of a separate out, bit for bit. One split
// (the producer stores), several (the reducer, single launch), keys as M (group 4) and rows as
// M with draft tokens (group 16 x 2), early reads.
TEST_F(AttentionInputs, OutInPlaceOverQ) {
  for (auto [group, q_len] : {std::pair{4, 1}, {16, 2}, {4, 8}}) {
    for (int mode = 0; mode < 3; ++mode) {
      bool const early = mode == 1, single = mode == 2;
      SCOPED_TRACE("group " + std::to_string(group) + ", q_len " + std::to_string(q_len) +
                   (early ? ", early reads" : single ? ", single launch" : ""));
      AttnShape s;
      s.lens = {900, 40, 300};
      s.q_len = q_len;
      s.num_kv_heads = 2;
      s.num_q_heads = 2 * group;
      s.max_splits = 4;
      s.splits = {4, 1, 2};
      s.sinks = true;
      s.seed = uint64_t(group) * 3 + q_len + mode;
      DeviceAttention d(s);
      run(d, early, single);
      EXPECT_TRUE(d.matches_reference());
      std::vector<uint16_t> const want = d.out_bits();
      std::vector<float> const want_lse = d.lse_values();
      DecodeAttentionArgs const separate = d.args;
      d.args.out = d.args.q;
      d.args.inputs_written_before_chain = early;
      d.poison();
      BATON_ASSERT_OK(decode_attention(d.args, d.ws(), {nullptr, PdlMode::kOn}));
      CUDA_CHECK(cudaDeviceSynchronize());
      std::vector<uint16_t> const got = d.q.download();  // q is contiguous: [token][head][dim]
      EXPECT_TRUE(bitwise_equal(got.data(), want.data(), want.size() * 2, "out in place over q vs a separate out"));
      std::vector<float> const lse = d.lse_values();
      EXPECT_TRUE(bitwise_equal(lse.data(), want_lse.data(), lse.size() * 4, "lse, out in place vs separate"));
      d.args = separate;
      d.upload_qkv();
    }
  }
}

// K/V pools of 2^32 elements (8 GiB each at bf16): the copy offsets (page x page stride, 64-bit;
// the small-page copy's 32-bit operands with 64-bit products) for pages at every height, about
// half of them past 2^31 elements (byte offsets past 2^32). The case's own pools are copied page
// by page into pools whose page stride is about 2^32 / their page count (the same page ids),
// and the outputs must be those of the small pools, bit for bit. Pages 1, 8 and 64, NHD and HND.
TEST_F(AttentionInputs, PoolPastFourGiB) {
  for (int ps : {1, 8, 64}) {
    for (KvLayout layout : {KvLayout::kNHD, KvLayout::kHND}) {
      SCOPED_TRACE("page " + std::to_string(ps) + (layout == KvLayout::kNHD ? " NHD" : " HND"));
      AttnShape s;
      s.lens = {2000, 700, 3000};
      s.num_q_heads = 8;
      s.num_kv_heads = 2;
      s.page_size = ps;
      s.layout = layout;
      s.max_splits = 4;
      s.splits = {4, 1, 3};
      s.seed = uint64_t(ps) * 2 + (layout == KvLayout::kHND);
      DeviceAttention d(s);
      std::vector<unsigned char> const want = run(d, false, false);
      EXPECT_TRUE(d.matches_reference());
      int64_t const pages = d.pool_pages(), page_elems = d.c.stride_page;
      ASSERT_EQ(d.c.v_stride_page, page_elems);
      int64_t const big_stride = ((int64_t(1) << 32) / pages + 7) / 8 * 8;  // elements, a multiple of 8
      ASSERT_LE(big_stride, int64_t(INT32_MAX));
      size_t const big_bytes = size_t(pages) * big_stride * 2;
      DeviceBuffer<uint16_t> big_k(size_t(pages) * big_stride), big_v(size_t(pages) * big_stride);
      for (auto [dst, src] : {std::pair{&big_k, &d.k}, {&big_v, &d.v}}) {
        CUDA_CHECK(cudaMemcpy2D(dst->get(), big_stride * 2, src->get(), page_elems * 2, page_elems * 2, pages,
                                cudaMemcpyDeviceToDevice));
      }
      ASSERT_GE(big_bytes, size_t(8) << 30);
      for (TensorView* t : {&d.args.k_cache, &d.args.v_cache}) t->stride[0] = big_stride;
      d.args.k_cache.data = big_k.get();
      d.args.v_cache.data = big_v.get();
      for (auto [early, single] : {std::pair{false, false}, {true, false}, {false, true}}) {
        SCOPED_TRACE(early ? "early reads" : single ? "single launch" : "default mode");
        std::vector<unsigned char> const got = run(d, early, single);
        EXPECT_TRUE(bitwise_equal(got.data(), want.data(), want.size(), "8 GiB pools vs the case's own"));
      }
      int high = 0;  // pages the requests use past 2^31 elements
      for (int b = 0; b < d.c.batch; ++b) {
        for (int64_t j = 0; j < (d.c.cache_seqlens[b] + ps - 1) / ps; ++j) {
          high += int64_t(d.c.page_table[b * d.c.pt_stride + j]) * big_stride > INT32_MAX;
        }
      }
      EXPECT_GT(high, 0) << "no page past 2^31 elements was read";
    }
  }
}

}  // namespace
}  // namespace baton::test
