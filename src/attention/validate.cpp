#include "attention/validate.h"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <string>
#include <utility>

#include "attention/row_chunks.h"
#include "runtime/check.h"

namespace baton::attention {
namespace {

using detail::Checker;
std::string str(int64_t v) { return std::to_string(v); }

bool aligned16(void const* p) { return (reinterpret_cast<uintptr_t>(p) & 15) == 0; }

TensorView const kNone{};  // a left-out view: it occupies no bytes, so overlap checks pass it

// Every tensor argument of a call with its name, those the call writes first (kWritten); an
// argument the call does not use is kNone (merge_counters is used only by single launch).
using detail::NamedView;
constexpr size_t kWritten = 3, kQ = 3;
std::array<NamedView, 11> tensor_args(DecodeAttentionArgs const& a) {
  return {{{"out", &a.out},
           {"lse", &a.lse},
           {"merge_counters", a.single_launch ? &a.merge_counters : &kNone},
           {"q", &a.q},
           {"k_cache", &a.k_cache},
           {"v_cache", &a.v_cache},
           {"cache_seqlens", &a.cache_seqlens},
           {"page_table", &a.page_table},
           {"num_kv_splits", &a.num_kv_splits},
           {"sinks", &a.sinks},
           {"alibi_slopes", &a.alibi_slopes}}};
}

bool same_view(TensorView const& a, TensorView const& b) {
  if (a.data != b.data || a.rank != b.rank || a.dtype != b.dtype) return false;
  for (int d = 0; d < a.rank; ++d) {
    if (a.shape[d] != b.shape[d] || (a.shape[d] > 1 && a.stride[d] != b.stride[d])) return false;
  }
  return true;
}

Status check_cache(Checker const& c, TensorView const& kv, char const* name, DType dtype, KvLayout layout,
                   int num_kv_heads, int page_size, int head_dim, int64_t num_pages) {
  BATON_RETURN_IF_ERROR(c.tensor(kv, name, 4, {DType::kBFloat16, DType::kFloat16}));
  if (kv.dtype != dtype) {
    return c.fail(std::string(name) + " dtype " + dtype_name(kv.dtype) + " does not match q dtype " + dtype_name(dtype));
  }
  int const head_dim_axis = 3, heads_axis = layout == KvLayout::kNHD ? 2 : 1, token_axis = layout == KvLayout::kNHD ? 1 : 2;
  BATON_RETURN_IF_ERROR(c.dim(kv, name, 0, num_pages, "num_pages of k_cache"));
  BATON_RETURN_IF_ERROR(c.dim(kv, name, token_axis, page_size, "page_size of k_cache"));
  BATON_RETURN_IF_ERROR(c.dim(kv, name, heads_axis, num_kv_heads, "num_kv_heads of k_cache"));
  BATON_RETURN_IF_ERROR(c.dim(kv, name, head_dim_axis, head_dim, "head_dim of q"));
  BATON_RETURN_IF_ERROR(c.unit_stride(kv, name, head_dim_axis));
  for (int d = 0; d < 3; ++d) {
    if (kv.shape[d] > 1 && kv.stride[d] > INT32_MAX) {  // the kernel keeps K/V strides in 32 bits
      return c.fail(std::string(name) + " stride " + str(kv.stride[d]) + " in dim " + str(d) +
                    " exceeds 2^31 - 1 elements");
    }
    if (kv.shape[d] > 1 && kv.stride[d] % 8 != 0) {  // a size-1 dim's stride is never used
      return c.fail(std::string(name) + " stride " + str(kv.stride[d]) + " in dim " + str(d) +
                    " is not a multiple of 8 elements (16-byte loads)");
    }
  }
  if (!aligned16(kv.data)) {
    return c.fail(std::string(name) + " at address " + detail::hex_address(kv.data) + " is not 16-byte aligned");
  }
  return Status::ok();
}

}  // namespace

Status validate(DecodeAttentionArgs const& a, AttentionShape* shape) {
  Checker c("decode_attention");
  BATON_RETURN_IF_ERROR(c.tensor(a.q, "q", 3, {DType::kBFloat16, DType::kFloat16}));
  BATON_RETURN_IF_ERROR(c.unit_stride(a.q, "q", 2));
  for (auto const& [t, name] : {std::pair<TensorView const*, char const*>{&a.q, "q"}, {&a.k_cache, "k_cache"},
                                 {&a.v_cache, "v_cache"}}) {
    for (int d = 0; d < std::min(t->rank, TensorView::kMaxRank); ++d) {  // ranks are checked below
      if (t->shape[d] > INT32_MAX) {
        return c.fail(std::string(name) + " dim " + str(d) + " is " + str(t->shape[d]) + ", past 2^31 - 1 (" +
                      t->describe() + ")");
      }
    }
  }
  if (a.q.shape[1] < 1) return c.fail("num_q_heads " + str(a.q.shape[1]) + " must be >= 1");
  int64_t const num_tokens = a.q.shape[0];
  int const num_q_heads = static_cast<int>(a.q.shape[1]);
  int const head_dim = static_cast<int>(a.q.shape[2]);
  if (!supported_head_dim(head_dim)) return Status::unsupported("decode_attention: head_dim " + str(head_dim) + " is not supported (64, 128, 256)");
  if (a.q_len < 1 || a.q_len > kMaxQLen) return c.fail("q_len " + str(a.q_len) + " is outside [1, 8]");
  if (num_tokens % a.q_len != 0) {
    return c.fail("q has " + str(num_tokens) + " tokens, not a multiple of q_len " + str(a.q_len));
  }
  int64_t const batch = num_tokens / a.q_len;
  if (batch < 1 || batch > kMaxBatch) {
    return c.fail("batch_size " + str(batch) + " is outside [1, " + str(kMaxBatch) + "]");
  }
  // The reducer's grids take a CTA or a warp per (token, head) row: at most 2^31 - 1 rows.
  if (num_tokens * num_q_heads > INT32_MAX) {
    return c.fail("q has " + str(num_tokens) + " tokens x " + str(num_q_heads) + " heads = " +
                  str(num_tokens * num_q_heads) + " rows, past 2^31 - 1");
  }

  if (a.layout != KvLayout::kNHD && a.layout != KvLayout::kHND) {
    return c.fail("layout " + str(static_cast<int>(a.layout)) + " is neither KvLayout::kNHD nor KvLayout::kHND");
  }
  BATON_RETURN_IF_ERROR(c.tensor(a.k_cache, "k_cache", 4, {DType::kBFloat16, DType::kFloat16}));
  int const heads_axis = a.layout == KvLayout::kNHD ? 2 : 1, token_axis = a.layout == KvLayout::kNHD ? 1 : 2;
  int const num_kv_heads = static_cast<int>(a.k_cache.shape[heads_axis]);
  int const page_size = static_cast<int>(a.k_cache.shape[token_axis]);
  if (num_kv_heads < 1) return c.fail("num_kv_heads " + str(num_kv_heads) + " (k_cache) must be >= 1");
  if (num_q_heads % num_kv_heads != 0) {
    return c.fail("num_q_heads " + str(num_q_heads) + " is not a multiple of num_kv_heads " + str(num_kv_heads));
  }
  int const group = num_q_heads / num_kv_heads;
  if (group > kMaxGroup) return Status::unsupported("decode_attention: group " + str(group) + " is outside [1, 16]");
  if (!detail::is_power_of_two(page_size) || page_size > 256) {
    return c.fail("page_size " + str(page_size) + " is not a power of two in [1, 256]");
  }
  int64_t const num_pages = a.k_cache.shape[0];
  if (num_pages < 1) return c.fail("k_cache has no pages (" + a.k_cache.describe() + ")");
  BATON_RETURN_IF_ERROR(check_cache(c, a.k_cache, "k_cache", a.q.dtype, a.layout, num_kv_heads, page_size, head_dim, num_pages));
  BATON_RETURN_IF_ERROR(check_cache(c, a.v_cache, "v_cache", a.q.dtype, a.layout, num_kv_heads, page_size, head_dim, num_pages));

  BATON_RETURN_IF_ERROR(c.tensor(a.cache_seqlens, "cache_seqlens", 1, {DType::kInt32}));
  BATON_RETURN_IF_ERROR(c.dim(a.cache_seqlens, "cache_seqlens", 0, batch, "batch_size"));
  BATON_RETURN_IF_ERROR(c.unit_stride(a.cache_seqlens, "cache_seqlens", 0));
  BATON_RETURN_IF_ERROR(c.tensor(a.page_table, "page_table", 2, {DType::kInt32}));
  BATON_RETURN_IF_ERROR(c.dim(a.page_table, "page_table", 0, batch, "batch_size"));
  BATON_RETURN_IF_ERROR(c.unit_stride(a.page_table, "page_table", 1));
  if (a.page_table.shape[1] < 1) return c.fail("page_table has no columns (" + a.page_table.describe() + ")");
  // Key positions and tile counts are int32 in the kernel: a request holds at most
  // page_table columns x page_size keys, which must stay below 2^31 - 16.
  if (a.page_table.shape[1] > (int64_t(INT32_MAX) - 16) / page_size) {  // no overflow for any width
    return c.fail("page_table columns " + str(a.page_table.shape[1]) + " x page_size " + str(page_size) +
                  " exceeds 2^31 - 17 keys per request");
  }
  if (a.num_kv_splits.defined()) {
    BATON_RETURN_IF_ERROR(c.tensor(a.num_kv_splits, "num_kv_splits", 1, {DType::kInt32}));
    BATON_RETURN_IF_ERROR(c.dim(a.num_kv_splits, "num_kv_splits", 0, batch, "batch_size"));
    BATON_RETURN_IF_ERROR(c.unit_stride(a.num_kv_splits, "num_kv_splits", 0));
  }
  if (a.max_splits < 1 || a.max_splits > kMaxSplits) {
    return c.fail("max_splits " + str(a.max_splits) + " is outside [1, " + str(kMaxSplits) + "]");
  }
  if (!(a.softmax_scale >= 0) || !std::isfinite(a.softmax_scale)) {
    return c.fail("softmax_scale " + std::to_string(a.softmax_scale) + " must be finite and >= 0 (0: 1/sqrt(head_dim))");
  }
  if (!(a.softcap >= 0) || !std::isfinite(a.softcap)) return c.fail("softcap " + std::to_string(a.softcap) + " must be >= 0");
  if (a.window_left < -1) return c.fail("window_left " + str(a.window_left) + " must be >= -1 (-1: off)");
  for (auto const& [t, name] : {std::pair<TensorView const&, char const*>{a.sinks, "sinks"}, {a.alibi_slopes, "alibi_slopes"}}) {
    BATON_RETURN_IF_ERROR(c.optional(t, name, 1, {DType::kFloat32}));
    if (t.defined()) {
      BATON_RETURN_IF_ERROR(c.dim(t, name, 0, num_q_heads, "num_q_heads"));
      BATON_RETURN_IF_ERROR(c.unit_stride(t, name, 0));
    }
  }
  BATON_RETURN_IF_ERROR(c.tensor(a.out, "out", 3, {a.q.dtype}));
  for (int d = 0; d < 3; ++d) BATON_RETURN_IF_ERROR(c.dim(a.out, "out", d, a.q.shape[d], "shape of q"));
  BATON_RETURN_IF_ERROR(c.unit_stride(a.out, "out", 2));
  BATON_RETURN_IF_ERROR(c.distinct_elements(a.out, "out"));
  BATON_RETURN_IF_ERROR(c.optional(a.lse, "lse", 2, {DType::kFloat32}));
  if (a.lse.defined()) {
    BATON_RETURN_IF_ERROR(c.dim(a.lse, "lse", 0, num_tokens, "tokens of q"));
    BATON_RETURN_IF_ERROR(c.dim(a.lse, "lse", 1, num_q_heads, "num_q_heads"));
    BATON_RETURN_IF_ERROR(c.unit_stride(a.lse, "lse", 1));
    BATON_RETURN_IF_ERROR(c.distinct_elements(a.lse, "lse"));
  }
  if (a.single_launch) {  // one int32 per (token, query head) bounds the (request, kv head, row chunk) groups
    BATON_RETURN_IF_ERROR(c.tensor(a.merge_counters, "merge_counters (needed by single_launch)", 1, {DType::kInt32}));
    BATON_RETURN_IF_ERROR(c.unit_stride(a.merge_counters, "merge_counters", 0));
    if (a.merge_counters.shape[0] < num_tokens * num_q_heads) {
      return c.fail("merge_counters has " + str(a.merge_counters.shape[0]) + " elements, fewer than batch_size * q_len * num_q_heads = " +
                    str(num_tokens * num_q_heads));
    }
  }
  // What the call writes (out, lse, the single-launch counters) must not overlap anything
  // else it reads or writes, which other CTAs may still be reading; out may be q itself (the
  // same view: each q row is read before its own output row is written), not a shifted one.
  // Then q's bytes are out's, which the written views are checked against already.
  auto args = tensor_args(a);
  if (same_view(a.out, a.q)) {
    args[kQ].view = &kNone;
  } else if (detail::byte_span(a.out).overlaps(detail::byte_span(a.q))) {
    return c.fail("out overlaps q (only the same view as q is allowed)");
  }
  BATON_RETURN_IF_ERROR(c.disjoint(args.data(), args.size(), kWritten));
  int64_t const kv_ctas = int64_t(num_kv_heads) * row_chunks(group, a.q_len, head_dim);
  if (kv_ctas > 65535) {  // the producer grid's x dimension
    return c.fail("num_kv_heads " + str(num_kv_heads) + " x " + str(kv_ctas / num_kv_heads) + " row chunks (group " +
                  str(group) + ", q_len " + str(a.q_len) + ", head_dim " + str(head_dim) + ") = " + str(kv_ctas) +
                  " CTAs per request, past 65535");
  }
  *shape = {static_cast<int>(batch), a.q_len, num_q_heads, num_kv_heads, head_dim, page_size};
  return Status::ok();
}

Status validate_workspace(DecodeAttentionArgs const& a, AttentionShape const& s, Workspace const& ws) {
  size_t const need = decode_attention_workspace_bytes(s.batch, s.q_len, s.num_q_heads, s.head_dim, a.max_splits);
  if (need == 0) return Status::ok();
  if (ws.data == nullptr) {
    return Status::invalid_argument("decode_attention: workspace is null (" + str(static_cast<int64_t>(need)) +
                                    " bytes needed for max_splits " + str(a.max_splits) + ")");
  }
  if (ws.bytes < need) {
    return Status::invalid_argument("decode_attention: workspace of " + str(static_cast<int64_t>(ws.bytes)) +
                                    " bytes is too small: " + str(static_cast<int64_t>(need)) + " needed for max_splits " +
                                    str(a.max_splits));
  }
  // The partials' span must not wrap the address space: the overlap checks below compare
  // [begin, end) and would miss an argument that a wrapped span covers.
  if (need > UINTPTR_MAX - reinterpret_cast<uintptr_t>(ws.data)) {  // end = address + need must not wrap to 0
    return Status::invalid_argument("decode_attention: workspace at address " + detail::hex_address(ws.data) + " with " +
                                    str(static_cast<int64_t>(need)) +
                                    " bytes of partial results reaches past the end of the address space");
  }
  if (!aligned16(ws.data)) {
    return Status::invalid_argument("decode_attention: workspace at address " + detail::hex_address(ws.data) +
                                    " is not 16-byte aligned");
  }
  // The partial results (the first `need` bytes) must not overwrite an argument, nor be
  // overwritten by one.
  detail::ByteSpan const partials{reinterpret_cast<uintptr_t>(ws.data), reinterpret_cast<uintptr_t>(ws.data) + need};
  for (NamedView const& t : tensor_args(a)) {
    if (detail::byte_span(*t.view).overlaps(partials)) {
      return Status::invalid_argument(std::string("decode_attention: ") + t.name + " overlaps the workspace's partial results");
    }
  }
  return Status::ok();
}

}  // namespace baton::attention
