// decode_attention host adapter: validate -> configure -> launch producer (-> reducer).
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdlib>

#include "attention/merge_splits_kernel.cuh"
#include "attention/params.h"
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
bool read(unsigned long long* host, bool clear) {
  if (host != nullptr && cudaMemcpyFromSymbol(host, g_marks, sizeof(g_marks)) != cudaSuccess) return false;
  void* table = nullptr;
  if (clear && (cudaGetSymbolAddress(&table, g_marks) != cudaSuccess || cudaMemset(table, 0, sizeof(g_marks)) != cudaSuccess)) {
    return false;
  }
  return true;
}
bool focus(void const* a, void const* b) {
  unsigned long long const keys[2] = {reinterpret_cast<unsigned long long>(a), reinterpret_cast<unsigned long long>(b)};
  return cudaMemcpyToSymbol(g_focus, keys, sizeof(keys)) == cudaSuccess;
}
}  // namespace baton::trace
#endif

namespace baton {
namespace {

using attention::AttentionParams;

detail::KernelTraits const kProducerTraits{"decode_attention.split_kv", /*waits_on_prior_grid=*/true};

template <class T, int D, bool kNarrow = false, bool kMany = false, int kRows = attention::kRowsPerCta>
struct Producer {
  static constexpr auto* kernel =
      attention::split_kv_kernel<T, D, attention::kDefaultStages, kNarrow, true, kMany, kRows>;
  // kMany instances are the chained ones (kChain: the next item's page ids past kBytes).
  static constexpr size_t kSmem = attention::MmaSmem<D, attention::kDefaultStages, kRows>::launch_bytes(kMany);

  // Producer CTAs resident at once on `device` (SMs x CTAs per SM); also raises the kernel's
  // shared memory limit, which launching needs. Read once per device and thread.
  static Status ctas_per_wave(DeviceInfo const& info, int* ctas) {
    thread_local detail::ThreadMemo<int, int> memo;
    if (int const* hit = memo.find(info.device)) {
      *ctas = *hit;
      return Status::ok();
    }
    void const* func = reinterpret_cast<void const*>(kernel);
    BATON_RETURN_IF_ERROR(detail::allow_dynamic_smem(func, kProducerTraits, kSmem));
    int per_sm = 0;
    BATON_RETURN_IF_ERROR(detail::resident_ctas_per_sm(func, kProducerTraits, attention::kThreads, kSmem, &per_sm));
    *ctas = per_sm * info.num_sms;
    memo.put(info.device, *ctas);
    return Status::ok();
  }
};

// Which reducer follows the producer (launch_typed): none (single launch, one split), the
// small form (at most 2 rows per SM), or the medium or large form.
enum class Follower { kNone, kSmallReducer, kOtherReducer };

template <class T, int D, class Prod>
Status launch_producer(AttentionParams p, DeviceInfo const& info, LaunchOptions const& options, Follower follower,
                       int64_t reducer_rows, bool* planned) {
  // Grid y: enough CTAs per (kv head, row chunk) for every work item, at most one wave of the
  // device (split_kv_kernel.cuh); CTAs loop over items past that.
  int wave = 0;
  BATON_RETURN_IF_ERROR(Prod::ctas_per_wave(info, &wave));
  int64_t const heads = int64_t(p.num_kv_heads) * p.row_chunks;
  int64_t const wave_y = std::max<int64_t>(1, wave / heads);
  int64_t const items = int64_t(p.batch) * p.max_splits;
  unsigned const grid_y = static_cast<unsigned>(std::min<int64_t>({items, wave_y, 65535}));
  // Where the producer triggers. By default after its last item's KV loop, before that item's
  // merge and stores (decode-attention.md). With early reads (the caller runs a chain that
  // reads before its waits) right after its wait when no reducer follows, or when the small
  // reducer does (it triggers at entry under early reads) and all its CTAs fit on the SMs
  // beside this grid's: the reducer then launches while this grid streams and waits, and the
  // next kernel -- the next layer's producer, whose item search and old-key copies come before
  // its wait -- launches behind it and copies on the SMs this grid leaves free, one grid deep
  // (that producer triggers only after its own wait). Same machine, alternating runs,
  // in-graph, early reads, after the KV loop -> after the wait (docs/benchmarking.md,
  // nineteenth session):
  // - small reducer: 1x1K 6.25 -> 5.62 us, 8x1K 12.62 -> 11.30, 1x8K 12.88 -> 12.50, 1x32K
  //   34.56 -> 33.95. Without the fit test, with 8 draft tokens: 1x1K 9.49 -> 8.46, but 1x8K
  //   +0.3 and 1x32K +1.7, where the wide producer (204 registers) leaves room for one
  //   reducer CTA per SM and half of the reducer's 256 would queue behind its CTAs (the
  //   paired form that runs those shapes since rev e1278fb, at 255, leaves none);
  // - the medium and large reducers: 64x4K +1.4 us, the mix +0.4, so they keep the default;
  // - single launch: 8x1K 14.30 -> 13.85 us, 1x32K 41.1 -> 40.0, ragged 59.2 -> 57.1.
  // Without early reads the next kernel would only sit waiting (single launch, 1x1K 8.40 -> 8.94).
  bool after_wait = p.early_reads && follower != Follower::kOtherReducer;
  if (after_wait && follower == Follower::kSmallReducer) {
    int64_t const ctas = heads * grid_y;
    int const per_sm = static_cast<int>((ctas + info.num_sms - 1) / info.num_sms);
    detail::KernelShape const merge{reinterpret_cast<void const*>(attention::merge_splits_kernel<T, D>), D, 0,
                                    "decode_attention.merge_splits"};
    detail::KernelShape const self{reinterpret_cast<void const*>(Prod::kernel), attention::kThreads, Prod::kSmem,
                                   kProducerTraits.name};
    int beside = 0;
    BATON_RETURN_IF_ERROR(detail::ctas_beside_per_sm(merge, self, per_sm, &beside));
#if defined(BATON_TRACE)
    // Trace builds only: the marks cost the producer registers, which can change this
    // decision (bf16 d128 narrow: 154 in a normal build; 185 with the marks inlined, which
    // left 1 reducer CTA beside it at 8x1K instead of 2; 168 with them out of line, which by
    // the register arithmetic leaves 2 again). BATON_TRACE_BESIDE=N replaces the count, to
    // trace the decision a normal build makes.
    if (char const* v = std::getenv("BATON_TRACE_BESIDE"); v != nullptr && v[0] != '\0') beside = std::atoi(v);
#endif
    after_wait = int64_t(beside) * info.num_sms >= reducer_rows;
  }
  p.trigger_after_wait = after_wait ? 1 : 0;
  if (planned != nullptr) {  // planned_trigger_after_wait: the decision only, nothing launched
    *planned = after_wait;
    return Status::ok();
  }
  detail::LaunchConfig config{dim3(static_cast<unsigned>(heads), grid_y), dim3(attention::kThreads), Prod::kSmem};
  return detail::launch(Prod::kernel, kProducerTraits, config, options, p);
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
  Follower const follower =
      !reducer_follows ? Follower::kNone : small_grid ? Follower::kSmallReducer : Follower::kOtherReducer;
  // At most 8 packed rows per kv head (group x q_len <= 8): keys as the mma M dimension; up
  // to 16 the wide form; past 16 at head_dim <= 128 its paired instance, 32 rows per CTA
  // (row_chunks.h). Up to kFewRequests requests, the instance whose only item search is a
  // warp scan; past it, the one whose only search is find_items (split_kv_search.cuh).
  bool const many = p.batch > attention::kFewRequests;
  // The rows per CTA past 16 rows (row_chunks.h): 32, or 16 at head_dim 256 (no paired instance).
  constexpr int kPair = attention::rows_per_cta(attention::kRowsPerCta + 1, D);
  using PairMany = Producer<T, D, false, true, kPair>;
  using PairFew = Producer<T, D, false, false, kPair>;
  Status const produced =
      p.rows <= 8 ? (many ? launch_producer<T, D, Producer<T, D, true, true>>(p, info, options, follower, rows, planned)
                          : launch_producer<T, D, Producer<T, D, true>>(p, info, options, follower, rows, planned))
      : attention::rows_per_cta(p.rows, D) == attention::kPairRowsPerCta
          ? (many ? launch_producer<T, D, PairMany>(p, info, options, follower, rows, planned)
                  : launch_producer<T, D, PairFew>(p, info, options, follower, rows, planned))
          : (many ? launch_producer<T, D, Producer<T, D, false, true>>(p, info, options, follower, rows, planned)
                  : launch_producer<T, D, Producer<T, D, false>>(p, info, options, follower, rows, planned));
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
  if (max_splits <= 1 || batch_size <= 0 || q_len <= 0 || num_q_heads <= 0 || head_dim <= 0) return 0;
  size_t const rows = size_t(batch_size) * max_splits * q_len * num_q_heads;
  size_t const o_bytes = rows * head_dim * sizeof(float);
  size_t const lse_bytes = (rows * sizeof(float) + 15) / 16 * 16;
  return o_bytes + lse_bytes;
}

Status decode_attention_ctas_per_wave(int head_dim, int* ctas) {
  if (ctas == nullptr) return Status::invalid_argument("decode_attention_ctas_per_wave: ctas is null");
  *ctas = 0;
  if (head_dim != 64 && head_dim != 128 && head_dim != 256) {  // before any CUDA call
    return Status::invalid_argument("decode_attention_ctas_per_wave: head_dim " + std::to_string(head_dim) +
                                    " is not one of 64, 128, 256");
  }
  DeviceInfo info;
  BATON_RETURN_IF_ERROR(get_device_info(&info));
  switch (head_dim) {  // occupancy is the same for both dtypes (same registers and shared memory)
    case 64: return Producer<__nv_bfloat16, 64>::ctas_per_wave(info, ctas);
    case 128: return Producer<__nv_bfloat16, 128>::ctas_per_wave(info, ctas);
    default: return Producer<__nv_bfloat16, 256>::ctas_per_wave(info, ctas);
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
  p.k_stride_page = static_cast<int32_t>(a.k_cache.stride[0]);  // validate: < 2^31
  p.k_stride_token = static_cast<int32_t>(a.k_cache.stride[nhd ? 1 : 2]);
  p.k_stride_head = static_cast<int32_t>(a.k_cache.stride[nhd ? 2 : 1]);
  p.v_stride_page = static_cast<int32_t>(a.v_cache.stride[0]);
  p.v_stride_token = static_cast<int32_t>(a.v_cache.stride[nhd ? 1 : 2]);
  p.v_stride_head = static_cast<int32_t>(a.v_cache.stride[nhd ? 2 : 1]);
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
  p.window_left = a.window_left;
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
