#!/usr/bin/env python3
"""How much of each kernel's code a call executes: the instruction-cache footprint.

  scripts/code_footprint.py NCU_CSV[.gz] ...

NCU_CSV is what `ncu --section SourceCounters --page source --print-source sass --csv` prints
(scripts/code_footprint.sh writes it). Per profiled kernel launch: the static code size, the
bytes of instructions executed at least once, the 128-byte lines they touch (what the SM's
instruction cache must hold for one call), and the executed bytes by how many times each
instruction ran (per warp: once per CTA, per item, per tile, ...), and the forward jumps over
1 KB or more of code that did not run (where, how far, and how often the instruction before
the jump ran). An SM keeps ~24 KB of code between launches, about half of it when an 8 KB
kernel ran in between, and not 32 KB; on a cold SM a jump over 2 KB costs ~100-130 cycles
beyond the fetch of the code that runs (bench/probes/icache_probe.cu, docs/benchmarking.md,
thirty-second and forty-eighth sessions).
"""
import collections
import csv
import gzip
import sys


def launches(rows):
    """(kernel name, [(address, sass, times executed)]) per profiled launch."""
    i = 0
    while i < len(rows):
        if rows[i] and rows[i][0] == "Kernel Name":
            name, header = rows[i][1], rows[i + 1]
            col = header.index("Instructions Executed")
            code, j = [], i + 2
            while j < len(rows) and rows[j] and rows[j][0].startswith("0x"):
                code.append((int(rows[j][0], 16), rows[j][1].strip(), int(rows[j][col] or 0)))
                j += 1
            yield name, code
            i = j
        else:
            i += 1


def main(paths):
    for path in paths:
        opener = gzip.open if path.endswith(".gz") else open
        with opener(path, "rt") as f:
            rows = list(csv.reader(f))
        print(path)
        seen = set()
        for name, code in launches(rows):
            if (name, tuple(code)) in seen:  # the same kernel and counts again (another launch)
                continue
            seen.add((name, tuple(code)))
            ran = [(a, n) for a, _, n in code if n > 0]
            lines = {a // 128 for a, _ in ran}
            by_count = collections.Counter()
            for _, n in ran:
                by_count[n] += 16
            short = name.split("(baton::")[0].replace("void baton::attention::", "")
            print(f"  {short}")
            print(f"    static {len(code) * 16} B, executed {len(ran) * 16} B in {len(lines) * 128} B of lines")
            print("    executed bytes by times run: " + ", ".join(f"x{n}: {b}" for n, b in sorted(by_count.items())))
            base = code[0][0] if code else 0
            jumps = [(a0 - base, a1 - a0 - 16, n0) for (a0, n0), (a1, _) in zip(ran, ran[1:]) if a1 - a0 - 16 >= 1024]
            print(f"    forward jumps over >= 1 KB of code not run: {len(jumps)}" +
                  "".join(f"\n      at +0x{off:x}: {gap} B (x{n})" for off, gap, n in jumps))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
