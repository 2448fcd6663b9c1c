#include "metadata/validate.h"

#include <climits>
#include <string>

#include "attention/row_chunks.h"
#include "runtime/check.h"

namespace baton::metadata {
namespace {

constexpr auto kIndexTypes = {DType::kInt32, DType::kInt64};
using detail::Checker;

std::string str(int64_t v) { return std::to_string(v); }

Status check_error_flags(Checker const& c, TensorView const& flags) {
  BATON_RETURN_IF_ERROR(c.optional(flags, "error_flags", 1, {DType::kInt32}));
  if (flags.defined() && flags.shape[0] < 1) return c.fail("error_flags must hold at least 1 element");
  return Status::ok();
}

// [n] int32 output with unit stride.
Status check_vector_out(Checker const& c, TensorView const& t, char const* name, int64_t n, char const* what) {
  BATON_RETURN_IF_ERROR(c.tensor(t, name, 1, {DType::kInt32}));
  BATON_RETURN_IF_ERROR(c.dim(t, name, 0, n, what));
  return c.unit_stride(t, name, 0);
}

}  // namespace

constexpr int kMaxPlanQueryHeads = 16 * 65535;

int split_plan_ctas_per_request(SplitPlanParams const& plan) {
  int const group = plan.num_q_heads / plan.num_kv_heads;
  if (plan.ctas_per_wave > 0) {  // balanced: the attention producer's CTAs (row_chunks.h)
    return plan.num_kv_heads * static_cast<int>(attention::row_chunks(group, plan.q_len, plan.head_dim));
  }
  if (group == 1) return plan.num_q_heads;
  int const block = group < 16 ? group : 16;
  return (plan.num_q_heads + block - 1) / block;
}

Status validate_split_plan(SplitPlanParams const& plan, char const* op) {
  Checker c(op);
  if (plan.num_q_heads < 1) return c.fail("split_plan.num_q_heads " + str(plan.num_q_heads) + " must be >= 1");
  if (plan.num_kv_heads < 1) return c.fail("split_plan.num_kv_heads " + str(plan.num_kv_heads) + " must be >= 1");
  if (plan.num_q_heads % plan.num_kv_heads != 0) {
    return c.fail("split_plan.num_q_heads " + str(plan.num_q_heads) + " is not a multiple of num_kv_heads " +
                  str(plan.num_kv_heads));
  }
  // The CTAs per request stay far inside int32 (decode_attention takes at most 65535 per request).
  if (plan.num_q_heads > kMaxPlanQueryHeads) {
    return c.fail("split_plan.num_q_heads " + str(plan.num_q_heads) + " is past " + str(kMaxPlanQueryHeads));
  }
  if (plan.max_splits < 1) return c.fail("split_plan.max_splits " + str(plan.max_splits) + " must be >= 1");
  if (plan.num_sms < 0) return c.fail("split_plan.num_sms " + str(plan.num_sms) + " must be >= 0 (0: this device)");
  if (plan.min_keys_per_split < 0) {
    return c.fail("split_plan.min_keys_per_split " + str(plan.min_keys_per_split) + " must be >= 0 (0: off)");
  }
  if (plan.ctas_per_wave < 0) {
    return c.fail("split_plan.ctas_per_wave " + str(plan.ctas_per_wave) + " must be >= 0 (0: SGLang heuristic)");
  }
  if (plan.q_len < 1 || plan.q_len > 8) {
    return c.fail("split_plan.q_len " + str(plan.q_len) + " must be in [1, 8] (query tokens per request)");
  }
  if (plan.head_dim != 0 && plan.head_dim != 64 && plan.head_dim != 128 && plan.head_dim != 256) {
    return c.fail("split_plan.head_dim " + str(plan.head_dim) + " must be 64, 128 or 256 (0: 128)");
  }
  return Status::ok();
}

Status validate(DecodeMetadataArgs const& a) {
  Checker c("build_decode_metadata");
  // Lengths are clamped to [0, max_context < 2^31]; a delta past int32 only overflows the sum.
  if (a.seq_len_delta < INT32_MIN || a.seq_len_delta > INT32_MAX) {
    return c.fail("seq_len_delta " + str(a.seq_len_delta) + " is outside [-2^31, 2^31 - 1]");
  }
  BATON_RETURN_IF_ERROR(c.tensor(a.seq_lens, "seq_lens", 1, kIndexTypes));
  int64_t const batch = a.seq_lens.shape[0];
  if (batch > (int64_t(1) << 30)) return c.fail("batch_size " + str(batch) + " is too large");
  BATON_RETURN_IF_ERROR(c.tensor(a.req_pool_indices, "req_pool_indices", 1, kIndexTypes));
  BATON_RETURN_IF_ERROR(c.dim(a.req_pool_indices, "req_pool_indices", 0, batch, "batch_size from seq_lens"));
  BATON_RETURN_IF_ERROR(c.tensor(a.req_to_token, "req_to_token", 2, {DType::kInt32}));
  if (a.req_to_token.shape[0] < 1) return c.fail("req_to_token has no rows (" + a.req_to_token.describe() + ")");
  if (!detail::is_power_of_two(a.page_size) || a.page_size > 256) {
    return c.fail("page_size " + str(a.page_size) + " is not a power of two in [1, 256]");
  }
  int64_t const max_context = a.req_to_token.shape[1];
  if (batch > 0 && max_context > INT32_MAX / batch) {  // batch x max_context > 2^31 - 1, without overflow
    return c.fail("batch_size " + str(batch) + " x max_context " + str(max_context) +
                  " tokens could overflow the int32 cu_seqlens_k");
  }
  // Batch 0 passes the product check: rows past int32 would still overflow the host's sums.
  if (max_context > INT32_MAX) {
    return c.fail("req_to_token has " + str(max_context) + " tokens per row, past 2^31 - 1 (int32 lengths)");
  }
  int64_t const pages_needed = (max_context + a.page_size - 1) / a.page_size;

  BATON_RETURN_IF_ERROR(check_vector_out(c, a.cache_seqlens, "cache_seqlens", batch, "batch_size"));
  BATON_RETURN_IF_ERROR(check_vector_out(c, a.cu_seqlens_k, "cu_seqlens_k", batch + 1, "batch_size + 1"));
  BATON_RETURN_IF_ERROR(c.tensor(a.page_table, "page_table", 2, {DType::kInt32}));
  BATON_RETURN_IF_ERROR(c.dim(a.page_table, "page_table", 0, batch, "batch_size"));
  int64_t const max_pages = a.page_table.shape[1];
  if (max_pages > INT32_MAX) return c.fail("page_table has " + str(max_pages) + " columns, past 2^31 - 1");
  if (max_pages < pages_needed) {
    return c.fail("page_table capacity " + str(max_pages) + " columns is too small: req_to_token rows of " +
                  str(max_context) + " tokens need " + str(pages_needed) + " pages of " + str(a.page_size));
  }

  if (a.full_to_swa.defined() != a.swa_page_table.defined()) {
    return c.fail(a.full_to_swa.defined() ? "full_to_swa is given but swa_page_table is left out"
                                          : "swa_page_table is given but full_to_swa is left out");
  }
  if (a.full_to_swa.defined()) {
    BATON_RETURN_IF_ERROR(c.tensor(a.full_to_swa, "full_to_swa", 1, {DType::kInt64}));
    if (a.full_to_swa.shape[0] < 1) return c.fail("full_to_swa is empty");
    BATON_RETURN_IF_ERROR(c.unit_stride(a.full_to_swa, "full_to_swa", 0));
    BATON_RETURN_IF_ERROR(c.tensor(a.swa_page_table, "swa_page_table", 2, {DType::kInt32}));
    BATON_RETURN_IF_ERROR(c.dim(a.swa_page_table, "swa_page_table", 0, batch, "batch_size"));
    BATON_RETURN_IF_ERROR(c.dim(a.swa_page_table, "swa_page_table", 1, max_pages, "page_table columns"));
    BATON_RETURN_IF_ERROR(c.distinct_elements(a.swa_page_table, "swa_page_table"));
  }
  if (a.num_kv_splits.defined()) {
    BATON_RETURN_IF_ERROR(check_vector_out(c, a.num_kv_splits, "num_kv_splits", batch, "batch_size"));
    BATON_RETURN_IF_ERROR(validate_split_plan(a.split_plan, "build_decode_metadata"));
  }
  if (a.fill_columns < 0 || a.fill_columns > max_pages) {
    return c.fail("fill_columns " + str(a.fill_columns) + " is outside [0, " + str(max_pages) + "] (page_table columns)");
  }
  BATON_RETURN_IF_ERROR(check_error_flags(c, a.error_flags));
  BATON_RETURN_IF_ERROR(c.distinct_elements(a.page_table, "page_table"));
  return c.disjoint({{"cache_seqlens", &a.cache_seqlens},
                     {"cu_seqlens_k", &a.cu_seqlens_k},
                     {"page_table", &a.page_table},
                     {"swa_page_table", &a.swa_page_table},
                     {"num_kv_splits", &a.num_kv_splits},
                     {"error_flags", &a.error_flags}},
                    {{"seq_lens", &a.seq_lens},
                     {"req_pool_indices", &a.req_pool_indices},
                     {"req_to_token", &a.req_to_token},
                     {"full_to_swa", &a.full_to_swa}});
}

Status validate(SpecPageTableArgs const& a) {
  Checker c("build_spec_page_table");
  if (a.num_draft_tokens < 1) return c.fail("num_draft_tokens " + str(a.num_draft_tokens) + " must be >= 1");
  BATON_RETURN_IF_ERROR(c.tensor(a.committed, "committed", 2, {DType::kInt32}));
  int64_t const batch = a.committed.shape[0];
  if (batch > (int64_t(1) << 30)) return c.fail("batch_size " + str(batch) + " is too large");
  int64_t const rows = batch * a.num_draft_tokens;  // < 2^61: no overflow
  if (rows > (int64_t(1) << 30)) return c.fail("batch_size * num_draft_tokens " + str(rows) + " is too large");
  BATON_RETURN_IF_ERROR(c.tensor(a.committed_lens, "committed_lens", 1, kIndexTypes));
  if (a.committed_lens.shape[0] != batch && a.committed_lens.shape[0] != rows) {
    return c.fail("committed_lens has " + str(a.committed_lens.shape[0]) + " entries, expected batch_size " +
                  str(batch) + " or batch_size * num_draft_tokens " + str(rows));
  }
  BATON_RETURN_IF_ERROR(c.optional(a.start, "start", 1, kIndexTypes));
  if (a.start.defined()) BATON_RETURN_IF_ERROR(c.dim(a.start, "start", 0, rows, "batch_size * num_draft_tokens"));
  BATON_RETURN_IF_ERROR(c.tensor(a.draft, "draft", 2, {DType::kInt32}));
  BATON_RETURN_IF_ERROR(c.dim(a.draft, "draft", 0, rows, "batch_size * num_draft_tokens"));
  BATON_RETURN_IF_ERROR(c.tensor(a.draft_lens, "draft_lens", 1, kIndexTypes));
  BATON_RETURN_IF_ERROR(c.dim(a.draft_lens, "draft_lens", 0, rows, "batch_size * num_draft_tokens"));
  BATON_RETURN_IF_ERROR(c.tensor(a.page_table, "page_table", 2, {DType::kInt32}));
  BATON_RETURN_IF_ERROR(c.dim(a.page_table, "page_table", 0, rows, "batch_size * num_draft_tokens"));
  if (a.page_table.shape[1] > INT32_MAX) {  // then rows (< 2^31) x columns cannot overflow int64
    return c.fail("page_table has " + str(a.page_table.shape[1]) + " columns, past 2^31 - 1");
  }
  if (rows * a.page_table.shape[1] > INT32_MAX) {
    return c.fail(str(rows) + " rows x " + str(a.page_table.shape[1]) + " columns could overflow the int32 cu_seqlens_k");
  }
  BATON_RETURN_IF_ERROR(check_vector_out(c, a.cache_seqlens, "cache_seqlens", rows, "batch_size * num_draft_tokens"));
  BATON_RETURN_IF_ERROR(check_vector_out(c, a.cu_seqlens_k, "cu_seqlens_k", rows + 1, "batch_size * num_draft_tokens + 1"));
  BATON_RETURN_IF_ERROR(check_error_flags(c, a.error_flags));
  BATON_RETURN_IF_ERROR(c.distinct_elements(a.page_table, "page_table"));
  return c.disjoint({{"page_table", &a.page_table},
                     {"cache_seqlens", &a.cache_seqlens},
                     {"cu_seqlens_k", &a.cu_seqlens_k},
                     {"error_flags", &a.error_flags}},
                    {{"committed", &a.committed},
                     {"committed_lens", &a.committed_lens},
                     {"start", &a.start},
                     {"draft", &a.draft},
                     {"draft_lens", &a.draft_lens}});
}

Status validate(PlanKvSplitsArgs const& a) {
  Checker c("plan_kv_splits");
  BATON_RETURN_IF_ERROR(c.tensor(a.cache_seqlens, "cache_seqlens", 1, {DType::kInt32}));
  BATON_RETURN_IF_ERROR(c.unit_stride(a.cache_seqlens, "cache_seqlens", 0));
  int64_t const batch = a.cache_seqlens.shape[0];
  if (batch > (int64_t(1) << 30)) return c.fail("batch_size " + str(batch) + " is too large");
  BATON_RETURN_IF_ERROR(check_vector_out(c, a.num_kv_splits, "num_kv_splits", batch, "batch_size"));
  BATON_RETURN_IF_ERROR(validate_split_plan(a.params, "plan_kv_splits"));
  return c.disjoint({{"num_kv_splits", &a.num_kv_splits}}, {{"cache_seqlens", &a.cache_seqlens}});
}

}  // namespace baton::metadata
