"""Sharing a diagnosis (``whenpro export``): one self-contained HTML page checked in a
real headless Chromium (steps, verdict and its evidence shown, images inlined, hostile
content inert, no console error, no request leaves the page), labels only with
``--labels``, per-step usage, and bounded Markdown with a note of what was cut."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import SAMPLES, team_trace
from tests.support.browser import browser, chromium_path  # noqa: F401  (fixtures)
from tests.support.cli import run_whenpro
from whenpro_core.attribution.export import ExportOptions, trace_markdown
from whenpro_core.attribution.verdicts import save_verdict
from whenpro_core.cli import app as cli_app
from whenpro_core.formats import load_trace
from whenpro_core.formats.native import write_trace
from whenpro_core.trace.model import Attribution, Step

HOSTILE = '<script>document.title="pwned"</script></details><img src=x onerror=alert(1)>'


@pytest.fixture
def shared_trace(tmp_path: Path) -> Path:
    """The team trace with hostile content, a long step, per-step usage and a saved verdict."""
    trace = team_trace()
    trace.steps[1].content += "\n\n" + HOSTILE
    trace.steps[2].meta = {"usage.input_tokens": 1200, "usage.output_tokens": 34, "duration_ms": 812.5}
    trace.steps.append(
        Step(
            index=7,
            coord="7",
            agent="coder",
            kind="assistant",
            content="\n".join(f"line {i} of a long log" for i in range(400)),
        )
    )
    path = write_trace(trace, tmp_path / "team-1.json")
    save_verdict(
        load_trace(path),
        Attribution(
            protocol="all-at-once",
            model="openai:gpt-4.1",
            agent="coder",
            step="3",
            mode="R.3",
            reason="Step 3 adds 8 dollars where the task says 8 percent.",
            confidence=0.9,
        ),
    )
    return path


def run_cli(*args: str) -> str:
    result = CliRunner().invoke(cli_app, list(args))
    assert result.exit_code == 0, result.output
    return result.output


def test_html_export_renders_in_headless_chromium(browser, shared_trace: Path, tmp_path: Path) -> None:  # noqa: F811
    out = tmp_path / "share.html"
    run_cli("export", str(shared_trace), "--html", str(out))
    page = browser.new_page()
    errors: list[str] = []
    requests: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.on("request", lambda r: requests.append(r.url))
    page.goto(out.as_uri())
    page.wait_for_load_state("load")
    assert errors == [] and requests == [out.as_uri()]  # nothing fetched but the page
    text = page.inner_text("body")
    assert "Compute the total cost of 3 widgets" in text  # the task
    assert page.locator("section.step").count() == 8
    verdict = page.inner_text(".verdict")
    assert "coder" in verdict and "8 dollars where the task says 8 percent" in verdict
    assert "the step says" in verdict  # its evidence: what the named step says
    assert page.locator("section.step.named").get_attribute("id") == "step-3"
    assert "1,200 in · 34 out tokens" in page.inner_text("#step-2")  # per-step usage
    # hostile content shows as text, runs nothing
    assert page.title() != "pwned" and HOSTILE.split("</details>")[0] in page.inner_text("#step-1")
    assert page.locator("script").count() == 0
    # the long step is folded; opening it shows the rest
    long_step = page.locator("#step-7 details")
    assert long_step.count() == 1 and not page.is_visible("#step-7 >> text=line 399 of a long log")
    long_step.locator("summary").click()
    assert page.is_visible("#step-7 >> text=line 399 of a long log")
    assert page.locator(".hl").count() >= 1  # code highlighted by Pygments
    # labels stay out unless asked
    assert "Ground truth" not in text and "is_injected" not in text
    labelled = tmp_path / "labels.html"
    run_cli("export", str(shared_trace), "--html", str(labelled), "--labels")
    page.goto(labelled.as_uri())
    assert "Used 8 as an absolute tax" in page.inner_text(".gt") and "is_injected" in page.inner_text("body")
    page.close()


def test_html_export_inlines_images_bounded(browser, tmp_path: Path) -> None:  # noqa: F811
    folder = tmp_path / "bar_chart"
    shutil.copytree(SAMPLES / "bar_chart", folder)
    out = tmp_path / "chart.html"
    run_cli("export", str(folder / "trace.json"), "--html", str(out))
    page = browser.new_page()
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.goto(out.as_uri())
    images = page.locator("img")
    assert images.count() >= 1 and errors == []
    assert all(
        src.startswith("data:image/jpeg;base64,")
        for src in (images.nth(i).get_attribute("src") or "" for i in range(images.count()))
    )
    width = page.evaluate("document.images[0].naturalWidth")
    assert 0 < width <= 800


def test_export_refuses_to_overwrite_without_force(shared_trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "x.html"
    out.write_text("keep me")
    result = CliRunner().invoke(cli_app, ["export", str(shared_trace), "--html", str(out)])
    assert result.exit_code != 0 and "file exists" in result.output and out.read_text() == "keep me"


def test_markdown_is_bounded_and_says_what_was_cut(shared_trace: Path) -> None:
    trace = load_trace(shared_trace)
    full = trace_markdown(trace, ExportOptions())
    assert "## Steps (8)" in full and "_Cut: 1 field(s) shortened" in full
    short = trace_markdown(trace, ExportOptions(), max_chars=2_500)
    assert len(short) <= 2_500 and "step(s) left out to stay under 2,500 chars" in short
    assert "Ground truth" not in full
    printed = run_cli("export", str(shared_trace), "--markdown", "-", "--labels")
    assert "Ground truth (labels)" in printed and "8 dollars where the task says 8 percent" in printed


def test_markdown_to_stdout_with_an_html_file_keeps_the_status_line_out_of_it(shared_trace: Path, tmp_path: Path):
    """``--html a.html --markdown - > md.md`` put "wrote a.html" at the top of md.md."""
    out = run_whenpro("export", str(shared_trace), "--html", str(tmp_path / "a.html"), "--markdown", "-")
    assert out.returncode == 0 and out.stdout.startswith("# "), out.stdout[:200]
    assert "wrote " not in out.stdout and f"wrote {tmp_path / 'a.html'}" in out.stderr


def test_html_to_stdout_is_printed_not_written_to_a_file_named_dash(shared_trace: Path, tmp_path: Path):
    out = run_whenpro("export", str(shared_trace), "--html", "-", cwd=tmp_path)
    assert out.returncode == 0 and out.stdout.lstrip().lower().startswith("<!doctype html"), out.stdout[:100]
    assert not (tmp_path / "-").exists() and "wrote" not in out.stderr
    both = run_whenpro("export", str(shared_trace), "--html", "-", "--markdown", "-", cwd=tmp_path)
    assert both.returncode == 2 and "would both print to stdout" in both.stderr


async def test_x_on_the_trace_screen_writes_the_page(
    shared_trace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.conftest import settle
    from whenpro_tui.app import WhenproApp

    monkeypatch.chdir(tmp_path)
    app = WhenproApp(str(shared_trace), cursor_blink=False)
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("x")
        await pilot.pause()
        assert app.screen.query_one("Input").value == "team-1.html"
        await pilot.press("enter")
        await settle(pilot)
        page = (tmp_path / "team-1.html").read_text()
        assert "8 dollars where the task says 8 percent" in page and "Ground truth" not in page
        assert any("Wrote team-1.html (labels left out)" in str(n.message) for n in app._notifications)
        await pilot.press("x", "enter")  # the file exists now: never replaced from the TUI
        await settle(pilot)
        assert any("exists" in str(n.message) for n in app._notifications)


@pytest.mark.parametrize("name", ["genai_current.json", "openinference.json"])
def test_per_step_usage_from_opentelemetry_traces(name: str) -> None:
    from whenpro_core.trace.usage import step_usage, total_usage
    from whenpro_core.views.traceview import trace_header

    trace = load_trace(Path(__file__).parent / "fixtures" / "otel" / name)
    used = [step_usage(s) for s in trace.steps]
    with_tokens = [u for u in used if u.input_tokens is not None]
    assert with_tokens, "the fixture records tokens on its model spans"
    total = total_usage(trace.steps)
    assert total.input_tokens == sum(u.input_tokens or 0 for u in used)
    assert total.latency_ms is not None  # span timing
    assert trace_header(trace).usage == total.text() and "tokens" in total.text()


async def test_trace_screen_shows_step_usage_and_the_total() -> None:
    from tests.conftest import screen_text, settle
    from whenpro_core.trace.usage import step_usage, total_usage
    from whenpro_tui.app import WhenproApp

    path = Path(__file__).parent / "fixtures" / "otel" / "genai_current.json"
    trace = load_trace(path)
    idx = next(i for i, s in enumerate(trace.steps) if step_usage(s).input_tokens is not None)
    app = WhenproApp(str(path), cursor_blink=False)
    async with app.run_test(size=(200, 40)) as pilot:
        await settle(pilot)
        if not hasattr(app.screen, "steps"):  # the file holds several traces: open the first
            await pilot.press("enter")
            await settle(pilot)
        assert app.screen.trace.id == trace.id
        assert total_usage(trace.steps).text() in screen_text(app).splitlines()[0]
        app.screen.steps.move_cursor(app.screen.steps.position_of(idx))
        await settle(pilot)
        title = str(app.screen.query_one("#d-title").content)
        assert step_usage(trace.steps[idx]).text() in title


async def test_x_on_a_trace_with_a_very_long_id_offers_a_short_name_and_never_crashes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An id of 5,000 characters: ``x`` offers the name ``convert`` and ``y`` use (cut to
    150 characters plus a 16-hex hash) and writes it; a name the file system refuses (too
    long) is a one-line notice, never a crash."""
    from tests.conftest import settle
    from whenpro_core.storage.fsutil import safe_name
    from whenpro_core.views.traceview import unlabelled_id
    from whenpro_tui.app import WhenproApp

    trace_file = tmp_path / "longid.json"
    write_trace(team_trace("x" * 5000), trace_file)
    monkeypatch.chdir(tmp_path)
    app = WhenproApp(str(trace_file), cursor_blink=False, save_verdicts=False)
    async with app.run_test(size=(100, 30), notifications=True) as pilot:
        await settle(pilot)
        await pilot.press("x")
        await pilot.pause()
        offered = app.screen.query_one("Input").value
        assert offered == f"{safe_name(unlabelled_id('x' * 5000))}.html" and len(offered) < 200
        await pilot.press("enter")
        await settle(pilot)
        assert (tmp_path / offered).is_file()
        await pilot.press("x")
        await pilot.pause()
        app.screen.query_one("Input").value = "y" * 300 + ".html"
        await pilot.press("enter")
        await settle(pilot)
        assert app.is_running
        refused = [n for n in app._notifications if n.severity == "error"]
        assert refused and "File name too long" in str(refused[-1].message), [n.message for n in app._notifications]
        assert "\n" not in str(refused[-1].message)


def test_export_checks_every_output_before_writing_any(shared_trace: Path, tmp_path: Path) -> None:
    """``--html new.html --markdown existing.md``: refused (exit 2) before new.html is
    written; the same file for both is refused too; nothing is written on exit 2."""
    (tmp_path / "existing.md").write_text("keep me")
    out = run_whenpro("export", str(shared_trace), "--html", "new.html", "--markdown", "existing.md", cwd=tmp_path)
    assert out.returncode == 2 and "existing.md" in out.stderr and "exists" in out.stderr, out.stderr
    assert not (tmp_path / "new.html").exists() and (tmp_path / "existing.md").read_text() == "keep me"
    missing = run_whenpro("export", str(shared_trace), "--html", "a.html", "--markdown", "nofolder/b.md", cwd=tmp_path)
    assert missing.returncode == 2 and not (tmp_path / "a.html").exists(), missing.stderr
    same = run_whenpro("export", str(shared_trace), "--html", "both.out", "--markdown", "./both.out", cwd=tmp_path)
    assert same.returncode == 2 and "same file" in same.stderr and not (tmp_path / "both.out").exists(), same.stderr
    forced = run_whenpro(
        "export", str(shared_trace), "--html", "both.out", "--markdown", "both.out", "--force", cwd=tmp_path
    )
    assert forced.returncode == 2 and not (tmp_path / "both.out").exists(), forced.stderr
    ok = run_whenpro("export", str(shared_trace), "--html", "new.html", "--markdown", "new.md", cwd=tmp_path)
    assert ok.returncode == 0 and (tmp_path / "new.html").is_file() and (tmp_path / "new.md").is_file(), ok.stderr
