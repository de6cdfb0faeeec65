"""Which benchmark report files whenpro wrote itself, so that ``whenpro bench`` and
``whenpro report`` overwrite only those and never a user's ``report.md`` of the same name
(docs/architecture.md, 'Files whenpro writes': never overwrite user data without ``--force``).

Markers: ``report.json`` has ``format: whenpro.bench.report/1``
(:data:`~whenpro_core.bench.aggregate.REPORT_FORMAT`); ``report.md`` starts with
:data:`MD_MARKER` (an HTML comment, invisible when rendered; reports from before the
marker start with :data:`MD_LEGACY_HEADING`); the plot PNG has a ``Software`` text chunk
:data:`PNG_SOFTWARE` (a plot from before the marker counts when the ``report.json``
beside it is whenpro's).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import orjson

from whenpro_core.errors import ConfigError
from whenpro_core.formats.whenpro_files import is_report_doc
from whenpro_core.scale.shards import MERGED_NAME

PLOT_NAME = "step_by_length.png"
JSON_NAME = "report.json"
MD_NAME = "report.md"
#: ``whenpro bench``'s default results file; its report keeps the plain names above, as
#: does the merged ``results.jsonl`` of a folder of parts (:data:`.shards.MERGED_NAME`).
DEFAULT_RESULTS_NAME = "bench-results.jsonl"
#: First line of every ``report.md`` whenpro writes.
MD_MARKER = "<!-- written by whenpro report (whenpro.bench.report/1); whenpro rewrites this file -->"
#: ``report.md`` files written before the marker start with this heading.
MD_LEGACY_HEADING = "# whenpro benchmark report"
#: ``Software`` text chunk of the plot PNG.
PNG_SOFTWARE = "whenpro report (whenpro.bench.report/1)"
#: What ``whenpro report`` suggests when it refuses to overwrite a user's file.
REPORT_HINT = "another folder with --out, or move the file away"


def _png_software(path: Path) -> str | None:
    """The ``Software`` tEXt of a PNG file (``None`` when absent or not a PNG)."""
    try:
        with path.open("rb") as fh:
            data = fh.read(1 << 16)
    except OSError:
        return None
    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        return None
    pos = 8
    while pos + 8 <= len(data):
        size = int.from_bytes(data[pos : pos + 4], "big")
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + size]
        if kind == b"tEXt":
            key, _, value = body.partition(b"\x00")
            if key == b"Software":
                return value.decode("latin-1")
        if kind in (b"IDAT", b"IEND"):
            return None
        pos += 12 + size
    return None


def is_whenpro_report_file(path: str | Path) -> bool:
    """True when ``path`` is a report file whenpro wrote (see the module doc): a
    ``.json`` with the report format, a ``.md`` starting with :data:`MD_MARKER` (or
    :data:`MD_LEGACY_HEADING`, from before the marker), a ``.png`` whose ``Software`` is
    :data:`PNG_SOFTWARE`. ``False`` for a missing or unreadable file."""
    path = Path(path)
    if not path.is_file():
        return False
    suffix = path.suffix.lower()
    try:
        if suffix == ".json":
            return is_report_doc(orjson.loads(path.read_bytes()))
        if suffix == ".md":
            with path.open("rb") as fh:
                first = fh.readline(4096).decode("utf-8", "replace").removeprefix("\ufeff").rstrip("\r\n")
            return first in (MD_MARKER, MD_LEGACY_HEADING)
    except (OSError, orjson.JSONDecodeError):
        return False
    if suffix == ".png":
        return _png_software(path) == PNG_SOFTWARE
    return False


@dataclass(frozen=True)
class ReportNames:
    """The file names of one report: ``json``, ``md`` and the ``plot`` PNG."""

    json: str = JSON_NAME
    md: str = MD_NAME
    plot: str = PLOT_NAME

    def all(self) -> tuple[str, str, str]:
        return (self.json, self.md, self.plot)


def report_names(results: str | Path | None = None) -> ReportNames:
    """The report's file names for the results file ``results``, so that two results files
    in one folder keep their own reports: ``NAME.jsonl`` gives ``NAME.report.json``,
    ``NAME.report.md`` and ``NAME.step_by_length.png``. ``None`` (a folder or glob of
    results), :data:`DEFAULT_RESULTS_NAME` and ``results.jsonl`` keep the plain names."""
    if results is None or Path(results).name in (DEFAULT_RESULTS_NAME, MERGED_NAME):
        return ReportNames()
    stem = Path(results).stem
    return ReportNames(json=f"{stem}.{JSON_NAME}", md=f"{stem}.{MD_NAME}", plot=f"{stem}.{PLOT_NAME}")


def check_report_dir(out_dir: str | Path, hint: str = REPORT_HINT, names: ReportNames | None = None) -> None:
    """Raise ConfigError (one line: the file, that whenpro did not write it, ``hint``)
    when writing the report (``names``, default the plain ones) into ``out_dir`` would
    replace a file whenpro did not write. A plot from before the PNG marker counts as
    whenpro's when the report JSON beside it is."""
    out = Path(out_dir)
    names = names or ReportNames()
    if out.exists() and not out.is_dir():
        raise ConfigError("report folder is a file", path=out, expected="a folder for report.json/md")
    json_ours = is_whenpro_report_file(out / names.json)
    for name in names.all():
        target = out / name
        if not target.exists() or is_whenpro_report_file(target):
            continue
        if name == names.plot and json_ours and (_png_software(target) or "").startswith("Matplotlib"):
            continue  # written by an earlier whenpro, before the PNG marker
        raise ConfigError(
            f"{name} exists and was not written by whenpro; refusing to overwrite it", path=target, expected=hint
        )


__all__ = [
    "DEFAULT_RESULTS_NAME",
    "JSON_NAME",
    "MD_LEGACY_HEADING",
    "MD_MARKER",
    "MD_NAME",
    "PLOT_NAME",
    "PNG_SOFTWARE",
    "REPORT_HINT",
    "ReportNames",
    "check_report_dir",
    "is_whenpro_report_file",
    "report_names",
]
