"""Object budgets while parsing ``.eval`` members (issue 33, item 7): a 123 KB archive
whose 120 MiB sample is millions of empty lists is within the byte caps, but parsing it
made ``ls`` take 68 s and 5.8 GB. A member holding more JSON arrays and objects than
:data:`~whenpro_core.formats.inspect_ai.MAX_MEMBER_CONTAINERS` is left out before it is
parsed (one warning line naming it), and the other samples import; brackets inside
strings do not count. Nesting is held to :data:`~whenpro_core.storage.jsonio.MAX_DEPTH`
by the parser itself."""

from __future__ import annotations

import json
import resource
import zipfile
from pathlib import Path

from tests.support.cli import run_whenpro
from tests.test_inspect_ai import HEADER, _sample
from whenpro_core.formats import inspect_ai, load_traces
from whenpro_core.storage import jsonio

#: The address space the ``ls`` below may take: the unbounded parse needed 5.8 GB.
LIMIT_BYTES = 2 << 30


def lists_bomb(path: Path, mib: int) -> None:
    """An .eval whose sample 2 is ``mib`` MiB of ``[[],[],...]``, written in 1 MiB chunks."""
    chunk = b"[]," * ((1 << 20) // 3)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        zf.writestr("header.json", HEADER)
        zf.writestr("samples/1_epoch_1.json", _sample(1))
        with zf.open("samples/2_epoch_1.json", "w", force_zip64=True) as fh:
            fh.write(b'{"id": 2, "epoch": 1, "messages": [], "pad": [')
            for _ in range(mib):
                fh.write(chunk)
            fh.write(b"[]]}")
        zf.writestr("samples/3_epoch_1.json", _sample(3))


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (LIMIT_BYTES, LIMIT_BYTES))


def test_a_member_of_millions_of_empty_lists_is_left_out_before_parsing(tmp_path: Path) -> None:
    p = tmp_path / "lists.eval"
    lists_bomb(p, 120)
    assert p.stat().st_size < 1_000_000
    out = run_whenpro("ls", str(p), timeout=600, preexec_fn=_limit_memory)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.count("lists.eval#") == 2, out.stdout
    assert "samples/2_epoch_1.json holds more than 2,000,000 JSON arrays and objects; not read" in out.stderr
    assert out.stderr.startswith("whenpro: warning:") and out.stderr.count("\n") == 1, out.stderr


def test_brackets_inside_strings_do_not_count(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setattr(inspect_ai, "MAX_MEMBER_CONTAINERS", 100)
    text = "[{" * 5_000  # brackets in a message, not structure
    p = tmp_path / "text.eval"
    sample = {"id": 1, "epoch": 1, "messages": [{"role": "user", "content": text}], "scores": {}}
    with zipfile.ZipFile(p, "w") as zf:
        zf.writestr("header.json", HEADER)
        zf.writestr("samples/1_epoch_1.json", json.dumps(sample))
    (trace,) = load_traces(p)
    assert trace.task.query == text or trace.steps[0].content == text
    assert jsonio.containers(json.dumps(sample).encode()) == 4  # the sample, messages, the message, scores
