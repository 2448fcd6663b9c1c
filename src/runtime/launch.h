// The launch helper: the only place in baton that launches kernels (extended launch API).
//
// PDL (cudaLaunchAttributeProgrammaticStreamSerialization) is requested only when all hold
// (pdl-contract.md rule 5, docs/pdl.md):
//   - the options ask for it (PdlMode::kAuto or kOn);
//   - BATON_PDL is not "0" in the environment;
//   - the kernel declares that it waits (the PDL wait before its first dependent
//     access) -- KernelTraits::waits_on_prior_grid;
//   - the device is sm_90+;
//   - the kernel's compiled binary is sm_90+ (cudaFuncGetAttributes binaryVersion), since
//     code built for older targets has griddepcontrol compiled out and would race.
#pragma once

#include <cuda_runtime_api.h>

#include "baton/launch.h"
#include "baton/status.h"

namespace baton::detail {

struct KernelTraits {
  char const* name = "kernel";
  bool waits_on_prior_grid = false;
};

struct LaunchConfig {
  dim3 grid;
  dim3 block;
  size_t smem_bytes = 0;
};

// Whether a launch of `func` with these options would carry the PDL attribute.
Status pdl_decision(void const* func, KernelTraits const& traits, LaunchOptions const& options,
                    bool* use_pdl);

// How many CTAs of `func` fit on one SM at `threads` threads (cudaOccupancy..., cached).
Status resident_ctas_per_sm(void const* func, KernelTraits const& traits, int threads, size_t smem_bytes,
                            int* ctas);

// A kernel as launched: its function, threads per CTA and dynamic shared memory, and the
// name that errors about it carry.
struct KernelShape {
  void const* func;
  int threads;
  size_t smem_bytes;
  char const* name;
};

// How many CTAs of `self` fit on one SM beside `beside_ctas` CTAs of `beside`: the SM's
// registers (per partition of the SM, allocated per warp in units of 256), threads, shared
// memory (each CTA's static and dynamic bytes in 128-byte units plus the per-CTA reservation)
// and CTA slots, from both kernels' attributes (cached per device and arguments). 0 when
// `beside` alone does not fit. For CTAs of 4 warps it agrees with the occupancy API.
Status ctas_beside_per_sm(KernelShape const& self, KernelShape const& beside, int beside_ctas, int* ctas);

// Raises the kernel's dynamic shared memory limit to `bytes` (once per device and kernel).
Status allow_dynamic_smem(void const* func, KernelTraits const& traits, size_t bytes);

// Whether launches go through the driver's cuLaunchKernelEx (launch.cpp): the toolkit and
// driver provide it and no launch has yet been refused by it and then accepted by the
// runtime (which drops the driver path for the rest of the process).
bool driver_launch_in_use();

// Launches `func` with `args` (an array of pointers to each kernel argument).
Status launch_kernel(void const* func, KernelTraits const& traits, LaunchConfig const& config,
                     void** args, LaunchOptions const& options);

// Kernels in baton take one Params struct by value (__grid_constant__).
template <class Params>
Status launch(void (*kernel)(Params), KernelTraits const& traits, LaunchConfig const& config,
              LaunchOptions const& options, Params const& params) {
  void* args[] = {const_cast<Params*>(&params)};
  return launch_kernel(reinterpret_cast<void const*>(kernel), traits, config, args, options);
}

}  // namespace baton::detail
