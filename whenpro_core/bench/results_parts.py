"""The results of a sharded ``whenpro bench`` across its part files (issue 18): what is already
done in the merged file and every part (:func:`done_everywhere`, resume) and the merge a
finished run does (:func:`merge_parts`). Where the parts go and which items a shard runs is
:mod:`whenpro_core.scale.shards`."""

from __future__ import annotations

from whenpro_core.bench.records import Record, ResultsFile, latest, read_records
from whenpro_core.scale.shards import Layout
from whenpro_core.storage import jsonio
from whenpro_core.storage.fsutil import atomic_write_bytes


def done_everywhere(results: ResultsFile, where: Layout) -> tuple[dict[str, Record], list[str]]:
    """Every finished record of a run: the latest of each key (:func:`~.records.latest`)
    among the merged file's (``results.done``) and each part's, in name order. Also the
    notes of torn last lines repaired in parts."""
    records = list(results.done.values())
    notes = []
    for part in where.part_files():
        opened = ResultsFile(part)  # checks the file is ours and repairs a torn tail
        if opened.repaired:
            notes.append(f"{part}: {opened.repaired}")
        records += opened.done.values()
    return {r.key: r for r in latest(records)}, notes


def merge_parts(where: Layout) -> int:
    """Merge the merged file and every part into the merged file (atomically; the latest
    record of a key wins, :func:`~.records.latest`, first-appearance order), then delete the parts (and the parts
    folder when it is the ``NAME.d`` one and empty). Returns the number of parts merged."""
    parts = where.part_files()
    if not parts:
        return 0
    records: list[Record] = []
    for path in ([where.merged] if where.merged.exists() else []) + parts:
        ResultsFile(path)  # repair a torn tail before reading
        records += read_records(path)[0]
    data = b"".join(jsonio.dumps(r.model_dump(mode="json")) + b"\n" for r in latest(records))
    atomic_write_bytes(where.merged, data)
    for part in parts:
        part.unlink()
    if where.parts != where.merged.parent and not any(where.parts.iterdir()):
        where.parts.rmdir()
    return len(parts)


__all__ = ["done_everywhere", "merge_parts"]
