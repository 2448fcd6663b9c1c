// Launch shapes shared by the metadata host adapters.
#pragma once

#include <cstdint>

#include <cuda_runtime_api.h>

#include "baton/device_info.h"
#include "baton/metadata.h"
#include "metadata/metadata_common.cuh"
#include "metadata/validate.h"

namespace baton::metadata {

// One length/scan CTA plus page-table CTAs: one per work item up to 8 resident CTAs per SM
// (256 threads each fill an SM), after which CTAs loop over items.
inline dim3 grid_for_items(int64_t num_items, DeviceInfo const& info) {
  int64_t const resident = int64_t(info.num_sms) * 8;
  int64_t const table_ctas = num_items < resident ? num_items : resident;
  return dim3(static_cast<unsigned>(1 + table_ctas));
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
