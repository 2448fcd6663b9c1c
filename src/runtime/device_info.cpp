// Thread-safe per-device cache of the facts ops plan with.
#include <cuda_runtime_api.h>

#include <mutex>
#include <string>
#include <vector>

#include "baton/device_info.h"
#include "runtime/cuda_failure.h"
#include "runtime/thread_memo.h"

namespace baton {
namespace {

std::mutex g_mutex;
std::vector<DeviceInfo> g_cache;  // indexed by device; device == -1 marks "not read yet"

Status query(int device, DeviceInfo* info) {
  auto attr = [device](cudaDeviceAttr a, int* v) -> Status {
    cudaError_t err = cudaDeviceGetAttribute(v, a, device);
    if (err != cudaSuccess) {
      return detail::cuda_failure(err, "cudaDeviceGetAttribute(" + std::to_string(int(a)) + ") on device " +
                                           std::to_string(device));
    }
    return Status::ok();
  };
  int l2 = 0, smem = 0;
  info->device = device;
  BATON_RETURN_IF_ERROR(attr(cudaDevAttrComputeCapabilityMajor, &info->cc_major));
  BATON_RETURN_IF_ERROR(attr(cudaDevAttrComputeCapabilityMinor, &info->cc_minor));
  BATON_RETURN_IF_ERROR(attr(cudaDevAttrMultiProcessorCount, &info->num_sms));
  BATON_RETURN_IF_ERROR(attr(cudaDevAttrL2CacheSize, &l2));
  BATON_RETURN_IF_ERROR(attr(cudaDevAttrMaxSharedMemoryPerBlockOptin, &smem));
  info->l2_bytes = static_cast<size_t>(l2);
  info->max_smem_per_block_optin = static_cast<size_t>(smem);
  return Status::ok();
}

}  // namespace

Status get_device_info(DeviceInfo* info, int device) {
  if (info == nullptr) return Status::invalid_argument("get_device_info: info is null");
  if (device < 0) {
    cudaError_t err = cudaGetDevice(&device);
    if (err != cudaSuccess) return detail::cuda_failure(err, "cudaGetDevice");
  }
  thread_local detail::ThreadMemo<int, DeviceInfo> memo;  // no lock after the first call on a thread
  if (DeviceInfo const* hit = memo.find(device)) {
    *info = *hit;
    return Status::ok();
  }
  std::lock_guard<std::mutex> lock(g_mutex);
  if (device < static_cast<int>(g_cache.size()) && g_cache[device].device == device) {
    *info = g_cache[device];
    memo.put(device, *info);
    return Status::ok();
  }
  DeviceInfo fresh;
  BATON_RETURN_IF_ERROR(query(device, &fresh));
  if (device >= static_cast<int>(g_cache.size())) g_cache.resize(device + 1);
  g_cache[device] = fresh;
  memo.put(device, fresh);
  *info = fresh;
  return Status::ok();
}

}  // namespace baton
