// build_decode_metadata on the GPU against tests/reference: edge cases first, then the
// seeded sweep over page sizes, batch sizes, dtypes, strides, SWA and delta; then graph
// replay with changing inputs and the bitwise PDL on/off and graph/eager checks.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "baton/device_info.h"
#include "baton/metadata.h"
#include "common/gpu.h"
#include "gpu/metadata_case.h"

namespace baton::test {
namespace {

class DecodeMetadata : public GpuTest {
 protected:
  void check_shape(MetadataShape const& s, PdlMode pdl = PdlMode::kAuto) {
    ref::DecodeMetadataCase c = make_metadata_case(s);
    DeviceMetadata d(c, s);
    d.poison_outputs();
    BATON_ASSERT_OK(build_decode_metadata(d.args, {nullptr, pdl}));
    CUDA_CHECK(cudaDeviceSynchronize());
    EXPECT_TRUE(d.matches(d.expected(c)));
  }
};

// ---- edge cases --------------------------------------------------------------------------

TEST_F(DecodeMetadata, SingleRequestLengthOne) {
  check_shape({.page_size = 16, .batch = 1, .max_context = 64, .lens = {1}});
}

TEST_F(DecodeMetadata, LengthsAtPageBoundariesAllPageSizes) {
  for (int ps = 1; ps <= 256; ps *= 2) {
    SCOPED_TRACE("page_size " + std::to_string(ps));
    check_shape({.page_size = ps, .batch = 6, .max_context = ps * 5, .seed = uint64_t(ps)});
  }
}

// A batch of 0 whose empty views have null data, as PyTorch's empty tensors do: the op writes
// cu_seqlens_k[0] = 0 (poisoned before) and sets no flag, with SWA and both split plans, with
// and without early reads (the CPU suite checks the validation: EmptyBatchTakesNullViews).
TEST_F(DecodeMetadata, EmptyBatchWithNullViews) {
  for (bool early : {false, true}) {
    for (int wave : {0, 264}) {
      SCOPED_TRACE(std::string(early ? "early reads" : "default") + (wave ? ", balanced plan" : ", SGLang plan"));
      MetadataShape s{.page_size = 16, .batch = 0, .max_context = 256, .swa = true, .fill_columns = 4, .plan = true,
                      .ctas_per_wave = wave, .early_reads = early};
      ref::DecodeMetadataCase c = make_metadata_case(s);
      DeviceMetadata d(c, s);
      for (TensorView const* t : {&d.args.seq_lens, &d.args.req_pool_indices, &d.args.cache_seqlens, &d.args.page_table,
                                  &d.args.swa_page_table, &d.args.num_kv_splits}) {
        ASSERT_EQ(t->data, nullptr);
        ASSERT_EQ(t->numel(), 0);
      }
      d.poison_outputs();
      BATON_ASSERT_OK(build_decode_metadata(d.args, {nullptr, PdlMode::kOn}));
      CUDA_CHECK(cudaDeviceSynchronize());
      EXPECT_EQ(d.cu_seqlens_k.download(), std::vector<int32_t>{0});
      EXPECT_TRUE(d.matches(d.expected(c)));
    }
  }
}

// Bad device data is clamped and reported, on both page-table paths (page 4; page 1 with
// 16-byte rows: the vector path), with and without seq_len_delta, at the boundaries: a pool
// index equal to the number of req_to_token rows, and at page starts SWA slots equal to
// full_to_swa's size (invalid), -2 (counts from the end: valid) and -(size + 1) (invalid);
// lengths past the row and below 0 only after delta. error_flags is OR-ed into: a bit the
// caller set survives.
TEST_F(DecodeMetadata, ClampsAndReportsBadData) {
  for (bool vec : {false, true}) {
    for (int64_t delta : {0, 3}) {
      SCOPED_TRACE(std::string(vec ? "vector path" : "scalar path") + ", delta " + std::to_string(delta));
      MetadataShape s{.page_size = vec ? 1 : 4, .batch = 8, .max_context = 64, .aligned = vec, .swa = true,
                      .seed = 7 + uint64_t(vec)};
      ref::DecodeMetadataCase c = make_metadata_case(s);
      c.seq_len_delta = delta;
      // After delta: negative, past the row (twice), fine, exactly the row, fine, fine, -2.
      c.seq_lens = {-5 - delta, 65 - delta, 1000, 10, 64 - delta, 3, 40, -2 - delta};
      int64_t const rows = c.req_to_token.rows;
      c.req_pool_indices[3] = 99;    // outside req_to_token
      c.req_pool_indices[5] = -2;
      c.req_pool_indices[6] = rows;  // one past the last row
      int64_t const swa = static_cast<int64_t>(c.full_to_swa.size());
      int64_t const ps = s.page_size;
      int64_t const r4 = c.req_pool_indices[4];
      c.req_to_token.at(r4, 2 * ps) = static_cast<int32_t>(swa);        // one past full_to_swa
      c.req_to_token.at(r4, 5 * ps) = -2;                              // full_to_swa[swa - 2]
      c.req_to_token.at(r4, 7 * ps) = static_cast<int32_t>(-swa - 1);  // before its first entry
      c.req_to_token.at(r4, 9 * ps) = (1 << 30);                       // far outside
      DeviceMetadata d(c, s);
      d.poison_outputs();
      d.error_flags.upload(std::vector<int32_t>{1 << 8});  // the caller's bit
      BATON_ASSERT_OK(build_decode_metadata(d.args));
      CUDA_CHECK(cudaDeviceSynchronize());
      ref::DecodeMetadataResult want = d.expected(c);
      EXPECT_EQ(want.error_flags, kMetadataLengthNegative | kMetadataLengthClamped | kMetadataPoolIndexInvalid |
                                      kMetadataSwaSlotInvalid);
      want.error_flags |= 1 << 8;
      EXPECT_TRUE(d.matches(want));
    }
  }
}

// Each fault alone, at the first, a middle and the last request, on both page-table paths:
// the flag must be exactly its bit (a pool index counts only where the request reads a page). In ClampsAndReportsBadData every bit has more than one
// source, so a kernel that missed one of them would still pass there.
TEST_F(DecodeMetadata, EachFaultAloneSetsItsBit) {
  for (bool vec : {false, true}) {
    MetadataShape s{.page_size = vec ? 1 : 4, .batch = 40, .max_context = 64, .aligned = vec, .swa = true,
                    .seed = 21 + uint64_t(vec)};
    ref::DecodeMetadataCase const clean = make_metadata_case(s);
    {
      DeviceMetadata d(clean, s);
      ASSERT_EQ(d.expected(clean).error_flags, 0) << "the clean case must have no fault";
    }
    for (int b : {0, 17, 39}) {
      // No bit (0): an invalid pool index of a request of length 0, whose row is never read.
      int32_t const bits[] = {kMetadataLengthNegative, kMetadataLengthClamped, kMetadataPoolIndexInvalid,
                              kMetadataSwaSlotInvalid, 0};
      for (int32_t bit : bits) {
        SCOPED_TRACE(std::string(vec ? "vector path" : "scalar path") + ", request " + std::to_string(b) + ", bit " +
                     std::to_string(bit));
        ref::DecodeMetadataCase c = clean;
        if (bit == kMetadataLengthNegative) c.seq_lens[b] = -1;
        if (bit == kMetadataLengthClamped) c.seq_lens[b] = 65;
        if (bit == kMetadataPoolIndexInvalid || bit == 0) {
          c.seq_lens[b] = bit == 0 ? 0 : 10;  // 0: no page is read, so the index is not either
          c.req_pool_indices[b] = c.req_to_token.rows;
        }
        if (bit == kMetadataSwaSlotInvalid) {
          c.seq_lens[b] = 64;  // the whole row, so the bad slot's page is read
          c.req_to_token.at(c.req_pool_indices[b], 11 * s.page_size) = static_cast<int32_t>(c.full_to_swa.size());
        }
        DeviceMetadata d(c, s);
        d.poison_outputs();
        BATON_ASSERT_OK(build_decode_metadata(d.args));
        CUDA_CHECK(cudaDeviceSynchronize());
        ref::DecodeMetadataResult const want = d.expected(c);
        ASSERT_EQ(want.error_flags, bit);
        EXPECT_TRUE(d.matches(want));
      }
    }
  }
}

// Views that are not packed, on both page-table paths and at a larger page: lengths and pool
// rows at strides 2 and 3 (their gaps hold other valid values), page tables with padded rows,
// a column stride of 2 and column-major (MetadataShape::io_layout), with and without SWA (page 1
// without it: the vector path's 16-byte stores into padded rows), with delta, the zero fill,
// the split plan and, in half the cases, early reads. The sweep rotates the layouts too.
TEST_F(DecodeMetadata, StridedInputsAndTables) {
  for (int ps : {1, 16}) {
    for (int layout : {1, 2}) {
      for (bool swa : {false, true}) {  // page 1 without SWA: the vector path's 16-byte stores
        bool const early = swa == (layout == 1);
        SCOPED_TRACE("page " + std::to_string(ps) + ", layout " + std::to_string(layout) + (swa ? ", swa" : "") +
                     (early ? ", early reads" : ""));
        check_shape({.page_size = ps, .batch = 37, .max_context = ps * 300, .aligned = ps == 1, .swa = swa,
                     .delta = 2, .fill_columns = 300 + 3, .plan = true, .ctas_per_wave = early ? 264 : 0,
                     .seed = uint64_t(ps * 10 + layout * 2 + swa), .early_reads = early, .io_layout = layout});
      }
    }
  }
}

// int64 lengths and pool indices past 2^31: a load that kept the low 32 bits would read a
// length of 5 and pool row 1, valid, where the op must clamp the length to the row and report
// both (kMetadataLengthClamped, kMetadataPoolIndexInvalid). Then lengths at the int64 limits
// with seq_len_delta: INT64_MAX - 1 + 3 must clamp to the row, INT64_MIN + 1 - 3 to 0, where a
// wrapped sum would give the other bit and the other length.
TEST_F(DecodeMetadata, Int64InputsPastTwoToTheThirtyOne) {
  MetadataShape s{.page_size = 16, .batch = 4, .max_context = 256, .int64_inputs = true, .seed = 9};
  ref::DecodeMetadataCase c = make_metadata_case(s);
  c.seq_lens = {(int64_t(1) << 32) + 5, 100, 7, 256};
  c.req_pool_indices[2] = (int64_t(1) << 32) + 1;
  {
    DeviceMetadata d(c, s);
    d.poison_outputs();
    BATON_ASSERT_OK(build_decode_metadata(d.args));
    CUDA_CHECK(cudaDeviceSynchronize());
    ref::DecodeMetadataResult const want = d.expected(c);
    EXPECT_EQ(want.error_flags, kMetadataLengthClamped | kMetadataPoolIndexInvalid);
    EXPECT_EQ(want.cache_seqlens[0], 256);
    EXPECT_TRUE(d.matches(want));
  }
  c.req_pool_indices[2] = 1;
  for (int64_t delta : {3, -3}) {
    SCOPED_TRACE("delta " + std::to_string(delta));
    c.seq_len_delta = delta;
    c.seq_lens = {delta > 0 ? INT64_MAX - 1 : INT64_MIN + 1, 100, 7, 250};
    DeviceMetadata d(c, s);
    d.poison_outputs();
    BATON_ASSERT_OK(build_decode_metadata(d.args));
    CUDA_CHECK(cudaDeviceSynchronize());
    ref::DecodeMetadataResult const want = d.expected(c);
    EXPECT_EQ(want.error_flags, delta > 0 ? kMetadataLengthClamped : kMetadataLengthNegative);
    EXPECT_EQ(want.cache_seqlens[0], delta > 0 ? 256 : 0);
    EXPECT_TRUE(d.matches(want));
  }
}

TEST_F(DecodeMetadata, FillColumnsZeroesPastEachRequest) {
  for (int ps : {1, 16}) {
    check_shape({.page_size = ps, .batch = 7, .max_context = 3000, .swa = true, .fill_columns = 3000 / ps});
  }
  // The whole row (fill_columns = max_pages, past the pages max_context needs): at page 1 the
  // 3 extra columns fall in an item of their own past 4096 columns.
  check_shape({.page_size = 1, .batch = 5, .max_context = 4096, .swa = true, .fill_columns = 4096 + 3});
}

// Page 1 with 16-byte rows: the vector path (two 16-byte loads per thread, then 16-byte stores,
// or per entry with SWA), which the other shapes here, whose rows are not 16-byte aligned, do
// not take. 64 and 61 requests of up to 40000 columns: 1280 / 1220 items of 2048 columns, past
// one wave of CTAs; ragged lengths (the edge set first) end rows mid-item and mid-thread; fill
// columns and early reads.
TEST_F(DecodeMetadata, VectorPathAlignedRows) {
  for (int batch : {64, 61}) {
    for (bool swa : {false, true}) {
      for (bool early : {false, true}) {
        SCOPED_TRACE("batch " + std::to_string(batch) + (swa ? ", swa" : "") + (early ? ", early reads" : ""));
        check_shape({.page_size = 1, .batch = batch, .max_context = 40000, .aligned = true, .swa = swa,
                     .fill_columns = early ? 40000 : 0, .seed = uint64_t(batch * 4 + swa * 2 + early),
                     .early_reads = early});
      }
    }
  }
}

// Past four waves of item CTAs the grid stops growing and each CTA loops over items
// (launch_config.h, grid_for_items): 640 requests of up to 16384 columns at page 1 make 5120
// items of 2048 columns, more than 4 waves of either page-1 kernel however few registers it
// compiles to (at most 2048 / 256 = 8 CTAs of 256 threads per SM), so a CTA takes a second
// item. Both paths: page-table rows of 16384 + 3 columns (scalar), and 16-byte rows (vector).
TEST_F(DecodeMetadata, ItemLoopPastFourWaves) {
  DeviceInfo info;
  BATON_ASSERT_OK(get_device_info(&info));
  int const batch = 640;
  int64_t const max_context = 16384;
  ASSERT_GT(batch * (max_context / 2048), 4 * 8 * info.num_sms) << "too few items to pass four waves here";
  for (bool aligned : {false, true}) {
    SCOPED_TRACE(aligned ? "vector path" : "scalar path");
    check_shape({.page_size = 1, .batch = batch, .max_context = max_context, .aligned = aligned,
                 .seed = uint64_t(31 + aligned)});
  }
}

TEST_F(DecodeMetadata, SplitPlanMatchesReference) {
  check_shape({.page_size = 64, .batch = 7, .max_context = 20000, .plan = true, .seed = 3});
  check_shape({.page_size = 1, .batch = 256, .max_context = 5000, .plan = true, .seed = 4});
}

TEST_F(DecodeMetadata, BalancedSplitPlanMatchesReference) {
  // Random lengths up to the context (0, 1, page edges first): short and long requests mixed,
  // so both passes of the balanced plan run; batch 300 has more short requests than a wave.
  check_shape({.page_size = 64, .batch = 7, .max_context = 40000, .plan = true, .ctas_per_wave = 264, .seed = 5});
  check_shape({.page_size = 16, .batch = 40, .max_context = 30000, .plan = true, .ctas_per_wave = 264, .seed = 6});
  check_shape({.page_size = 1, .batch = 300, .max_context = 3000, .plan = true, .ctas_per_wave = 264, .seed = 7});
  // Batches that are not ragged, whose one-wave fit is poor (12 x 32K: 192 CTAs; 12 of 30000
  // + 250 b keys: an uneven fit; 22 x 32K, where the two-wave fit has more splits than the
  // floor) and go past the wave, or stay (5 of 16384 - 250 b), and a ragged one that
  // plan_waves doubles, which the poor-fit test leaves alone (1 x 32K among 10 x 4K):
  // PlanKvSplits.BalancedPlanSendsPoorFitsPastTheWave has the counts.
  std::vector<int64_t> near(12), stays(5), ragged(11, 4096);
  for (int b = 0; b < 12; ++b) near[b] = 30000 + 250 * b;
  for (int b = 0; b < 5; ++b) stays[b] = 16384 - 250 * b;
  ragged[0] = 32768;
  for (auto const& lens : {std::vector<int64_t>(12, 32768), near, std::vector<int64_t>(22, 32768), stays, ragged}) {
    check_shape({.page_size = 64, .batch = static_cast<int>(lens.size()), .max_context = 32768, .plan = true,
                 .ctas_per_wave = 264, .seed = 8, .lens = lens});
  }
  // Draft tokens: group 4 x q_len 4 fills one 16-row CTA exactly (8 CTAs per request, as q_len
  // 1); x q_len 5 and 8 need two at head_dim 256 (16 CTAs per request: a different plan, which a
  // device that ignored q_len or head_dim would miss) and one 32-row CTA at head_dim 128.
  for (int head_dim : {0, 256}) {
    for (int q_len : {4, 5, 8}) {
      SCOPED_TRACE("q_len " + std::to_string(q_len) + " head_dim " + std::to_string(head_dim));
      check_shape({.page_size = 64, .batch = 9, .max_context = 40000, .plan = true, .ctas_per_wave = 264,
                   .seed = uint64_t(10 + q_len), .plan_q_len = q_len, .plan_head_dim = head_dim});
    }
  }
}

// ---- seeded sweep ------------------------------------------------------------------------

struct SweepParam {
  int page_size, batch;
  bool int64_inputs, strided, swa;
  int delta;
  bool early_reads;
  int io_layout;  // MetadataShape::io_layout
};

void PrintTo(SweepParam const& p, std::ostream* os) {
  *os << "ps" << p.page_size << " batch " << p.batch << (p.int64_inputs ? " int64" : " int32")
      << (p.strided ? " strided" : " dense") << (p.swa ? " swa" : "") << " delta " << p.delta
      << (p.early_reads ? " early reads" : "") << " layout " << p.io_layout;
}

class DecodeMetadataSweep : public DecodeMetadata, public ::testing::WithParamInterface<SweepParam> {};

TEST_P(DecodeMetadataSweep, MatchesReference) {
  SweepParam const p = GetParam();
  MetadataShape s;
  s.page_size = p.page_size;
  s.batch = p.batch;
  // Batch 1 gets one row of 4200 pages (more than two work items of kColsPerItem = 2048
  // columns at page 1; page sizes of 8 or more cut items to the grid, sector_item_columns) at
  // every page size; batch 7 one of 2100 pages among its edge lengths.
  s.max_context = int64_t(p.page_size) * (p.batch == 1 ? 4200 : p.batch <= 8 ? 2100 : 40);
  if (p.batch == 1) s.lens = {s.max_context};
  s.int64_inputs = p.int64_inputs;
  s.strided = p.strided;
  // Page 1's vector path (16-byte rows) in the one dense case per cell without delta, with
  // packed or padded page-table rows (sweep_params keeps its layout at 0 or 1); the cell's
  // dense case with delta keeps page 1's scalar path (rows of max_context + 3 columns).
  s.aligned = p.page_size == 1 && !p.strided && p.delta == 0;
  s.swa = p.swa;
  s.delta = p.delta;
  s.plan = p.batch == 7;
  s.early_reads = p.early_reads;
  s.io_layout = p.io_layout;
  s.seed = uint64_t(p.page_size) * 7919 + p.batch * 31 + p.int64_inputs * 2 + p.swa * 5 + p.strided * 11;
  check_shape(s);
}

std::vector<SweepParam> sweep_params() {
  std::vector<SweepParam> out;
  // Per (page size, batch), the four (swa, int64) cases take the four (strided, delta) pairs
  // in a rotation that moves with the page size and the batch, so every combination of the four
  // axes occurs across the sweep; early reads in a third of the cases, at every page size; the
  // three I/O layouts (strided lengths and pool rows, padded, strided and column-major tables)
  // rotate apart from early reads.
  int cell = 0;
  for (int ps = 1; ps <= 256; ps *= 2) {
    for (int batch : {1, 7, 256, 1000}) {
      for (int j = 0; j < 4; ++j) {
        bool const swa = j & 2, i64 = j & 1;
        int const k = (j + cell) % 4;
        bool const early = (j + cell) % 3 == 0;
        bool const strided = k & 1;
        int const delta = (k & 2) ? 3 : 0;
        int layout = (j + 2 * cell + 1) % 3;
        // The vector path's case (page 1, dense, no delta) takes layout 2 as 1: a column stride
        // of 2 would send it down the scalar path.
        if (ps == 1 && !strided && delta == 0 && layout == 2) layout = 1;
        out.push_back({ps, batch, i64, strided, swa, delta, early, layout});
      }
      ++cell;
    }
  }
  return out;
}

std::string sweep_name(::testing::TestParamInfo<SweepParam> const& info) {
  SweepParam const& p = info.param;
  return "ps" + std::to_string(p.page_size) + "_b" + std::to_string(p.batch) + (p.int64_inputs ? "_i64" : "_i32") +
         (p.strided ? "_strided" : "_dense") + (p.swa ? "_swa" : "") + "_d" + std::to_string(p.delta) +
         (p.early_reads ? "_early" : "") + (p.io_layout ? "_L" + std::to_string(p.io_layout) : "");
}

INSTANTIATE_TEST_SUITE_P(Seeded, DecodeMetadataSweep, ::testing::ValuesIn(sweep_params()), sweep_name);

// ---- graphs and bitwise equality -----------------------------------------------------------

TEST_F(DecodeMetadata, GraphCapturedOnceReplaysNewBatches) {
  MetadataShape s{.page_size = 16, .batch = 64, .max_context = 4096, .swa = true, .plan = true, .seed = 100};
  ref::DecodeMetadataCase c = make_metadata_case(s);
  DeviceMetadata d(c, s);
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cudaGraph_t graph;
  cudaGraphExec_t exec;
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  BATON_ASSERT_OK(build_decode_metadata(d.args, {stream, PdlMode::kAuto}));
  CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  CUDA_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int replay = 0; replay < 5; ++replay) {
    SCOPED_TRACE("replay " + std::to_string(replay));
    s.seed = 200 + replay;  // new lengths, pool rows and req_to_token contents, same shapes
    ref::DecodeMetadataCase next = make_metadata_case(s);
    d.upload_inputs(next);
    d.poison_outputs();
    CUDA_CHECK(cudaGraphLaunch(exec, stream));
    CUDA_CHECK(cudaStreamSynchronize(stream));
    EXPECT_TRUE(d.matches(d.expected(next)));
  }
  CUDA_CHECK(cudaGraphExecDestroy(exec));
  CUDA_CHECK(cudaGraphDestroy(graph));
  CUDA_CHECK(cudaStreamDestroy(stream));
}

// Outputs of one configuration, as raw bytes.
std::vector<int32_t> snapshot(DeviceMetadata const& d) {
  std::vector<int32_t> all;
  for (auto const* b : {&d.cache_seqlens, &d.cu_seqlens_k, &d.page_table, &d.swa_page_table, &d.num_kv_splits,
                        &d.error_flags}) {
    std::vector<int32_t> v = b->download();
    all.insert(all.end(), v.begin(), v.end());
  }
  return all;
}

TEST_F(DecodeMetadata, BitwisePdlOnOffAndGraphEager) {
  MetadataShape s{.page_size = 1, .batch = 64, .max_context = 4096, .swa = true, .fill_columns = 4096, .plan = true};
  ref::DecodeMetadataCase c = make_metadata_case(s);
  DeviceMetadata d(c, s);
  cudaStream_t stream;
  CUDA_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::vector<std::vector<int32_t>> results;
  for (int config = 0; config < 6; ++config) {
    PdlMode const pdl = config % 3 == 0 ? PdlMode::kOff : PdlMode::kOn;
    bool const graph = config % 2 == 1;
    d.args.inputs_written_before_chain = config >= 4;  // prologue reads: same bits
    {
      d.poison_outputs();
      if (graph) {
        cudaGraph_t g;
        cudaGraphExec_t e;
        CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
        BATON_ASSERT_OK(build_decode_metadata(d.args, {stream, pdl}));
        CUDA_CHECK(cudaStreamEndCapture(stream, &g));
        CUDA_CHECK(cudaGraphInstantiate(&e, g, 0));
        CUDA_CHECK(cudaGraphLaunch(e, stream));
        CUDA_CHECK(cudaStreamSynchronize(stream));
        cudaGraphExecDestroy(e);
        cudaGraphDestroy(g);
      } else {
        BATON_ASSERT_OK(build_decode_metadata(d.args, {stream, pdl}));
        CUDA_CHECK(cudaStreamSynchronize(stream));
      }
      results.push_back(snapshot(d));
    }
  }
  EXPECT_TRUE(d.matches(d.expected(c)));
  for (size_t i = 1; i < results.size(); ++i) {
    EXPECT_TRUE(bitwise_equal(results[i].data(), results[0].data(), results[0].size() * 4, "outputs vs PDL-off eager"))
        << "configuration " << i;
  }
  CUDA_CHECK(cudaStreamDestroy(stream));
}

}  // namespace
}  // namespace baton::test
