// Bad input to the metadata ops returns a Status naming the argument and its value, before
// any CUDA call: these run on a machine without a GPU. Pointers are never dereferenced by
// validation, so fake addresses stand in for device memory.
#include <gtest/gtest.h>

#include <climits>
#include <functional>
#include <string>

#include <cuda_runtime_api.h>

#include "baton/metadata.h"

namespace baton {
namespace {

// 16 MB apart: the views below never overlap unless a test places them so.
void* fake(uintptr_t i) { return reinterpret_cast<void*>(0x1000000 * i); }

DecodeMetadataArgs valid_decode_args() {
  DecodeMetadataArgs a;
  a.seq_lens = TensorView::contiguous(fake(1), DType::kInt64, {8});
  a.req_pool_indices = TensorView::contiguous(fake(2), DType::kInt64, {8});
  a.req_to_token = TensorView::contiguous(fake(3), DType::kInt32, {16, 4096});
  a.page_size = 64;
  a.cache_seqlens = TensorView::contiguous(fake(4), DType::kInt32, {8});
  a.cu_seqlens_k = TensorView::contiguous(fake(5), DType::kInt32, {9});
  a.page_table = TensorView::contiguous(fake(6), DType::kInt32, {8, 64});
  return a;
}

struct Mutation {
  char const* name;
  std::function<void(DecodeMetadataArgs&)> apply;
  std::vector<std::string> message_has;  // the argument and its value
};

TEST(DecodeMetadataValidation, ValidArgsAreSupported) {
  DecodeMetadataArgs a = valid_decode_args();
  Status s = build_decode_metadata_supported(a);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  a.full_to_swa = TensorView::contiguous(fake(7), DType::kInt64, {1000});
  a.swa_page_table = TensorView::contiguous(fake(8), DType::kInt32, {8, 64});
  a.num_kv_splits = TensorView::contiguous(fake(9), DType::kInt32, {8});
  a.split_plan = {32, 8, 16, 0};
  a.fill_columns = 64;
  a.error_flags = TensorView::contiguous(fake(10), DType::kInt32, {1});
  s = build_decode_metadata_supported(a);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
}

// PyTorch gives empty tensors a null data pointer: a batch of 0 passes every op's validation
// with such views (the GPU suite runs it: DecodeMetadata.EmptyBatchWithNullViews); a view
// with elements and a null pointer is still refused, optional ones included.
TEST(DecodeMetadataValidation, EmptyBatchTakesNullViews) {
  DecodeMetadataArgs a = valid_decode_args();
  for (TensorView* t : {&a.seq_lens, &a.req_pool_indices, &a.cache_seqlens}) t->shape[0] = 0;
  a.page_table.shape[0] = 0;
  for (TensorView* t : {&a.seq_lens, &a.req_pool_indices, &a.cache_seqlens, &a.page_table}) t->data = nullptr;
  a.cu_seqlens_k.shape[0] = 1;
  a.full_to_swa = TensorView::contiguous(fake(7), DType::kInt64, {1000});
  a.swa_page_table = TensorView::contiguous(nullptr, DType::kInt32, {0, 64});
  a.num_kv_splits = TensorView::contiguous(nullptr, DType::kInt32, {0});
  a.split_plan = {32, 8, 16, 0, 0, 264};
  Status s = build_decode_metadata_supported(a);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  EXPECT_TRUE(a.num_kv_splits.defined());
  EXPECT_FALSE(TensorView{}.defined());

  DecodeMetadataArgs b = valid_decode_args();
  b.num_kv_splits = TensorView::contiguous(nullptr, DType::kInt32, {8});
  b.split_plan = {32, 8, 16, 0};
  EXPECT_NE(build_decode_metadata_supported(b).message().find("num_kv_splits is null ([8] int32"), std::string::npos)
      << build_decode_metadata_supported(b).message();
  b = valid_decode_args();
  b.error_flags = TensorView::contiguous(nullptr, DType::kInt32, {1});
  EXPECT_NE(build_decode_metadata_supported(b).message().find("error_flags is null"), std::string::npos);
  b = valid_decode_args();
  b.error_flags = TensorView::contiguous(nullptr, DType::kInt32, {0});  // given, but holds no flag
  EXPECT_NE(build_decode_metadata_supported(b).message().find("error_flags must hold at least 1"), std::string::npos);
  b = a;
  b.cu_seqlens_k.data = nullptr;  // [1]: the op writes its 0
  EXPECT_NE(build_decode_metadata_supported(b).message().find("cu_seqlens_k is null ([1] int32"), std::string::npos);

  SpecPageTableArgs sp;
  sp.num_draft_tokens = 2;
  sp.committed = TensorView::contiguous(nullptr, DType::kInt32, {0, 100});
  sp.committed_lens = TensorView::contiguous(nullptr, DType::kInt32, {0});
  sp.start = TensorView::contiguous(nullptr, DType::kInt64, {0});
  sp.draft = TensorView::contiguous(nullptr, DType::kInt32, {0, 8});
  sp.draft_lens = TensorView::contiguous(nullptr, DType::kInt64, {0});
  sp.page_table = TensorView::contiguous(nullptr, DType::kInt32, {0, 128});
  sp.cache_seqlens = TensorView::contiguous(nullptr, DType::kInt32, {0});
  sp.cu_seqlens_k = TensorView::contiguous(fake(7), DType::kInt32, {1});
  s = build_spec_page_table_supported(sp);
  EXPECT_TRUE(s.is_ok()) << s.to_string();

  // Past 2^31 - 1 columns (at batch 0 no product with the batch bounds them).
  b = a;
  b.page_table.shape[1] = int64_t(1) << 40;
  EXPECT_NE(build_decode_metadata_supported(b).message().find("page_table has 1099511627776 columns"), std::string::npos)
      << build_decode_metadata_supported(b).message();
  b = a;
  b.req_to_token.shape[1] = int64_t(1) << 40;
  EXPECT_NE(build_decode_metadata_supported(b).message().find("req_to_token has 1099511627776 tokens per row"),
            std::string::npos)
      << build_decode_metadata_supported(b).message();
  SpecPageTableArgs sq = sp;
  sq.page_table.shape[1] = INT64_MAX;
  EXPECT_NE(build_spec_page_table_supported(sq).message().find("page_table has 9223372036854775807 columns"),
            std::string::npos);

  // A batch of requests whose sources have no columns: req_to_token, committed and draft empty
  // and null; the empty page table takes PyTorch's strides ([8, 0]: [0, 1]) or any other.
  b = valid_decode_args();
  b.req_to_token = TensorView::contiguous(nullptr, DType::kInt32, {16, 0});
  b.page_table = TensorView::contiguous(nullptr, DType::kInt32, {8, 0});
  s = build_decode_metadata_supported(b);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  b.page_table = TensorView::strided(nullptr, DType::kInt32, {8, 0}, {0, 0});
  s = build_decode_metadata_supported(b);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  sq = sp;
  sq.num_draft_tokens = 1;
  sq.committed = TensorView::contiguous(nullptr, DType::kInt32, {4, 0});
  sq.committed_lens = TensorView::contiguous(fake(2), DType::kInt32, {4});
  sq.start = TensorView::contiguous(nullptr, DType::kInt32, {4});  // elements, null: refused
  sq.draft = TensorView::contiguous(nullptr, DType::kInt32, {4, 0});
  sq.draft_lens = TensorView::contiguous(fake(4), DType::kInt32, {4});
  sq.page_table = TensorView::contiguous(fake(5), DType::kInt32, {4, 16});
  sq.cache_seqlens = TensorView::contiguous(fake(6), DType::kInt32, {4});
  sq.cu_seqlens_k = TensorView::contiguous(fake(7), DType::kInt32, {5});
  EXPECT_NE(build_spec_page_table_supported(sq).message().find("start is null ([4] int32"), std::string::npos)
      << build_spec_page_table_supported(sq).message();
  sq.start = TensorView{};
  s = build_spec_page_table_supported(sq);
  EXPECT_TRUE(s.is_ok()) << s.to_string();

  PlanKvSplitsArgs pl;
  pl.cache_seqlens = TensorView::contiguous(nullptr, DType::kInt32, {0});
  pl.num_kv_splits = TensorView::contiguous(nullptr, DType::kInt32, {0});
  pl.params = {32, 8, 16, 132};
  s = plan_kv_splits_supported(pl);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
}

TEST(DecodeMetadataValidation, BadInputNamesArgumentAndValue) {
  std::vector<Mutation> const mutations = {
      {"page size not a power of two", [](auto& a) { a.page_size = 48; }, {"page_size", "48"}},
      {"page size too large", [](auto& a) { a.page_size = 512; }, {"page_size", "512"}},
      {"page size zero", [](auto& a) { a.page_size = 0; }, {"page_size", "0"}},
      {"null seq_lens", [](auto& a) { a.seq_lens.data = nullptr; }, {"seq_lens", "null"}},
      {"null page_table", [](auto& a) { a.page_table.data = nullptr; }, {"page_table", "null"}},
      {"null req_to_token", [](auto& a) { a.req_to_token.data = nullptr; }, {"req_to_token", "null"}},
      {"float seq_lens", [](auto& a) { a.seq_lens.dtype = DType::kFloat32; }, {"seq_lens", "float32"}},
      {"int64 page_table", [](auto& a) { a.page_table.dtype = DType::kInt64; }, {"page_table", "int64"}},
      {"seq_len_delta past int32", [](auto& a) { a.seq_len_delta = INT64_MAX; },
       {"seq_len_delta 9223372036854775807 is outside [-2^31, 2^31 - 1]"}},
      {"seq_len_delta below int32", [](auto& a) { a.seq_len_delta = int64_t(INT32_MIN) - 1; },
       {"seq_len_delta -2147483649"}},
      {"batch x max_context past int64",  // one broadcast row of 2^62 tokens: the product would wrap
       [](auto& a) {
         a.req_to_token = TensorView::strided(a.req_to_token.data, DType::kInt32, {1, int64_t(1) << 62}, {0, 0});
       },
       {"max_context 4611686018427387904", "overflow the int32 cu_seqlens_k"}},
      {"page_table past the address space", [](auto& a) { a.page_table.stride[0] = INT64_MAX / 8; },
       {"page_table at address", "reaches past the end of the address space"}},
      {"batch mismatch", [](auto& a) { a.req_pool_indices.shape[0] = 7; }, {"req_pool_indices", "7", "8"}},
      {"cu_seqlens_k too short", [](auto& a) { a.cu_seqlens_k.shape[0] = 8; }, {"cu_seqlens_k", "8", "9"}},
      {"page table capacity too small", [](auto& a) { a.page_table.shape[1] = 63; }, {"page_table", "63", "64"}},
      {"req_to_token rank", [](auto& a) { a.req_to_token.rank = 1; }, {"req_to_token", "rank 1"}},
      {"strided cache_seqlens", [](auto& a) { a.cache_seqlens.stride[0] = 2; }, {"cache_seqlens", "stride"}},
      {"swa table without map", [](auto& a) { a.swa_page_table = a.page_table; }, {"full_to_swa is left out"}},
      {"swa map wrong dtype",
       [](auto& a) {
         a.swa_page_table = a.page_table;
         a.full_to_swa = TensorView::contiguous(fake(7), DType::kInt32, {100});
       },
       {"full_to_swa", "int32"}},
      {"splits without heads",
       [](auto& a) { a.num_kv_splits = TensorView::contiguous(fake(9), DType::kInt32, {8}); },
       {"num_q_heads", "0"}},
      {"heads not dividing",
       [](auto& a) {
         a.num_kv_splits = TensorView::contiguous(fake(9), DType::kInt32, {8});
         a.split_plan = {30, 8, 16, 0};
       },
       {"num_q_heads 30", "num_kv_heads 8"}},
      {"max_splits zero",
       [](auto& a) {
         a.num_kv_splits = TensorView::contiguous(fake(9), DType::kInt32, {8});
         a.split_plan = {32, 8, 0, 0};
       },
       {"max_splits", "0"}},
      {"q_len past 8",
       [](auto& a) {
         a.num_kv_splits = TensorView::contiguous(fake(9), DType::kInt32, {8});
         a.split_plan = {32, 8, 16, 0, 0, 264, 9};
       },
       {"split_plan.q_len", "9"}},
      {"head_dim not 64, 128 or 256",
       [](auto& a) {
         a.num_kv_splits = TensorView::contiguous(fake(9), DType::kInt32, {8});
         a.split_plan = {32, 8, 16, 0, 0, 264, 4, 96};
       },
       {"split_plan.head_dim", "96"}},
      {"fill past capacity", [](auto& a) { a.fill_columns = 65; }, {"fill_columns", "65"}},
      {"negative stride", [](auto& a) { a.req_to_token.stride[0] = -4096; }, {"req_to_token", "negative stride"}},
      {"cu_seqlens_k could overflow",
       [](auto& a) {
         a.req_to_token.shape[1] = int64_t(1) << 29;
         a.page_table.shape[1] = (int64_t(1) << 29) / 64;
       },
       {"could overflow the int32 cu_seqlens_k"}},
      {"error_flags dtype",
       [](auto& a) { a.error_flags = TensorView::contiguous(fake(10), DType::kInt64, {1}); },
       {"error_flags", "int64"}},
      {"strided full_to_swa (the kernel reads it densely)",
       [](auto& a) {
         a.swa_page_table = TensorView::contiguous(fake(8), DType::kInt32, {8, 64});
         a.full_to_swa = TensorView::strided(fake(7), DType::kInt64, {1000}, {2});
       },
       {"full_to_swa", "stride 1"}},
      {"page_table rows on one row", [](auto& a) { a.page_table.stride[0] = 0; }, {"page_table", "overlapping elements"}},
      {"swa_page_table columns on one element",
       [](auto& a) {
         a.full_to_swa = TensorView::contiguous(fake(7), DType::kInt64, {1000});
         a.swa_page_table = TensorView::strided(fake(8), DType::kInt32, {8, 64}, {64, 0});
       },
       {"swa_page_table", "overlapping elements"}},
      {"cache_seqlens in place over seq_lens",
       [](auto& a) { a.seq_lens = TensorView::contiguous(fake(4), DType::kInt32, {8}); },
       {"cache_seqlens overlaps seq_lens"}},
      {"page_table over req_to_token", [](auto& a) { a.page_table.data = fake(3); }, {"page_table overlaps req_to_token"}},
      {"cu_seqlens_k over cache_seqlens", [](auto& a) { a.cu_seqlens_k.data = fake(4); },
       {"cache_seqlens overlaps cu_seqlens_k"}},
      {"num_kv_splits inside page_table",
       [](auto& a) {
         a.num_kv_splits = TensorView::contiguous(fake(6), DType::kInt32, {8});
         a.split_plan = {32, 8, 16, 0};
       },
       {"page_table overlaps num_kv_splits"}},
      {"error_flags inside cu_seqlens_k",
       [](auto& a) { a.error_flags = TensorView::contiguous(fake(5), DType::kInt32, {1}); },
       {"cu_seqlens_k overlaps error_flags"}},
      {"rank past the view's arrays", [](auto& a) { a.req_to_token.rank = 7; }, {"req_to_token", "rank 7"}},
  };
  for (Mutation const& m : mutations) {
    SCOPED_TRACE(m.name);
    DecodeMetadataArgs a = valid_decode_args();
    m.apply(a);
    for (Status const& s : {build_decode_metadata_supported(a), build_decode_metadata(a)}) {
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
      EXPECT_NE(s.message().find("build_decode_metadata"), std::string::npos) << s.message();
      for (auto const& needle : m.message_has) EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
    }
  }
}

// On a machine without a usable GPU, valid arguments get past validation and the op reports
// the CUDA failure as a Status instead of crashing. Skipped where a GPU is present (the fake
// pointers would then reach a kernel).
TEST(DecodeMetadataValidation, NoGpuGivesCudaErrorStatus) {
  int count = 0;
  if (cudaGetDeviceCount(&count) == cudaSuccess && count > 0) GTEST_SKIP() << "a GPU is present";
  Status s = build_decode_metadata(valid_decode_args());
  EXPECT_EQ(s.code(), StatusCode::kCudaError) << s.to_string();
  EXPECT_FALSE(s.message().empty());
}

TEST(SpecPageTableValidation, BadInputNamesArgument) {
  SpecPageTableArgs a;
  a.num_draft_tokens = 3;
  a.committed = TensorView::contiguous(fake(1), DType::kInt32, {4, 100});
  a.committed_lens = TensorView::contiguous(fake(2), DType::kInt32, {4});
  a.draft = TensorView::contiguous(fake(3), DType::kInt32, {12, 8});
  a.draft_lens = TensorView::contiguous(fake(4), DType::kInt64, {12});
  a.page_table = TensorView::contiguous(fake(5), DType::kInt32, {12, 128});
  a.cache_seqlens = TensorView::contiguous(fake(6), DType::kInt32, {12});
  a.cu_seqlens_k = TensorView::contiguous(fake(7), DType::kInt32, {13});
  Status ok = build_spec_page_table_supported(a);
  EXPECT_TRUE(ok.is_ok()) << ok.to_string();

  auto expect_bad = [](SpecPageTableArgs const& bad, char const* needle) {
    for (Status const& s : {build_spec_page_table_supported(bad), build_spec_page_table(bad)}) {
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
      EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
    }
  };
  SpecPageTableArgs b = a;
  b.num_draft_tokens = 0;
  expect_bad(b, "num_draft_tokens 0");
  b = a;
  b.draft.shape[0] = 11;
  expect_bad(b, "draft dim 0 is 11");
  b = a;
  b.committed_lens.shape[0] = 5;
  expect_bad(b, "committed_lens has 5 entries");
  b = a;
  b.cu_seqlens_k.shape[0] = 12;
  expect_bad(b, "cu_seqlens_k dim 0 is 12");
  b = a;
  b.start = TensorView::contiguous(fake(8), DType::kFloat16, {12});
  expect_bad(b, "start dtype float16");
  b = a;
  b.draft.data = nullptr;
  expect_bad(b, "draft is null");
  b = a;
  b.page_table.stride[0] = 0;
  expect_bad(b, "page_table has overlapping elements");
  b = a;
  b.cache_seqlens.data = fake(4);  // on draft_lens
  expect_bad(b, "cache_seqlens overlaps draft_lens");
  b = a;
  b.page_table.data = fake(1);  // on committed
  expect_bad(b, "page_table overlaps committed");
  b = a;
  b.start = TensorView::contiguous(fake(7), DType::kInt32, {12});  // on cu_seqlens_k
  expect_bad(b, "cu_seqlens_k overlaps start");
  b = a;  // a broadcast batch past 2^30: batch x R would have wrapped int64 at R = 4
  b.num_draft_tokens = 4;
  b.committed = TensorView::strided(fake(1), DType::kInt32, {(int64_t(1) << 62) + 1, 100}, {0, 1});
  expect_bad(b, "batch_size 4611686018427387905 is too large");
}

TEST(PlanKvSplitsValidation, BadInputNamesArgument) {
  PlanKvSplitsArgs a;
  a.cache_seqlens = TensorView::contiguous(fake(1), DType::kInt32, {8});
  a.num_kv_splits = TensorView::contiguous(fake(2), DType::kInt32, {8});
  a.params = {32, 8, 16, 132};
  Status ok = plan_kv_splits_supported(a);
  EXPECT_TRUE(ok.is_ok()) << ok.to_string();
  PlanKvSplitsArgs b = a;
  b.params.num_kv_heads = 0;
  EXPECT_NE(plan_kv_splits(b).message().find("num_kv_heads 0"), std::string::npos);
  b = a;
  b.cache_seqlens.dtype = DType::kInt64;
  EXPECT_NE(plan_kv_splits(b).message().find("cache_seqlens dtype int64"), std::string::npos);
  b = a;
  b.num_kv_splits.shape[0] = 4;
  EXPECT_NE(plan_kv_splits(b).message().find("num_kv_splits dim 0 is 4"), std::string::npos);
  for (int64_t stride : {0, 2}) {  // the kernel reads the lengths densely
    b = a;
    b.cache_seqlens.stride[0] = stride;
    EXPECT_NE(plan_kv_splits(b).message().find("cache_seqlens must have stride 1"), std::string::npos)
        << plan_kv_splits(b).message();
  }
  b = a;
  b.params.num_q_heads = INT32_MAX;  // the CTAs per request would overflow int
  b.params.num_kv_heads = 1;
  EXPECT_NE(plan_kv_splits(b).message().find("split_plan.num_q_heads 2147483647 is past 1048560"), std::string::npos)
      << plan_kv_splits(b).message();
  b = a;
  b.num_kv_splits.data = b.cache_seqlens.data;  // in place
  EXPECT_NE(plan_kv_splits(b).message().find("num_kv_splits overlaps cache_seqlens"), std::string::npos);
  b = a;
  b.params.num_sms = -1;
  EXPECT_EQ(plan_kv_splits(b).code(), StatusCode::kInvalidArgument);
  b = a;
  b.params.ctas_per_wave = -5;
  EXPECT_NE(plan_kv_splits(b).message().find("ctas_per_wave -5"), std::string::npos);
  for (int q_len : {0, 9}) {
    b = a;
    b.params.q_len = q_len;
    EXPECT_NE(plan_kv_splits(b).message().find("split_plan.q_len " + std::to_string(q_len)), std::string::npos);
  }
  for (int head_dim : {-1, 32, 100, 512}) {
    b = a;
    b.params.head_dim = head_dim;
    EXPECT_NE(plan_kv_splits(b).message().find("split_plan.head_dim " + std::to_string(head_dim)), std::string::npos);
  }
  b = a;
  b.params.q_len = 8;
  EXPECT_TRUE(plan_kv_splits_supported(b).is_ok());
  for (int head_dim : {0, 64, 128, 256}) {
    b.params.head_dim = head_dim;
    EXPECT_TRUE(plan_kv_splits_supported(b).is_ok()) << head_dim;
  }
}

}  // namespace
}  // namespace baton
