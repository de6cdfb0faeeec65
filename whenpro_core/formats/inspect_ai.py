"""Inspect AI evaluation logs: ``.json`` logs and ``.eval`` zip archives (SOURCE.md of
real_traces/inspect-ai-logs; ``UKGovernmentBEIS/inspect_ai`` log format, version 2).

* ``.json``: ``{version, status, eval, plan, results, stats, error?, samples: [...]}``.
* ``.eval``: a zip archive with ``header.json`` (the log without samples; absent while a
  run is in progress, then ``_journal/start.json`` stands in), ``samples/<id>_epoch_<n>.json``,
  ``summaries.json``, ``reductions.json``. Members are read as streams with :mod:`zipfile`,
  never extracted, one sample at a time (:func:`read_capped`): at most
  :data:`MAX_MEMBER_BYTES` expanded per member and :data:`MAX_TOTAL_BYTES` per archive. A
  sample past either limit, or holding more than :data:`MAX_MEMBER_CONTAINERS` JSON
  arrays and objects (counted before it is parsed), or whose member cannot be read (a bad
  CRC, a broken compressed stream), is not read (a zip bomb of 1.4 MB that expands to
  1.4 GiB costs no more than the limits): the samples read import, and a warning on
  stderr names what was left out; a header past the limit is a TraceFormatError. inspect-ai 0.3.x compresses
  members with Zstandard (ZIP method 93, which :mod:`zipfile` reads only from Python 3.14):
  those are decompressed as a stream by the ``zstandard`` library (:func:`open_member`).

One trace per sample, key ``<id>_epoch_<epoch>``, id ``inspect-<task>-<id>-e<epoch>@<log
file name>``: the same sample appears in many logs (reruns of a task, a run saved as
both ``.eval`` and ``.json``), so the log's file name keeps ids distinct in a dataset. Steps are the sample's
``messages`` (coordinate = 0-based message index, as in Who&When): system, user, assistant (``action``
when it calls tools) and tool results. Tool errors (``{"type": "parsing"|"timeout"|...,
"message"}`` on a tool message or its ``tool`` event) go to ``Step.error`` as
``"<type>: <message>"``. ``attachment://<hash>`` (and the older ``tc://<hash>``)
references in text and images are resolved from the sample's ``attachments`` (or
``transcript.content``) map; ``data:`` images become :class:`MediaRef` data.

Scores stay in ``extras["scores"]``; the first scorer's value decides the outcome (``C``,
``1``, ``true`` -> success; ``I``, ``N``, ``0``, ``false`` -> failure; partial or absent ->
unknown). A sample ``error`` makes the outcome a failure. Events are summarised in
``extras["events"]`` (type, time, name, and any error); the usage of each ``model`` event
goes to ``meta["usage"]`` of the assistant message that call wrote (in order). A log with
no samples (cancelled
early, or written without samples) lists as one row saying so, and opening it raises a
one-line TraceFormatError.
"""

from __future__ import annotations

import io
import lzma
import re
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import zstandard

from whenpro_core.errors import TraceFormatError
from whenpro_core.formats.base import (
    DocumentImporter,
    FileImporter,
    LoadContext,
    as_text,
    dict_or_empty,
    expect,
    parse_json,
    redact_secrets,
    summarize,
)
from whenpro_core.formats.chat import chat_step
from whenpro_core.formats.registry import natural_key
from whenpro_core.storage import jsonio
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.coords import small_int
from whenpro_core.trace.model import Agent, Modality, Outcome, Source, Step, Task, Trace, TraceSummary

#: Expanded bytes read from one archive member at most (a sample's JSON), and from one
#: archive in all: a sane size for an evaluation log, far below what a zip bomb expands to.
MAX_MEMBER_BYTES = 128 * 1024 * 1024
MAX_TOTAL_BYTES = 512 * 1024 * 1024
#: JSON arrays and objects one member may hold (counted before parsing,
#: :func:`~whenpro_core.storage.jsonio.containers`): within the byte cap, 120 MiB of
#: ``[],`` is 40 million lists, gigabytes once parsed. Nesting is held to
#: :data:`~whenpro_core.storage.jsonio.MAX_DEPTH` levels by the parser.
MAX_MEMBER_CONTAINERS = 2_000_000
_CHUNK = 1024 * 1024
_REF = re.compile(r"(?:attachment|tc)://([0-9a-f]{8,64})")
_SAMPLE = re.compile(r"^samples/(?P<id>.+)_epoch_(?P<epoch>\d+)\.json$")
_GOOD = {"C", "1", "1.0", "TRUE", "CORRECT"}
_BAD = {"I", "N", "0", "0.0", "FALSE", "INCORRECT"}
#: ZIP compression method number of Zstandard (APPNOTE 4.4.5), used by inspect-ai 0.3.x.
ZSTD_METHOD = 93


def open_member(zf: zipfile.ZipFile, name: str) -> IO[bytes]:
    """A readable stream of the expanded bytes of member ``name``: :meth:`ZipFile.open`
    for the methods :mod:`zipfile` knows, a streaming ``zstandard`` decompressor for
    method 93. The caller bounds how much it reads (the expanded size is never trusted).
    Raises KeyError (no such member), zipfile.BadZipFile or zstandard.ZstdError."""
    info = zf.getinfo(name)
    if info.compress_type != ZSTD_METHOD:
        return zf.open(info)
    raw_info = zipfile.ZipInfo(info.filename, info.date_time)  # the stored bytes, unchecked
    raw_info.compress_type = zipfile.ZIP_STORED
    raw_info.header_offset, raw_info.flag_bits = info.header_offset, info.flag_bits
    raw_info.compress_size = raw_info.file_size = info.compress_size
    raw_info.CRC = None  # type: ignore[assignment]  # zipfile skips the CRC check of None
    raw = zf.open(raw_info)
    return io.BufferedReader(zstandard.ZstdDecompressor().stream_reader(raw, closefd=True))


def is_log(doc: Any) -> bool:
    """An Inspect log object: ``{version, eval: {...}, ...}``."""
    return (
        isinstance(doc, dict)
        and isinstance(doc.get("eval"), dict)
        and "version" in doc
        and ("samples" in doc or "status" in doc or "results" in doc)
    )


def outcome_of(scores: Any) -> Outcome:
    """Outcome from the first scorer's value (rules in the module docstring)."""
    if not isinstance(scores, dict) or not scores:
        return Outcome.unknown
    first = next(iter(scores.values()))
    value = first.get("value") if isinstance(first, dict) else first
    text = str(value).strip().upper()
    if text in _GOOD:
        return Outcome.success
    if text in _BAD:
        return Outcome.failure
    return Outcome.unknown


def _resolver(sample: JSONObject) -> Callable[[str], str]:
    store = sample.get("attachments")
    if not isinstance(store, dict):
        transcript = sample.get("transcript")
        store = transcript.get("content") if isinstance(transcript, dict) else None
    store = store if isinstance(store, dict) else {}

    def resolve(text: str) -> str:
        if "://" not in text:
            return text
        return _REF.sub(lambda m: str(store.get(m.group(1), m.group(0))), text)

    return resolve


def _events_summary(events: Any) -> tuple[list[JSONObject], dict[str, str]]:
    out, tool_errors = [], {}
    for e in events if isinstance(events, list) else []:
        if not isinstance(e, dict):
            continue
        row = {
            k: e[k]
            for k in ("event", "timestamp", "name", "type", "action", "function", "model")
            if isinstance(e.get(k), (str, int, float))
        }
        err = e.get("error")
        if err:
            row["error"] = _error_text(err)
            if e.get("event") == "tool" and e.get("id") is not None:
                tool_errors[str(e["id"])] = row["error"]
        out.append(row)
    return out, tool_errors


def _model_usages(events: Any) -> list[JSONObject]:
    """The ``output.usage`` of each ``model`` event, in order (one per model call, so one
    per assistant message the calls produced); non-dict usages are left out."""
    usages = []
    for e in events if isinstance(events, list) else []:
        if isinstance(e, dict) and e.get("event") == "model":
            output = dict_or_empty(e.get("output"))
            usage = output.get("usage")
            usages.append(usage if isinstance(usage, dict) else {})
    return usages


def _error_text(err: Any) -> str:
    if isinstance(err, dict):
        kind, msg = err.get("type"), err.get("message")
        return f"{kind}: {as_text(msg)}" if kind else as_text(msg)
    return as_text(err)


def _text_of_input(value: Any, resolve: Callable[[str], str]) -> str:
    if isinstance(value, str):
        return resolve(value)
    if isinstance(value, list):
        parts = []
        for m in value:
            if isinstance(m, dict) and m.get("role") in (None, "user"):
                content = m.get("content")
                if isinstance(content, list):
                    content = "\n".join(
                        resolve(c.get("text", "")) for c in content if isinstance(c, dict) and c.get("type") == "text"
                    )
                parts.append(resolve(as_text(content)))
        return "\n".join(parts)
    return as_text(value)


def _sample_key(sample: dict[str, Any], ctx: LoadContext, where: str) -> tuple[Any, Any]:
    """``(id, epoch)`` of a sample (epoch 1 when absent); raises when the id is missing or not a scalar."""
    sid, epoch = sample.get("id"), sample.get("epoch", 1)
    if sid is None or isinstance(sid, (dict, list)):
        raise ctx.error(
            "missing sample id" if sid is None else "wrong type", f"{where}.id", "the sample id (a string or integer)"
        )
    return sid, epoch


def _sample_steps(
    sample: dict[str, Any],
    ctx: LoadContext,
    where: str,
    resolve: Callable[[str], str],
    tool_errors: dict[str, str],
) -> list[Step]:
    """One step per message; each assistant step gets the ``usage`` of the model call that
    wrote it, and a step gets the error of its message or of its failed tool call."""
    messages = sample.get("messages") or []
    expect(messages, list, ctx, f"{where}.messages", "a list of chat messages")
    usages = iter(_model_usages(sample.get("events")))
    steps = []
    for i, msg in enumerate(messages):
        step = chat_step(i, msg, ctx, f"{where}.messages[{i}]", resolve=resolve)
        if isinstance(msg, dict) and msg.get("role") == "assistant":
            usage = next(usages, None)  # the model call that wrote this message
            if usage:
                step.meta["usage"] = usage
        err = msg.get("error") if isinstance(msg, dict) else None
        if err or step.meta.get("tool_call_id") in tool_errors:
            step.error = _error_text(err) if err else tool_errors[step.meta["tool_call_id"]]
        steps.append(step)
    return steps


def _sample_final(output: dict[str, Any]) -> Any:
    """The sample's final answer: ``output.completion``, else the first choice's message content."""
    final = output.get("completion")
    choices = output.get("choices") if isinstance(output.get("choices"), list) else []
    if not final and choices and isinstance(choices[0], dict) and isinstance(choices[0].get("message"), dict):
        final = as_text(choices[0]["message"].get("content"))
    return final


def _sample_agents(steps: list[Step]) -> list[Agent]:
    """The agents of the non-system, non-tool steps, in order of first appearance."""
    agents: dict[str, None] = {}
    for s in steps:
        if s.kind not in ("system", "tool"):
            agents.setdefault(s.agent, None)
    return [Agent(id=a) for a in agents]


def _sample_task(sample: dict[str, Any], resolve: Callable[[str], str]) -> Task:
    """The task: the user input as the query, the target (list targets joined by `` | ``) as the answer."""
    target = sample.get("target")
    return Task(
        query=_text_of_input(sample.get("input"), resolve),
        answer=" | ".join(map(str, target))
        if isinstance(target, list)
        else (None if target is None else as_text(target)),
        options=sample.get("choices"),
    )


_NOT_EXTRAS = ("messages", "events", "attachments", "transcript", "input", "target", "output", "choices")


def _sample_extras(
    sample: dict[str, Any],
    header: dict[str, Any],
    ev: dict[str, Any],
    output: dict[str, Any],
    events: list[dict[str, Any]],
) -> dict[str, Any]:
    """The sample's other fields plus the event summary, the log status, the eval header
    and the output without its choices (secrets not yet redacted)."""
    extras = {k: v for k, v in sample.items() if k not in _NOT_EXTRAS}
    extras.update(
        {
            "events": events,
            "log_status": header.get("status"),
            "eval": ev,
            "output": {k: v for k, v in output.items() if k != "choices"},
        }
    )
    return extras


def sample_trace(sample: Any, header: JSONObject, ctx: LoadContext, where: str) -> Trace:
    """The trace of one sample (``where`` is its JSON path, for errors)."""
    expect(sample, dict, ctx, where, "a sample object {id, epoch, messages, ...}")
    sid, epoch = _sample_key(sample, ctx, where)
    resolve = _resolver(sample)
    events, tool_errors = _events_summary(sample.get("events"))
    steps = _sample_steps(sample, ctx, where, resolve, tool_errors)
    ev = dict_or_empty(header.get("eval"))
    task = as_text(ev.get("task")) or "inspect"
    output = dict_or_empty(sample.get("output"))
    outcome = Outcome.failure if sample.get("error") else outcome_of(sample.get("scores"))
    return Trace(
        id=f"inspect-{task}-{sid}-e{epoch}@{ctx.path.name}",
        framework="inspect_ai",
        benchmark=task,
        modality=Modality.image if any(s.media for s in steps) else Modality.text,
        agents=_sample_agents(steps),
        task=_sample_task(sample, resolve),
        steps=steps,
        final_answer=as_text(_sample_final(output)) or None,
        outcome=outcome,
        source=Source(
            format="inspect_ai",
            path=str(ctx.path),
            key=f"{sid}_epoch_{epoch}",
            root=str(ctx.root) if ctx.root else None,
        ),
        extras=redact_secrets(_sample_extras(sample, header, ev, output, events)),
    )


def _no_samples(header: JSONObject, path: Path) -> TraceFormatError:
    status = header.get("status") or "unknown"
    err = header.get("error")
    detail = f", error: {_error_text(err)[:120]}" if err else ""
    return TraceFormatError(
        f"Inspect log holds no samples (status {status}{detail})", path=path, expected="a log with at least one sample"
    )


class InspectJsonImporter(DocumentImporter):
    """An Inspect ``.json`` log: one trace per sample."""

    name = "inspect_ai"
    priority = 8

    def matches(self, doc: Any) -> bool:
        return is_log(doc)

    def load(self, doc: Any, ctx: LoadContext) -> list[Trace]:
        samples = doc.get("samples") or []
        expect(samples, list, ctx, "$.samples", "a list of samples")
        if not samples:
            raise _no_samples(doc, ctx.path)
        header = {k: v for k, v in doc.items() if k != "samples"}
        return [sample_trace(s, header, ctx, f"$.samples[{i}]") for i, s in enumerate(samples)]

    def summaries(self, doc: Any, ctx: LoadContext) -> list[TraceSummary]:
        if isinstance(doc.get("samples"), list) and not doc["samples"]:
            return [
                TraceSummary(
                    id=ctx.path.stem, path=str(ctx.path), format=self.name, error=_no_samples(doc, ctx.path).one_line()
                )
            ]
        return super().summaries(doc, ctx)


class MemberTooLarge(TraceFormatError):
    """An archive member expands past the bytes it may take (:func:`read_capped`), or
    holds more arrays and objects than :data:`MAX_MEMBER_CONTAINERS`."""


class MemberUnreadable(TraceFormatError):
    """An archive member cannot be read (a bad CRC, a broken compressed stream): its
    sample is left out, the others are read."""


#: What reading a damaged member raises: a bad CRC (BadZipFile), a broken deflate
#: (zlib.error), bzip2 (OSError), LZMA or Zstandard stream, a cut-off member (EOFError).
_UNREADABLE = (
    zipfile.BadZipFile,
    zlib.error,
    lzma.LZMAError,
    OSError,
    ValueError,
    EOFError,
    NotImplementedError,
    zstandard.ZstdError,
)


def _mib(n: int) -> str:
    return f"{n / (1024 * 1024):.0f} MiB"


def read_capped(stream: IO[bytes], limit: int, *, name: str, path: Path) -> bytes:
    """Every byte of the (decompressing) ``stream``, read in 1 MiB chunks; raises
    :class:`MemberTooLarge` (naming ``name`` in ``path``) as soon as more than ``limit``
    bytes come out, so memory never exceeds ``limit`` + 1 MiB whatever the member claims.
    Any member reader (deflate, stored, Zstandard) can go through it."""
    data = bytearray()
    while chunk := stream.read(min(_CHUNK, limit + 1 - len(data))):
        data += chunk
        if len(data) > limit:
            raise _too_large(name, limit, path)
    return bytes(data)


def _too_large(name: str, limit: int, path: Path) -> MemberTooLarge:
    return MemberTooLarge(
        f"{name} expands past {_mib(limit)}; not read",
        path=path,
        expected=f"archive members of at most {_mib(MAX_MEMBER_BYTES)} expanded, {_mib(MAX_TOTAL_BYTES)} in all",
    )


@dataclass
class _Budget:
    """Expanded bytes one archive may still take, and the notes on what was left out."""

    left: int = field(default_factory=lambda: MAX_TOTAL_BYTES)
    notes: list[str] = field(default_factory=list)


class InspectEvalImporter(FileImporter):
    """An Inspect ``.eval`` zip archive: one trace per ``samples/*.json`` member."""

    name = "inspect_ai"
    priority = 8

    def match_head(self, head: bytes, path: Path) -> bool:
        return head.startswith(b"PK\x03\x04") and any(m in head for m in (b"header.json", b"_journal/", b"samples/"))

    @staticmethod
    def _open(path: Path) -> zipfile.ZipFile:
        try:
            zf = zipfile.ZipFile(path)
        except (zipfile.BadZipFile, OSError, ValueError) as exc:
            raise TraceFormatError(
                f"not a readable zip archive ({exc})", path=path, expected="an Inspect .eval log (zip)"
            ) from None
        return zf

    @staticmethod
    def _read(zf: zipfile.ZipFile, name: str, path: Path, budget: _Budget | None = None) -> Any:
        """Member ``name`` parsed as JSON, read as a stream of at most :data:`MAX_MEMBER_BYTES`
        (and what ``budget`` has left, which it is charged)."""
        limit = MAX_MEMBER_BYTES if budget is None else min(MAX_MEMBER_BYTES, budget.left)
        if zf.getinfo(name).file_size > limit:  # zipfile never expands past the declared size
            raise _too_large(name, limit, path)
        try:
            with open_member(zf, name) as fh:
                data = read_capped(fh, limit, name=name, path=path)
        except _UNREADABLE as exc:
            raise MemberUnreadable(f"cannot read {name} from the archive ({exc}); not read", path=path) from None
        if budget is not None:
            budget.left -= len(data)
        if jsonio.containers(data, MAX_MEMBER_CONTAINERS) > MAX_MEMBER_CONTAINERS:
            raise MemberTooLarge(
                f"{name} holds more than {MAX_MEMBER_CONTAINERS:,} JSON arrays and objects; not read",
                path=path,
                expected=f"archive members of at most {MAX_MEMBER_CONTAINERS:,} arrays and objects",
            )
        try:
            return parse_json(data, path)
        except TraceFormatError as exc:
            exc.json_path = f"{name}:$"
            raise exc.located(path=path) from None

    def _header(self, zf: zipfile.ZipFile, path: Path) -> JSONObject:
        names = set(zf.namelist())
        for name in ("header.json", "_journal/start.json"):
            if name in names:
                header = self._read(zf, name, path)
                if not isinstance(header, dict):
                    raise TraceFormatError(
                        "wrong type", path=path, json_path=f"{name}:$", expected="the log header object"
                    )
                return header
        raise TraceFormatError(
            "no header.json in the archive", path=path, expected="an Inspect .eval log (zip with header.json)"
        )

    @staticmethod
    def _sample_names(zf: zipfile.ZipFile) -> list[tuple[str, str]]:
        found = [(n, f"{m.group('id')}_epoch_{m.group('epoch')}") for n in zf.namelist() if (m := _SAMPLE.match(n))]
        return sorted(found, key=lambda nk: natural_key(nk[1]))

    def _traces(
        self, path: Path, root: Path | None, key: str | None = None, budget: _Budget | None = None
    ) -> Iterator[Trace]:
        """The traces of the archive's samples (only ``key``'s when given), read one at a
        time. A sample past the size limits is left out with a note in ``budget.notes``
        (raised instead when it is the one ``key`` asks for)."""
        budget = budget if budget is not None else _Budget()
        with self._open(path) as zf:
            header = self._header(zf, path)
            names = self._sample_names(zf)
            if not names:
                raise _no_samples(header, path)
            ctx = LoadContext(path=path, root=root)
            for i, (name, skey) in enumerate(names):
                if key is not None and skey != key:
                    continue
                try:
                    sample = self._read(zf, name, path, budget)
                except MemberUnreadable as exc:
                    if key is not None:
                        raise
                    budget.notes.append(exc.what)
                    continue
                except MemberTooLarge as exc:
                    if key is not None:
                        raise
                    if budget.left < MAX_MEMBER_BYTES:  # the archive's total, not this member
                        budget.notes.append(
                            f"stopped after {_mib(MAX_TOTAL_BYTES - budget.left)} expanded: "
                            f"{len(names) - i} of {len(names)} samples not read"
                        )
                        return
                    budget.notes.append(exc.what)
                    continue
                yield sample_trace(sample, header, ctx, f"{name}:$")

    def summaries(self, path: Path, root: Path | None) -> Iterator[TraceSummary]:
        budget = _Budget()
        try:
            rows = [summarize(t) for t in self._traces(path, root, budget=budget)]
        except TraceFormatError as exc:
            rows = [TraceSummary(id=path.stem, path=str(path), format=self.name, error=exc.one_line())]
        if not rows and budget.notes:  # the error row says it all: no warning repeating it
            yield TraceSummary(
                id=path.stem,
                path=str(path),
                format=self.name,
                error=TraceFormatError("; ".join(budget.notes), path=path).one_line(),
            )
            return
        for row in rows:
            row.warnings.extend(budget.notes)
        yield from rows

    def load(self, path: Path, key: str | None, root: Path | None) -> Trace:
        budget = _Budget()
        for trace in self._traces(path, root, key, budget):
            return trace
        if key is None and budget.notes:  # every sample left out: say why
            raise TraceFormatError("; ".join(budget.notes), path=path)
        position = small_int(key) if key is not None else None
        if position is not None:  # a 1-based position, as for other files
            traces = self.load_all(path, root)
            if 1 <= position <= len(traces):
                return traces[position - 1]
        raise TraceFormatError(
            f"no sample {key!r} in this log", path=path, expected="a key <sample id>_epoch_<n> or a 1-based position"
        )

    def load_all(self, path: Path, root: Path | None) -> list[Trace]:
        budget = _Budget()
        traces = list(self._traces(path, root, budget=budget))
        if not traces and budget.notes:
            raise TraceFormatError(
                "; ".join(budget.notes), path=path, expected=f"samples of at most {_mib(MAX_MEMBER_BYTES)} expanded"
            )
        for trace in traces:
            trace.extras.setdefault("whenpro_warnings", []).extend(budget.notes)
        return traces
