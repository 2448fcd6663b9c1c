#!/usr/bin/env python3
"""Median of alternating A/B runs of baton-bench, per shape and variant.

  scripts/ab_summary.py DIR [COLUMN ...]

DIR holds the runs as ab_<variant>_<round>.txt (what scripts/ab_bins.sh and scripts/ab_many.sh
write); COLUMN is a header of the bench table ("graph us" when none is given, e.g. "early 1L"
or "cold us"). Prints one table per column: the median over rounds, then every round's value,
so that an overlap between variants is visible.
"""
import glob
import re
import statistics
import sys
from collections import defaultdict


def read(path):
    """Rows of the bench table in one run: {shape: {column: value}}."""
    header, rows = None, {}
    with open(path) as f:
        for line in f:
            if not line.startswith('|') or line.startswith('|--') or line.startswith('|-'):
                continue
            cells = [c.strip() for c in line.strip().strip('|').split('|')]
            if cells[0] == 'shape':
                header = cells
                continue
            if header is None or len(cells) != len(header):
                continue
            row = {}
            for name, cell in zip(header, cells):
                try:
                    row[name] = float(cell)
                except ValueError:
                    pass
            rows[cells[0]] = row
    return rows


def main(argv):
    if len(argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    columns = argv[2:] or ['graph us']
    runs = defaultdict(lambda: defaultdict(list))  # shape -> variant -> [rows]
    variants, shapes = [], []
    for path in sorted(glob.glob(argv[1] + '/ab_*_*.txt')):
        m = re.search(r'ab_(.+)_(\d+)\.txt$', path)
        if not m:
            continue
        variant = m.group(1)
        if variant not in variants:
            variants.append(variant)
        for shape, row in read(path).items():
            if shape not in shapes:
                shapes.append(shape)
            runs[shape][variant].append(row)
    if not variants:
        print('no ab_<variant>_<round>.txt files in ' + argv[1], file=sys.stderr)
        return 1
    for column in columns:
        print('== ' + column)
        print('%-14s' % 'shape' + ''.join('%30s' % v for v in variants))
        for shape in shapes:
            cells = []
            for v in variants:
                values = [r[column] for r in runs[shape][v] if column in r]
                cells.append('%.2f [%s]' % (statistics.median(values), ' '.join('%.2f' % x for x in values))
                             if values else '-')
            if any(c != '-' for c in cells):
                print('%-14s' % shape + ''.join('%30s' % c for c in cells))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
