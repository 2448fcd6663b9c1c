// Launch shapes shared by the metadata host adapters.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "baton/device_info.h"
#include "baton/metadata.h"
#include "metadata/metadata_common.cuh"
#include "metadata/validate.h"
#include "runtime/launch.h"

namespace baton::metadata {

// One length/scan CTA plus the page-table CTAs: one per work item, up to what is resident
// on the whole GPU at once; past that, CTAs loop over items (queued CTAs would only add a
// second wave with a tail).
template <class Params>
Status grid_for_items(void (*kernel)(Params), detail::KernelTraits const& traits, int64_t num_items,
                      DeviceInfo const& info, dim3* grid) {
  int per_sm = 1;
  BATON_RETURN_IF_ERROR(
      detail::resident_ctas_per_sm(reinterpret_cast<void const*>(kernel), traits, kThreads, 0, &per_sm));
  // Up to 4 waves, the hardware scheduler balances CTAs of uneven finish times; past that
  // each CTA loops over items.
  int64_t const cap = 4 * int64_t(info.num_sms) * per_sm;
  int64_t const table_ctas = num_items < cap ? num_items : cap;
  *grid = dim3(static_cast<unsigned>(1 + table_ctas));
  return Status::ok();
}

inline SplitPlanDevice make_split_plan(SplitPlanParams const& plan, DeviceInfo const& info, TensorView const& out) {
  SplitPlanDevice d;
  d.num_kv_splits = static_cast<int32_t*>(out.data);
  d.max_splits = plan.max_splits;
  d.num_sms = plan.num_sms > 0 ? plan.num_sms : info.num_sms;
  d.ctas_per_request = split_plan_ctas_per_request(plan);
  return d;
}

}  // namespace baton::metadata
