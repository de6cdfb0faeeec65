"""Verdicts saved next to their trace so they reopen with it (issue: attribution in
the TUI keeps several verdicts per trace side by side).

Verdicts of ``trace.json`` live in ``trace.json.verdicts.jsonl`` beside it: append-only
JSON lines ``{"key", "trace_id", "saved_at", "attribution"}``, appended through the one
JSON-lines log (:mod:`whenpro_core.storage.jsonl_log`: locked, fsync-ed); a torn last
line (a crash mid-write) is skipped on read and cut off by the next save. When the
trace's folder is not writable, the file goes to
``<user data dir>/verdicts/<hash of the trace path>.jsonl`` instead.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import orjson
import platformdirs

from whenpro_core.errors import WhenproError
from whenpro_core.formats.whenpro_files import is_verdicts_head
from whenpro_core.storage import jsonio, jsonl_log
from whenpro_core.trace.model import Attribution, Trace


def _data_dir() -> Path:
    env = os.environ.get("WHENPRO_DATA_DIR")
    if env:
        return Path(env)

    return Path(platformdirs.user_data_dir("whenpro"))


def verdicts_path(trace: Trace) -> Path | None:
    """Where the verdicts of ``trace`` are stored (``None`` for a trace with no file)."""
    if not trace.source.path:
        return None
    src = Path(trace.source.path).resolve()
    beside = src.with_name(src.name + ".verdicts.jsonl")
    if os.access(src.parent, os.W_OK) and (not beside.exists() or os.access(beside, os.W_OK)):
        return beside
    digest = hashlib.sha256(str(src).encode()).hexdigest()[:24]
    return _data_dir() / "verdicts" / f"{digest}.jsonl"


def _key(trace: Trace) -> str:
    return trace.source.key or trace.id


def save_verdict(trace: Trace, verdict: Attribution) -> Path | None:
    """Append ``verdict`` to the trace's verdict file (one locked, fsync-ed line; a
    torn last line left by a killed write is cut off first:
    :func:`whenpro_core.storage.jsonl_log.append`). Returns the file, or ``None`` when the trace has no file.

    Only whenpro's own sidecar is appended to (recognised by its content, as listings
    do: :func:`~whenpro_core.formats.whenpro_files.is_verdicts_head`; an empty file
    counts as one). Raises WhenproError naming the file when something else has that
    name, or it cannot be written; nothing is written then.
    """
    path = verdicts_path(trace)
    if path is None:
        return None
    _check_own_sidecar(path)
    record = {
        "key": _key(trace),
        "trace_id": trace.id,
        "saved_at": time.time(),
        "attribution": verdict.model_dump(mode="json"),
    }
    try:
        jsonl_log.append(path, record)
    except OSError as exc:
        raise WhenproError(f"cannot write verdict: {exc.strerror or exc}", path=path) from None
    return path


def _check_own_sidecar(path: Path) -> None:
    """WhenproError unless ``path`` is missing, empty or a verdicts file whenpro wrote."""
    if not os.path.lexists(path):
        return
    if path.is_dir():
        raise WhenproError("a folder is in the place of the verdicts file", path=path)
    try:
        with path.open("rb") as fh:
            head = fh.read(64 * 1024)
    except OSError as exc:
        raise WhenproError(f"cannot read verdicts file: {exc.strerror or exc}", path=path) from None
    if head.strip() and not is_verdicts_head(head):
        raise WhenproError(
            "not a whenpro verdicts file, left untouched", path=path, expected="verdict lines written by whenpro"
        )


def load_verdicts(trace: Trace, problems: list[str] | None = None) -> list[Attribution]:
    """Saved verdicts of ``trace``, oldest first; unreadable lines are skipped, and
    described in ``problems`` when given (``"<file>:<line>: not a verdict record"``).

    Raises:
        OSError: the file exists but cannot be read.
    """
    path = verdicts_path(trace)
    if path is None or not path.is_file():
        return []
    out = []
    for number, line in enumerate(path.read_bytes().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = jsonio.loads(line)
            if rec.get("key") == _key(trace):
                out.append(Attribution.model_validate(rec["attribution"]))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
            if problems is not None:
                problems.append(f"{path}:{number}: not a verdict record")
            continue
    return out


#: What makes two verdicts one: protocol, model, gold setting, agent, step, mode, reason.
VerdictKey = tuple[str, str, bool, str | None, str | None, str | None, str | None]


def _verdict_key(v: Attribution) -> VerdictKey:
    """Protocol, model and gold setting, and the answer (who, when, what, why)."""
    return (v.protocol, v.model, v.with_gold, v.agent, v.step, v.mode, v.reason)


def same_verdict(a: Attribution, b: Attribution) -> bool:
    """Two verdicts are one when they come from the same protocol, model and gold
    setting and give the same answer (agent, step, mode, reason); usage, confidence
    and timing may differ (a rerun that changes nothing)."""
    return _verdict_key(a) == _verdict_key(b)


def distinct_verdicts(verdicts: list[Attribution]) -> list[Attribution]:
    """``verdicts`` without repeats (:func:`same_verdict`), each kept where it first
    appears: a file from repeated runs may hold one verdict many times."""
    first: dict[VerdictKey, Attribution] = {}
    for v in verdicts:
        first.setdefault(_verdict_key(v), v)
    return list(first.values())
