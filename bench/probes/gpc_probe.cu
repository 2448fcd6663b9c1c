// GPC probe: which SMs share a GPC, and whether a GPC's streaming rate is capped by the GPC
// or set by its share of the DRAM. Standalone; not part of the library.
//
//   baton-gpc-probe [MB_PER_CTA]   (default 8)
//
// Why (docs/benchmarking.md): at the large shapes, SMs that hold equal work end their KV loops
// at different times, in whole groups of neighbouring SM ids, the same SMs in every run. If a
// GPC's link to the memory system is the cap and GPCs hold different numbers of SMs, the SMs of
// the smaller GPCs stream faster, and no plan that gives every SM the same bytes can end
// together.
//
// 1. Topology. Thread-block clusters are placed inside one GPC. Kernels that only record
//    %smid are launched in clusters of 16, 8, 4 and 2 CTAs, at one and at two CTAs per SM
//    (shared memory sized to allow no more); SMs that ever share a cluster are joined
//    (union-find). The groups printed are GPCs, or parts of one if no cluster ever joined them.
// 2. Rates. Two CTAs per SM (512 threads each, 64 KB of 16-byte loads in flight per CTA),
//    each streaming MB_PER_CTA of its own, untouched by any other CTA (no L2 reuse); per CTA
//    its SM and its start and end (globaltimer). Runs: every SM streams; then each group
//    alone (the CTAs of other SMs exit at once); before each run a kernel reads 256 MB, so the
//    stream comes from DRAM. Printed per group: SMs, the median (upper) and last end, and the
//    group's rate (its bytes over its last end), with every SM and alone.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <numeric>
#include <vector>

#include "probe_util.cuh"

namespace {

__device__ __forceinline__ unsigned smid() {
  unsigned x;
  asm volatile("mov.u32 %0, %smid;" : "=r"(x));
  return x;
}

__global__ void where_kernel(int* sm_of_cta) {
  extern __shared__ char pad[];  // only sizes the CTAs per SM
  if (threadIdx.x == 0) {
    pad[0] = 0;
    sm_of_cta[blockIdx.x] = static_cast<int>(smid());
  }
}

constexpr int kStreamThreads = 512, kUnroll = 8;

// CTA c streams bytes [c * per_cta, (c + 1) * per_cta) of `src` unless its SM is masked off.
__global__ void __launch_bounds__(kStreamThreads, 2) stream_kernel(uint4 const* src, int64_t per_cta_vec,
                                                                unsigned char const* sm_on, unsigned long long* t,
                                                                int* sm_of_cta, unsigned* sink) {
  unsigned const sm = smid();
  if (threadIdx.x == 0) {
    sm_of_cta[blockIdx.x] = static_cast<int>(sm);
    t[2 * blockIdx.x] = probe_now();
  }
  if (!sm_on[sm]) return;
  uint4 const* p = src + int64_t(blockIdx.x) * per_cta_vec;
  unsigned acc = 0;
  for (int64_t i = threadIdx.x; i < per_cta_vec; i += int64_t(kStreamThreads) * kUnroll) {
    uint4 v[kUnroll];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      int64_t const j = i + int64_t(u) * kStreamThreads;
      v[u] = j < per_cta_vec ? __ldcs(p + j) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  __syncthreads();
  if (threadIdx.x == 0) t[2 * blockIdx.x + 1] = probe_now();
  if (acc == 0x12345678u) *sink = acc;  // keeps the loads
}

// Reads `n` 16-byte words, so that L2 holds clean lines of this buffer and none of the
// stream's: every stream run reads from DRAM (a 2-SM group alone reads 32 MB, under the L2).
__global__ void flush_kernel(uint4 const* p, int64_t n, unsigned* sink) {
  unsigned acc = 0;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n; i += int64_t(gridDim.x) * blockDim.x) {
    uint4 const v = __ldcs(p + i);
    acc ^= v.x ^ v.w;
  }
  if (acc == 0x12345678u) *sink = acc;
}

struct UnionFind {
  std::vector<int> up;
  explicit UnionFind(int n) : up(n) { std::iota(up.begin(), up.end(), 0); }
  int find(int x) { return up[x] == x ? x : up[x] = find(up[x]); }
  void join(int a, int b) { up[find(a)] = find(b); }
};

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int const mb = argc > 1 ? std::max(1, std::atoi(argv[1])) : 8;
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  int const sms = prop.multiProcessorCount;
  size_t const smem_per_sm = prop.sharedMemPerMultiprocessor;
  std::printf("%s, %d SMs, %zu KB shared memory per SM\n", prop.name, sms, smem_per_sm / 1024);

  // 1. Topology.
  CK(cudaFuncSetAttribute(where_kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  int* d_sm = nullptr;
  CK(cudaMalloc(&d_sm, sizeof(int) * 4096));
  UnionFind uf(sms);
  for (int per_sm : {1, 2}) {
    // Just over a (per_sm + 1)-th of the SM's shared memory: at most per_sm CTAs fit.
    size_t const smem = smem_per_sm / (per_sm + 1) + 1024;
    CK(cudaFuncSetAttribute(where_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem)));
    for (int cluster : {16, 8, 4, 2}) {
      cudaLaunchConfig_t cfg{};
      cudaLaunchAttribute attr{};
      attr.id = cudaLaunchAttributeClusterDimension;
      attr.val.clusterDim.x = cluster;
      attr.val.clusterDim.y = 1;
      attr.val.clusterDim.z = 1;
      cfg.blockDim = dim3(32);
      cfg.dynamicSmemBytes = smem;
      cfg.attrs = &attr;
      cfg.numAttrs = 1;
      cfg.gridDim = dim3(cluster);
      int clusters = 0;
      if (cudaOccupancyMaxActiveClusters(&clusters, where_kernel, &cfg) != cudaSuccess || clusters == 0) {
        cudaGetLastError();
        std::printf("clusters of %d at %d CTA(s) per SM: none fit\n", cluster, per_sm);
        continue;
      }
      cfg.gridDim = dim3(clusters * cluster);
      CK(cudaLaunchKernelEx(&cfg, where_kernel, d_sm));
      CK(cudaDeviceSynchronize());
      std::vector<int> at(clusters * cluster);
      CK(cudaMemcpy(at.data(), d_sm, sizeof(int) * at.size(), cudaMemcpyDeviceToHost));
      for (int c = 0; c < clusters; ++c)
        for (int i = 1; i < cluster; ++i) uf.join(at[c * cluster], at[c * cluster + i]);
      std::printf("clusters of %2d at %d CTA(s) per SM: %d resident\n", cluster, per_sm, clusters);
    }
  }
  std::map<int, std::vector<int>> groups;
  for (int s = 0; s < sms; ++s) groups[uf.find(s)].push_back(s);
  std::vector<std::vector<int>> g;
  for (auto& kv : groups) g.push_back(kv.second);
  std::sort(g.begin(), g.end(), [](auto const& a, auto const& b) { return a.front() < b.front(); });
  std::vector<int> group_of(sms);
  std::printf("\n%zu groups of SMs that shared a cluster:\n", g.size());
  for (size_t i = 0; i < g.size(); ++i) {
    std::printf("  group %zu (%zu SMs):", i, g[i].size());
    for (int s : g[i]) {
      std::printf(" %d", s);
      group_of[s] = static_cast<int>(i);
    }
    std::printf("\n");
  }

  // 2. Rates.
  int const ctas = 2 * sms;
  int64_t const per_cta = int64_t(mb) << 20;
  uint4* src = nullptr;
  CK(cudaMalloc(&src, size_t(per_cta) * ctas));
  CK(cudaMemset(src, 1, size_t(per_cta) * ctas));
  unsigned long long* d_t = nullptr;
  unsigned char* d_on = nullptr;
  unsigned* d_sink = nullptr;
  CK(cudaMalloc(&d_t, sizeof(unsigned long long) * 2 * ctas));
  CK(cudaMalloc(&d_on, sms));
  CK(cudaMalloc(&d_sink, sizeof(unsigned)));
  constexpr size_t kFlushBytes = size_t(256) << 20;
  uint4* flush = nullptr;
  CK(cudaMalloc(&flush, kFlushBytes));
  CK(cudaMemset(flush, 2, kFlushBytes));
  size_t const stream_smem = smem_per_sm / 3 + 1024;  // at most 2 CTAs per SM
  CK(cudaFuncSetAttribute(stream_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(stream_smem)));

  struct GroupRate {
    double p50_end_us = 0, last_end_us = 0, gbs = 0;
  };
  // One run with the SMs of `on` streaming (best of 3 by span); per group.
  auto run = [&](std::vector<unsigned char> const& on, double* total_tbs) {
    CK(cudaMemcpy(d_on, on.data(), sms, cudaMemcpyHostToDevice));
    std::vector<unsigned long long> t(2 * ctas);
    std::vector<int> where(ctas);
    double best_span = 1e30;
    std::vector<GroupRate> best;
    for (int rep = 0; rep < 3; ++rep) {
      flush_kernel<<<2 * sms, 512>>>(flush, int64_t(kFlushBytes / 16), d_sink);
      stream_kernel<<<ctas, kStreamThreads, stream_smem>>>(src, per_cta / 16, d_on, d_t, d_sm, d_sink);
      CK(cudaDeviceSynchronize());
      CK(cudaMemcpy(t.data(), d_t, sizeof(t[0]) * t.size(), cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(where.data(), d_sm, sizeof(int) * ctas, cudaMemcpyDeviceToHost));
      unsigned long long t0 = ~0ull, t1 = 0;
      for (int c = 0; c < ctas; ++c) {
        if (!on[where[c]]) continue;
        t0 = std::min(t0, t[2 * c]);
        t1 = std::max(t1, t[2 * c + 1]);
      }
      double const span = (t1 - t0) * 1e-3;
      if (span >= best_span) continue;
      best_span = span;
      best.assign(g.size(), GroupRate{});
      std::vector<std::vector<double>> ends(g.size());
      std::vector<double> bytes(g.size(), 0);
      for (int c = 0; c < ctas; ++c) {
        if (!on[where[c]]) continue;
        int const gi = group_of[where[c]];
        ends[gi].push_back((t[2 * c + 1] - t0) * 1e-3);
        bytes[gi] += double(per_cta);
      }
      double all = 0;
      for (size_t i = 0; i < g.size(); ++i) {
        if (ends[i].empty()) continue;
        best[i].p50_end_us = median(ends[i]);
        best[i].last_end_us = *std::max_element(ends[i].begin(), ends[i].end());
        best[i].gbs = bytes[i] / (best[i].last_end_us * 1e3);
        all += bytes[i];
      }
      *total_tbs = all / (span * 1e6);
    }
    return best;
  };
  double all_tbs = 0;
  std::vector<GroupRate> const every = run(std::vector<unsigned char>(sms, 1), &all_tbs);
  std::printf("\nrates, %d MB per CTA, 2 CTAs per SM; every SM: %.2f TB/s over the span\n", mb, all_tbs);
  std::printf("| group | SMs | every SM: p50 end us | last end us | GB/s | GB/s per SM | alone: last end us | GB/s | GB/s per SM |\n");
  std::printf("|---|---|---|---|---|---|---|---|---|\n");
  for (size_t i = 0; i < g.size(); ++i) {
    std::vector<unsigned char> on(sms, 0);
    for (int s : g[i]) on[s] = 1;
    double tbs = 0;
    GroupRate const alone = run(on, &tbs)[i];
    double const n = double(g[i].size());
    std::printf("| %zu | %zu | %.1f | %.1f | %.0f | %.1f | %.1f | %.0f | %.1f |\n", i, g[i].size(), every[i].p50_end_us,
                every[i].last_end_us, every[i].gbs, every[i].gbs / n, alone.last_end_us, alone.gbs, alone.gbs / n);
  }
  return 0;
}
