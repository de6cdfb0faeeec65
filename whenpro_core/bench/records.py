"""Benchmark results: one :class:`Record` per trace × protocol × model × gold setting,
kept in an append-only JSONL file (docs/architecture.md, 'Files whenpro writes': "results files are append-only
JSONL and
resumable").

A record is self-contained: the prediction (an :class:`~whenpro_core.trace.model.Attribution`
dump), the per-axis scores with and without the ±k step tolerance, the step distance
(so a report can re-apply any tolerance without the trace), usage, wall-clock seconds,
the trace's metadata (:class:`TraceMeta`: id, framework, benchmark, modality, ground
truth, single-agent flag, transcript length in tokens) and, when the attribution failed,
``error`` with its ``error_kind``. Reports (:mod:`whenpro_core.bench.aggregate`) are
computed from records alone, so a results file can be scored and re-rendered anywhere.

The file format is one JSON object per line. :class:`ResultsFile` appends one whole line
per record (a single ``write`` of the encoded line, flushed) and, when opened, repairs a
torn last line left by a killed run: a tail that is not a complete record is cut off
(it is re-run), a complete record that only lacks its newline gets one. Readers skip
lines that are not finished records (not JSON, a field of the wrong type, neither a
prediction nor an error) and say which and why (:class:`SkippedLine`). When one key has
several records (a failed item retried), the last one written wins (:func:`latest`).

A report does not believe a record's stored scores: :func:`read_scored` works them out
again from the prediction and the labels the record holds (:func:`score_from_labels`,
the scoring :func:`build_record` does), so a file edited by hand or by another tool is
scored by whenpro's rules, and says which records disagreed.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import orjson
from pydantic import BaseModel, ConfigDict, Field, StrictBool, ValidationError

from whenpro_core.errors import ConfigError, TraceFormatError, validation_problem
from whenpro_core.formats.registry import HEAD_BYTES, split_ref
from whenpro_core.formats.whenpro_files import RECORD_FORMAT, RECORD_PREFIX, is_results_head
from whenpro_core.safety.redact import redact
from whenpro_core.storage import jsonio, jsonl_log
from whenpro_core.trace.model import Accepted, Attribution, GroundTruth, Trace, TraceSummary, Usage
from whenpro_core.trace.score import AxisScore, accepted_steps, score_prediction, step_distance, strict_step_ok

#: Kinds of failure a record can carry: ``trace`` (the trace could not be read or
#: attributed: bad input, deterministic), ``backend`` (the LLM backend failed after its
#: retries: transient, retried automatically on resume), ``internal`` (an unexpected
#: exception in whenpro: a bug, kept with its type name).
ErrorKind = Literal["trace", "backend", "internal"]


class _Tolerant(BaseModel):
    """Records are read back by later versions: unknown fields are ignored. True/false
    fields are ``StrictBool``: a hand-edited ``"no"`` is an error, not ``False``."""

    model_config = ConfigDict(extra="ignore")


class TraceMeta(_Tolerant):
    """What a report needs to know about the trace behind a record.

    Attributes:
        id, framework, benchmark, modality: as in :class:`~whenpro_core.trace.model.Trace`.
        split: the release split when finer than the modality (``image_gui``), else ``""``.
        subset: the Who&When subset (``Hand-Crafted``, ``Algorithm-Generated``) of a trace
            of the original Who&When files, else ``""`` (``report --rules`` scores those by
            the original script's rules).
        labelled: the trace has a ground truth (only labelled traces are scored).
        gt_agent, gt_agents, gt_step, gt_mode, round_only: the ground truth (docs/architecture.md, 'The trace model').
        gt_accepted: its accepted alternatives, so a report can score the prediction
            again from the record alone (:func:`score_from_labels`); ``None`` in records
            written before whenpro kept them (and for an unlabelled trace).
        gt_errors: every labelled error with a step, ``{"step": coordinate, "category":
            label}`` (a trace's step annotations: TRAIL's span-level errors), for rules that
            score against all of them (``report --rules trail``).
        single_agent: the framework has one agent; left out of the Agent metric (§4, §7).
        steps: number of steps (``None`` when the trace could not be read).
        tokens: length of the rendered transcript a judge sees, estimated as characters
            / 4 (:data:`whenpro_core.views.transcript.CHARS_PER_TOKEN`), images not
            counted; ``None`` when unknown. Reports bucket it (<4K, 4–8K, 8–12K, >12K).
    """

    id: str = ""
    framework: str = ""
    benchmark: str = ""
    modality: str = ""
    split: str = ""
    subset: str = ""
    labelled: StrictBool = False
    gt_agent: str | None = None
    gt_agents: list[str] = Field(default_factory=list)
    gt_step: str | None = None
    gt_mode: str | None = None
    round_only: StrictBool = False
    gt_accepted: Accepted | None = None
    gt_errors: list[dict[str, str]] = Field(default_factory=list)
    single_agent: StrictBool = False
    steps: int | None = None
    tokens: int | None = None

    def labels(self) -> Trace:
        """A stand-in trace holding what scoring reads of the trace behind a record: its
        id, framework and ground truth, and no steps (a record does not hold them)."""
        gt = GroundTruth(
            agent=self.gt_agent,
            agents=self.gt_agents,
            step=self.gt_step,
            mode=self.gt_mode,
            round_only=self.round_only,
            accepted=self.gt_accepted or Accepted(),
        )
        return Trace(id=self.id or "?", framework=self.framework, ground_truth=gt)


class Scores(_Tolerant):
    """Per-axis verdict of one prediction (:class:`~whenpro_core.trace.score.AxisScore`
    as data). ``mode`` is ``None`` when the ground truth has no mode (Who&When)."""

    agent: StrictBool = False
    step: StrictBool = False
    mode: StrictBool | None = None
    joint: StrictBool = False


class Record(_Tolerant):
    """One benchmark result: trace × protocol × model × gold setting.

    Attributes:
        format: :data:`RECORD_FORMAT`.
        key: identity used for resuming: ``ref|protocol|model|gold`` (:func:`record_key`).
        ref: the trace reference (absolute ``path`` or ``path#key``).
        protocol, model, with_gold: the setting (model ``heuristic`` for the heuristic).
        trace: the trace's metadata.
        prediction: the attribution, ``None`` when it failed.
        score: exact per-axis scores; ``None`` for an unlabelled trace. A failed
            attribution of a labelled trace scores False on every axis.
        score_tol: the same with the ±``tolerance`` step rule (Who&When style).
        step_distance: distance in coordinates from the predicted step to the nearest
            accepted one (0 when exact; ``None`` when not comparable: missing or unknown
            step, round-only scoring), so any tolerance can be applied later.
        tolerance: the k used for ``score_tol``.
        strict_step: the step verdict under the official leaderboard's strict coordinate
            rule (:func:`~whenpro_core.trace.score.strict_step_ok`); ``None`` when unscored.
        usage: calls, tokens, cost and protocol seconds of the LLM calls behind this
            record (copied from the prediction; an answer replayed from whenpro's response
            cache counts with its original usage), so a second run reports the same totals.
        spent: what this run spent on the record: new calls, tokens and cost (0 for a
            cache hit). A failed item keeps what its calls cost before it failed.
        seconds: wall-clock seconds of the whole item (load, render, attribute).
        error, error_kind: why the item failed (:data:`ErrorKind`), else ``None``.
        finished_at: ISO 8601 UTC time the record was made.
    """

    format: str = RECORD_FORMAT
    key: str
    ref: str
    protocol: str
    model: str
    with_gold: StrictBool = True
    trace: TraceMeta = Field(default_factory=TraceMeta)
    prediction: Attribution | None = None
    score: Scores | None = None
    score_tol: Scores | None = None
    step_distance: int | None = None
    tolerance: int = 0
    strict_step: StrictBool | None = None
    usage: Usage = Field(default_factory=Usage)
    spent: Usage = Field(default_factory=Usage)
    seconds: float = 0.0
    error: str | None = None
    error_kind: ErrorKind | None = None
    finished_at: str = ""

    @property
    def group(self) -> tuple[str, str, bool]:
        """``(model, protocol, with_gold)``: the leaderboard row this record belongs to."""
        return (self.model, self.protocol, self.with_gold)

    def step_within(self, k: int) -> bool:
        """Step correct within ±``k`` coordinates (exact when k=0 or round-only)."""
        if self.score is None:
            return False
        if self.score.step:
            return True
        return self.step_distance is not None and self.step_distance <= k


def record_key(ref: str, protocol: str, model: str, with_gold: bool) -> str:
    """The resume key of a work item: ``ref|protocol|model|gold`` (or ``no-gold``)."""
    return f"{ref}|{protocol}|{model}|{'gold' if with_gold else 'no-gold'}"


def absolute_ref(ref: str) -> str:
    """``path`` or ``path#key`` with the path made absolute, so a dataset named by a
    relative path and an absolute one give the same keys."""
    path, key = split_ref(ref)
    text = os.path.abspath(path)
    return f"{text}#{key}" if key is not None else text


def safe_message(text: str, limit: int = 600) -> str:
    """An error message fit for a results file: one line, capped, API-key-like tokens
    replaced by ``[redacted]`` (:func:`whenpro_core.safety.redact.redact`)."""
    line = redact(" ".join(str(text).split()))
    return line if len(line) <= limit else line[: limit - 1] + "…"


def trace_meta(trace: Trace | None, summary: TraceSummary | None = None, tokens: int | None = None) -> TraceMeta:
    """Metadata of a loaded trace, or of its listing row when it could not be loaded."""
    if trace is None:
        s = summary
        if s is None:
            return TraceMeta()
        return TraceMeta(
            id=s.id,
            framework=s.framework,
            benchmark=s.benchmark,
            modality=s.modality,
            gt_step=s.gt_step,
            gt_mode=s.gt_mode,
            steps=s.step_count,
        )
    gt = trace.ground_truth
    return TraceMeta(
        id=trace.id,
        framework=trace.framework,
        benchmark=trace.benchmark,
        modality=trace.modality.value,
        split=str(trace.extras.get("split") or ""),
        subset=str(trace.extras.get("subset") or "") if trace.source.format == "whowhen" else "",
        labelled=gt is not None,
        gt_agent=gt.agent if gt else None,
        gt_agents=list(gt.agents) if gt else [],
        gt_step=gt.step if gt else None,
        gt_mode=gt.mode if gt else None,
        round_only=bool(gt and gt.round_only),
        gt_accepted=gt.accepted.model_copy(deep=True) if gt else None,
        gt_errors=[{"step": a.step, "category": a.label} for a in trace.annotations if a.step is not None],
        single_agent=trace.is_single_agent,
        steps=len(trace.steps),
        tokens=tokens,
    )


def nearest_step_distance(trace: Trace, pred: Attribution | None) -> int | None:
    """Distance from the predicted step to the nearest accepted step (docs/architecture.md, 'Scoring' ±k
    rule, :func:`~whenpro_core.trace.score.step_distance`); ``None`` when not
    comparable (no prediction, no step, round-only scoring, coordinate not in the trace)."""
    gt = trace.ground_truth
    if gt is None or pred is None or pred.step in (None, ""):
        return None
    if score_prediction(trace, pred).step:
        return 0
    if gt.round_only:
        return None
    dists = [d for s in accepted_steps(gt) if (d := step_distance(trace, pred.step, s)) is not None]
    return min(dists) if dists else None


def build_record(
    *,
    ref: str,
    protocol: str,
    model: str,
    with_gold: bool,
    trace: Trace | None,
    prediction: Attribution | None,
    tolerance: int = 0,
    summary: TraceSummary | None = None,
    tokens: int | None = None,
    seconds: float = 0.0,
    error: str | None = None,
    error_kind: ErrorKind | None = None,
    usage: Usage | None = None,
    spent: Usage | None = None,
) -> Record:
    """Score ``prediction`` against ``trace`` and assemble its :class:`Record`.

    A labelled trace with no prediction (the attribution failed) scores False on every
    axis: a missing prediction counts as wrong (docs/architecture.md, 'Scoring'). ``trace`` is ``None`` when
    the trace could not be read; the record then holds the listing row's metadata.
    ``usage``/``spent`` default to the prediction's; give them for a failed item (what its
    calls cost before it failed).
    """
    scoring: dict[str, Any] = {}
    if trace is not None and trace.ground_truth is not None:
        scoring = _verdicts(trace, prediction, tolerance, nearest_step_distance(trace, prediction))
    return Record(
        key=record_key(ref, protocol, model, with_gold),
        ref=ref,
        protocol=protocol,
        model=model,
        with_gold=with_gold,
        trace=trace_meta(trace, summary, tokens),
        prediction=prediction,
        **scoring,
        tolerance=tolerance,
        usage=prediction.usage if prediction else (usage or Usage()),
        spent=prediction.spent if prediction else (spent or Usage()),
        seconds=round(seconds, 4),
        error=safe_message(error) if error else None,
        error_kind=error_kind if error else None,
        finished_at=datetime.now(UTC).isoformat(timespec="seconds"),
    )


#: The fields of a record that :func:`score_from_labels` works out again.
SCORING_FIELDS = ("score", "score_tol", "strict_step", "step_distance")


def _verdicts(trace: Trace, prediction: Attribution | None, tolerance: int, distance: int | None) -> dict[str, Any]:
    """The :data:`SCORING_FIELDS` of a record: ``prediction`` scored against the labelled
    ``trace`` exactly (``score``), with the ±``tolerance`` step rule (``score_tol``: a step
    whose ``distance`` to the nearest accepted one is at most ``tolerance`` scores) and by
    the strict coordinate rule (``strict_step``). Raises ValueError for a trace without
    a ground truth."""
    gt = trace.ground_truth
    if gt is None:
        raise ValueError(f"trace {trace.id} has no ground truth to score against")
    exact = score_prediction(trace, prediction)
    near = exact.step or (distance is not None and distance <= tolerance)
    tol = AxisScore(exact.agent, near, exact.mode)
    return {
        "score": Scores(**exact.as_dict()),
        "score_tol": Scores(**tol.as_dict()),
        "strict_step": strict_step_ok(gt, prediction),
        "step_distance": distance,
    }


def _kept_distance(record: Record, exact_step: bool) -> int | None:
    """The record's stored step distance made to agree with the exact step verdict: 0 for
    an exact step, ``None`` without a predicted step, never 0 for a step that is not exact."""
    pred = record.prediction
    if exact_step:
        return 0
    if pred is None or pred.step in (None, ""):
        return None
    return record.step_distance or None


def score_from_labels(record: Record) -> Record:
    """``record`` with its :data:`SCORING_FIELDS` worked out again from its prediction and
    the labels its trace metadata holds, as :func:`build_record` works them out, whatever
    it stored. The same record when that cannot be done: an unlabelled trace, or a record
    written before whenpro kept the accepted alternatives (``gt_accepted`` is ``None``)
    whose prediction one of them might match (without a prediction every axis is wrong
    whatever they are)."""
    meta = record.trace
    if not meta.labelled or (meta.gt_accepted is None and record.prediction is not None):
        return record
    labels = meta.labels()
    # A record does not hold the trace's steps (their coordinate order), which the ±k
    # rule measures: the step distance is the stored one, only made to agree with the
    # exact step verdict.
    distance = _kept_distance(record, score_prediction(labels, record.prediction).step)
    return record.model_copy(update=_verdicts(labels, record.prediction, record.tolerance, distance))


# --------------------------------------------------------------------------- the file


@dataclass(frozen=True)
class SkippedLine:
    """A line of a results file that is not a finished record: the file's ``path``, the
    1-based ``line`` and ``why``, one line (``not valid JSON``, ``at $.trace.gt_step:
    expected a string``)."""

    path: str
    line: int
    why: str

    def note(self) -> str:
        """``PATH:LINE: not a whenpro bench record (WHY); skipped``."""
        return f"{self.path}:{self.line}: not a whenpro bench record ({self.why}); skipped"


def _parse(line: bytes) -> Record | str:
    """The record on one non-blank JSONL line, or why it is none (one line)."""
    try:
        data = jsonio.loads(line)
    except orjson.JSONDecodeError:
        return "not valid JSON"
    if not isinstance(data, dict):
        return TraceFormatError("expected an object", json_path="$").one_line()
    if data.get("format") != RECORD_FORMAT:
        return TraceFormatError(f'expected "{RECORD_FORMAT}"', json_path="$.format").one_line()
    try:
        return Record.model_validate(data)
    except ValidationError as exc:
        return validation_problem(exc).one_line()


def _unfinished(record: Record) -> str | None:
    """Why ``record`` is not a finished one (it has neither a prediction nor an error), or ``None``."""
    if record.prediction is not None or record.error:
        return None
    return TraceFormatError("no prediction and no error: not a finished record", json_path="$.prediction").one_line()


def parse_record(line: bytes) -> Record | None:
    """The record on one JSONL line, or ``None`` when the line is blank or not a record."""
    if not line.strip():
        return None
    rec = _parse(line)
    return rec if isinstance(rec, Record) else None


def _read_bytes(path: Path) -> bytes:
    """The bytes of a results file. Raises TraceFormatError when it is missing or unreadable."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise TraceFormatError("no such results file", path=path) from None
    except IsADirectoryError:
        raise TraceFormatError(
            "is a folder, not a results file", path=path, expected="a .jsonl file written by whenpro bench"
        ) from None
    except OSError as exc:
        raise TraceFormatError(f"cannot read results file: {exc.strerror}", path=path) from None


def read_numbered(path: str | Path) -> tuple[list[tuple[int, Record]], list[SkippedLine]]:
    """Every finished record of a results file with its 1-based line number, in file
    order, and the lines skipped (blank lines aside): not JSON, not a record, or a record
    with neither a prediction nor an error. Raises TraceFormatError when the file is
    missing or unreadable."""
    path = Path(path)
    records: list[tuple[int, Record]] = []
    skipped: list[SkippedLine] = []
    for n, line in enumerate(_read_bytes(path).split(b"\n"), 1):
        if not line.strip():
            continue
        rec = _parse(line)
        why = rec if isinstance(rec, str) else _unfinished(rec)
        if why is not None:
            skipped.append(SkippedLine(str(path), n, why))
        elif isinstance(rec, Record):
            records.append((n, rec))
    return records, skipped


def read_records(path: str | Path) -> tuple[list[Record], list[str]]:
    """Every finished record of a results file in file order (as stored), and a note per
    line skipped (:meth:`SkippedLine.note`). Errors as :func:`read_numbered`."""
    records, skipped = read_numbered(path)
    return [rec for _, rec in records], [s.note() for s in skipped]


@dataclass
class ScoredResults:
    """One results file read for a report: its finished ``records``, each scored from its
    prediction and labels (:func:`score_from_labels`), the ``skipped`` lines, and the line
    numbers of the records whose stored scores ``disagreed`` with that."""

    path: Path
    records: list[Record]
    skipped: list[SkippedLine]
    disagreed: list[int]


def read_scored(path: str | Path) -> ScoredResults:
    """A results file's records scored from their predictions and labels rather than
    believed (a file edited by hand or by another tool). Errors as :func:`read_numbered`."""
    numbered, skipped = read_numbered(path)
    records, disagreed = [], []
    for n, rec in numbered:
        again = score_from_labels(rec)
        stored = [(getattr(rec, f), getattr(again, f)) for f in SCORING_FIELDS]
        if any(old is not None and old != new for old, new in stored):  # a field left out stored nothing
            disagreed.append(n)
        records.append(again)
    return ScoredResults(Path(path), records, skipped, disagreed)


def latest(records: Iterable[Record]) -> list[Record]:
    """One record per key, the last one written (a retried item supersedes its failure),
    in first-appearance order of the keys. Written last is finished last
    (``finished_at``), a tie going to the later in ``records``: within one file that is
    the file order, and across a merged file and its parts the newer record wins whichever
    file holds it (a part's failure rerun by a run without ``--shard`` is superseded)."""
    by_key: dict[str, Record] = {}
    for rec in records:
        old = by_key.get(rec.key)
        if old is None or rec.finished_at >= old.finished_at:  # ISO 8601 UTC: text order is time order
            by_key[rec.key] = rec  # a dict keeps the key's first position, takes the new value
    return list(by_key.values())


def _keep_tail(tail: bytes) -> bool:
    """Whether a results file's last line without a newline is kept (a whole record, or
    bytes that are no fragment of a record: not ours to cut)."""
    torn = tail.startswith(RECORD_PREFIX) or RECORD_PREFIX.startswith(tail)
    return parse_record(tail) is not None or not torn


def _owned(path: Path) -> bool:
    """Whether whenpro may append to the existing file ``path``: its first line is a bench
    record (:func:`~whenpro_core.formats.whenpro_files.is_results_head`, any JSON layout),
    or the file holds only blank space or the start of a record an interrupted first write
    left (cut off by :meth:`ResultsFile._repair`)."""
    with path.open("rb") as fh:
        head = fh.read(HEAD_BYTES)
    return is_results_head(head) or RECORD_PREFIX.startswith(head.removeprefix(b"\xef\xbb\xbf").strip())


class ResultsFile:
    """An append-only results file (docs/architecture.md, 'Files whenpro writes'), safe to resume.

    Opening it checks that an existing file is a whenpro results file (ConfigError
    otherwise: whenpro never writes into a file it does not own) and repairs a torn last
    line. ``done`` maps each key to its latest record. ``append`` writes one record as
    one line and flushes it (``append_many`` a batch in one write), so a killed run loses at
    most the records in flight.

    One process writes one file. To shard a run over several workers (e.g. Ray), give
    each its own file; :func:`whenpro_core.bench.report.report_command` reads several.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.repaired: str | None = None
        self.done: dict[str, Record] = {}
        self._log: jsonl_log.Appender | None = None
        if self.path.is_dir():
            raise ConfigError("results path is a folder", path=self.path, expected="a .jsonl file (--out)")
        if self.path.exists() and self.path.stat().st_size > 0:
            if not _owned(self.path):
                raise ConfigError(
                    "file exists and is not a whenpro results file; refusing to append to it",
                    path=self.path,
                    expected="a results .jsonl written by whenpro bench, or a new path",
                )
            self._repair()
            records, self.problems = read_records(self.path)
            for rec in records:
                self.done[rec.key] = rec
        else:
            self.problems = []

    def _repair(self) -> None:
        """Deal with a last line that has no newline (under the log's lock,
        :func:`whenpro_core.storage.jsonl_log.repair_tail`): a complete record or
        anything not ours -> add the newline (never cut what is not ours); a fragment
        of a record (a killed write) -> cut it off."""
        how, removed = jsonl_log.repair(self.path, keep=_keep_tail)
        if how == jsonl_log.REPAIR_NEWLINE:
            self.repaired = "added a missing newline at the end of the file"
        elif how == jsonl_log.REPAIR_CUT:
            self.repaired = (
                f"removed a torn last line ({removed} bytes) left by an interrupted run; that item runs again"
            )

    def append(self, record: Record) -> None:
        """Write ``record`` as one line and flush it."""
        if self._log is None:
            self._log = jsonl_log.Appender(self.path, keep=_keep_tail)
        self._log.append(record.model_dump(mode="json"))
        self.done[record.key] = record

    def append_many(self, records: Sequence[Record]) -> None:
        """Write ``records`` as lines in one write and flush them (the runner's batch of
        the records finished together)."""
        if self._log is None:
            self._log = jsonl_log.Appender(self.path, keep=_keep_tail)
        self._log.append_many([r.model_dump(mode="json") for r in records])
        for record in records:
            self.done[record.key] = record

    def close(self) -> None:
        """Flush to disk (fsync) and close."""
        if self._log is not None:
            self._log.close()
            self._log = None

    def __enter__(self) -> ResultsFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
