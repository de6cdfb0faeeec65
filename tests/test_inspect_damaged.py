"""A damaged ``.eval`` member (a broken deflate stream) is left out with one warning, the
other samples are read; every command exits 2 with one line when nothing is readable."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import pytest

from support.cli import one_line_error, run_whenpro
from whenpro_core.errors import TraceFormatError
from whenpro_core.formats import load_trace, load_traces

HEADER = json.dumps({"version": 2, "status": "success", "eval": {"task": "t"}}).encode()
REAL_EVAL = "inspect-ai-logs/tests/log/test_eval_log/log_formats.eval"


def _sample(sid: int) -> bytes:
    return json.dumps({"id": sid, "epoch": 1, "messages": [{"role": "user", "content": f"task {sid} " * 50}]}).encode()


def _break_member(path: Path, name: str) -> None:
    """Overwrite the compressed bytes of member ``name`` with 0xff (deflate block type 3,
    which zlib refuses: ``invalid block type``)."""
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(name)
    data = bytearray(path.read_bytes())
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    data[start : start + info.compress_size] = b"\xff" * info.compress_size
    path.write_bytes(bytes(data))


def _flipped_real(real_traces: Path, out: Path) -> Path:
    """The real one-sample log with bytes 1365..1404 (inside its sample's deflate stream)
    inverted: zlib says ``invalid distance too far back``."""
    data = bytearray((real_traces / REAL_EVAL).read_bytes())
    for k in range(1365, 1405):
        data[k] ^= 0xFF
    out.write_bytes(bytes(data))
    return out


@pytest.fixture
def half_broken(tmp_path: Path) -> Path:
    p = tmp_path / "half.eval"
    with zipfile.ZipFile(p, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("header.json", HEADER)
        for i in (1, 2, 3):
            zf.writestr(f"samples/{i}_epoch_1.json", _sample(i))
    _break_member(p, "samples/2_epoch_1.json")
    return p


def test_a_broken_deflate_member_is_left_out_with_one_warning(half_broken):
    traces = load_traces(half_broken)
    assert [t.source.key for t in traces] == ["1_epoch_1", "3_epoch_1"]
    assert "cannot read samples/2_epoch_1.json" in traces[0].extras["whenpro_warnings"][0]
    with pytest.raises(TraceFormatError, match="cannot read samples/2_epoch_1.json"):
        load_trace(f"{half_broken}#2_epoch_1")
    out = run_whenpro("ls", str(half_broken))
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert out.stdout.count("\n") == 2
    assert out.stderr.count("\n") == 1 and "cannot read samples/2_epoch_1.json" in out.stderr


def test_a_damaged_real_eval_fails_in_one_line_and_a_folder_still_lists(real_traces, tmp_path):
    bad = _flipped_real(real_traces, tmp_path / "flip.eval")
    for args in (("ls", str(bad)), ("info", str(bad)), ("attribute", f"{bad}#1_epoch_1", "--protocol", "heuristic")):
        out = run_whenpro(*args)
        assert one_line_error(out), (args, out.returncode, out.stderr)
        assert "cannot read samples/1_epoch_1.json" in out.stderr
    good = tmp_path / "good.eval"
    good.write_bytes((real_traces / REAL_EVAL).read_bytes())
    out = run_whenpro("ls", str(tmp_path))
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    assert "good.eval" in out.stdout and "flip.eval" not in out.stdout
    assert "cannot read samples/1_epoch_1.json" in out.stderr
