"""Saved verdicts, so they reopen with their trace (issue: attribution in the TUI keeps
several verdicts per trace side by side), kept in whenpro's own folder (issue 32: never
inside another tool's folder, such as ``~/.claude``, or a dataset).

Where: the *verdicts folder* (:func:`verdicts_dir`): ``--verdicts-dir`` (which sets
``$WHENPRO_VERDICTS_DIR`` for this process and the apps it starts), else the
``verdicts_dir`` setting (``$WHENPRO_VERDICTS_DIR`` or ``config.toml``), else
``<user data dir>/verdicts`` (``~/.local/share/whenpro/verdicts`` on Linux). A verdict is
appended to two files there, keyed by the trace's path and by its content:

* ``<sha256 of the resolved path>[:24].jsonl``: found again while the file grows (a live
  session) or is edited;
* ``by-content/<sha256 of the file's bytes>[:32].jsonl``: found again when the file is moved,
  renamed or copied.

Each file holds append-only JSON lines ``{"key", "trace_id", "saved_at", "attribution"}``,
appended through the one JSON-lines log (:mod:`whenpro_core.storage.jsonl_log`: locked,
fsync-ed); a torn last line (a crash mid-write) is skipped on read and cut off by the next
save. Reading also takes the sidecar ``<trace>.verdicts.jsonl`` that older versions wrote
beside the trace (never written any more). A verdict in several of these files is read once.
"""

from __future__ import annotations

import hashlib
import os
import time
from pathlib import Path

import orjson

from whenpro_core.errors import ConfigError, WhenproError
from whenpro_core.formats.whenpro_files import VERDICTS_SUFFIX, is_verdicts_head
from whenpro_core.media.cache import file_digest
from whenpro_core.settings_inputs import settings_given
from whenpro_core.storage import jsonio, jsonl_log, paths
from whenpro_core.trace.model import Attribution, Trace

#: The environment variable of the verdicts folder (also the ``verdicts_dir`` setting's).
VERDICTS_DIR_ENV = "WHENPRO_VERDICTS_DIR"


def use_verdicts_dir(directory: str | Path) -> None:
    """``--verdicts-dir``: keep verdicts in ``directory`` in this process and the apps it
    starts (``view --serve`` sessions), by setting ``$WHENPRO_VERDICTS_DIR``."""
    os.environ[VERDICTS_DIR_ENV] = str(Path(directory).expanduser().resolve())


def verdicts_dir() -> Path:
    """The verdicts folder: ``$WHENPRO_VERDICTS_DIR``, else ``verdicts_dir`` in
    ``config.toml``, else ``<user data dir>/verdicts``. A broken settings input (which the
    commands that need settings report) falls back to the variable, then the default."""
    if settings_given():
        from whenpro_core.config import load_settings  # pydantic-settings: only when there are settings

        try:
            chosen = load_settings().verdicts_dir
        except ConfigError:
            chosen = os.environ.get(VERDICTS_DIR_ENV)
        if chosen:
            return Path(chosen).expanduser()
    return paths.data_dir() / "verdicts"


def _source(trace: Trace) -> Path | None:
    return Path(trace.source.path).resolve() if trace.source.path else None


def verdicts_path(trace: Trace) -> Path | None:
    """The file the verdicts of ``trace`` are appended to, keyed by its path (``None``
    for a trace with no file)."""
    src = _source(trace)
    if src is None:
        return None
    return verdicts_dir() / f"{hashlib.sha256(str(src).encode()).hexdigest()[:24]}.jsonl"


def _content_path(trace: Trace) -> Path | None:
    """The file keyed by the trace file's content (``None``: no file, or unreadable)."""
    src = _source(trace)
    try:
        digest = file_digest(src) if src is not None else None
    except OSError:
        return None
    return verdicts_dir() / "by-content" / f"{digest[:32]}.jsonl" if digest else None


def _legacy_sidecar(trace: Trace) -> Path | None:
    """``<trace>.verdicts.jsonl`` beside the trace, where older versions saved."""
    src = _source(trace)
    return src.with_name(src.name + VERDICTS_SUFFIX) if src is not None else None


def verdict_files(trace: Trace) -> list[Path]:
    """The files verdicts of ``trace`` are read from: the old sidecar when it is a verdicts
    file whenpro wrote (anything else of that name is someone else's), then the files keyed
    by path and by content (whether they exist or not)."""
    legacy = _legacy_sidecar(trace)
    own_legacy = [legacy] if legacy is not None and legacy.is_file() and _is_own_file(legacy) else []
    return own_legacy + [p for p in (verdicts_path(trace), _content_path(trace)) if p is not None]


def _is_own_file(path: Path) -> bool:
    """Does ``path`` start with whenpro's verdict lines (an unreadable file: no)?"""
    try:
        with path.open("rb") as fh:
            return is_verdicts_head(fh.read(64 * 1024))
    except OSError:
        return False


def _key(trace: Trace) -> str:
    return trace.source.key or trace.id


def save_verdict(trace: Trace, verdict: Attribution) -> Path | None:
    """Append ``verdict`` to the trace's files in the verdicts folder (keyed by path and by
    content; one locked, fsync-ed line each; a torn last line left by a killed write is cut
    off first: :func:`whenpro_core.storage.jsonl_log.append`). Returns the path-keyed file,
    or ``None`` when the trace has no file. Nothing is written beside the trace.

    Only whenpro's own verdict files are appended to (recognised by their content, as
    listings do: :func:`~whenpro_core.formats.whenpro_files.is_verdicts_head`; an empty
    file counts as one). Raises WhenproError naming the file when something else has that
    name, or it cannot be written; nothing is written then.
    """
    path = verdicts_path(trace)
    if path is None:
        return None
    targets = [p for p in (path, _content_path(trace)) if p is not None]
    for target in targets:
        _check_own_sidecar(target)
    record = {
        "key": _key(trace),
        "trace_id": trace.id,
        "saved_at": time.time(),
        "attribution": verdict.model_dump(mode="json"),
    }
    for target in targets:
        try:
            jsonl_log.append(target, record)
        except OSError as exc:
            raise WhenproError(f"cannot write verdict: {exc.strerror or exc}", path=target) from None
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
    """Saved verdicts of ``trace`` from every file of :func:`verdict_files`, oldest first,
    each record once (the files keyed by path and by content hold the same lines);
    unreadable lines are skipped, and described in ``problems`` when given
    (``"<file>:<line>: not a verdict record"``).

    Raises:
        OSError: a file exists but cannot be read.
    """
    seen: set[bytes] = set()
    dated: list[tuple[float, int, Attribution]] = []
    for path in verdict_files(trace):
        if path.is_file():
            dated += _read_file(path, _key(trace), seen, problems, first=len(dated))
    return [v for _at, _n, v in sorted(dated, key=lambda d: (d[0], d[1]))]


def _read_file(
    path: Path, key: str, seen: set[bytes], problems: list[str] | None, first: int
) -> list[tuple[float, int, Attribution]]:
    """``(saved_at, order, verdict)`` of the records of ``key`` in ``path`` not in ``seen``
    (which grows); ``order`` counts on from ``first``. Raises OSError when unreadable."""
    out: list[tuple[float, int, Attribution]] = []
    for number, line in enumerate(path.read_bytes().splitlines(), start=1):
        line = line.strip()
        if not line or line in seen:
            continue
        seen.add(line)
        try:
            rec = jsonio.loads(line)
            if rec.get("key") == key:
                verdict = Attribution.model_validate(rec["attribution"])
                out.append((float(rec.get("saved_at") or 0), first + len(out), verdict))
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError):
            if problems is not None:
                problems.append(f"{path}:{number}: not a verdict record")
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
