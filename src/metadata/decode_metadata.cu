// build_decode_metadata host adapter: validate -> configure -> launch.
#include <cstdint>
#include <climits>
#include <string>

#include "baton/device_info.h"
#include "baton/metadata.h"
#include "metadata/decode_metadata_kernel.cuh"
#include "metadata/launch_config.h"
#include "metadata/validate.h"
#include "runtime/check.h"
#include "runtime/launch.h"

namespace baton {

Status build_decode_metadata_supported(DecodeMetadataArgs const& args) { return metadata::validate(args); }

Status build_decode_metadata(DecodeMetadataArgs const& a, LaunchOptions const& options) {
  BATON_RETURN_IF_ERROR(metadata::validate(a));
  using metadata::DecodeMetadataParams;

  DecodeMetadataParams p{};
  p.seq_lens = {a.seq_lens.data, a.seq_lens.stride[0], a.seq_lens.dtype == DType::kInt64};
  p.req_pool_indices = {a.req_pool_indices.data, a.req_pool_indices.stride[0],
                        a.req_pool_indices.dtype == DType::kInt64};
  p.req_to_token = static_cast<int32_t const*>(a.req_to_token.data);
  p.rt_row_stride = a.req_to_token.stride[0];
  p.rt_col_stride = a.req_to_token.stride[1];
  p.num_rows = a.req_to_token.shape[0];
  p.max_context = a.req_to_token.shape[1];
  p.full_to_swa = static_cast<int64_t const*>(a.full_to_swa.data);
  p.swa_map_size = a.full_to_swa.defined() ? a.full_to_swa.shape[0] : 0;
  p.seq_len_delta = a.seq_len_delta;
  p.batch_size = static_cast<int>(a.seq_lens.shape[0]);
  p.page_shift = detail::log2_exact(a.page_size);
  p.max_pages = a.page_table.shape[1];
  p.fill_columns = a.fill_columns;
  int64_t const pages_needed = (p.max_context + a.page_size - 1) / a.page_size;
  int64_t const cols = pages_needed > a.fill_columns ? pages_needed : a.fill_columns;
  p.cache_seqlens = static_cast<int32_t*>(a.cache_seqlens.data);
  p.cu_seqlens_k = static_cast<int32_t*>(a.cu_seqlens_k.data);
  p.page_table = static_cast<int32_t*>(a.page_table.data);
  p.pt_row_stride = a.page_table.stride[0];
  p.pt_col_stride = a.page_table.stride[1];
  p.swa_page_table = static_cast<int32_t*>(a.swa_page_table.data);
  p.swa_row_stride = a.swa_page_table.stride[0];
  p.swa_col_stride = a.swa_page_table.stride[1];
  p.error_flags = static_cast<int32_t*>(a.error_flags.data);
  p.inputs_written_before_chain = a.inputs_written_before_chain;

  DeviceInfo info;
  BATON_RETURN_IF_ERROR(get_device_info(&info));
  if (a.num_kv_splits.defined()) {
    p.plan = metadata::make_split_plan(a.split_plan, info, a.num_kv_splits);
  }

  // Page size 1 with unit column strides and 16-byte aligned rows moves 8 columns per thread
  // with two 16-byte accesses.
  auto aligned16 = [](void const* ptr) { return (reinterpret_cast<uintptr_t>(ptr) & 15) == 0; };
  bool const vec = a.page_size == 1 && (p.rt_col_stride == 1 || p.max_context <= 1) &&
                   p.rt_row_stride % 4 == 0 && aligned16(p.req_to_token) &&
                   (p.pt_col_stride == 1 || p.max_pages <= 1) && p.pt_row_stride % 4 == 0 &&
                   aligned16(p.page_table);

  detail::KernelTraits traits{"build_decode_metadata", /*waits_on_prior_grid=*/true};
  auto* kernel = vec ? metadata::decode_metadata_kernel<true> : metadata::decode_metadata_kernel<false>;
  int per_sm = 1;
  BATON_RETURN_IF_ERROR(metadata::resident_per_sm(kernel, traits, &per_sm));
  p.cols_per_item = a.page_size >= 8 ? metadata::sector_item_columns(p.batch_size * cols, info)
                                     : metadata::kColsPerItem;
  int64_t const num_items = int64_t(p.batch_size) * ((cols + p.cols_per_item - 1) / p.cols_per_item);
  if (num_items > INT32_MAX) {
    return Status::invalid_argument("build_decode_metadata: batch_size " + std::to_string(p.batch_size) + " x " +
                                    std::to_string(cols) + " page columns is too large");
  }
  p.num_items = static_cast<int>(num_items);
  detail::LaunchConfig config{metadata::grid_for_items(p.num_items, per_sm, info), dim3(metadata::kThreads)};
  return detail::launch(kernel, traits, config, options, p);
}

}  // namespace baton
