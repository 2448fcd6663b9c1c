// decode_attention's producer instances for pages below 16 keys (split_kv_kernel<SmallPages<T>>),
// in a translation unit of their own: decode_attention.cu's instances for larger pages compile
// exactly as they would without these (scripts/cubin_same.sh checks that file's cubin).
// Trace marks only in decode_attention.cu's instances: each translation unit has its own table
// (common/trace.cuh), and baton::trace::read reads that one.
#undef BATON_TRACE

#include "attention/producer_launch.cuh"

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
