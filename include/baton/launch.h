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
  cudaStream_t stream = nullptr;
  PdlMode pdl = PdlMode::kAuto;
};

// Scratch memory owned by the caller. Ops that need scratch say how much through an
// `xxx_workspace_bytes(...)` function; no op allocates.
struct Workspace {
  void* data = nullptr;
  size_t bytes = 0;
};

// True when BATON_PDL=0 is set in the environment (read once, at first use).
bool pdl_disabled_by_env();

}  // namespace baton
