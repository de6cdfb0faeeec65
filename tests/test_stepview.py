"""One-line rows, rendering decisions, folding, media labels and the text form of a
step (whenpro_core.views.stepview)."""

from __future__ import annotations

from tests.conftest import team_trace, tiny_png
from whenpro_core.trace.model import MediaRef, Step, ToolCall
from whenpro_core.views.search import folded_hit
from whenpro_core.views.stepview import (
    MARK_GT,
    MARK_INJECTED,
    TextOptions,
    content_blocks,
    fold,
    media_label,
    pretty_arguments,
    step_as_text,
    step_row,
    step_summary,
)


def test_step_row_markers_and_label_markers_only_with_labels() -> None:
    trace = team_trace()
    gt = trace.ground_truth.step_index
    rows = [step_row(s, gt_index=gt) for s in trace.steps]
    assert rows[3].gt and rows[3].injected
    assert rows[3].markers(show_labels=False) == ""
    assert rows[3].markers(show_labels=True) == MARK_INJECTED + MARK_GT
    assert rows[4].markers(False) == "▣"
    assert rows[5].markers(False) == "✗"
    assert step_row(trace.steps[0], attributed=True).markers(False) == "◆"
    assert rows[2].agent == "coder" and rows[2].coord == "2"


def test_injected_marker_only_on_the_injected_step_not_replayed_ones() -> None:
    replayed = Step(index=1, coord="1", hidden={"is_injected": False, "is_replayed": True})
    assert not step_row(replayed).injected and step_row(replayed).markers(True) == ""
    assert step_row(Step(index=2, hidden={"injected": True})).markers(True) == MARK_INJECTED


def test_real_macnet_marks_only_its_injected_step(real_traces) -> None:
    from whenpro_core.library.opening import load_trace

    trace = load_trace(real_traces / "who-when-pro-samples" / "data" / "traces" / "macnet_triangle.json")
    flagged = [s.index for s in trace.steps if step_row(s).injected]
    assert flagged == [s.index for s in trace.steps if s.hidden.get("is_injected")] and len(flagged) == 1


def test_magentic_one_phase_marks_its_injected_step(real_traces) -> None:
    """Magentic-One rows of Who&When Pro say it with ``phase: ["injected"]``."""
    from whenpro_core.library.opening import load_trace

    trace = load_trace(real_traces / "who-when-pro-samples" / "data" / "traces" / "simpleqa_election.json")
    flagged = [s.coord for s in trace.steps if step_row(s).injected]
    assert flagged == ["1.1"]
    assert not step_row(Step(index=0, hidden={"phase": ["replayed"]})).injected
    assert step_row(Step(index=0, hidden={"phase": "injected"})).injected


def test_summary_falls_back_to_tool_calls_observation_error() -> None:
    assert step_summary(Step(index=0, content="  many\n\nwords  here ")) == "many words here"
    s = Step(index=0, tool_calls=[ToolCall(name="search", arguments={"q": "nyse dojo"})])
    assert step_summary(s) == "→ search(q=nyse dojo)"
    assert step_summary(Step(index=0, observation="200 OK\nbody")) == "⇐ 200 OK body"
    assert step_summary(Step(index=0, error="Boom")) == "error: Boom"
    assert step_summary(Step(index=0, content="x" * 10_000)).endswith("…")
    assert "\x1b" not in step_summary(Step(index=0, content="\x1b[2Jhi"))


def test_content_blocks_decide_by_content() -> None:
    [b] = content_blocks('{"a": 1, "b": [1, 2]}')
    assert b.kind == "json" and '"a": 1' in b.text and "\n" in b.text
    head, body = content_blocks('Updated Ledger:\n{"is_request_satisfied": {"answer": false}}')
    assert (head.kind, body.kind) == ("text", "json")
    assert content_blocks("## Plan\n\n1. first\n2. second")[0].kind == "markdown"
    assert content_blocks("See **this**")[0].kind == "markdown"
    code = "import math\nx = 3 * 4.5\ny = x * 1.08\nprint(y)"
    assert content_blocks(code)[0].kind == "code"
    assert content_blocks("Just a sentence. And another one.")[0].kind == "text"
    assert content_blocks("{not json") == content_blocks("{not json")  # no raise
    assert content_blocks("{not json")[0].kind == "text"
    assert content_blocks("   ") == []


def test_pretty_arguments() -> None:
    assert pretty_arguments({"code": "print(1)"}).kind == "json"
    assert pretty_arguments('{"answer": "21.50"}').text == '{\n  "answer": "21.50"\n}'
    assert pretty_arguments("plain words").kind == "text"
    assert pretty_arguments(None).text == ""
    assert "\x1b" not in pretty_arguments({"x": "\x1b[2J"}).text


def test_fold_caps_lines_and_chars() -> None:
    text = "".join(f"line {i}\n" for i in range(1000))
    f = fold(text, max_lines=10, max_chars=10_000)
    assert f.text.count("\n") == 9 and f.text.startswith("line 0")
    assert not f.complete and f.hidden_lines == 990
    assert f.note().startswith("… 990 more lines")
    whole = fold("short", max_lines=10, max_chars=100)
    assert whole.complete and whole.note() == ""


def test_the_first_search_hit_a_fold_hides_is_found_with_its_line() -> None:
    text = "".join(f"line {i}: tax\n" for i in range(1000)) + "x" * 500 + "Total TAX \x1b[2J" + "y" * 500
    f = fold(text, max_lines=10, max_chars=10_000)
    hit = folded_hit(text, f.shown_chars, "tax")
    assert hit is not None and hit.line == 11 and hit.excerpt == "line 10: tax" and hit.more == 990
    last = folded_hit(text, len(text) - 600, " TAX")
    assert last is not None and last.line == 1001 and last.more == 0
    assert last.excerpt.startswith("…") and last.excerpt.endswith("…") and "Total TAX ␛[2J" in last.excerpt
    assert folded_hit(text, f.shown_chars, "   ") is None and folded_hit(text, len(text), "tax") is None
    one = fold("y" * 10_000_000, max_lines=60, max_chars=6_000)
    assert one.shown_chars == 6_000 and one.total_chars == 10_000_000
    assert one.note() == "… 6.0 K chars of 10.0 M chars shown"
    assert fold("\x1b[2J" * 3, max_lines=5, max_chars=100).text == "␛[2J" * 3


def test_media_labels() -> None:
    assert media_label(MediaRef(kind="image", data=tiny_png(4, 3), label="query_0")) == "[image: query_0 4x3]"
    assert media_label(MediaRef(kind="video", path="assets/clip.mp4")) == "[video: clip.mp4]"
    assert media_label(MediaRef(kind="frame", path="f/003.jpg", index=3, time_s=12.5)) == "[frame: 003.jpg #3 12.5s]"


def test_step_as_text_hides_label_fields_unless_asked() -> None:
    step = team_trace().steps[3]
    text = step_as_text(step)
    assert text.startswith("Step 3 | Agent: coder | action\n")
    assert "is_injected" not in text
    assert "is_injected: true" in step_as_text(step, TextOptions(show_labels=True))
    tool = step_as_text(team_trace().steps[2])
    assert "Tool call: python (id call_1)" in tool and "Observation:\n14.58" in tool
    capped = step_as_text(Step(index=0, content="z" * 5000), TextOptions(max_chars=100))
    assert "5.0 K chars in total" in capped


def test_short_kind_abbreviates_by_words_never_mid_word() -> None:
    from whenpro_core.views.stepview import short_kind

    assert short_kind("final_answer", 12) == "final_answer"
    assert short_kind("final_answer", 8) == "final"
    assert short_kind("observation", 8) == "obs"
    assert short_kind("assistant", 6) == "asst"
    assert short_kind("tool-result", 5) == "tool"
    assert short_kind("reflection", 6) == "refle…"
    assert short_kind("final_answer", 4) == "fin…"
    assert short_kind("plan", 0) == "" and short_kind("plan", 1) == "…"
