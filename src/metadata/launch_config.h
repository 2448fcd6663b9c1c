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

template <class Params>
Status resident_per_sm(void (*kernel)(Params), detail::KernelTraits const& traits, int* per_sm) {
  return detail::resident_ctas_per_sm(reinterpret_cast<void const*>(kernel), traits, kThreads, 0, per_sm);
}

// One length/scan CTA plus the page-table CTAs: one per work item up to 4 waves of resident
// CTAs (the hardware scheduler balances CTAs of uneven finish times); past that each CTA
// loops over items.
inline dim3 grid_for_items(int64_t num_items, int per_sm, DeviceInfo const& info) {
  int64_t const cap = 4 * int64_t(info.num_sms) * per_sm;
  int64_t const table_ctas = num_items < cap ? num_items : cap;
  return dim3(static_cast<unsigned>(1 + table_ctas));
}

// Item width for page_size >= 8, where every entry is its own 32-byte sector: about one
// item per SM (a few long rows must not queue all their sector loads on a few SMs; many
// narrow items cost more than they spread -- measured in docs/benchmarking.md), as a power of
// two in [64, 2048].
inline int sector_item_columns(int64_t total_columns, DeviceInfo const& info) {
  int cols = kSectorColsPerItem;
  while (cols < kColsPerItem && int64_t(cols) * info.num_sms < total_columns) cols *= 2;
  return cols;
}

inline SplitPlanDevice make_split_plan(SplitPlanParams const& plan, DeviceInfo const& info, TensorView const& out) {
  SplitPlanDevice d;
  d.num_kv_splits = static_cast<int32_t*>(out.data);
  d.max_splits = plan.max_splits;
  d.num_sms = plan.num_sms > 0 ? plan.num_sms : info.num_sms;
  d.ctas_per_request = split_plan_ctas_per_request(plan);
  d.min_keys_per_split = plan.min_keys_per_split;
  d.ctas_per_wave = plan.ctas_per_wave;
  return d;
}

}  // namespace baton::metadata
