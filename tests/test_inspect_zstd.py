"""Inspect AI logs as the installed inspect-ai writes them (issue 17): ``.eval`` ZIPs whose
members are Zstandard-compressed (ZIP method 93). Fresh logs are written by
tests/support/inspect_logs.py in its own process (a finished run and an errored one on
``mockllm/model``); they open in ``info``, ``ls``, ``convert`` and the TUI with the message
counts read from the archive here. A member that expands past the size limit is refused
with one line, whatever size the archive claims."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import zipfile
import zlib
from pathlib import Path

import pytest
import zstandard

from tests.conftest import REPO, settle
from whenpro_core.errors import TraceFormatError
from whenpro_core.formats import inspect_ai, load_trace
from whenpro_core.trace.model import Outcome

pytest.importorskip("inspect_ai", reason="inspect-ai (a dev dependency) writes the logs")


@pytest.fixture(scope="module")
def fresh_logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``{task name: .eval path}`` written by the installed inspect-ai."""
    out_dir = tmp_path_factory.mktemp("inspect-logs")
    done = subprocess.run(
        [sys.executable, "-m", "tests.support.inspect_logs", str(out_dir)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    logs = {}
    for line in done.stdout.splitlines():
        task, _status, location = line.split(" ", 2)
        logs[task] = Path(location)
    assert set(logs) == {"finished", "errored"}
    return logs


def raw_sample(path: Path) -> dict:
    """The one sample of a log, read with zstandard directly (not through whenpro)."""
    with zipfile.ZipFile(path) as zf:
        info = next(i for i in zf.infolist() if i.filename.startswith("samples/"))
        assert info.compress_type == 93  # what inspect-ai 0.3.x writes, and what broke whenpro
        with open(path, "rb") as fh:
            fh.seek(info.header_offset)
            local = fh.read(30)
            name_len, extra_len = struct.unpack("<HH", local[26:30])
            fh.seek(info.header_offset + 30 + name_len + extra_len)
            data = zstandard.ZstdDecompressor().decompressobj().decompress(fh.read(info.compress_size))
    return json.loads(data)


def whenpro(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", *args], cwd=REPO, capture_output=True, text=True, timeout=300
    )


@pytest.mark.parametrize("task", ["finished", "errored"])
def test_fresh_logs_open_in_info_ls_and_convert(fresh_logs: dict[str, Path], task: str, tmp_path: Path) -> None:
    path = fresh_logs[task]
    sample = raw_sample(path)
    n = len(sample["messages"])
    info = whenpro("info", str(path))
    assert info.returncode == 0, info.stderr
    assert any(line.split()[:2] == ["steps", str(n)] for line in info.stdout.splitlines()), info.stdout
    outcome = "failure" if sample.get("error") else "success"
    assert any(line.split()[:2] == ["outcome", outcome] for line in info.stdout.splitlines()), info.stdout
    ls = whenpro("ls", str(path))
    assert ls.returncode == 0 and f" {n} step" in ls.stdout, ls.stdout + ls.stderr
    out = tmp_path / "t.json"
    conv = whenpro("convert", str(path), str(out))
    assert conv.returncode == 0, conv.stderr
    native = json.loads(out.read_text(encoding="utf-8"))
    assert [s["content"] for s in native["steps"]] == [
        m["content"] if isinstance(m["content"], str) else "\n".join(p["text"] for p in m["content"])
        for m in sample["messages"]
    ]


def test_fresh_logs_read_in_process(fresh_logs: dict[str, Path]) -> None:
    finished = load_trace(fresh_logs["finished"])
    assert finished.outcome == Outcome.success
    assert finished.final_answer == raw_sample(fresh_logs["finished"])["output"]["choices"][0]["message"]["content"]
    errored = load_trace(fresh_logs["errored"])
    assert errored.outcome == Outcome.failure


async def test_tui_opens_a_fresh_log(fresh_logs: dict[str, Path]) -> None:
    from whenpro_tui.app import WhenproApp
    from whenpro_tui.screens.trace import TraceScreen
    from whenpro_tui.widgets.step_list import StepList

    path = fresh_logs["finished"]
    app = WhenproApp(f"{path}#s1_epoch_1", cursor_blink=False)
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert isinstance(app.screen, TraceScreen)
        assert app.screen.query_one(StepList).row_count == len(raw_sample(path)["messages"])


# --------------------------------------------------------------------------- made-up archives


def zstd_zip(path: Path, members: dict[str, bytes], claimed: dict[str, int] | None = None) -> None:
    """A ZIP whose members are Zstandard-compressed (method 93), written by hand (zipfile
    cannot write that method before 3.14). ``claimed`` overrides the expanded size a
    member's headers state (a lying archive)."""
    claimed = claimed or {}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as zf:
        for name, data in members.items():
            zf.writestr(name, zstandard.ZstdCompressor().compress(data))
    blob = bytearray(path.read_bytes())
    sizes = {name.encode(): (claimed.get(name, len(data)), zlib.crc32(data)) for name, data in members.items()}
    # (signature, offset of the method field, of the name length, of the name): APPNOTE 4.3.7 / 4.3.12
    for sig, method_at, len_at, name_at in ((b"PK\x03\x04", 8, 26, 30), (b"PK\x01\x02", 10, 28, 46)):
        pos = blob.find(sig)
        while pos >= 0:
            name_len = struct.unpack_from("<H", blob, pos + len_at)[0]
            name = bytes(blob[pos + name_at : pos + name_at + name_len])
            size, crc = sizes[name]
            struct.pack_into("<H", blob, pos + method_at, 93)
            struct.pack_into("<I", blob, pos + method_at + 6, crc)
            struct.pack_into("<I", blob, pos + method_at + 14, size)
            pos = blob.find(sig, pos + 4)
    path.write_bytes(bytes(blob))


def test_a_member_expanding_past_the_limit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    header = json.dumps({"version": 2, "status": "success", "eval": {"task": "t"}, "pad": "x" * 5000}).encode()
    path = tmp_path / "bomb.eval"
    zstd_zip(path, {"header.json": header, "samples/1_epoch_1.json": b"{}"}, claimed={"header.json": 10})
    assert zipfile.ZipFile(path).getinfo("header.json").file_size == 10  # the archive lies
    monkeypatch.setattr(inspect_ai, "MAX_MEMBER_BYTES", 1000)
    with pytest.raises(TraceFormatError) as err:
        load_trace(path)
    line = err.value.one_line()
    assert str(path) in line and "header.json" in line and "expands past" in line


def test_a_corrupt_zstd_member_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.eval"
    zstd_zip(path, {"header.json": b'{"version": 2}'})
    blob = bytearray(path.read_bytes())
    frame = blob.find(b"\x28\xb5\x2f\xfd")  # the Zstandard frame magic
    blob[frame + 4 : frame + 12] = b"\xff" * 8
    path.write_bytes(bytes(blob))
    with pytest.raises(TraceFormatError) as err:
        load_trace(path)
    assert "cannot read header.json" in err.value.one_line() and "\n" not in err.value.one_line()
