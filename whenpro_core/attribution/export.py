"""Sharing a diagnosis: one trace, its verdicts and (when asked) its labels as a single
self-contained HTML page or as bounded Markdown (``whenpro export``, the TUI's ``x``).

The HTML page needs nothing else: styles inline, code highlighted with Pygments into
inline classes, images inlined as bounded JPEG ``data:`` URIs, and a Content-Security-Policy
that forbids any network access. Every piece of trace content is untrusted and escaped.
Long content is folded with ``<details>``. Labels (the ground truth, hidden step fields,
the failure mode in an id) appear only with ``labels=True``.

Markdown is for pasting into an issue or an LLM chat: at most ``max_chars`` characters,
each step's content capped, and a closing note of what was cut. Only whenpro's own markup
is Markdown: trace text goes in fenced blocks (a fence longer than any backtick run in
it), inline code spans (likewise) or is backslash-escaped (:func:`md_inline`), so a
renderer that passes raw HTML through makes no element, link or emphasis of it.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_by_name
from pygments.util import ClassNotFound

from whenpro_core.attribution.interactive import verdict_step_index
from whenpro_core.attribution.verdicts import distinct_verdicts, load_verdicts
from whenpro_core.errors import WhenproError
from whenpro_core.formats import load_trace
from whenpro_core.injection.verify import check_answer
from whenpro_core.media.images import jpeg_for_ref
from whenpro_core.safety.textsafe import clean
from whenpro_core.storage.fsutil import atomic_write_text, check_output_file
from whenpro_core.trace.model import Attribution, GroundTruth, MediaRef, Step, Trace
from whenpro_core.trace.taxonomy import Taxonomy, taxonomy_for
from whenpro_core.trace.usage import step_usage, total_usage
from whenpro_core.views.stepview import Block, content_blocks, media_label, pretty_arguments, step_reasoning
from whenpro_core.views.traceview import unlabelled_id
from whenpro_core.views.waterfall import Rollup, Waterfall, WaterfallRow, seconds_text, step_tools, waterfall

#: Tools offered as timeline filters (the most used first).
TIMELINE_TOOLS = 40
#: Content longer than this (characters) or taller than :data:`FOLD_LINES` is folded.
FOLD_CHARS = 1_500
FOLD_LINES = 25
#: Each step field is cut at this many characters in the HTML page.
HTML_FIELD_CAP = 200_000
#: Images: longest side in pixels and bytes per image, and the page's total image budget.
IMAGE_MAX_SIDE = 800
IMAGE_MAX_BYTES = 200_000
IMAGES_TOTAL_BYTES = 8_000_000
#: Markdown: the whole document and each step field.
MARKDOWN_MAX_CHARS = 60_000
MARKDOWN_FIELD_CAP = 3_000

_FORMATTER = HtmlFormatter(classes="hl", cssclass="hl", nowrap=False)
_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 0 auto; max-width: 1100px; padding: 1em 2em;
       color: #1d1f23; background: #fafafa; }
h1 { font-size: 1.3em; word-break: break-all; } h2 { font-size: 1.1em; margin-top: 1.6em; }
.meta { color: #666; } .ok { color: #1a7f37; font-weight: bold; } .bad { color: #cf222e; font-weight: bold; }
.verdict { border-left: 4px solid #8250df; background: #f3effc; padding: .4em .9em; margin: .6em 0; }
.gt { border-left: 4px solid #bf8700; background: #fff8c5; padding: .4em .9em; margin: .6em 0; }
.step { border: 1px solid #d0d7de; border-radius: 6px; margin: .7em 0; padding: .2em .9em .6em; background: #fff; }
.step.named { border-color: #8250df; box-shadow: 0 0 0 2px #d8c8f8; }
.step h3 { font-size: 1em; margin: .4em 0; } .usage { color: #666; font-weight: normal; font-size: .9em; }
pre { white-space: pre-wrap; word-break: break-word; background: #f6f8fa; padding: .5em; border-radius: 4px;
      margin: .3em 0; }
.hl pre { background: #f6f8fa; } .label { font-weight: bold; color: #0550ae; }
.error { color: #cf222e; } img { max-width: 100%; height: auto; border: 1px solid #d0d7de; }
summary { cursor: pointer; color: #0550ae; }
.wf { border-collapse: collapse; width: 100%; font-size: .9em; } .wf td { padding: 0 .4em; white-space: nowrap; }
.wf td.axis { width: 45%; position: relative; } .wf .bar { position: absolute; top: 3px; height: .9em;
      background: #8250df; min-width: 2px; } .wf tr.err .bar { background: #cf222e; } .wf td.num { text-align: right; }
.wf-box > input { position: absolute; opacity: 0; } .wf-box > label { display: inline-block; margin: .2em .3em .4em 0;
      padding: 0 .5em; border: 1px solid #d0d7de; border-radius: 1em; cursor: pointer; font-size: .9em; }
.wf-box > input:checked + label { background: #8250df; border-color: #8250df; color: #fff; }
.wf-box > input:focus-visible + label { outline: 2px solid #0550ae; } table.wf { margin-bottom: .8em; }
"""
_CSP = "default-src 'none'; img-src data:; style-src 'unsafe-inline'"


class ExportError(WhenproError):
    """The trace could not be exported (e.g. the output cannot be written)."""


@dataclass
class ExportOptions:
    """``labels``: include the ground truth and hidden fields; ``verdicts``: the verdicts
    to show (oldest first); ``taxonomy`` names failure modes; ``image_bytes`` reads an
    image reference as bounded JPEG bytes (``None``: images are not inlined)."""

    labels: bool = False
    verdicts: list[Attribution] = field(default_factory=list)
    taxonomy: Taxonomy | None = None
    image_bytes: Callable[[MediaRef], bytes] | None = None


def _e(text: object) -> str:
    return html.escape(clean(str(text)), quote=True)


def _cap(text: str, limit: int) -> tuple[str, int]:
    """``text`` cut to ``limit`` characters and how many were cut."""
    return (text, 0) if len(text) <= limit else (text[:limit], len(text) - limit)


def _block_html(block: Block) -> str:
    if block.kind in ("code", "json"):
        try:
            lexer = get_lexer_by_name(block.language or ("json" if block.kind == "json" else "python"))
        except ClassNotFound:
            lexer = get_lexer_by_name("text")
        marked_up: str = highlight(block.text, lexer, _FORMATTER)  # Pygments escapes its input
        return marked_up
    return f"<pre>{html.escape(block.text)}</pre>"


def _folded(body: str, text: str, what: str) -> str:
    """``body`` inside ``<details>`` when ``text`` is long, with a one-line summary."""
    if len(text) <= FOLD_CHARS and text.count("\n") < FOLD_LINES:
        return body
    first = " ".join(text[:200].split())[:120]
    return (
        f"<details><summary>{html.escape(what)}: {html.escape(first)}… ({len(text):,} chars)</summary>{body}</details>"
    )


def _text_html(text: str, what: str) -> str:
    capped, cut = _cap(clean(text), HTML_FIELD_CAP)
    body = "".join(_block_html(b) for b in content_blocks(capped))
    if cut:
        body += f"<p class=meta>… {cut:,} more characters not included.</p>"
    return _folded(body, capped, what)


class _Images:
    """Inline images within a total byte budget."""

    def __init__(self, read: Callable[[MediaRef], bytes] | None) -> None:
        self.read = read
        self.left = IMAGES_TOTAL_BYTES

    def html(self, ref: MediaRef) -> str:
        label = html.escape(media_label(ref))
        if self.read is None or ref.kind == "video":
            return f"<p class=meta>{label}</p>"
        try:
            data = self.read(ref)
        except WhenproError as exc:
            return f"<p class=meta>{label} (not shown: {_e(exc.one_line())})</p>"
        if len(data) > self.left:
            return f"<p class=meta>{label} (not inlined: the page's image budget is spent)</p>"
        self.left -= len(data)
        uri = "data:image/jpeg;base64," + base64.b64encode(data).decode()
        return f'<figure><img alt="{label}" src="{uri}"><figcaption class=meta>{label}</figcaption></figure>'


def _verdict_html(trace: Trace, verdict: Attribution, number: int, tax: Taxonomy) -> str:
    idx = verdict_step_index(trace, verdict)
    step_link = (
        f'<a href="#step-{idx}">step {_e(verdict.step)}</a>' if idx is not None else f"step {_e(verdict.step or '—')}"
    )
    mode = _e(tax.name(verdict.mode)) if verdict.mode else "—"
    who = f"{_e(verdict.protocol)}" + (
        f" · {_e(verdict.model)}" if verdict.model not in ("", "heuristic", verdict.protocol) else ""
    )
    conf = f" · confidence {verdict.confidence:.2f}" if verdict.confidence is not None else ""
    out = [
        f'<div class="verdict" id="verdict-{number}"><b>Verdict {number}</b> '
        f"<span class=meta>{who} · {'with' if verdict.with_gold else 'without'} gold{conf}</span><br>",
        f"<span class=label>agent</span> {_e(verdict.agent or '—')} &nbsp; "
        f"<span class=label>step</span> {step_link} &nbsp; <span class=label>mode</span> {mode}<br>",
        f"<span class=label>reason</span> {_e(verdict.reason or '—')}",
    ]
    if idx is not None:  # the evidence: what the named step says
        excerpt = " ".join((trace.steps[idx].content or trace.steps[idx].error or "")[:600].split())[:400]
        if excerpt:
            out.append(f"<br><span class=label>the step says</span> <q>{_e(excerpt)}</q>")
    out += [f"<br><span class=meta>⚠ {_e(w)}</span>" for w in verdict.warnings[:5]]
    out.append("</div>")
    return "".join(out)


def _step_html(step: Step, *, labels: bool, named: bool, images: _Images) -> str:
    usage = step_usage(step)
    head = f"Step {_e(step.coord or '#' + str(step.index))} · {_e(step.agent)} · <i>{_e(step.kind)}</i>"
    if not usage.empty:
        head += f' <span class="usage">{_e(usage.text())}</span>'
    parts = [f'<section class="step{" named" if named else ""}" id="step-{step.index}"><h3>{head}</h3>']
    if (reasoning := step_reasoning(step)) is not None:  # thinking, as the TUI shows it
        parts.append("<p class=label>Reasoning</p>" + _text_html(reasoning, "reasoning"))
    if step.content:
        parts.append(_text_html(step.content, "content"))
    for call in step.tool_calls:
        parts.append(f"<p><span class=label>→ {_e(call.name)}</span></p>")
        arguments = pretty_arguments(call.arguments)
        parts.append(_folded(_block_html(arguments), arguments.text, "arguments"))
    if step.observation:
        parts.append("<p class=label>Observation</p>" + _text_html(step.observation, "observation"))
    if step.error:
        parts.append(f'<pre class="error">{_e(_cap(step.error, HTML_FIELD_CAP)[0])}</pre>')
    parts += [images.html(ref) for ref in step.media]
    if labels and step.hidden:
        hidden = ", ".join(f"{_e(k)}: {_e(v)}" for k, v in step.hidden.items())
        parts.append(f"<p class=meta>hidden fields (labels): {hidden}</p>")
    parts.append("</section>")
    return "".join(parts)


def _answer_line(trace: Trace) -> str:
    mark = check_answer(trace.final_answer, trace.task.answer).success
    sign = "" if mark is None else (' <span class="ok">✓</span>' if mark else ' <span class="bad">✗</span>')
    return (
        f"<p><span class=label>Gold</span> {_e(trace.task.answer or '—')} &nbsp; "
        f"<span class=label>Final</span> {_e(trace.final_answer or '—')}{sign}</p>"
    )


def _html_head(trace: Trace, ident: str) -> list[str]:
    """The page's head and title lines: the id, outcome, framework, benchmark, modality,
    step count and total usage."""
    total = total_usage(trace.steps)
    meta = " · ".join(
        _e(x)
        for x in (trace.framework, trace.benchmark or "—", trace.modality.value, f"{len(trace.steps):,} steps")
        if x
    )
    return [
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{_e(ident)} · whenpro</title><style>{_CSS}{_FORMATTER.get_style_defs('.hl')}</style>",
        "</head><body>",
        f"<h1>{_e(ident)}</h1><p class=meta>{_e(trace.outcome.value)} · {meta}"
        + (f" · {_e(total.text())}" if not total.empty else "")
        + "</p>",
    ]


def _gt_html(gt: GroundTruth, tax: Taxonomy) -> str:
    """The ground-truth box: agent (or the acceptable agents), step, mode name and reason."""
    return (
        f'<div class="gt"><b>Ground truth</b> (labels) agent {_e(gt.agent or ", ".join(gt.agents) or "—")}'
        f" · step {_e(gt.step or '—')} · mode {_e(tax.name(gt.mode)) if gt.mode else '—'}"
        f"<br>{_e(gt.reason or '')}</div>"
    )


def _verdicts_html(trace: Trace, verdicts: list[Attribution], tax: Taxonomy) -> list[str]:
    """The Verdicts section: its heading, then one box per verdict (or a note that there is none)."""
    parts = [f"<h2>Verdicts ({len(verdicts)})</h2>"]
    if not verdicts:
        parts.append("<p class=meta>No verdict saved for this trace (whenpro attribute, or a in the TUI).</p>")
    return parts + [_verdict_html(trace, v, n, tax) for n, v in enumerate(verdicts, start=1)]


def trace_html(trace: Trace, options: ExportOptions | None = None) -> str:
    """The whole self-contained page for ``trace`` (see module docstring)."""
    opts = options or ExportOptions()
    tax = opts.taxonomy or taxonomy_for(trace.source.root)
    ident = trace.id if opts.labels else unlabelled_id(trace.id)
    named = {i for v in opts.verdicts if (i := verdict_step_index(trace, v)) is not None}
    images = _Images(opts.image_bytes)
    parts = [
        *_html_head(trace, ident),
        "<h2>Task</h2>",
        _text_html(trace.task.query or "—", "task"),
        *[images.html(ref) for ref in trace.task.images],
        _answer_line(trace),
    ]
    if opts.labels and trace.ground_truth is not None:
        parts.append(_gt_html(trace.ground_truth, tax))
    parts += _verdicts_html(trace, opts.verdicts, tax)
    parts += _waterfall_html(trace)
    parts.append(f"<h2>Steps ({len(trace.steps):,})</h2>")
    parts += [_step_html(s, labels=opts.labels, named=s.index in named, images=images) for s in trace.steps]
    parts.append("<p class=meta>Exported by whenpro.</p></body></html>")
    return "\n".join(parts)


def _waterfall_html(trace: Trace) -> list[str]:
    """The Timeline section: the run as a tree with time (:mod:`whenpro_core.views.waterfall`,
    as ``w`` shows it in the TUI): one row per step in tree order, indented by depth, a bar
    from its start for its duration, its duration, tokens and cost, linked to the step; the
    filters "all steps", "errors only" and one per tool (:func:`_timeline_filters`); then the
    totals per agent and per tool. Folded (``<details>``); nothing for a trace without steps."""
    if not trace.steps:
        return []
    tree = waterfall(trace)
    tools = [t.name for t in tree.tools[:TIMELINE_TOOLS]]
    rows = [_timeline_row(trace, r, tree.span_s, tools) for r in tree.rows]
    head = "<tr class=head><th>step</th><th>time →</th><th>dur</th><th>tokens</th><th>cost $</th></tr>"
    when = "no times recorded" if tree.span_s is None else f"run {seconds_text(tree.span_s)}"
    return [
        f"<h2>Timeline</h2><details id=timeline><summary>The run as a tree with time ({when})</summary>",
        "<div class=wf-box>",
        *_timeline_filters(tree, tools),
        f"<table class='wf wf-steps'>{head}{''.join(rows)}</table></div>",
        _rollup_html("agent", tree.agents),
        _rollup_html("tool", tree.tools),
        "</details>",
    ]


def _timeline_row(trace: Trace, row: WaterfallRow, span: float | None, tools: list[str]) -> str:
    """One step's row: classes ``row``, ``err`` (it holds an error) and ``t<i>`` for each
    offered tool it calls or answers (what the filters hide by); ``data-step`` and
    ``data-depth`` say which step and how deep."""
    step = trace.steps[row.index]
    bar = ""
    if span and row.start_s is not None:
        left, width = 100 * row.start_s / span, 100 * (row.duration_s or 0.0) / span
        bar = f'<div class=bar style="left:{left:.2f}%;width:{width:.2f}%"></div>'
    used = step_tools(trace, step)
    classes = " ".join(["row", *(["err"] if row.error else []), *(f"t{i}" for i, t in enumerate(tools) if t in used)])
    label = f"{_e(step.coord or '#' + str(step.index))} {_e(step.agent)} <i>{_e(step.kind)}</i>"
    return (
        f'<tr class="{classes}" data-step={row.index} data-depth={row.depth}>'
        f'<td style="padding-left:{0.4 + 1.2 * min(row.depth, 8):.1f}em"><a href="#step-{row.index}">{label}</a></td>'
        f"<td class=axis>{bar}</td><td class=num>{_e(seconds_text(row.duration_s))}</td>"
        f"<td class=num>{_e(_count(row.tokens))}</td><td class=num>{_e(_dollars(row.cost_usd))}</td></tr>"
    )


def _timeline_filters(tree: Waterfall, tools: list[str]) -> list[str]:
    """The timeline's filters without a script (the page's policy runs none): radio
    buttons before the table, and a rule per choice hiding the rows without its class
    ("errors only": ``err``; a tool: ``t<i>``, an index, so no tool name reaches the CSS).
    The same rows as the TUI's waterfall filters (:meth:`~whenpro_core.views.waterfall.Waterfall.filtered`)."""
    steps = {t.name: t.steps for t in tree.tools}
    errors = sum(1 for r in tree.rows if r.error)
    choices = [("wf-all", f"all steps ({len(tree.rows):,})"), ("wf-err", f"errors only ({errors:,})")]
    choices += [(f"wf-t{i}", f"tool: {name} ({steps[name]:,})") for i, name in enumerate(tools)]
    out = [
        f"<input type=radio name=wf id={ident}{' checked' if ident == 'wf-all' else ''}>"
        f"<label for={ident}>{_e(text)}</label>"
        for ident, text in choices
    ]
    rules = ["#wf-err:checked ~ .wf-steps tr.row:not(.err)"]
    rules += [f"#wf-t{i}:checked ~ .wf-steps tr.row:not(.t{i})" for i in range(len(tools))]
    return [*out, f"<style>{', '.join(rules)} {{ display: none; }}</style>"]


def _count(n: int | None) -> str:
    return "—" if n is None else f"{n:,}"


def _dollars(x: float | None) -> str:
    return "—" if x is None else f"{x:.4f}"


def _rollup_html(kind: str, rollups: list[Rollup]) -> str:
    """A table of the totals per ``kind`` (agent or tool): steps, time, tokens, cost, errors."""
    if not rollups:
        return ""
    rows = "".join(
        f"<tr><td>{_e(r.name)}</td><td class=num>{r.steps:,}</td><td class=num>{_e(seconds_text(r.seconds))}</td>"
        f"<td class=num>{_count(r.tokens)}</td><td class=num>{_dollars(r.cost_usd)}</td>"
        f"<td class=num>{r.errors:,}</td></tr>"
        for r in rollups
    )
    head = f"<tr><th>{kind}</th><th>steps</th><th>time</th><th>tokens</th><th>cost $</th><th>errors</th></tr>"
    return f"<table class='wf wf-{kind}s'>{head}{rows}</table>"


# --------------------------------------------------------------------------- Markdown


#: What could start Markdown or HTML inline (or, at a line start, a block): escaped.
_MD_ACTIVE = re.compile(r"([\\`*_\[\]<>&#|~])")
_LINE_BREAKS = re.compile(r"\s*\n\s*")


def md_inline(text: object) -> str:
    """Untrusted ``text`` as inert inline Markdown: cleaned (:func:`clean`), on one line,
    every character that could make markup, a link or HTML backslash-escaped.
    ``"<b>x</b>"`` -> ``"\\<b\\>x\\</b\\>"``."""
    return _MD_ACTIVE.sub(r"\\\1", _LINE_BREAKS.sub(" ", clean(str(text))))


def _backtick_fence(text: str, least: int) -> str:
    """Backticks longer than any run of them in ``text`` (at least ``least``)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    return "`" * max(least, longest + 1)


def md_code_span(text: str) -> str:
    """Untrusted ``text`` as one inline code span: cleaned, on one line, between fences
    longer than any backtick run in it (padded with a space when it starts or ends with a
    backtick or a space, which CommonMark strips); empty text is ``—``."""
    text = _LINE_BREAKS.sub(" ", clean(text))
    if not text:
        return "—"
    fence = _backtick_fence(text, 1)
    pad = " " if text[0] in "` " or text[-1] in "` " else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _md_field(text: str, cap: int, cuts: list[str], where: str) -> str:
    text = clean(text)
    if len(text) > cap:
        cuts.append(f"{where}: {len(text) - cap:,} of {len(text):,} chars")
        text = text[:cap] + " …"
    fence = _backtick_fence(text, 3)
    return f"{fence}\n{text}\n{fence}"


def _md_step(step: Step, labels: bool, cuts: list[str]) -> str:
    where = f"step {clean(step.coord or '#' + str(step.index))}"
    usage = step_usage(step)
    lines = [
        f"### Step {md_inline(step.coord or '#' + str(step.index))} · {md_inline(step.agent)} · {md_inline(step.kind)}"
        + (f" ({usage.text()})" if not usage.empty else "")
    ]
    if (reasoning := step_reasoning(step)) is not None:
        lines.append("Reasoning:\n" + _md_field(reasoning, MARKDOWN_FIELD_CAP, cuts, where + " reasoning"))
    if step.content:
        lines.append(_md_field(step.content, MARKDOWN_FIELD_CAP, cuts, where))
    for call in step.tool_calls:
        lines.append(f"→ tool call {md_code_span(call.name)}")
        lines.append(_md_field(pretty_arguments(call.arguments).text, MARKDOWN_FIELD_CAP, cuts, where + " arguments"))
    if step.observation:
        lines.append("Observation:\n" + _md_field(step.observation, MARKDOWN_FIELD_CAP, cuts, where + " observation"))
    if step.error:
        lines.append("Error:\n" + _md_field(step.error, MARKDOWN_FIELD_CAP, cuts, where + " error"))
    lines += [f"_{md_inline(media_label(m))}_" for m in step.media]
    if labels and step.hidden:
        hidden = ", ".join(f"{md_inline(k)}: {md_inline(v)}" for k, v in step.hidden.items())
        lines.append("hidden fields (labels): " + hidden)
    return "\n\n".join(lines)


def _md_gt(gt: GroundTruth, tax: Taxonomy) -> str:
    """The ground-truth line: agent, step, mode name and reason."""
    return (
        f"**Ground truth (labels):** agent {md_inline(gt.agent or ', '.join(gt.agents) or '—')} · "
        f"step {md_inline(gt.step or '—')} · mode {md_inline(tax.name(gt.mode)) if gt.mode else '—'} — "
        f"{md_inline(gt.reason or '')}"
    )


def _md_verdict(number: int, verdict: Attribution, tax: Taxonomy) -> str:
    """Verdict ``number`` as a numbered list item: agent, step, mode name, protocol and reason."""
    v = verdict
    return (
        f"{number}. **{md_inline(v.agent or '—')}**, step **{md_inline(v.step or '—')}**, "
        f"{md_inline(tax.name(v.mode)) if v.mode else '—'} ({md_inline(v.protocol)}): {md_inline(v.reason or '—')}"
    )


def _md_head(trace: Trace, opts: ExportOptions, tax: Taxonomy, cuts: list[str]) -> list[str]:
    """The Markdown before the steps: title line, task, answers, ground truth (with
    labels), verdicts and the Steps heading; a shortened task is noted in ``cuts``."""
    ident = md_inline(trace.id if opts.labels else unlabelled_id(trace.id))
    total = total_usage(trace.steps)
    head = [
        f"# {ident}",
        f"{trace.outcome.value} · {md_inline(trace.framework)} · {md_inline(trace.benchmark or '—')} · "
        f"{len(trace.steps):,} steps" + (f" · {total.text()}" if not total.empty else ""),
        "## Task",
        _md_field(trace.task.query or "—", MARKDOWN_FIELD_CAP, cuts, "task"),
        f"**Gold:** {md_inline(trace.task.answer or '—')} · **Final:** {md_inline(trace.final_answer or '—')}",
    ]
    if opts.labels and trace.ground_truth is not None:
        head.append(_md_gt(trace.ground_truth, tax))
    head.append(f"## Verdicts ({len(opts.verdicts)})")
    head += [_md_verdict(n, v, tax) for n, v in enumerate(opts.verdicts, start=1)]
    head.append(f"## Steps ({len(trace.steps):,})")
    return head


def _md_add_steps(out: str, steps: list[Step], labels: bool, cuts: list[str], max_chars: int) -> tuple[str, int]:
    """``(out with the steps that fit, steps left out)``: steps are added while the text
    stays 500 chars (room for the closing note) under ``max_chars``."""
    for i, step in enumerate(steps):
        block = "\n\n" + _md_step(step, labels, cuts)
        if len(out) + len(block) > max_chars - 500:  # room for the closing note
            return out, len(steps) - i
        out += block
    return out, 0


def _md_cut_note(cuts: list[str], left_out: int, max_chars: int) -> str:
    """The closing note on shortened fields and left-out steps (``""`` when nothing was cut)."""
    note = []
    if cuts:
        note.append(
            f"{len(cuts)} field(s) shortened to {MARKDOWN_FIELD_CAP:,} chars ("
            + "; ".join(md_inline(cut) for cut in cuts[:5])
            + (" …" if len(cuts) > 5 else "")
            + ")"
        )
    if left_out:
        note.append(f"the last {left_out:,} step(s) left out to stay under {max_chars:,} chars")
    return "\n\n---\n_Cut: " + "; ".join(note) + ". The full trace is in the source file._" if note else ""


def trace_markdown(trace: Trace, options: ExportOptions | None = None, max_chars: int = MARKDOWN_MAX_CHARS) -> str:
    """``trace`` as Markdown of at most about ``max_chars`` characters, ending with a note
    of what was cut (fields shortened, steps left out)."""
    opts = options or ExportOptions()
    tax = opts.taxonomy or taxonomy_for(trace.source.root)
    cuts: list[str] = []
    out, left_out = _md_add_steps(
        "\n\n".join(_md_head(trace, opts, tax, cuts)), trace.steps, opts.labels, cuts, max_chars
    )
    return out + _md_cut_note(cuts, left_out, max_chars) + "\n"


# --------------------------------------------------------------------------- files


def options_for(trace: Trace, *, labels: bool) -> ExportOptions:
    """Export options with the trace's saved verdicts (each once:
    :func:`~whenpro_core.attribution.verdicts.distinct_verdicts`) and its images read
    from its own data or its confined media folder (bounded JPEG)."""
    try:
        verdicts = distinct_verdicts(load_verdicts(trace))
    except OSError:
        verdicts = []

    def read(ref: MediaRef) -> bytes:
        return jpeg_for_ref(
            ref, trace.source.path, trace.source.root, max_side=IMAGE_MAX_SIDE, max_bytes=IMAGE_MAX_BYTES
        )

    return ExportOptions(labels=labels, verdicts=verdicts, image_bytes=read)


def check_export_target(out: str | Path, *, force: bool) -> Path:
    """``out`` as a Path when an export may be written there: in an existing folder, not a
    folder, and new unless ``force``. Raises ExportError / WhenproError naming the path."""
    path = Path(out)
    check_output_file(path)
    if path.exists() and not force:
        raise ExportError("file exists (use --force to replace it)", path=path, expected="a new file")
    return path


def _check_outputs(html_out: str | None, markdown_out: str | None, *, force: bool) -> None:
    """Every output checked before anything is written (``-`` is stdout): both to stdout,
    or both to the same file, are refused, as is any target :func:`check_export_target` refuses."""
    if not html_out and not markdown_out:
        raise ExportError("nothing to write", expected="--html OUT.html and/or --markdown OUT.md")
    if html_out == markdown_out == "-":
        raise ExportError("--html - and --markdown - would both print to stdout", expected="a file for one of them")
    files = [out for out in (html_out, markdown_out) if out and out != "-"]
    for out in files:
        check_export_target(out, force=force)
    if len(files) == 2 and Path(files[0]).resolve() == Path(files[1]).resolve():
        raise ExportError("--html and --markdown name the same file", path=files[0], expected="two different files")


def write_export(
    trace: Trace,
    out: str | Path,
    *,
    markdown: bool = False,
    labels: bool = False,
    force: bool = False,
    max_chars: int = MARKDOWN_MAX_CHARS,
) -> Path:
    """Write ``trace`` as HTML (or Markdown) to ``out``, atomically; returns the path.

    Raises:
        ExportError: ``out`` exists and ``force`` is False, or it cannot be written.
        WhenproError: ``out`` is a folder or its folder does not exist
            (:func:`~whenpro_core.storage.fsutil.check_output_file`).
    """
    path = check_export_target(out, force=force)
    opts = options_for(trace, labels=labels)
    text = trace_markdown(trace, opts, max_chars) if markdown else trace_html(trace, opts)
    try:
        return atomic_write_text(path, text)
    except OSError as exc:
        raise ExportError(f"cannot write ({exc.strerror or exc})", path=path) from None


def export_command(
    src: str,
    html_out: str | None,
    markdown_out: str | None,
    *,
    labels: bool,
    force: bool,
    echo: Callable[[str], None],
    note: Callable[[str], None],
) -> None:
    """``whenpro export``: load ``src`` and write the HTML and/or Markdown files (``-``
    as either output prints it with ``echo``, one of them at most; ``note`` says what was
    written, so that status lines never mix into a page sent to stdout). Every output is
    checked before anything is written: on an error nothing is written."""
    _check_outputs(html_out, markdown_out, force=force)
    trace = load_trace(src)
    for out, markdown in ((html_out, False), (markdown_out, True)):
        if out == "-":
            opts = options_for(trace, labels=labels)
            echo(trace_markdown(trace, opts) if markdown else trace_html(trace, opts))
        elif out:
            note(f"wrote {write_export(trace, out, markdown=markdown, labels=labels, force=force)}")
