#include "read_floor.h"

#include <cstdint>

#include "common/pdl.cuh"
#include "probes/probe_util.cuh"
#include "runtime/launch.h"

namespace baton::bench {
namespace {

constexpr int kThreads = 512;
constexpr int kUnroll = 4;  // loads in flight per thread

struct ReadFloorParams {
  int4 const* k;
  int4 const* v;
  int64_t n;   // int4 per tensor
  int4* sink;  // written only if the xor of a CTA's thread's share is one magic value
  bool wait;
};

__device__ __forceinline__ int4 load_streaming(int4 const* p) {
  int4 r;
  asm volatile("ld.global.nc.L1::no_allocate.L2::256B.v4.s32 {%0, %1, %2, %3}, [%4];"
               : "=r"(r.x), "=r"(r.y), "=r"(r.z), "=r"(r.w)
               : "l"(p));
  return r;
}

// The xor of p[i] over this thread's share of [0, n), kUnroll loads in flight.
__device__ __forceinline__ int xor_share(int4 const* p, int64_t n) {
  int64_t const stride = int64_t(gridDim.x) * blockDim.x;
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  int acc = 0;
  for (; i + (kUnroll - 1) * stride < n; i += kUnroll * stride) {
    int4 x[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) x[u] = load_streaming(p + i + u * stride);
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) acc ^= x[u].x ^ x[u].y ^ x[u].z ^ x[u].w;
  }
  for (; i < n; i += stride) {
    int4 const x = load_streaming(p + i);
    acc ^= x.x ^ x.y ^ x.z ^ x.w;
  }
  return acc;
}

// Reads only the K/V pools, which no kernel of the chain writes; the wait (chained) stands for
// an attention producer's wait before its first read.
__global__ void __launch_bounds__(kThreads, 2) read_floor_kernel(__grid_constant__ ReadFloorParams const p) {
  if (p.wait) wait_on_prior_grid();
  allow_next_grid();  // the next call's reader
  int const acc = xor_share(p.k, p.n) ^ xor_share(p.v, p.n);
  if (acc == 0x7f3a91c5) p.sink[blockIdx.x] = make_int4(acc, 0, 0, 0);
}

constexpr int kMaxStages = 16;

struct BulkParams {
  char const* k;
  char const* v;
  int64_t bytes;  // per tensor
  int chunk;      // bytes per copy
  int stages;
  bool wait;
};

// Lane 0 of the CTA's one warp streams chunks blockIdx.x, + gridDim.x, ... of K's chunks and
// then V's through the ring; the copies' bytes land in shared memory that nothing reads.
__global__ void __launch_bounds__(32) bulk_reader_kernel(__grid_constant__ BulkParams const p) {
  extern __shared__ __align__(128) char ring[];
  __shared__ __align__(8) unsigned long long bars[kMaxStages];
  if (p.wait) wait_on_prior_grid();
  allow_next_grid();  // the next call's reader
  if (threadIdx.x != 0) return;
  for (int s = 0; s < p.stages; ++s) mbar_init(smem_u32(&bars[s]));
  mbar_init_fence();
  int64_t const per_tensor = (p.bytes + p.chunk - 1) / p.chunk;
  int64_t t = 0;  // this CTA's copies so far
  for (int64_t c = blockIdx.x; c < 2 * per_tensor; c += gridDim.x, ++t) {
    int const slot = static_cast<int>(t % p.stages);
    unsigned const bar = smem_u32(&bars[slot]);
    if (t >= p.stages) mbar_wait(bar, static_cast<unsigned>((t / p.stages - 1) & 1));
    int64_t const off = (c % per_tensor) * p.chunk;
    int const bytes = static_cast<int>(p.bytes - off < p.chunk ? p.bytes - off : p.chunk);
    char const* src = (c < per_tensor ? p.k : p.v) + off;
    mbar_expect_tx(bar, bytes);
    bulk_copy(ring + static_cast<size_t>(slot) * p.chunk, src, bytes, bar);
  }
  for (int64_t u = t > p.stages ? t - p.stages : 0; u < t; ++u) {  // the copies still in flight
    mbar_wait(smem_u32(&bars[u % p.stages]), static_cast<unsigned>((u / p.stages) & 1));
  }
}

}  // namespace

std::vector<ReadFloorConfig> read_floor_configs() {
  using C = ReadFloorConfig;
  return {{C::kLoads, 2}, {C::kBulk, 1, 16384, 8}, {C::kBulk, 2, 8192, 6}, {C::kBulk, 2, 4096, 12}};
}

size_t read_floor_sink_bytes(int num_sms) {
  int most = 1;
  for (ReadFloorConfig const& c : read_floor_configs()) most = c.ctas_per_sm > most ? c.ctas_per_sm : most;
  return static_cast<size_t>(num_sms) * most * sizeof(int4);
}

std::string describe(ReadFloorConfig const& c) {
  std::string const per_sm = ", " + std::to_string(c.ctas_per_sm) + "/SM";
  if (c.kind == ReadFloorConfig::kBulk) {
    return "bulk " + std::to_string(c.chunk_bytes / 1024) + " KB x " + std::to_string(c.stages) + per_sm;
  }
  return "loads x" + std::to_string(kUnroll) + per_sm;
}

Enqueue read_floor(std::vector<void const*> const& k_pools, std::vector<void const*> const& v_pools,
                   size_t bytes_per_tensor, ReadFloorConfig config, bool chained, int num_sms, void* sink) {
  return [=](cudaStream_t stream, int i) {
    // The copies' sizes must be multiples of 16 bytes, and a ring has at most kMaxStages slots.
    bool const bulk = config.kind == ReadFloorConfig::kBulk;
    if (bytes_per_tensor % 16 != 0 || k_pools.empty() || k_pools.size() != v_pools.size() ||
        (bulk && (config.chunk_bytes <= 0 || config.chunk_bytes % 16 != 0 || config.stages < 1 ||
                  config.stages > kMaxStages))) {
      return false;
    }
    size_t const pool = static_cast<size_t>(i) % k_pools.size();
    unsigned const ctas = static_cast<unsigned>(num_sms * config.ctas_per_sm);
    // waits_on_prior_grid: the chained readers wait at entry; the others read nothing that any
    // kernel writes, so PDL is safe without the wait.
    detail::KernelTraits const traits{"read_floor", true};
    if (bulk) {
      BulkParams p{};
      p.k = static_cast<char const*>(k_pools[pool]);
      p.v = static_cast<char const*>(v_pools[pool]);
      p.bytes = static_cast<int64_t>(bytes_per_tensor);
      p.chunk = config.chunk_bytes;
      p.stages = config.stages;
      p.wait = chained;
      size_t const smem = static_cast<size_t>(config.chunk_bytes) * config.stages;
      if (!detail::allow_dynamic_smem(reinterpret_cast<void const*>(bulk_reader_kernel), traits, smem).is_ok()) {
        return false;
      }
      return detail::launch(bulk_reader_kernel, traits, {dim3(ctas), dim3(32), smem}, {stream, PdlMode::kOn}, p)
          .is_ok();
    }
    ReadFloorParams p{};
    p.k = static_cast<int4 const*>(k_pools[pool]);
    p.v = static_cast<int4 const*>(v_pools[pool]);
    p.n = static_cast<int64_t>(bytes_per_tensor / sizeof(int4));
    p.sink = static_cast<int4*>(sink);
    p.wait = chained;
    return detail::launch(read_floor_kernel, traits, {dim3(ctas), dim3(kThreads)}, {stream, PdlMode::kOn}, p).is_ok();
  };
}

ReadFloorTimes time_read_floor(Timer& timer, std::vector<void const*> const& k_pools,
                               std::vector<void const*> const& v_pools, size_t bytes_per_tensor, int calls,
                               int num_sms, void* sink, bool with_cold) {
  std::vector<ReadFloorConfig> const configs = read_floor_configs();
  std::vector<Enqueue> chained, nowait;
  for (ReadFloorConfig const& c : configs) {
    chained.push_back(read_floor(k_pools, v_pools, bytes_per_tensor, c, true, num_sms, sink));
    nowait.push_back(read_floor(k_pools, v_pools, bytes_per_tensor, c, false, num_sms, sink));
  }
  std::vector<Enqueue> both = chained;
  both.insert(both.end(), nowait.begin(), nowait.end());
  std::vector<Timing> const g = timer.in_graph_per_call(both, calls);
  std::vector<Timing> const cold = with_cold ? timer.cold_single_call(chained) : std::vector<Timing>{};
  ReadFloorTimes out;
  auto fastest = [&](std::vector<Timing> const& t, size_t from, Timing* best, std::string* reader) {
    for (size_t i = 0; i < configs.size() && from + i < t.size(); ++i) {
      Timing const& x = t[from + i];
      if (x.ok && (!best->ok || x.median_us < best->median_us)) *best = x, *reader = describe(configs[i]);
    }
  };
  fastest(g, 0, &out.graph, &out.graph_reader);
  fastest(g, configs.size(), &out.graph_nowait, &out.nowait_reader);
  fastest(cold, 0, &out.cold, &out.cold_reader);
  return out;
}

}  // namespace baton::bench
