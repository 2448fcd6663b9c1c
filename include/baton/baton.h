// baton: PDL-chained decode-step kernels for NVIDIA Hopper. One include for everything.
#pragma once

#include "baton/attention.h"
#include "baton/device_info.h"
#include "baton/launch.h"
#include "baton/metadata.h"
#include "baton/status.h"
#include "baton/tensor.h"

namespace baton {
// "0.1.0"
char const* version();
}  // namespace baton
