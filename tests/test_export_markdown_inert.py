"""The Markdown export shows hostile trace text inert (issue 33, item 2): everything that
is not whenpro's own markup is escaped (the title, the framework line, gold and final,
verdicts, step headers, tool names in inline code, hidden fields, image labels), so a
CommonMark renderer that passes raw HTML through (markdown-it-py's ``commonmark``
preset, as many issue trackers and wikis) makes no element of it; the page it gives is
loaded in a real headless Chromium, where no payload runs and the payload text is shown."""

from __future__ import annotations

from typing import Any

import pytest
from markdown_it import MarkdownIt

from tests.conftest import team_trace
from whenpro_core.attribution.export import ExportOptions, trace_markdown
from whenpro_core.trace.model import Attribution, GroundTruth, MediaRef, ToolCall, Trace


def payload(field: str) -> str:
    """HTML that records ``field`` in ``window.__ran`` if a browser runs it."""
    return f"<img src=x onerror=\"window.__ran.push('{field}')\"><script>window.__ran.push('{field}')</script>"


def hostile_trace() -> Trace:
    trace = team_trace()
    trace.id = "t1" + payload("title")
    trace.framework = "fw" + payload("framework")
    trace.benchmark = "bench" + payload("benchmark")
    trace.task.answer = payload("gold")
    trace.final_answer = "[click](javascript:window.__ran.push('link')) " + payload("final")
    trace.ground_truth = GroundTruth(agent="coder" + payload("gt-agent"), step="3", reason=payload("gt-reason"))
    step = trace.steps[2]
    step.coord = "2" + payload("coord")
    step.agent = "coder" + payload("agent")
    step.kind = "action" + payload("kind")
    step.content = "long " * 1_000  # over the field cap: the closing note names the step
    step.tool_calls = [ToolCall(id="c", name="py`` " + payload("tool") + " ``x", arguments={"a": 1})]
    step.hidden = {"note" + payload("hidden-key"): payload("hidden-value")}
    step.media = [MediaRef(kind="image", label="pic" + payload("image"), path="p.png")]
    return trace


def hostile_verdict() -> Attribution:
    return Attribution(
        protocol="all-at-once" + payload("protocol"),
        agent="coder" + payload("verdict-agent"),
        step="3" + payload("verdict-step"),
        reason="<javascript:window.__ran.push('autolink')> " + payload("reason"),
    )


def rendered() -> str:
    markdown = trace_markdown(hostile_trace(), ExportOptions(labels=True, verdicts=[hostile_verdict()]))
    return MarkdownIt("commonmark").render(markdown)  # html=True: raw HTML passes through


def test_no_raw_html_or_link_comes_out_of_the_markdown() -> None:
    html = rendered()
    for made in ("<img", "<script", "<a "):
        assert made not in html, html[html.find(made) - 200 : html.find(made) + 200]
    assert "&lt;script&gt;window.__ran.push('tool')" in html  # shown, as text


def test_the_rendered_markdown_runs_nothing_in_chromium(browser: Any) -> None:
    page_html = (
        "<!doctype html><html><body>"
        + rendered()
        + '<img id=control src=x onerror="window.__control = 1"></body></html>'  # a payload of our own runs
    )
    context = browser.new_context()
    context.add_init_script("window.__ran = []")
    page = context.new_page()
    page.set_content(page_html)
    page.wait_for_function("window.__control === 1")
    assert page.evaluate("window.__ran") == []
    active = page.evaluate(
        "Array.from(document.querySelectorAll('*')).filter(e => e.id !== 'control' && ("
        "['SCRIPT', 'IMG', 'IFRAME', 'A'].includes(e.tagName)"
        " || Array.from(e.attributes).some(a => a.name.startsWith('on')))).map(e => e.outerHTML)"
    )
    assert active == []
    text = page.inner_text("body")
    for field in ("title", "framework", "gold", "final", "gt-reason", "coord", "tool", "hidden-value", "image"):
        assert f"window.__ran.push('{field}')" in text, field
    context.close()


@pytest.mark.parametrize("name", ["a`b", "``", "`edge`", "x" * 5])
def test_tool_names_are_one_inline_code_span_whatever_their_backticks(name: str) -> None:
    trace = team_trace()
    trace.steps[2].tool_calls = [ToolCall(id="c", name=name, arguments={})]
    html = MarkdownIt("commonmark").render(trace_markdown(trace))
    assert f"→ tool call <code>{name}</code>" in html
