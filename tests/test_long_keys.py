"""Trace keys of any length (issue 33, item 5): an Inspect sample id of 300 characters
made ``convert`` stop and ``bench`` exit 2 with nothing run ("File name too long": the
``file#key`` ref was checked as a path, key and all). A ref's key part never touches the
file system, and a long key names files by a shortened, hashed form that stays unique."""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path

from tests.support.cli import run_whenpro
from whenpro_core.formats import load_trace
from whenpro_core.formats.registry import split_ref
from whenpro_core.storage.fsutil import safe_name

LONG = "x" * 300


def sample(sid: str) -> bytes:
    return json.dumps(
        {
            "id": sid,
            "epoch": 1,
            "messages": [{"role": "user", "content": "2 + 2?"}, {"role": "assistant", "content": "4"}],
            "scores": {"s": {"value": "C"}},
        }
    ).encode()


def eval_log(path: Path) -> list[str]:
    """An .eval of 12 samples, three of them with 300-character ids; returns the keys."""
    ids = [f"s{i}-{LONG}" if i % 4 == 0 else f"s{i}" for i in range(12)]
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("header.json", json.dumps({"version": 2, "status": "success", "eval": {"task": "t"}}))
        for sid in ids:
            zf.writestr(f"samples/{sid}_epoch_1.json", sample(sid))
    return [f"{sid}_epoch_1" for sid in ids]


def test_a_ref_with_a_long_key_is_split_without_the_file_system(tmp_path: Path) -> None:
    log = tmp_path / "long.eval"
    keys = eval_log(log)
    assert split_ref(f"{log}#{keys[0]}") == (log, keys[0])
    assert split_ref(f"{tmp_path / 'missing.eval'}#{keys[0]}") == (tmp_path / "missing.eval", keys[0])
    hashed = tmp_path / "a#b.json"  # a '#' in an existing file's name is kept
    hashed.write_text("{}")
    assert split_ref(hashed) == (hashed, None)
    assert load_trace(f"{log}#{keys[0]}").source.key == keys[0]


def test_long_names_are_shortened_with_a_hash_and_stay_distinct() -> None:
    a, b = safe_name("s0-" + LONG + "-a"), safe_name("s0-" + LONG + "-b")
    assert a != b and len(a.encode()) <= 150 and len(b.encode()) <= 150
    assert a.startswith("s0-xxx")
    assert safe_name("short-id") == "short-id"


def test_convert_writes_every_trace_of_a_log_with_long_keys(tmp_path: Path) -> None:
    log = tmp_path / "long.eval"
    eval_log(log)
    out = run_whenpro("convert", str(log), str(tmp_path / "out") + os.sep)
    assert out.returncode == 0, out.stderr
    written = sorted((tmp_path / "out").glob("*.json"))
    assert len(written) == 12
    assert all(len(p.name.encode()) <= 255 for p in written)
    assert sum(LONG in load_trace(p).id for p in written) == 3


def test_bench_reads_every_trace_of_a_log_with_long_keys(tmp_path: Path) -> None:
    """The log has no ground truth: bench reads all 12 traces and says there is nothing
    to score (it stopped at the first long key, "File name too long", before)."""
    log = tmp_path / "long.eval"
    eval_log(log)
    out = run_whenpro("bench", str(log), "--out", str(tmp_path / "run"))
    assert "File name too long" not in out.stderr
    assert "12 traces found, 12 without a ground truth" in out.stderr, out.stderr
