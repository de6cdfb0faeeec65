"""``--preset whowhen-pro`` for the Who&When Pro frameworks ../shared/real_traces has no
trace of (alfagent, debate, dylan, mathchat, metagpt, pixelcraft, dvd and the GUI agents):
small made-up release documents, one per framework, and the transcript, hint and images
the official renderers (``whowhen_eval/render/<framework>.py``) give for them, written
out by hand from those renderers' rules:

* debate: ``Step R.P`` with P the turn's index in its round; dylan: P the recorded
  ``position`` (gaps kept); both with the "cannot see the other agents" hint;
* mathchat: the opening ``user_proxy`` turn is ``User Input`` (unnumbered), other turns
  ``Step 2R+P`` under their real speaker names; no hint;
* metagpt: ``Step S`` (SOP stage) and its hint; alfagent: ``[think]``/``[action]``/
  ``[observation]`` under ``Agent: agent``, no hint;
* pixelcraft: ``[viewed image: SOURCE]`` lines, the image (the PNG as released, never
  re-encoded), then ``[output]``; real speaker names; no hint;
* GUI agents: the step's real speaker, ``[screenshot]`` + screenshot (the first, every
  10th, the last; width at most 1,024, JPEG) then ``[reasoning]``/``[action]``/
  ``[observation]``/``[error]``; the "1-indexed" hint;
* dvd: steps numbered from 0 after the two framing turns, ``Agent: orchestrator`` with
  ``[tool_call]`` lines (``frame_inspect_tool`` named ``frame_inspect_agent``, the
  ``database`` argument hidden), ``Agent: frame_inspect_agent`` with ``[input_frames at
  WINDOW, K frame(s)]``, at most 8 evenly sampled frames (512 px, JPEG) and missing-frame
  lines, plain tools as ``Tool: NAME``; no hint.
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from whenpro_core.attribution.dry_run import preview
from whenpro_core.config import load_settings
from whenpro_core.formats import load_trace

SETTINGS = load_settings(model="openai:gpt-4.1")
TAXONOMY = (
    "R.2:\n  name: reasoning error\n  description: A wrong inference.\nC.2:\n  name: communication failure\n"
    "  description: A message that misleads.\n"
)
IMG = "\x00"


def png(width: int, height: int, color: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    buf = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buf, "PNG")
    return buf.getvalue()


def b64(raw: bytes) -> str:
    return base64.b64encode(raw).decode("ascii")


def request(tmp_path: Path, doc: dict) -> tuple[str, list[dict[str, Any]]]:
    """(transcript text with images as NUL, image parts) of the preset's dry run, and the
    hint/format footer checked to follow the transcript."""
    (tmp_path / "taxonomy.yaml").write_text(TAXONOMY)
    (tmp_path / "data").mkdir(exist_ok=True)
    path = tmp_path / "data" / f"{doc['id']}.json"
    path.write_text(json.dumps(doc))
    (req,) = preview(load_trace(path), "whowhen-pro:all-at-once", "openai:gpt-4.1", SETTINGS)["requests"]
    assert [m["role"] for m in req["messages"]] == ["user"]
    parts = req["messages"][0]["content"]
    text = "".join(p["text"] if p["type"] == "text" else IMG for p in parts)
    assert "## User Question\n\n" + doc["task"]["query"] + "\n\n" in text
    return text.split("## Transcript\n\n", 1)[1], [p for p in parts if p["type"] == "image"]


def split_footer(transcript: str) -> tuple[str, str]:
    """(the transcript blocks, the step-coordinate hint or "")."""
    body, _, rest = transcript.partition("\n\n## ")
    hint = rest.split("\n\n", 1)[1].split("\n\n## Response Format", 1)[0] if rest.startswith("Step Coord") else ""
    return body, hint


def doc_of(fw: str, trajectory: list, gt: dict, task_images: list | None = None, modality: str = "text") -> dict:
    return {
        "id": f"{fw}_1",
        "framework": fw,
        "benchmark": "made-up",
        "modality": modality,
        "task": {"query": f"A {fw} question?", "images": task_images or []},
        "trajectory": trajectory,
        "ground_truth": gt,
    }


def test_debate_numbers_turns_by_their_place_in_the_round(tmp_path: Path) -> None:
    traj = [
        {"kind": "user", "content": "q"},
        {
            "kind": "round",
            "round": 0,
            "turns": [
                {"agent_id": "a0", "role": "debater", "output": " 4 "},
                {"agent_id": "a1", "role": "debater", "output": ""},
            ],
        },
        {"kind": "round", "round": 1, "turns": [{"agent_id": "a1", "output": "5"}]},
        {"kind": "final_answer", "content": "5"},
    ]
    body, hint = split_footer(request(tmp_path, doc_of("debate", traj, {"agent": "a1", "round": 1, "mode": "R.2"}))[0])
    assert body == (
        "Step 0.0 | Agent: a0\n[output]\n4\n[/output]\nStep 0.1 | Agent: a1\n(empty turn)\n"
        "Step 1.0 | Agent: a1\n[output]\n5\n[/output]"
    )
    assert hint == (
        "step R.P where R is the round and P is the turn's position within that round. "
        "The agent cannot see the other agents' turns in the same round."
    )


def test_dylan_keeps_recorded_positions_and_hides_roles(tmp_path: Path) -> None:
    traj = [
        {"kind": "user", "content": "q"},
        {
            "kind": "round",
            "round": 0,
            "turns": [
                {"agent_id": "d0", "role": "Economist", "position": 0, "output": "x"},
                {"agent_id": "d2", "role": "Lawyer", "position": 2, "output": "y"},
            ],
        },
    ]
    body, hint = split_footer(request(tmp_path, doc_of("dylan", traj, {"agent": "d2", "round": 0, "mode": "R.2"}))[0])
    assert body == "Step 0.0 | Agent: d0\n[output]\nx\n[/output]\nStep 0.2 | Agent: d2\n[output]\ny\n[/output]"
    assert "Economist" not in body and hint.startswith("step R.P where R is the round and P is the agent's position")


def test_mathchat_shows_real_speakers_and_an_unnumbered_user_input(tmp_path: Path) -> None:
    traj = [
        {"kind": "user", "content": "q"},
        {"agent_id": "user_proxy", "round": 0, "position": 0, "output": "Solve with python."},
        {"agent_id": "assistant", "round": 0, "position": 1, "output": "print(2+2)"},
        {"agent_id": "user_proxy", "round": 1, "position": 0, "output": "4"},
        {"agent_id": "assistant", "round": 1, "position": 1, "output": "The answer is 5."},
        {"kind": "final_answer", "content": "5"},
    ]
    doc = doc_of("mathchat", traj, {"agent": "assistant", "round": 1, "position": 1, "mode": "R.2"})
    body, hint = split_footer(request(tmp_path, doc)[0])
    assert body == (
        "User Input\n[output]\nSolve with python.\n[/output]\n"
        "Step 1 | Agent: assistant\n[output]\nprint(2+2)\n[/output]\n"
        "Step 2 | Agent: user_proxy\n[output]\n4\n[/output]\n"
        "Step 3 | Agent: assistant\n[output]\nThe answer is 5.\n[/output]"
    )
    assert hint == ""


def test_metagpt_numbers_sop_stages(tmp_path: Path) -> None:
    traj = [
        {"kind": "user", "content": "q"},
        {"agent_id": "architect", "role": "architect", "stage": 0, "output": "brief"},
        {"agent_id": "engineer", "role": "engineer", "stage": 1, "output": "code"},
        {"agent_id": "reviewer", "role": "reviewer", "stage": 2, "output": ""},
    ]
    body, hint = split_footer(
        request(tmp_path, doc_of("metagpt", traj, {"agent": "engineer", "stage": 1, "mode": "R.2"}))[0]
    )
    assert body == (
        "Step 0 | Agent: architect\n[output]\nbrief\n[/output]\nStep 1 | Agent: engineer\n[output]\ncode\n"
        "[/output]\nStep 2 | Agent: reviewer\n(empty turn)"
    )
    assert hint == "step S where S is the SOP stage (0-indexed)"


def test_alfagent_think_action_observation(tmp_path: Path) -> None:
    traj = [
        {"kind": "user", "content": "put a mug in the sink"},
        {
            "kind": "action",
            "step_number": 1,
            "reasoning": "find mug",
            "action": "go to shelf 1",
            "observation": "You see a mug.",
            "is_final_answer": False,
        },
        {
            "kind": "action",
            "step_number": 2,
            "reasoning": None,
            "action": "take mug 1 from shelf 1",
            "observation": "",
            "is_final_answer": False,
        },
    ]
    body, hint = split_footer(request(tmp_path, doc_of("alfagent", traj, {"agent": None, "step": 2, "mode": "R.2"}))[0])
    assert body == (
        "Step 1 | Agent: agent\n[think]\nfind mug\n[/think]\n[action]\ngo to shelf 1\n[/action]\n"
        "[observation]\nYou see a mug.\n[/observation]\n"
        "Step 2 | Agent: agent\n[action]\ntake mug 1 from shelf 1\n[/action]"
    )
    assert hint == ""


def test_pixelcraft_passes_pngs_through_between_marker_and_output(tmp_path: Path) -> None:
    chart, tile = png(300, 200), png(2000, 100, (0, 0, 255))
    traj = [
        {"kind": "user", "content": "q"},
        {
            "kind": "round",
            "round": 0,
            "turns": [
                {"agent_id": "planner", "position": 0, "output": "crop the legend"},
                {
                    "agent_id": "critic",
                    "position": 1,
                    "output": "legend says 7",
                    "images": [{"data": b64(tile), "source": "task_1/1.jpg"}],
                },
            ],
        },
    ]
    doc = doc_of(
        "pixelcraft",
        traj,
        {"agent": "critic", "round": 0, "position": 1, "mode": "R.2"},
        [{"data": b64(chart), "source": "chart.png"}],
        modality="image",
    )
    transcript, images = request(tmp_path, doc)
    body, hint = split_footer(transcript)
    assert body == (
        "Step 0.0 | Agent: planner\n[output]\ncrop the legend\n[/output]\n"
        f"Step 0.1 | Agent: critic\n[viewed image: task_1/1.jpg]{IMG}\n[output]\nlegend says 7\n[/output]"
    )
    assert hint == ""
    # the chart and the tile as released: same bytes, PNG, full size (the tile is not shrunk)
    assert [(p["mime"], p["width"], p["height"], p["sha256"]) for p in images] == [
        ("image/png", 300, 200, hashlib.sha256(chart).hexdigest()),
        ("image/png", 2000, 100, hashlib.sha256(tile).hexdigest()),
    ]


@pytest.mark.parametrize("framework", ["coact", "openai_cua"])
def test_gui_agents_real_speakers_and_sampled_width_capped_screenshots(tmp_path: Path, framework: str) -> None:
    shot = b64(png(1920, 3000))
    traj: list[dict] = [{"kind": "user", "content": "open the settings"}]
    for n in range(1, 13):
        traj.append(
            {
                "kind": "action",
                "step_number": n,
                "agent": ("coder" if n % 2 else "computer") if framework == "coact" else "computer_use_agent",
                "reasoning": f"r{n}",
                "action": f"click({n})",
                "observation": "",
                "observation_images": [{"data": shot}],
                "error": {"type": "Boom"} if n == 12 else None,
                "is_final_answer": n == 12,
            }
        )
    doc = doc_of(framework, traj, {"agent": None, "step": 3, "mode": "R.2"}, modality="image_gui")
    transcript, images = request(tmp_path, doc)
    body, hint = split_footer(transcript)
    assert hint == "Step coords are sequential integers across the trajectory, 1-indexed."
    speaker = "coder" if framework == "coact" else "computer_use_agent"
    assert body.startswith(
        f"Step 1 | Agent: {speaker}\n[screenshot]{IMG}\n[reasoning]\nr1\n[/reasoning]\n"
        "[action]\nclick(1)\n[/action]\nStep 2 | Agent: "
    )
    shown = [
        int(line.split()[1])
        for line in body.split("\n")
        if line.startswith("Step ") and body.split(line, 1)[1].startswith("\n[screenshot]")
    ]
    assert shown == [1, 11, 12]  # the first, every 10th, the last
    assert body.endswith("[error]\n{'type': 'Boom'}\n[/error]")
    assert [(p["mime"], p["width"], p["height"]) for p in images] == [("image/jpeg", 1024, 1600)] * 3


def test_dvd_orchestrator_inspector_and_tools(tmp_path: Path) -> None:
    frames = tmp_path / "assets" / "frames"
    frames.mkdir(parents=True)
    listed = []
    for k in range(10):
        if k != 9:  # the last frame is missing on disk
            (frames / f"{k}.png").write_bytes(png(800, 600, (k * 20, 0, 0)))
        listed.append({"index": k, "time_s": 60 + k, "path": f"assets/frames/{k}.png"})
    call = {
        "id": "c1",
        "name": "frame_inspect_tool",
        "arguments": json.dumps(
            {"question": "colour?", "time_ranges_hhmmss": [["00:01:00", "00:01:09"]], "database": "BIG"}
        ),
    }
    traj = [
        {"kind": "system", "content": "You are DVD."},
        {"kind": "user", "content": "Q + tools"},
        {"kind": "assistant", "content": "Look at the car.", "tool_calls": [call]},
        {"kind": "tool", "tool_name": "frame_inspect_tool", "tool_call_id": "c1", "content": "red", "frames": listed},
        {
            "kind": "assistant",
            "content": "",
            "tool_calls": [{"id": "c2", "name": "finish", "arguments": {"answer": "B"}}],
        },
        {"kind": "tool", "tool_name": "finish", "tool_call_id": "c2", "content": "B"},
    ]
    transcript, images = request(
        tmp_path, doc_of("dvd", traj, {"agent": "frame_inspect_agent", "step": 3, "mode": "R.2"}, modality="video")
    )
    body, hint = split_footer(transcript)
    assert hint == ""
    assert body == (
        "Step 0 | Agent: orchestrator\n[output]\nLook at the car.\n[/output]\n[tool_call]\n"
        "frame_inspect_agent(question='colour?', time_ranges_hhmmss=[['00:01:00', '00:01:09']])\n"
        "[/tool_call]\n"
        f"Step 1 | Agent: frame_inspect_agent\n[input_frames at 00:01:00-00:01:09, 7 frame(s)]{IMG * 7}\n"
        "[frame 9 at 01:09 missing]\n[output]\nred\n[/output]\n"
        "Step 2 | Agent: orchestrator\n[tool_call]\nfinish(answer='B')\n[/tool_call]\n"
        "Step 3 | Tool: finish\n[tool_result tool=finish]\nB\n[/tool_result]"
    )
    # 8 of 10 evenly sampled (0, 1, 3, 4, 5, 6, 8, 9); frame 9 is missing
    assert [(p["mime"], p["width"], p["height"]) for p in images] == [("image/jpeg", 512, 384)] * 7
