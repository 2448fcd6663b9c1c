"""A plain Triton split-K paged decode attention, timed with baton-bench's in-graph method.

Question it answers (twenty-fourth session): how fast is the classic Triton design -- a grid of
(request, kv head, split) programs without PDL, then a reducer kernel, as engines shipped it
before PDL -- on the small shapes under the same method as `baton-bench attention` (20 calls
per CUDA graph, each call on its own KV pool, median of 30 replays)? BENCHMARKS.md's LMDeploy
column (in-graph 1x1K 5.7 us, 1x8K 11.6, 8x1K 10.7) is below baton's default-mode numbers, and
whether that comes from the design or from the anchor's pool policy is not known.

Written for this probe (no engine's code): bf16, 32 query / 8 KV heads, head_dim 128, page 64,
NHD pages, a shuffled page table, random data. Each program packs its KV head's 4 query heads
into a 16-row tl.dot, streams its split in BLOCK_N-key blocks with an online softmax and stores
a partial (out, lse); the reducer merges a row's splits. Every (splits, BLOCK_N, stages) of the
sweep is checked against an fp32 torch reference first. The best configuration per shape is
also timed cold (baton-bench's single-call method). Standalone; not part of the library.

    python3 bench/probes/triton_splitk.py [--shapes 1x1K,1x8K,8x1K] [--pools N] [--full]
"""
import argparse
import math
import statistics
import sys

import torch
import triton
import triton.language as tl

HQ, HKV, D, PAGE = 32, 8, 128, 64
GROUP = HQ // HKV
S_MAX = 32


@triton.jit
def split_kernel(q_ptr, k_ptr, v_ptr, lens_ptr, table_ptr, po_ptr, plse_ptr, table_stride, num_splits, scale,
                 HQ: tl.constexpr, HKV: tl.constexpr, GROUP: tl.constexpr, GPAD: tl.constexpr, D: tl.constexpr,
                 PAGE: tl.constexpr, BLOCK_N: tl.constexpr, S_MAX: tl.constexpr, STAGES: tl.constexpr):
    b = tl.program_id(0)
    h = tl.program_id(1)
    s = tl.program_id(2)
    L = tl.load(lens_ptr + b)
    per = tl.cdiv(tl.cdiv(L, num_splits), BLOCK_N) * BLOCK_N
    beg = s * per
    end = tl.minimum(beg + per, L)
    rows = tl.arange(0, GPAD)
    dims = tl.arange(0, D)
    live = rows < GROUP
    qrow = b * HQ + h * GROUP + rows
    q = tl.load(q_ptr + qrow[:, None] * D + dims[None, :], mask=live[:, None], other=0.0)
    m = tl.full([GPAD], float("-inf"), tl.float32)
    l = tl.zeros([GPAD], tl.float32)
    acc = tl.zeros([GPAD, D], tl.float32)
    for start in tl.range(beg, end, BLOCK_N, num_stages=STAGES):
        keys = start + tl.arange(0, BLOCK_N)
        kin = keys < end
        page = tl.load(table_ptr + b * table_stride + keys // PAGE, mask=kin, other=0)
        off = (page.to(tl.int64) * PAGE + keys % PAGE) * (HKV * D) + h * D
        k = tl.load(k_ptr + off[:, None] + dims[None, :], mask=kin[:, None], other=0.0)
        sc = tl.dot(q, tl.trans(k)) * scale
        sc = tl.where(kin[None, :], sc, float("-inf"))
        mn = tl.maximum(m, tl.max(sc, 1))
        p = tl.exp(sc - mn[:, None])
        alpha = tl.exp(m - mn)
        l = l * alpha + tl.sum(p, 1)
        v = tl.load(v_ptr + off[:, None] + dims[None, :], mask=kin[:, None], other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m = mn
    o = tl.where(l[:, None] > 0, acc / l[:, None], 0.0)
    lse = tl.where(l > 0, m + tl.log(l), float("-inf"))
    slot = qrow * S_MAX + s
    tl.store(po_ptr + slot[:, None] * D + dims[None, :], o, mask=live[:, None])
    tl.store(plse_ptr + slot, lse, mask=live)


@triton.jit
def reduce_kernel(po_ptr, plse_ptr, out_ptr, num_splits, D: tl.constexpr, S_MAX: tl.constexpr):
    r = tl.program_id(0)
    s = tl.arange(0, S_MAX)
    sin = s < num_splits
    lse = tl.load(plse_ptr + r * S_MAX + s, mask=sin, other=float("-inf"))
    w = tl.where(lse > float("-inf"), tl.exp(lse - tl.max(lse, 0)), 0.0)
    dims = tl.arange(0, D)
    o = tl.load(po_ptr + (r * S_MAX + s)[:, None] * D + dims[None, :], mask=sin[:, None], other=0.0)
    res = tl.sum(o * w[:, None], 0) / tl.sum(w, 0)
    tl.store(out_ptr + r * D + dims, res.to(tl.bfloat16))


def parse_shape(name):
    if name == "1x32K+15x1K":
        return [32768] + [1024] * 15
    b, ctx = name.split("x")
    return [int(ctx[:-1]) * 1024] * int(b)


class Case:
    def __init__(self, name, gen, pools=0):
        self.name = name
        self.lens = parse_shape(name)
        self.batch = len(self.lens)
        pages_per = [math.ceil(x / PAGE) for x in self.lens]
        self.num_pages = sum(pages_per)
        self.max_pages = max(pages_per)
        self.kv_bytes = sum(self.lens) * HKV * D * 2 * 2
        # One pool per call of the 20-call graph, as baton-bench. Between shapes the caching
        # allocator mostly reuses this memory; baton-bench found that tens of GB freed to the driver
        # and allocated again slow the next timings by 10-12% for a while (not checked here).
        self.num_pools = pools or 20
        shape = (self.num_pages, PAGE, HKV, D)
        self.k = [torch.randn(shape, dtype=torch.bfloat16, device="cuda") for _ in range(self.num_pools)]
        self.v = [torch.randn(shape, dtype=torch.bfloat16, device="cuda") for _ in range(self.num_pools)]
        perm = torch.randperm(self.num_pages, generator=gen).to(torch.int32)
        table = torch.zeros(self.batch, self.max_pages, dtype=torch.int32)
        nxt = 0
        for b, n in enumerate(pages_per):
            table[b, :n] = perm[nxt:nxt + n]
            nxt += n
        self.table = table.cuda()
        self.lens_d = torch.tensor(self.lens, dtype=torch.int32, device="cuda")
        self.q = torch.randn(self.batch, HQ, D, dtype=torch.bfloat16, device="cuda")
        self.out = torch.empty_like(self.q)
        self.po = torch.empty(self.batch * HQ * S_MAX * D, dtype=torch.float32, device="cuda")
        self.plse = torch.empty(self.batch * HQ * S_MAX, dtype=torch.float32, device="cuda")

    def call(self, pool, splits, block_n, stages, warps):
        split_kernel[(self.batch, HKV, splits)](
            self.q, self.k[pool], self.v[pool], self.lens_d, self.table, self.po, self.plse, self.table.stride(0),
            splits, 1.0 / math.sqrt(D), HQ=HQ, HKV=HKV, GROUP=GROUP, GPAD=16, D=D, PAGE=PAGE, BLOCK_N=block_n,
            S_MAX=S_MAX, STAGES=stages, num_warps=warps)
        reduce_kernel[(self.batch * HQ,)](self.po, self.plse, self.out, splits, D=D, S_MAX=S_MAX, num_warps=4)

    def reference(self, pool):
        outs = []
        for b, L in enumerate(self.lens):
            pages = self.table[b, :math.ceil(L / PAGE)].long()
            kk = self.k[pool][pages].reshape(-1, HKV, D)[:L].float()
            vv = self.v[pool][pages].reshape(-1, HKV, D)[:L].float()
            qb = self.q[b].float().view(HKV, GROUP, D)
            p = (torch.einsum("hgd,lhd->hgl", qb, kk) / math.sqrt(D)).softmax(-1)
            outs.append(torch.einsum("hgl,lhd->hgd", p, vv).reshape(HQ, D))
        return torch.stack(outs)


def in_graph_us(fns, reps=30, warm=3):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for f in fns:
            f()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for f in fns:
            f()
    for _ in range(warm):
        g.replay()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        g.replay()
        e1.record()
        e1.synchronize()
        ts.append(e0.elapsed_time(e1) * 1000.0 / len(fns))
    return statistics.median(ts)


def cold_us(fn, reps=200):
    """baton-bench's cold method: a graph of one call; before each replay a kernel overwrites
    256 MB; events around the replay only; median."""
    flush = torch.empty(256 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        fn()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    g.replay()
    pairs = []
    for i in range(reps):
        flush.fill_(i)
        e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        e0.record()
        g.replay()
        e1.record()
        pairs.append((e0, e1))
    torch.cuda.synchronize()
    return statistics.median(e0.elapsed_time(e1) * 1000.0 for e0, e1 in pairs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="1x1K,1x8K,8x1K,1x32K,32x8K")
    ap.add_argument("--pools", type=int, default=0, help="KV pools (0: one per call, as baton-bench; 1: K/V in L2)")
    ap.add_argument("--full", action="store_true", help="print every configuration's time")
    args = ap.parse_args()
    gen = torch.Generator().manual_seed(7)
    print(f"triton {triton.__version__}, torch {torch.__version__}, {torch.cuda.get_device_name()}")
    print("in-graph us per call (20 calls per graph, each on its own KV pool, median of 30 replays); "
          "split kernel + reducer kernel, no PDL")
    summary = []
    for name in args.shapes.split(","):
        c = Case(name, gen, args.pools)
        ref = c.reference(0)
        results = []
        for splits in (1, 2, 4, 8, 16, 32):
            for block_n in (32, 64):
                for stages in (2, 3, 4):
                    for warps in (4,):
                        if splits > 1 and math.ceil(max(c.lens) / splits) < block_n:
                            continue
                        c.call(0, splits, block_n, stages, warps)
                        torch.cuda.synchronize()
                        err = ((c.out.float() - ref).abs().max() / ref.abs().max()).item()
                        if not err < 2e-2:
                            print(f"{name}: splits {splits} BLOCK_N {block_n} stages {stages}: max error {err} of the reference's largest: WRONG")
                            sys.exit(1)
                        fns = [lambda i=i: c.call(i % c.num_pools, splits, block_n, stages, warps) for i in range(20)]
                        us = in_graph_us(fns)
                        results.append((us, splits, block_n, stages, warps, err))
                        if args.full:
                            print(f"  {name} splits {splits:2d} BLOCK_N {block_n} stages {stages} warps {warps}: "
                                  f"{us:8.2f} us (max err {err:.1e} of max |ref|)")
        best = min(results)
        tbs = c.kv_bytes / best[0] / 1e6
        cold = cold_us(lambda: c.call(0, *best[1:5]))
        summary.append((name, c.kv_bytes / 1e6, c.num_pools, best, tbs, cold))
        del c
        torch.cuda.empty_cache()
    print("cold: the best in-graph configuration, a graph of one call after a 256 MB overwrite, median of 200")
    print("| shape | KV MB | pools | best Triton us | TB/s | cold us | splits | BLOCK_N | stages | warps | "
          "max err / max abs ref |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for name, mb, pools, (us, splits, block_n, stages, warps, err), tbs, cold in summary:
        print(f"| {name} | {mb:.1f} | {pools} | {us:.2f} | {tbs:.2f} | {cold:.2f} | {splits} | {block_n} | {stages} | "
              f"{warps} | {err:.1e} |")


if __name__ == "__main__":
    main()
