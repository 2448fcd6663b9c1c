// The PDL race harness on the metadata kernels, and the mutation proof: the same harness
// must fail a build_decode_metadata kernel compiled without its griddepcontrol.wait.
#include <gtest/gtest.h>

#include "baton/metadata.h"
#include "common/gpu.h"
#include "common/race_harness.h"
#include "gpu/metadata_case.h"
#include "metadata/decode_metadata_kernel.cuh"
#include "runtime/launch.h"

namespace baton::test {
namespace {

using MetadataRace = RaceTest;

// The staged copies of the inputs that an earlier kernel of the step would write.
struct StagedMetadata {
  static MetadataShape default_shape() {
    MetadataShape s;  // page size 1, 64 requests of up to 4096 tokens, SWA and split plan
    s.batch = 64;
    s.max_context = 4096;
    s.swa = true;
    s.plan = true;
    s.seed = 42;
    return s;
  }
  explicit StagedMetadata(MetadataShape const& s = default_shape()) : shape(s) {}

  MetadataShape shape;
  ref::DecodeMetadataCase c = make_metadata_case(shape);
  DeviceMetadata d{c, shape};
  DeviceBuffer<int32_t> src_lens = DeviceBuffer<int32_t>::from(std::vector<int32_t>(c.seq_lens.begin(), c.seq_lens.end()));
  DeviceBuffer<int32_t> src_pool =
      DeviceBuffer<int32_t>::from(std::vector<int32_t>(c.req_pool_indices.begin(), c.req_pool_indices.end()));
  DeviceBuffer<int32_t> src_rt = DeviceBuffer<int32_t>::from(c.req_to_token.data);
  DeviceBuffer<int64_t> src_swa = DeviceBuffer<int64_t>::from(c.full_to_swa);
  ref::DecodeMetadataResult want = d.expected(c);

  RaceHarness harness() {
    RaceHarness h;
    // Poison: lengths 0xABABABAB (negative), pool rows out of range, slots -1.
    h.inputs = {{d.seq_lens32.get(), src_lens.get(), src_lens.bytes(), 0xAB},
                {d.pool32.get(), src_pool.get(), src_pool.bytes(), 0x7F},
                {d.req_to_token.get(), src_rt.get(), src_rt.bytes(), 0xFF}};
    // full_to_swa too, when the shape has one: every entry -1 (an unmapped SWA slot).
    if (d.full_to_swa.bytes() > 0) h.inputs.push_back({d.full_to_swa.get(), src_swa.get(), src_swa.bytes(), 0xFF});
    for (auto* b : {&d.cache_seqlens, &d.cu_seqlens_k, &d.page_table, &d.swa_page_table, &d.num_kv_splits}) {
      if (b->bytes() > 0) h.outputs.push_back({b->get(), b->bytes(), 0xAB});  // no SWA table: none
    }
    h.outputs.push_back({d.error_flags.get(), d.error_flags.bytes(), 0});
    h.check = [this] { return d.matches(want); };
    return h;
  }
};

TEST_F(MetadataRace, DecodeMetadataWaitsBeforeReading) {
  StagedMetadata s;
  RaceHarness h = s.harness();
  h.consumer = [&](cudaStream_t stream) { return build_decode_metadata(s.d.args, {stream, PdlMode::kOn}); };
  EXPECT_TRUE(h.run());
}

// The same through the vector path, which the staged shape above does not take (its page-table
// rows of 4099 columns are not 16-byte aligned): 16-byte rows, 16-byte stores (no SWA).
TEST_F(MetadataRace, DecodeMetadataVectorPathWaitsBeforeReading) {
  MetadataShape shape = StagedMetadata::default_shape();
  shape.aligned = true;
  shape.swa = false;
  StagedMetadata s(shape);
  RaceHarness h = s.harness();
  h.consumer = [&](cudaStream_t stream) { return build_decode_metadata(s.d.args, {stream, PdlMode::kOn}); };
  EXPECT_TRUE(h.run());
}

// Launches the library's kernel directly, with or without its wait, as the library does (PDL
// on), in its scalar or its vectorised form (kVec; the library picks scalar for this staged
// shape, whose page-table rows of 4099 columns are not 16-byte aligned, and vectorised for
// aligned page-1 tables). Params are wired by hand because the inputs are poisoned at launch time.
Status launch_decode_metadata_kernel(DecodeMetadataArgs const& a, bool wait, bool vec, cudaStream_t stream) {
  metadata::DecodeMetadataParams p{};
  p.seq_lens = {a.seq_lens.data, 1, false};
  p.req_pool_indices = {a.req_pool_indices.data, 1, false};
  p.req_to_token = static_cast<int32_t const*>(a.req_to_token.data);
  p.rt_row_stride = a.req_to_token.stride[0];
  p.rt_col_stride = a.req_to_token.stride[1];
  p.num_rows = a.req_to_token.shape[0];
  p.max_context = a.req_to_token.shape[1];
  p.full_to_swa = static_cast<int64_t const*>(a.full_to_swa.data);
  p.swa_map_size = a.full_to_swa.shape[0];
  p.batch_size = static_cast<int>(a.seq_lens.shape[0]);
  p.page_shift = 0;  // page_size 1
  p.max_pages = a.page_table.shape[1];
  p.cols_per_item = metadata::kColsPerItem;
  p.num_items = p.batch_size * ((p.max_context + metadata::kColsPerItem - 1) / metadata::kColsPerItem);
  p.cache_seqlens = static_cast<int32_t*>(a.cache_seqlens.data);
  p.cu_seqlens_k = static_cast<int32_t*>(a.cu_seqlens_k.data);
  p.page_table = static_cast<int32_t*>(a.page_table.data);
  p.pt_row_stride = a.page_table.stride[0];
  p.pt_col_stride = 1;
  p.swa_page_table = static_cast<int32_t*>(a.swa_page_table.data);
  p.swa_row_stride = a.swa_page_table.stride[0];
  p.swa_col_stride = 1;
  p.error_flags = static_cast<int32_t*>(a.error_flags.data);
  // 32 q heads / 8 kv heads: group 4, ceil(32 / 4) = 8 CTAs per request in the heuristic.
  p.plan = {static_cast<int32_t*>(a.num_kv_splits.data), a.split_plan.max_splits, a.split_plan.num_sms, 8};
  detail::LaunchConfig config{dim3(1 + static_cast<unsigned>(p.num_items)), dim3(metadata::kThreads)};
  detail::KernelTraits traits{"decode_metadata_mutation", /*waits_on_prior_grid=*/true};
  auto* kernel = vec ? (wait ? metadata::decode_metadata_kernel<true, true> : metadata::decode_metadata_kernel<true, false>)
                     : (wait ? metadata::decode_metadata_kernel<false, true> : metadata::decode_metadata_kernel<false, false>);
  return detail::launch(kernel, traits, config, {stream, PdlMode::kOn}, p);
}

TEST_F(MetadataRace, HarnessCatchesAMissingWait) {
  BATON_SKIP_WHERE_NOTHING_CAN_RACE();
  for (bool vec : {false, true}) {  // both forms of the kernel
    SCOPED_TRACE(vec ? "vectorised kernel" : "scalar kernel (the one build_decode_metadata runs here)");
    StagedMetadata s;
    RaceHarness h = s.harness();
    // Control: the hand-wired launch of the waiting kernel passes.
    h.consumer = [&](cudaStream_t stream) { return launch_decode_metadata_kernel(s.d.args, true, vec, stream); };
    ASSERT_TRUE(h.run()) << "control launch (with the wait) failed: the mutation result would mean nothing";
    // Mutant: the same kernel compiled without griddepcontrol.wait must fail the harness.
    h.consumer = [&](cudaStream_t stream) { return launch_decode_metadata_kernel(s.d.args, false, vec, stream); };
    RaceHarness::Outcome how = RaceHarness::Outcome::kError;
    ::testing::AssertionResult const r = h.run(&how);  // the check must fail, not setup or a launch
    EXPECT_EQ(how, RaceHarness::Outcome::kCheckFailed)
        << "the race harness did not catch a kernel that reads before griddepcontrol.wait: " << r.message();
  }
}

TEST_F(MetadataRace, EarlyReadsAreOnlyForInputsWrittenBeforeTheChain) {
  BATON_SKIP_WHERE_NOTHING_CAN_RACE();
  // inputs_written_before_chain promises the inputs are ready before the chain; the harness
  // writes them from a PDL-chained kernel, breaking that promise, so the prologue reads must
  // show up as wrong outputs. This proves the flag really moves the reads before the wait
  // (and that the default, tested above, does not).
  StagedMetadata s;
  s.d.args.inputs_written_before_chain = true;
  RaceHarness h = s.harness();
  h.runs = 2;
  h.consumer = [&](cudaStream_t stream) { return build_decode_metadata(s.d.args, {stream, PdlMode::kOn}); };
  RaceHarness::Outcome how = RaceHarness::Outcome::kError;
  ::testing::AssertionResult const r = h.run(&how);  // the check must fail, not setup or a launch
  EXPECT_EQ(how, RaceHarness::Outcome::kCheckFailed) << r.message();
}

TEST_F(MetadataRace, SpecPageTableWaitsBeforeReading) {
  int const batch = 16, r = 2, width = 300;
  std::vector<int32_t> committed(batch * width), draft(batch * r * 8), la(batch, 250), lb(batch * r, 5);
  for (size_t i = 0; i < committed.size(); ++i) committed[i] = int32_t(i * 7 + 1);
  for (size_t i = 0; i < draft.size(); ++i) draft[i] = int32_t(i * 3 + 2);
  auto src_committed = DeviceBuffer<int32_t>::from(committed), src_draft = DeviceBuffer<int32_t>::from(draft);
  auto src_la = DeviceBuffer<int32_t>::from(la), src_lb = DeviceBuffer<int32_t>::from(lb);
  DeviceBuffer<int32_t> d_committed(committed.size()), d_draft(draft.size()), d_la(la.size()), d_lb(lb.size());
  DeviceBuffer<int32_t> pt(batch * r * 256), lens(batch * r), cu(batch * r + 1);
  SpecPageTableArgs a;
  a.num_draft_tokens = r;
  a.committed = TensorView::contiguous(d_committed.get(), DType::kInt32, {batch, width});
  a.committed_lens = TensorView::contiguous(d_la.get(), DType::kInt32, {batch});
  a.draft = TensorView::contiguous(d_draft.get(), DType::kInt32, {batch * r, 8});
  a.draft_lens = TensorView::contiguous(d_lb.get(), DType::kInt32, {batch * r});
  a.page_table = TensorView::contiguous(pt.get(), DType::kInt32, {batch * r, 256});
  a.cache_seqlens = TensorView::contiguous(lens.get(), DType::kInt32, {batch * r});
  a.cu_seqlens_k = TensorView::contiguous(cu.get(), DType::kInt32, {batch * r + 1});

  ref::SpecPageTableCase c;
  c.num_draft_tokens = r;
  c.committed = ref::IntMatrix::make(batch, width, width, 1, 0);
  c.committed.data = committed;
  c.committed_lens.assign(la.begin(), la.end());
  c.draft = ref::IntMatrix::make(batch * r, 8, 8, 1, 0);
  c.draft.data = draft;
  c.draft_lens.assign(lb.begin(), lb.end());
  ref::SpecPageTableResult want;
  want.page_table = ref::IntMatrix::make(batch * r, 256, 256, 1, kPoison);
  ref::build_spec_page_table(c, want);

  RaceHarness h;
  h.inputs = {{d_committed.get(), src_committed.get(), src_committed.bytes(), 0xFF},
              {d_draft.get(), src_draft.get(), src_draft.bytes(), 0xFF},
              {d_la.get(), src_la.get(), src_la.bytes(), 0x00},
              {d_lb.get(), src_lb.get(), src_lb.bytes(), 0x00}};
  h.outputs = {{pt.get(), pt.bytes(), 0xAB}, {lens.get(), lens.bytes(), 0xAB}, {cu.get(), cu.bytes(), 0xAB}};
  h.consumer = [&](cudaStream_t stream) { return build_spec_page_table(a, {stream, PdlMode::kOn}); };
  h.check = [&] {
    auto res = equal_exact(pt.download(), want.page_table.data, "page_table");
    if (res) res = equal_exact(lens.download(), want.cache_seqlens, "cache_seqlens");
    if (res) res = equal_exact(cu.download(), want.cu_seqlens_k, "cu_seqlens_k");
    return res;
  };
  EXPECT_TRUE(h.run());
}

TEST_F(MetadataRace, PlanKvSplitsWaitsBeforeReading) {
  std::vector<int32_t> lens(100);
  for (int i = 0; i < 100; ++i) lens[i] = 100 + i * 397;
  auto src = DeviceBuffer<int32_t>::from(lens);
  DeviceBuffer<int32_t> d_lens(lens.size()), splits(lens.size());
  PlanKvSplitsArgs a;
  a.cache_seqlens = TensorView::contiguous(d_lens.get(), DType::kInt32, {100});
  a.num_kv_splits = TensorView::contiguous(splits.get(), DType::kInt32, {100});
  a.params = {32, 8, 32, 132};
  std::vector<int32_t> want = ref::plan_kv_splits(lens, {32, 8, 32, 132});
  RaceHarness h;
  h.inputs = {{d_lens.get(), src.get(), src.bytes(), 0x00}};  // poison: all lengths 0 -> 1 split each
  h.outputs = {{splits.get(), splits.bytes(), 0xAB}};
  h.consumer = [&](cudaStream_t stream) { return plan_kv_splits(a, {stream, PdlMode::kOn}); };
  h.check = [&] { return equal_exact(splits.download(), want, "num_kv_splits"); };
  EXPECT_TRUE(h.run());
}

}  // namespace
}  // namespace baton::test
