// Per-device facts the ops plan with, read once per device and cached (thread-safe).
#pragma once

#include <cstddef>

#include "baton/status.h"

namespace baton {

struct DeviceInfo {
  int device = -1;
  int cc_major = 0;
  int cc_minor = 0;
  int num_sms = 0;
  size_t l2_bytes = 0;
  size_t max_smem_per_block_optin = 0;
  int compute_capability() const { return cc_major * 10 + cc_minor; }
};

// Info for `device` (-1: the current device). The first call per device queries CUDA.
Status get_device_info(DeviceInfo* info, int device = -1);

}  // namespace baton
