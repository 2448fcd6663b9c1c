#include "runtime/launch.h"

#include <cuda.h>
#include <cuda_runtime_api.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>

#include "baton/device_info.h"
#include "runtime/cuda_failure.h"
#include "runtime/thread_memo.h"

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
  return cuda_failure(err, std::string(what) + " for " + kernel);
}

using KernelKey = std::pair<int, void const*>;  // (device, kernel)

// A driver entry point of the driver that cudart loaded (no link dependency on libcuda), or
// null. The runtime's error state is cleared only if the query itself failed.
void* driver_entry(char const* name) {
#if CUDART_VERSION >= 12050
  void* p = nullptr;
  cudaDriverEntryPointQueryResult found = cudaDriverEntryPointSymbolNotFound;
  if (cudaGetDriverEntryPointByVersion(name, &p, 12000, cudaEnableDefault, &found) != cudaSuccess) {
    cudaGetLastError();  // not an error of the caller's: the runtime launch is used instead
    return nullptr;
  }
  return found == cudaDriverEntryPointSuccess ? p : nullptr;
#else
  (void)name;
  return nullptr;  // older toolkits: runtime launches only
#endif
}

// cuLaunchKernelEx, launched with the kernel's context-free handle (cudaGetKernel; the
// driver takes the context from the stream): this skips the runtime's per-launch lookup of
// the kernel, 0.2-0.55 us less host time per two launches on the H200 machines
// (baton-host-cost, docs/benchmarking.md "host cost per call"), which an eager caller pays.
using DriverLaunch = CUresult (*)(CUlaunchConfig const*, CUfunction, void**, void**);
DriverLaunch driver_launch() {
  static DriverLaunch const fn = reinterpret_cast<DriverLaunch>(driver_entry("cuLaunchKernelEx"));
  return fn;
}
// Whether the calling thread has a current context. A thread whose first CUDA work is a baton
// launch has none (cudaGetDevice and the facts cached on other threads make none current), and
// the driver would refuse a launch on the legacy or per-thread stream with
// CUDA_ERROR_INVALID_CONTEXT, which compute-sanitizer reports as an error. Such a launch takes
// the runtime's path instead, which makes the device's primary context current; once one is
// current the answer is kept for the thread. Unknown (no cuCtxGetCurrent): true.
thread_local bool t_context_current = false;  // forgotten when the driver finds none after all
bool thread_has_context() {
  if (t_context_current) return true;
  using GetCurrent = CUresult (*)(CUcontext*);
  static GetCurrent const get = reinterpret_cast<GetCurrent>(driver_entry("cuCtxGetCurrent"));
  if (get == nullptr) return true;
  CUcontext ctx = nullptr;
  t_context_current = get(&ctx) == CUDA_SUCCESS && ctx != nullptr;
  return t_context_current;
}

// Refusals that belong to the calling thread's context (none current, or one popped or
// destroyed since), not to the driver path.
bool context_refusal(CUresult r) { return r == CUDA_ERROR_INVALID_CONTEXT || r == CUDA_ERROR_CONTEXT_IS_DESTROYED; }

// Cleared when a launch that the driver refused succeeds through the runtime: from then on
// every launch takes the runtime's path, never two attempts per launch.
std::atomic<bool> g_driver_path{true};

std::string driver_error(CUresult r) {
  using Name = CUresult (*)(CUresult, char const**);
  static Name const name_of = reinterpret_cast<Name>(driver_entry("cuGetErrorName"));
  char const* name = nullptr;
  if (name_of != nullptr) name_of(r, &name);
  return "CUDA driver error " + std::to_string(static_cast<int>(r)) + (name != nullptr ? std::string(" ") + name : "");
}

// A fact computed once per key by `compute(Value*)` (a Status) and never changed after: a
// per-thread copy in front of a shared, locked map. Each call site's lambda is its own type,
// so each site has its own caches.
template <class Key, class Value, class Compute>
Status cached(Key const& key, Value* out, Compute const& compute) {
  thread_local ThreadMemo<Key, Value> memo;
  if (Value const* hit = memo.find(key)) {
    *out = *hit;
    return Status::ok();
  }
  static std::mutex mutex;
  static std::map<Key, Value> cache;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = cache.find(key);
  if (it == cache.end()) {
    Value fresh{};
    BATON_RETURN_IF_ERROR(compute(&fresh));
    it = cache.emplace(key, fresh).first;
  }
  memo.put(key, it->second);
  *out = it->second;
  return Status::ok();
}

// What a launch needs to know of a kernel on a device, read once per (device, kernel).
struct KernelFacts {
  int binary_version = 0;       // cudaFuncGetAttributes: the PDL gate needs sm_90+ code
  CUfunction handle = nullptr;  // the kernel's context-free handle (cudaGetKernel); null: runtime launch
  int num_regs = 0;             // registers per thread and static shared memory: ctas_beside_per_sm
  size_t static_smem = 0;
};

Status kernel_facts(int device, void const* func, char const* name, KernelFacts* facts) {
  return cached(KernelKey{device, func}, facts, [&](KernelFacts* fresh) {
    cudaFuncAttributes attr{};
    cudaError_t err = cudaFuncGetAttributes(&attr, func);
    if (err != cudaSuccess) return cuda_status(err, "cudaFuncGetAttributes", name);
    fresh->binary_version = attr.binaryVersion;
    fresh->num_regs = attr.numRegs;
    fresh->static_smem = attr.sharedSizeBytes;
#if CUDART_VERSION >= 12050
    if (driver_launch() != nullptr) {
      cudaKernel_t kernel = nullptr;
      if (cudaGetKernel(&kernel, func) == cudaSuccess) {
        fresh->handle = reinterpret_cast<CUfunction>(kernel);  // cuLaunchKernelEx takes a CUkernel cast so
      } else {
        cudaGetLastError();  // the runtime launch is used instead
      }
    }
#endif
    return Status::ok();
  });
}

// PDL gates 1-3 of launch.h: the options, the kill switch, the kernel's declared wait. No
// CUDA call.
bool pdl_requested(KernelTraits const& traits, LaunchOptions const& options) {
  return options.pdl != PdlMode::kOff && !pdl_disabled_by_env() && traits.waits_on_prior_grid;
}

// LaunchOptions::pdl holds one of the three modes (a value cast from an int is rejected, not
// read as "on"). No CUDA call.
Status check_pdl_mode(KernelTraits const& traits, LaunchOptions const& options) {
  if (options.pdl == PdlMode::kAuto || options.pdl == PdlMode::kOn || options.pdl == PdlMode::kOff) return Status::ok();
  return Status::invalid_argument(std::string(traits.name) + ": LaunchOptions::pdl " +
                                  std::to_string(static_cast<int>(options.pdl)) + " is not kAuto, kOn or kOff");
}

// Gates 4 and 5: an sm_90+ device and kernel binary.
Status pdl_supported(int device, KernelFacts const& facts, bool* use_pdl) {
  DeviceInfo info;
  BATON_RETURN_IF_ERROR(get_device_info(&info, device));
  *use_pdl = info.compute_capability() >= 90 && facts.binary_version >= 90;
  return Status::ok();
}

Status current_device(char const* name, int* device) {
  cudaError_t err = cudaGetDevice(device);
  return err == cudaSuccess ? Status::ok() : cuda_status(err, "cudaGetDevice", name);
}

}  // namespace

Status resident_ctas_per_sm(void const* func, KernelTraits const& traits, int threads, size_t smem_bytes,
                            int* ctas) {
  int device = 0;
  BATON_RETURN_IF_ERROR(current_device(traits.name, &device));
  return cached(std::make_tuple(device, func, threads, smem_bytes), ctas, [&](int* fresh) {
    int n = 0;
    cudaError_t err = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, func, threads, smem_bytes);
    if (err != cudaSuccess) return cuda_status(err, "cudaOccupancyMaxActiveBlocksPerMultiprocessor", traits.name);
    *fresh = n < 1 ? 1 : n;
    return Status::ok();
  });
}

Status ctas_beside_per_sm(KernelShape const& self, KernelShape const& beside, int beside_ctas, int* ctas) {
  int device = 0;
  BATON_RETURN_IF_ERROR(current_device(self.name, &device));
  auto const key = std::make_tuple(device, self.func, self.threads, self.smem_bytes, beside.func, beside.threads,
                                   beside.smem_bytes, beside_ctas);
  return cached(key, ctas, [&](int* fresh) {
    int regs = 0, threads = 0, smem = 0, reserved = 0, slots = 0;
    for (auto [attr, value] : {std::pair{cudaDevAttrMaxRegistersPerMultiprocessor, &regs},
                               std::pair{cudaDevAttrMaxThreadsPerMultiProcessor, &threads},
                               std::pair{cudaDevAttrMaxSharedMemoryPerMultiprocessor, &smem},
                               std::pair{cudaDevAttrReservedSharedMemoryPerBlock, &reserved},
                               std::pair{cudaDevAttrMaxBlocksPerMultiprocessor, &slots}}) {
      cudaError_t err = cudaDeviceGetAttribute(value, attr, device);
      if (err != cudaSuccess) return cuda_status(err, "cudaDeviceGetAttribute", self.name);
    }
    // An SM's registers sit in 4 partitions, each serving a quarter of its warps; a CTA's
    // warps are spread over them, so a CTA of w warps takes ceil(w / 4) warps' registers in
    // the fullest one (exact for the 4-warp CTAs of baton's producer and reducer, an upper
    // bound otherwise). Registers go per warp in units of 256, shared memory per CTA in units
    // of 128 bytes plus the per-CTA reservation.
    constexpr int64_t kPartitions = 4;
    struct Use {
      int64_t partition_regs, threads, smem;
    };
    auto use_of = [&](KernelShape const& k, Use* use) {
      KernelFacts facts;
      BATON_RETURN_IF_ERROR(kernel_facts(device, k.func, k.name, &facts));
      int64_t const warps = (k.threads + 31) / 32;
      int64_t const per_warp = (int64_t(facts.num_regs) * 32 + 255) / 256 * 256;
      int64_t const bytes = (int64_t(facts.static_smem) + int64_t(k.smem_bytes) + 127) / 128 * 128;
      *use = {(warps + kPartitions - 1) / kPartitions * per_warp, warps * 32, bytes + reserved};
      return Status::ok();
    };
    Use s{}, b{};
    BATON_RETURN_IF_ERROR(use_of(self, &s));
    BATON_RETURN_IF_ERROR(use_of(beside, &b));
    int64_t const left_regs = regs / kPartitions - beside_ctas * b.partition_regs;
    int64_t const left_threads = threads - beside_ctas * b.threads;
    int64_t const left_smem = smem - beside_ctas * b.smem, left_slots = slots - beside_ctas;
    int64_t n = 0;
    if (left_regs >= 0 && left_threads >= 0 && left_smem >= 0 && left_slots >= 0) {
      n = std::min({left_regs / std::max<int64_t>(s.partition_regs, 1), left_threads / std::max<int64_t>(s.threads, 1),
                    left_smem / std::max<int64_t>(s.smem, 1), left_slots});
    }
    *fresh = static_cast<int>(n);
    return Status::ok();
  });
}

Status allow_dynamic_smem(void const* func, KernelTraits const& traits, size_t bytes) {
  int device = 0;
  BATON_RETURN_IF_ERROR(current_device(traits.name, &device));
  KernelKey const key{device, func};
  thread_local ThreadMemo<KernelKey, size_t> memo;  // a limit raised by any thread stays raised
  if (size_t const* hit = memo.find(key); hit != nullptr && *hit >= bytes) return Status::ok();
  static std::mutex mutex;
  static std::map<KernelKey, size_t> done;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = done.find(key);
  if (it == done.end() || it->second < bytes) {
    cudaError_t err = cudaFuncSetAttribute(func, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
    if (err != cudaSuccess) return cuda_status(err, "cudaFuncSetAttribute(MaxDynamicSharedMemorySize)", traits.name);
    it = done.insert_or_assign(key, bytes).first;
  }
  memo.put(key, it->second);
  return Status::ok();
}

Status pdl_decision(void const* func, KernelTraits const& traits, LaunchOptions const& options,
                    bool* use_pdl) {
  *use_pdl = false;
  BATON_RETURN_IF_ERROR(check_pdl_mode(traits, options));
  if (!pdl_requested(traits, options)) return Status::ok();  // before any CUDA call
  int device = 0;
  BATON_RETURN_IF_ERROR(current_device(traits.name, &device));
  KernelFacts facts;
  BATON_RETURN_IF_ERROR(kernel_facts(device, func, traits.name, &facts));
  return pdl_supported(device, facts, use_pdl);
}

bool driver_launch_in_use() { return driver_launch() != nullptr && g_driver_path.load(std::memory_order_relaxed); }

Status launch_kernel(void const* func, KernelTraits const& traits, LaunchConfig const& config,
                     void** args, LaunchOptions const& options) {
  BATON_RETURN_IF_ERROR(check_pdl_mode(traits, options));  // before any CUDA call
  int device = 0;
  BATON_RETURN_IF_ERROR(current_device(traits.name, &device));
  KernelFacts facts;
  BATON_RETURN_IF_ERROR(kernel_facts(device, func, traits.name, &facts));
  bool use_pdl = false;
  if (pdl_requested(traits, options)) BATON_RETURN_IF_ERROR(pdl_supported(device, facts, &use_pdl));

  bool launched = false;
  CUresult refusal = CUDA_SUCCESS;  // the driver's error, when it was tried and refused the launch
  if (facts.handle != nullptr && g_driver_path.load(std::memory_order_relaxed) && thread_has_context()) {
    CUlaunchAttribute attr{};
    attr.id = CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION;
    attr.value.programmaticStreamSerializationAllowed = 1;
    CUlaunchConfig cfg{};
    cfg.gridDimX = config.grid.x;
    cfg.gridDimY = config.grid.y;
    cfg.gridDimZ = config.grid.z;
    cfg.blockDimX = config.block.x;
    cfg.blockDimY = config.block.y;
    cfg.blockDimZ = config.block.z;
    cfg.sharedMemBytes = static_cast<unsigned>(config.smem_bytes);
    cfg.hStream = reinterpret_cast<CUstream>(options.stream);
    cfg.attrs = &attr;
    cfg.numAttrs = use_pdl ? 1 : 0;
    CUresult const r = driver_launch()(&cfg, facts.handle, args, nullptr);
    launched = r == CUDA_SUCCESS;
    if (!launched) {
      refusal = r;
      if (context_refusal(r)) t_context_current = false;  // ask the driver again next time
      // While the stream captures, a refused launch may already have invalidated the capture:
      // report the driver's error, not the runtime's retry. Otherwise the runtime launch below
      // runs and reports in the runtime's terms; if it succeeds, the driver path is dropped.
      cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
      cudaError_t const queried = cudaStreamIsCapturing(options.stream, &capture);
      if (queried != cudaSuccess || capture != cudaStreamCaptureStatusNone) {
        if (queried != cudaSuccess) (void)cudaGetLastError();  // leave no pending error (cuda_failure.h)
        return Status::cuda_error(std::string("cuLaunchKernelEx for ") + traits.name + ": " + driver_error(r));
      }
    }
  }
  // A refusal for want of a current context belongs to the calling thread, not to the driver
  // path (thread_has_context() keeps such a launch off the driver; this is the safety net), and
  // the runtime's retry makes the context current. Only another refusal that the runtime then
  // accepts drops the path, for every thread (DecodeAttention.AThreadWithoutAContextKeepsTheDriverPath).
  bool const retried = refusal != CUDA_SUCCESS && !context_refusal(refusal);
  if (!launched) {
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
    if (retried) g_driver_path.store(false, std::memory_order_relaxed);
  }

#if defined(BATON_DEBUG_SYNC)
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  cudaError_t err = cudaStreamIsCapturing(options.stream, &capture);
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
