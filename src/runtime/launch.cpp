#include "runtime/launch.h"

#include <cuda_runtime_api.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>

#include "baton/device_info.h"

namespace baton {

bool pdl_disabled_by_env() {
  static bool const disabled = [] {
    char const* v = std::getenv("BATON_PDL");
    return v != nullptr && std::strcmp(v, "0") == 0;
  }();
  return disabled;
}

namespace detail {
namespace {

Status cuda_status(cudaError_t err, char const* what, char const* kernel) {
  return Status::cuda_error(std::string(what) + " for " + kernel + ": " + cudaGetErrorString(err));
}

// binaryVersion of each (device, kernel) pair, queried once.
Status binary_version(int device, void const* func, char const* name, int* version) {
  static std::mutex mutex;
  static std::map<std::pair<int, void const*>, int> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto key = std::make_pair(device, func);
  auto it = cache.find(key);
  if (it != cache.end()) {
    *version = it->second;
    return Status::ok();
  }
  cudaFuncAttributes attr{};
  cudaError_t err = cudaFuncGetAttributes(&attr, func);
  if (err != cudaSuccess) return cuda_status(err, "cudaFuncGetAttributes", name);
  cache.emplace(key, attr.binaryVersion);
  *version = attr.binaryVersion;
  return Status::ok();
}

}  // namespace

Status resident_ctas_per_sm(void const* func, KernelTraits const& traits, int threads, size_t smem_bytes,
                            int* ctas) {
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return cuda_status(err, "cudaGetDevice", traits.name);
  static std::mutex mutex;
  static std::map<std::tuple<int, void const*, int, size_t>, int> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto key = std::make_tuple(device, func, threads, smem_bytes);
  auto it = cache.find(key);
  if (it == cache.end()) {
    int n = 0;
    err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, func, threads, smem_bytes);
    if (err != cudaSuccess) return cuda_status(err, "cudaOccupancyMaxActiveBlocksPerMultiprocessor", traits.name);
    it = cache.emplace(key, n < 1 ? 1 : n).first;
  }
  *ctas = it->second;
  return Status::ok();
}

Status allow_dynamic_smem(void const* func, KernelTraits const& traits, size_t bytes) {
  int device = 0;
  cudaError_t err = cudaGetDevice(&device);
  if (err != cudaSuccess) return cuda_status(err, "cudaGetDevice", traits.name);
  static std::mutex mutex;
  static std::map<std::pair<int, void const*>, size_t> done;
  std::lock_guard<std::mutex> lock(mutex);
  auto key = std::make_pair(device, func);
  auto it = done.find(key);
  if (it != done.end() && it->second >= bytes) return Status::ok();
  err = cudaFuncSetAttribute(func, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  if (err != cudaSuccess) return cuda_status(err, "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)", traits.name);
  done[key] = bytes;
  return Status::ok();
}

Status pdl_decision(void const* func, KernelTraits const& traits, LaunchOptions const& options,
                    bool* use_pdl) {
  *use_pdl = false;
  if (options.pdl == PdlMode::kOff || pdl_disabled_by_env() || !traits.waits_on_prior_grid) {
    return Status::ok();
  }
  DeviceInfo info;
  BATON_RETURN_IF_ERROR(get_device_info(&info));
  if (info.compute_capability() < 90) return Status::ok();
  int version = 0;
  BATON_RETURN_IF_ERROR(binary_version(info.device, func, traits.name, &version));
  *use_pdl = version >= 90;
  return Status::ok();
}

Status launch_kernel(void const* func, KernelTraits const& traits, LaunchConfig const& config,
                     void** args, LaunchOptions const& options) {
  bool use_pdl = false;
  BATON_RETURN_IF_ERROR(pdl_decision(func, traits, options, &use_pdl));

  cudaLaunchAttribute attrs[1];
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = config.grid;
  cfg.blockDim = config.block;
  cfg.dynamicSmemBytes = config.smem_bytes;
  cfg.stream = options.stream;
  cfg.attrs = attrs;
  cfg.numAttrs = 0;
  if (use_pdl) {
    attrs[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attrs[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.numAttrs = 1;
  }
  cudaError_t err = cudaLaunchKernelExC(&cfg, func, args);
  if (err != cudaSuccess) return cuda_status(err, "cudaLaunchKernelEx", traits.name);

#if defined(BATON_DEBUG_SYNC)
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  err = cudaStreamIsCapturing(options.stream, &capture);
  if (err != cudaSuccess) return cuda_status(err, "cudaStreamIsCapturing", traits.name);
  if (capture == cudaStreamCaptureStatusNone) {
    err = cudaStreamSynchronize(options.stream);
    if (err != cudaSuccess) return cuda_status(err, "BATON_DEBUG_SYNC: kernel failed", traits.name);
  }
#endif
  return Status::ok();
}

}  // namespace detail
}  // namespace baton
