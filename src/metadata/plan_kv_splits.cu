// plan_kv_splits host adapter: validate -> configure -> launch.
#include "baton/device_info.h"
#include "baton/metadata.h"
#include "metadata/launch_config.h"
#include "metadata/plan_kv_splits_kernel.cuh"
#include "metadata/validate.h"
#include "runtime/launch.h"

namespace baton {

Status plan_kv_splits_supported(PlanKvSplitsArgs const& args) { return metadata::validate(args); }

Status plan_kv_splits(PlanKvSplitsArgs const& a, LaunchOptions const& options) {
  BATON_RETURN_IF_ERROR(metadata::validate(a));
  DeviceInfo info;
  BATON_RETURN_IF_ERROR(get_device_info(&info));
  metadata::PlanKvSplitsParams p{};
  p.cache_seqlens = static_cast<int32_t const*>(a.cache_seqlens.data);
  p.batch_size = static_cast<int>(a.cache_seqlens.shape[0]);
  p.plan = metadata::make_split_plan(a.params, info, a.num_kv_splits);
  detail::LaunchConfig config{dim3(1), dim3(metadata::kThreads)};
  detail::KernelTraits traits{"plan_kv_splits", /*waits_on_prior_grid=*/true};
  return detail::launch(metadata::plan_kv_splits_kernel<true>, traits, config, options, p);
}

}  // namespace baton
