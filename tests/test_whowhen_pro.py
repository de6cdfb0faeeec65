"""Who&When Pro per-file importer: the released showcase traces, and a small made-up
document for every framework's entry shape (docs/architecture.md, 'Formats and step coordinates')."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest

from whenpro_core.errors import TraceFormatError
from whenpro_core.formats import load_trace, sniff, walk
from whenpro_core.formats.native import write_trace
from whenpro_core.formats.whowhen_pro import WhoWhenProImporter
from whenpro_core.formats.whowhen_pro_steps import HIDDEN_FIELDS
from whenpro_core.trace.model import Modality, Outcome

SAMPLES = "who-when-pro-samples"
PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\x00" * 600).decode()
JPG = base64.b64encode(b"\xff\xd8\xff\xe0" + b"\x00" * 600).decode()


def _is_marker(entry: dict) -> bool:
    phase = entry.get("phase")
    return bool(entry.get("is_injected") or entry.get("injected") or (isinstance(phase, list) and "injected" in phase))


def _assert_no_leak(trace):
    for step in trace.steps:
        raw = json.dumps(step.raw)
        for key in HIDDEN_FIELDS:
            assert f'"{key}"' not in raw, (step.index, key)
        assert "is_injected" not in step.content and '"phase"' not in step.content


# --------------------------------------------------------------------------- real data


def test_all_showcase_traces_import_and_gt_points_at_the_injected_entry(real_traces):
    files = sorted((real_traces / SAMPLES / "data" / "traces").glob("*.json"))
    assert len(files) == 5
    for path in files:
        doc = json.loads(path.read_text())
        trace = load_trace(path)
        gt = trace.ground_truth
        assert trace.id == doc["id"] and trace.outcome is Outcome.failure
        assert gt is not None and gt.step_index is not None and gt.mode == doc["ground_truth"]["mode"]
        step = trace.steps[gt.step_index]
        assert step.coord == gt.step
        # Who is labelled: the step's agent (single-agent frameworks: "agent").
        assert gt.agent == step.agent
        entries = doc["trajectory"]
        markers = [i for i, e in enumerate(entries) if _is_marker(e)]
        if markers:
            assert len(markers) == 1 and _is_marker(step.hidden)
            assert step.raw == {k: v for k, v in entries[markers[0]].items() if k not in HIDDEN_FIELDS}
        else:  # smolagents showcase traces: step 0 is the plan, else the action's step_number
            want = "planning" if gt.step == "0" else int(gt.step)
            src = step.raw
            assert (src.get("kind") == "planning") if want == "planning" else src["step_number"] == want
        _assert_no_leak(trace)
        # Media paths resolve against the dataset root the registry found.
        root = Path(trace.source.root)
        assert (root / "assets").is_dir()
        for ref in trace.task.images + [m for s in trace.steps for m in s.media]:
            assert ref.path and (root / ref.path).is_file(), ref.path


def test_showcase_details(real_traces):
    folder = real_traces / SAMPLES / "data" / "traces"
    mag = load_trace(folder / "simpleqa_election.json")
    assert mag.framework == "magentic-one" and mag.final_answer == "190"
    assert {a.id: a.role for a in mag.agents}["websurfer"] == "WebSurfer"
    surfer = mag.steps[mag.ground_truth.step_index]
    assert surfer.tool_calls[0].name == "click" and surfer.tool_calls[0].arguments["target_id"] == 79
    assert "ledger" in mag.steps[1].meta and mag.extras["termination"] == "satisfied"
    eva = load_trace(folder / "lvbench_camel.json")
    assert eva.modality is Modality.video and "video_context" in eva.extras
    assert eva.steps[2].tool_calls[0].arguments == {"end_time": 100, "nframes": 10, "start_time": 0}
    frames = eva.steps[3].media
    assert len(frames) == 10 and frames[1].kind == "frame" and frames[1].time_s == 11.0
    car = load_trace(folder / "mmsearch_car.json")
    assert car.steps[1].kind == "plan" and car.ground_truth.step == "0"
    assert car.final_answer.startswith("1,000 mm")
    macnet = load_trace(folder / "macnet_triangle.json")
    assert macnet.extras["eval_status"] == "failed_exit_1"
    assert [s.kind for s in macnet.steps[1:5]] == ["author", "critic", "rewriter", "sink"]


def test_walk_lists_showcase_traces_cheaply_and_consistently(real_traces):
    rows = list(walk(real_traces / SAMPLES))
    assert len(rows) == 5 and all(r.error is None and r.format == "whowhen-pro" for r in rows)
    for row in rows:
        trace = load_trace(row.ref())
        assert (row.gt_step, row.gt_mode, row.step_count) == (
            trace.ground_truth.step,
            trace.ground_truth.mode,
            len(trace.steps),
        )


def test_native_round_trip_loses_nothing(real_traces, tmp_path):
    for path in (real_traces / SAMPLES / "data" / "traces").glob("*.json"):
        trace = load_trace(path)
        out = write_trace(trace, tmp_path / (path.stem + ".native.json"))
        back = load_trace(out)
        back.source = trace.source
        assert back == trace


# --------------------------------------------------------------------------- made-up shapes


def _doc(framework, trajectory, gt, **top):
    return {
        "id": f"{framework}_t1",
        "framework": framework,
        "benchmark": "bench",
        "modality": "text",
        "task": {"query": "Q?", "answer": "A"},
        "ground_truth": gt,
        "trajectory": trajectory,
        **top,
    }


def _load(tmp_path, doc, name="t.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc))
    return load_trace(path)


def test_smolagents_action_fields(tmp_path):
    traj = [
        {"kind": "user", "content": "Solve", "images": [{"__type__": "PIL.Image", "data": PNG}]},
        {
            "kind": "action",
            "step_number": 1,
            "reasoning": "Thought: look\n```py\nx=1\n```</code>",
            "code": "x=1",
            "observation": "Execution logs:\n1",
            "observation_images": [{"__type__": "PIL.Image", "data": JPG, "source": "search"}],
            "error": {"type": "AgentExecutionError", "message": "boom"},
            "is_final_answer": False,
            "is_injected": True,
        },
        {
            "kind": "action",
            "step_number": 2,
            "reasoning": "<code>final_answer(3)</code>",
            "code": "final_answer(3)",
            "observation": "Last output from code snippet:\n3",
            "observation_images": [],
            "error": None,
            "is_final_answer": True,
        },
    ]
    t = _load(tmp_path, _doc("smolagents", traj, {"agent": None, "step": 1, "mode": "R.2"}, modality="image"))
    first, last = t.steps[1], t.steps[2]
    assert first.content == "Thought: look\n```py\nx=1\n```"  # dangling </code> removed
    assert last.content == "<code>final_answer(3)</code>"  # paired tag kept
    assert first.tool_calls[0].name == "python" and first.tool_calls[0].arguments == "x=1"
    assert first.error == "AgentExecutionError: boom" and first.observation == "Execution logs:\n1"
    assert first.media[0].data == JPG and first.media[0].mime == "image/jpeg"
    assert first.media[0].label == "search"
    assert t.steps[0].media[0].mime == "image/png" and t.steps[0].kind == "user"
    assert first.raw["observation_images"][0]["data"].startswith("<inline image")
    assert first.hidden == {"is_injected": True} and "is_injected" not in first.raw
    assert t.final_answer == "3" and t.modality is Modality.image
    assert t.ground_truth.agent == "agent" and t.agents[0].id == "agent"


def test_gui_actions_with_screenshots(tmp_path):
    traj = [
        {"kind": "user", "content": "Book a flight"},
        {
            "kind": "action",
            "step_number": 1,
            "agent": "web_agent",
            "reasoning": "open site",
            "action": "click(12)",
            "action_raw": {"type": "click", "id": 12},
            "observation": "url_after=x",
            "observation_images": [{"__type__": "PIL.Image", "data": PNG}],
            "error": None,
            "is_final_answer": False,
        },
        {
            "kind": "action",
            "step_number": 2,
            "reasoning": "done",
            "action": "stop()",
            "observation_images": [],
            "is_final_answer": True,
        },
    ]
    t = _load(tmp_path, _doc("gemini", traj, {"agent": None, "step": 1, "mode": "P.2"}))
    step = t.steps[1]
    assert (step.coord, step.agent, step.content) == ("1", "web_agent", "open site")
    assert step.tool_calls[0].name == "action" and step.tool_calls[0].arguments == "click(12)"
    assert step.meta["action_raw"] == {"type": "click", "id": 12} and step.media[0].data == PNG
    assert t.ground_truth.agent == "web_agent" and t.is_single_agent
    alf = _load(
        tmp_path,
        _doc(
            "alfagent",
            [traj[0], {"kind": "action", "step_number": 1, "reasoning": None, "action": "look", "observation": "room"}],
            {"agent": None, "step": 1, "mode": "A.1"},
        ),
        "alf.json",
    )
    assert alf.steps[1].agent == "agent" and alf.steps[1].tool_calls[0].arguments == "look"


def test_round_grouped_debate_is_scored_on_the_round(tmp_path):
    traj = [
        {"kind": "user", "content": "Q"},
        {
            "kind": "round",
            "round": 0,
            "turns": [
                {"agent_id": "a1", "role": "debater", "output": "4"},
                {"agent_id": "a2", "output": "5", "is_injected": True},
            ],
        },
        {"kind": "final_answer", "content": "5"},
    ]
    t = _load(tmp_path, _doc("debate", traj, {"agent": None, "agents": ["a2"], "round": 0, "mode": "C.3"}))
    assert [s.coord for s in t.steps] == [None, "0.0", "0.1", None]
    assert t.ground_truth.round_only and t.ground_truth.step == "0" and t.ground_truth.agents == ["a2"]
    assert t.steps[2].hidden == {"is_injected": True} and t.steps[2].meta["round"] == 0
    assert t.steps[2].content == "5" and t.final_answer == "5"
    _assert_no_leak(t)


def test_pixelcraft_turn_images(tmp_path):
    traj = [
        {
            "kind": "round",
            "round": 0,
            "turns": [
                {
                    "agent_id": "reasoner",
                    "position": 0,
                    "output": "bar is 3",
                    "images": [{"__type__": "PIL.Image", "data": PNG, "source": "task_1/2.jpg"}],
                }
            ],
        }
    ]
    t = _load(
        tmp_path,
        _doc("pixelcraft", traj, {"agent": "reasoner", "round": 0, "position": 0, "mode": "P.1"}, modality="image"),
    )
    assert t.steps[0].coord == "0.0" and t.steps[0].media[0].label == "task_1/2.jpg"


def test_magentic_one_ids_roles_tools_and_final_answer(tmp_path):
    traj = [
        {"kind": "user", "content": "Q"},
        {
            "kind": "agent",
            "agent": "orchestrator",
            "role": "Orchestrator",
            "round": 0,
            "position": 0,
            "output": "search",
            "ledger": {"next_speaker": {"answer": "WebSurfer"}},
            "phase": ["replayed"],
        },
        {
            "kind": "agent",
            "role": "WebSurfer",
            "round": 0,
            "position": 1,
            "output": "typed",
            "tool_actions": [{"type": "browser", "name": "input_text", "args": {"text_value": "q"}}],
            "phase": ["injected"],
        },
        {
            "kind": "agent",
            "agent": "orchestrator",
            "role": "Orchestrator",
            "round": 1,
            "position": 0,
            "output": "FINAL ANSWER: 7",
            "phase": ["live", "final_answer"],
        },
    ]
    doc = _doc(
        "magentic",
        traj,
        {"agent": "WebSurfer", "step": "0.1", "mode": "R.1"},
        agents=[{"id": "orchestrator", "role": "Orchestrator"}, {"id": "websurfer", "role": "WebSurfer"}],
    )
    t = _load(tmp_path, doc)
    assert t.framework == "magentic-one" and t.extras["framework_native"] == "magentic"
    assert [s.agent for s in t.steps[1:]] == ["orchestrator", "websurfer", "orchestrator"]
    assert t.ground_truth.agent == "websurfer" and t.ground_truth.step_index == 2
    assert t.steps[2].tool_calls[0].name == "input_text" and t.steps[2].hidden == {"phase": ["injected"]}
    assert t.final_answer == "FINAL ANSWER: 7"
    _assert_no_leak(t)


def test_macnet_mathchat_metagpt_agent_turns(tmp_path):
    mac = _load(
        tmp_path,
        _doc(
            "macnet",
            [
                {"kind": "user", "content": "def f(): ..."},
                {
                    "agent_id": "node_0",
                    "role": "author",
                    "stage": "source_generate_code",
                    "output": "code",
                    "is_injected": True,
                    "is_replayed": False,
                },
            ],
            {"agent": "node_0", "round": 0, "position": 0, "mode": "R.2"},
        ),
        "mac.json",
    )
    assert mac.steps[1].coord == "0.0" and mac.steps[1].meta["stage"] == "source_generate_code"
    assert mac.steps[1].hidden == {"is_injected": True, "is_replayed": False}
    math = _load(
        tmp_path,
        _doc(
            "mathchat",
            [
                {"kind": "user", "content": "1+1"},
                {"agent_id": "user_proxy", "round": 0, "position": 0, "output": "Let's use Python"},
                {"agent_id": "assistant", "round": 0, "position": 1, "output": "2"},
            ],
            {"agent": "assistant", "round": 0, "position": 1, "mode": "R.3"},
        ),
        "math.json",
    )
    assert [s.coord for s in math.steps] == [None, None, "1"] and math.ground_truth.step == "1"
    meta = _load(
        tmp_path,
        _doc(
            "metagpt",
            [
                {"agent_id": "architect", "role": "architect", "stage": 0, "output": "brief"},
                {"agent_id": "engineer", "role": "engineer", "stage": 1, "output": "code"},
            ],
            {"agent": "engineer", "stage": 1, "mode": "A.2"},
        ),
        "meta.json",
    )
    assert meta.steps[1].coord == "1" and meta.ground_truth.agent == "engineer"


def test_dvd_video_tool_turns(tmp_path):
    traj = [
        {"kind": "system", "content": "sys"},
        {"kind": "user", "content": "Q (A) x (B) y"},
        {
            "kind": "assistant",
            "content": "look",
            "tool_calls": [
                {
                    "id": "c1",
                    "name": "frame_inspect_tool",
                    "arguments": '{"time_ranges_hhmmss": [["00:00:00", "00:00:10"]]}',
                }
            ],
        },
        {
            "kind": "tool",
            "tool_name": "frame_inspect_tool",
            "tool_call_id": "c1",
            "content": "a dog",
            "frames": [{"index": 0, "time_s": 1.5, "path": "assets/f0.jpg"}],
            "injected": True,
        },
        {"kind": "tool", "tool_name": "finish", "content": "B"},
    ]
    t = _load(tmp_path, _doc("dvd", traj, {"agent": "frame_inspect_agent", "step": 3, "mode": "P.1"}, modality="video"))
    assert [s.coord for s in t.steps] == [None, None, "0", "1", "2"]
    assert t.steps[2].tool_calls[0].arguments == {"time_ranges_hhmmss": [["00:00:00", "00:00:10"]]}
    frame = t.steps[3].media[0]
    assert (frame.kind, frame.path, frame.time_s, frame.index) == ("frame", "assets/f0.jpg", 1.5, 0)
    assert t.steps[3].agent == "frame_inspect_agent" and t.steps[3].meta["tool_call_id"] == "c1"
    assert t.ground_truth.step == "1" and t.final_answer == "B"


def test_eva_pairs_share_a_coordinate(tmp_path):
    traj = [
        {"kind": "system", "content": "s"},
        {"kind": "user", "content": "q"},
        {
            "kind": "assistant",
            "content": "",
            "tool_calls": [{"id": "a", "name": "frame_select", "arguments": "not json"}],
        },
        {"kind": "tool", "tool_call_id": "a", "content": "frames"},
        {"kind": "assistant", "content": "It is <answer>C</answer>", "injected": True},
    ]
    t = _load(tmp_path, _doc("eva", traj, {"agent": None, "step": 4, "mode": "R.2"}, modality="video"))
    assert [s.coord for s in t.steps] == [None, None, "0", "0", "1"]
    assert t.steps[2].tool_calls[0].arguments == "not json" and t.final_answer == "C"
    assert t.ground_truth.agent == "agent" and t.ground_truth.step == "1"


def test_unknown_framework_warns_and_keeps_extras(tmp_path):
    doc = _doc(
        "brandnew",
        [{"kind": "user", "content": "q"}, {"kind": "assistant", "agent": "bot", "content": "hi"}],
        {"agent": "bot", "step": 0, "mode": "R.1"},
        topology={"x": 1},
        custom_field=[1, 2],
    )
    t = _load(tmp_path, doc)
    assert t.steps[1].coord == "0" and t.ground_truth.step_index == 1
    assert "unknown framework" in t.extras["whenpro_warnings"][0]
    assert t.extras["topology"] == {"x": 1} and t.extras["custom_field"] == [1, 2]


def test_outcome_from_ground_truth_or_eval_status(tmp_path):
    traj = [{"kind": "user", "content": "q"}, {"kind": "action", "step_number": 1, "reasoning": "r"}]
    assert _load(tmp_path, _doc("smolagents", traj, None, eval_status="passed")).outcome is Outcome.success
    assert _load(tmp_path, _doc("smolagents", traj, None, eval_status="failed_exit_1")).outcome is Outcome.failure
    assert _load(tmp_path, _doc("smolagents", traj, None)).outcome is Outcome.unknown
    assert (
        _load(tmp_path, _doc("smolagents", traj, {"step": 1, "mode": "R.2"}, eval_status="passed")).outcome
        is Outcome.failure
    )


def test_step_coord_override_and_accepted_predictions(tmp_path):
    traj = [{"kind": "user", "content": "q"}] + [
        {"kind": "action", "step_number": n, "reasoning": "r"} for n in (1, 2, 3)
    ]
    gt = {
        "agent": None,
        "step": 1,
        "step_coord": "step 2",
        "mode": "R.2",
        "accepted_predictions": [{"agent_name": "agent", "step_coord": "3", "mode": "R.3"}],
    }
    t = _load(tmp_path, _doc("smolagents", traj, gt))
    assert (t.ground_truth.step, t.ground_truth.step_index) == ("2", 2)
    assert t.ground_truth.accepted.step == ["3"] and t.ground_truth.accepted.mode == ["R.3"]
    assert t.ground_truth.native == gt


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "change,json_path,words",
    [
        ({"trajectory": '[{"kind": "user"}]'}, "$.trajectory", "a list of trajectory entries"),
        ({"trajectory": [{"kind": "user"}, 7]}, "$.trajectory[1]", "an object"),
        ({"id": None}, "$.id", "a non-empty string"),
        ({"modality": "audio"}, "$.modality", "one of text, image, image_gui, video"),
        ({"task": "Q?"}, "$.task", "an object"),
        ({"ground_truth": {"step": 9, "mode": "R.2"}}, "$.ground_truth.step", "1..1"),
    ],
)
def test_bad_documents_raise_with_file_and_json_path(tmp_path, change, json_path, words):
    doc = _doc(
        "smolagents",
        [{"kind": "user", "content": "q"}, {"kind": "action", "step_number": 1, "reasoning": "r"}],
        {"step": 1, "mode": "R.2"},
    )
    doc.update(change)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(TraceFormatError) as err:
        load_trace(path)
    assert err.value.json_path == json_path and words in err.value.expected
    assert err.value.path == str(path) and str(path) in str(err.value)
    # A listing reports the same problem as an error row and carries on.
    rows = list(walk(tmp_path))
    assert len(rows) == 1 and rows[0].error and json_path in rows[0].error


def test_missing_trajectory_and_sniffing(tmp_path):
    doc = _doc("smolagents", [], None)
    assert isinstance(sniff(_write(tmp_path, doc))[0], WhoWhenProImporter)
    doc.pop("trajectory")
    doc["trajectory_missing"] = True
    with pytest.raises(TraceFormatError):
        WhoWhenProImporter().load(doc, _ctx(tmp_path))


def test_list_of_documents_gets_keys(tmp_path):
    a = _doc("smolagents", [{"kind": "user", "content": "q"}], None)
    b = dict(a, id="second", trajectory=[{"kind": "user"}, "bad"])
    path = _write(tmp_path, [a, dict(a, id="other")])
    assert load_trace(f"{path}#2").id == "other"
    bad = _write(tmp_path, [a, b], "bad.json")
    with pytest.raises(TraceFormatError) as err:
        load_trace(bad)
    assert err.value.json_path == "$[1].trajectory[1]"


def _write(tmp_path, doc, name="doc.json"):
    path = tmp_path / name
    path.write_text(json.dumps(doc, indent=2))
    return path


def _ctx(tmp_path):
    from whenpro_core.formats.base import LoadContext

    return LoadContext(path=tmp_path / "x.json", root=tmp_path)
