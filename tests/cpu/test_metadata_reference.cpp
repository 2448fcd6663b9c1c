// The CPU references checked against hand-worked examples of the spec.
#include <gtest/gtest.h>

#include <cstdint>

#include "reference/metadata_ref.h"

namespace baton::ref {
namespace {

// n values: `first`, then n - 1 of `rest` (one long request among short ones, and its plan).
std::vector<int32_t> first_and_rest(int n, int32_t first, int32_t rest) {
  std::vector<int32_t> v(n, rest);
  v[0] = first;
  return v;
}

TEST(DecodeMetadataReference, HandWorkedExample) {
  DecodeMetadataCase c;
  c.seq_lens = {3, 0, 5};
  c.seq_len_delta = 1;
  c.req_pool_indices = {2, 0, 1};
  c.page_size = 2;
  c.req_to_token = IntMatrix::make(3, 6, 6, 1, 0);
  for (int r = 0; r < 3; ++r)
    for (int t = 0; t < 6; ++t) c.req_to_token.at(r, t) = 100 * r + t;
  DecodeMetadataResult out;
  out.page_table = IntMatrix::make(3, 4, 4, 1, -7);
  build_decode_metadata(c, out);
  EXPECT_EQ(out.cache_seqlens, (std::vector<int32_t>{4, 1, 6}));
  EXPECT_EQ(out.cu_seqlens_k, (std::vector<int32_t>{0, 4, 5, 11}));
  // row 2 -> slots 200, 202 -> pages 100, 101; row 0 -> page 0; row 1 -> 50, 51, 52
  EXPECT_EQ(out.page_table.data, (std::vector<int32_t>{100, 101, -7, -7, 0, -7, -7, -7, 50, 51, 52, -7}));
  EXPECT_EQ(out.error_flags, 0);
}

TEST(DecodeMetadataReference, FillAndSwaAndClamping) {
  DecodeMetadataCase c;
  c.seq_lens = {9, -1};
  c.req_pool_indices = {0, 5};
  c.page_size = 4;
  c.req_to_token = IntMatrix::make(1, 8, 8, 1, 0);
  for (int t = 0; t < 8; ++t) c.req_to_token.at(0, t) = t == 4 ? -1 : 8 + t;
  c.full_to_swa = {0, 0, 0, 0, 0, 0, 0, 0, 40, 41, 42, 43, 44, 45, 46, 47, -1};
  c.fill_columns = 3;
  DecodeMetadataResult out;
  out.page_table = IntMatrix::make(2, 3, 3, 1, -7);
  out.swa_page_table = IntMatrix::make(2, 3, 3, 1, -7);
  build_decode_metadata(c, out);
  EXPECT_EQ(out.cache_seqlens, (std::vector<int32_t>{8, 0}));  // 9 clamped to the row, -1 to 0
  EXPECT_EQ(out.page_table.data, (std::vector<int32_t>{2, -1, 0, 0, 0, 0}));
  // slot 8 -> swa 40 -> page 10; slot -1 -> last entry -1 -> -1
  EXPECT_EQ(out.swa_page_table.data, (std::vector<int32_t>{10, -1, 0, 0, 0, 0}));
  EXPECT_EQ(out.error_flags, 1 | 2);  // the bad pool row has no pages, so it is not reported
}

// A length plus seq_len_delta past the int64 range saturates: INT64_MAX - 1 + 3 is past the
// row (clamped), INT64_MIN + 1 - 3 below 0 (negative), never a wrapped sum of the other sign.
TEST(DecodeMetadataReference, LengthPlusDeltaSaturates) {
  for (int64_t delta : {3, -3}) {
    DecodeMetadataCase c;
    c.seq_lens = {delta > 0 ? INT64_MAX - 1 : INT64_MIN + 1, 5};
    c.seq_len_delta = delta;
    c.req_pool_indices = {0, 0};
    c.page_size = 1;
    c.req_to_token = IntMatrix::make(1, 8, 8, 1, 0);
    DecodeMetadataResult out;
    out.page_table = IntMatrix::make(2, 8, 8, 1, -7);
    build_decode_metadata(c, out);
    EXPECT_EQ(out.cache_seqlens[0], delta > 0 ? 8 : 0) << "delta " << delta;
    EXPECT_EQ(out.error_flags, delta > 0 ? 2 : 1) << "delta " << delta;  // clamped, or negative
  }
}

TEST(PlanKvSplitsReference, UniformBatchFillsTheGpu) {
  // max = min = 1000: s1 = 1; cores = int(132 * log2(1000/64)) = 523; grid = 2 * 8 = 16;
  // s2 = min(ceil(523/16), 16) = 16; c2 = 63; splits = ceil(1000/63) = 16.
  EXPECT_EQ(plan_kv_splits({1000, 1000}, {32, 8, 16, 132}), (std::vector<int32_t>{16, 16}));
}

TEST(PlanKvSplitsReference, RaggedBatchSplitsTheLongRequest) {
  // s1 = min(ceil(10000/64), 8) = 8, c1 = 1250; group 1: grid = 2 * 32 = 64;
  // cores = int(132 * log2(156.25)) = 961, s2 = min(16, 8) = 8, c2 = 1250.
  EXPECT_EQ(plan_kv_splits({64, 10000}, {32, 32, 8, 132}), (std::vector<int32_t>{1, 8}));
}

TEST(PlanKvSplitsReference, MinKeysPerSplitCapsShortRequests) {
  // Baseline: 16 splits of 63 keys for 1000 keys; with a 256-key floor: ceil(1000/256) = 4.
  EXPECT_EQ(plan_kv_splits({1000, 1000}, {32, 8, 16, 132, 256}), (std::vector<int32_t>{4, 4}));
  EXPECT_EQ(plan_kv_splits({0, 100}, {32, 8, 16, 132, 256}), (std::vector<int32_t>{1, 1}));
}

TEST(PlanKvSplitsReference, BalancedPlanFillsOneWave) {
  // 32/8 heads: 8 CTAs per request. One 8K request among 15 of 256, 264 CTAs per wave (ragged,
  // but the two-wave chunk ceil(12032 * 8 / 528) = 183 is under 512 keys: one wave): first
  // chunk = ceil(12032 * 8 / 264) = 365; every request takes one CTA per kv head (128), the 136
  // left share the keys of the one request longer than 365: the bound chunk ceil(8192 * 8 /
  // 136) = 482 fits, and the bisection over [365, 482] finds 456, the smallest chunk with 8 x
  // (ceil(8192 / c) + 15) <= 264: 18 splits, 8 x (18 + 15) = 264 CTAs.
  std::vector<int32_t> const small = first_and_rest(16, 8192, 256);
  std::vector<int32_t> const small_want = first_and_rest(16, 18, 1);
  EXPECT_EQ(plan_kv_splits(small, {32, 8, 64, 132, 0, 264}), small_want);
  // Ragged with room in the wave and a two-wave chunk of at least 512 keys: the plan for two
  // waves (528 CTAs). One 32K request among 15 of 1K: first chunk ceil(48128 * 8 / 528) = 730;
  // every request is longer, so the 400 CTAs left over the 128 share all 48128 keys: bound
  // ceil(48128 * 8 / 400) = 963; the bisection over [730, 963] finds 911, the smallest chunk
  // with 8 x (ceil(32768 / c) + 15 x ceil(1024 / c)) <= 528: 36 splits of the long request and
  // 2 of each short one, 8 x 66 = 528 CTAs (in one wave it would be 18 and 1).
  std::vector<int32_t> const ragged = first_and_rest(16, 32768, 1024);
  std::vector<int32_t> want = first_and_rest(16, 36, 2);
  EXPECT_EQ(plan_kv_splits(ragged, {32, 8, 64, 132, 0, 264}), want);
  want[0] = 32;  // max_splits caps the long request
  EXPECT_EQ(plan_kv_splits(ragged, {32, 8, 32, 132, 0, 264}), want);
  // 32 x 8K (first chunk 7944): 8 CTAs to spare -> chunk2 = 262144 -> one split each.
  EXPECT_EQ(plan_kv_splits(std::vector<int32_t>(32, 8192), {32, 8, 64, 132, 0, 264}), std::vector<int32_t>(32, 1));
  // More requests than the wave holds (40 x 8 CTAs > 264): floor(len / two-wave chunk).
  // Past the wave: the two-wave chunk ceil(103900 * 8 / 528) = 1575 -> 63 splits.
  std::vector<int32_t> const crowd = first_and_rest(40, 100000, 100);
  std::vector<int32_t> const crowd_want = first_and_rest(40, 63, 1);
  EXPECT_EQ(plan_kv_splits(crowd, {32, 8, 64, 132, 0, 264}), crowd_want);
  // 8 x 1K: chunk = 249, chunk2 = max(249, ceil(8192 * 8 / 200)) = 328 -> 4 splits each.
  EXPECT_EQ(plan_kv_splits(std::vector<int32_t>(8, 1024), {32, 8, 64, 132, 0, 264}), std::vector<int32_t>(8, 4));
  // The key floor wins over the wave: chunk = max(249, 512) = 512 -> ceil(1024 / 512) = 2.
  EXPECT_EQ(plan_kv_splits(std::vector<int32_t>(8, 1024), {32, 8, 64, 132, 512, 264}), std::vector<int32_t>(8, 2));
  // max_splits caps: 1 x 32K would take 32 splits of 1024 keys; max_splits 16 caps it.
  EXPECT_EQ(plan_kv_splits({32768}, {32, 8, 16, 132, 0, 264}), (std::vector<int32_t>{16}));
  // The key floor (128) is the chunk of a single short request. A request the floor splits
  // into 2 or more rounds up while the count stays within 8 (splits of at most the chunk, the
  // last shorter): 1000 keys take 8 splits (the producer cuts 7 of 128 keys and one of 104;
  // the floor alone would keep 7: 6 of 144 keys and one of 136), 300 keys 3, four of 500 keys
  // 4 each (chunk max(ceil(2000 * 8 / 264), 128) = 128). Past 8 the floor holds: 1100 keys
  // would round up to 9 and keep floor(1100 / 128) = 8; 2000 keys 15, not 16. Below twice the
  // floor a request keeps one split: 129 and 255 keys, four of 200.
  EXPECT_EQ(plan_kv_splits({1000}, {32, 8, 64, 132, 128, 264}), (std::vector<int32_t>{8}));
  EXPECT_EQ(plan_kv_splits({300}, {32, 8, 64, 132, 128, 264}), (std::vector<int32_t>{3}));
  EXPECT_EQ(plan_kv_splits({500, 500, 500, 500}, {32, 8, 64, 132, 128, 264}), std::vector<int32_t>(4, 4));
  EXPECT_EQ(plan_kv_splits({1100}, {32, 8, 64, 132, 128, 264}), (std::vector<int32_t>{8}));
  EXPECT_EQ(plan_kv_splits({1024}, {32, 8, 64, 132, 128, 264}), (std::vector<int32_t>{8}));
  EXPECT_EQ(plan_kv_splits({2000}, {32, 8, 64, 132, 128, 264}), (std::vector<int32_t>{15}));
  EXPECT_EQ(plan_kv_splits({129}, {32, 8, 64, 132, 128, 264}), (std::vector<int32_t>{1}));
  EXPECT_EQ(plan_kv_splits({255}, {32, 8, 64, 132, 128, 264}), (std::vector<int32_t>{1}));
  EXPECT_EQ(plan_kv_splits({200, 200, 200, 200}, {32, 8, 64, 132, 128, 264}), std::vector<int32_t>(4, 1));
  // A fit that starves the long request: 1 x 4K among 31 x 256 (two-wave chunk ceil(12032 * 8
  // / 528) = 183: one wave) leaves 8 CTAs, so fitting the wave would mean 2 splits of 2K keys,
  // more than twice the first chunk ceil(12032 * 8 / 264) = 365; past the wave instead:
  // floor(4096 / 183) = 22 splits with the two-wave chunk.
  std::vector<int32_t> const starved = first_and_rest(32, 4096, 256);
  std::vector<int32_t> const starved_want = first_and_rest(32, 22, 1);
  EXPECT_EQ(plan_kv_splits(starved, {32, 8, 64, 132, 0, 264}), starved_want);
  // 1 x 32K among 31 x 1K is ragged with a two-wave chunk of ceil(64512 * 8 / 528) = 978 keys:
  // the two-wave plan (528 CTAs: 256 for one split each, 272 left) fits from chunk 1024 (the 8
  // bisection steps stop at 1025), 32 splits of the long request.
  std::vector<int32_t> const ragged32 = first_and_rest(32, 32768, 1024);
  std::vector<int32_t> const ragged32_want = first_and_rest(32, 32, 1);
  EXPECT_EQ(plan_kv_splits(ragged32, {32, 8, 64, 132, 0, 264}), ragged32_want);
  // Zero lengths plan one split; an all-zero batch divides by nothing.
  EXPECT_EQ(plan_kv_splits({0, 0}, {32, 8, 16, 132, 0, 264}), (std::vector<int32_t>{1, 1}));
}

TEST(PlanKvSplitsReference, BalancedPlanSendsPoorFitsPastTheWave) {
  // Not ragged, 32/8 heads (8 CTAs per request, 33 per kv head), 264 CTAs per wave. 12 x 32K:
  // first chunk ceil(393216 * 8 / 264) = 11916; the one-wave fit is 2 splits each (3 would be
  // 288 CTAs): 192 CTAs, the busiest B1 = 16384 keys. Past the wave, the smallest chunk whose
  // splits fit two waves (528 CTAs) gives 5 splits (6 would be 576), 60 items per kv head, so
  // B2 = 2 x 6554 = 13108 < 19/20 of B1: past the wave.
  auto uniform = [](int batch, int32_t len) { return std::vector<int32_t>(batch, len); };
  auto stepped = [](int batch, int32_t len, int32_t step) {
    std::vector<int32_t> lens(batch);
    for (int b = 0; b < batch; ++b) lens[b] = len - b * step;
    return lens;
  };
  auto counts = [](std::vector<std::pair<int, int32_t>> const& runs) {  // {n, count}: n requests with count
    std::vector<int32_t> v;
    for (auto [n, count] : runs) v.insert(v.end(), n, count);
    return v;
  };
  SplitPlan const plan{32, 8, 64, 132, 0, 264};
  EXPECT_EQ(plan_kv_splits(uniform(12, 32768), plan), uniform(12, 5));
  // 17 x 32K: B1 32768 (1 split, 136 CTAs), 3 splits past: B2 = 2 x 10923. 9 x 32K: B1 10923
  // (3 splits), 7 past: B2 = 2 x 4682. 20 x 2K: B1 2048 (1 split), 3 past: B2 = 2 x 683.
  EXPECT_EQ(plan_kv_splits(uniform(17, 32768), plan), uniform(17, 3));
  EXPECT_EQ(plan_kv_splits(uniform(9, 32768), plan), uniform(9, 7));
  EXPECT_EQ(plan_kv_splits(uniform(20, 2048), plan), uniform(20, 3));
  // B2 = B1, but the fit fills less than 5/6 of the wave: 24 x 16K (1 split, 192 CTAs; 2 past,
  // 48 items: B2 = 2 x 8192) and 24 x 8K go past the wave too.
  EXPECT_EQ(plan_kv_splits(uniform(24, 16384), plan), uniform(24, 2));
  EXPECT_EQ(plan_kv_splits(uniform(24, 8192), plan), uniform(24, 2));
  // The plan past the wave fills the two waves, where floor(len / two-wave chunk) rounds down.
  // 22 x 32K: the fit is 1 split (176 CTAs); the floor of 32768 / ceil(720896 * 8 / 528) =
  // 10923 is 2 (44 items on 33 CTAs per kv head: B2 = 2 x 16384 = B1); the two-wave fit is 3
  // (66 items, B2 = 2 x 10923). 6 x 32K: the fit is 5 splits (240 CTAs, B1 6554); the floor
  // gives 10 (B2 = 2 x 3277 = B1: it would stay), the two-wave fit 11 (B2 = 2 x 2979).
  EXPECT_EQ(plan_kv_splits(uniform(22, 32768), plan), uniform(22, 3));
  EXPECT_EQ(plan_kv_splits(uniform(6, 32768), plan), uniform(6, 11));
  // B2 = B1 with fits of at least 5/6 stay: 14 x 32K (224 CTAs), 16 x 32K (256), 32 x 8K.
  EXPECT_EQ(plan_kv_splits(uniform(14, 32768), plan), uniform(14, 2));
  EXPECT_EQ(plan_kv_splits(uniform(16, 32768), plan), uniform(16, 2));
  EXPECT_EQ(plan_kv_splits(uniform(32, 8192), plan), uniform(32, 1));
  // A two-wave chunk under 512 keys stays: 20 x 1K (160 CTAs; ceil(20480 * 8 / 528) = 311).
  EXPECT_EQ(plan_kv_splits(uniform(20, 1024), plan), uniform(20, 1));
  // Uneven: 12 requests of 32750 - 250 b keys fill the wave (3 splits for the 9 longest, 2
  // for the others: 264 CTAs), but B1 is 15250 keys; past the wave 6 for the 6 longest and 5
  // for the others (528 CTAs), B2 = 2 x 6250 (31250 keys in 5).
  EXPECT_EQ(plan_kv_splits(stepped(12, 32750, 250), plan), counts({{6, 6}, {6, 5}}));
  // 24 requests of 16384 - 200 b keys: the fit gives the 9 longest 2 splits and the others 1
  // (B1 = 14584); past the wave 3 for the 18 longest, 2 for the others, B2 = 2 x 6392 (12784
  // keys in 2).
  EXPECT_EQ(plan_kv_splits(stepped(24, 16384, 200), plan), counts({{18, 3}, {6, 2}}));
  // B2 just under B1: 16 requests of 32768 - 100 b (the fit gives the longest 3 splits and
  // the others 2: 264 CTAs, B1 = 16334; past the wave B2 = 2 x 8142).
  EXPECT_EQ(plan_kv_splits(stepped(16, 32768, 100), plan), counts({{1, 3}, {15, 2}}));
  // The 19/20 threshold from both sides (fits of 264 CTAs, 7, 7, 7, 6, 6 splits): 5 requests
  // of 16384 - 200 b have B1 = 2631; past the wave (14, 13, 13, 13, 13) B2 = 2 x 1245, 0.946
  // of it: past the wave. 16384 - 250 b: B2 = 2 x 1242, 0.953 of B1 2606: the fit stays.
  EXPECT_EQ(plan_kv_splits(stepped(5, 16384, 200), plan), counts({{1, 14}, {4, 13}}));
  EXPECT_EQ(plan_kv_splits(stepped(5, 16384, 250), plan), counts({{3, 7}, {2, 6}}));
  // 5 x 8K: the fit is 6 splits (240 CTAs), B1 = 1366; past the wave 13 splits (65 items on
  // 33 CTAs), B2 = 2 x 631, 0.92 of B1.
  EXPECT_EQ(plan_kv_splits(uniform(5, 8192), plan), uniform(5, 13));
  // The 5/6 threshold from both sides, with B2 = B1: 27 x 8K (1 split, 216 CTAs, 81.8%) goes
  // past the wave (2 each), 28 x 8K (224 CTAs, 84.8%) keeps 1.
  EXPECT_EQ(plan_kv_splits(uniform(27, 8192), plan), uniform(27, 2));
  EXPECT_EQ(plan_kv_splits(uniform(28, 8192), plan), uniform(28, 1));
  // Underfilled but B2 > B1 stays: 9 requests of 2000 keys with a 512-key floor take 3 splits
  // of 667 (216 CTAs, 81.8%); past the wave (chunk 512) 4 of 500, 36 items on 33 CTAs per kv
  // head: B2 = 2 x 500.
  EXPECT_EQ(plan_kv_splits(uniform(9, 2000), {32, 8, 64, 132, 512, 264}), uniform(9, 3));
  // A ragged batch that plan_waves doubles is planned for two waves, not tested for a poor
  // fit: 1 x 32K among 10 x 4K takes 26 and 4 (past its doubled wave it would be 58 and 7).
  EXPECT_EQ(plan_kv_splits(counts({{1, 32768}, {10, 4096}}), plan), counts({{1, 26}, {10, 4}}));
  // max_splits caps the count past the wave as before.
  EXPECT_EQ(plan_kv_splits(uniform(12, 32768), {32, 8, 4, 132, 0, 264}), uniform(12, 4));
}

TEST(PlanKvSplitsReference, BalancedPlanCountsDraftTokens) {
  // 64/8 heads (group 8), 8 x 4K, 264 CTAs per wave. One token per request: 8 rows per kv
  // head, 8 CTAs per request; the smallest chunk with 8 x 8 x ceil(4096 / c) <= 264 is 1024:
  // 4 splits each (256 CTAs).
  std::vector<int32_t> const lens(8, 4096);
  EXPECT_EQ(plan_kv_splits(lens, {64, 8, 64, 132, 0, 264}), std::vector<int32_t>(8, 4));
  // 4 draft tokens at head_dim 256: 32 rows per kv head, 2 producer CTAs of 16 rows per kv
  // head, 16 per request; 4 splits would be 512 CTAs (two waves), so the plan halves them:
  // 8 x 2 x 16 = 256. At head_dim 128 (or 0) one CTA takes the 32 rows: 4 splits, as with one
  // token; 8 draft tokens (64 rows) take two again.
  EXPECT_EQ(plan_kv_splits(lens, {64, 8, 64, 132, 0, 264, 4, 256}), std::vector<int32_t>(8, 2));
  EXPECT_EQ(plan_kv_splits(lens, {64, 8, 64, 132, 0, 264, 4, 128}), std::vector<int32_t>(8, 4));
  EXPECT_EQ(plan_kv_splits(lens, {64, 8, 64, 132, 0, 264, 4}), std::vector<int32_t>(8, 4));
  EXPECT_EQ(plan_kv_splits(lens, {64, 8, 64, 132, 0, 264, 8}), std::vector<int32_t>(8, 2));
  // 2 draft tokens fit in one CTA per kv head (16 rows): the same plan as one token.
  EXPECT_EQ(plan_kv_splits(lens, {64, 8, 64, 132, 0, 264, 2}), std::vector<int32_t>(8, 4));
  // One 32K request among 15 of 1K with 4 draft tokens at head_dim 256 (64 / 8 heads: 32 rows
  // per kv head, two 16-row CTAs): 16 requests x 16 CTAs leave 8 of the
  // 264, so a one-wave fit would give the long request 1 split of 32K keys. The batch is
  // ragged with a two-wave chunk of ceil(48128 * 16 / 528) = 1459 keys, so the plan is for 528
  // CTAs: 272 left over the 256; with splits capped at max_splits 17 every chunk from 1459 fits
  // (16 x (17 + 15) = 512), so the bisection stays near 1459 and the long request gets
  // ceil(32768 / 1459) = 23, capped at 17 (the producer's CTAs loop over the items past the
  // wave).
  std::vector<int32_t> const ragged = first_and_rest(16, 32768, 1024);
  std::vector<int32_t> const ragged_want = first_and_rest(16, 17, 1);
  EXPECT_EQ(plan_kv_splits(ragged, {64, 8, 17, 132, 128, 264, 4, 256}), ragged_want);
  // At head_dim 128 (and 0, which counts as 128) the 32 rows take one CTA per kv head, as with
  // one token: the same plan as q_len 1; 48 rows (64 / 4 heads, 3 tokens) take two.
  std::vector<int32_t> const one_token = plan_kv_splits(ragged, {64, 8, 17, 132, 128, 264, 1});
  EXPECT_EQ(plan_kv_splits(ragged, {64, 8, 17, 132, 128, 264, 4, 128}), one_token);
  EXPECT_EQ(plan_kv_splits(ragged, {64, 8, 17, 132, 128, 264, 4}), one_token);
  EXPECT_EQ(plan_kv_splits(ragged, {64, 4, 17, 132, 128, 264, 3}), one_token);
  EXPECT_NE(ragged_want, one_token);
  // The SGLang heuristic (ctas_per_wave 0) ignores q_len.
  EXPECT_EQ(plan_kv_splits(lens, {64, 8, 64, 132, 0, 0, 4}), plan_kv_splits(lens, {64, 8, 64, 132, 0, 0, 1}));
}

TEST(PlanKvSplitsReference, ZeroLengthPlansOneSplitWithoutDividingByZero) {
  EXPECT_EQ(plan_kv_splits({0}, {32, 8, 16, 132}), (std::vector<int32_t>{1}));
  EXPECT_EQ(plan_kv_splits({0, 0, 5000}, {32, 8, 16, 132})[0], 1);
  EXPECT_TRUE(plan_kv_splits({}, {32, 8, 16, 132}).empty());
}

TEST(SpecPageTableReference, HandWorkedExample) {
  SpecPageTableCase c;
  c.num_draft_tokens = 2;
  c.committed = IntMatrix::make(2, 3, 3, 1, 0);
  c.committed.data = {1, 2, 3, 4, 5, 6};
  c.committed_lens = {2, 3};
  c.start = {0, 1, 0, 0};
  c.draft = IntMatrix::make(4, 2, 2, 1, 0);
  c.draft.data = {10, 11, 20, 21, 30, 31, 40, 41};
  c.draft_lens = {1, 2, 0, 3};
  SpecPageTableResult out;
  out.page_table = IntMatrix::make(4, 6, 6, 1, -7);
  build_spec_page_table(c, out);
  EXPECT_EQ(out.page_table.data, (std::vector<int32_t>{1, 2, 10, -7, -7, -7,  //
                                                       2, 3, 20, 21, -7, -7,  //
                                                       4, 5, 6, -7, -7, -7,   //
                                                       4, 5, 6, 40, 41, 0}));  // past draft width: 0
  EXPECT_EQ(out.cache_seqlens, (std::vector<int32_t>{3, 4, 3, 6}));
  EXPECT_EQ(out.cu_seqlens_k, (std::vector<int32_t>{0, 3, 7, 10, 16}));
}

// Starts below 0 and past the row read 0 where the source column falls outside [0, width),
// INT64_MAX included (start + n is past the int64 range: compared without forming the sum,
// since signed overflow is undefined); negative lengths give 0 columns and their bit.
TEST(SpecPageTableReference, StartsAndLengthsAtTheirEdges) {
  SpecPageTableCase c;
  c.num_draft_tokens = 1;
  c.committed = IntMatrix::make(5, 3, 3, 1, 0);
  c.committed.data = {1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3, 1, 2, 3};
  c.committed_lens = {4, 4, 4, 4, -1};
  c.start = {-2, 2, INT64_MAX, INT64_MIN, 0};
  c.draft = IntMatrix::make(5, 1, 1, 1, 0);
  c.draft.data = {9, 9, 9, 9, 9};
  c.draft_lens = {0, 0, 0, 0, 1};
  SpecPageTableResult out;
  out.page_table = IntMatrix::make(5, 4, 4, 1, -7);
  build_spec_page_table(c, out);
  EXPECT_EQ(out.page_table.data, (std::vector<int32_t>{0, 0, 1, 2,  //
                                                       3, 0, 0, 0,  //
                                                       0, 0, 0, 0,  //
                                                       0, 0, 0, 0,  //
                                                       9, -7, -7, -7}));
  EXPECT_EQ(out.cache_seqlens, (std::vector<int32_t>{4, 4, 4, 4, 1}));
  EXPECT_EQ(out.error_flags, 1);  // kMetadataLengthNegative alone
}

}  // namespace
}  // namespace baton::ref
