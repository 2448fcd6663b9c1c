// decode_attention's producer launch (host code over the kernel templates): the instance for
// the rows, batch and page size, its grid and its trigger placement. Shared by
// decode_attention.cu (pages of 16 keys and more) and decode_attention_small_pages.cu (pages
// below 16 keys), each of which compiles the kernels of its own instances only.
#pragma once

#include <algorithm>
#include <cstdlib>

#include "attention/merge_splits_kernel.cuh"
#include "attention/split_kv_kernel.cuh"
#include "baton/device_info.h"
#include "runtime/launch.h"
#include "runtime/thread_memo.h"

namespace baton::attention {

inline detail::KernelTraits const kProducerTraits{"decode_attention.split_kv", /*waits_on_prior_grid=*/true};

// The producer kernel of an instance; kSmall: the one for pages below 16 keys. Only the one
// chosen is instantiated (if constexpr), so each translation unit compiles its own kind.
template <class T, int D, bool kNarrow, bool kMany, int kRows, bool kSmall>
constexpr auto producer_kernel() {
  if constexpr (kSmall) {
    return &split_kv_kernel<SmallPages<T>, D, kDefaultStages, kNarrow, true, kMany, kRows>;
  } else {
    return &split_kv_kernel<T, D, kDefaultStages, kNarrow, true, kMany, kRows>;
  }
}

template <class T, int D, bool kNarrow = false, bool kMany = false, int kRows = kRowsPerCta, bool kSmall = false>
struct Producer {
  static constexpr auto* kernel = producer_kernel<T, D, kNarrow, kMany, kRows, kSmall>();
  static constexpr bool kSmallPages = kSmall;
  // kMany instances are the chained ones (kChain: the next item's page ids past kBytes).
  static constexpr size_t kSmem = MmaSmem<D, kDefaultStages, kRows>::launch_bytes(kMany);

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
    BATON_RETURN_IF_ERROR(detail::resident_ctas_per_sm(func, kProducerTraits, kThreads, kSmem, &per_sm));
    *ctas = per_sm * info.num_sms;
    memo.put(info.device, *ctas);
    return Status::ok();
  }
};

// Which reducer follows the producer (launch_typed): none (single launch, one split), the
// small form (at most 2 rows per SM), or the medium or large form.
enum class Follower { kNone, kSmallReducer, kOtherReducer };

// The reducer that follows: its form, its rows, and the small form's kernel for the
// small-page instances' trigger query (below), which decode_attention.cu fills in.
struct FollowerInfo {
  Follower form = Follower::kNone;
  int64_t rows = 0;
  void const* small_reducer = nullptr;  // merge_splits_kernel<T, D>
};

template <class T, int D, class Prod>
Status launch_producer(AttentionParams p, DeviceInfo const& info, LaunchOptions const& options,
                       FollowerInfo const& next, bool* planned) {
  Follower const follower = next.form;
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
    // The reducer's kernel: taken here for the instances of decode_attention.cu (as before the
    // small-page unit existed, so that its cubin stays byte for byte as it was); passed in for
    // the small-page instances, so that only decode_attention.cu compiles the reducers (one
    // definition, one host stub).
    void const* merge_func = nullptr;
    if constexpr (Prod::kSmallPages) {
      merge_func = next.small_reducer;
    } else {
      merge_func = reinterpret_cast<void const*>(merge_splits_kernel<T, D>);
    }
    detail::KernelShape const merge{merge_func, D, 0, "decode_attention.merge_splits"};
    detail::KernelShape const self{reinterpret_cast<void const*>(Prod::kernel), kThreads, Prod::kSmem,
                                   kProducerTraits.name};
    int beside = 0;
    BATON_RETURN_IF_ERROR(detail::ctas_beside_per_sm(merge, self, per_sm, &beside));
#if defined(BATON_TRACE)
    // Trace builds only: the marks cost the producer registers, which can change this
    // decision (bf16 d128 narrow: 154 in a normal build; 185 with the marks inlined, which
    // left 1 reducer CTA beside it at 8x1K instead of 2; 168 with them out of line, which by
    // the register arithmetic leaves 2 again; 165-168 with the fifty-fifth session's inline
    // %clock marks). BATON_TRACE_BESIDE=N replaces the count, to
    // trace the decision a normal build makes.
    if (char const* v = std::getenv("BATON_TRACE_BESIDE"); v != nullptr && v[0] != '\0') beside = std::atoi(v);
#endif
    after_wait = int64_t(beside) * info.num_sms >= next.rows;
  }
  p.trigger_after_wait = after_wait ? 1 : 0;
  if (planned != nullptr) {  // planned_trigger_after_wait: the decision only, nothing launched
    *planned = after_wait;
    return Status::ok();
  }
  detail::LaunchConfig config{dim3(static_cast<unsigned>(heads), grid_y), dim3(kThreads), Prod::kSmem};
  return detail::launch(Prod::kernel, kProducerTraits, config, options, p);
}

// The producer instance for the packed rows and the batch (kSmall: for pages below 16 keys).
template <class T, int D, bool kSmall>
Status launch_producer_form(AttentionParams const& p, DeviceInfo const& info, LaunchOptions const& options,
                            FollowerInfo const& next, bool* planned) {
  // At most 8 packed rows per kv head (group x q_len <= 8): keys as the mma M dimension; up
  // to 16 the wide form; past 16 at head_dim <= 128 its paired instance, 32 rows per CTA
  // (row_chunks.h). Up to kFewRequests requests, the instance whose only item search is a
  // warp scan; past it, the one whose only search is find_items (split_kv_search.cuh).
  bool const many = p.batch > kFewRequests;
  // The rows per CTA past 16 rows (row_chunks.h): 32, or 16 at head_dim 256 (no paired instance).
  constexpr int kPair = rows_per_cta(kRowsPerCta + 1, D);
  if (p.rows <= 8) {
    return many ? launch_producer<T, D, Producer<T, D, true, true, kRowsPerCta, kSmall>>(p, info, options, next, planned)
                : launch_producer<T, D, Producer<T, D, true, false, kRowsPerCta, kSmall>>(p, info, options, next, planned);
  }
  if (rows_per_cta(p.rows, D) == kPairRowsPerCta) {
    return many ? launch_producer<T, D, Producer<T, D, false, true, kPair, kSmall>>(p, info, options, next, planned)
                : launch_producer<T, D, Producer<T, D, false, false, kPair, kSmall>>(p, info, options, next, planned);
  }
  return many ? launch_producer<T, D, Producer<T, D, false, true, kRowsPerCta, kSmall>>(p, info, options, next, planned)
              : launch_producer<T, D, Producer<T, D, false, false, kRowsPerCta, kSmall>>(p, info, options, next, planned);
}

// decode_attention_small_pages.cu: launch_producer_form<T, D, true>, compiled there only.
template <class T, int D>
Status launch_small_pages_producer(AttentionParams const& p, DeviceInfo const& info, LaunchOptions const& options,
                                   FollowerInfo const& next, bool* planned);

}  // namespace baton::attention
