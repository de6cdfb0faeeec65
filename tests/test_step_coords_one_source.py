"""One source of step coordinates (issue 34, item 4): the ``--preset whowhen-pro``
transcript numbers its steps from ``trace/coords.py``'s layout, the same layout the
importer gives the trace's steps and that scoring compares. For every framework the preset
renders, on every Who&When Pro row in ../shared/real_traces (the 64 release rows and the
five per-file samples) and on small made-up documents (one or more per framework, some
with the odd shapes where a renderer that counts for itself drifted from the layout), the
coordinates the judge reads in the request are exactly the coordinates of the imported
trace's steps, in order. Where the reference copy of the official harness has the
framework's renderer, its coordinates are the same too."""

from __future__ import annotations

import base64
import importlib
import io
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from whenpro_core.attribution.dry_run import preview
from whenpro_core.attribution.whowhen_pro_preset import RENDERERS
from whenpro_core.config import load_settings
from whenpro_core.formats import load_trace
from whenpro_core.trace.model import Trace

SETTINGS = load_settings(model="openai:gpt-4.1")
TAXONOMY = "R.2:\n  name: reasoning error\n  description: A wrong inference.\n"
#: A step header of the transcript: ``Step 1.0 | Agent: x``, ``Step 3 | Tool: finish``.
HEADER = re.compile(r"^Step (\S+) \| ", re.MULTILINE)


def _png() -> str:
    buf = io.BytesIO()
    Image.new("RGB", (40, 30), (200, 30, 30)).save(buf, "PNG")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _gui(fw: str) -> list[dict[str, Any]]:
    shot = [{"data": _png()}]
    return [
        {"kind": "user", "content": "open the settings"},
        {"kind": "action", "step_number": 1, "agent": "coder", "action": "click(1)", "observation_images": shot},
        {"kind": "action", "action": "a step without a number"},  # framing in the layout: no coordinate
        {"kind": "action", "step_number": 2, "reasoning": "r", "action": "click(2)", "observation_images": shot},
    ]


def _made_up() -> dict[str, list[dict[str, Any]]]:
    """Trajectories by framework (several frameworks have an odd shape on purpose)."""
    return {
        "smolagents": [
            {"kind": "user", "content": "q"},
            {"kind": "planning", "plan": "look it up"},
            {"kind": "system", "content": "a system note in the middle"},  # framing, not a step
            {"kind": "action", "reasoning": "search()", "observation": "found 4"},
            {"kind": "final_answer", "content": "4"},
        ],
        "macnet": [
            {"kind": "user", "content": "q"},
            {"role": "author", "agent_id": "node_0", "output": "draft"},
            {"role": "Critic", "agent_id": "node_1", "output": "fix it"},  # any case
            {"role": "reviser", "agent_id": "node_2", "output": "?"},  # unknown: next place in layer 1
            {"role": "sink", "agent_id": "node_3", "output": "final"},
        ],
        "magentic-one": [
            {"kind": "user", "content": "q"},
            {"kind": "agent", "round": 0, "position": 0, "agent": "orchestrator", "output": "ask"},
            {"kind": "agent", "round": 0, "position": 1, "agent": "websurfer", "output": "4"},
            {"kind": "agent", "round": "1", "position": 0, "agent": "orchestrator", "output": "done"},
        ],
        "eva": [
            {"kind": "system", "content": "s"},
            {"kind": "user", "content": "q"},
            {  # the calls stored as Python text, as the showcase files do: two tool turns fold in
                "kind": "assistant",
                "content": "look twice",
                "tool_calls": str([{"name": "frame_select", "arguments": "{}"}] * 2),
            },
            {"kind": "tool", "tool_name": "frame_select", "content": "a"},
            {"kind": "tool", "tool_name": "frame_select", "content": "b"},
            {"kind": "assistant", "content": "B"},
        ],
        "dvd": [
            {"kind": "system", "content": "s"},
            {"kind": "user", "content": "q"},
            {"kind": "assistant", "content": "", "tool_calls": [{"id": "c", "name": "finish", "arguments": "{}"}]},
            {"kind": "tool", "tool_name": "finish", "tool_call_id": "c", "content": "B"},
        ],
        "debate": [
            {"kind": "user", "content": "q"},
            {"kind": "round", "round": 0, "turns": [{"agent_id": "a0", "output": "4"}, {"agent_id": "a1"}]},
            {"kind": "round", "round": 1, "turns": [{"agent_id": "a1", "output": "5"}]},
        ],
        "dylan": [
            {"kind": "user", "content": "q"},
            {
                "kind": "round",
                "round": 0,
                "turns": [{"agent_id": "d0", "position": 0}, {"agent_id": "d1"}, {"agent_id": "d3", "position": 3}],
            },
        ],
        "pixelcraft": [
            {"kind": "user", "content": "q"},
            {
                "kind": "round",
                "round": 0,
                "turns": [
                    {"agent_id": "planner", "position": 0, "output": "crop"},
                    {"agent_id": "critic", "position": 1, "output": "7", "images": [{"data": _png()}]},
                ],
            },
        ],
        "mathchat": [
            {"kind": "user", "content": "q"},
            {"agent_id": "user_proxy", "round": 0, "position": 0, "output": "Solve."},
            {"agent_id": "assistant", "round": 0, "position": 1, "output": "print(2+2)"},
            {"agent_id": "user_proxy", "round": 1, "position": 0, "output": "4"},
            {"agent_id": "assistant", "round": 1, "position": 1, "output": "5"},
        ],
        "metagpt": [
            {"kind": "user", "content": "q"},
            {"agent_id": "architect", "stage": 0, "output": "brief"},
            {"agent_id": "engineer", "stage": 1, "output": "code"},
            {"agent_id": "reviewer", "stage": 2, "output": ""},
        ],
        "alfagent": [
            {"kind": "user", "content": "put a mug in the sink"},
            {"kind": "action", "step_number": 1, "action": "go to shelf 1", "observation": "a mug"},
            {"kind": "action", "step_number": "2", "action": "take mug 1"},  # a number written as text
            {"kind": "thought", "step_number": 3, "reasoning": "done"},
        ],
        **{fw: _gui(fw) for fw in ("coact", "openai_cua", "agentoccam", "gemini")},
    }


def _write(root: Path, fw: str, trajectory: list[dict[str, Any]]) -> Path:
    (root / "data").mkdir(parents=True, exist_ok=True)
    (root / "taxonomy.yaml").write_text(TAXONOMY)
    doc = {
        "id": f"{fw}_1",
        "framework": fw,
        "benchmark": "made-up",
        "modality": "text",
        "task": {"query": f"A {fw} question?", "images": []},
        "trajectory": trajectory,
        "ground_truth": None,  # the coordinates, not the label, are under test
    }
    path = root / "data" / f"{fw}_1.json"
    path.write_text(json.dumps(doc))
    return path


def shown_coords(trace: Trace) -> list[str]:
    """The step coordinates a judge reads in the preset's request, in order."""
    (req,) = preview(trace, "whowhen-pro:all-at-once", "openai:gpt-4.1", SETTINGS)["requests"]
    text = "".join(p["text"] for p in req["messages"][0]["content"] if p["type"] == "text")
    transcript = text.split("## Transcript\n\n", 1)[1]
    transcript = transcript.rsplit("\n\n## Step Coordinate Format", 1)[0].rsplit("\n\n## Response Format", 1)[0]
    return HEADER.findall(transcript)


def step_coords(trace: Trace) -> list[str]:
    """The coordinates of the imported trace's steps, in order; steps sharing their
    neighbour's coordinate (eva's tool results, folded into their turn) counted once."""
    out: list[str] = []
    for step in trace.steps:
        if step.coord is not None and (not out or out[-1] != step.coord):
            out.append(step.coord)
    return out


@pytest.mark.parametrize("framework", sorted(_made_up()))
def test_the_preset_shows_the_layout_coordinates_on_made_up_documents(tmp_path: Path, framework: str) -> None:
    trace = load_trace(_write(tmp_path, framework, _made_up()[framework]))
    want = step_coords(trace)
    if framework == "magentic-one":
        assert want == ["0.0", "0.1", "1.0"]
    assert want and shown_coords(trace) == want


def test_every_framework_the_preset_renders_is_covered() -> None:
    assert set(_made_up()) == set(RENDERERS)


def test_odd_shapes_are_numbered_as_the_importer_numbers_them(tmp_path: Path) -> None:
    """The cases where the renderers once counted for themselves and drifted."""
    expected = {
        "smolagents": ["0", "1"],  # a mid-run system note is framing, not step 1
        "macnet": ["0.0", "1.0", "1.1", "2.0"],  # "Critic" is the critic; the unknown role takes 1.1
        "eva": ["0", "1"],  # both tool turns fold into step 0
        "dylan": ["0.0", "0.1", "0.3"],  # a turn without a position: its place in the round
        "alfagent": ["1", "2", "3"],  # "2" is step 2
        "coact": ["1", "2"],  # an action without a number is not a step
    }
    for fw, coords in expected.items():
        trace = load_trace(_write(tmp_path / fw, fw, _made_up()[fw]))
        assert shown_coords(trace) == coords == step_coords(trace), fw


def _real_refs(real_traces: Path, tmp_path: Path) -> list[str]:
    root = tmp_path / "samples"
    shutil.copytree(real_traces / "who-when-pro-samples" / "data", root / "data")
    shutil.copytree(real_traces / "who-when-pro-samples" / "assets", root / "assets")
    shutil.copy(real_traces / "who-when-pro-jsonl" / "taxonomy.yaml", root / "taxonomy.yaml")
    rows = real_traces / "who-when-pro-jsonl" / "data" / "text.jsonl"
    count = sum(1 for line in rows.read_text().splitlines() if line.strip())
    return [f"{rows}#{n}" for n in range(1, count + 1)] + [str(p) for p in sorted(root.glob("data/traces/*.json"))]


@pytest.mark.real_traces
def test_every_real_row_shows_the_coordinates_the_importer_gives(real_traces: Path, tmp_path: Path) -> None:
    refs = _real_refs(real_traces, tmp_path)
    frameworks = set()
    for ref in refs:
        trace = load_trace(ref)
        frameworks.add(trace.framework)
        assert shown_coords(trace) == step_coords(trace), ref
    assert len(refs) == 69 and frameworks == {"smolagents", "eva", "macnet", "magentic-one"}


def _official_coords(doc: dict[str, Any]) -> list[str] | None:
    """The step coordinates of the official renderer for ``doc``'s framework, or ``None``
    when the reference copy does not hold that renderer."""
    render = importlib.import_module("whowhen_eval.render")
    try:
        fn = render.get_renderer(doc["framework"])
    except ImportError:  # the reference copy holds only some of the official renderers
        return None
    return [b.coord for b in fn(doc).blocks if b.coord not in (None, render.TASK_ANCHOR)]


@pytest.mark.real_traces
def test_the_official_renderers_number_steps_as_the_layout_does(
    real_traces: Path, official_harness: Path, tmp_path: Path
) -> None:
    docs: list[tuple[dict[str, Any], Trace]] = []
    for ref in _real_refs(real_traces, tmp_path):
        trace = load_trace(ref)
        if trace.framework != "eva":  # eva's frames are paths here; its parity is test_official_wording's
            docs.append((_release_doc(ref), trace))
    for fw in ("mathchat", "pixelcraft", "debate", "metagpt"):
        path = _write(tmp_path / "made-up" / fw, fw, _made_up()[fw])
        docs.append((json.loads(path.read_text()), load_trace(path)))
    compared = set()
    for doc, trace in docs:
        official = _official_coords(doc)
        if official is None:
            continue
        compared.add(doc["framework"])
        assert official == step_coords(trace), doc["id"]
    assert {"smolagents", "macnet", "magentic-one", "mathchat", "pixelcraft"} <= compared


def _release_doc(ref: str) -> dict[str, Any]:
    path, _, key = ref.partition("#")
    if not key:
        doc: dict[str, Any] = json.loads(Path(path).read_text())
        return doc
    line = [x for x in Path(path).read_text().splitlines() if x.strip()][int(key) - 1]
    row = json.loads(line)
    return {k: json.loads(row[k]) if k in ("task", "trajectory", "ground_truth") else row[k] for k in row}
