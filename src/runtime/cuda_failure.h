// A failed CUDA runtime call as a Status.
#pragma once

#include <cuda_runtime_api.h>

#include <string>

#include "baton/status.h"

namespace baton::detail {

// The message names the call and the error. The runtime's last-error slot, which the failure
// set, is cleared: the error is reported once, in the Status, and not again by the caller's
// next cudaGetLastError() after some unrelated launch (a sticky error stays sticky).
inline Status cuda_failure(cudaError_t err, std::string const& what) {
  cudaGetLastError();
  return Status::cuda_error(what + ": " + cudaGetErrorString(err));
}

}  // namespace baton::detail
