// decode_attention host adapter: validate -> configure -> launch producer (-> reducer).
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "attention/merge_splits_kernel.cuh"
#include "attention/split_kv_kernel.cuh"
#include "attention/split_kv_mma_kernel.cuh"
#include "attention/validate.h"
#include "baton/attention.h"
#include "runtime/check.h"
#include "runtime/launch.h"

namespace baton {
namespace {

using attention::AttentionParams;

// BATON_ATTENTION_SIMT=1 selects the CUDA-core producer (the reference implementation the
// tensor-core one is checked against); read once.
bool use_simt_producer() {
  static bool const simt = [] {
    char const* v = std::getenv("BATON_ATTENTION_SIMT");
    return v != nullptr && std::strcmp(v, "1") == 0;
  }();
  return simt;
}

template <class Kernel>
Status launch_producer(Kernel* kernel, size_t smem, AttentionParams const& p, LaunchOptions const& options) {
  detail::KernelTraits const producer{"decode_attention.split_kv", /*waits_on_prior_grid=*/true};
  BATON_RETURN_IF_ERROR(detail::allow_dynamic_smem(reinterpret_cast<void const*>(kernel), producer, smem));
  detail::LaunchConfig config{dim3(p.max_splits, p.num_kv_heads * p.row_chunks, p.batch), dim3(attention::kThreads),
                              smem};
  return detail::launch(kernel, producer, config, options, p);
}

template <class T, int D>
Status launch_typed(AttentionParams const& p, LaunchOptions const& options) {
  if (use_simt_producer()) {
    BATON_RETURN_IF_ERROR(
        launch_producer(attention::split_kv_kernel<T, D>, attention::SmemLayout<D>::kBytes, p, options));
  } else {
    BATON_RETURN_IF_ERROR(
        launch_producer(attention::split_kv_mma_kernel<T, D>, attention::MmaSmem<D>::kBytes, p, options));
  }
  if (p.max_splits == 1) return Status::ok();  // every request finished in the producer

  int64_t const rows = int64_t(p.batch) * p.q_len * p.num_q_heads;
  detail::KernelTraits const reducer{"decode_attention.merge_splits", /*waits_on_prior_grid=*/true};
  detail::LaunchConfig merge{dim3(static_cast<unsigned>((rows + attention::kWarps - 1) / attention::kWarps)),
                             dim3(attention::kThreads)};
  return detail::launch(attention::merge_splits_kernel<T, D>, reducer, merge, options, p);
}

// The dispatch table: dtype x head_dim (attention::kHeadDims).
template <class T>
Status launch_dtype(AttentionParams const& p, int head_dim, LaunchOptions const& options) {
  switch (head_dim) {
    case 64: return launch_typed<T, 64>(p, options);
    case 128: return launch_typed<T, 128>(p, options);
    case 256: return launch_typed<T, 256>(p, options);
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

Status decode_attention_supported(DecodeAttentionArgs const& args) {
  attention::AttentionShape shape;
  return attention::validate(args, &shape);
}

Status decode_attention(DecodeAttentionArgs const& a, Workspace workspace, LaunchOptions const& options) {
  attention::AttentionShape s;
  BATON_RETURN_IF_ERROR(attention::validate(a, &s));
  BATON_RETURN_IF_ERROR(attention::validate_workspace(a, s, workspace));

  AttentionParams p{};
  p.q = a.q.data;
  p.q_stride_token = a.q.stride[0];
  p.q_stride_head = a.q.stride[1];
  bool const nhd = a.layout == KvLayout::kNHD;
  p.k = a.k_cache.data;
  p.v = a.v_cache.data;
  p.k_stride_page = a.k_cache.stride[0];
  p.k_stride_token = a.k_cache.stride[nhd ? 1 : 2];
  p.k_stride_head = a.k_cache.stride[nhd ? 2 : 1];
  p.v_stride_page = a.v_cache.stride[0];
  p.v_stride_token = a.v_cache.stride[nhd ? 1 : 2];
  p.v_stride_head = a.v_cache.stride[nhd ? 2 : 1];
  p.cache_seqlens = static_cast<int32_t const*>(a.cache_seqlens.data);
  p.page_table = static_cast<int32_t const*>(a.page_table.data);
  p.pt_stride = a.page_table.stride[0];
  p.num_kv_splits = static_cast<int32_t const*>(a.num_kv_splits.data);
  p.max_splits = a.max_splits;
  p.batch = s.batch;
  p.q_len = s.q_len;
  p.num_q_heads = s.num_q_heads;
  p.num_kv_heads = s.num_kv_heads;
  p.group = s.num_q_heads / s.num_kv_heads;
  p.rows = p.group * s.q_len;
  p.row_chunks = (p.rows + attention::kRowsPerCta - 1) / attention::kRowsPerCta;
  p.page_shift = detail::log2_exact(s.page_size);
  p.scale = a.softmax_scale > 0 ? a.softmax_scale : 1.0f / std::sqrt(static_cast<float>(s.head_dim));
  p.window_left = a.window_left;
  p.softcap = a.softcap;
  p.sinks = static_cast<float const*>(a.sinks.data);
  p.alibi = static_cast<float const*>(a.alibi_slopes.data);
  p.out = a.out.data;
  p.out_stride_token = a.out.stride[0];
  p.out_stride_head = a.out.stride[1];
  p.lse = static_cast<float*>(a.lse.data);
  p.lse_stride_token = a.lse.defined() ? a.lse.stride[0] : 0;
  if (a.max_splits > 1) {
    size_t const rows = size_t(s.batch) * a.max_splits * s.q_len * s.num_q_heads;
    p.part_o = static_cast<float*>(workspace.data);
    p.part_lse = reinterpret_cast<float*>(static_cast<char*>(workspace.data) + rows * s.head_dim * sizeof(float));
  }
  return a.q.dtype == DType::kBFloat16 ? launch_dtype<__nv_bfloat16>(p, s.head_dim, options)
                                        : launch_dtype<__half>(p, s.head_dim, options);
}

}  // namespace baton
