"""What ``whenpro view PATH`` opens (whenpro_core.library.opening)."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from tests.conftest import team_trace
from whenpro_core.errors import TraceFormatError
from whenpro_core.library.opening import check_target, open_target


def test_single_trace_file_is_loaded_once(team_file: Path) -> None:
    opened = open_target(str(team_file))
    assert opened.trace is not None and opened.trace.id == "team-1"
    assert opened.rows is None and not opened.dataset


def test_multi_trace_file_gives_rows_and_key_gives_a_trace(tmp_path: Path) -> None:
    path = tmp_path / "many.json"
    path.write_bytes(orjson.dumps([team_trace(f"t{i}").model_dump(mode="json") for i in range(3)]))
    opened = open_target(str(path))
    assert [r.id for r in opened.rows] == ["t0", "t1", "t2"]
    assert [r.ref() for r in opened.rows][1] == f"{path}#2"
    assert open_target(f"{path}#3").trace.id == "t2"


def test_folders_and_globs_are_datasets(dataset_dir: Path) -> None:
    assert open_target(str(dataset_dir)).dataset
    assert open_target(str(dataset_dir / "team-*.json")).dataset


def test_bad_file_becomes_an_error_row(dataset_dir: Path) -> None:
    opened = open_target(str(dataset_dir / "truncated.json"))
    assert opened.rows and "truncated" in opened.rows[0].error
    bad_key = open_target(f"{dataset_dir / 'team-1.json'}#9")
    assert bad_key.rows and "no trace '9'" in bad_key.rows[0].error


def test_strict_raises_for_one_file_only(dataset_dir: Path) -> None:
    """``whenpro view FILE``: a broken file (or key, or a file without traces) raises the
    importer's one-line error; a folder with the same broken file still lists rows."""
    with pytest.raises(TraceFormatError) as err:
        open_target(str(dataset_dir / "truncated.json"), strict=True)
    assert str(dataset_dir / "truncated.json") in err.value.one_line()
    with pytest.raises(TraceFormatError, match="no trace '9'"):
        open_target(f"{dataset_dir / 'team-1.json'}#9", strict=True)
    assert open_target(str(dataset_dir), strict=True).dataset
    assert open_target(str(dataset_dir / "team-1.json"), strict=True).trace is not None


def test_missing_targets_raise_one_line_errors(tmp_path: Path) -> None:
    with pytest.raises(TraceFormatError, match="no such file or folder"):
        check_target(str(tmp_path / "nope.json"))
    with pytest.raises(TraceFormatError, match="glob matches no file"):
        check_target(str(tmp_path / "*.json"))
    with pytest.raises(TraceFormatError, match=r"no such file or folder \(nor any file matching it as a glob"):
        check_target(str(tmp_path / "run[2].json"))


@pytest.mark.real_traces
def test_real_who_and_when_file(whowhen: Path) -> None:
    opened = open_target(str(whowhen / "Algorithm-Generated" / "1.json"))
    assert opened.trace is not None and opened.trace.framework == "captainagent"
