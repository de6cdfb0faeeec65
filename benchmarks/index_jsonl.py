"""Lazy JSONL row index vs full decoding, on a Who&When Pro release file.

Builds a large ``data/text.jsonl`` from the real rows of
``../shared/real_traces/who-when-pro-jsonl`` (ids rewritten so every row is distinct),
or takes an existing JSONL, then prints rows/s for:

* **lazy index** — :func:`whenpro_core.formats.whowhen_pro_jsonl.row_index` (mmap, line
  boundaries, id/framework/benchmark from each line's head, the ground truth from the
  small string near its end; no trajectory decoded), cache cleared before each run;
* **full decode** (baseline) — ``orjson.loads`` of every line plus ``orjson.loads`` of
  its ``task``, ``trajectory``, ``ground_truth`` and ``extras`` strings;

and the ratio, in one run. ``--image-kb K`` adds a K-KiB inline base64 image to every
row's trajectory, as in the multi-GB ``image.jsonl``.

Usage::

    /work/venv/bin/python benchmarks/index_jsonl.py                 # 20,000 rows
    /work/venv/bin/python benchmarks/index_jsonl.py --rows 50000 --image-kb 64
    /work/venv/bin/python benchmarks/index_jsonl.py --path data/image.jsonl
"""

from __future__ import annotations

import argparse
import base64
import os
import sys
import tempfile
import time
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from whenpro_core.formats import whowhen_pro_jsonl as wj  # noqa: E402

REAL = Path(
    os.environ.get("WHENPRO_REAL_TRACES") or Path(__file__).resolve().parent.parent.parent / "shared" / "real_traces"
)


def build(out: Path, rows: int, image_kb: int) -> Path:
    """Write ``rows`` release rows to ``out/data/text.jsonl`` from the real rows."""
    src = REAL / "who-when-pro-jsonl" / "data" / "text.jsonl"
    if not src.is_file():
        sys.exit(f"{src} not found: set WHENPRO_REAL_TRACES or pass --path")
    real = [orjson.loads(line) for line in src.read_bytes().splitlines() if line.strip()]
    if image_kb:
        blob = base64.b64encode(os.urandom(image_kb * 768)).decode()
        for row in real:
            traj = orjson.loads(row["trajectory"])
            traj[-1]["observation_images"] = [{"__type__": "PIL.Image", "data": blob}]
            row["trajectory"] = orjson.dumps(traj).decode()
    path = out / "data" / "text.jsonl"
    path.parent.mkdir(parents=True)
    with path.open("wb") as fh:
        for n in range(rows):
            row = dict(real[n % len(real)], id=f"{real[n % len(real)]['id']}__{n:06d}")
            fh.write(orjson.dumps(row) + b"\n")
    return path


def lazy_index(path: Path) -> int:
    wj._CACHE.clear()
    index = wj.row_index(path)
    assert all(r.error is None for r in index.rows), "bad rows in the benchmark file"
    return len(index.rows)


def full_decode(path: Path) -> int:
    n = 0
    with path.open("rb") as fh:
        for line in fh:
            if not line.strip():
                continue
            row = orjson.loads(line)
            for key in ("task", "trajectory", "ground_truth", "extras"):
                if isinstance(row.get(key), str):
                    orjson.loads(row[key])
            n += 1
    return n


def best_rate(fn, path: Path, repeats: int) -> tuple[float, int]:
    best, count = float("inf"), 0
    for _ in range(repeats):
        t0 = time.perf_counter()
        count = fn(path)
        best = min(best, time.perf_counter() - t0)
    return count / best, count


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--path", type=Path, help="an existing release JSONL (default: build one)")
    ap.add_argument("--rows", type=int, default=20_000, help="rows to build (default 20,000)")
    ap.add_argument("--image-kb", type=int, default=0, help="inline image size per row, KiB")
    ap.add_argument("--repeats", type=int, default=3, help="best of N runs (default 3)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="whenpro-bench-") as tmp:
        path = args.path or build(Path(tmp), args.rows, args.image_kb)
        size = path.stat().st_size
        full_decode(path)  # warm the page cache for both contenders
        decodes = wj.STATS["trajectory_decodes"]
        lazy, n = best_rate(lazy_index, path, args.repeats)
        assert wj.STATS["trajectory_decodes"] == decodes
        full, n2 = best_rate(full_decode, path, args.repeats)
        assert n == n2
        print(f"file: {path} ({n:,} rows, {size / 2**20:,.1f} MiB)")
        print(f"lazy index (whenpro row_index):          {lazy:12,.0f} rows/s")
        print(f"full decode (orjson, twice-decoded rows): {full:12,.0f} rows/s   [baseline]")
        print(f"ratio lazy / full: {lazy / full:.1f}x")


if __name__ == "__main__":
    main()
