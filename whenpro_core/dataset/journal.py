"""The journal of a build (docs/architecture.md, 'Injection and warm-start replay'): one line per
finished attempt (:class:`Entry`) after a header (:func:`start_journal`), read back leniently
(:func:`read_entries`), in ``.whenpro-build/journal.jsonl`` and a sharded build's parts
(:func:`journal_layout`); the checks before a build writes its ``--out`` and the build lock
(:func:`take_lock`). The module docstring of :mod:`.build_store` describes the files."""

from __future__ import annotations

import os
import secrets
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from whenpro_core.errors import ConfigError, TraceFormatError, WhenproError
from whenpro_core.formats.build_meta import BUILD_DIR
from whenpro_core.scale.shards import Layout
from whenpro_core.scale.shards import layout as parts_layout
from whenpro_core.storage import jsonl_log

if sys.platform == "win32":  # no flock: a second build in the same folder is not refused
    fcntl = None
else:
    import fcntl

JOURNAL_FORMAT = "whenpro.build.journal/1"
ATTEMPT_FORMAT = "whenpro.build.attempt/1"
#: Why an attempt did not give a dataset trace, by the stage that dropped it.
DROP_REASONS = (
    "generate_failed",
    "replay_failed",
    "not_decisive",
    "construction_leak",
    "gold_visible_before_t",
    "trivial",
    "not_representable",
    "control_failed",
    "detectable",
    "adversarial",
    "step_class",
    "mode_share",
    "position",
    "form_pick",
    "per_seed",
)


#: Where a recoverable problem goes: one line (the CLI's ``whenpro: warning: ...``).
Warn = Callable[[str], None]


class Entry(BaseModel):
    """One journal line: a finished attempt.

    ``status`` is ``kept`` or ``dropped`` (with ``reason`` from :data:`DROP_REASONS` and
    a human ``detail``). A kept entry names its dataset ``file`` (relative to the root)
    and ``ref`` (what :func:`whenpro_core.formats.load_trace` takes, relative to the
    root: the file, or ``data/<modality>.jsonl#<id>``)."""

    model_config = ConfigDict(extra="ignore")

    format: str = ATTEMPT_FORMAT
    key: str
    seed: str
    seed_ref: str
    step: str
    step_index: int
    mode: str
    status: str
    reason: str | None = None
    detail: str = ""
    id: str | None = None
    agent: str | None = None
    modality: str | None = None
    framework: str | None = None
    benchmark: str | None = None
    file: str | None = None
    ref: str | None = None
    seconds: float = 0.0
    control: bool | None = None
    step_class: str | None = None
    #: Model calls and US dollars the attempt spent (LLM generator + simulated
    #: continuation; 0 offline and for an attempt that failed before its answer came back).
    calls: int = 0
    cost_usd: float = 0.0
    #: Steps of the seed run (for the relative position of the labelled step).
    steps: int | None = None
    #: Position bin (0..9) of the labelled step among the built trace's candidate steps,
    #: as the audit reads it (kept entries; ``None`` in journals from before it was kept).
    position: int | None = None
    #: The audit's one-trace form baselines that pick the labelled step, and the random
    #: chance of picking it (:func:`~whenpro_core.dataset.build_plan.form_picks`; kept
    #: entries; ``None`` in journals from before they were kept).
    form_picks: list[str] | None = None
    chance: float | None = None


def journal_layout(root: str | Path) -> Layout:
    """A dataset's journal and the folder of its shards' parts (``journal.d``)."""
    return parts_layout(Path(root) / BUILD_DIR / "journal.jsonl")


def read_entries(path: str | Path, warn: Warn | None = None) -> dict[str, Entry]:
    """The attempts of a journal or journal part by key, the latest line of a key winning.
    Torn and broken lines are skipped; so is a line tagged as an attempt that does not
    validate as one, and ``warn`` is told in one line naming the file, the line number
    and the first field wrong (its attempt runs again, unless another line records it).
    Raises TraceFormatError when the file cannot be read."""
    path = Path(path)
    return parse_entries(jsonl_log.read_numbered(path, "whenpro.build.")[0], path, warn)


def parse_entries(records: list[tuple[int, dict[str, Any]]], path: Path, warn: Warn | None = None) -> dict[str, Entry]:
    """Numbered journal records of ``path`` -> attempt entries by key (:func:`read_entries`)."""
    entries: dict[str, Entry] = {}
    skipped: list[tuple[int, Any, ValidationError]] = []
    for number, r in records:
        if r.get("format") != ATTEMPT_FORMAT:
            continue
        try:
            e = Entry.model_validate(r)
        except ValidationError as exc:
            skipped.append((number, r.get("key"), exc))
            continue
        entries[e.key] = e
    if warn is not None:
        for number, key, problem in skipped:
            warn(_skipped_line(path, number, problem, recorded=isinstance(key, str) and key in entries))
    return entries


def _skipped_line(path: Path, number: int, exc: ValidationError, *, recorded: bool) -> str:
    """The warning for journal line ``number`` of ``path`` that is not an attempt: where,
    the first field wrong (and how many more), and what happens to its attempt."""
    errors = exc.errors()
    field = "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in errors[0]["loc"])
    more = f"; {len(errors) - 1} more field{'s' if len(errors) > 2 else ''} wrong" if len(errors) > 1 else ""
    then = "another line of its attempt stands" if recorded else "its attempt runs again"
    what = f"not a finished attempt ({errors[0]['msg']}{more}): line skipped, {then}"
    return WhenproError(what, path=path, row=number, json_path=field).one_line()


def warn_once(warn: Warn) -> Warn:
    """``warn``, saying each line only once (a shard's driver reads the parts every round)."""
    said: set[str] = set()

    def say(line: str) -> None:
        if line not in said:
            said.add(line)
            warn(line)

    return say


def check_out_dir(root: Path, *, force: bool, shard: int | None) -> None:
    """Refuse an ``--out`` a build may not write (:meth:`BuildStore.open`)."""
    if shard is not None and force:
        raise ConfigError(
            "--force would remove the other shards' work", expected="--force without --shard, before the jobs"
        )
    if root.exists() and not root.is_dir():
        raise WhenproError("output exists and is a file", path=root, expected="a dataset folder (--out)")
    journal = root / BUILD_DIR / "journal.jsonl"
    if not journal.exists() and root.is_dir() and any(p.name != BUILD_DIR for p in root.iterdir()) and not force:
        raise WhenproError(
            "output folder exists and is not a whenpro build",
            path=root,
            expected="a new folder, an earlier build to resume, or --force",
        )


def starts_over(root: Path, header: dict[str, Any] | None, options: dict[str, Any], *, force: bool) -> bool:
    """True when the build in ``root`` is removed and started again: ``force`` on a
    journal that holds anything (even one whose header is lost). ConfigError when its
    header names other options and not ``force``."""
    if header is not None and header.get("options") != options and not force:
        old = header.get("options") or {}
        diff = ", ".join(f"{k} {old.get(k)!r} -> {v!r}" for k, v in options.items() if old.get(k) != v)
        raise ConfigError(
            f"this dataset was built with other options ({diff})",
            path=root,
            expected="the same --generator/--executor/--layout/--seed to resume, a new --out, or --force to start over",
        )
    journal = root / BUILD_DIR / "journal.jsonl"
    return force and (header is not None or (journal.is_file() and journal.stat().st_size > 0))


def start_journal(journal: Path, options: dict[str, Any], salt: str | None, now: str | None) -> dict[str, Any]:
    """The header of a new journal, written unless another job (``--shard``) wrote one
    first: the header the journal holds. TraceFormatError when its first line is not a
    header (``--force`` starts over), ConfigError when another job's has other options."""
    header = {
        "format": JOURNAL_FORMAT,
        "options": options,
        "salt": salt or secrets.token_hex(16),
        "created": now or datetime.now(UTC).isoformat(timespec="seconds"),
    }
    try:
        first: dict[str, Any] | None = jsonl_log.append_first(journal, header)
    except TraceFormatError:  # not a JSON object
        first = None
    if first is None or first.get("format") != JOURNAL_FORMAT:
        raise TraceFormatError(
            "the build journal's first line is not its header",
            path=journal,
            row=1,
            expected=f'a "{JOURNAL_FORMAT}" header; rerun with --force to start the build over, '
            "which removes the build's files and keeps validation.jsonl",
        )
    if first.get("options") != options:  # a --shard job started it first, with others
        raise ConfigError(
            "another job started this dataset with other options",
            path=journal.parent.parent,
            expected="the same options in every --shard job",
        )
    return first


def take_lock(path: Path, *, shared: bool = False) -> int:
    """The build lock on ``path``: exclusive, or ``shared`` by ``--shard`` jobs."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    if fcntl is not None:
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise ConfigError(
                "another whenpro build is writing this dataset" + ("" if shared else " (or --shard jobs still run)"),
                path=path.parent.parent,
                expected="wait for it to finish, or a different --out",
            ) from None
    return fd


__all__ = ["ATTEMPT_FORMAT", "DROP_REASONS", "Entry", "JOURNAL_FORMAT", "Warn", "journal_layout", "read_entries"]
