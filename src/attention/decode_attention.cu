// decode_attention host adapter: validate -> configure -> launch producer (-> reducer).
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>

#include "attention/merge_splits_kernel.cuh"
#include "attention/params.h"
#include "attention/producer_launch.cuh"
#include "attention/split_kv_kernel.cuh"
#include "attention/trigger_plan.h"
#include "attention/validate.h"
#include "baton/attention.h"
#include "baton/device_info.h"
#include "runtime/check.h"
#include "runtime/launch.h"
#include "runtime/thread_memo.h"

#if defined(BATON_TRACE)
namespace baton::trace {
// Both units' tables as one: this unit's (every page size's reducer, the producers of pages of
// 16 keys and more), then the small-page producers' merged in.
bool read(unsigned long long* host, bool clear) {
  return read_unit(host, clear, false) && detail::read_small_pages(host, clear);
}
bool focus(void const* a, void const* b) { return focus_unit(a, b) && detail::focus_small_pages(a, b); }
}  // namespace baton::trace
#endif

namespace baton {
namespace {

using attention::AttentionParams;

// next with the small reducer's kernel, for the small-page instances' trigger query
// (producer_launch.cuh: only this unit compiles the reducers).
template <class T, int D>
attention::FollowerInfo with_small_reducer(attention::FollowerInfo next) {
  next.small_reducer = reinterpret_cast<void const*>(attention::merge_splits_kernel<T, D>);
  return next;
}

// planned: null to launch; otherwise only the producer's trigger placement is decided and
// written there, and nothing is launched (planned_trigger_after_wait).
template <class T, int D>
Status launch_typed(AttentionParams p, DeviceInfo const& info, LaunchOptions const& options, bool* planned) {
  // Single launch only when a CTA's rows of partials fit its shared memory for the merge
  // (split_kv_merge_last.cuh, merge_if_last); otherwise producer + reducer, with the same bits.
  if (p.counters != nullptr && !attention::single_launch_fits<D, attention::kDefaultStages>(p.rows, p.max_splits)) {
    p.counters = nullptr;
  }
  bool const reducer_follows = p.max_splits > 1 && p.counters == nullptr;
  int64_t const rows = int64_t(p.batch) * p.q_len * p.num_q_heads;
  // Reducer forms (merge_splits_kernel.cuh): up to 2 rows per SM the small form (a CTA per
  // row; triggers the next kernel early and, without early reads, loads before the split
  // count is known); up to 6 the medium form (a CTA per row at 32 registers, most of them
  // beside the producer's); past that the large form (a warp per row, 4 per CTA). The last
  // two read the split count first and trigger at exit.
  bool const small_grid = rows <= 2 * int64_t(info.num_sms);
  attention::FollowerInfo next;
  next.form = !reducer_follows ? attention::Follower::kNone
              : small_grid     ? attention::Follower::kSmallReducer
                               : attention::Follower::kOtherReducer;
  next.rows = rows;
  // The producer instance for the page size: pages below 16 keys have their own
  // (decode_attention_small_pages.cu); then the form for the rows and batch (producer_launch.cuh).
  Status const produced =
      p.page_shift >= attention::kSmallPageShift
          ? attention::launch_producer_form<T, D, false>(p, info, options, next, planned)
          : attention::launch_small_pages_producer<T, D>(p, info, options, with_small_reducer<T, D>(next), planned);
  BATON_RETURN_IF_ERROR(produced);
  if (planned != nullptr) return Status::ok();
  // One split everywhere: every request finished in the producer; single launch: merged there.
  if (!reducer_follows) return Status::ok();

  detail::KernelTraits const reducer{"decode_attention.merge_splits", /*waits_on_prior_grid=*/true};
  if (small_grid || rows <= attention::medium_reducer_rows(info.num_sms)) {  // a CTA per row, a thread per dim
    detail::LaunchConfig const merge{dim3(static_cast<unsigned>(rows)), dim3(D)};
    return small_grid ? detail::launch(attention::merge_splits_kernel<T, D>, reducer, merge, options, p)
                      : detail::launch(attention::merge_splits_medium_kernel<T, D>, reducer, merge, options, p);
  }
  // A warp per row, attention::kLargeRows rows per CTA.
  detail::LaunchConfig const merge{dim3(attention::large_reducer_ctas(rows)), dim3(attention::kLargeThreads)};
  return detail::launch(attention::merge_splits_large_kernel<T, D>, reducer, merge, options, p);
}

// The dispatch table: dtype x head_dim (attention::kHeadDims).
template <class T>
Status launch_dtype(AttentionParams const& p, int head_dim, DeviceInfo const& info, LaunchOptions const& options,
                    bool* planned) {
  switch (head_dim) {
    case 64: return launch_typed<T, 64>(p, info, options, planned);
    case 128: return launch_typed<T, 128>(p, info, options, planned);
    case 256: return launch_typed<T, 256>(p, info, options, planned);
  }
  return Status::unsupported("decode_attention: head_dim " + std::to_string(head_dim) + " is not compiled");
}

}  // namespace

size_t decode_attention_workspace_bytes(int batch_size, int q_len, int num_q_heads, int head_dim, int max_splits) {
  if (max_splits <= 1) return 0;
  // Arguments decode_attention rejects give 0 too (it then names the argument); within these
  // bounds the product below fits size_t.
  if (batch_size < 1 || batch_size > attention::kMaxBatch || q_len < 1 || q_len > attention::kMaxQLen || num_q_heads < 1 ||
      !attention::supported_head_dim(head_dim) || max_splits > attention::kMaxSplits ||
      int64_t(batch_size) * q_len * num_q_heads > INT32_MAX) {
    return 0;
  }
  size_t const rows = size_t(batch_size) * max_splits * q_len * num_q_heads;
  size_t const o_bytes = rows * head_dim * sizeof(float);
  size_t const lse_bytes = (rows * sizeof(float) + 15) / 16 * 16;
  return o_bytes + lse_bytes;
}

Status decode_attention_ctas_per_wave(int head_dim, int* ctas) {
  if (ctas == nullptr) return Status::invalid_argument("decode_attention_ctas_per_wave: ctas is null");
  *ctas = 0;
  if (!attention::supported_head_dim(head_dim)) {  // before any CUDA call
    return Status::invalid_argument("decode_attention_ctas_per_wave: head_dim " + std::to_string(head_dim) +
                                    " is not one of 64, 128, 256");
  }
  DeviceInfo info;
  BATON_RETURN_IF_ERROR(get_device_info(&info));
  switch (head_dim) {  // occupancy is the same for both dtypes (same registers and shared memory)
    case 64: return attention::Producer<__nv_bfloat16, 64>::ctas_per_wave(info, ctas);
    case 128: return attention::Producer<__nv_bfloat16, 128>::ctas_per_wave(info, ctas);
    default: return attention::Producer<__nv_bfloat16, 256>::ctas_per_wave(info, ctas);
  }
}

Status decode_attention_supported(DecodeAttentionArgs const& args) {
  attention::AttentionShape shape;
  return attention::validate(args, &shape);
}

namespace attention {

AttentionParams make_params(DecodeAttentionArgs const& a, AttentionShape const& s, Workspace workspace) {
  AttentionParams p{};
  p.q = a.q.data;
  p.q_stride_token = a.q.stride[0];
  p.q_stride_head = a.q.stride[1];
  bool const nhd = a.layout == KvLayout::kNHD;
  p.k = a.k_cache.data;
  p.v = a.v_cache.data;
  // validate: < 2^31 where the dim has more than one index; a size-1 dim's stride only ever
  // multiplies index 0, so it is passed as 0 (the caller's may be any value).
  auto stride32 = [](TensorView const& t, int d) { return t.shape[d] > 1 ? static_cast<int32_t>(t.stride[d]) : 0; };
  p.k_stride_page = stride32(a.k_cache, 0);
  p.k_stride_token = stride32(a.k_cache, nhd ? 1 : 2);
  p.k_stride_head = stride32(a.k_cache, nhd ? 2 : 1);
  p.v_stride_page = stride32(a.v_cache, 0);
  p.v_stride_token = stride32(a.v_cache, nhd ? 1 : 2);
  p.v_stride_head = stride32(a.v_cache, nhd ? 2 : 1);
  p.num_pages = static_cast<int32_t>(std::min<int64_t>(a.k_cache.shape[0], INT32_MAX));  // page ids are int32
  p.cache_seqlens = static_cast<int32_t const*>(a.cache_seqlens.data);
  p.page_table = static_cast<int32_t const*>(a.page_table.data);
  p.pt_stride = a.page_table.stride[0];
  p.pt_cols = a.page_table.shape[1];
  p.num_kv_splits = static_cast<int32_t const*>(a.num_kv_splits.data);
  p.max_splits = a.max_splits;
  p.batch = s.batch;
  p.q_len = s.q_len;
  p.num_q_heads = s.num_q_heads;
  p.num_kv_heads = s.num_kv_heads;
  p.group = s.num_q_heads / s.num_kv_heads;
  p.rows = p.group * s.q_len;
  p.row_chunks = static_cast<int>(attention::row_chunks(p.group, s.q_len, s.head_dim));
  p.page_shift = detail::log2_exact(s.page_size);
  p.scale = a.softmax_scale > 0 ? a.softmax_scale : 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  // A window at least as long as the longest request the page table can hold (< 2^31 - 16 keys,
  // validate) hides no key; capped there, `position - window_left` cannot overflow int32.
  p.window_left = static_cast<int>(std::min<int64_t>(a.window_left, a.page_table.shape[1] * int64_t(s.page_size)));
  p.early_reads = a.inputs_written_before_chain ? 1 : 0;
  p.softcap = a.softcap;
  p.sinks = static_cast<float const*>(a.sinks.data);
  p.alibi = static_cast<float const*>(a.alibi_slopes.data);
  p.out = a.out.data;
  p.out_stride_token = a.out.stride[0];
  p.out_stride_head = a.out.stride[1];
  p.lse = static_cast<float*>(a.lse.data);
  p.lse_stride_token = a.lse.defined() ? a.lse.stride[0] : 0;
  if (a.max_splits > 1) {
    if (workspace.data != nullptr) {  // none: planned_trigger_after_wait, which launches nothing
      size_t const rows = size_t(s.batch) * a.max_splits * s.q_len * s.num_q_heads;
      char* const base = static_cast<char*>(workspace.data);
      size_t const lse_at = rows * s.head_dim * sizeof(float);
      p.part_o = reinterpret_cast<float*>(base);
      p.part_lse = reinterpret_cast<float*>(base + lse_at);
    }
    if (a.single_launch) p.counters = static_cast<int*>(a.merge_counters.data);
  }
  return p;
}

}  // namespace attention

namespace {

// After validation: the launches of a call, or (planned set) only the producer's trigger
// placement, with nothing launched.
Status launch_validated(DecodeAttentionArgs const& a, attention::AttentionShape const& s, Workspace workspace,
                        LaunchOptions const& options, bool* planned) {
  AttentionParams const p = attention::make_params(a, s, workspace);
  DeviceInfo info;  // one device query per call (the launches below repeat only cudaGetDevice)
  BATON_RETURN_IF_ERROR(get_device_info(&info));
  return a.q.dtype == DType::kBFloat16 ? launch_dtype<__nv_bfloat16>(p, s.head_dim, info, options, planned)
                                        : launch_dtype<__half>(p, s.head_dim, info, options, planned);
}

}  // namespace

Status decode_attention(DecodeAttentionArgs const& a, Workspace workspace, LaunchOptions const& options) {
  attention::AttentionShape s;
  BATON_RETURN_IF_ERROR(attention::validate(a, &s));
  BATON_RETURN_IF_ERROR(attention::validate_workspace(a, s, workspace));
  return launch_validated(a, s, workspace, options, nullptr);
}

namespace attention {

Status planned_trigger_after_wait(DecodeAttentionArgs const& a, bool* after_wait) {
  if (after_wait == nullptr) return Status::invalid_argument("planned_trigger_after_wait: after_wait is null");
  AttentionShape s;
  BATON_RETURN_IF_ERROR(validate(a, &s));
  return launch_validated(a, s, Workspace{}, {}, after_wait);
}

}  // namespace attention

}  // namespace baton
