// Queue probe: does a load of L2-resident data wait behind the same SM's queued cp.async copies
// from DRAM, and does a bulk (TMA) copy of the same bytes wait too? The question behind it
// (docs/attention_next.md, twenty-sixth session): with early reads the reducer's loads of the
// producer's partials (L2 hits) take 4.9 us instead of 1.8, which looked like a queue behind
// the next producer's pre-wait K/V copies (then 64 KB per CTA at 1x32K: 2 tiles x 4 warps x
// 8 KB; run with queue_kb 64 for that point).
//
// Each CTA (2 per SM, 100 KB of shared memory each, as the producer) has 4 streamer warps and
// one probe warp. The streamers issue `queue_kb` KB of 16-byte cp.async.cg copies from DRAM (8
// regions in rotation, each larger than L2, so a launch finds none of its bytes cached), 2 KB
// per instruction across the 128 threads, then wait for them.
// The probe warp spins `delay` cycles (so that the copies are queued), then times, in SM
// cycles, one of:
//   ld    : each lane loads 4 B of one 128-byte L2-resident line (ld.global.cg) and uses it;
//   bulk  : lane 0 copies 512 L2-resident bytes with cp.async.bulk into shared memory and waits
//           on an mbarrier (the other lanes wait on the same barrier).
// Each with the streamers on and off (queue_kb = 0). Standalone; not part of the library.
//
// Two variations: a window (at most window_kb KB of a CTA's copies in flight: commit groups,
// two in flight), and streaming only on the SMs of odd id, the probes on the others timed apart
// (is the queue the SM's or the memory system's?).
//
//   baton-queue-probe [queue_kb=192] [delay=4000] [window_kb=0: none] [half=0]
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "probe_util.cuh"

namespace {

constexpr int kStreamThreads = 128, kThreads = kStreamThreads + 32;
constexpr int kRingBytes = 96 * 1024, kSmemBytes = kRingBytes + 1024;

struct Args {
  char const* big;        // DRAM stream source
  int64_t base;           // byte offset of this launch's region
  int queue_bytes;        // per CTA
  float const* hot;       // L2-resident lines, 128 B per CTA
  int bulk;               // probe with a bulk copy (1) or plain loads (0)
  int group;              // > 0: commit every `group` copies and keep at most two groups in flight
  int half;               // 1: only CTAs on SMs of odd id stream
  long long delay;        // cycles before the probe
  long long* probe_cycles;  // [ctas]
  int* smid;                // [ctas]
  long long* stream_cycles; // [ctas]
  float* sink;
};

__device__ __forceinline__ long long cycles() {
  long long x;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(x)::"memory");
  return x;
}

__global__ void __launch_bounds__(kThreads, 2) probe_kernel(Args a) {
  extern __shared__ __align__(128) unsigned char smem[];
  unsigned char* ring = smem;
  float* bulk_dst = reinterpret_cast<float*>(smem + kRingBytes);          // 512 B
  uint64_t* bar = reinterpret_cast<uint64_t*>(smem + kRingBytes + 512);   // mbarrier
  unsigned const bar_s = smem_u32(bar);
  if (threadIdx.x == kStreamThreads) {
    mbar_init(bar_s);
    mbar_init_fence();
  }
  __syncthreads();
  long long const t0 = cycles();
  int const tid = threadIdx.x;
  unsigned sm;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
  bool const streams = !a.half || (sm & 1u);
  if (tid < kStreamThreads) {
    if (!streams) return;
    char const* src = a.big + a.base + int64_t(blockIdx.x) * a.queue_bytes + tid * 16;
    int const n = a.queue_bytes / (kStreamThreads * 16);
    for (int i = 0; i < n; ++i) {
      unsigned const dst = static_cast<unsigned>(
          __cvta_generic_to_shared(ring + (size_t(i) * kStreamThreads * 16 + tid * 16) % kRingBytes));
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(dst), "l"(src + int64_t(i) * kStreamThreads * 16)
                   : "memory");
      if (a.group > 0 && (i + 1) % a.group == 0) {
        asm volatile("cp.async.commit_group;\ncp.async.wait_group 1;" ::: "memory");
      }
    }
    asm volatile("cp.async.commit_group;\ncp.async.wait_all;" ::: "memory");
    if (tid == 0) a.stream_cycles[blockIdx.x] = cycles() - t0;
    return;
  }
  int const lane = tid - kStreamThreads;
  while (cycles() - t0 < a.delay) {
  }
  float const* line = a.hot + size_t(blockIdx.x) * 32;
  long long const s = cycles();
  float v;
  if (!a.bulk) {
    asm volatile("ld.global.cg.f32 %0, [%1];" : "=f"(v) : "l"(line + lane) : "memory");
  } else {
    if (lane == 0) {
      mbar_expect_tx(bar_s, 512);
      bulk_copy(bulk_dst, a.hot + size_t(blockIdx.x % 64) * 128, 512, bar_s);
    }
    mbar_wait(bar_s, 0);
    v = bulk_dst[lane];
  }
  // The value is used (a shared-memory store) before the clock is read.
  reinterpret_cast<float volatile*>(bulk_dst)[32 + lane] = v * 2.f;
  __syncwarp();
  long long const e = cycles();
  if (lane == 0) a.probe_cycles[blockIdx.x] = e - s, a.smid[blockIdx.x] = static_cast<int>(sm);
  if (v == 12345.f) a.sink[0] = v;
}

__global__ void touch(float const* p, int n, float* sink) {
  float s = 0.f;
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) s += p[i];
  if (s == 12345.f) sink[0] = s;
}

long long pct(std::vector<long long> v, double q) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(q * double(v.size())))];
}

}  // namespace

int main(int argc, char** argv) {
  int const queue_kb = argc > 1 ? std::atoi(argv[1]) : 192;
  long long const delay = argc > 2 ? std::atoll(argv[2]) : 4000;
  int const window_kb = argc > 3 ? std::atoi(argv[3]) : 0;  // 0: no bound on the copies in flight
  int const half = argc > 4 ? std::atoi(argv[4]) : 0;
  int const group = window_kb / 4;  // 2 KB per copy instruction per CTA, two groups in flight
  cudaDeviceProp prop{};
  CK(cudaGetDeviceProperties(&prop, 0));
  int const ctas = 2 * prop.multiProcessorCount;
  int64_t const region = int64_t(ctas) * 1024 * 1024;  // up to 1 MB per CTA per launch
  int const regions = 8;
  char* big = nullptr;
  float *hot = nullptr, *sink = nullptr;
  long long *pc = nullptr, *sc = nullptr;
  int* smid = nullptr;
  CK(cudaMalloc(&big, region * regions));
  CK(cudaMemset(big, 1, region * regions));
  int const hot_floats = 1 << 16;
  CK(cudaMalloc(&hot, hot_floats * sizeof(float)));
  CK(cudaMemset(hot, 0, hot_floats * sizeof(float)));
  CK(cudaMalloc(&sink, 4));
  CK(cudaMalloc(&pc, ctas * sizeof(long long)));
  CK(cudaMalloc(&sc, ctas * sizeof(long long)));
  CK(cudaMalloc(&smid, ctas * sizeof(int)));
  CK(cudaFuncSetAttribute(probe_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmemBytes));
  std::printf(
      "queue probe: %d CTAs (2 per SM), %d KB of cp.async per CTA when on, probe after %lld cycles, window %d KB%s\n",
      ctas, queue_kb, delay, window_kb, half ? ", streaming on odd SMs only" : "");
  std::printf("%-6s %-9s %12s %12s %12s %14s%s\n", "probe", "streamers", "median cyc", "p90 cyc", "max cyc",
              "stream med cyc", half ? "   quiet-SM median  p90" : "");
  int launch = 0;
  for (int bulk = 0; bulk < 2; ++bulk) {
    for (int on = 0; on < 2; ++on) {
      std::vector<long long> all_p, all_s, all_q;
      for (int rep = 0; rep < 10; ++rep, ++launch) {
        touch<<<264, 256>>>(hot, hot_floats, sink);
        Args a{big, int64_t(launch % regions) * region, on ? queue_kb * 1024 : 0, hot, bulk, group, half, delay,
               pc, smid, sc, sink};
        CK(cudaMemset(sc, 0, ctas * sizeof(long long)));
        probe_kernel<<<ctas, kThreads, kSmemBytes>>>(a);
        CK(cudaGetLastError());
        CK(cudaDeviceSynchronize());
        std::vector<long long> p(ctas), s(ctas);
        std::vector<int> sm(ctas);
        CK(cudaMemcpy(p.data(), pc, ctas * sizeof(long long), cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(s.data(), sc, ctas * sizeof(long long), cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(sm.data(), smid, ctas * sizeof(int), cudaMemcpyDeviceToHost));
        if (rep < 2) continue;  // warm-up
        for (int c = 0; c < ctas; ++c) {
          bool const quiet = half && !(sm[c] & 1);
          (quiet ? all_q : all_p).push_back(p[c]);
          if (!quiet) all_s.push_back(s[c]);
        }
      }
      std::printf("%-6s %-9s %12lld %12lld %12lld %14lld", bulk ? "bulk" : "ld", on ? "on" : "off", pct(all_p, 0.5),
                  pct(all_p, 0.9), pct(all_p, 1.0), pct(all_s, 0.5));
      if (half) std::printf("   %12lld %5lld", pct(all_q, 0.5), pct(all_q, 0.9));
      std::printf("\n");
    }
  }
  return 0;
}
