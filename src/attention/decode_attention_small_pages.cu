// decode_attention's producer instances for pages below 16 keys (split_kv_kernel<SmallPages<T>>),
// in a translation unit of their own: decode_attention.cu's instances for larger pages compile
// exactly as they would without these (scripts/cubin_same.sh checks that file's cubin).
// Trace builds: this unit's marks go to tables of its own (common/trace.cuh), which
// baton::trace::read merges with decode_attention.cu's.

#include "attention/producer_launch.cuh"

#if defined(BATON_TRACE)
namespace baton::trace::detail {
bool read_small_pages(unsigned long long* host, bool clear) { return read_unit(host, clear, true); }
bool focus_small_pages(void const* a, void const* b) { return focus_unit(a, b); }
}  // namespace baton::trace::detail
#endif

namespace baton::attention {

template <class T, int D>
Status launch_small_pages_producer(AttentionParams const& p, DeviceInfo const& info, LaunchOptions const& options,
                                   FollowerInfo const& next, bool* planned) {
  return launch_producer_form<T, D, true>(p, info, options, next, planned);
}

// The dispatch table's entries (decode_attention.cu, launch_dtype): dtype x head_dim.
template Status launch_small_pages_producer<__nv_bfloat16, 64>(AttentionParams const&, DeviceInfo const&,
                                                               LaunchOptions const&, FollowerInfo const&, bool*);
template Status launch_small_pages_producer<__nv_bfloat16, 128>(AttentionParams const&, DeviceInfo const&,
                                                                LaunchOptions const&, FollowerInfo const&, bool*);
template Status launch_small_pages_producer<__nv_bfloat16, 256>(AttentionParams const&, DeviceInfo const&,
                                                                LaunchOptions const&, FollowerInfo const&, bool*);
template Status launch_small_pages_producer<__half, 64>(AttentionParams const&, DeviceInfo const&,
                                                        LaunchOptions const&, FollowerInfo const&, bool*);
template Status launch_small_pages_producer<__half, 128>(AttentionParams const&, DeviceInfo const&,
                                                         LaunchOptions const&, FollowerInfo const&, bool*);
template Status launch_small_pages_producer<__half, 256>(AttentionParams const&, DeviceInfo const&,
                                                         LaunchOptions const&, FollowerInfo const&, bool*);

}  // namespace baton::attention
