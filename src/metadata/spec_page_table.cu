// build_spec_page_table host adapter: validate -> configure -> launch.
#include <climits>
#include <string>

#include "baton/device_info.h"
#include "baton/metadata.h"
#include "metadata/launch_config.h"
#include "metadata/spec_page_table_kernel.cuh"
#include "metadata/validate.h"
#include "runtime/launch.h"

namespace baton {

Status build_spec_page_table_supported(SpecPageTableArgs const& args) { return metadata::validate(args); }

Status build_spec_page_table(SpecPageTableArgs const& a, LaunchOptions const& options) {
  BATON_RETURN_IF_ERROR(metadata::validate(a));
  auto index = [](TensorView const& t) {
    return IndexPtr{t.data, t.defined() ? t.stride[0] : 1, t.dtype == DType::kInt64};
  };
  metadata::SpecPageTableParams p{};
  p.committed = static_cast<int32_t const*>(a.committed.data);
  p.a_row_stride = a.committed.stride[0];
  p.a_col_stride = a.committed.stride[1];
  p.width_a = a.committed.shape[1];
  p.num_draft_tokens = a.num_draft_tokens;
  p.rows = static_cast<int>(a.committed.shape[0] * a.num_draft_tokens);
  p.committed_lens = index(a.committed_lens);
  p.lens_per_row = a.committed_lens.shape[0] == p.rows && a.num_draft_tokens > 1;
  p.start = index(a.start);
  p.draft = static_cast<int32_t const*>(a.draft.data);
  p.b_row_stride = a.draft.stride[0];
  p.b_col_stride = a.draft.stride[1];
  p.width_b = a.draft.shape[1];
  p.draft_lens = index(a.draft_lens);
  p.max_cols = a.page_table.shape[1];
  int64_t const num_items = int64_t(p.rows) * ((p.max_cols + metadata::kColsPerItem - 1) / metadata::kColsPerItem);
  if (num_items > INT32_MAX) {
    return Status::invalid_argument("build_spec_page_table: " + std::to_string(p.rows) + " rows x " +
                                    std::to_string(p.max_cols) + " columns is too large");
  }
  p.num_items = static_cast<int>(num_items);
  p.page_table = static_cast<int32_t*>(a.page_table.data);
  p.pt_row_stride = a.page_table.stride[0];
  p.pt_col_stride = a.page_table.stride[1];
  p.cache_seqlens = static_cast<int32_t*>(a.cache_seqlens.data);
  p.cu_seqlens_k = static_cast<int32_t*>(a.cu_seqlens_k.data);
  p.error_flags = static_cast<int32_t*>(a.error_flags.data);

  DeviceInfo info;
  BATON_RETURN_IF_ERROR(get_device_info(&info));
  detail::KernelTraits traits{"build_spec_page_table", /*waits_on_prior_grid=*/true};
  int per_sm = 1;
  BATON_RETURN_IF_ERROR(metadata::resident_per_sm(metadata::spec_page_table_kernel<true>, traits, &per_sm));
  detail::LaunchConfig config{metadata::grid_for_items(p.num_items, per_sm, info), dim3(metadata::kThreads)};
  return detail::launch(metadata::spec_page_table_kernel<true>, traits, config, options, p);
}

}  // namespace baton
