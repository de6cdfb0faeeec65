"""A label file with a field of the wrong type, or cut short, is reported in one warning
naming the label file, the JSON path and what was expected; it never drops labels silently."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from support.cli import run_whenpro

FIXTURES = Path(__file__).parent / "fixtures"
AEB_TRAJ = "Original_Failure_Trajectory/GAIA/gpt-4o-mini-gaia-3-7b1a9e42.json"
TRAIL_ID = "5e3f0c8a1b9d4e2f8a7c6b5d4e3f2a1b"


def _aeb(tmp_path: Path) -> Path:
    root = tmp_path / "aeb"
    shutil.copytree(FIXTURES / "agenterrorbench", root)
    return root


def _info(path: Path) -> tuple[int, str, str]:
    out = run_whenpro("info", str(path), "--labels")
    assert "Traceback" not in out.stderr, out.stderr
    return out.returncode, " ".join(out.stdout.split()), out.stderr


def test_agenterrorbench_bad_row_is_named_and_the_good_rows_still_label(tmp_path):
    root = _aeb(tmp_path)
    labels = root / "Label" / "gaia_labels.json"
    doc = json.loads(labels.read_text())
    doc[1] = 7
    labels.write_text(json.dumps(doc))
    code, out, err = _info(root / AEB_TRAJ)
    assert code == 0 and "ground truth" in out
    assert err.count("\n") == 1 and str(labels) in err and "$[1]" in err and "expected" in err


def test_agenterrorbench_truncated_label_file_is_named(tmp_path):
    root = _aeb(tmp_path)
    labels = root / "Label" / "gaia_labels.json"
    labels.write_text(labels.read_text()[:100])
    code, out, err = _info(root / AEB_TRAJ)
    assert code == 0 and "ground truth" not in out
    assert err.count("\n") == 1 and str(labels) in err and "truncated" in err


def test_trail_errors_of_the_wrong_type_are_named(tmp_path):
    root = tmp_path / "trail"
    shutil.copytree(FIXTURES / "trail", root)
    labels = root / "processed_annotations_gaia" / f"{TRAIL_ID}.json"
    doc = json.loads(labels.read_text())
    doc["errors"] = "x"
    labels.write_text(json.dumps(doc))
    code, _, err = _info(root / "data" / "GAIA" / f"{TRAIL_ID}.json")
    assert code == 0
    assert err.count("\n") == 1 and str(labels) in err and "$.errors" in err and "expected a list" in err


def test_agentrx_trajectory_id_of_the_wrong_type_is_named(real_traces, tmp_path):
    src = real_traces / "agentrx" / "tau_retail"
    (tmp_path / "failed").mkdir()
    shutil.copy(src / "failed" / "task_2.json", tmp_path / "failed" / "task_2.json")
    doc = json.loads((src / "ground_truth.json").read_text())
    n = next(i for i, e in enumerate(doc) if e["trajectory_id"] == 2)
    doc[n]["trajectory_id"] = [1]
    (tmp_path / "ground_truth.json").write_text(json.dumps(doc))
    code, out, err = _info(tmp_path / "failed" / "task_2.json")
    assert code == 0 and "ground truth" not in out
    assert err.count("\n") == 1 and "ground_truth.json" in err and f"$[{n}].trajectory_id" in err
    assert "expected" in err
