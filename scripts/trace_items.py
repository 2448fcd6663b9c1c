#!/usr/bin/env python3
"""Per-item summary of the producer's trace rows (BATON_TRACE_CSV), one column per file.

  BATON_TRACE_CSV=a.csv build/trace/bench/baton-bench attention --trace --only 128x2K
  scripts/trace_items.py 128x2K a.csv [b.csv ...]   # e.g. two builds of one A/B

A producer row is one producer CTA (bench/attention_trace.cpp, dump_csv): "case",cta,sm, 15 slot
columns, then 4 columns (start, tile 0 landed, KV loop done, end; ns after the first wait)
for each of the CTA's first four items; rows whose case ends in " reducer" are the reducer's
CTAs, skipped here. Only the in-graph case's producer rows are read (default reads, two
kernels), the last call of the graph. Prints, in us:
  - when the CTAs end (min / median / max): the call's critical path is the max;
  - item 0: start -> tile 0 landed (the first round trips; p10 / p50 / p90);
  - boundaries: end of item k -> tile 0 of item k + 1 landed (what an item start costs a
    CTA that streams several), and item k's KV loop done -> its end (merge and stores);
  - KV loop time (tile 0 landed -> loop done) of items 0 and 1.
"""
import csv
import statistics
import sys

SLOTS = 15  # slot columns before the per-item ones
MARKS = 4   # per item: start, tile 0 landed, KV loop done, end
ITEMS = 4


def load(path, shape):
    """(cta, sm, items) per CTA; items: [start, tile0, loop_done, end] in us, None if unset."""
    rows = []
    with open(path) as f:
        for r in csv.reader(f):
            case = r[0]
            if not case.startswith(shape + ",") or "in-graph (last" not in case:
                continue
            if "early" in case or "single" in case or case.endswith(" reducer"):
                continue
            v = [int(x) / 1000.0 if x else None for x in r[3:]]
            items = [v[SLOTS + MARKS * i:SLOTS + MARKS * (i + 1)] for i in range(ITEMS)]
            items = [it for it in items if len(it) == MARKS and it[0] is not None]
            rows.append((int(r[1]), int(r[2]), items))
    return rows


def q(values, p):
    s = sorted(values)
    return s[int(p * (len(s) - 1))] if s else float("nan")


def summary(rows):
    out = {}
    ends = [max(i[3] for i in items if i[3] is not None) for _, _, items in rows if items]
    out["CTAs"] = "%d" % len(rows)
    out["end min/med/max"] = "%.2f / %.2f / %.2f" % (min(ends), statistics.median(ends), max(ends))
    first = [items[0][1] - items[0][0] for _, _, items in rows if items and items[0][1] is not None]
    out["item 0 start -> tile 0 p10/50/90"] = "%.2f / %.2f / %.2f" % (q(first, .1), q(first, .5), q(first, .9))
    gaps, tails = [], []
    for _, _, items in rows:
        for a, b in zip(items, items[1:]):
            if a[3] is not None and b[1] is not None:
                gaps.append(b[1] - a[3])
        for a in items:
            if a[2] is not None and a[3] is not None:
                tails.append(a[3] - a[2])
    out["end -> next tile 0 (median)"] = "%.2f (%d)" % (statistics.median(gaps), len(gaps)) if gaps else "-"
    out["loop done -> end (median)"] = "%.2f" % statistics.median(tails) if tails else "-"
    for k in range(2):
        loops = [items[k][2] - items[k][1] for _, _, items in rows
                 if len(items) > k and items[k][1] is not None and items[k][2] is not None]
        out["item %d KV loop med/max" % k] = "%.2f / %.2f" % (statistics.median(loops), max(loops)) if loops else "-"
    return out


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    shape, paths = sys.argv[1], sys.argv[2:]
    columns = []
    for p in paths:
        rows = load(p, shape)
        if not rows:
            sys.exit("%s: no in-graph rows for %s" % (p, shape))
        columns.append(summary(rows))
    keys = list(columns[0])
    width = max(len(k) for k in keys)
    print("%-*s | %s" % (width, shape + " (us)", " | ".join(paths)))
    for k in keys:
        print("%-*s | %s" % (width, k, " | ".join(c.get(k, "-") for c in columns)))


if __name__ == "__main__":
    main()
