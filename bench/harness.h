// Timing methods of ../shared/BENCHMARKS.md, shared by every baton-bench subcommand.
//
//   in_graph_per_call: N calls captured back to back in one CUDA graph; replay, divide by N,
//                      median (p10, p90) over replays. What a layer costs inside a step graph.
//   cold_single_call:  a graph of one call; before each replay a kernel overwrites a 256 MB
//                      buffer (L2 cold); events around the replay only; median of 200.
//   eager:             N launches from C++ between two events, divided by N.
#pragma once

#include <cuda_runtime_api.h>

#include <functional>
#include <string>
#include <vector>

#include "baton/launch.h"

namespace baton::bench {

// Enqueues call number `i` (0-based) on `stream`; returns false on failure.
using Enqueue = std::function<bool(cudaStream_t stream, int i)>;

struct Timing {
  double median_us = 0, p10_us = 0, p90_us = 0;
  bool ok = false;
};

class Timer {
 public:
  Timer();
  ~Timer();
  Timing in_graph_per_call(Enqueue const& call, int calls_per_graph = 50, int replays = 30);
  Timing cold_single_call(Enqueue const& call, int replays = 200);
  // The same for several variants of a call (PDL on and off, ...): one graph each, replayed
  // in turn in blocks of block_ replays (the first after a switch untimed), so that whatever
  // drifts during a run reaches every variant alike: after the large shapes the DRAM reads
  // slower for seconds, and the variant timed first read as a PDL cost; switching at every
  // replay cost 64x4K ~2% (docs/benchmarking.md, twenty-sixth session). Timing{} for a variant
  // that failed to capture or run.
  std::vector<Timing> in_graph_per_call(std::vector<Enqueue> const& calls, int calls_per_graph = 50,
                                        int replays = 30);
  std::vector<Timing> cold_single_call(std::vector<Enqueue> const& calls, int replays = 200);
  // Eager timings of several variants, their rounds interleaved (harness.cu).
  std::vector<Timing> eager(std::vector<Enqueue> const& variants, int calls = 200, int repeats = 10);
  // Waits until device memory is quiet, after allocating and filling large buffers (call it
  // after the fill has finished): after tens of GB are allocated or freed the device stays
  // busy for a while (the next case's first timings ran 10-12% slower: docs/benchmarking.md,
  // twenty-fifth session). Reads 256 MB until three reads in a row are within 3% of the
  // fastest read of this Timer, the first ones taken at construction (at most 5 s); returns
  // the milliseconds waited. Not between long runs of timings: after the large shapes a read
  // can stay more than 3% slower for seconds.
  double settle();
  cudaStream_t stream() const { return stream_; }
  // How in-graph replays start, for the report's legend.
  char const* replay_start() const {
    return idle_start_ ? "BATON_BENCH_IDLE_START=1: on an idle GPU, the graph's submission timed too"
                       : "the graph's submission not timed";
  }

 private:
  std::vector<Timing> replay(std::vector<Enqueue> const& variants, int calls, int replays, bool flush);
  cudaStream_t stream_ = nullptr;
  cudaEvent_t start_ = nullptr, stop_ = nullptr;
  void* flush_ = nullptr;  // 256 MB
  bool flush_read_ = false;  // BATON_BENCH_FLUSH=read: the flush reads (clean L2) instead of writing
  int block_ = 10;  // several variants: replays per block (BATON_BENCH_BLOCK, a diagnostic)
  // BATON_BENCH_IDLE_START=1: in-graph replays start on an idle GPU, so that the host's
  // submission of the graph is timed too (the method before the fifty-first session; a
  // diagnostic). By default a ~20 us hold kernel precedes each in-graph replay's start event.
  bool idle_start_ = false;
  float read_ms();            // one timed read of the 256 MB buffer
  float best_read_ms_ = 0;    // the fastest read_ms() so far (settle)
};

struct GpuReport {
  std::string name;
  int num_sms = 0;
  size_t l2_bytes = 0;
  std::string clocks;  // as nvidia-smi reads them now, or "n/a"
  std::string revision;  // git revision (-dirty if sources differ) and a hash of the sources
};
GpuReport describe_gpu();

// The floor of a method: `kernels` empty kernels (each only waits and triggers) launched the way
// baton launches, PDL-chained unless pdl is kOff, with `ctas` CTAs each.
Enqueue empty_kernels(PdlMode pdl, int kernels = 1, int ctas = 1);

// `value` with `digits` decimals, or "-" when not measured.
std::string fmt(double value, int digits = 2);

}  // namespace baton::bench
