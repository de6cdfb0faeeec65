"""Who&When Pro, JSONL release: ``data/{text,image,video}.jsonl`` + ``taxonomy.yaml`` +
``video_assets/`` at the dataset root (docs/architecture.md, 'Formats and step coordinates').

Each line is one trace: ``id, framework, benchmark`` are plain strings and come first;
``task, trajectory, ground_truth, extras`` are JSON *strings* (decoded a second time);
``extras`` merges into the top level; the modality is the file's stem (``image_gui`` ->
image). A decoded row is the per-file document, built by :mod:`.whowhen_pro`.
Frame paths of video rows resolve against ``video_assets/<framework>/``.

``image.jsonl`` is several GB of inline base64, so rows are indexed lazily
(:func:`row_index`): the file is memory-mapped, line boundaries found with
``mmap.find``, ``id/framework/benchmark`` read from the first bytes of each line and the
ground truth from the small ``ground_truth`` string near its end, without decoding the
trajectory (a release-shaped line is read with a few byte searches, :func:`_fast_row`).
The scan releases the pages it has passed, so a multi-GB file is listed in bounded
memory. The index is cached per file version (:data:`FileKey`) in memory and saved in the user
cache folder (``row-index/``), so a later listing of an unchanged file reads the saved
index instead of scanning; opening row *k* is then one seek and one decode.
``step_count`` in listings is None (counting needs a decode).

A row's key is its 1-based line number. A bad line (truncated, not JSON, not UTF-8,
fields of the wrong type) becomes an error summary row naming the file and row; the
walk carries on. The listing checks a row's structure cheaply; a fault deep inside the
trajectory is reported when the row is opened.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import itertools
import mmap
import re
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any, NamedTuple

import orjson

from whenpro_core.errors import TraceFormatError, WhenproError
from whenpro_core.formats.base import FileImporter, LoadContext
from whenpro_core.formats.registry import find_root
from whenpro_core.formats.whowhen_pro import SPLITS, build_trace, modality_of_name, prepare
from whenpro_core.storage import jsonio
from whenpro_core.storage.gcpause import paused_gc
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.coords import small_int
from whenpro_core.trace.gt_map import gt_coord
from whenpro_core.trace.model import Modality, Trace, TraceSummary

FORMAT = "whowhen-pro-jsonl"

#: Decode counters, for tests and benchmarks that prove the listing never decodes a
#: trajectory (``trajectory_decodes``), how many rows were opened (``rows_loaded``) and
#: how many times a file was scanned rather than its saved index read (``index_scans``).
STATS = {"trajectory_decodes": 0, "rows_loaded": 0, "index_scans": 0}

# Possessive runs: fast, and no catastrophic backtracking on an unterminated string.
_STR = rb'"((?:[^"\\\n]++|\\.)*+)"'
_HEAD_RE = re.compile(
    rb'\s*\{\s*"id"\s*:\s*' + _STR + rb'\s*,\s*"framework"\s*:\s*' + _STR + rb'\s*,\s*"benchmark"\s*:\s*' + _STR
)
_TRAJ_RE = re.compile(rb'"trajectory"\s*:\s*(.)', re.DOTALL)
_TASK_RE = re.compile(rb'"task"\s*:\s*(.)', re.DOTALL)
_GT_RE = re.compile(rb'"ground_truth"\s*:\s*(null|"(?:[^"\\\n]++|\\.)*+")', re.DOTALL)
_HEAD_BYTES = 4096
_MAX_HEAD = 1 << 16
_FALLBACK_MAX = 1 << 20  # rows up to this size may be fully parsed when the fast path fails
_ROW_FIELDS = ("task", "trajectory", "ground_truth", "extras")
#: What identifies one version of a file: (absolute path, size, mtime ns, ctime ns). The
#: ctime is set by the system on every change and cannot be put back by the tools that
#: restore an mtime (``cp -p``, ``rsync -t``, ``touch -r``), so new content of the same
#: size under an old mtime still gets a new key.
FileKey = tuple[str, int, int, int]
_CACHE: OrderedDict[FileKey, RowIndex] = OrderedDict()
_CACHE_SIZE = 8


class RowMeta(NamedTuple):
    """One line of the file: its 1-based ``row`` number, byte range ``[start, end)``
    (without the newline), the fields read cheaply, and ``error`` when the line is bad.
    A tuple: the index of a release holds tens of thousands, made in a tight loop."""

    row: int
    start: int
    end: int
    id: str = ""
    framework: str = ""
    benchmark: str = ""
    gt_mode: str | None = None
    gt_step: str | None = None
    problem: TraceFormatError | None = None

    @property
    def error(self) -> str | None:
        """The one-line error of a bad line (``file:row at $.path: what (expected ...)``)."""
        return self.problem.one_line() if self.problem else None


@dataclass
class RowIndex:
    """The rows of one JSONL file (blank lines are skipped; numbers are line numbers)."""

    path: Path
    modality: Modality
    rows: list[RowMeta]

    def find(self, key: str | None) -> RowMeta:
        """The row for ``key``: a 1-based line number, or a trace id; the first row when
        ``key`` is None. TraceFormatError when there is no such row."""
        if not self.rows:
            raise TraceFormatError("file holds no rows", path=self.path, expected="JSONL rows")
        if key is None:
            return self.rows[0]
        n = small_int(key)
        if n is not None:
            for meta in self.rows:
                if meta.row == n:
                    return meta
            if 1 <= n < self.rows[-1].row:  # a line the index skipped
                raise TraceFormatError(
                    f"row {n} is a blank line",
                    path=self.path,
                    expected="a row number of a non-blank line or a trace id",
                )
        else:
            for meta in self.rows:
                if meta.id == key:
                    return meta
        raise TraceFormatError(
            f"no row {key!r} in this file",
            path=self.path,
            expected=f"a row number 1..{self.rows[-1].row} or a trace id",
        )


def _error(
    path: Path, row: int, what: str, expected: str | None = None, json_path: str | None = None
) -> TraceFormatError:
    return TraceFormatError(what, path=path, row=row, json_path=json_path, expected=expected)


def _json_str(raw: bytes) -> str:
    """Decode the inside of a JSON string (fast path: no escapes)."""
    if b"\\" not in raw:
        return raw.decode("utf-8")
    text: str = jsonio.loads(b'"' + raw + b'"')
    return text


@lru_cache(maxsize=4096)
def _gt_listing(framework: str, raw: bytes) -> tuple[str | None, str | None, TraceFormatError | None]:
    """``(mode, coordinate, problem)`` of a row's ``ground_truth`` value as stored (the
    JSON-string literal, or ``null``). Cached: release rows repeat the same small labels."""
    try:
        text = jsonio.loads(raw)
        gt = jsonio.loads(text) if text is not None else None
        if gt is not None and not isinstance(gt, dict):
            raise ValueError
    except (ValueError, TypeError, orjson.JSONDecodeError):
        return (
            None,
            None,
            TraceFormatError(
                "ground_truth is not a JSON string holding an object",
                json_path="$.ground_truth",
                expected='a string such as "{\\"step\\":3}"',
            ),
        )
    if gt is None:
        return None, None, None
    try:
        step, _ = gt_coord(framework, gt)
    except TraceFormatError as exc:
        return None, None, exc
    return (gt.get("mode") if isinstance(gt.get("mode"), str) else None), step, None


_FAST_HEAD = 1024  # bytes of a line the fast path reads: id, framework, benchmark and the task key
_GT_KEY = b'"ground_truth"'
#: A compact release head: the three values with no quote or backslash, then a task string
#: or the trajectory.
_FAST_HEAD_RE = re.compile(
    rb'\{"id":"([^"\\]*+)","framework":"([^"\\]*+)","benchmark":"([^"\\]*+)",(?:"task":"|"traject)'
)
_TRAJ_KEY = b'"trajectory"'
_TRAJ_AT = b',"trajectory":"'


def _fast_row(mm: mmap.mmap, row: int, start: int, end: int) -> RowMeta | None:
    """The listing fields of a release-shaped line read with a few byte searches, or
    ``None`` when the line is not in the release's exact compact form (then the careful
    :func:`_scan_row` decides, and words any error).

    Accepted: ``{"id":"…","framework":"…","benchmark":"…",`` with no escapes in those
    three, then ``"task":"…`` (a string) or the trajectory, the first ``"trajectory"`` of
    the line within its first :data:`_FAST_HEAD` bytes and written ``,"trajectory":"``, a
    last byte ``}``, and a ground truth that reads cleanly. Gives exactly what
    :func:`_scan_row` gives for such a line. Called once per line of a release (tens of
    thousands), so it does as little as it can in Python.
    """
    if mm[end - 1] != 0x7D:
        return None
    hend = start + _FAST_HEAD
    if hend > end:
        hend = end
    m = _FAST_HEAD_RE.match(mm, start, hend)
    if m is None:
        return None
    at = mm.find(_TRAJ_KEY, start, hend)  # the first "trajectory" must be the key
    if at < 0 or at + 14 > hend or mm[at - 1 : at + 14] != _TRAJ_AT:
        return None
    raw_id, raw_fw, raw_bench = m.groups()
    try:
        trace_id, fw, bench = raw_id.decode(), raw_fw.decode(), raw_bench.decode()
    except UnicodeDecodeError:
        return None
    gpos = mm.rfind(_GT_KEY, at + 14, end)
    if gpos < 0:
        return _as_row((row, start, end, trace_id, fw, bench, None, None, None))
    mode, step, problem = _gt_tail(fw, mm[gpos:end]) if end - gpos <= 512 else _gt_tail.__wrapped__(fw, mm[gpos:end])
    if problem is not None:
        return None
    return _as_row((row, start, end, trace_id, fw, bench, mode, step, None))


@lru_cache(maxsize=4096)
def _gt_tail(framework: str, tail: bytes) -> tuple[str | None, str | None, TraceFormatError | None]:
    """``(mode, coordinate, problem)`` of the ground truth at the start of ``tail`` (a
    line's bytes from its ``"ground_truth"`` key to its end). Cached: release rows repeat
    the same small labels and end the same way."""
    g = _GT_RE.match(tail)
    if g is None:
        return None, None, TraceFormatError("ground_truth is not a JSON string holding an object")
    return _gt_listing(framework, g.group(1))


def _scan_row(mm: mmap.mmap, path: Path, row: int, start: int, end: int, last: bool) -> RowMeta:
    """Read one line's listing fields without decoding its trajectory."""
    fast = _fast_row(mm, row, start, end)
    return fast if fast is not None else _careful_row(mm, path, row, start, end, last)


def _careful_row(mm: mmap.mmap, path: Path, row: int, start: int, end: int, last: bool) -> RowMeta:
    """:func:`_scan_row` for any line: whitespace, escapes and other key orders allowed,
    every fault worded."""
    if mm[end - 1] != 0x7D and not mm[max(start, end - 16) : end].rstrip().endswith(b"}"):
        what = (
            "truncated line (the file ends in the middle of a row)"
            if last
            else "line does not end with '}' (not a complete JSON object)"
        )
        return RowMeta(row, start, end, problem=_error(path, row, what, "one JSON object per line"))
    m = _HEAD_RE.match(mm, start, min(end, start + _HEAD_BYTES))
    if m is None and end - start > _HEAD_BYTES:
        m = _HEAD_RE.match(mm, start, min(end, start + _MAX_HEAD))
    if m is None:
        return _fallback(mm, RowMeta(row, start, end), path)
    try:
        trace_id, fw, bench = (_json_str(g) for g in m.groups())
    except (UnicodeDecodeError, orjson.JSONDecodeError):
        return RowMeta(
            row,
            start,
            end,
            problem=_error(path, row, "id, framework or benchmark is not valid UTF-8 JSON text", "plain JSON strings"),
        )
    t = _TRAJ_RE.search(mm, m.end(), end)
    problem = None
    if t is None:  # a malformed line, or no trajectory: say which when the line is small
        return _fallback(mm, RowMeta(row, start, end, trace_id, fw, bench), path)
    if t.group(1) != b'"':
        problem = _error(
            path,
            row,
            "trajectory is not a JSON string",
            json_path="$.trajectory",
            expected="a JSON string holding the trajectory list (twice-encoded)",
        )
    else:
        task = _TASK_RE.search(mm, m.end(), t.start())
        if task is not None and task.group(1) != b'"':
            problem = _error(
                path,
                row,
                "task is not a JSON string",
                json_path="$.task",
                expected="a JSON string holding {query, answer} (twice-encoded)",
            )
    if problem is not None:
        return RowMeta(row, start, end, trace_id, fw, bench, problem=problem)
    gpos = mm.rfind(b'"ground_truth"', t.end(), end)
    if gpos < 0:
        return RowMeta(row, start, end, trace_id, fw, bench)
    g = _GT_RE.match(mm, gpos, end)
    mode, step, problem = (
        _gt_listing(fw, g.group(1))
        if g
        else (
            None,
            None,
            TraceFormatError(
                "ground_truth is not a JSON string holding an object",
                json_path="$.ground_truth",
                expected="a JSON string",
            ),
        )
    )
    if problem is not None:
        problem = TraceFormatError(
            problem.what, path=path, row=row, json_path=problem.json_path, expected=problem.expected
        )
    return RowMeta(row, start, end, trace_id, fw, bench, mode, step, problem)


def _with_gt(meta: RowMeta, gt: Any, path: Path) -> RowMeta:
    if not isinstance(gt, dict):
        return meta
    try:
        step, _ = gt_coord(meta.framework, gt)
    except TraceFormatError as exc:
        return _bad(meta, exc.located(path=path, row=meta.row))
    mode = gt.get("mode") if isinstance(gt.get("mode"), str) else None
    return RowMeta(meta.row, meta.start, meta.end, meta.id, meta.framework, meta.benchmark, mode, step)


def _fallback(mm: mmap.mmap, meta: RowMeta, path: Path) -> RowMeta:
    """A line whose key order differs from the release's: parse it whole when small."""
    if meta.end - meta.start > _FALLBACK_MAX:
        return _bad(
            meta,
            _error(
                path,
                meta.row,
                "row is not a release row (id, framework, benchmark first, then a trajectory string)",
                '{"id": ..., "framework": ..., "benchmark": ..., "trajectory": "..."}',
            ),
        )
    try:
        row = _parse_line(mm[meta.start : meta.end], path, meta.row)
        trace_id, fw, bench = (_plain(row, k, path, meta.row) for k in ("id", "framework", "benchmark"))
        if "trajectory" not in row:
            raise _error(
                path,
                meta.row,
                "missing field trajectory",
                json_path="$.trajectory",
                expected="a JSON string holding the trajectory list",
            )
        if not isinstance(row.get("trajectory"), str):
            raise _error(
                path,
                meta.row,
                "trajectory is not a JSON string",
                json_path="$.trajectory",
                expected="a JSON string holding the trajectory list (twice-encoded)",
            )
        gt = _decode(row, "ground_truth", dict, path, meta.row)
    except TraceFormatError as exc:
        return _bad(meta, exc)
    return _with_gt(RowMeta(meta.row, meta.start, meta.end, trace_id, fw, bench), gt, path)


def _bad(meta: RowMeta, exc: TraceFormatError) -> RowMeta:
    return RowMeta(meta.row, meta.start, meta.end, meta.id, meta.framework, meta.benchmark, problem=exc)


def row_index(path: str | Path) -> RowIndex:
    """The lazy row index of a JSONL file, cached per file version (:data:`FileKey`).

    Raises TraceFormatError when the file cannot be read; bad lines become rows with
    ``error`` set.
    """
    path = Path(path)
    try:
        key = file_key(path)
    except OSError as exc:
        raise TraceFormatError(f"cannot read file: {exc.strerror}", path=path) from None
    cached = _CACHE.get(key)
    if cached is not None:
        _CACHE.move_to_end(key)
        return cached
    with paused_gc():  # tens of thousands of row tuples, none of them garbage: no collector passes
        rows = load_saved_index(key)
        if rows is None:
            rows = _scan_file(path, key[1])
            save_index(key, rows)
    index = RowIndex(path, modality_of_name(path.stem), rows)
    _CACHE[key] = index
    while len(_CACHE) > _CACHE_SIZE:
        _CACHE.popitem(last=False)
    return index


def file_key(path: Path) -> FileKey:
    """The :data:`FileKey` of ``path`` as it is now (OSError when it cannot be read)."""
    st = path.stat()
    return (str(path.resolve()), st.st_size, st.st_mtime_ns, st.st_ctime_ns)


# --------------------------------------------------------------------------- the saved index

#: Version of the saved index (bump when what :func:`_scan_row` reads changes, or its key).
INDEX_FORMAT = "whenpro.row-index/2"


def saved_index_path(key: FileKey) -> Path:
    """Where the index of the file ``key`` (a :data:`FileKey`) is saved:
    ``<cache dir>/row-index/<sha1 of the path>.json`` (one per file, replaced when the
    file changes)."""
    from whenpro_core.storage.paths import cache_dir

    return cache_dir() / "row-index" / f"{hashlib.sha1(key[0].encode()).hexdigest()}.json"


def load_saved_index(key: FileKey) -> list[RowMeta] | None:
    """The rows saved for the file ``key`` by an earlier listing, or ``None`` (none saved,
    saved for another version of the file, another index version, or damaged: the body's
    checksum is checked before it is used)."""
    try:
        head, _, body = saved_index_path(key).read_bytes().partition(b"\n")
        meta = orjson.loads(head)
        if meta["format"] != INDEX_FORMAT or meta["file"] != list(key):
            return None
        if hashlib.blake2b(body, digest_size=16).hexdigest() != meta["blake2b"]:
            return None
        doc = orjson.loads(body)
        words = doc["words"]
        columns = [doc[name] for name in _SAVED_COLUMNS]
        if len({len(c) for c in columns}) != 1:
            return None
        columns[4:] = [list(map(words.__getitem__, c)) for c in columns[4:]]  # small ints -> strings
        return list(map(_as_row, zip(*columns, itertools.repeat(None, len(columns[0])), strict=True)))
    except (OSError, ValueError, KeyError, TypeError, IndexError, orjson.JSONDecodeError):
        return None


def save_index(key: FileKey, rows: list[RowMeta]) -> None:
    """Save the rows of the file ``key`` for later listings (atomically; best effort: a
    cache folder that cannot be written is skipped). A header line (format, file, size,
    mtime, ctime, checksum of the body), then the body: columns, with framework, benchmark and
    ground truth as indices into a word list. A file with bad rows is not saved: its
    errors are worded afresh by the next scan."""
    if len(rows) < _SAVE_MIN_ROWS:
        return
    columns = list(zip(*rows, strict=True))  # one tuple per field, made in C (the first listing waits for this)
    if columns[-1].count(None) != len(rows):  # a row with a problem
        return
    from whenpro_core.storage.fsutil import atomic_write_bytes

    words: dict[Any, int] = {}  # the word columns hold str | None; numbered in order of first use
    doc: dict[str, Any] = {}
    for n, name in enumerate(_SAVED_COLUMNS):
        if n >= 4:
            for value in dict.fromkeys(columns[n]):
                words.setdefault(value, len(words))
            doc[name] = list(map(words.__getitem__, columns[n]))
        else:
            doc[name] = columns[n]
    doc["words"] = list(words)
    body = orjson.dumps(doc)
    head: dict[str, Any] = {"format": INDEX_FORMAT, "file": list(key)}
    head["blake2b"] = hashlib.blake2b(body, digest_size=16).hexdigest()
    with contextlib.suppress(WhenproError, OSError):
        atomic_write_bytes(saved_index_path(key), orjson.dumps(head) + b"\n" + body)


#: The RowMeta fields a saved index keeps (``problem`` is always None there), in order;
#: from the fifth on, as indices into the index's ``words``.
_SAVED_COLUMNS = ("row", "start", "end", "id", "framework", "benchmark", "gt_mode", "gt_step")
_as_row = functools.partial(tuple.__new__, RowMeta)

#: Files with fewer rows are not worth a saved index (scanning them is instant).
_SAVE_MIN_ROWS = 64
#: The scan drops the pages it has passed from the process every this many bytes, so
#: listing a multi-GB file keeps a bounded resident size (the OS page cache keeps them).
_RELEASE_EVERY = 64 << 20


def _scan_file(path: Path, size: int) -> list[RowMeta]:
    STATS["index_scans"] += 1
    if size == 0:
        return []
    rows: list[RowMeta] = []
    try:
        with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            line = released = 0
            pos = 3 if mm[:3] == b"\xef\xbb\xbf" else 0
            find, append, fast = mm.find, rows.append, _fast_row  # the loop runs once per row
            while pos < size:
                if pos - released >= _RELEASE_EVERY:
                    released = _release(mm, released, pos)
                nl = find(b"\n", pos)
                end = size if nl < 0 else nl
                line += 1
                stop = end - 1 if end > pos and mm[end - 1] == 0x0D else end
                if stop > pos and (mm[pos] == 0x7B or mm[pos:stop].strip()):
                    # _scan_row, inlined: a release line takes the fast path
                    append(fast(mm, line, pos, stop) or _careful_row(mm, path, line, pos, stop, nl < 0))
                pos = end + 1
    except (OSError, ValueError) as exc:
        raise TraceFormatError(f"cannot read file: {exc}", path=path) from None
    return rows


def _release(mm: mmap.mmap, begin: int, upto: int) -> int:
    """Drop the mapped pages in ``[begin, upto)`` from the process (Linux: MADV_DONTNEED
    on a read-only file mapping); returns the page-aligned offset released up to."""
    stop = upto - upto % mmap.PAGESIZE
    if stop > begin and hasattr(mmap, "MADV_DONTNEED"):
        mm.madvise(mmap.MADV_DONTNEED, begin, stop - begin)
    return max(begin, stop)


# --------------------------------------------------------------------------- decoding a row


def _parse_line(data: bytes, path: Path, row: int) -> JSONObject:
    try:
        value = jsonio.loads(data)
    except orjson.JSONDecodeError as exc:
        try:
            data.decode("utf-8")
        except UnicodeDecodeError as ude:
            raise _error(
                path, row, f"line is not UTF-8 text (bad byte at column {ude.start + 1})", "UTF-8 JSON"
            ) from None
        at = getattr(exc, "pos", None)
        what = (
            "truncated row (JSON ends too early)"
            if at is not None and at >= len(data.rstrip()) - 1
            else f"not valid JSON at column {(at or 0) + 1}"
        )
        raise _error(path, row, what, "one JSON object per line") from None
    if not isinstance(value, dict):
        raise _error(path, row, f"wrong type (got {type(value).__name__})", "a JSON object", "$")
    return value


def _plain(row: JSONObject, key: str, path: Path, n: int) -> str:
    value = row.get(key)
    if not isinstance(value, str) or not value:
        found = "missing" if key not in row else f"got {type(value).__name__}"
        raise _error(path, n, f"wrong type ({found})", "a non-empty string", f"$.{key}")
    return value


def _decode(row: JSONObject, key: str, want: type, path: Path, n: int) -> Any:
    """Decode the JSON string ``row[key]`` into a ``want`` (``dict``/``list``); a missing
    or null ``ground_truth``/``extras`` is None."""
    value = row.get(key)
    if value is None and key in ("ground_truth", "extras"):
        return None
    shape = "an object" if want is dict else "a list"
    if not isinstance(value, str):
        found = "missing" if key not in row else f"got {type(value).__name__}"
        raise _error(path, n, f"wrong type ({found})", f"a JSON string holding {shape} (twice-encoded)", f"$.{key}")
    if key == "trajectory":
        STATS["trajectory_decodes"] += 1
    try:
        decoded = jsonio.loads(value)
    except orjson.JSONDecodeError as exc:
        raise _error(
            path,
            n,
            f"the string is not valid JSON ({str(exc).split(':')[0]})",
            f"a JSON string holding {shape}",
            f"$.{key}",
        ) from None
    if decoded is None and key in ("ground_truth", "extras"):
        return None
    if not isinstance(decoded, want):
        raise _error(
            path,
            n,
            f"wrong type (the string holds {type(decoded).__name__})",
            f"a JSON string holding {shape}",
            f"$.{key}",
        )
    return decoded


def decode_row(data: bytes, path: Path, row: int, modality: Modality) -> JSONObject:
    """One line -> the per-file Who&When Pro document (fields decoded, extras merged,
    ``modality`` from the file name). Raises TraceFormatError naming the row."""
    outer = _parse_line(data, path, row)
    doc: dict[str, Any] = {k: _plain(outer, k, path, row) for k in ("id", "framework")}
    bench = outer.get("benchmark")
    if bench is not None and not isinstance(bench, str):
        raise _error(path, row, f"wrong type (got {type(bench).__name__})", "a string", "$.benchmark")
    doc["benchmark"] = bench or ""
    task = _decode(outer, "task", dict, path, row) if outer.get("task") is not None else {}
    trajectory = _decode(outer, "trajectory", list, path, row)
    gt = _decode(outer, "ground_truth", dict, path, row)
    extras = _decode(outer, "extras", dict, path, row) or {}
    for k, v in extras.items():
        if k not in ("id", "framework", "benchmark", "task", "trajectory", "ground_truth"):
            doc[k] = v
    for k, v in outer.items():
        if k not in doc and k not in _ROW_FIELDS:
            doc[k] = v
    split = path.stem.lower()
    doc.update(
        task=task,
        trajectory=trajectory,
        ground_truth=gt,
        modality=split if split in SPLITS and modality_of_name(split) is modality else modality.value,
    )
    return doc


def _load_row(path: Path, key: str | None) -> tuple[RowIndex, RowMeta, JSONObject]:
    """The row index, the selected row and its decoded document. TraceFormatError for a
    missing or bad row."""
    index = row_index(path)
    meta = index.find(key)
    if meta.problem is not None:
        p = meta.problem
        raise TraceFormatError(p.what, path=path, row=meta.row, json_path=p.json_path, expected=p.expected)
    try:
        with path.open("rb") as fh:
            fh.seek(meta.start)
            data = fh.read(meta.end - meta.start)
    except OSError as exc:
        raise TraceFormatError(f"cannot read file: {exc.strerror}", path=path, row=meta.row) from None
    STATS["rows_loaded"] += 1
    return index, meta, decode_row(data, path, meta.row, index.modality)


def load_document(path: Path, key: str | None) -> JSONObject:
    """One row as the per-file Who&When Pro document (fields decoded, extras merged,
    ``modality`` from the file name): what the official renderers read."""
    return _load_row(path, key)[2]


def _root_for(path: Path, root: Path | None) -> Path:
    if root is not None:
        return root

    return find_root(path)


class WhoWhenProJsonlImporter(FileImporter):
    """Reads the Who&When Pro JSONL release, one trace per line, lazily indexed."""

    name = FORMAT
    priority = 50

    def match_head(self, head: bytes, path: Path) -> bool:
        try:
            if head.startswith(b"\xef\xbb\xbf"):
                head = head[3:]
            first = head.split(b"\n", 1)[0]
            m = _HEAD_RE.match(first)
            if m is None:
                return False
            t = _TRAJ_RE.search(first, m.end())
            task = _TASK_RE.search(first, m.end(), t.start() if t else len(first))
            if task is not None and task.group(1) != b'"':
                return False  # a per-file document (task is an object), not a release row
            if t is not None:
                return t.group(1) == b'"'
            if b"\n" in head:
                return False
            with path.open("rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                nl = mm.find(b"\n")
                t = _TRAJ_RE.search(mm, m.end(), nl if nl >= 0 else len(mm))
                return t is not None and t.group(1) == b'"'
        except (OSError, ValueError):
            return False

    def summaries(self, path: Path, root: Path | None) -> Iterator[TraceSummary]:
        index = row_index(path)
        for meta in index.rows:
            yield TraceSummary(
                id=meta.id or f"{path.stem}:{meta.row}",
                path=str(path),
                key=str(meta.row),
                format=FORMAT,
                framework=meta.framework,
                benchmark=meta.benchmark,
                modality=index.modality.value,
                step_count=None,
                gt_mode=meta.gt_mode,
                gt_step=meta.gt_step,
                error=meta.error,
                # a labelled row is a failed run (as when the row is loaded)
                outcome="failure" if meta.gt_mode or meta.gt_step else None,
            )

    def load(self, path: Path, key: str | None, root: Path | None) -> Trace:
        """Decode only the selected row (1-based line number or trace id)."""
        index, meta, doc = _load_row(path, key)
        root = _root_for(path, root)
        ctx = LoadContext(path=path, root=root, key=str(meta.row))
        prefix = f"video_assets/{doc['framework']}/" if index.modality is Modality.video else None
        try:
            return build_trace(
                prepare(doc, ctx, modality_hint=index.modality.value), ctx, fmt=FORMAT, media_prefix=prefix
            )
        except WhenproError as exc:
            raise exc.located(path=path, row=meta.row) from None
