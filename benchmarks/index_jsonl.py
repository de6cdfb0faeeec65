"""Lazy JSONL row index vs full decoding, on a Who&When Pro release file.

Builds a large ``data/text.jsonl`` from the real rows of
``../shared/real_traces/who-when-pro-jsonl`` (ids rewritten so every row is distinct),
or takes an existing JSONL, then prints rows/s for:

* **first listing** — :func:`whenpro_core.formats.whowhen_pro_jsonl.row_index` with no
  index in memory or saved: a scan (mmap, line boundaries, id/framework/benchmark from
  each line's head, the ground truth from the small string near its end; no trajectory
  decoded), which saves the index;
* **later listing** — the same call in a "new process" (in-memory cache cleared): the
  saved index is read, nothing scanned;
* **full decode** (baseline) — ``orjson.loads`` of every line plus ``orjson.loads`` of
  its ``task``, ``trajectory``, ``ground_truth`` and ``extras`` strings;

and the ratios, in one run, next to the floor of a first listing written in Python: the
line ends found with an ``mmap.find`` loop and nothing else. ``--image-kb K`` adds a K-KiB inline base64 image to every
row's trajectory, as in the multi-GB ``image.jsonl``. ``--image-gb G`` then also writes a
synthetic G-GiB ``image.jsonl`` under the temp folder (rows of ``--image-row-mb`` MiB of
base64; scaled down, saying so, when the disk is short), runs ``whenpro ls`` on it twice
in a child process (first: scan; then: saved index), prints wall time and peak RSS, and
deletes it.

Usage::

    /work/venv/bin/python benchmarks/index_jsonl.py                 # 20,000 rows
    /work/venv/bin/python benchmarks/index_jsonl.py --rows 50000 --image-kb 64
    /work/venv/bin/python benchmarks/index_jsonl.py --path data/image.jsonl
    /work/venv/bin/python benchmarks/index_jsonl.py --image-gb 5  # + whenpro ls on 5 GiB
"""

from __future__ import annotations

import argparse
import base64
import mmap
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

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


def _saved(path: Path) -> Path:
    return wj.saved_index_path(wj.file_key(path))


def lazy_index(path: Path) -> int:
    """First listing: no index in memory or saved, so the file is scanned (and the index saved)."""
    wj._CACHE.clear()
    _saved(path).unlink(missing_ok=True)
    index = wj.row_index(path)
    assert all(r.error is None for r in index.rows), "bad rows in the benchmark file"
    return len(index.rows)


def saved_index(path: Path) -> int:
    """A later listing (a new process): nothing in memory, the saved index read."""
    wj._CACHE.clear()
    scans = wj.STATS["index_scans"]
    index = wj.row_index(path)
    assert wj.STATS["index_scans"] == scans, "the saved index was not used"
    return len(index.rows)


def build_image(path: Path, gib: float, row_mib: float) -> int:
    """A synthetic ``image.jsonl`` of about ``gib`` GiB: release rows whose last step holds
    a ``row_mib`` MiB inline base64 image (one random blob, ids distinct). Returns rows."""
    real = [
        orjson.loads(line) for line in (REAL / "who-when-pro-jsonl" / "data" / "text.jsonl").read_bytes().splitlines()
    ]
    blob = base64.b64encode(os.urandom(int(row_mib * 2**20 * 3 / 4))).decode()
    rows = max(1, int(gib * 2**30 / (len(blob) + 12_000)))
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        for n in range(rows):
            row = dict(real[n % len(real)], id=f"{real[n % len(real)]['id']}__img{n:06d}")
            traj = orjson.loads(row["trajectory"])
            traj[-1]["observation_images"] = [{"__type__": "PIL.Image", "data": blob}]
            row["trajectory"] = orjson.dumps(traj).decode()
            fh.write(orjson.dumps(row) + b"\n")
    return rows


def run_ls(path: Path, cache: Path) -> tuple[float, float, int]:
    """``whenpro ls PATH`` in a child process: (wall seconds, peak RSS MiB, rows listed)."""
    env = dict(os.environ, WHENPRO_CACHE_DIR=str(cache), PYTHONPATH=str(ROOT))
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "whenpro_core.cli", "ls", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=ROOT,
    )
    out = proc.stdout.read() if proc.stdout else b""
    _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"whenpro ls failed (exit {proc.returncode})")
    return seconds, usage.ru_maxrss / 1024, out.count(b"__img")


def image_case(gib: float, row_mib: float) -> None:
    """Issue 18: ``whenpro ls`` on a multi-GB image.jsonl in seconds and bounded memory."""
    free = shutil.disk_usage(tempfile.gettempdir()).free / 2**30
    if free < gib + 2:
        scaled = max(0.1, free - 2)
        print(
            f"only {free:.1f} GiB free in {tempfile.gettempdir()}: image case scaled down {gib:g} -> {scaled:.1f} GiB"
        )
        gib = scaled
    with tempfile.TemporaryDirectory(prefix="whenpro-image-") as tmp:
        path = Path(tmp) / "ds" / "data" / "image.jsonl"
        t0 = time.perf_counter()
        rows = build_image(path, gib, row_mib)
        made = time.perf_counter() - t0
        size = path.stat().st_size
        print(
            f"image.jsonl: {rows:,} rows of ~{row_mib:g} MiB base64, {size / 2**30:.2f} GiB (written in {made:.0f} s)"
        )
        for what in ("first ls (scan, index saved)", "later ls (saved index)"):
            seconds, rss, listed = run_ls(path, Path(tmp) / "cache")
            print(f"  whenpro ls, {what:30} {seconds:6.2f} s   peak RSS {rss:6.0f} MiB   {listed:,} rows listed")
        print(f"  (file size {size / 2**20:,.0f} MiB; the file is deleted now)")


def newline_scan(path: Path) -> int:
    """The floor of any first listing from Python: every line end found (an ``mmap.find``
    loop over the mapped file, memchr speed), nothing read from the lines."""
    n = pos = 0
    with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        find, size = mm.find, len(mm)
        while pos < size:
            nl = find(b"\n", pos)
            n += nl != pos
            pos = size if nl < 0 else nl + 1
    return n


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


def best_rate(fn, path: Path, repeats: int) -> tuple[float, float, int]:
    """Rows/s of ``fn`` by wall time and by this process's CPU time (each the best of
    ``repeats``; on a shared machine the CPU rates are the steadier), and the row count."""
    best, best_cpu, count = float("inf"), float("inf"), 0
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        count = fn(path)
        best, best_cpu = min(best, time.perf_counter() - t0), min(best_cpu, time.process_time() - c0)
    return count / best, count / max(best_cpu, 1e-9), count


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--path", type=Path, help="an existing release JSONL (default: build one)")
    ap.add_argument("--rows", type=int, default=20_000, help="rows to build (default 20,000)")
    ap.add_argument("--image-kb", type=int, default=0, help="inline image size per row, KiB")
    ap.add_argument("--repeats", type=int, default=3, help="best of N runs (default 3)")
    ap.add_argument("--image-gb", type=float, default=0, help="also list a synthetic image.jsonl of this size (GiB)")
    ap.add_argument("--image-row-mb", type=float, default=4, help="base64 image per row in that file, MiB (default 4)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="whenpro-bench-") as tmp:
        os.environ["WHENPRO_CACHE_DIR"] = str(Path(tmp) / "cache")  # the saved index goes here, not the user's cache
        path = args.path or build(Path(tmp), args.rows, args.image_kb)
        size = path.stat().st_size
        full_decode(path)  # warm the page cache for both contenders
        decodes = wj.STATS["trajectory_decodes"]
        lazy, lazy_cpu, n = best_rate(lazy_index, path, args.repeats)
        saved, saved_cpu, n3 = best_rate(saved_index, path, args.repeats)
        assert wj.STATS["trajectory_decodes"] == decodes
        full, full_cpu, n2 = best_rate(full_decode, path, args.repeats)
        scan, scan_cpu, n4 = best_rate(newline_scan, path, args.repeats)
        assert n == n2 == n3 == n4
        print(f"file: {path} ({n:,} rows, {size / 2**20:,.1f} MiB); rows/s by wall time, then by CPU time")
        for what, wall, cpu in (
            ("first listing (scan newlines + row heads):", lazy, lazy_cpu),
            ("later listing (saved index, new process): ", saved, saved_cpu),
            ("[floor] line ends found, nothing read:    ", scan, scan_cpu),
        ):
            print(
                f"{what} {wall:12,.0f} x{wall / full:5.1f}   CPU {cpu:12,.0f} x{cpu / full_cpu:5.1f}   vs full decode"
            )
        print(
            f"full decode (orjson, twice-decoded rows):   {full:12,.0f}"
            f"         CPU {full_cpu:12,.0f}          [baseline]"
        )
    if args.image_gb:
        image_case(args.image_gb, args.image_row_mb)


if __name__ == "__main__":
    main()
