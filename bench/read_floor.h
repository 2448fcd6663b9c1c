// The read floor of an attention case: the time kernels that do nothing but read the same K/V
// bytes take, by the same methods (each call on its own pool, in graphs and cold). Every
// attention call reads each of these bytes from its own pool too, so it is not expected to beat
// the floor: a target below the no-wait floor asks for more than the fastest reader measured
// gets from the DRAM by the method; one above it is the kernel's to meet. The floor is as good
// as its readers: the fastest of several shapes of two readers.
//
// The readers (no shared-memory reads, no math):
//   kLoads: CTAs of 512 threads, 16-byte non-coherent loads with 256-byte L2 prefetch,
//           4 independent loads in flight per thread, K then V;
//   kBulk:  CTAs of one warp whose lane 0 streams the CTA's chunks (chunk_bytes, every
//           ctas-th chunk of K then of V) into a ring of `stages` shared-memory slots with
//           cp.async.bulk, each slot's next copy issued once its mbarrier says the last landed.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "harness.h"

namespace baton::bench {

struct ReadFloorConfig {
  enum Kind { kLoads, kBulk } kind;
  int ctas_per_sm;      // kLoads: at most 2 (its launch bounds)
  int chunk_bytes = 0;  // kBulk: a multiple of 16
  int stages = 0;       // kBulk: 1..16
};

// The shapes of the readers that every floor tries.
std::vector<ReadFloorConfig> read_floor_configs();
// "loads x4, 2/SM", "bulk 16 KB x 8, 1/SM": for reports.
std::string describe(ReadFloorConfig const& config);
// The bytes read_floor's `sink` needs on a GPU of num_sms SMs: an int4 per CTA of any config.
size_t read_floor_sink_bytes(int num_sms);

// Call i reads bytes_per_tensor bytes (a multiple of 16) from k_pools[i % n] and then from
// v_pools[i % n]. chained: PDL-launched, waiting on the previous grid at entry (as an attention
// producer that reads nothing early); otherwise PDL-launched without a wait, so that calls
// overlap as far as the hardware lets them (a bound for the early-read modes too). Both let
// the next call launch at entry. sink: read_floor_sink_bytes(num_sms) bytes that nothing reads
// (the kLoads reader's one possible store, so that its loads are not dead code). The Enqueue
// returns false, launching nothing, when bytes_per_tensor is not a multiple of 16 or the config
// is out of range.
Enqueue read_floor(std::vector<void const*> const& k_pools, std::vector<void const*> const& v_pools,
                   size_t bytes_per_tensor, ReadFloorConfig config, bool chained, int num_sms, void* sink);

// The floor of one case: the fastest configuration's median in each column, and which it was.
struct ReadFloorTimes {
  Timing graph;          // in graphs, chained
  Timing graph_nowait;   // in graphs, not chained
  Timing cold;           // single-call cold replay
  std::string graph_reader, nowait_reader, cold_reader;
};
ReadFloorTimes time_read_floor(Timer& timer, std::vector<void const*> const& k_pools,
                               std::vector<void const*> const& v_pools, size_t bytes_per_tensor, int calls,
                               int num_sms, void* sink, bool with_cold);

}  // namespace baton::bench
