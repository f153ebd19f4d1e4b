"""What a purge's scrub of the search index costs: the table written anew without the purged
row and its earlier versions dropped (``SearchIndex.scrub``), at a given number of rows.

Fills a LanceDB table (real LanceDB, 384-dimensional random vectors, short texts) in batches
of 5,000 and compacts it, as a long-running memory's would be; then deletes one row and
scrubs. Prints the scrub's wall time and how much the process's peak RSS grew during it.

Run: ``python bench/purge.py [--rows 100000]`` (about ten seconds at 100,000).
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

import numpy as np

from doxa.store.index import SearchIndex


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    rows = parser.parse_args().rows
    with tempfile.TemporaryDirectory() as directory:
        index = SearchIndex(Path(directory), 384, "bench")
        rng = np.random.default_rng(0)
        for start in range(0, rows, 5000):
            ids = range(start, min(start + 5000, rows))
            index.add(
                [f"obs_{i}" for i in ids],
                [f"Ordinary note number {i}, about nothing in particular." for i in ids],
                rng.standard_normal((len(ids), 384)).astype(np.float32),
            )
        index.maintain(force=True)
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        index.delete(["obs_7"])
        began = time.perf_counter()
        index.scrub()
        took = time.perf_counter() - began
        grew = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
        left = index.count()
        print(f"{rows:,} rows: scrub {took:.2f} s, peak RSS +{grew:.0f} MB ({left:,} left)")


if __name__ == "__main__":
    main()
