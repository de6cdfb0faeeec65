"""Chat logs, MAST/MAD records and AgentRx runs: real_traces/mast-mad-sample,
mast-lint-ag2-dogfood and agentrx (each quirk of their SOURCE.md), and made-up chat logs."""

from __future__ import annotations

import json

import pytest

from whenpro_core.errors import TraceFormatError
from whenpro_core.formats import load_trace, load_traces, walk
from whenpro_core.formats.native import dumps_trace
from whenpro_core.trace.model import Outcome

PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="


# ------------------------------------------------------------------ chat logs


def test_openai_messages_with_null_content_tool_calls_and_image_parts(tmp_path):
    msgs = [
        {"role": "system", "content": "be helpful"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is in this image?"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}},
                {"type": "image_url", "image_url": {"url": "https://example.com/a.jpg"}},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "zoom", "arguments": '{"factor": 2}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "name": "zoom", "content": "a cat"},
        {"role": "assistant", "content": "A cat."},
    ]
    p = tmp_path / "chat.json"
    p.write_text(json.dumps(msgs, indent=1))
    trace = load_trace(p)
    assert trace.framework == "openai-chat" and [s.coord for s in trace.steps] == ["0", "1", "2", "3", "4"]
    user, call, tool = trace.steps[1], trace.steps[2], trace.steps[3]
    assert user.media[0].data == PNG and user.media[0].mime == "image/png"
    assert user.media[1].data is None and "https://example.com/a.jpg" in user.media[1].label
    assert call.kind == "action" and call.content == "" and call.tool_calls[0].arguments == {"factor": 2}
    assert tool.kind == "tool" and tool.meta["tool"] == "zoom" and tool.meta["tool_call_id"] == "c1"
    assert trace.task.query == "What is in this image?" and trace.final_answer == "A cat."


def test_ag2_group_chat_speaker_is_name(tmp_path):
    doc = {
        "chat_history": [
            {"content": "Plan: write add()", "role": "user", "name": "Planner"},
            {"content": "def add(a, b): return a - b", "role": "assistant", "name": "Coder"},
            {"content": "looks fine", "role": "user", "name": "Tester"},
        ],
        "summary": "done",
        "cost": {"usage_including_cached_inference": {"total_cost": 0}},
    }
    p = tmp_path / "groupchat.json"
    p.write_text(json.dumps(doc, indent=1))
    trace = load_trace(p)
    assert trace.framework == "ag2" and trace.agent_ids() == ["Planner", "Coder", "Tester"]
    assert trace.extras["summary"] == "done"


def test_chat_jsonl_message_per_line_and_conversation_per_line(tmp_path):
    per_message = tmp_path / "m.jsonl"
    per_message.write_text(
        "\n".join(json.dumps(m) for m in [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}])
        + "\n"
    )
    rows = list(walk(per_message))
    assert len(rows) == 1 and rows[0].step_count == 2 and rows[0].key is None
    per_conv = tmp_path / "c.jsonl"
    per_conv.write_text(
        "\n".join(
            json.dumps({"messages": [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}]})
            for i in range(3)
        )
        + "\n"
    )
    rows = list(walk(per_conv))
    assert [r.key for r in rows] == ["1", "2", "3"]
    assert load_trace(f"{per_conv}#2").task.query == "q1"


@pytest.mark.parametrize(
    "msgs, json_path",
    [
        ([{"role": "user", "content": "x"}, {"role": "assistant", "content": 3}], "$[1].content"),
        (
            [
                {"role": "user", "content": "x"},
                {"role": "assistant", "content": None, "tool_calls": [{"id": "1", "function": {"arguments": "{}"}}]},
            ],
            "$[1].tool_calls[0].function.name",
        ),
        ([{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}], "$[0].content[0]"),
        (
            [{"role": "user", "content": "x"}, {"role": "assistant", "content": None, "tool_calls": "nope"}],
            "$[1].tool_calls",
        ),
    ],
)
def test_half_broken_chat_logs_name_the_json_path(tmp_path, msgs, json_path):
    p = tmp_path / "chat.json"
    p.write_text(json.dumps(msgs, indent=1))
    with pytest.raises(TraceFormatError) as info:
        load_trace(p)
    assert json_path in str(info.value) and str(p) in str(info.value)


def test_half_broken_chat_jsonl_names_the_row(tmp_path):
    p = tmp_path / "m.jsonl"
    p.write_text('{"role": "user", "content": "hi"}\n{"role": 5, "content": "x"}\n')
    [note] = load_trace(p).extras["whenpro_warnings"]  # a bad line is skipped, as watch skips it
    assert "line 2" in note and "$.role" in note


# ------------------------------------------------------------------ MAST / MAD


def test_mad_records_trace_string_and_lines(real_traces):
    trace = load_trace(real_traces / "mast-mad-sample/records/AG2_GSM-Plus_trace7.json")
    raw = json.loads((real_traces / "mast-mad-sample/records/AG2_GSM-Plus_trace7.json").read_text())
    assert isinstance(raw["trace"], str)  # the trace is a JSON string inside the record
    inner = json.loads(raw["trace"])
    assert isinstance(inner["trajectory"][0]["content"], list)  # content is a list of lines
    assert trace.steps[0].content == "\n".join(inner["trajectory"][0]["content"])
    assert trace.agent_ids() == ["mathproxyagent", "assistant"] and trace.framework == "ag2"
    assert trace.task.query.startswith("Miss Maria")


def test_mad_label_leaking_fields_are_hidden_from_steps(real_traces):
    trace = load_trace(real_traces / "mast-mad-sample/records/AG2_GSM-Plus_trace7.json")
    hidden = trace.extras["hidden"]
    assert "The agent forgot that 10 cards were refused" in hidden["note"]["text"][0]
    assert "correct" in hidden["other_data"]
    visible = json.dumps([s.model_dump(mode="json") for s in trace.steps]) + json.dumps(trace.task.model_dump())
    assert "forgot that 10 cards" not in visible and "other_data" not in visible
    assert "note" not in trace.extras.get("trace_meta", {})


def test_mad_majority_votes_become_named_annotations(real_traces):
    r2 = load_trace(real_traces / "mast-mad-sample/records/AG2_GSM-Plus_trace7.json")
    assert [a.label for a in r2.annotations] == ["Lack of result verification"]  # 3.3 in Round 2
    gen = load_trace(real_traces / "mast-mad-sample/records/MetaGPT_MMLU_trace16.json")
    labels = {a.label for a in gen.annotations}
    assert labels == {"Disobey Task Specification", "No or Incomplete Verification", "Incorrect Verification"}
    assert all(a.step is None and a.agent is None for a in gen.annotations)  # trace-level only
    assert gen.ground_truth is None


def test_nan_annotator_votes_do_not_count(tmp_path):
    rec = {
        "round": "Round 3",
        "mas_name": "AG2",
        "benchmark_name": "GSM-Plus",
        "trace_id": 18,
        "trace": json.dumps({"trajectory": [{"content": ["hi"], "role": "user", "name": "a"}]}),
        "annotations": [
            {
                "failure mode": "1.1 Disobey Task Specification\n\ndef",
                "annotator_1": True,
                "annotator_2": False,
                "annotator_3": float("nan"),
            }
        ],
    }
    p = tmp_path / "r.json"
    p.write_text(json.dumps(rec))  # Python writes NaN, which is not strict JSON
    assert "NaN" in p.read_text()
    trace = load_trace(p)
    assert trace.annotations == []  # 1 of 2 valid votes is not a majority


def test_metagpt_plain_text_log_split_by_speaker(real_traces):
    trace = load_trace(real_traces / "mast-mad-sample/records/MetaGPT_MMLU_trace16.json")
    assert [s.agent for s in trace.steps] == [
        "Human",
        "SimpleCoder",
        "SimpleTester",
        "SimpleReviewer",
        "SimpleTester",
        "SimpleReviewer",
    ]
    assert trace.steps[0].kind == "user" and trace.steps[0].meta["action"].endswith("UserRequirement")
    assert trace.steps[1].content.startswith("def find_answer")
    assert not any("-----" in s.content or "NEW MESSAGES" in s.content for s in trace.steps)


def test_metagpt_json_trace_with_log_content(tmp_path):
    log = (
        "=== MetaGPT Agent Communication Log - Started ===\n\n[t1] FROM: Human TO: {'<all>'}\n"
        "ACTION: UserRequirement\nCONTENT:\nWrite hello\n" + "-" * 80 + "\n\n[t2] NEW MESSAGES:\n\n"
        "SimpleCoder: print('hello')\n" + "-" * 80 + "\n"
    )
    rec = {
        "round": "Round 3",
        "mas_name": "MetaGPT",
        "benchmark_name": "ProgramDev",
        "trace_id": 1,
        "trace": json.dumps({"run_id": "r1", "prompt": "Write hello", "content": log, "cost": 0.1}),
    }
    p = tmp_path / "m.json"
    p.write_text(json.dumps(rec))
    trace = load_trace(p)
    assert [(s.agent, s.content) for s in trace.steps] == [("Human", "Write hello"), ("SimpleCoder", "print('hello')")]
    assert trace.extras["trace_meta"]["run_id"] == "r1"


def test_mast_lint_records_with_gold_labels(real_traces):
    traces = load_traces(real_traces / "mast-lint-ag2-dogfood/batch1/raw_ag2_records.json")
    assert len(traces) == 8 and {t.source.key for t in traces} >= {"rate-limiter", "linked-list-merge"}
    by_key = {t.source.key: t for t in traces}
    rl = by_key["rate-limiter"]
    assert {a.label for a in rl.annotations} == {"Disobey Role Specification", "No or Incomplete Verification"}
    assert all(a.source == "mast-lint gold" and a.reason.startswith("FM-") for a in rl.annotations)
    assert by_key["linked-list-merge"].annotations == []  # present: [] is a clean trace
    assert rl.agent_ids() == ["Planner", "Coder", "Tester"]  # name, not the chat role


def test_gold_labels_and_ground_truth_files_are_not_listed_as_traces(real_traces):
    rows = list(walk(real_traces / "mast-lint-ag2-dogfood"))
    assert len(rows) == 24 and not [r for r in rows if r.error]
    with pytest.raises(TraceFormatError, match="MAST gold-labels file"):
        load_trace(real_traces / "mast-lint-ag2-dogfood/batch1/gold_labels.json")


def test_mast_lint_agents_speak_as_agents_not_as_the_user(real_traces):
    """Planner/Coder/Tester carry the chat role ``user``; only the opening task message is
    a user step, every later message is an agent step (SOURCE.md: the agent is ``name``)."""
    rl = {t.source.key: t for t in load_traces(real_traces / "mast-lint-ag2-dogfood/batch1/raw_ag2_records.json")}[
        "rate-limiter"
    ]
    assert [s.meta["role"] for s in rl.steps] == ["user"] * 5
    assert [(s.agent, s.kind) for s in rl.steps] == [
        ("Planner", "user"),
        ("Planner", "assistant"),
        ("Coder", "assistant"),
        ("Tester", "assistant"),
        ("Tester", "assistant"),
    ]


def test_mad_ag2_user_proxy_is_the_user_and_the_assistant_is_the_agent(real_traces):
    """MAD AG2 math chats: ``mathproxyagent`` (a user proxy, chat role ``assistant``) poses
    the problem and says "Continue"; ``assistant`` (chat role ``user``) solves it."""
    trace = load_trace(real_traces / "mast-mad-sample/records/AG2_GSM-Plus_trace2.json")
    kinds = {(s.agent, s.kind) for s in trace.steps}
    assert kinds == {("mathproxyagent", "user"), ("assistant", "assistant")}


@pytest.mark.parametrize("folder", ["mast-lint-ag2-dogfood", "mast-mad-sample"])
def test_heuristic_names_an_agent_and_a_step_on_every_mast_record(real_traces, folder):
    from whenpro_core.attribution.heuristic import attribute_heuristic

    rows = list(walk(real_traces / folder))
    assert rows and not [r for r in rows if r.error]
    for row in rows:
        trace = load_trace(f"{row.path}#{row.key}" if row.key else row.path)
        verdict = attribute_heuristic(trace)
        step = next((s for s in trace.steps if s.coord == verdict.step), None)
        assert verdict.agent and step is not None, (row.id, verdict.warnings)
        assert step.kind not in ("user", "system") and step.agent == verdict.agent
        assert "no agent step to attribute" not in verdict.warnings


def test_ag2_group_chat_opening_message_is_the_task_and_proxies_are_users(tmp_path):
    doc = {
        "chat_history": [
            {"content": "Sum 2 and 2.", "role": "user", "name": "Planner"},
            {"content": "Plan: add them", "role": "user", "name": "Planner"},
            {"content": "4", "role": "assistant", "name": "Coder"},
            {"content": "Check again.", "role": "assistant", "name": "user_proxy"},
            {"content": "still 4", "role": "user", "name": "Coder"},
        ]
    }
    p = tmp_path / "groupchat.json"
    p.write_text(json.dumps(doc))
    trace = load_trace(p)
    assert [s.kind for s in trace.steps] == ["user", "assistant", "assistant", "user", "assistant"]
    assert trace.task.query == "Sum 2 and 2."


def test_openai_chat_with_a_named_user_keeps_chat_roles(tmp_path):
    msgs = [
        {"role": "user", "name": "alice", "content": "hi"},
        {"role": "assistant", "content": "hello"},
        {"role": "user", "name": "alice", "content": "bye"},
    ]
    p = tmp_path / "chat.json"
    p.write_text(json.dumps(msgs))
    assert [s.kind for s in load_trace(p).steps] == ["user", "assistant", "user"]


@pytest.mark.parametrize(
    "rec, json_path",
    [
        ({"mas_name": "AG2", "trace_id": 1, "trace": 5}, "$.trace"),
        ({"mas_name": "AG2", "trace_id": 1, "trace": json.dumps({"trajectory": "x"})}, "$.trace.trajectory"),
        (
            {"mas_name": "AG2", "trace_id": 1, "trace": json.dumps({"trajectory": [{"content": "x"}]})},
            "$.trace.trajectory[0].role",
        ),
        ({"mas_name": "MetaGPT", "trace_id": 1, "trace": "no markers here"}, "$.trace"),
        (
            {"mas_name": "AG2", "trace_id": 1, "trace": json.dumps({"trajectory": []}), "annotations": [{"x": 1}]},
            "$.annotations[0].failure mode",
        ),
    ],
)
def test_half_broken_mast_records_name_the_json_path(tmp_path, rec, json_path):
    p = tmp_path / "rec.json"
    p.write_text(json.dumps(rec))
    with pytest.raises(TraceFormatError) as info:
        load_trace(p)
    assert json_path in str(info.value) and str(p) in str(info.value)


# ------------------------------------------------------------------ AgentRx


def test_agentrx_folder_imports_and_skips_label_and_context_files(real_traces):
    rows = list(walk(real_traces / "agentrx"))
    assert len(rows) == 57 and not [r for r in rows if r.error]  # 33 + 20 + 4; labels/context skipped
    assert not [r for r in rows if "ground_truth" in r.path or "tools_structure" in r.path]
    with pytest.raises(TraceFormatError, match="tool-call examples"):
        load_trace(real_traces / "agentrx/context/tool_schemas/tools_structure.json")
    with pytest.raises(TraceFormatError, match="AgentRx ground-truth file"):
        load_trace(real_traces / "agentrx/magentic_one/ground_truth.json")


def test_magentic_one_coords_are_history_indexes_and_step_n_is_n_minus_1(real_traces):
    gt = json.loads((real_traces / "agentrx/magentic_one/ground_truth.json").read_text())
    for entry in gt:
        trace = load_trace(real_traces / f"agentrx/magentic_one/trajectories/{entry['trajectory_id']}.json")
        assert trace.framework == "magentic-one" and trace.outcome == Outcome.failure
        assert len(trace.annotations) == len(entry["failures"])
        for ann, f in zip(trace.annotations, entry["failures"], strict=False):
            assert ann.step == str(f["step_number"] - 1) and ann.source == "agentrx"
            assert trace.step_by_coord(ann.step) is not None
        root = [a for a in trace.annotations if a.decisive]
        assert len(root) == 1 and trace.ground_truth.step == root[0].step
        assert trace.ground_truth.step_index == int(root[0].step)


def test_root_cause_failure_id_as_string(real_traces):
    trace = load_trace(real_traces / "agentrx/magentic_one/trajectories/08cae58d-4084-4616-b6dd-dd6534e4825b.json")
    assert trace.ground_truth.native["root_cause"]["failure_id"] == "1"
    first = json.loads((real_traces / "agentrx/magentic_one/ground_truth.json").read_text())
    entry = next(e for e in first if e["trajectory_id"].startswith("08cae58d"))
    assert trace.ground_truth.step == str(entry["failures"][0]["step_number"] - 1)


def test_websurfer_casing_is_matched_to_the_trace_agent(real_traces):
    gt = json.loads((real_traces / "agentrx/magentic_one/ground_truth.json").read_text())
    entry = next(e for e in gt if any(f["failed_agent"] == "Websurfer" for f in e["failures"]))
    trace = load_trace(real_traces / f"agentrx/magentic_one/trajectories/{entry['trajectory_id']}.json")
    assert "Websurfer" not in {a.agent for a in trace.annotations}
    assert "WebSurfer" in {a.agent for a in trace.annotations}


def test_speaker_is_the_decorated_role(real_traces):
    trace = load_trace(real_traces / "agentrx/magentic_one/trajectories/42576abe-0deb-4869-8c63-225c2d75a95a.json")
    assert trace.steps[0].agent == "human" and trace.steps[0].kind == "user"
    assert {"Orchestrator"} <= set(trace.agent_ids()) and all("(" not in a for a in trace.agent_ids())


def test_tau_bench_coords_are_message_index_and_labels_match(real_traces):
    gt = json.loads((real_traces / "agentrx/tau_retail/ground_truth.json").read_text())
    for entry in gt:
        trace = load_trace(real_traces / f"agentrx/tau_retail/failed/task_{entry['trajectory_id']}.json")
        assert trace.outcome == Outcome.failure and trace.framework == "tau-bench"
        assert [s.coord for s in trace.steps] == [str(i) for i in range(1, len(trace.steps) + 1)]
        for ann, f in zip(trace.annotations, entry["failures"], strict=False):
            assert ann.step == str(f["step_number"]) and ann.agent == f["failed_agent"]
            speaker = trace.step_by_coord(ann.step).agent
            # task 80 labels a User message as the Assistant's failure: kept as labelled
            assert speaker == f["failed_agent"] or (entry["trajectory_id"], f["step_number"]) == (80, 26)
    t2 = load_trace(real_traces / "agentrx/tau_retail/failed/task_2.json")
    call = t2.step_by_coord("3")
    assert call.content == "" and call.tool_calls[0].name == "list_all_product_types"
    assert t2.ground_truth.step == "7" and t2.ground_truth.agent == "Assistant"


def test_succeeded_unlabelled_runs_are_successes_without_labels(real_traces):
    for p in sorted((real_traces / "agentrx/tau_retail/succeeded_unlabelled").glob("*.json")):
        trace = load_trace(p)
        assert trace.outcome == Outcome.success and trace.ground_truth is None and trace.annotations == []


def test_no_step_labels_are_invented(real_traces):
    trace = load_trace(real_traces / "agentrx/tau_retail/failed/task_2.json")
    assert all(not s.hidden for s in trace.steps)
    labelled = {a.step for a in trace.annotations}
    assert labelled == {"3", "7"}
    assert trace.ground_truth.mode is None and trace.ground_truth.agents == []
    assert "Misinterpretation of Tool Output" in dumps_trace(trace).decode()  # the category, as a label


def test_bad_label_step_names_the_labels_file(tmp_path):
    (tmp_path / "trajectories").mkdir()
    run = tmp_path / "trajectories" / "abc.json"
    run.write_text(json.dumps([{"content": "q", "role": "human"}, {"content": "x", "role": "Orchestrator (thought)"}]))
    (tmp_path / "ground_truth.json").write_text(
        json.dumps(
            [
                {
                    "trajectory_id": "abc",
                    "failures": [{"failure_id": 1, "step_number": 9, "failed_agent": "Orchestrator"}],
                    "root_cause": {"failure_id": 1},
                }
            ]
        )
    )
    with pytest.raises(TraceFormatError) as info:
        load_trace(run)
    assert "ground_truth.json" in str(info.value) and "$[0].failures[0].step_number" in str(info.value)


@pytest.mark.parametrize(
    "doc, json_path",
    [
        ({"task_id": 1, "reward": 0.0, "traj": ["x"]}, "$.traj[0]"),
        ({"task_id": 1, "reward": 0.0, "traj": [{"role": "user", "content": "x", "index": "one"}]}, "$.traj[0].index"),
        ({"task_id": 1, "reward": "bad", "traj": []}, "$.reward"),
        (
            {
                "task_id": 1,
                "reward": 1.0,
                "traj": [{"role": "assistant", "content": None, "tool_calls": [{}], "index": 1}],
            },
            "$.traj[0].tool_calls[0].function.name",
        ),
    ],
)
def test_half_broken_tau_runs_name_the_json_path(tmp_path, doc, json_path):
    p = tmp_path / "task_1.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(TraceFormatError) as info:
        load_trace(p)
    assert json_path in str(info.value) and str(p) in str(info.value)


def test_half_broken_magentic_list(tmp_path):
    p = tmp_path / "m.json"
    p.write_text(json.dumps([{"content": "q", "role": "human"}, {"content": 5, "role": "Orchestrator (thought)"}]))
    with pytest.raises(TraceFormatError, match=r"\$\[1\]\.content"):
        load_trace(p)


@pytest.mark.parametrize(
    "messages, framework",
    [
        (
            [{"role": "user", "name": "bob", "content": "hi"}, {"role": "assistant", "content": "hello"}],
            "openai-chat",
        ),  # OpenAI lets a user message carry a name
        (
            [
                {"role": "system", "name": "rules", "content": "be brief"},
                {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "hello"},
            ],
            "openai-chat",
        ),
        (
            [{"role": "user", "content": "hi"}, {"role": "assistant", "name": "Coder", "content": "x = 1"}],
            "ag2",
        ),  # a named agent turn
        (
            [
                {"role": "user", "name": "Admin", "content": "plan it"},
                {"role": "user", "name": "Planner", "content": "step 1"},
            ],
            "ag2",
        ),  # group-chat structure
    ],
)
def test_only_agent_names_or_a_group_chat_make_a_chat_ag2(tmp_path, messages, framework):
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(messages))
    assert load_trace(path).framework == framework
