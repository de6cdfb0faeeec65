"""``--preset whowhen-pro`` (issue 15, item 1): for every Who&When Pro trace in
../shared/real_traces whose framework the preset renders (smolagents: the 64 JSONL rows
and the two per-file image samples), the dry run shows the request the official package
builds. The expectations below are written from the official rules (``prompts.py``,
``render/smolagents.py``, ``run.py``), independently of whenpro's renderer:

* one user message, no system message; temperature 0, 2,048 output tokens, free text;
* sections in order: ``# Task`` … ``## Error Mode Taxonomy`` (one ``- CODE: **Name** -
  description`` bullet per taxonomy.yaml entry, names title-cased as in
  :data:`TITLES`), ``## User Question`` (the task query), task images, ``## Transcript``,
  ``## Step Coordinate Format`` (the smolagents hint), ``## Response Format`` (four
  labelled lines);
* transcript blocks ``Step N | Agent: agent`` numbered as the rules say, bodies in
  ``[plan]``/``[output]``/``[observation]`` markers, joined by one newline;
* images: the task images, then each step's observation images (task-image copies
  dropped), each right after its step's text, longest side at most 1,024 px.

The per-file samples of the other frameworks the preset renders (eva with its video
frames, macnet, magentic-one) are checked against the same rules for those frameworks.
The showcase samples keep images as paths; they are read from the dataset folder.
"""

from __future__ import annotations

import ast
import base64
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from PIL import Image

from whenpro_core.attribution.dry_run import preview
from whenpro_core.config import load_settings
from whenpro_core.errors import ConfigError
from whenpro_core.formats import load_trace

#: The official title case of the release's 17 mode names, written out by hand.
TITLES = {
    "P.1": "Visual Misidentification",
    "P.2": "Spatial/Grounding Error",
    "R.1": "Hallucination",
    "R.2": "Reasoning Error",
    "R.3": "Numerical/Calculation Error",
    "R.4": "Task Misunderstanding",
    "PL.1": "Ineffective Planning",
    "PL.2": "Goal Drift",
    "A.1": "Tool Parameter/Invocation Error",
    "A.2": "Output Format/Syntax Error",
    "A.3": "Premature Termination",
    "A.4": "Repetitive/Looping Behavior",
    "V.1": "Context/Memory Loss",
    "V.2": "Inadequate or Incorrect Verification",
    "C.1": "Delegation/Orchestration Error",
    "C.2": "Communication Failure",
    "C.3": "Over-Reliance on Other Agents",
}
HINT = "Step coords are sequential integers across the trajectory. "
SETTINGS = load_settings(model="openai:gpt-4.1")


def expected_taxonomy(path: Path) -> str:
    doc = yaml.safe_load(path.read_text())
    return "\n".join(
        f"- {code}: **{TITLES[code]}** - {' '.join(str(body['description']).split())}" for code, body in doc.items()
    )


def observation_text(obs: str, imgs: list[dict]) -> str:
    """The k-th ``<PIL.Image.Image ... size=WxH at 0x...>`` (k up to the number of images)
    becomes ``[observation_image #k size=WxH]``; images left unmentioned are announced
    first as ``[observation_image #k source="..."]``."""
    pieces = obs.split("<PIL.Image.Image image mode=")
    out, k = pieces[0], 0
    for piece in pieces[1:]:
        k += 1
        size = piece.split("size=", 1)[1].split(" ", 1)[0]
        tail = piece.split(">", 1)[1]
        out += (
            f"[observation_image #{k} size={size}]"
            if k <= len(imgs)
            else "<PIL.Image.Image image mode=" + piece.split(">", 1)[0] + ">"
        ) + tail
    marked = min(k, len(imgs))
    extra = [
        f'[observation_image #{j + 1} source="{imgs[j].get("source") or "<inline>"}"]' for j in range(marked, len(imgs))
    ]
    return "\n".join(extra + ([out] if out else []))


def _blob(entry: dict, root: Path) -> bytes:
    """An image entry's bytes: the release inlines them (``data``); the showcase files
    name a file under the dataset root (``path``)."""
    return base64.b64decode(entry["data"]) if entry.get("data") else (root / entry["path"]).read_bytes()


def expected_blocks(doc: dict, root: Path) -> list[tuple[str, int]]:
    """(block text, number of images after it) per the smolagents rules; an observation
    image byte-identical to a task image is dropped, whatever its file name (issue 29)."""
    task = {_blob(i, root) for i in (doc.get("task") or {}).get("images") or []}
    steps = [e for e in doc["trajectory"] if e.get("kind") not in ("user", "final_answer", None)]
    start = 0 if steps and steps[0]["kind"] == "planning" else 1
    out = []
    for n, e in enumerate(steps, start):
        if e["kind"] == "planning":
            plan = (e.get("plan") or "").strip()
            out.append(
                (f"Step {n} | Agent: agent (planning)\n" + (f"[plan]\n{plan}\n[/plan]" if plan else "(empty plan)"), 0)
            )
            continue
        reasoning = (e.get("reasoning") or "").strip()
        if "<code>" not in reasoning and reasoning.rstrip().endswith("</code>"):
            reasoning = reasoning.rstrip()[:-7].rstrip()
        imgs = [i for i in e.get("observation_images") or [] if _blob(i, root) not in task]
        obs = (e.get("observation") or "").strip()
        body = [f"[output]\n{reasoning}\n[/output]"] if reasoning else []
        if obs or imgs:
            body.append("[observation]\n" + observation_text(obs, imgs) + "\n[/observation]")
        out.append((f"Step {n} | Agent: agent\n" + ("\n".join(body) if body else "(empty step)"), len(imgs)))
    return out


def _parts(doc_json: dict) -> list[dict[str, Any]]:
    (req,) = doc_json["requests"]
    assert [m["role"] for m in req["messages"]] == ["user"]
    assert req["settings"]["temperature"] == 0.0 and req["settings"]["max_tokens"] == 2048
    assert req["settings"]["structured_output"] is None and req["later"] is None
    parts: list[dict[str, Any]] = req["messages"][0]["content"]
    return parts


def check_request(trace_ref: str, doc: dict, taxonomy: Path) -> None:
    parts = _parts(preview(load_trace(trace_ref), "whowhen-pro:all-at-once", "openai:gpt-4.1", SETTINGS))
    text = "".join(p["text"] if p["type"] == "text" else "\x00" for p in parts)
    head, _, rest = text.partition("## Error Mode Taxonomy\n\n")
    assert head.startswith("# Task\n\n") and rest
    query = (doc.get("task") or {}).get("query") or ""
    assert rest.startswith(expected_taxonomy(taxonomy) + "\n\n## User Question\n\n" + query)
    n_task = len((doc.get("task") or {}).get("images") or [])
    after_question = rest.split("## User Question\n\n" + query, 1)[1]
    assert after_question.startswith("\n\n" + "\x00" * n_task + ("\n\n" if n_task else "") + "## Transcript\n\n")
    transcript = after_question.split("## Transcript\n\n", 1)[1]
    body, _, footer = transcript.rpartition("\n\n## Step Coordinate Format\n\n")
    assert footer.startswith(HINT + "\n\n## Response Format\n\n")
    assert [line.split(":")[0] for line in footer.splitlines()[-4:]] == [
        "Agent Name",
        "Step Number",
        "Error Mode",
        "Reason",
    ]
    cursor = 0
    for block, n_images in expected_blocks(doc, taxonomy.parent):
        cursor = body.index(block, cursor)
        cursor += len(block)
        if n_images:
            assert "\x00" * n_images in body[cursor:].split("Step ", 1)[0]
    images = [p for p in parts if p["type"] == "image"]
    assert len(images) == n_task + sum(n for _, n in expected_blocks(doc, taxonomy.parent))
    assert all(max(p["width"], p["height"]) <= 1024 and p["mime"] == "image/jpeg" for p in images)


def test_every_jsonl_row(real_traces: Path) -> None:
    folder = real_traces / "who-when-pro-jsonl"
    path = folder / "data" / "text.jsonl"
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    assert len(rows) == 64
    for n, row in enumerate(rows, 1):
        doc = {k: json.loads(row[k]) if k in ("task", "trajectory", "ground_truth") else row[k] for k in row}
        check_request(f"{path}#{n}", doc, folder / "taxonomy.yaml")


def _sample_dataset(real_traces: Path, tmp_path: Path) -> Path:
    """The per-file samples beside the release's taxonomy.yaml (the preset needs it)."""
    root = tmp_path / "samples"
    shutil.copytree(real_traces / "who-when-pro-samples" / "data", root / "data")
    shutil.copytree(real_traces / "who-when-pro-samples" / "assets", root / "assets")
    shutil.copy(real_traces / "who-when-pro-jsonl" / "taxonomy.yaml", root / "taxonomy.yaml")
    return root


def _request_text(path: Path) -> tuple[str, list[dict[str, Any]]]:
    parts = _parts(preview(load_trace(path), "whowhen-pro:all-at-once", "openai:gpt-4.1", SETTINGS))
    return "".join(p["text"] if p["type"] == "text" else "\x00" for p in parts), parts


def expected_other(doc: dict) -> tuple[list[str], str, int]:
    """(block texts in order, step-coordinate hint, image count) for the macnet,
    magentic-one and eva rules, written from the official renderers' descriptions."""
    fw, traj = doc["framework"], [e for e in doc["trajectory"] if isinstance(e, dict)]
    if fw == "macnet":
        where = {"author": "0.0", "critic": "1.0", "rewriter": "1.1", "sink": "2.0"}
        return (
            [
                f"Step {where[e['role']]} | Agent: {e['agent_id']}\n[output]\n{e['output'].strip()}\n[/output]"
                for e in traj
                if e.get("role") and e.get("kind") not in ("user", "final_answer")
            ],
            "",
            0,
        )
    if fw == "magentic-one":
        blocks = []
        for e in traj:
            if e.get("kind") != "agent":
                continue
            body = f"[output]\n{e['output'].strip()}\n[/output]" if e.get("output", "").strip() else ""
            if e.get("tool_actions"):
                actions = json.dumps(e["tool_actions"], ensure_ascii=False, indent=2)
                body += ("\n" if body else "") + f"[tool_actions]\n{actions}\n[/tool_actions]"
            blocks.append(f"Step {int(e['round'])}.{int(e['position'])} | Agent: {e['agent']}\n{body}")
        return blocks, "Magentic-One is an orchestrator + specialist framework", 0
    assert fw == "eva"
    steps = [e for e in traj[2:] if e["kind"] == "assistant"]
    frames = sum(
        len(e["frames"] if isinstance(e["frames"], list) else ast.literal_eval(e["frames"]))
        for e in traj
        if e["kind"] == "tool"
    )
    return [f"Step {n} | Agent: agent" for n in range(len(steps))], "", frames


def test_every_per_file_sample(real_traces: Path, tmp_path: Path) -> None:
    root = _sample_dataset(real_traces, tmp_path)
    seen = []
    for path in sorted((root / "data" / "traces").glob("*.json")):
        doc = json.loads(path.read_text())
        seen.append(doc["framework"])
        if doc["framework"] == "smolagents":
            check_request(str(path), doc, root / "taxonomy.yaml")
            continue
        text, parts = _request_text(path)
        blocks, hint, n_images = expected_other(doc)
        transcript = text.split("## Transcript\n\n", 1)[1]
        cursor = 0
        for block in blocks:
            cursor = transcript.index(block, cursor) + len(block)
        footer = transcript[cursor:]
        assert ("## Step Coordinate Format\n\n" + hint) in footer if hint else "## Step Coordinate Format" not in text
        assert footer.rstrip().endswith("Reason: (one or two sentences on what went wrong)")
        images = [p for p in parts if p["type"] == "image"]
        assert len(images) == n_images and all(max(p["width"], p["height"]) <= 512 for p in images)
        assert text.count("\n[tool_output tool=") == (1 if doc["framework"] == "eva" else 0)
    assert sorted(seen) == ["eva", "macnet", "magentic-one", "smolagents", "smolagents"]


def test_image_order_and_sizes_follow_the_trajectory(real_traces: Path, tmp_path: Path) -> None:
    root = _sample_dataset(real_traces, tmp_path)
    path = root / "data" / "traces" / "mmsearch_car.json"
    doc = json.loads(path.read_text())
    parts = _parts(preview(load_trace(path), "whowhen-pro:all-at-once", "openai:gpt-4.1", SETTINGS))
    shown = [(p["width"], p["height"]) for p in parts if p["type"] == "image"]
    folder = root  # the sample's image paths are relative to the dataset root
    sources = [i["path"] for i in doc["task"]["images"]]
    for e in doc["trajectory"]:
        sources += [i["path"] for i in e.get("observation_images") or [] if i["path"] not in sources[:1]]
    assert len(sources) == 6  # 1 task image + 5 search results
    want = []
    for rel in sources:
        img = Image.open(folder / rel)
        img.thumbnail((1024, 1024))
        want.append(img.size)
    assert shown == want


def test_the_preset_refuses_without_the_dataset_taxonomy(real_traces: Path, tmp_path: Path) -> None:
    folder = tmp_path / "bare" / "data" / "traces"
    folder.mkdir(parents=True)
    shutil.copy(real_traces / "who-when-pro-samples" / "data" / "traces" / "mmsearch_pokemon.json", folder)
    with pytest.raises(ConfigError, match="taxonomy.yaml"):
        preview(load_trace(folder / "mmsearch_pokemon.json"), "whowhen-pro:all-at-once", "openai:gpt-4.1", SETTINGS)


@pytest.mark.parametrize("model", ["openai:gpt-4.1", "anthropic:claude-sonnet-4-6"])
def test_the_preset_sends_one_free_text_user_turn_at_temperature_0(
    real_traces: Path, llm_server: Any, llm_settings: Any, model: str
) -> None:
    """Through the real SDKs: no system prompt, no forced schema or tool, temperature 0,
    2,048 output tokens; the four-line answer (a draft, then the final one) is read."""
    import asyncio

    from whenpro_core.attribution.llm_judge import make_judge
    from whenpro_core.attribution.run import attribute

    path = real_traces / "who-when-pro-jsonl" / "data" / "text.jsonl"
    trace = load_trace(f"{path}#1")
    llm_server.respond_with(
        lambda body: (
            "Agent Name: agent\nStep Number: 1\nError Mode: R.2\nReason: draft\n\n"
            "On reflection:\nAgent Name: agent\nStep Number: 2\nError Mode: R.3\nReason: rounding"
        )
    )

    async def run() -> Any:
        judge = make_judge(model, settings=llm_settings(model), use_cache=False)
        try:
            return await attribute(trace, "whowhen-pro:all-at-once", judge=judge)
        finally:
            await judge.aclose()

    verdict = asyncio.run(run())
    (sent,) = llm_server.answered
    body = sent.body
    if model.startswith("anthropic:"):  # the messages API takes no temperature: said, not sent
        assert "temperature" not in body and body["max_tokens"] == 2048
        assert any("temperature 0 not sent" in w for w in verdict.warnings)
    else:
        assert body["temperature"] == 0 and body["max_completion_tokens"] == 2048
    assert "response_format" not in body and "tools" not in body and not body.get("system")
    assert [m["role"] for m in body["messages"]] == ["user"]
    assert (verdict.agent, verdict.step, verdict.mode, verdict.step_text) == ("agent", "2", "R.3", "2")
    assert verdict.protocol == "whowhen-pro:all-at-once" and not verdict.with_gold


def test_bench_with_the_preset_then_the_official_report(
    real_traces: Path, llm_server: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``bench --preset whowhen-pro`` records the preset's protocol without the gold
    answer; ``report --rules official`` reads them."""
    from tests.support.fixtures import TEST_KEY
    from whenpro_core.bench.official import official_report
    from whenpro_core.bench.records import read_records
    from whenpro_core.cli import app

    monkeypatch.setenv("OPENAI_API_KEY", TEST_KEY)
    monkeypatch.setenv("OPENAI_BASE_URL", llm_server.openai_base_url)
    llm_server.respond_with(lambda body: "Agent Name: agent\nStep Number: Step 02\nError Mode: R.3\nReason: x")
    from typer.testing import CliRunner

    out = tmp_path / "r.jsonl"
    data = real_traces / "who-when-pro-jsonl" / "data" / "text.jsonl"
    result = CliRunner().invoke(
        app,
        [
            "bench",
            str(data),
            "--preset",
            "whowhen-pro",
            "-m",
            "openai:gpt-4.1",
            "--limit",
            "3",
            "--out",
            str(out),
            "--no-report",
        ],
    )
    assert result.exit_code == 0, result.output
    records = read_records(out)[0]
    assert len(records) == 3 and {r.protocol for r in records} == {"whowhen-pro:all-at-once"}
    assert not any(r.with_gold for r in records) and all(r.strict_step is False for r in records)
    (group,) = official_report(records)
    assert group.rows == 3 and group.cells["text"]["When"] == 0.0  # "02" is not "2" under strict rules


def test_an_unreadable_image_is_left_out_not_a_crash(real_traces: Path, tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    shutil.copy(real_traces / "who-when-pro-jsonl" / "taxonomy.yaml", tmp_path / "taxonomy.yaml")
    doc = {
        "id": "s1",
        "framework": "smolagents",
        "benchmark": "b",
        "modality": "image",
        "task": {"query": "Which bird?", "images": [{"data": "bm90IGFuIGltYWdl"}, {"path": "../../etc/passwd"}]},
        "trajectory": [
            {"kind": "user", "content": "q"},
            {"kind": "action", "step_number": 1, "reasoning": "look", "observation": "ok"},
        ],
        "ground_truth": {"agent": None, "step": 1, "mode": "P.1"},
    }
    path = tmp_path / "data" / "s1.json"
    path.write_text(json.dumps(doc))
    parts = _parts(preview(load_trace(path), "whowhen-pro:all-at-once", "openai:gpt-4.1", SETTINGS))
    assert not [p for p in parts if p["type"] == "image"]
    assert "Step 1 | Agent: agent\n[output]\nlook\n[/output]\n[observation]\nok\n[/observation]" in parts[0]["text"]
