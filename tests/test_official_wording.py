"""Issue 29, item 4: with ``--official-harness PATH`` (or ``installed``) the whowhen-pro
preset words its request with the official harness's own prompt code, read at run time:
on every Who&When Pro row in ../shared/real_traces (the 64 release rows and the five
per-file showcase samples: smolagents with images, eva with video frames, macnet,
magentic-one) the dry run's request is byte-identical to the one the harness's
``run.build_prompt`` builds (its own renderers and prompt); without a harness one line
says the wording is whenpro's. The harness is found beside the real traces (skipped with a
reason when absent) and is never copied into whenpro."""

from __future__ import annotations

import base64
import hashlib
import importlib
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import run_whenpro
from whenpro_core.attribution.dry_run import preview
from whenpro_core.attribution.official_harness import HARNESS_ENV, WHENPRO_WORDING
from whenpro_core.attribution.protocols import preset_protocol
from whenpro_core.config import load_settings
from whenpro_core.formats import load_trace

SETTINGS = load_settings(model="openai:gpt-4.1")
PROTOCOL = preset_protocol("whowhen-pro", None)


def _inlined(entries: Any, root: Path) -> Any:
    """Image entries as the release stores them: the file's bytes inline (``data``)."""
    if not isinstance(entries, list):
        return entries
    return [
        {
            **{k: v for k, v in e.items() if k != "path"},
            "data": base64.b64encode((root / e["path"]).read_bytes()).decode(),
        }
        if isinstance(e, dict) and e.get("path") and not e.get("data")
        else e
        for e in entries
    ]


def release_of_sample(doc: dict[str, Any], root: Path) -> dict[str, Any]:
    """A showcase file as a release row reads: images inline, frames under the root."""
    out = json.loads(json.dumps(doc))
    task = out.get("task") or {}
    task["images"] = _inlined(task.get("images"), root)
    for entry in out.get("trajectory") or []:
        if isinstance(entry, dict) and "observation_images" in entry:
            entry["observation_images"] = _inlined(entry["observation_images"], root)
    out["__source_dir__"] = str(root)
    return out


def comparable(parts: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """Parts as (text) or (mime, sha256 of the image bytes)."""
    out = []
    for p in parts:
        if p["type"] == "text":
            out.append(("text", p["text"]))
        elif p["type"] == "image":
            out.append((p["mime"], p["sha256"]))
        else:
            head, _, data = p["image_url"]["url"].partition(",")
            out.append((head[5:].split(";")[0], hashlib.sha256(base64.b64decode(data)).hexdigest()))
    return out


def rows(real_traces: Path, root: Path) -> list[tuple[str, dict[str, Any]]]:
    run = importlib.import_module("whowhen_eval.run")
    shutil.copytree(real_traces / "who-when-pro-samples" / "data", root / "data")
    shutil.copytree(real_traces / "who-when-pro-samples" / "assets", root / "assets")
    shutil.copy(real_traces / "who-when-pro-jsonl" / "taxonomy.yaml", root / "taxonomy.yaml")
    shutil.copy(real_traces / "who-when-pro-jsonl" / "data" / "text.jsonl", root / "data" / "text.jsonl")
    jsonl = root / "data" / "text.jsonl"
    out = [
        (f"{jsonl}#{n}", run.release_from_row(json.loads(line), "text", root))
        for n, line in enumerate(jsonl.read_text().splitlines(), 1)
    ]
    for path in sorted((root / "data" / "traces").glob("*.json")):
        out.append((str(path), release_of_sample(json.loads(path.read_text()), root)))
    return out


def test_dry_run_is_byte_identical_to_the_official_harness(
    real_traces: Path, official_harness: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = importlib.import_module("whowhen_eval.run")
    prompts = importlib.import_module("whowhen_eval.prompts")
    root = tmp_path / "ds"
    found = rows(real_traces, root)
    taxonomy = prompts.load_taxonomy(root)
    monkeypatch.setenv(HARNESS_ENV, str(official_harness))
    frameworks = set()
    for ref, release in found:
        (req,) = preview(load_trace(ref), PROTOCOL, "openai:gpt-4.1", SETTINGS, with_gold=False)["requests"]
        assert req["wording"].startswith("wording: the official harness's own"), ref
        (message,) = req["messages"]
        theirs = prompts.user_msg(run.build_prompt(release, release["framework"], taxonomy))
        assert message["role"] == theirs["role"] == "user"
        assert comparable(message["content"]) == comparable(theirs["content"]), ref
        frameworks.add(release["framework"])
    assert len(found) == 69 and frameworks == {"smolagents", "eva", "macnet", "magentic-one"}


def test_a_byte_identical_copy_of_a_task_image_is_sent_once(
    real_traces: Path, official_harness: Path, tmp_path: Path
) -> None:
    """mmsearch_pokemon's observations (obs_1_0.jpg, obs_2_0.jpg) repeat its task image
    (query_0.jpg) byte for byte: the official harness (images inline) drops them, and so
    does the preset (it sent all three before issue 29)."""
    root = tmp_path / "ds"
    found = dict(rows(real_traces, root))
    ref = str(root / "data" / "traces" / "mmsearch_pokemon.json")
    doc = json.loads(Path(ref).read_text())
    task_names = {i["path"] for i in doc["task"]["images"]}
    observed = [i for e in doc["trajectory"] for i in e.get("observation_images") or []]
    task_bytes = {(root / p).read_bytes() for p in task_names}
    copies = [i for i in observed if i["path"] not in task_names and (root / i["path"]).read_bytes() in task_bytes]
    assert copies, "the sample has a byte-identical copy under another name"
    (req,) = preview(load_trace(ref), PROTOCOL, "openai:gpt-4.1", SETTINGS, with_gold=False)["requests"]
    images = [p for p in req["messages"][0]["content"] if p["type"] == "image"]
    kept = [i for i in observed if (root / i["path"]).read_bytes() not in task_bytes]
    assert len(images) == len(task_names) + len(kept) == 1
    assert found[ref]["id"] == doc["id"]


def test_the_dry_run_says_whose_wording(real_traces: Path, official_harness: Path, tmp_path: Path) -> None:
    root = tmp_path / "ds"
    rows(real_traces, root)
    ref = f"{root / 'data' / 'text.jsonl'}#1"
    plain = run_whenpro("attribute", ref, "--preset", "whowhen-pro", "-m", "openai:gpt-4.1", "--dry-run")
    assert plain.returncode == 0, plain.stderr
    assert f"=== {WHENPRO_WORDING}" in plain.stdout
    official = run_whenpro(
        "attribute", ref, "--preset", "whowhen-pro", "-m", "openai:gpt-4.1", "--dry-run",
        "--official-harness", str(official_harness), "--json",
    )  # fmt: skip
    assert official.returncode == 0, official.stderr
    (req,) = json.loads(official.stdout)["requests"]
    assert req["wording"].startswith("wording: the official harness's own (whowhen_eval.prompts read at run time")
    installed = run_whenpro(
        "attribute", ref, "--preset", "whowhen-pro", "-m", "openai:gpt-4.1", "--dry-run",
        "--official-harness", "installed", "--json",
        env={"PYTHONPATH": f"{Path(__file__).resolve().parent.parent}:{official_harness}"},
    )  # fmt: skip
    assert installed.returncode == 0, installed.stderr
    assert json.loads(installed.stdout)["requests"][0]["messages"] == req["messages"]


def test_a_folder_without_the_harness_is_one_clear_line(tmp_path: Path) -> None:
    out = run_whenpro(
        "attribute", "x.json", "--preset", "whowhen-pro", "--official-harness", str(tmp_path), "--dry-run"
    )
    assert out.returncode == 2 and out.stderr.startswith("whenpro: error: ")
    assert "--official-harness" in out.stderr and "no whowhen_eval package there" in out.stderr
    assert out.stderr.count("\n") <= 2 and "Traceback" not in out.stderr


def test_bench_with_the_harness_is_its_own_setting(
    real_traces: Path, official_harness: Path, llm_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``bench --official-harness`` names the setting ``whowhen-pro:all-at-once@official-
    wording`` (resume key, record, report label): a later run without the harness into the
    same results file runs its own items instead of taking these for them."""
    from typer.testing import CliRunner

    from tests.support.fixtures import TEST_KEY
    from whenpro_core.bench.records import read_records
    from whenpro_core.cli import app

    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.openai_base_url)
    llm_server.respond_with(lambda body: "Agent Name: agent\nStep Number: 2\nError Mode: R.3\nReason: x")
    data = str(real_traces / "who-when-pro-jsonl" / "data" / "text.jsonl")
    out = tmp_path / "r.jsonl"
    common = ["bench", data, "--preset", "whowhen-pro", "-m", "openai:gpt-4.1", "--limit", "2", "--out", str(out)]
    first = CliRunner().invoke(app, [*common, "--no-report", "--official-harness", str(official_harness)])
    assert first.exit_code == 0, first.output
    monkeypatch.delenv(HARNESS_ENV)
    second = CliRunner().invoke(app, [*common, "--no-report"])
    assert second.exit_code == 0, second.output
    records = read_records(out)[0]
    worded = PROTOCOL + "@official-wording"
    assert sorted(r.protocol for r in records) == [PROTOCOL, PROTOCOL, worded, worded]
    for rec in records:
        assert rec.prediction is not None
        line = next(w for w in rec.prediction.warnings if w.startswith("wording: "))
        assert line.startswith("wording: the official harness's own") == (rec.protocol == worded)
    assert len(llm_server.answered) == 4


def test_a_worker_without_the_harness_refuses_an_official_wording_item() -> None:
    """A bench item planned with the official wording never runs with whenpro's words."""
    from whenpro_core.attribution.official_harness import require_for
    from whenpro_core.errors import ConfigError

    require_for(PROTOCOL)  # whenpro's wording: nothing needed
    with pytest.raises(ConfigError, match="needs the official harness"):
        require_for(PROTOCOL + "@official-wording")
