// Instruction-fetch probe: what running code costs the first time an SM runs it. Small decode
// shapes run each kernel's code once per call, so this is part of their latency (the producer's
// code halved by one call site of attend_split: docs/benchmarking.md, thirteenth session).
// Standalone; not part of the library.
//
//   baton-icache-probe
//
// One CTA per SM. Warp 0 runs a straight block of N FFMA (8 independent chains: one issue per
// cycle when the code is cached) twice, timing each pass with clock64: pass 0 fetches the
// code, pass 1 runs it from the SM's caches. Cases: first launch of a kernel, the same kernel
// again, after another kernel's code ran, after a 256 MB overwrite of the L2, with warps 1..7
// streaming global loads meanwhile (the SM's return path busy), and N = 256 / 1024 / 4096
// (4 / 16 / 64 KB of code), then 24-48 KB (capacity) and 16-32 KB behind an 8 KB kernel (the
// pattern of a producer and a reducer in a chain). Prints min / median / max cycles over the SMs.
//
// Measured on an H200 (thirteenth session, docs/benchmarking.md), median cycles pass 0 / pass 1:
// 16 KB first launch 2486 / 1025, same kernel again 1083 / 1025, after another 16 KB kernel
// 1547 / 1025, after the L2 overwrite 2511 / 1025, with the SM streaming 1034 / 1028; 4 KB
// first launch 608 / 258; 64 KB 12839 / 9925 and again 9890 / 9789. So: cold code costs
// ~350 cycles plus ~0.09 cycles per byte from L2 (no worse from DRAM, the fetch runs ahead of
// straight code), an SM's instruction cache keeps a kernel's code between launches but another
// kernel's code evicts part of it, 64 KB do not fit, and the SM's own data stream does not
// slow the fetch.
// Capacity (thirty-second session, GPU-b33692e4, median cycles pass 0 / pass 1, again = a second
// launch): 24 KB 3837 / 1537, again 1595 (kept whole); 32 KB 5149 / 2431, again 3085 (partly);
// 40 KB 6438 / 6146 and 48 KB 7735 / 7412 (not kept). Behind an 8 KB kernel, a warm 16 KB kernel
// runs in 1143 (kept), 24 KB in 2807 (half refetched: 3830 cold), 32 KB in 4941 (cold: 5110).
// Jumps over code (forty-eighth session, GPU-f14a4474, two runs, median cycles pass 0 / pass 1):
// 8 KB run in 16 blocks of 512 B, each followed by a block the branch skips. Straight 8 KB
// 1240 / 513; jumps over 128 B 1550-1574 / 785 (the cold pass costs what straight code does:
// +765); over 512 B 2325-2359 / 860 (+1500: as if the 8 KB skipped had been fetched too); over
// 2 KB 3127-3639 / 860 (+2270-2780: ~100-130 cycles a jump beyond the straight fetch, less than
// fetching the 32 KB skipped). So a jump over cold code costs about the fetch of what it skips
// up to ~1 KB and ~100-130 cycles past that.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

namespace {

__device__ __forceinline__ long long clock_now() {
  long long c;
  asm volatile("mov.u64 %0, %%clock64;" : "=l"(c)::"memory");
  return c;
}

// TAG makes distinct kernels of the same size (another kernel's code).
template <int N, int TAG>
__global__ void __launch_bounds__(256) code_kernel(float* out, long long* cycles, float4 const* stream, size_t n4,
                                                  int streaming, float b, float c) {
  int const warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  long long const start = clock_now();
  if (warp > 0) {  // optional load stream on the same SM, ~30 us
    if (!streaming) return;
    float acc = 0.f;
    size_t i = (size_t(blockIdx.x) * 7 + (warp - 1)) * 32 * 8 + lane;
    size_t const step = size_t(gridDim.x) * 7 * 32 * 8;
    while (clock_now() - start < 60000) {
      float4 v[8];
#pragma unroll
      for (int u = 0; u < 8; ++u) v[u] = __ldcg(stream + (i + u * 32) % n4);
#pragma unroll
      for (int u = 0; u < 8; ++u) acc += v[u].x + v[u].w;
      i += step;
    }
    if (acc == 12345.f) out[blockIdx.x] = acc;  // keeps the loads
    return;
  }
  if (streaming) {
    while (clock_now() - start < 8000) {  // let the stream build up first
    }
  }
  float a0 = lane, a1 = lane + 1, a2 = lane + 2, a3 = lane + 3, a4 = lane + 4, a5 = lane + 5, a6 = lane + 6,
        a7 = lane + 7;
#pragma unroll 1
  for (int pass = 0; pass < 2; ++pass) {
    asm volatile("" : "+f"(a0), "+f"(a1), "+f"(a2), "+f"(a3), "+f"(a4), "+f"(a5), "+f"(a6), "+f"(a7));
    long long const t0 = clock_now();
#pragma unroll
    for (int k = 0; k < N / 8; ++k) {
      a0 = fmaf(a0, b, c);
      a1 = fmaf(a1, b, c);
      a2 = fmaf(a2, b, c);
      a3 = fmaf(a3, b, c);
      a4 = fmaf(a4, b, c);
      a5 = fmaf(a5, b, c);
      a6 = fmaf(a6, b, c);
      a7 = fmaf(a7, b, c);
    }
    asm volatile("" : "+f"(a0), "+f"(a1), "+f"(a2), "+f"(a3), "+f"(a4), "+f"(a5), "+f"(a6), "+f"(a7));
    long long const t1 = clock_now();
    if (lane == 0) cycles[blockIdx.x * 2 + pass] = t1 - t0;
  }
  out[blockIdx.x * 32 + lane] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}

// Cold code with taken branches: warp 0 runs BLOCKS blocks of EXEC FFMA, each followed by a
// block of SKIP FFMA behind `if (mask & bit)` (mask 0: never run, the branch jumps over it;
// a runtime bit per block, so the compiler cannot unswitch the loop into one straight copy).
// Against a straight kernel of the same executed code, the cold pass shows what a jump over
// code the SM has not fetched costs (the reducer's and producer's uniform branches on n).
template <int BLOCKS, int EXEC, int SKIP, int TAG>
__global__ void __launch_bounds__(256) branchy_kernel(float* out, long long* cycles, unsigned mask, float b, float c) {
  if (threadIdx.x >= 32) return;
  int const lane = threadIdx.x;
  float a0 = lane, a1 = lane + 1, a2 = lane + 2, a3 = lane + 3, a4 = lane + 4, a5 = lane + 5, a6 = lane + 6,
        a7 = lane + 7;
  float const c2 = c * 0.5f;
#pragma unroll 1
  for (int pass = 0; pass < 2; ++pass) {
    asm volatile("" : "+f"(a0), "+f"(a1), "+f"(a2), "+f"(a3), "+f"(a4), "+f"(a5), "+f"(a6), "+f"(a7));
    long long const t0 = clock_now();
#pragma unroll
    for (int k = 0; k < BLOCKS; ++k) {
#pragma unroll
      for (int i = 0; i < EXEC / 8; ++i) {
        a0 = fmaf(a0, b, c), a1 = fmaf(a1, b, c), a2 = fmaf(a2, b, c), a3 = fmaf(a3, b, c);
        a4 = fmaf(a4, b, c), a5 = fmaf(a5, b, c), a6 = fmaf(a6, b, c), a7 = fmaf(a7, b, c);
      }
      if (mask & (1u << (k % 32))) {
#pragma unroll
        for (int i = 0; i < SKIP / 8; ++i) {
          a0 = fmaf(a0, b, c2), a1 = fmaf(a1, b, c2), a2 = fmaf(a2, b, c2), a3 = fmaf(a3, b, c2);
          a4 = fmaf(a4, b, c2), a5 = fmaf(a5, b, c2), a6 = fmaf(a6, b, c2), a7 = fmaf(a7, b, c2);
        }
      }
    }
    asm volatile("" : "+f"(a0), "+f"(a1), "+f"(a2), "+f"(a3), "+f"(a4), "+f"(a5), "+f"(a6), "+f"(a7));
    long long const t1 = clock_now();
    if (lane == 0) cycles[blockIdx.x * 2 + pass] = t1 - t0;
  }
  out[blockIdx.x * 32 + lane] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}

__global__ void overwrite_kernel(float4* buf, size_t n4) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n4; i += size_t(gridDim.x) * blockDim.x) {
    buf[i] = make_float4(1.f, 2.f, 3.f, float(i));
  }
}

#define CHECK(x)                                                                  \
  do {                                                                            \
    cudaError_t const e_ = (x);                                                   \
    if (e_ != cudaSuccess) {                                                      \
      std::fprintf(stderr, "%s: %s\n", #x, cudaGetErrorString(e_));               \
      return 1;                                                                   \
    }                                                                             \
  } while (0)

}  // namespace

int main() {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  size_t const n4 = (size_t(1) << 30) / sizeof(float4);  // 1 GiB: streamed, and 256 MB overwritten
  float4* big = nullptr;
  float* out = nullptr;
  long long* cycles = nullptr;
  CHECK(cudaMalloc(&big, n4 * sizeof(float4)));
  CHECK(cudaMalloc(&out, size_t(sms) * 32 * sizeof(float)));
  CHECK(cudaMalloc(&cycles, size_t(sms) * 2 * sizeof(long long)));
  CHECK(cudaMemset(big, 0, n4 * sizeof(float4)));
  size_t const smem = 150 * 1024;  // one CTA per SM
  CHECK(cudaFuncSetAttribute(code_kernel<256, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CHECK(cudaFuncSetAttribute(code_kernel<1024, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CHECK(cudaFuncSetAttribute(code_kernel<1024, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CHECK(cudaFuncSetAttribute(code_kernel<4096, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CHECK(cudaFuncSetAttribute(code_kernel<512, 2>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CHECK(cudaFuncSetAttribute(code_kernel<1536, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CHECK(cudaFuncSetAttribute(code_kernel<2048, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CHECK(cudaFuncSetAttribute(code_kernel<2560, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CHECK(cudaFuncSetAttribute(code_kernel<3072, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CHECK(cudaFuncSetAttribute(code_kernel<512, 3>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CHECK(cudaFuncSetAttribute(branchy_kernel<16, 32, 8, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CHECK(cudaFuncSetAttribute(branchy_kernel<16, 32, 32, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CHECK(cudaFuncSetAttribute(branchy_kernel<16, 32, 128, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  CHECK(cudaFuncSetAttribute(branchy_kernel<16, 32, 32, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  std::vector<long long> host(size_t(sms) * 2);
  auto report = [&](char const* what) -> bool {
    if (cudaDeviceSynchronize() != cudaSuccess) return false;
    if (cudaMemcpy(host.data(), cycles, host.size() * sizeof(long long), cudaMemcpyDeviceToHost) != cudaSuccess) {
      return false;
    }
    std::vector<long long> p0, p1;
    for (int i = 0; i < sms; ++i) {
      p0.push_back(host[2 * i]);
      p1.push_back(host[2 * i + 1]);
    }
    std::sort(p0.begin(), p0.end());
    std::sort(p1.begin(), p1.end());
    std::printf("| %-44s | %6lld / %6lld / %6lld | %6lld / %6lld / %6lld |\n", what, p0[0], p0[sms / 2], p0[sms - 1],
                p1[0], p1[sms / 2], p1[sms - 1]);
    return true;
  };
  float const b = 1.0001f, c = 0.5f;
  std::printf("cycles of N FFMA (16 bytes each) run by warp 0 of one CTA per SM; cached: ~N\n");
  std::printf("| case | pass 0 (fetch) min / median / max | pass 1 (cached) |\n|---|---|---|\n");
#define REPORT(WHAT)                                                                      \
  if (!report(WHAT)) {                                                                    \
    std::fprintf(stderr, "%s: %s\n", WHAT, cudaGetErrorString(cudaGetLastError()));      \
    return 1;                                                                             \
  }
#define RUN(N, TAG, STREAMING, WHAT)                                               \
  code_kernel<N, TAG><<<sms, 256, smem>>>(out, cycles, big, n4, STREAMING, b, c); \
  REPORT(WHAT)
  RUN(1024, 0, 0, "16 KB, first launch");
  RUN(1024, 0, 0, "16 KB, same kernel again");
  RUN(1024, 1, 0, "another 16 KB kernel, first launch");
  RUN(1024, 0, 0, "16 KB, after the other kernel ran");
  overwrite_kernel<<<sms * 4, 512>>>(big, n4 / 4);
  RUN(1024, 0, 0, "16 KB, after a 256 MB overwrite (L2 cold)");
  RUN(1024, 0, 1, "16 KB, warps 1-7 streaming loads");
  RUN(1024, 1, 1, "the other 16 KB kernel again, streaming");
  RUN(256, 0, 0, "4 KB, first launch");
  RUN(256, 0, 0, "4 KB, again");
  RUN(4096, 0, 0, "64 KB, first launch");
  RUN(4096, 0, 0, "64 KB, again");
  // Capacity: the largest block that pass 1 (same launch) and a second launch find cached;
  // then the chain's pattern, a kernel of that size with an 8 KB kernel between two launches.
  RUN(1536, 0, 0, "24 KB, first launch");
  RUN(1536, 0, 0, "24 KB, again");
  RUN(2048, 0, 0, "32 KB, first launch");
  RUN(2048, 0, 0, "32 KB, again");
  RUN(2560, 0, 0, "40 KB, first launch");
  RUN(2560, 0, 0, "40 KB, again");
  RUN(3072, 0, 0, "48 KB, first launch");
  RUN(3072, 0, 0, "48 KB, again");
  RUN(1024, 0, 0, "16 KB, warming");
  RUN(512, 2, 0, "8 KB kernel");
  RUN(1024, 0, 0, "16 KB, after the 8 KB kernel");
  RUN(1536, 0, 0, "24 KB, warming");
  RUN(512, 2, 0, "8 KB kernel");
  RUN(1536, 0, 0, "24 KB, after the 8 KB kernel");
  RUN(2048, 0, 0, "32 KB, warming");
  RUN(512, 2, 0, "8 KB kernel");
  RUN(2048, 0, 0, "32 KB, after the 8 KB kernel");
  // Taken branches over cold code (forty-eighth session): 8 KB executed in 16 blocks of 512 B.
#define RUNB(SKIP, TAG, MASK, WHAT)                                               \
  branchy_kernel<16, 32, SKIP, TAG><<<sms, 256, smem>>>(out, cycles, MASK, b, c); \
  REPORT(WHAT)
  RUN(512, 3, 0, "8 KB straight, first launch");
  RUNB(8, 0, 0u, "8 KB in 16 blocks, jumps over 128 B, first");
  RUNB(32, 0, 0u, "8 KB in 16 blocks, jumps over 512 B, first");
  RUNB(128, 0, 0u, "8 KB in 16 blocks, jumps over 2 KB, first");
  RUNB(128, 0, 0u, "8 KB in 16 blocks, jumps over 2 KB, again");
  RUNB(32, 1, ~0u, "16 KB in 16 x 2 blocks, branches not taken");
#undef RUNB
#undef RUN
#undef REPORT
  cudaFree(big);
  cudaFree(out);
  cudaFree(cycles);
  return 0;
}
