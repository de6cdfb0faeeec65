"""Where ``whenpro build`` keeps a dataset: the dataset files in one of two layouts, the
journal of finished attempts that makes a build resumable, and ``manifest.json``
(docs/architecture.md, 'Formats and step coordinates' and 'Injection and warm-start replay' and 'Files whenpro writes').

Layouts (both read back by whenpro's Who&When Pro importers, with the ground truth at the
injected step's coordinate):

* ``files`` — the per-file release layout:
  ``data_release/<modality>/<benchmark>/<framework>/<id>.json``, one Who&When Pro document
  per kept trace (:mod:`whenpro_core.formats.whowhen_pro_write`);
* ``jsonl`` — the JSONL release layout: ``data/<modality>.jsonl``, one row per kept trace
  (``id, framework, benchmark`` plain, ``task, trajectory, ground_truth, extras`` JSON
  strings), sorted by id.

Released traces give nothing away (issue 14): the trace ``id`` (and so the file name) is
an opaque token, ``sha256(salt | attempt key)`` cut to 16 hex digits, with a random
``salt`` drawn when the build starts (kept in the journal header, so a resumed build names
the same attempt the same way); no id or file name names the failure mode, the step, the
seed run or the generator. A released document holds the Who&When Pro fields only
(:data:`PUBLIC_FIELDS`): the label is in ``ground_truth`` (with its ``reason``) and nowhere
else; the injection record, the seed run's ``env`` block (its per-run seed) and the
replay markers of the steps (``is_injected``/``is_replayed``) go to the provenance sidecar
``provenance.json`` (``whenpro.build.provenance/1``: trace id -> record), which the
importers list as holding no trace.

Every kept attempt's full document is staged under ``.whenpro-build/rows/<id>.json``; at
the end of each run :meth:`BuildStore.finish` selects the traces to release
(:func:`balance`: labels spread over kinds of step as the candidate steps are, and no
failure mode above ``max_mode_share`` of the release, no tenth of the runs holding more
than :data:`POSITION_SHARE` of the labels) and writes them (files, or the
JSONL files rewritten atomically) with the sidecar. A kept attempt left out by the
balance is counted as dropped with reason ``step_class``, ``mode_share`` or ``position``; a later run
with more attempts may bring it back.

Both layouts get ``taxonomy.yaml`` at the root (the built-in table, unless the folder has
one already) and ``manifest.json``.

The journal (``.whenpro-build/journal.jsonl``, :mod:`whenpro_core.storage.jsonl_log`) starts with a header
(creation time, the options a resumed build must share) and holds one line per finished
attempt, written only after the attempt's dataset file is in place. A rerun skips the
keys it holds. A line that is not a finished attempt is skipped and its attempt runs again:
a torn or broken line silently, one tagged as an attempt that does not validate with a
warning naming the file, the line and the field (:func:`read_entries`). A journal whose
first line is not its header is refused (TraceFormatError; ``--force`` starts over).
A kill between the file write and the journal line leaves a staged file that the
rerun writes again under the same name; released files with a build id that no selected
journal line names (and temp files of interrupted atomic writes) are removed when a run
finishes.
One build at a time may write a dataset (an exclusive lock on ``.whenpro-build/lock``).

Sharded builds (``build --ray`` / ``--shard K/N``, issue 18): each shard appends its
finished attempts to its own journal part, ``.whenpro-build/journal.d/part-NNNN.jsonl``
(the layout of bench's ``results.d`` parts, :mod:`whenpro_core.scale.shards`), staging its
kept documents in the same ``rows`` folder (names are trace ids, unique per attempt). An
open store reads the journal and every part (the latest line of a key wins), so attempts
finished in any part are skipped. ``--shard`` jobs share the lock (``LOCK_SH``: many jobs
at once, never with a build that merges); a build that holds it exclusively merges the
parts into ``journal.jsonl`` (:meth:`BuildStore.merge_parts`, atomically) before it
selects the release.

Manifest (``whenpro.build.manifest/1``): options, ``seeds`` (found, used, skipped by
reason with the list), ``counts`` per stage (``planned``, ``attempted``, ``generated``,
``replayed``, ``decisive``, ``kept``), ``dropped`` by reason, ``kept_by_mode``,
``kept_by_framework``, ``dropped_traces`` (seed, step, mode, stage, reason, detail),
``traces`` (the kept ones: id, ref, seed, step, agent, mode), ``warnings`` (e.g. twins
sharing a prefix when ``--per-seed`` is above 1) and ``validation``
(:mod:`whenpro_core.dataset.validate`). The stage counts add up::

    attempted = generated + dropped.generate_failed
    generated = replayed  + dropped.replay_failed
    replayed  = decisive  + dropped.not_decisive
    decisive  = kept + dropped.construction_leak + dropped.gold_visible_before_t
                     + dropped.trivial + dropped.not_representable + dropped.control_failed
                     + dropped.detectable + dropped.adversarial + dropped.step_class + dropped.mode_share
                     + dropped.position + dropped.form_pick + dropped.per_seed

(``detectable``: the detectability filter, :mod:`whenpro_core.audit.detect`, journals a
kept item again as dropped when a form-only baseline pins it to its step; ``adversarial``:
the adversarial filter, :mod:`.build_adversarial`, leaves out an item a learned attacker
finds, each time the release is selected.)
"""

from __future__ import annotations

import contextlib
import hashlib
import math
import os
import random
import re
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from whenpro_core.audit.view import AuditTrace, Label, audit_view, label_of
from whenpro_core.dataset.build_plan import LOCAL_FORM_BASELINES, POOL_FORM_BASELINES, pool_form_picks
from whenpro_core.dataset.journal import (
    DROP_REASONS,
    JOURNAL_FORMAT,
    Entry,
    Warn,
    check_out_dir,
    journal_layout,
    parse_entries,
    read_entries,
    start_journal,
    starts_over,
    take_lock,
    warn_once,
)
from whenpro_core.dataset.validate import validation_counts
from whenpro_core.errors import WhenproError
from whenpro_core.formats import load_trace
from whenpro_core.formats.build_meta import BUILD_DIR, MANIFEST, MANIFEST_FORMAT, PROVENANCE_FORMAT, load_manifest
from whenpro_core.formats.whowhen_pro_write import to_jsonl_row
from whenpro_core.scale.shards import Layout
from whenpro_core.storage import jsonio, jsonl_log
from whenpro_core.storage.fsutil import atomic_write_bytes, atomic_write_text, safe_name
from whenpro_core.trace.model import LABEL_LEAKING_FIELDS
from whenpro_core.trace.taxonomy import Taxonomy

PROVENANCE = "provenance.json"
LAYOUTS = ("files", "jsonl")
#: Largest share of the released labels in one tenth of the runs (relative position of
#: the labelled step); a tenth always keeps 2, so a small build is not emptied. At 20% an
#: arith_team release of 41 traces was leaky by the audit's common position (22% against
#: 11% random, interval 12-37%); at 15% the same pool gave 36 traces and no leak.
POSITION_SHARE = 0.15
#: Points above chance a one-trace form baseline may score on a release: the labels it
#: picks are at most ``(mean chance + FORM_PICK_SLACK) * released`` (at least 2), half the
#: audit's leak line of 10 points.
FORM_PICK_SLACK = 0.05

#: The baselines of :data:`~whenpro_core.dataset.build_plan.POOL_FORM_BASELINES` whose picks
#: against the whole kept pool are capped before the release is checked against itself.
#: Not the form classifier: it learns from the labels, and against the pool it picked a
#: third of code_pair's (the tester's reports), so capping those left a release of 8 of
#: 47 items; checked against the release alone, it leaves out 0 to 2.
FLAGGED_ON_POOL = ("rarest template",)
#: The fields of a released document (everything else goes to the provenance sidecar).
PUBLIC_FIELDS = (
    "id",
    "framework",
    "benchmark",
    "modality",
    "agents",
    "task",
    "ground_truth",
    "trajectory",
    "final_answer",
    "eval_status",
)
#: A trace id made by :meth:`BuildStore.trace_id` (16 hex digits).
BUILD_ID = re.compile(r"^[0-9a-f]{16}$")
#: The share of its traces a release may give up for more failure modes (:func:`_most_modes`):
#: code_pair's R.3 and R.4 are decisive a few times a build, and the largest selection
#: often has no room for them.
MODE_SIZE_SHARE = 0.25
#: Other orders :func:`_grow` tries (seeded shuffles) when the order of the ids
#: (:func:`order_id`: hashed from ``--seed``) does not reach a size.
FILL_TRIES = 12

#: Candidate evaluations (one entry checked against the caps' counts, or one trace read by
#: a form baseline) a release selection may spend per pair of candidates: its search tries
#: sizes, orders, exchanges and repairs while this lasts, so its cost grows at most
#: quadratically in the candidates. Unbounded, the exchanges grew with the cube of the pool:
#: a 60-seed build with ``--per-seed 3`` spent 671 s planning its rounds (issue 33).
WORK_PER_PAIR = 32
#: Pools smaller than this get the budget of one this size (a small pool searches fully).
WORK_FLOOR = 80
#: The budget per pair of a planning estimate (:mod:`.build_adapt`: every round of a build
#: plans; a 60-seed ``--per-seed 3`` build planned 28 rounds, each over 400 decisive items).
#: At 4, a 60-seed round aimed 4 attempts where the unbounded search aims 30 (16: 30).
PLAN_WORK_PER_PAIR = 16
#: Release searches' budgets the rounds of :func:`select_release` (leave one form-baseline
#: pick out, select again) may spend in all; a code_pair-like pool of 47 took 17 rounds.
RESELECT_BUDGETS = 12
#: Suspects the repair tries leaving out, each, once its budget is spent (all before).
REPAIR_LOOKAHEAD = 4


@dataclass
class Work:
    """The candidate evaluations a release selection has ``spent``, and its ``limit``
    (:data:`WORK_PER_PAIR`); past the limit the search keeps only what a valid release
    needs (each size's first greedy pass, the cuts that make every cap hold)."""

    limit: int
    spent: int = 0

    @classmethod
    def for_pool(cls, candidates: int, per_pair: int | None = None) -> Work:
        """The budget of a selection among ``candidates`` entries (``per_pair`` evaluations
        per pair of them; default :data:`WORK_PER_PAIR`)."""
        return cls((per_pair or WORK_PER_PAIR) * max(candidates, WORK_FLOOR) ** 2)

    def spend(self, evaluations: int = 1) -> None:
        """Count ``evaluations`` more."""
        self.spent += evaluations

    @property
    def left(self) -> bool:
        """Whether the budget allows more search."""
        return self.spent < self.limit


#: A cap's limit: ``limit(group, groups or None, release size) -> most entries of the group``.
CapLimit = Callable[[str, "dict[str, list[Entry]] | None", int], int]
#: One cap of :func:`balance`: ``(drop reason, group of an entry, limit)``.
Cap = tuple[str, Callable[["Entry"], str], CapLimit]
#: Default largest share of one failure mode among the released traces.
MAX_MODE_SHARE = 0.25


def _safe(text: str) -> str:
    return safe_name(str(text)) or "unknown"


def _model_calls(entries: list[Entry], kept: int) -> dict[str, Any]:
    """The manifest's ``model_calls``: model calls and dollars over every attempt (kept
    or dropped), and per kept trace (``None`` when nothing was kept)."""
    calls = sum(e.calls for e in entries)
    cost = sum(e.cost_usd for e in entries)
    return {
        "calls": calls,
        "cost_usd": round(cost, 6),
        "calls_per_kept": round(calls / kept, 2) if kept else None,
        "cost_usd_per_kept": round(cost / kept, 6) if kept else None,
    }


class BuildStore:
    """An open dataset being built (module docstring). Use :meth:`open`, then
    :meth:`write_kept` (any thread) and :meth:`record` (one thread), then
    :meth:`finish`, then :meth:`close`."""

    def __init__(
        self,
        root: Path,
        header: dict[str, Any],
        entries: dict[str, Entry],
        lock_fd: int,
        part: int | None = None,
        warn: Warn | None = None,
    ) -> None:
        self.root = root
        self.header = header
        self.entries = entries
        self._lock_fd = lock_fd
        #: Where a journal line skipped on reading is said (once per line), if anywhere.
        self.warn = warn_once(warn) if warn is not None else None
        self.layout: str = header["options"]["layout"]
        self.created: str = header["created"]
        #: The journal part this store appends to (a shard's), ``None``: ``journal.jsonl``.
        self.part = part

    # ------------------------------------------------------------------ opening

    @property
    def journal(self) -> Path:
        """Where :meth:`record` appends: ``journal.jsonl``, or this shard's part."""
        return self.parts.part(self.part) if self.part is not None else self.parts.merged

    @property
    def parts(self) -> Layout:
        """The journal and its parts folder (``.whenpro-build/journal.d/part-NNNN.jsonl``)."""
        return journal_layout(self.root)

    @classmethod
    def for_part(cls, root: str | Path, header: dict[str, Any], part: int, entries: dict[str, Entry]) -> BuildStore:
        """A store for one Ray shard's worker: appends to journal part ``part`` and stages
        kept documents; takes no lock (the driver holds it) and never finishes."""
        return cls(Path(root), header, dict(entries), -1, part=part)

    @classmethod
    def open(
        cls,
        root: str | Path,
        options: dict[str, Any],
        *,
        force: bool = False,
        now: str | None = None,
        salt: str | None = None,
        shard: int | None = None,
        warn: Warn | None = None,
    ) -> BuildStore:
        """Open (or start) the build in ``root``.

        ``options`` are the settings a resumed build must share (generator, executor,
        layout, seed); a journal made with others raises ConfigError unless ``force``,
        which starts the build over (removing the files the old journal names; a
        ``validation.jsonl`` is kept). A non-empty folder that is not a build raises
        WhenproError unless ``force``. ConfigError when another build holds the lock.
        TraceFormatError when the journal's first line is not its header (``force``
        starts over). ``now`` and ``salt`` fix a new build's creation time and id salt
        (tests). A journal line that does not validate as an attempt is skipped (its
        attempt runs again) and said through ``warn`` (:func:`read_entries`).

        ``shard`` K: a ``--shard K/N`` job, which shares the lock with the other jobs,
        appends to journal part K and merges nothing (ConfigError with ``force``); without
        it the store holds the lock alone and merges the parts left by shards into
        ``journal.jsonl`` (ConfigError while ``--shard`` jobs run)."""
        root = Path(root)
        check_out_dir(root, force=force, shard=shard)
        journal = root / BUILD_DIR / "journal.jsonl"
        (root / BUILD_DIR).mkdir(parents=True, exist_ok=True)
        lock_fd = take_lock(root / BUILD_DIR / "lock", shared=shard is not None)
        try:
            records, _ = jsonl_log.read_numbered(journal, "whenpro.build.")
            header = next((r for _, r in records if r.get("format") == JOURNAL_FORMAT), None)
            if starts_over(root, header, options, force=force):
                _remove_build(root, list(parse_entries(records, journal).values()))
                records, header = [], None
            if header is None:
                header = start_journal(journal, options, salt, now)
                records = []
            store = cls(root, header, {}, lock_fd, part=shard, warn=warn)
            store.entries = parse_entries(records, journal, store.warn)
            store.reload()
            if shard is None:
                store.merge_parts()
        except BaseException:
            os.close(lock_fd)
            raise
        return store

    def reload(self) -> None:
        """Read the attempts the journal parts hold (shards' work) into :attr:`entries`,
        parts in name order, the latest line of a key winning."""
        for part in self.parts.part_files():
            self.entries.update(read_entries(part, self.warn))

    def merge_parts(self) -> int:
        """Fold the journal parts into ``journal.jsonl`` (rewritten atomically: the header,
        then one line per attempt, the latest of each key) and delete them; only with the
        lock held alone. Returns the number of parts merged."""
        parts = self.parts.part_files()
        if not parts:
            return 0
        self.reload()
        lines = [self.header, *(e.model_dump(mode="json") for e in self.entries.values())]
        atomic_write_bytes(self.parts.merged, b"".join(jsonio.dumps(r) + b"\n" for r in lines))
        for part in parts:
            part.unlink()
        with contextlib.suppress(OSError):
            self.parts.parts.rmdir()
        return len(parts)

    def close(self) -> None:
        """Release the build lock."""
        if self._lock_fd >= 0:
            os.close(self._lock_fd)
            self._lock_fd = -1

    # ------------------------------------------------------------------ writing

    def trace_id(self, key: str) -> str:
        """The opaque id of the trace an attempt ``key`` gives (module docstring)."""
        salt = str(self.header.get("salt") or self.created)
        return hashlib.sha256(f"{salt}|{key}".encode()).hexdigest()[:16]

    def release_ref(self, entry: Entry) -> tuple[str, str]:
        """(file, ref) of a released trace, relative to the root."""
        if self.layout == "jsonl":
            modality = _safe(entry.modality or "text")
            return f"data/{modality}.jsonl", f"data/{modality}.jsonl#{entry.id}"
        rel = "/".join(
            [
                "data_release",
                _safe(entry.modality or "text"),
                _safe(entry.benchmark or "unknown"),
                _safe(entry.framework or "unknown"),
                f"{_safe(entry.id or entry.key)}.json",
            ]
        )
        return rel, rel

    def write_kept(self, doc: dict[str, Any], entry: Entry) -> Entry:
        """Stage a kept trace's full document atomically and return the entry with
        ``file`` (the staged copy) and ``ref`` (where it is released) set (thread-safe;
        the journal line is :meth:`record`'s job)."""
        file = f"{BUILD_DIR}/rows/{_safe(entry.id or entry.key)}.json"
        atomic_write_bytes(self.root / file, jsonio.dumps(doc, indent=True) + b"\n")
        return entry.model_copy(update={"file": file, "ref": self.release_ref(entry)[1]})

    def record(self, entry: Entry) -> None:
        """Append a finished attempt to the journal."""
        jsonl_log.append(self.journal, entry.model_dump(mode="json"))
        self.entries[entry.key] = entry

    # ------------------------------------------------------------------ finishing

    def kept(self) -> list[Entry]:
        """Kept entries, sorted by trace id."""
        return sorted((e for e in self.entries.values() if e.status == "kept"), key=lambda e: e.id or "")

    def finish(
        self,
        seeds: dict[str, Any] | None = None,
        *,
        planned: int | None = None,
        run: dict[str, Any] | None = None,
        say: Callable[[str], None] | None = None,
    ) -> dict[str, Any]:
        """Select the released traces (mode balance), write them and the provenance
        sidecar, remove orphan files, write ``taxonomy.yaml`` if missing and
        ``manifest.json``; returns the manifest. ``seeds``/``planned``/``run`` (this
        run's modes, per-seed count, concurrency, max mode share) describe this run (kept
        from the old manifest when ``None``; only then is it read, so a build rewrites a
        damaged one). ``say`` hears one line as each phase of the selection starts."""
        say = say or (lambda line: None)
        given = seeds is not None and planned is not None and run is not None
        old = {} if given else (read_manifest(self.root, fresh_validation=False) or {})
        run = run if run is not None else old.get("run", {})
        selected, over, details = self._select(run, say)
        say(f"writing the release: {len(selected)} traces")
        self._release(selected)
        self._sweep({e.ref or "" for e in selected})
        write_taxonomy(self.root)
        entries = [
            e
            if e.key not in over
            else e.model_copy(update={"status": "dropped", "reason": over[e.key], "detail": details.get(e.key, "")})
            for e in self.entries.values()
        ]
        manifest = compute_manifest(
            self.header,
            entries,
            seeds if seeds is not None else old.get("seeds", {}),
            planned if planned is not None else old.get("counts", {}).get("planned"),
        )
        manifest["run"] = run
        manifest["warnings"] = build_warnings(run, selected)
        manifest["validation"] = validation_counts(self.root, manifest)
        atomic_write_bytes(self.root / MANIFEST, jsonio.dumps(manifest, indent=True) + b"\n")
        return manifest

    def _select(
        self, run: dict[str, Any], say: Callable[[str], None]
    ) -> tuple[list[Entry], dict[str, str], dict[str, str]]:
        """The released entries, the keys left out with their reason and the details of
        those that have one. First the adversarial filter
        (:mod:`.build_adversarial`, when ``run["adversarial"]["filter"]``; its report replaces
        that section of ``run``) leaves out the items a learned attacker finds; then
        :func:`balance` under ``run``'s caps selects from the rest. The picks of
        :data:`~whenpro_core.dataset.build_plan.POOL_FORM_BASELINES` read the other traces,
        so those of :data:`FLAGGED_ON_POOL` are taken against the kept pool (capped with
        the other form picks), and each is then checked against the selection itself,
        whose smaller corpus makes more steps rare: while one picks more of its labels than
        the ``form_pick`` cap, one of those picks is left out of the pool (reason
        ``form_pick``) and the release is selected again. A code_pair release balanced on
        its pool's picks alone was 19 points above random by the rarest template.
        Those rounds can shrink a release round after round (15 -> 5 -> 4 traces: each
        new selection has rare steps of its own), so the first selection is also
        repaired by local moves (:func:`_repair`), and the release is whichever of the
        two holds more failure modes, then more traces."""
        pool = self.kept()
        say(f"reading the judge views of {len(pool)} kept traces")
        views = {e.key: _labelled_view(self.root / (e.file or "")) for e in pool if _has_file(self.root, e)}
        seed = int(self.header["options"].get("seed", 0))
        ordered = seeded_order(_with_pool_picks(pool, views), seed)
        caps = (
            float(run.get("max_mode_share", MAX_MODE_SHARE)),
            run.get("step_classes") or {},
            int(run.get("per_seed", 1)),
        )

        def select(entries: list[Entry]) -> tuple[list[Entry], dict[str, str]]:
            return select_release(entries, views, *caps)

        learnable: dict[str, str] = {}
        if (run.get("adversarial") or {}).get("filter"):
            from whenpro_core.dataset.build_adversarial import filtered_release  # scikit-learn: loaded only here

            say(f"adversarial filter: learned attacker on {len(ordered)} items, then the release selection")
            chosen, over, learnable, run["adversarial"] = filtered_release(ordered, views, seed, select)
        else:
            say(f"balancing the release from {len(ordered)} items")
            chosen, over = select(ordered)
        named = {e.key: e for e in pool}
        return sorted((named[e.key] for e in chosen), key=lambda e: e.id or e.key), over, learnable

    def _staged(self, entry: Entry) -> dict[str, Any]:
        doc: dict[str, Any] = jsonio.loads((self.root / (entry.file or "")).read_bytes())
        return doc

    def _release(self, selected: list[Entry]) -> None:
        """Write the released documents (or JSONL files) and ``provenance.json``."""
        provenance: dict[str, Any] = {}
        by_modality: dict[str, list[dict[str, Any]]] = {}
        for e in selected:
            public, record = split_document(self._staged(e))
            provenance[e.id or e.key] = {"seed": e.seed, "step": e.step, "agent": e.agent, "mode": e.mode, **record}
            if self.layout == "jsonl":
                by_modality.setdefault(_safe(e.modality or "text"), []).append(public)
            else:
                atomic_write_bytes(self.root / self.release_ref(e)[0], jsonio.dumps(public, indent=True) + b"\n")
        if self.layout == "jsonl":
            self._write_jsonl(by_modality)
        atomic_write_bytes(
            self.root / PROVENANCE,
            jsonio.dumps({"format": PROVENANCE_FORMAT, "traces": dict(sorted(provenance.items()))}, indent=True)
            + b"\n",
        )

    def _write_jsonl(self, by_modality: dict[str, list[dict[str, Any]]]) -> None:
        data = self.root / "data"
        for modality, docs in by_modality.items():
            _stream_atomic(data / f"{modality}.jsonl", docs)
        for stale in data.glob("*.jsonl") if data.is_dir() else []:
            if stale.stem not in by_modality:
                stale.unlink()

    def _sweep(self, released: set[str]) -> None:
        named = {e.file for e in self.entries.values() if e.status == "kept" and e.file}
        for place in (self.root / BUILD_DIR / "rows", self.root / "data_release", self.root / "data"):
            if not place.is_dir():
                continue
            for path in place.rglob("*"):
                if not path.is_file():
                    continue
                rel = path.relative_to(self.root).as_posix()
                if place.name == "rows":
                    mine = rel not in named
                else:
                    mine = path.suffix == ".json" and bool(BUILD_ID.match(path.stem)) and rel not in released
                torn = path.name.startswith(".") and path.name.endswith(".tmp")
                if mine or torn:
                    path.unlink()


def select_release(
    pool: list[Entry],
    views: dict[str, tuple[AuditTrace, Label | None]],
    share: float,
    classes: dict[str, float],
    per_seed: int,
    work: Work | None = None,
) -> tuple[list[Entry], dict[str, str]]:
    """The release of ``pool`` (kept entries with their pool picks; ``views``: key -> audit
    view and label of each staged trace) and the keys left out with their reason, under
    the caps of :func:`balance` and the ``form_pick`` cap of each baseline that reads the
    release itself (:meth:`BuildStore._select`). Each search spends its own budget
    (:meth:`Work.for_pool`); the rounds of leaving a pick out and selecting again stop
    after :data:`RESELECT_BUDGETS` budgets (the repair's release is then taken), so the
    whole costs at most quadratically in the pool. ``work``, when given, is told what
    was spent."""
    rounds = Work(RESELECT_BUDGETS * Work.for_pool(len(pool)).limit)
    first, first_out = _counted(rounds, balance, pool, share, classes, per_seed)
    left_out: dict[str, str] = {}
    selected, over = first, first_out
    while own := _over_cap(selected, views, _own_pick_limit(selected), rounds):
        if not rounds.left:
            selected = []  # not a release: the repair's is
            break
        left_out[_first_to_leave(selected, own)] = "form_pick"
        rest = [e for e in pool if e.key not in left_out]
        selected, over = _counted(rounds, balance, rest, share, classes, per_seed)
    repairs = Work.for_pool(len(pool))
    if work is not None:
        work.spend(rounds.spent)
    if not left_out:  # the largest selection under the caps holds on itself
        return selected, over
    repaired, trimmed = _repair(first, pool, views, _release_caps(pool, share, classes, per_seed), repairs)
    if work is not None:
        work.spend(repairs.spent)
    if _richer(repaired, selected):
        taken = {e.key for e in repaired}
        return repaired, {e.key: trimmed.get(e.key) or first_out[e.key] for e in pool if e.key not in taken}
    return selected, {**over, **left_out}


def order_id(seed: int, key: str) -> str:
    """The stand-in id that orders attempt ``key`` wherever the release search takes
    entries in id order: a hash of ``--seed`` and the key, so the choice depends only on
    the runs, the options and ``--seed``, never on the random name salt (two fresh builds of
    the same runs released 2 of 9 items differently when the salted ids ordered it)."""
    return hashlib.sha256(f"{seed}|{key}".encode()).hexdigest()[:16]


def seeded_order(entries: list[Entry], seed: int) -> list[Entry]:
    """``entries`` in key order, each with its :func:`order_id` as its ``id`` (copies: the
    search reads only ``id`` and ``key`` of them to order and break ties)."""
    return [e.model_copy(update={"id": order_id(seed, e.key)}) for e in sorted(entries, key=lambda e: e.key)]


def _counted(
    total: Work, search: Callable[..., tuple[list[Entry], dict[str, str]]], *args: Any
) -> tuple[list[Entry], dict[str, str]]:
    """``search(*args, work=...)`` with a budget of its own (:meth:`Work.for_pool` of the
    entries ``args[0]``), its spending added to ``total``."""
    own = Work.for_pool(len(args[0]))
    try:
        return search(*args, work=own)
    finally:
        total.spend(own.spent)


def _has_file(root: Path, entry: Entry) -> bool:
    """Whether ``entry`` knows its form picks and has its staged document (journals from
    before ``form_picks`` was recorded get no pool picks)."""
    return entry.form_picks is not None and bool(entry.file) and (root / (entry.file or "")).is_file()


def _labelled_view(path: Path) -> tuple[AuditTrace, Label | None]:
    """The audit's view of the staged document at ``path`` and its label."""
    view = audit_view(trace := load_trace(path))
    return view, label_of(trace, view)


def _with_pool_picks(entries: list[Entry], views: dict[str, tuple[AuditTrace, Label | None]]) -> list[Entry]:
    """``entries`` with the picks of :data:`FLAGGED_ON_POOL` against the entries' own
    traces (``views``: key -> audit view and label; entries without one are the corpus
    of none) added to their ``form_picks``."""
    among = [e for e in entries if e.key in views]
    found = pool_form_picks([(views[e.key][0], e.step, views[e.key][1]) for e in among])
    picks = dict(zip((e.key for e in among), found, strict=True))
    out = []
    for e in entries:
        had = e.form_picks or []
        new = [n for n in picks.get(e.key, []) if n not in had and n in FLAGGED_ON_POOL]
        out.append(e.model_copy(update={"form_picks": [*had, *new]}) if new else e)
    return out


def _over_cap(
    selected: list[Entry], views: dict[str, tuple[AuditTrace, Label | None]], limit: int, work: Work
) -> set[str]:
    """Keys of the entries of ``selected`` that the first baseline of
    :data:`~whenpro_core.dataset.build_plan.POOL_FORM_BASELINES` picking more than ``limit``
    of them picks against the traces of ``selected`` alone (what ``whenpro audit`` reads
    in the release); empty when none does."""
    return next((keys for keys in _own_picks(selected, views, work).values() if len(keys) > limit), set())


def _first_to_leave(selected: list[Entry], own: set[str]) -> str:
    """Which of the picks ``own`` of ``selected`` to leave out first: one the pool's
    corpus picks as well, then one of the mode most held in ``selected`` (a rare mode
    stays in the release), then by id."""
    held = Counter(e.mode for e in selected)
    picked = [e for e in selected if e.key in own]
    pooled = set(POOL_FORM_BASELINES)
    return min(picked, key=lambda e: (not pooled & set(e.form_picks or ()), -held[e.mode], e.id or e.key)).key


def _own_pick_limit(selected: list[Entry]) -> int:
    """The ``form_pick`` cap of ``selected`` for a baseline that reads the release itself:
    its own mean chance plus :data:`FORM_PICK_SLACK`, of its size."""
    return _form_pick_limit(_mean_chance(selected) or 0.0)("pick", {"": selected}, len(selected))


def _own_picks(
    selected: list[Entry], views: dict[str, tuple[AuditTrace, Label | None]], work: Work
) -> dict[str, set[str]]:
    """Baseline of :data:`POOL_FORM_BASELINES` -> keys of the entries of ``selected`` whose
    labelled step it picks with the traces of ``selected`` alone as the corpus (each trace
    read is one evaluation of ``work``)."""
    work.spend(len(selected))
    among = [e for e in selected if e.key in views]
    found = pool_form_picks([(views[e.key][0], e.step, views[e.key][1]) for e in among])
    return {name: {e.key for e, p in zip(among, found, strict=True) if name in p} for name in POOL_FORM_BASELINES}


def _excess(chosen: list[Entry], views: dict[str, tuple[AuditTrace, Label | None]], caps: list[Cap], work: Work) -> int:
    """How far ``chosen`` is from a release: the entries over each cap's limit (measured
    on ``chosen``, as :func:`_holds` does) plus the picks over the ``form_pick`` cap of
    each baseline that reads the release itself (:func:`_own_picks`); 0 for a release."""
    over = sum(len(g) - limit for _, g, limit in _groups(chosen, caps) if len(g) > limit)
    limit = _own_pick_limit(chosen)
    return over + sum(max(0, len(keys) - limit) for keys in _own_picks(chosen, views, work).values())


def _groups(chosen: list[Entry], caps: list[Cap]) -> Iterator[tuple[str, list[Entry], int]]:
    """``(drop reason, group, its limit)`` of every group of every cap on ``chosen``."""
    for reason, group_of, limit in caps:
        groups: dict[str, list[Entry]] = {}
        for e in chosen:
            groups.setdefault(group_of(e), []).append(e)
        for k, g in groups.items():
            yield reason, g, limit(k, groups, len(chosen))


def _repair(
    start: list[Entry],
    pool: list[Entry],
    views: dict[str, tuple[AuditTrace, Label | None]],
    caps: list[Cap],
    work: Work,
) -> tuple[list[Entry], dict[str, str]]:
    """A release made from ``start`` (a selection under the caps read on the pool) by local
    moves: while it is not a release (:func:`_excess`), the entry whose leaving brings it
    closest is left out (of the suspects: the picks of a baseline reading the release and
    the entries of groups over their caps; a mode's last entry last); then each entry of
    ``pool`` that keeps it a release comes in, the modes it holds least first. Returns
    the release and the keys left out with their reason. Taking each selection's own
    picks into a new selection instead shrank one code_pair release 22 -> 12 (each new
    selection had its own rare steps): a move changes one entry, not the whole set. Once
    ``work`` is spent, the entry to leave is chosen without trying each, and none comes in."""
    chosen, reasons = list(start), {}
    while chosen and _excess(chosen, views, caps, work):
        leave, reason = _least_missed(chosen, views, caps, work)
        chosen.remove(leave)
        reasons[leave.key] = reason
    grown = work.left
    while grown:
        grown = False
        held = Counter(e.mode for e in chosen)
        inside = {e.key for e in chosen}
        for e in sorted((e for e in pool if e.key not in inside), key=lambda e: (held[e.mode], e.id or e.key)):
            if not work.left:
                break
            if not _excess([*chosen, e], views, caps, work):
                chosen.append(e)
                reasons.pop(e.key, None)
                held[e.mode] += 1
                grown = True
    return sorted(chosen, key=lambda e: e.id or e.key), reasons


def _least_missed(
    chosen: list[Entry], views: dict[str, tuple[AuditTrace, Label | None]], caps: list[Cap], work: Work
) -> tuple[Entry, str]:
    """The entry of ``chosen`` that :func:`_repair` leaves out next, and why: of the
    suspects (a mode's last entry last, then the modes held most first), the one whose
    leaving leaves the least excess; once ``work`` is spent, only the first
    :data:`REPAIR_LOOKAHEAD` suspects are tried."""
    suspects: dict[str, str] = {}
    for keys in _own_picks(chosen, views, work).values():
        suspects.update(dict.fromkeys(keys, "form_pick"))
    for reason, group, limit in _groups(chosen, caps):
        if len(group) > limit:
            for e in group:
                suspects.setdefault(e.key, reason)
    held = Counter(e.mode for e in chosen)
    ranked = sorted(
        (e for e in chosen if e.key in suspects) if suspects else chosen,
        key=lambda e: (held[e.mode] == 1, -held[e.mode], e.id or e.key),
    )
    tried = ranked if work.left else ranked[:REPAIR_LOOKAHEAD]
    pick = min(tried, key=lambda e: _excess([x for x in chosen if x is not e], views, caps, work))
    return pick, suspects.get(pick.key, "form_pick")


def _richer(a: list[Entry], b: list[Entry]) -> bool:
    """Whether release ``a`` holds more failure modes than ``b``, or as many and more traces."""
    return (len({e.mode for e in a}), len(a)) > (len({e.mode for e in b}), len(b))


def split_document(doc: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """A staged document -> (the released document, the provenance record).

    The released document keeps :data:`PUBLIC_FIELDS` only, and its trajectory entries
    lose the replay markers (:data:`~whenpro_core.trace.model.LABEL_LEAKING_FIELDS`); the
    record holds the rest (``injection``, ``env``, ...) and ``markers``: entry position ->
    the markers it had."""
    public = {k: doc[k] for k in PUBLIC_FIELDS if k in doc}
    record: dict[str, Any] = {k: v for k, v in doc.items() if k not in PUBLIC_FIELDS}
    markers: dict[str, Any] = {}
    trajectory = []
    for n, entry in enumerate(doc.get("trajectory") or []):
        if isinstance(entry, dict):
            hidden = {k: entry[k] for k in LABEL_LEAKING_FIELDS if k in entry}
            if hidden:
                markers[str(n)] = hidden
            entry = {k: v for k, v in entry.items() if k not in LABEL_LEAKING_FIELDS}
        trajectory.append(entry)
    public["trajectory"] = trajectory
    if markers:
        record["markers"] = markers
    return public, record


def _cap(
    groups: dict[str, list[Entry]], limit: Callable[[str, int], int]
) -> tuple[dict[str, list[Entry]], list[Entry]]:
    """Cut each group to ``limit(group key, total kept)`` entries (in id order) until
    every group fits; returns the groups and the entries cut."""
    cut: list[Entry] = []
    while True:
        total = sum(len(g) for g in groups.values())
        over = {k: g for k, g in groups.items() if len(g) > limit(k, total)}
        if not over:
            return groups, cut
        key = max(over, key=lambda k: len(over[k]) - limit(k, total))
        cut.append(groups[key].pop())


def balance(
    kept: list[Entry],
    share: float,
    classes: dict[str, float],
    per_seed: int | None = None,
    *,
    quick: bool = False,
    work: Work | None = None,
) -> tuple[list[Entry], dict[str, str]]:
    """The kept entries to release, and the keys left out with their reason.

    * ``step_class``: the labels are spread over kinds of step (``agent/kind``) as the
      candidate steps are (``classes``: class -> share among the candidate steps, taken
      among the classes that hold any kept label, since some kinds of step never give
      a decisive error): a class holds at most ``ceil(share_c * released)`` labels,
      so no kind of step (the plans, say) holds more of the labels than of the steps a
      label could be on.
    * ``position``: no tenth of the runs (relative position of the labelled step, as the
      audit's "common position" prior reads it) holds more than :data:`POSITION_SHARE`
      of the released traces (at least 2 each); on with the mode cap.
    * ``mode_share``: no failure mode above ``share`` of the released traces; with fewer
      modes than ``1/share`` each mode keeps at most as many as the rarest present one.

    The release is the largest size ``n`` at which taking entries in id order (the
    release's ids are :func:`order_id`: a random order reproducible from ``--seed``), each
    while every cap at its limit for
    ``n`` still holds, reaches ``n`` entries, then grown by exchanges (:func:`_exchanges`).
    * ``per_seed``: at most ``per_seed`` released traces per seed run (an adaptive build
      may hold more decisive items of a seed run than that; ``None``: no such cap).

    ``quick`` tries two orders per size instead of :data:`FILL_TRIES` more (planning
    estimates, :mod:`.build_adapt`; never the release itself). ``work`` counts the
    candidate evaluations (default: a fresh :meth:`Work.for_pool` budget); past its limit
    each size gets only its first greedy pass.
    Cutting a crowded pool down instead shrinks the release the other caps are measured
    against, cap after cap (issue 14 measured a class kept at 30% of a release cut to its
    share before the position and mode caps, and code_pair releases of 3 out of 20
    decisive items). The caps are then applied in the order above until none cuts (only
    the fewer-modes rule can still cut); each entry left out carries the first cap it
    breaks. ``share`` >= 1 and an empty ``classes`` turn the caps off."""
    order = sorted(kept, key=lambda e: e.id or e.key)
    caps = _release_caps(kept, share, classes, per_seed)
    chosen = _grow(order, caps, quick=quick, work=work or Work.for_pool(len(kept)))
    taken = {e.key for e in chosen}
    out = {e.key: _broken(e, chosen, caps) for e in order if e.key not in taken}
    while caps:
        before = len(out)
        for reason, group_of, limit in caps:
            chosen, cut = _apply_cap(chosen, group_of, limit)
            out.update({e.key: reason for e in cut})
        if len(out) == before:
            break
    return chosen, out


def _release_caps(kept: list[Entry], share: float, classes: dict[str, float], per_seed: int | None) -> list[Cap]:
    """The caps :func:`balance` holds a release of ``kept`` to (:func:`_caps`, with the
    pool's classes, modes and mean chance)."""
    return _caps(
        share,
        classes,
        present=sum(classes.get(c, 0.0) for c in {e.step_class or "?" for e in kept}),
        modes=len({e.mode for e in kept}),
        per_seed=per_seed,
        chance=_mean_chance(kept),
    )


def _mean_chance(kept: list[Entry]) -> float | None:
    """The mean random chance of the labelled step over the entries that know it."""
    known = [e.chance for e in kept if e.chance is not None]
    return sum(known) / len(known) if known else None


def _grow(order: list[Entry], caps: list[Cap], *, quick: bool = False, work: Work) -> list[Entry]:
    """The largest release :func:`balance` finds: for each size ``n`` from 1 up, a
    selection of ``n`` entries under every cap at its limit for ``n`` (:func:`_selections`, in
    the orders of :func:`_orders`; skipped when a cap alone leaves no room,
    :func:`_may_reach`); the largest size reached is the release (its caps hold at its
    own size), or a smaller one that holds more failure modes (:func:`_most_modes`).
    The mode cap is not monotone in ``n`` (at a 25% share a release of 12 may hold 4
    modes, one of 10 needs 5), so the search goes on past a size it cannot reach and
    stops after :func:`_gap` sizes in a row that it cannot."""
    keys = _Groups.of(order, caps)
    best: list[int] = []
    misses = 0
    for target in range(1, len(order) + 1):
        picked = next(_fitting(order, keys, caps, target, work, quick), None)
        if picked is None:
            misses += 1
            if misses >= _gap(caps, target):
                break
            continue
        best, misses = picked, 0
    if best and not quick:
        more = Work(work.limit)  # a budget of its own: holding every mode matters more than size
        best = _most_modes(order, keys, caps, best, more)
        work.spend(more.spent)
    return sorted((order[i] for i in best), key=lambda e: e.id or e.key)


def grows_past(
    kept: list[Entry], share: float, classes: dict[str, float], per_seed: int | None, size: int, work: Work
) -> bool:
    """Whether the quick search of :func:`balance` finds a selection of ``kept`` of more
    than ``size`` entries under the caps: sizes ``size + 1`` on, up to :func:`_gap` of them
    (each size's greedy pass, and while ``work`` lasts a second order and exchanges). The
    planning estimate of :func:`.build_adapt.grows`: one size's search, not every size's."""
    order = sorted(kept, key=lambda e: e.id or e.key)
    caps = _release_caps(kept, share, classes, per_seed)
    keys = _Groups.of(order, caps)
    last = min(len(order), size + _gap(caps, size + 1))
    return any(next(_fitting(order, keys, caps, n, work, quick=True), None) for n in range(size + 1, last + 1))


def _most_modes(order: list[Entry], keys: _Groups, caps: list[Cap], best: list[int], work: Work) -> list[int]:
    """The selection released instead of the largest, ``best``: the one that holds the most
    failure modes among the selections of its size down to :data:`MODE_SIZE_SHARE` fewer
    traces (not below 10), the larger on a tie; the search stops at the first size that
    holds every mode of ``order``. A mode with few decisive items is not left out where
    another order, or a few traces less, keeps it: code_pair's R.3 was in no selection of
    21 traces of one pool, and in one of 16. Only while ``work`` lasts."""
    everything = len({e.mode for e in order})
    floor = max(math.ceil(len(best) * (1 - MODE_SIZE_SHARE)), min(len(best), 10))
    fits = [best]
    for n in range(len(best), floor - 1, -1):
        if not work.left:
            break
        fits += _fitting(order, keys, caps, n, work)
        if max(len({order[i].mode for i in p}) for p in fits) == everything:
            break
    return max(fits, key=lambda p: (len({order[i].mode for i in p}), len(p)))


def _fitting(
    order: list[Entry], keys: _Groups, caps: list[Cap], target: int, work: Work, quick: bool = False
) -> Iterator[list[int]]:
    """The selections of :func:`_selections` of exactly ``target`` entries of ``order``
    under which every cap holds with its groups known (:func:`_holds`)."""
    for p in _selections(keys, keys.limits(caps, target), target, work, quick):
        work.spend(len(p))
        if len(p) == target and _holds([order[i] for i in p], caps):
            yield p


def _holds(chosen: list[Entry], caps: list[Cap]) -> bool:
    """Whether every cap holds on ``chosen`` with its groups known, as :func:`balance`
    checks the release after growing it (the selection's own mean chance for the
    ``form_pick`` caps, the modes it holds for the mode cap). A selection grown under the
    limits without groups that breaks these was cut cap after cap: one code_pair release
    of 17 fell to 4 when one item left the pool."""
    return all(len(g) <= limit for _, g, limit in _groups(chosen, caps))


@dataclass(frozen=True)
class _Groups:
    """The entries' groups, numbered once for a search: ``rows[i]``, entry ``i``'s group
    under each cap (a number: ``cap[g]`` the cap's index, ``name[g]`` the group, ``size[g]``
    the entries in it)."""

    rows: list[tuple[int, ...]]
    cap: list[int]
    name: list[str]
    size: list[int]

    @classmethod
    def of(cls, order: list[Entry], caps: list[Cap]) -> _Groups:
        """The groups of the entries ``order`` under ``caps``."""
        number: dict[tuple[int, str], int] = {}
        rows = [tuple(number.setdefault((j, g(e)), len(number)) for j, (_, g, _) in enumerate(caps)) for e in order]
        size = [0] * len(number)
        for row in rows:
            for g in row:
                size[g] += 1
        return cls(rows, [j for j, _ in number], [k for _, k in number], size)

    def limits(self, caps: list[Cap], target: int) -> list[int]:
        """Each group's limit for a release of ``target`` entries."""
        return [caps[j][2](k, None, target) for j, k in zip(self.cap, self.name, strict=True)]

    def binding(self, limits: list[int]) -> list[int]:
        """Each entry's class of binding groups (those with more entries than their limit,
        as a number): two entries of one class fit, or not, alike."""
        number: dict[tuple[int, ...], int] = {}
        rows = (tuple(g if self.size[g] > limits[g] else -1 for g in row) for row in self.rows)
        return [number.setdefault(row, len(number)) for row in rows]


def _gap(caps: list[Cap], target: int) -> int:
    """Sizes in a row :func:`_grow` tries past the last one it reached: two steps of the
    mode cap (the size at which each mode may hold one more label, twice)."""
    step = next((target / max(1, limit("", None, target)) for r, _, limit in caps if r == "mode_share"), 1)
    return max(4, math.ceil(2 * step))


def _selections(keys: _Groups, limits: list[int], target: int, work: Work, quick: bool = False) -> Iterator[list[int]]:
    """Selections of up to ``target`` entries (indices) under ``limits``, one per order of
    :func:`_orders` (past the first only while ``work`` lasts); none when a cap alone
    leaves no room for ``target``."""
    work.spend(len(keys.rows))
    if not _may_reach(keys, limits, target):
        return
    binding: list[int] | None = None
    for n, mix in enumerate(_orders(keys, target, 0 if quick else FILL_TRIES)):
        if n and not work.left:
            return
        counts = _Counts([keys.rows[i] for i in mix], limits, [0] * len(limits))
        inside = _greedy(counts, target, work)
        if len(inside) < target and work.left:
            work.spend(len(mix))  # the binding classes
            binding = binding or keys.binding(limits)
            _exchanges(counts, [binding[i] for i in mix], inside, target, work)
        yield [mix[i] for i in inside]


def _orders(keys: _Groups, target: int, shuffles: int = FILL_TRIES) -> Iterator[list[int]]:
    """The orders :func:`_grow` fills in: the given (salted-hash) one, the entries in the
    rarest groups first (an entry of a kind few others share is the one a release can
    least do without), then ``shuffles`` seeded shuffles; each a list of indices."""
    n = len(keys.rows)
    yield list(range(n))
    yield sorted(range(n), key=lambda i: -sum(1 / keys.size[g] for g in keys.rows[i]))
    for shuffle in range(shuffles):
        mix = list(range(n))
        random.Random(f"{target}:{shuffle}").shuffle(mix)
        yield mix


def _may_reach(keys: _Groups, limits: list[int], target: int) -> bool:
    """Whether every cap alone leaves room for ``target`` entries (the sum over its groups
    of min(entries in the group, its limit)): a quick bound before :func:`_greedy`."""
    room = Counter[int]()
    for g, j in enumerate(keys.cap):
        room[j] += min(keys.size[g], limits[g])
    return all(n >= target for n in room.values())


def _greedy(counts: _Counts, target: int, work: Work) -> list[int]:
    """Indices of up to ``target`` entries of ``counts`` taken in order while they fit (each
    entry checked is one evaluation of ``work``)."""
    inside: list[int] = []
    for i in range(len(counts.rows)):
        if len(inside) < target and counts.fits(i, work):
            counts.move(i, 1)
            inside.append(i)
    return inside


def _exchanges(counts: _Counts, binding: list[int], inside: list[int], target: int, work: Work) -> None:
    """Grow ``inside`` by exchanges (an entry left out comes in for one taken whose groups
    it shares where it did not fit, when that lets a further entry in) until ``target``,
    no exchange helps or ``work`` is spent."""
    while len(inside) < target and work.left and _exchange(counts, binding, inside, work):
        pass


@dataclass
class _Counts:
    """The caps' counts of a selection being grown: ``rows[i]``, entry ``i``'s groups
    (:class:`_Groups` numbers), ``limits`` and ``held`` per group."""

    rows: list[tuple[int, ...]]
    limits: list[int]
    held: list[int]
    _sets: list[frozenset[int]] | None = None

    def fits(self, i: int, work: Work) -> bool:
        """Whether entry ``i`` fits; one evaluation."""
        work.spend()
        return all(self.held[g] < self.limits[g] for g in self.rows[i])

    def full(self, i: int) -> set[int]:
        """Entry ``i``'s groups at their limit (it fits when none is, or for an entry taken
        out that shares each of them)."""
        return {g for g in self.rows[i] if self.held[g] >= self.limits[g]}

    @property
    def sets(self) -> list[frozenset[int]]:
        """``rows`` as sets."""
        if self._sets is None:
            self._sets = [frozenset(row) for row in self.rows]
        return self._sets

    def move(self, i: int, sign: int) -> None:
        """Count entry ``i`` in (``sign`` 1) or out (-1)."""
        for g in self.rows[i]:
            self.held[g] += sign


class _Scan:
    """The entries left out when an exchange starts, to find the first that fits at once
    (numpy over their groups) while counting the evaluations one by one would spend."""

    def __init__(self, counts: _Counts, outside: list[int]) -> None:
        import numpy as np  # deliberate lazy import: numpy only for a search that exchanges

        self.np, self.counts, self.outside = np, counts, outside
        width = len(counts.rows[0]) if counts.rows else 0
        self.groups = np.array([counts.rows[i] for i in outside], dtype=np.intp).reshape(len(outside), width)
        self.limits = np.array(counts.limits, dtype=np.intp)[self.groups]
        self.where = {i: p for p, i in enumerate(outside)}

    def first_fitting(self, x: int, work: Work) -> int | None:
        """The first entry left out, in order and other than ``x`` (just taken in), that
        fits; ``work`` spends one evaluation per entry a one-by-one scan checks."""
        np = self.np
        fitting = (np.array(self.counts.held, dtype=np.intp)[self.groups] < self.limits).all(axis=1)
        px = self.where[x]
        fitting[px] = False
        hits = np.flatnonzero(fitting)
        if not hits.size:
            work.spend(len(self.outside) - 1)
            return None
        p = int(hits[0])
        work.spend(p + 1 - (px < p))
        return self.outside[p]


def _exchange(counts: _Counts, binding: list[int], inside: list[int], work: Work) -> bool:
    """One exchange of :func:`_exchanges` that grows ``inside`` by one; ``False`` when none
    does or ``work`` runs out. Entries left out are tried in order, each against the
    entries taken (in ``inside``'s order); a pair (in, out) that did not help is not tried
    again for entries of the same ``binding`` classes (:meth:`_Groups.binding`): they would
    fare alike. So an entry left out is tried against the first taken entry of each class
    not yet failed with its own (each try one evaluation), and a class that failed with
    every class taken is passed over."""
    taken = set(inside)
    outside = [i for i in range(len(counts.rows)) if i not in taken]
    scan = _Scan(counts, outside)
    failed: dict[int, set[int]] = {}
    exhausted: set[int] = set()
    firsts: list[int] | None = None
    for x in outside:
        if not work.left:
            return False
        if binding[x] in exhausted:
            continue
        tried = failed.setdefault(binding[x], set())
        firsts = firsts or _first_of_each_class(inside, binding)
        untried = [y for y in firsts if binding[y] not in tried]
        full = counts.full(x)  # x fits for y when y leaves each of these groups
        spent = 0
        for n in [n for n, y in enumerate(untried) if full <= counts.sets[y]]:
            work.spend(n + 1 - spent)  # one evaluation per pair tried up to this one
            spent = n + 1
            if _swap_helps(counts, scan, inside, x, untried[n], work):
                return True
            firsts = None  # the swap undone put its entry taken out last
        work.spend(len(untried) - spent)
        tried.update(binding[y] for y in untried)
        exhausted.add(binding[x])
    return False


def _first_of_each_class(inside: list[int], binding: list[int]) -> list[int]:
    """The first entry of ``inside`` of each binding class, in ``inside``'s order."""
    seen: dict[int, int] = {}
    for y in inside:
        seen.setdefault(binding[y], y)
    return list(seen.values())


def _swap_helps(counts: _Counts, scan: _Scan, inside: list[int], x: int, y: int, work: Work) -> bool:
    """Take ``x`` in for ``y``; when a further entry then fits, take it in too and say so,
    else undo the swap (``y`` goes back at the end of ``inside``)."""
    counts.move(y, -1)
    inside.remove(y)
    counts.move(x, 1)
    inside.append(x)
    z = scan.first_fitting(x, work)
    if z is not None:
        counts.move(z, 1)
        inside.append(z)
        return True
    counts.move(x, -1)
    inside.remove(x)
    counts.move(y, 1)
    inside.append(y)
    return False


def _broken(entry: Entry, chosen: list[Entry], caps: list[Cap]) -> str:
    """The first cap ``entry`` breaks when added to the release ``chosen``."""
    n = len(chosen) + 1
    for reason, group_of, limit in caps:
        k = group_of(entry)
        if sum(1 for e in chosen if group_of(e) == k) + 1 > limit(k, None, n):
            return reason
    return "mode_share"  # fits alone, but no release of a larger size holds it


def _picked_by(name: str) -> Callable[[Entry], str]:
    """The ``form_pick`` group of an entry for baseline ``name``: ``pick`` when it picks
    the labelled step, ``-`` otherwise (or unknown)."""
    return lambda e: "pick" if name in (e.form_picks or ()) else "-"


def _form_pick_limit(chance: float) -> CapLimit:
    """At most ``(chance + FORM_PICK_SLACK) * n`` picks of one baseline, rounded down (at
    least 2). ``chance`` is the selection's own mean chance when its groups are known
    (the audit's random baseline on the release; the pool's was 2 points above one
    release's, and rounding up let a length outlier reach 10.4 points above random),
    else the pool's."""

    def limit(k: str, groups: dict[str, list[Entry]] | None, n: int) -> int:
        if k != "pick":
            return n
        own = _mean_chance([e for g in (groups or {}).values() for e in g])
        return max(2, math.floor(round(((own if own is not None else chance) + FORM_PICK_SLACK) * n, 9)))

    return limit


def _caps(
    share: float,
    classes: dict[str, float],
    present: float | None = None,
    modes: int = 0,
    per_seed: int | None = None,
    chance: float | None = None,
) -> list[Cap]:
    """``(reason, group of an entry, limit(group, groups or None, total))`` of each cap
    :func:`balance` applies (its docstring). ``present`` is the share of the classes that
    hold any label (else taken from ``groups``); with ``groups`` None (the greedy growth)
    the mode limit is the plain share, or none when the pool holds fewer than ``1/share``
    ``modes`` (the fewer-modes rule cuts afterwards, on the groups). ``chance`` is the
    pool's mean random chance of the labelled step (``None``: no ``form_pick`` caps)."""
    caps: list[Cap] = []

    def class_limit(k: str, groups: dict[str, list[Entry]] | None, n: int) -> int:
        held = present if present is not None else sum(classes.get(c, 0.0) for c in groups or {})
        return n if held <= 0 else math.ceil(classes.get(k, 0.0) / held * n)

    if classes:
        caps.append(("step_class", lambda e: e.step_class or "?", class_limit))
    if share < 1:
        caps.append(
            ("position", position_tenth, lambda k, g, n: n if k == "?" else max(2, math.ceil(POSITION_SHARE * n)))
        )

        def mode_limit(k: str, groups: dict[str, list[Entry]] | None, n: int) -> int:
            if groups is None and modes * share < 1:
                return n
            floor = min(len(v) for v in groups.values()) if groups and len(groups) * share < 1 else 0
            return floor or max(1, math.floor(share * n))

        caps.append(("mode_share", lambda e: e.mode, mode_limit))
        if chance is not None:
            names = LOCAL_FORM_BASELINES + FLAGGED_ON_POOL
            caps += [("form_pick", _picked_by(name), _form_pick_limit(chance)) for name in names]
    if per_seed is not None:
        caps.append(("per_seed", lambda e: e.seed, lambda k, g, n: per_seed))
    return caps


def _apply_cap(
    chosen: list[Entry], group_of: Callable[[Entry], str], limit: CapLimit
) -> tuple[list[Entry], list[Entry]]:
    """``chosen`` (in id order) grouped by ``group_of`` and cut with :func:`_cap`; returns
    the entries left, in id order, and those cut."""
    groups: dict[str, list[Entry]] = {}
    for e in chosen:
        groups.setdefault(group_of(e), []).append(e)
    groups, cut = _cap(groups, lambda k, n: limit(k, groups, n))
    return sorted((e for g in groups.values() for e in g), key=lambda e: e.id or e.key), cut


def position_tenth(entry: Entry) -> str:
    """The tenth (``"0"``..``"9"``) where the entry's labelled step sits: its position bin
    among the built trace's candidate steps (what the audit's "common position" prior
    reads), else, for a journal line from before it was recorded, its step index over the
    seed run's step count; ``"?"`` when neither is known."""
    if entry.position is not None:
        return str(entry.position)
    if not entry.steps:
        return "?"
    return str(min(9, 10 * entry.step_index // entry.steps))


def build_warnings(run: dict[str, Any], selected: list[Entry]) -> list[str]:
    """What a user of the dataset must know: the build stopped before it finished (its
    release is partial, unfiltered for detectability); twins (traces from one seed run)
    share a prefix, so a diff between them finds the injected step."""
    out = []
    if run.get("complete") is False:
        out.append(
            "the build stopped before it finished (interrupted, or attempts left to run): the release is "
            "partial and the detectability filter has not run on it; the same whenpro build command finishes it"
        )
    seeds = Counter(e.seed for e in selected)
    twins = sum(n for n in seeds.values() if n > 1)
    if twins or int(run.get("per_seed", 1)) > 1:
        out.append(
            f"--per-seed {run.get('per_seed')}: {twins} released traces share a seed run with another "
            "(twins share the prefix before the injected step; a diff between twins finds it)"
        )
    return out


def _remove_build(root: Path, entries: list[Entry]) -> None:
    """Start over: remove the files an old journal names, its staged rows, the JSONL
    files, the manifest and the journal (never ``validation.jsonl``)."""
    for e in entries:
        for rel in (e.file, (e.ref or "").partition("#")[0]):
            if rel and ".." not in Path(rel).parts:
                (root / rel).unlink(missing_ok=True)
    shutil.rmtree(root / BUILD_DIR / "rows", ignore_errors=True)
    shutil.rmtree(journal_layout(root).parts, ignore_errors=True)
    (root / BUILD_DIR / "journal.jsonl").unlink(missing_ok=True)
    (root / MANIFEST).unlink(missing_ok=True)
    (root / PROVENANCE).unlink(missing_ok=True)
    for p in (root / "data").glob("*.jsonl") if (root / "data").is_dir() else []:
        p.unlink()


def _stream_atomic(path: Path, docs: list[dict[str, Any]]) -> None:
    """Write ``path`` as JSONL rows built from the released documents, atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            for doc in docs:
                fh.write(to_jsonl_row(doc) + b"\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_taxonomy(root: Path) -> None:
    """Write the built-in taxonomy as ``taxonomy.yaml`` (``code: {name, description}``)
    unless ``root`` has one."""
    target = root / "taxonomy.yaml"
    if target.exists():
        return
    table = {m.code: {"name": m.name, "description": m.description or m.meaning} for m in Taxonomy.builtin()}
    atomic_write_text(target, yaml.safe_dump(table, sort_keys=False, allow_unicode=True, width=100))


# ---------------------------------------------------------------------- the manifest


def compute_manifest(
    header: dict[str, Any], entries: list[Entry], seeds: dict[str, Any], planned: int | None
) -> dict[str, Any]:
    """The manifest of a build from its journal (module docstring); pure."""
    kept = sorted((e for e in entries if e.status == "kept"), key=lambda e: e.id or "")
    dropped = [e for e in entries if e.status != "kept"]
    reasons = Counter(e.reason or "unknown" for e in dropped)
    n = len(entries)
    generated = n - reasons["generate_failed"]
    replayed = generated - reasons["replay_failed"]
    decisive = replayed - reasons["not_decisive"]
    return {
        "format": MANIFEST_FORMAT,
        "created": header.get("created"),
        "updated": datetime.now(UTC).isoformat(timespec="seconds"),
        "options": header.get("options", {}),
        "seeds": seeds,
        "counts": {
            "planned": planned if planned is not None else n,
            "attempted": n,
            "generated": generated,
            "replayed": replayed,
            "decisive": decisive,
            "kept": len(kept),
        },
        "dropped": {r: reasons.get(r, 0) for r in DROP_REASONS}
        | {r: c for r, c in reasons.items() if r not in DROP_REASONS},
        "kept_by_mode": dict(sorted(Counter(e.mode for e in kept).items())),
        "control": {
            "ran": sum(1 for e in entries if e.control is not None),
            "succeeded": sum(1 for e in entries if e.control is True),
        },
        "model_calls": _model_calls(entries, len(kept)),
        "kept_by_framework": dict(sorted(Counter(e.framework or "?" for e in kept).items())),
        "traces": [
            {
                "id": e.id,
                "ref": e.ref,
                "seed": e.seed,
                "step": e.step,
                "agent": e.agent,
                "mode": e.mode,
                "framework": e.framework,
                "modality": e.modality,
            }
            | ({"control": e.control} if e.control is not None else {})
            for e in kept
        ],
        "dropped_traces": [
            {"seed": e.seed, "step": e.step, "mode": e.mode, "reason": e.reason, "detail": e.detail}
            for e in sorted(dropped, key=lambda e: e.key)
        ],
    }


def read_manifest(root: str | Path, *, fresh_validation: bool = True) -> dict[str, Any] | None:
    """The manifest of the dataset at ``root`` (``None`` when there is none). With
    ``fresh_validation`` its ``validation`` section is recomputed from
    ``validation.jsonl`` (so readers always see current counts, whether or not
    ``whenpro build --revalidate`` ran). Raises TraceFormatError for an unreadable
    manifest."""
    data = load_manifest(root)
    if data is not None and fresh_validation:
        data["validation"] = validation_counts(root, data)
    return data


def revalidate(root: str | Path) -> dict[str, Any]:
    """Rewrite ``manifest.json`` with current validation counts (``whenpro build
    --revalidate``). Raises WhenproError when the folder holds no build manifest."""
    manifest = read_manifest(root, fresh_validation=True)
    if manifest is None:
        raise WhenproError(
            "no manifest.json here: not a dataset built by whenpro build",
            path=Path(root),
            expected="the --out folder of a whenpro build",
        )
    manifest["updated"] = datetime.now(UTC).isoformat(timespec="seconds")
    atomic_write_bytes(Path(root) / MANIFEST, jsonio.dumps(manifest, indent=True) + b"\n")
    return manifest


__all__ = [
    "BUILD_DIR",
    "BUILD_ID",
    "BuildStore",
    "LAYOUTS",
    "MANIFEST",
    "MAX_MODE_SHARE",
    "PROVENANCE",
    "PLAN_WORK_PER_PAIR",
    "PUBLIC_FIELDS",
    "WORK_FLOOR",
    "WORK_PER_PAIR",
    "Work",
    "balance",
    "build_warnings",
    "grows_past",
    "compute_manifest",
    "order_id",
    "seeded_order",
    "read_manifest",
    "revalidate",
    "split_document",
    "write_taxonomy",
]
