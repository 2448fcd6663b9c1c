// decode_attention without a GPU: the reference on hand-worked cases, the workspace size,
// argument validation (a Status naming the argument and value, before any CUDA call), and the
// producer's page-table prefetch map and split ranges (the same index math the kernel runs).
#include <gtest/gtest.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cmath>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include <cuda_runtime_api.h>

#include "attention/page_prefetch.h"
#include "attention/split_range.h"
#include "attention/validate.h"
#include "baton/attention.h"
#include "reference/attention_ref.h"

namespace baton {
namespace {

// One request, one page of 4 keys, head_dim 2, one head; q holds q_len rows.
ref::AttentionCase one_page_case(std::vector<float> k, std::vector<float> v, std::vector<float> q, int len) {
  ref::AttentionCase c;
  c.head_dim = 2;
  c.page_size = 4;
  c.q = q;
  c.k = k;
  c.v = v;
  c.stride_token = c.head_dim;
  c.stride_head = 0;
  c.stride_page = 4 * c.head_dim;
  c.cache_seqlens = {len};
  c.page_table = {0};
  c.pt_stride = 1;
  return c;
}

TEST(AttentionReference, HandWorkedTwoKeys) {
  // q = (1, 0), keys (1, 0) and (0, 1), scale 1: scores 1 and 0.
  auto c = one_page_case({1, 0, 0, 1, 0, 0, 0, 0}, {2, 0, 0, 4, 0, 0, 0, 0}, {1, 0}, 2);
  std::vector<double> out, lse;
  ref::decode_attention(c, out, lse);
  double const e = std::exp(1.0);
  EXPECT_NEAR(out[0], 2 * e / (e + 1), 1e-12);
  EXPECT_NEAR(out[1], 4 / (e + 1), 1e-12);
  EXPECT_NEAR(lse[0], std::log(e + 1), 1e-12);
  // A sink of logit 0 adds exp(0) to the denominator, once.
  c.sinks = {0.f};
  ref::decode_attention(c, out, lse);
  EXPECT_NEAR(out[0], 2 * e / (e + 2), 1e-12);
  EXPECT_NEAR(lse[0], std::log(e + 2), 1e-12);
}

TEST(AttentionReference, EmptyRowIsZerosWithMinusInfLse) {
  auto c = one_page_case({1, 0, 0, 1, 0, 0, 0, 0}, {2, 0, 0, 4, 0, 0, 0, 0}, {1, 0}, 0);
  c.sinks = {1.f};
  std::vector<double> out, lse;
  ref::decode_attention(c, out, lse);
  EXPECT_EQ(out[0], 0);
  EXPECT_EQ(out[1], 0);
  EXPECT_TRUE(std::isinf(lse[0]) && lse[0] < 0);
}

TEST(AttentionReference, WindowAndCausalDraftTokens) {
  // 3 keys, q_len 2: token 0 sees keys 0..1, token 1 sees 0..2; window 0: only itself.
  auto c = one_page_case({1, 0, 1, 0, 1, 0, 0, 0}, {1, 0, 2, 0, 3, 0, 0, 0}, {1, 0, 1, 0}, 3);
  c.q_len = 2;
  std::vector<double> out, lse;
  ref::decode_attention(c, out, lse);
  EXPECT_NEAR(out[0], 1.5, 1e-12);  // equal scores: mean of v0, v1
  EXPECT_NEAR(out[2], 2.0, 1e-12);  // mean of v0, v1, v2
  c.window_left = 0;
  ref::decode_attention(c, out, lse);
  EXPECT_NEAR(out[0], 2.0, 1e-12);
  EXPECT_NEAR(out[2], 3.0, 1e-12);
}

TEST(AttentionReference, VHasStridesOfItsOwn) {
  // K dense (4 keys x 2 dims); V padded: rows of 3 elements, the padding poisoned.
  auto c = one_page_case({1, 0, 0, 1, 0, 0, 0, 0}, {2, 0, -9, 0, 4, -9, 0, 0, -9, 0, 0, -9}, {1, 0}, 2);
  c.v_stride_token = 3;
  c.v_stride_page = 12;
  c.v_stride_head = 0;
  EXPECT_EQ(c.v_offset(0, 1, 0), 3);
  EXPECT_EQ(c.kv_offset(0, 1, 0), 2);
  std::vector<double> out, lse;
  ref::decode_attention(c, out, lse);
  double const e = std::exp(1.0);  // scores 1 and 0, as in HandWorkedTwoKeys
  EXPECT_NEAR(out[0], 2 * e / (e + 1), 1e-12);
  EXPECT_NEAR(out[1], 4 / (e + 1), 1e-12);
}

TEST(AttentionReference, AlibiAfterTheSoftcap) {
  // Two keys, q = (4, 0), scale 1: raw scores 4 (key 0) and 0 (key 1); cap 2; slope 1, the query
  // at position 1, so key 0 is 1 behind: s0 = 2 tanh(2) - 1, s1 = 0.
  auto c = one_page_case({1, 0, 0, 1, 0, 0, 0, 0}, {1, 0, 0, 1, 0, 0, 0, 0}, {4, 0}, 2);
  c.softcap = 2;
  c.alibi = {1.f};
  std::vector<double> out, lse;
  ref::decode_attention(c, out, lse);
  double const s0 = 2 * std::tanh(2.0) - 1;
  EXPECT_NEAR(lse[0], std::log(std::exp(s0) + 1), 1e-12);
  EXPECT_NEAR(out[0], std::exp(s0) / (std::exp(s0) + 1), 1e-12);
  // The negative control's order: 2 tanh((4 - 1) / 2).
  c.alibi_before_softcap = true;
  ref::decode_attention(c, out, lse);
  EXPECT_NEAR(lse[0], std::log(std::exp(2 * std::tanh(1.5)) + 1), 1e-12);
}

TEST(AttentionWorkspace, SizeFollowsMaxSplits) {
  EXPECT_EQ(decode_attention_workspace_bytes(4, 1, 32, 128, 1), 0u);
  size_t const rows = 4 * 8 * 1 * 32;
  EXPECT_EQ(decode_attention_workspace_bytes(4, 1, 32, 128, 8), rows * 128 * 4 + rows * 4);
  // The lse part rounds up to 16 bytes: 6 rows of lse (24 -> 32).
  EXPECT_EQ(decode_attention_workspace_bytes(1, 1, 3, 64, 2), 6 * 64 * 4 + 32);
  // What decode_attention rejects sizes nothing (no size_t wrap for absurd ints): the call then
  // names the argument.
  EXPECT_EQ(decode_attention_workspace_bytes(4, 1, 32, 96, 8), 0u);                 // head_dim
  EXPECT_EQ(decode_attention_workspace_bytes(4, 9, 32, 128, 8), 0u);                // q_len
  EXPECT_EQ(decode_attention_workspace_bytes(4, 1, 32, 128, 1025), 0u);             // max_splits
  EXPECT_EQ(decode_attention_workspace_bytes(65536, 1, 32, 128, 8), 0u);            // batch_size
  EXPECT_EQ(decode_attention_workspace_bytes(0, 1, 32, 128, 8), 0u);                // batch_size
  EXPECT_EQ(decode_attention_workspace_bytes(INT_MAX, 8, INT_MAX, 256, INT_MAX), 0u);
  EXPECT_EQ(decode_attention_workspace_bytes(65535, 8, 4097, 128, 8), 0u);          // rows past 2^31 - 1
  // The largest accepted shape: the product fits size_t.
  size_t const big_rows = size_t(65535) * 1024 * 8 * 4095;
  EXPECT_EQ(decode_attention_workspace_bytes(65535, 8, 4095, 256, 1024), big_rows * 256 * 4 + big_rows * 4);
}

// Device addresses for validation-only calls: argument i at i MiB; valid_args()'s pools (12.5 MiB
// each) at 16 and 32 MiB, clear of the other arguments; workspaces at kWs.
void* fake(uintptr_t i) { return reinterpret_cast<void*>(0x100000 * i); }
void* at(uintptr_t i, size_t byte_offset) { return static_cast<char*>(fake(i)) + byte_offset; }
constexpr uintptr_t kWs = 64;

DecodeAttentionArgs valid_args() {
  DecodeAttentionArgs a;
  a.q = TensorView::contiguous(fake(1), DType::kBFloat16, {4, 32, 128});
  a.k_cache = TensorView::contiguous(fake(16), DType::kBFloat16, {100, 64, 8, 128});
  a.v_cache = TensorView::contiguous(fake(32), DType::kBFloat16, {100, 64, 8, 128});
  a.cache_seqlens = TensorView::contiguous(fake(4), DType::kInt32, {4});
  a.page_table = TensorView::contiguous(fake(5), DType::kInt32, {4, 20});
  a.out = TensorView::contiguous(fake(6), DType::kBFloat16, {4, 32, 128});
  return a;
}

TEST(AttentionValidation, ValidArgsAreSupported) {
  DecodeAttentionArgs a = valid_args();
  Status s = decode_attention_supported(a);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  a.layout = KvLayout::kHND;
  a.k_cache = TensorView::contiguous(fake(16), DType::kBFloat16, {100, 8, 64, 128});
  a.v_cache = TensorView::contiguous(fake(32), DType::kBFloat16, {100, 8, 64, 128});
  a.q_len = 2;
  a.q = TensorView::contiguous(fake(1), DType::kBFloat16, {8, 32, 128});
  a.out = TensorView::contiguous(fake(6), DType::kBFloat16, {8, 32, 128});
  s = decode_attention_supported(a);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
}

TEST(AttentionValidation, BadInputNamesArgumentAndValue) {
  struct Case {
    char const* name;
    std::function<void(DecodeAttentionArgs&)> apply;
    StatusCode code;
    std::vector<std::string> has;
  };
  std::vector<Case> const cases = {
      {"head_dim 96", [](auto& a) { a.q.shape[2] = 96; }, StatusCode::kUnsupported, {"head_dim 96"}},
      {"group not dividing", [](auto& a) { a.q.shape[1] = 30; }, StatusCode::kInvalidArgument,
       {"num_q_heads 30", "num_kv_heads 8"}},
      {"group too large",
       [](auto& a) {
         a.k_cache.shape[2] = 1;
         a.v_cache.shape[2] = 1;
       },
       StatusCode::kUnsupported, {"group 32"}},
      {"page size 48",
       [](auto& a) {
         a.k_cache.shape[1] = 48;
         a.v_cache.shape[1] = 48;
       },
       StatusCode::kInvalidArgument, {"page_size 48"}},
      {"dtype mismatch", [](auto& a) { a.k_cache.dtype = DType::kFloat16; }, StatusCode::kInvalidArgument,
       {"k_cache dtype float16", "bfloat16"}},
      {"q_len 9", [](auto& a) { a.q_len = 9; }, StatusCode::kInvalidArgument, {"q_len 9"}},
      {"tokens not multiple of q_len", [](auto& a) { a.q_len = 3; }, StatusCode::kInvalidArgument, {"q_len 3"}},
      {"null q", [](auto& a) { a.q.data = nullptr; }, StatusCode::kInvalidArgument, {"q is null"}},
      {"null lse with elements (not a left-out one)",
       [](auto& a) { a.lse = TensorView::contiguous(nullptr, DType::kFloat32, {4, 32}); },
       StatusCode::kInvalidArgument, {"lse is null ([4, 32] float32"}},
      {"null sinks with elements", [](auto& a) { a.sinks = TensorView::contiguous(nullptr, DType::kFloat32, {32}); },
       StatusCode::kInvalidArgument, {"sinks is null"}},
      {"batch 0 with null views",  // metadata ops take it; attention has nothing to compute
       [](auto& a) {
         a.q = TensorView::contiguous(nullptr, DType::kBFloat16, {0, 32, 128});
         a.out = a.q;
       },
       StatusCode::kInvalidArgument, {"batch_size 0 is outside [1, 65535]"}},
      {"seqlens int64", [](auto& a) { a.cache_seqlens.dtype = DType::kInt64; }, StatusCode::kInvalidArgument,
       {"cache_seqlens dtype int64"}},
      {"max_splits 0", [](auto& a) { a.max_splits = 0; }, StatusCode::kInvalidArgument, {"max_splits 0"}},
      {"layout out of the enum", [](auto& a) { a.layout = static_cast<KvLayout>(7); }, StatusCode::kInvalidArgument,
       {"layout 7 is neither"}},
      {"k_cache rank past the view's arrays", [](auto& a) { a.k_cache.rank = 7; }, StatusCode::kInvalidArgument,
       {"k_cache has rank 7", "outside [0, 4]"}},
      {"q rank past the view's arrays", [](auto& a) { a.q.rank = 9; }, StatusCode::kInvalidArgument,
       {"q has rank 9"}},
      {"out shape", [](auto& a) { a.out.shape[1] = 16; }, StatusCode::kInvalidArgument, {"out dim 1 is 16"}},
      {"lse dtype",
       [](auto& a) { a.lse = TensorView::contiguous(fake(7), DType::kBFloat16, {4, 32}); },
       StatusCode::kInvalidArgument, {"lse dtype bfloat16"}},
      {"sinks shape",
       [](auto& a) { a.sinks = TensorView::contiguous(fake(8), DType::kFloat32, {8}); },
       StatusCode::kInvalidArgument, {"sinks dim 0 is 8"}},
      {"unaligned cache stride", [](auto& a) { a.k_cache.stride[2] = 129; }, StatusCode::kInvalidArgument,
       {"k_cache stride 129"}},
      {"page stride past int32", [](auto& a) { a.v_cache.stride[0] = int64_t(1) << 32; },
       StatusCode::kInvalidArgument, {"v_cache stride 4294967296", "2^31"}},
      {"window -2", [](auto& a) { a.window_left = -2; }, StatusCode::kInvalidArgument, {"window_left -2"}},
      {"negative softcap", [](auto& a) { a.softcap = -1; }, StatusCode::kInvalidArgument, {"softcap"}},
      {"no query heads",
       [](auto& a) {
         a.q.shape[1] = 0;
         a.out.shape[1] = 0;
       },
       StatusCode::kInvalidArgument, {"num_q_heads 0"}},
      {"heads past int32", [](auto& a) { a.q.shape[1] = (int64_t(1) << 32) + 32; }, StatusCode::kInvalidArgument,
       {"q dim 1 is 4294967328", "past 2^31 - 1"}},
      {"no kv heads",
       [](auto& a) {
         a.k_cache.shape[2] = 0;
         a.v_cache.shape[2] = 0;
       },
       StatusCode::kInvalidArgument, {"num_kv_heads 0 (k_cache) must be >= 1"}},
      {"kv CTAs past the grid",  // group 1: one row chunk per kv head
       [](auto& a) {
         a.q = TensorView::contiguous(fake(1), DType::kBFloat16, {4, 65536, 64});
         a.out = TensorView::contiguous(fake(64), DType::kBFloat16, {4, 65536, 64});
         a.k_cache = TensorView::contiguous(fake(128), DType::kBFloat16, {1, 64, 65536, 64});
         a.v_cache = TensorView::contiguous(fake(1024), DType::kBFloat16, {1, 64, 65536, 64});
         a.page_table = TensorView::contiguous(fake(5), DType::kInt32, {4, 1});
       },
       StatusCode::kInvalidArgument, {"num_kv_heads 65536 x 1 row chunks", "65536 CTAs per request, past 65535"}},
      {"out past the address space", [](auto& a) { a.out.stride[0] = INT64_MAX / 4; }, StatusCode::kInvalidArgument,
       {"out at address 0x600000 reaches past the end of the address space"}},
      {"k_cache wrapping the address space", [](auto& a) { a.k_cache.stride[0] = (int64_t(1) << 62) + 8; },
       StatusCode::kInvalidArgument, {"k_cache at address 0x1000000 reaches past the end of the address space"}},
      {"rows past int32", [](auto& a) { a.q.shape[1] = int64_t(1) << 29; }, StatusCode::kInvalidArgument,
       {"4 tokens x 536870912 heads = 2147483648 rows", "2^31 - 1"}},
      {"empty page table", [](auto& a) { a.page_table.shape[1] = 0; }, StatusCode::kInvalidArgument,
       {"page_table has no columns"}},
      {"empty pool",
       [](auto& a) {
         a.k_cache.shape[0] = 0;
         a.v_cache.shape[0] = 0;
       },
       StatusCode::kInvalidArgument, {"k_cache has no pages"}},
      {"keys per request past int32", [](auto& a) { a.page_table.shape[1] = int64_t(1) << 25; }, StatusCode::kInvalidArgument,
       {"page_table columns 33554432 x page_size 64", "2^31 - 17"}},
      {"keys per request: first width past the bound", [](auto& a) { a.page_table.shape[1] = (INT32_MAX - 16) / 64 + 1; },
       StatusCode::kInvalidArgument, {"page_table columns 33554432"}},
      {"page table width that would overflow int64", [](auto& a) { a.page_table.shape[1] = int64_t(1) << 60; },
       StatusCode::kInvalidArgument, {"page_table"}},
      {"single launch, counters misaligned",
       [](auto& a) {
         a.single_launch = true;
         a.merge_counters = TensorView::contiguous(reinterpret_cast<char*>(fake(7)) + 2, DType::kInt32, {128});
       },
       StatusCode::kInvalidArgument, {"merge_counters", "at address 0x700002 is not 4-byte aligned"}},
      {"single launch without counters", [](auto& a) { a.single_launch = true; }, StatusCode::kInvalidArgument,
       {"merge_counters"}},
      {"single launch, counters too short",
       [](auto& a) {
         a.single_launch = true;
         a.merge_counters = TensorView::contiguous(fake(7), DType::kInt32, {127});
       },
       StatusCode::kInvalidArgument, {"merge_counters has 127 elements", "128"}},
      {"single launch, counters not int32",
       [](auto& a) {
         a.single_launch = true;
         a.merge_counters = TensorView::contiguous(fake(7), DType::kFloat32, {128});
       },
       StatusCode::kInvalidArgument, {"merge_counters"}},
  };
  for (Case const& c : cases) {
    SCOPED_TRACE(c.name);
    DecodeAttentionArgs a = valid_args();
    c.apply(a);
    for (Status const& s : {decode_attention_supported(a), decode_attention(a, {})}) {
      EXPECT_EQ(s.code(), c.code) << s.to_string();
      for (auto const& needle : c.has) EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
    }
  }
}

TEST(AttentionValidation, SizeOneDimsNeedNoAlignedStride) {
  DecodeAttentionArgs a = valid_args();
  a.q = TensorView::contiguous(fake(1), DType::kBFloat16, {4, 8, 128});
  a.out = TensorView::contiguous(fake(6), DType::kBFloat16, {4, 8, 128});
  a.k_cache = TensorView::strided(fake(16), DType::kBFloat16, {100, 64, 1, 128}, {64 * 128, 128, 1, 1});
  a.v_cache = a.k_cache;
  Status s = decode_attention_supported(a);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  // Nor one that fits 32 bits: the kernel never multiplies it by an index past 0.
  a.k_cache.stride[2] = int64_t(1) << 32;
  a.v_cache = TensorView::strided(fake(32), DType::kBFloat16, {1, 64, 1, 128}, {(int64_t(1) << 40) + 3, 128, 5, 1});
  a.k_cache.shape[0] = 1;
  s = decode_attention_supported(a);
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  a.v_cache.stride[1] = int64_t(1) << 32;  // page_size 64 uses it
  s = decode_attention_supported(a);
  EXPECT_NE(s.message().find("v_cache stride 4294967296 in dim 1"), std::string::npos) << s.to_string();
}

TEST(AttentionValidation, WorkspaceTooSmall) {
  DecodeAttentionArgs a = valid_args();
  a.max_splits = 8;
  size_t const need = decode_attention_workspace_bytes(4, 1, 32, 128, 8);
  Status s = decode_attention(a, {fake(kWs), need - 16});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("workspace of " + std::to_string(need - 16) + " bytes is too small"), std::string::npos)
      << s.message();
}

TEST(AttentionValidation, NullWorkspaceIsNamedAsNull) {
  DecodeAttentionArgs a = valid_args();
  a.max_splits = 8;
  size_t const need = decode_attention_workspace_bytes(4, 1, 32, 128, 8);
  Status const s = decode_attention(a, {nullptr, size_t(1) << 30});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("workspace is null (" + std::to_string(need) + " bytes needed for max_splits 8)"),
            std::string::npos)
      << s.message();
}

// A span that wraps past the top of the address space would slip past the overlap checks.
TEST(AttentionValidation, WorkspaceMustNotWrapTheAddressSpace) {
  DecodeAttentionArgs a = valid_args();
  a.max_splits = 8;
  void* const top = reinterpret_cast<void*>(~uintptr_t(0) - 0xfff);  // 16-byte aligned, 4 KB below the top
  Status s = decode_attention(a, {top, SIZE_MAX});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("reaches past the end of the address space"), std::string::npos) << s.message();
  // A span whose end (address + need) stays below 2^64: accepted (validation only). One that
  // ends at exactly 2^64 would have end 0 and overlap nothing: rejected, also with q inside it.
  size_t const need = decode_attention_workspace_bytes(4, 1, 32, 128, 8);
  attention::AttentionShape shape;
  ASSERT_TRUE(attention::validate(a, &shape).is_ok());
  uintptr_t const last_fit = (~uintptr_t(0) - need) & ~uintptr_t(15);
  s = attention::validate_workspace(a, shape, {reinterpret_cast<void*>(last_fit), need});
  EXPECT_TRUE(s.is_ok()) << s.to_string();
  uintptr_t const to_the_top = uintptr_t(0) - need;  // need is a multiple of 16
  s = attention::validate_workspace(a, shape, {reinterpret_cast<void*>(to_the_top), need});
  EXPECT_NE(s.message().find("reaches past the end of the address space"), std::string::npos) << s.message();
  a.q.data = reinterpret_cast<void*>(to_the_top + 4096);
  s = decode_attention(a, {reinterpret_cast<void*>(to_the_top), need});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << "q inside a workspace that ends at 2^64";
}

TEST(AttentionValidation, MergeCountersMustNotOverlapTheWorkspace) {
  DecodeAttentionArgs a = valid_args();
  a.max_splits = 8;
  a.single_launch = true;
  size_t const need = decode_attention_workspace_bytes(4, 1, 32, 128, 8);
  a.merge_counters = TensorView::contiguous(at(kWs, need - 16), DType::kInt32, {128});
  Status s = decode_attention(a, {fake(kWs), need});
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("merge_counters overlaps the workspace"), std::string::npos) << s.message();
  a.merge_counters = TensorView::contiguous(at(kWs, need), DType::kInt32, {128});
  attention::AttentionShape shape;  // adjacent, not overlapping: accepted (validation only, no launch)
  ASSERT_TRUE(attention::validate(a, &shape).is_ok());
  s = attention::validate_workspace(a, shape, {fake(kWs), need});
  EXPECT_TRUE(s.is_ok()) << s.to_string();
}

// The partial results would overwrite an input, or an output would overwrite them: every
// argument is checked against the workspace's first decode_attention_workspace_bytes bytes.
TEST(AttentionValidation, WorkspaceMustNotOverlapAnArgument) {
  size_t const need = decode_attention_workspace_bytes(4, 1, 32, 128, 8);
  struct Case {
    char const* name;
    std::function<void(DecodeAttentionArgs&)> apply;
  };
  std::vector<Case> const cases = {
      {"q", [&](auto& a) { a.q.data = at(kWs, need - 16); }},
      {"out", [&](auto& a) { a.out.data = at(kWs, 4096); }},
      {"lse", [&](auto& a) { a.lse = TensorView::contiguous(at(kWs, need - 4), DType::kFloat32, {4, 32}); }},
      {"page_table", [&](auto& a) { a.page_table.data = at(kWs, 0); }},
      {"cache_seqlens", [&](auto& a) { a.cache_seqlens.data = at(kWs, 64); }},
      {"num_kv_splits", [&](auto& a) { a.num_kv_splits = TensorView::contiguous(at(kWs, 128), DType::kInt32, {4}); }},
      {"sinks", [&](auto& a) { a.sinks = TensorView::contiguous(at(kWs, 256), DType::kFloat32, {32}); }},
      {"k_cache", [&](auto& a) { a.k_cache.data = at(kWs - 1, 0); }},  // 12.5 MiB from 63 MiB: covers the workspace
      {"v_cache", [&](auto& a) { a.v_cache.data = at(kWs - 8, 0); }},
      {"alibi_slopes", [&](auto& a) { a.alibi_slopes = TensorView::contiguous(at(kWs, 512), DType::kFloat32, {32}); }},
  };
  for (Case const& c : cases) {
    SCOPED_TRACE(c.name);
    DecodeAttentionArgs a = valid_args();
    a.max_splits = 8;
    c.apply(a);
    Status const s = decode_attention(a, {fake(kWs), need});
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
    EXPECT_NE(s.message().find(std::string(c.name) + " overlaps the workspace"), std::string::npos) << s.message();
  }
  // Right after the partial results: accepted (validation only, no launch).
  DecodeAttentionArgs a = valid_args();
  a.max_splits = 8;
  a.lse = TensorView::contiguous(at(kWs, need), DType::kFloat32, {4, 32});
  attention::AttentionShape shape;
  ASSERT_TRUE(attention::validate(a, &shape).is_ok());
  Status const s = attention::validate_workspace(a, shape, {fake(kWs), need});
  EXPECT_TRUE(s.is_ok()) << s.to_string();
}

// Views that the kernels cannot use as given: misaligned pointers (the kernel's loads and
// stores would fault) and outputs whose elements share addresses.
TEST(AttentionValidation, MisalignedOrOverlappingViewsAreNamed) {
  struct Case {
    char const* name;
    std::function<void(DecodeAttentionArgs&)> apply;
    std::vector<std::string> has;
  };
  std::vector<Case> const cases = {
      {"q odd address", [](auto& a) { a.q.data = at(1, 1); }, {"q at address 0x100001 is not 2-byte aligned", "bfloat16"}},
      {"out odd address", [](auto& a) { a.out.data = at(6, 3); }, {"out at address 0x600003 is not 2-byte aligned"}},
      {"cache_seqlens", [](auto& a) { a.cache_seqlens.data = at(4, 2); }, {"cache_seqlens at address 0x400002", "4-byte"}},
      {"page_table", [](auto& a) { a.page_table.data = at(5, 6); }, {"page_table at address 0x500006", "4-byte"}},
      {"num_kv_splits",
       [](auto& a) { a.num_kv_splits = TensorView::contiguous(at(10, 2), DType::kInt32, {4}); },
       {"num_kv_splits at address 0xa00002", "4-byte"}},
      {"sinks", [](auto& a) { a.sinks = TensorView::contiguous(at(8, 1), DType::kFloat32, {32}); }, {"sinks at address", "4-byte"}},
      {"alibi_slopes",
       [](auto& a) { a.alibi_slopes = TensorView::contiguous(at(8, 2), DType::kFloat32, {32}); },
       {"alibi_slopes at address", "4-byte"}},
      {"lse", [](auto& a) { a.lse = TensorView::contiguous(at(7, 2), DType::kFloat32, {4, 32}); }, {"lse at address", "4-byte"}},
      {"k_cache odd address", [](auto& a) { a.k_cache.data = at(16, 1); }, {"k_cache at address 0x1000001"}},
      {"k_cache off 16 bytes", [](auto& a) { a.k_cache.data = at(16, 8); },
       {"k_cache at address 0x1000008 is not 16-byte aligned"}},
      {"out heads on one row", [](auto& a) { a.out.stride[1] = 0; }, {"out has overlapping elements: stride 0 in dim 1"}},
      {"out rows overlapping", [](auto& a) { a.out.stride[0] = 100; }, {"out has overlapping elements: stride 100 in dim 0"}},
      {"lse tokens on one row",
       [](auto& a) { a.lse = TensorView::strided(fake(7), DType::kFloat32, {4, 32}, {0, 1}); },
       {"lse has overlapping elements: stride 0 in dim 0"}},
      {"lse inside out", [](auto& a) { a.lse = TensorView::contiguous(at(6, 256), DType::kFloat32, {4, 32}); }, {"out overlaps lse"}},
      {"out one row past q", [](auto& a) { a.out.data = at(1, 128 * 2); }, {"out overlaps q (only the same view as q"}},
      {"out on the page table", [](auto& a) { a.out.data = at(5, 0); }, {"out overlaps page_table"}},
      {"lse on the sinks",
       [](auto& a) {
         a.sinks = TensorView::contiguous(fake(8), DType::kFloat32, {32});
         a.lse = TensorView::contiguous(at(8, 64), DType::kFloat32, {4, 32});
       },
       {"lse overlaps sinks"}},
      {"counters on out",
       [](auto& a) {
         a.single_launch = true;
         a.merge_counters = TensorView::contiguous(at(6, 1024), DType::kInt32, {128});
       },
       {"out overlaps merge_counters"}},
      {"counters on the lengths",
       [](auto& a) {
         a.single_launch = true;
         a.merge_counters = TensorView::contiguous(at(4, 0), DType::kInt32, {128});
       },
       {"merge_counters overlaps cache_seqlens"}},
      {"softmax_scale negative", [](auto& a) { a.softmax_scale = -0.5f; }, {"softmax_scale -0.5"}},
      {"softmax_scale NaN", [](auto& a) { a.softmax_scale = std::nanf(""); }, {"softmax_scale nan"}},
      {"softmax_scale inf", [](auto& a) { a.softmax_scale = INFINITY; }, {"softmax_scale inf"}},
      {"page size 512",
       [](auto& a) {
         a.k_cache.shape[1] = 512;
         a.v_cache.shape[1] = 512;
       },
       {"page_size 512"}},
      {"v_cache dtype", [](auto& a) { a.v_cache.dtype = DType::kFloat16; }, {"v_cache dtype float16", "bfloat16"}},
      {"out dtype", [](auto& a) { a.out.dtype = DType::kFloat16; }, {"out dtype float16"}},
  };
  for (Case const& c : cases) {
    SCOPED_TRACE(c.name);
    DecodeAttentionArgs a = valid_args();
    c.apply(a);
    for (Status const& s : {decode_attention_supported(a), decode_attention(a, {})}) {
      EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << s.to_string();
      for (auto const& needle : c.has) EXPECT_NE(s.message().find(needle), std::string::npos) << s.message();
    }
  }
  // Accepted: padded outputs, a heads-major (transposed) out, out as q itself (in place), and
  // counters anywhere when single launch is off (they are not used).
  for (int form = 0; form < 4; ++form) {
    SCOPED_TRACE("accepted form " + std::to_string(form));
    DecodeAttentionArgs a = valid_args();
    if (form == 0) {
      a.out = TensorView::strided(fake(6), DType::kBFloat16, {4, 32, 128}, {32 * 136, 136, 1});
      a.lse = TensorView::strided(fake(7), DType::kFloat32, {4, 32}, {40, 1});
    } else if (form == 1) {
      a.out = TensorView::strided(fake(6), DType::kBFloat16, {4, 32, 128}, {128, 4 * 128, 1});
    } else if (form == 2) {
      a.out = a.q;
    } else {
      a.merge_counters = TensorView::contiguous(fake(6), DType::kInt32, {128});
    }
    Status const s = decode_attention_supported(a);
    EXPECT_TRUE(s.is_ok()) << s.to_string();
  }
}

TEST(AttentionWavePlan, BadArgumentsAreNamedBeforeAnyCudaCall) {
  int ctas = -1;
  Status s = decode_attention_ctas_per_wave(100, &ctas);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("head_dim 100"), std::string::npos) << s.message();
  EXPECT_EQ(ctas, 0);
  s = decode_attention_ctas_per_wave(128, nullptr);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("ctas is null"), std::string::npos) << s.message();
}

// The page-table prefetch (split_kv_search.cuh, prefetch_page_rows, through
// attention::page_prefetch): every thread's address is one of its row's own ids, and with
// enough threads every 128-byte line a row's ids touch is prefetched, up to
// kPrefetchLinesPerRow lines -- for rows that start on a line and rows that start mid-line.
TEST(AttentionPagePrefetch, EveryAddressInItsRowAndEveryLineCovered) {
  struct Params {
    int batch;
    int64_t pt_cols;
  };
  constexpr unsigned kGridThreads[] = {96, 8 * 33 * 96};  // one CTA's warps 1-3; a wave at 8 kv heads
  for (int batch : {1, 2, 7, 16, 32}) {
    for (int64_t cols : std::vector<int64_t>{1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 100, 1000, 2015, 2016, 2017,
                                             2047, 2048, 2049, 5000, int64_t(1) << 26}) {
      Params const p{batch, cols};
      int const lines = attention::page_prefetch_lines(cols);
      ASSERT_GE(lines, 1);
      ASSERT_LE(lines, attention::kPrefetchLinesPerRow);
      for (unsigned threads : kGridThreads) {
        std::vector<std::vector<int64_t>> ids(batch);
        int emitted = 0;
        for (unsigned i = 0; i < threads; ++i) {
          attention::page_prefetch(i, p, lines, [&](int b, int64_t col) {
            ASSERT_GE(b, 0);
            ASSERT_LT(b, batch);
            ASSERT_GE(col, 0);
            ASSERT_LT(col, cols) << "batch " << batch << " i " << i;
            ids[b].push_back(col);
            ++emitted;
          });
        }
        ASSERT_LE(emitted, batch * lines);
        if (threads < unsigned(batch * lines)) continue;  // too few threads: bounds only
        for (int64_t offset : std::vector<int64_t>{0, 1, 5, 31}) {  // the row's first id, in ids past a 128-byte line
          for (int b = 0; b < batch; ++b) {
            std::set<int64_t> hit;
            for (int64_t col : ids[b]) hit.insert((offset + col) / 32);
            int64_t const last = (offset + cols - 1) / 32;  // the row's last line
            for (int64_t line = 0; line <= last && line < attention::kPrefetchLinesPerRow; ++line) {
              ASSERT_TRUE(hit.count(line)) << "batch " << batch << " cols " << cols << " offset " << offset
                                           << " row " << b << " line " << line;
            }
          }
        }
      }
    }
  }
  // No table, no prefetch.
  attention::page_prefetch(0u, Params{4, 0}, attention::page_prefetch_lines(0),
                           [](int, int64_t) { FAIL() << "a prefetch without columns"; });
}

// The producer's split ranges (split_range.h, the function the kernel calls): in split order
// they cover the visible keys [lo, L) exactly, each split but a windowed split 0 begins on a
// 16-key tile boundary, and no share exceeds ceil(span / n) rounded up to 16.
TEST(AttentionSplits, RangesCoverTheKeysInOrderOnTileBoundaries) {
  int checked = 0;
  for (int L : {0, 1, 2, 15, 16, 17, 63, 64, 65, 97, 127, 128, 129, 1000, 1001, 1024, 8169, 20548, 32745, 32768,
                2147483632}) {
    for (int w : {-1, 0, 1, 15, 16, 17, 100, 1000, 5000}) {  // window_left (-1: off), q_len 1
      int const lo = w < 0 ? 0 : std::max<int64_t>(0, int64_t(L) - 1 - w);
      for (int n : {1, 2, 3, 7, 8, 31, 32, 33, 64, 1024}) {
        unsigned const base = unsigned(lo) & ~15u;
        int64_t const span = L > lo ? int64_t(L) - base : 0;
        int64_t const bound = ((span + n - 1) / n + 15) / 16 * 16;
        int64_t prev_end = std::min(lo, L);
        for (int s = 0; s < n; ++s) {
          attention::KeyRange const r = attention::split_keys(L, lo, n, s);
          SCOPED_TRACE("L " + std::to_string(L) + " lo " + std::to_string(lo) + " n " + std::to_string(n) + " split " +
                       std::to_string(s));
          ASSERT_EQ(r.begin, prev_end);
          ASSERT_LE(r.begin, r.end);
          ASSERT_LE(r.end, L);
          ASSERT_LE(r.end - r.begin, bound);
          if (s > 0 && r.end > r.begin) ASSERT_EQ(r.begin % 16, 0);
          prev_end = r.end;
          ++checked;
        }
        ASSERT_EQ(prev_end, L) << "L " << L << " lo " << lo << " n " << n;
      }
    }
  }
  EXPECT_GT(checked, 10000);
  // A length off the tile grid: 1001 keys in 7 splits of 144 (9 tiles), the last 137.
  EXPECT_EQ(attention::split_keys(1001, 0, 7, 1).begin, 144);
  EXPECT_EQ(attention::split_keys(1001, 0, 7, 6).begin, 864);
  EXPECT_EQ(attention::split_keys(1001, 0, 7, 6).end, 1001);
  // More splits than tiles: 17 keys in 3 splits are 16, 1 and none.
  EXPECT_EQ(attention::split_keys(17, 0, 3, 1).end, 17);
  EXPECT_EQ(attention::split_keys(17, 0, 3, 2).begin, 17);
  EXPECT_EQ(attention::split_keys(17, 0, 3, 2).end, 17);
  // A window: keys [985, 1001) of 1001 (window 15, q_len 1); split 0 starts at 985, split 1 at 992.
  EXPECT_EQ(attention::split_keys(1001, 985, 2, 0).begin, 985);
  EXPECT_EQ(attention::split_keys(1001, 985, 2, 1).begin, 992);
}

// Valid arguments without a usable GPU: the launch path (occupancy query, then launches)
// reports a CUDA Status; nothing crashes. Skipped where a GPU is present.
TEST(AttentionValidation, NoGpuGivesCudaErrorStatus) {
  int count = 0;
  if (cudaGetDeviceCount(&count) == cudaSuccess && count > 0) GTEST_SKIP() << "a GPU is present";
  DecodeAttentionArgs a = valid_args();
  Status s = decode_attention(a, {});
  EXPECT_EQ(s.code(), StatusCode::kCudaError) << s.to_string();
  int ctas = -1;
  s = decode_attention_ctas_per_wave(128, &ctas);
  EXPECT_EQ(s.code(), StatusCode::kCudaError) << s.to_string();
  EXPECT_EQ(ctas, 0);
}

}  // namespace
}  // namespace baton
