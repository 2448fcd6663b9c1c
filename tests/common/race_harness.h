// The PDL race harness (pdl-contract.md, "How it is tested"), reusable by every kernel.
//
// A test-only producer kernel triggers its dependents at once, stalls ~stall_us, then copies
// the real inputs (`src`) into the buffers the consumer reads (`dst`), which were poisoned
// just before. The consumer under test is PDL-launched right behind it. A consumer that
// touches its inputs before griddepcontrol.wait reads poison and fails `check`.
//
// Each run: poison staged inputs and outputs -> producer -> consumer -> sync -> check. The
// harness warms up first (a lazily loaded module serialises the first chain and would hide
// the race), then runs eager and as a captured CUDA graph.
#pragma once

#include <cuda_runtime_api.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "baton/launch.h"
#include "baton/status.h"
#include "common/gpu.h"

namespace baton::test {

struct StagedInput {
  void* dst = nullptr;        // what the consumer reads
  void const* src = nullptr;  // the real values, copied by the producer after its stall
  size_t bytes = 0;
  uint8_t poison = 0xFF;      // byte written over dst before each run
};

struct PoisonedOutput {
  void* ptr = nullptr;
  size_t bytes = 0;
  uint8_t poison = 0xFF;
};

// Whether a PDL-launched kernel here really starts before the kernel ahead of it has ended
// (probed once per process: the dependent sets a flag before its wait, which the primary
// watches for up to 20 ms). No overlap where launches are serialised (serialising_environment);
// `error` says how the probe itself failed, if it did.
struct OverlapProbe {
  bool overlap = false;
  std::string error;
};
OverlapProbe const& pdl_overlap_probe();

// What in this process's environment serialises kernel launches, or nullptr: compute-sanitizer
// (its injection sets NV_SANITIZER_INJECTION_* variables) or CUDA_LAUNCH_BLOCKING=1.
char const* serialising_environment();

// First statement of a mutation test (one that expects the harness to catch a kernel without
// its wait). Where the environment serialises launches nothing can race: the test skips and
// says why. Anywhere else launches that do not overlap are a failure, so that these tests can
// never pass by skipping on a GPU where they should run.
#define BATON_SKIP_WHERE_NOTHING_CAN_RACE()                                                          \
  do {                                                                                               \
    ::baton::test::OverlapProbe const& probe_ = ::baton::test::pdl_overlap_probe();                  \
    ASSERT_TRUE(probe_.error.empty()) << "the PDL overlap probe failed: " << probe_.error;           \
    if (!probe_.overlap) {                                                                           \
      char const* const serialiser_ = ::baton::test::serialising_environment();                     \
      ASSERT_NE(serialiser_, nullptr) << "PDL-launched kernels do not overlap their primary on "     \
                                         "this GPU, so the race harness cannot catch a missing wait"; \
      GTEST_SKIP() << serialiser_ << " serialises kernels: a kernel without its wait cannot race "   \
                   << "here, so the harness has nothing to catch";                                   \
    }                                                                                                \
  } while (0)

// Fixture of the race tests: skips without a GPU, and with BATON_PDL=0 (no race to catch).
class RaceTest : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    if (pdl_disabled_by_env()) GTEST_SKIP() << "BATON_PDL=0: the race harness needs PDL";
  }
};

struct RaceHarness {
  std::vector<StagedInput> inputs;
  std::vector<PoisonedOutput> outputs;
  std::function<Status(cudaStream_t)> consumer;       // launches the op(s) with PdlMode::kOn
  std::function<::testing::AssertionResult()> check;  // after the stream is synchronised
  int stall_us = 100;
  int runs = 3;  // per mode (eager, graph)

  // How a run ended: every check passed; a check failed (what a mutation test expects); or
  // setup, a launch, or the stream failed -- never evidence of a race.
  enum class Outcome { kPassed, kCheckFailed, kError };

  // Success only if every eager and graph run passes `check`; `outcome`, when given, says
  // which way it ended.
  ::testing::AssertionResult run(Outcome* outcome = nullptr) const;
};

}  // namespace baton::test
