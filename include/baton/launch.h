// How an op is launched: on which stream, and whether Programmatic Dependent Launch (PDL)
// may overlap its start with the tail of the previous kernel in the stream.
#pragma once

#include <cuda_runtime_api.h>

namespace baton {

enum class PdlMode {
  // PDL when the device and the kernel's compiled binary are sm_90+, the kernel waits on its
  // predecessor, and BATON_PDL is not "0" in the environment. Auto may also switch PDL off
  // where it is measured to cost (not yet done: see docs/pdl.md).
  kAuto,
  // Request PDL even where Auto would not choose it. The safety gates (device, binary, the
  // kernel waits) and the BATON_PDL=0 kill switch still apply: PDL is never requested where it
  // could race.
  kOn,
  // Plain stream-ordered launch.
  kOff,
};

struct LaunchOptions {
  // A stream of the current device (cudaSetDevice): the op reads the kernels' facts and raises
  // their shared-memory limits on the current device, so a stream of another device (a binding
  // without a device guard) is the caller's error. nullptr: the legacy default stream.
  cudaStream_t stream = nullptr;
  PdlMode pdl = PdlMode::kAuto;
};

// Per-device facts (kernel attributes, shared-memory limits, device info) are read once per
// process and device and kept: after cudaDeviceReset() a process must not call baton again.

// Scratch memory owned by the caller. Ops that need scratch say how much through an
// `xxx_workspace_bytes(...)` function; no op allocates.
struct Workspace {
  void* data = nullptr;
  size_t bytes = 0;
};

// True when BATON_PDL=0 is set in the environment: exactly "0" (no other value turns PDL off),
// read once, at the first launch of the process; set it before that, not later.
bool pdl_disabled_by_env();

}  // namespace baton
