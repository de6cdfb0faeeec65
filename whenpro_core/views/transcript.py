"""The transcript a judge sees (docs/architecture.md, 'Attribution protocols'; Who&When Pro ``render/``).

Steps render under ``Step <coord> | Agent: <name>`` headers with their content, tool
calls, observations and errors; entries that share a coordinate (an eva assistant turn
and its tool result) render under one header; framing entries without a coordinate (the
user's task, a system prompt) render before the transcript as context. Images become
image parts (re-encoded JPEG, capped size) and video steps up to 8 keyframes each.

Never rendered: ``Step.hidden`` (label-leaking fields), ``Trace.extras``, the ground
truth. Long contents keep their first and last parts with a marker saying how much was
cut, so a long trace fits the model's token budget without silently dropping a step.
Trace text is untrusted: control characters are removed and the transcript is fenced so
the judge treats it as data.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from whenpro_core.safety.textsafe import strip_controls
from whenpro_core.storage import jsonio
from whenpro_core.trace.model import MediaRef, Step, Trace

#: Rough characters per token used for budgeting (no tokenizer dependency).
CHARS_PER_TOKEN = 4
#: Default prompt budget in tokens when a model's context size is unknown.
DEFAULT_BUDGET_TOKENS = 100_000
#: A field is never cut below this many characters.
MIN_FIELD_CHARS = 400
#: Keyframes shown per video step.
MAX_FRAMES_PER_STEP = 8


@dataclass
class TextPart:
    """A piece of prompt text."""

    text: str


@dataclass
class ImagePart:
    """An image for a multimodal judge: base64 ``data`` with its ``mime`` type."""

    data: str
    mime: str = "image/jpeg"
    label: str = ""


Part = TextPart | ImagePart

#: Turns a MediaRef into image parts (one for an image, keyframes for a video; empty when
#: it cannot be loaded). :func:`whenpro_core.attribution.judge_images.load_judge_images`
#: is the default for multimodal judges.
ImageLoader = Callable[[MediaRef, Trace], "list[ImagePart]"]


@dataclass
class StepBlock:
    """One coordinate of the transcript: its header text, body fields (cut to budget
    later), images, and the indexes of the steps it covers."""

    coord: str
    agent: str
    indexes: list[int]
    fields: list[tuple[str, str]] = field(default_factory=list)
    images: list[ImagePart] = field(default_factory=list)

    def header(self) -> str:
        """``Step <coord> | Agent: <agent>``."""
        return f"Step {self.coord} | Agent: {self.agent}"


@dataclass
class Transcript:
    """A rendered trace: framing ``context`` blocks (no coordinate), coordinate
    ``blocks`` in order, task images, and ``warnings`` (truncation, missing images)."""

    context: list[tuple[str, str]]
    blocks: list[StepBlock]
    task_images: list[ImagePart] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def coords(self) -> list[str]:
        """The step coordinates in transcript order."""
        return [b.coord for b in self.blocks]

    def block(self, coord: str) -> StepBlock | None:
        """The block for ``coord``, or ``None``."""
        return next((b for b in self.blocks if b.coord == coord), None)


def clean(text: str) -> str:
    """Untrusted text made safe to show a judge: terminal escapes and control
    characters removed (newlines and tabs kept)."""
    return strip_controls(text or "")


def _json(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return jsonio.dumps(value).decode()
    except TypeError:
        return str(value)


def step_fields(step: Step) -> list[tuple[str, str]]:
    """The labelled text fields of one step: the agent's reasoning (``meta["reasoning"]``,
    thinking blocks kept by importers), content, tool calls, observation, error. Never
    includes ``hidden`` or ``raw``."""
    out: list[tuple[str, str]] = []
    reasoning = step.meta.get("reasoning")
    if isinstance(reasoning, str) and reasoning.strip():
        out.append(("reasoning", clean(reasoning)))
    if step.content:
        out.append(("", clean(step.content)))
    for call in step.tool_calls:
        out.append(("tool call", clean(f"{call.name}({_json(call.arguments)})")))
    if step.observation:
        out.append(("observation", clean(step.observation)))
    if step.error:
        out.append(("error", clean(step.error)))
    if not out:
        out.append(("", "(empty step)"))
    return out


def _frames(media: list[MediaRef]) -> list[MediaRef]:
    """Images and videos as they are; sampled frames thinned to at most 8 per step."""
    frames = [m for m in media if m.kind == "frame"]
    if len(frames) > MAX_FRAMES_PER_STEP:
        stride = len(frames) / MAX_FRAMES_PER_STEP
        frames = [frames[int(i * stride)] for i in range(MAX_FRAMES_PER_STEP)]
    return [m for m in media if m.kind != "frame"] + frames


def _load_images(
    media: list[MediaRef], trace: Trace, loader: ImageLoader | None, warnings: list[str]
) -> list[ImagePart]:
    if loader is None or not media:
        return []
    parts: list[ImagePart] = []
    for ref in _frames(media):
        loaded = loader(ref, trace)
        if not loaded:
            warnings.append(f"{ref.kind} not loaded: {ref.path or ref.label or 'inline data'}")
        parts.extend(loaded)
    return parts


def render_transcript(
    trace: Trace, *, image_loader: ImageLoader | None = None, budget_tokens: int = DEFAULT_BUDGET_TOKENS
) -> Transcript:
    """Render ``trace`` for a judge, cut to ``budget_tokens`` (≈ characters / 4).

    ``image_loader`` is ``None`` for a text-only judge (images then appear as
    ``[image: label]`` markers in the text).
    """
    warnings: list[str] = []
    context: list[tuple[str, str]] = []
    blocks: list[StepBlock] = []
    task_media = {(m.path, m.data) for m in trace.task.images}  # shown once, with the task
    for step in trace.steps:
        fields = step_fields(step)
        if image_loader is None:
            fields += [
                (
                    "",
                    f"[{m.kind}: {m.label or m.path or 'inline'}"
                    + (f" at {m.time_s:g}s" if m.time_s is not None else "")
                    + "]",
                )
                for m in step.media
            ]
        if step.coord is None:
            context.extend((label if label else f"{step.kind} ({step.agent})", text) for label, text in fields)
            continue
        if blocks and blocks[-1].coord == step.coord:
            block = blocks[-1]
        else:
            block = StepBlock(coord=step.coord, agent=_display_agent(trace, step), indexes=[])
            blocks.append(block)
        block.indexes.append(step.index)
        block.fields.extend(fields)
        fresh = [m for m in step.media if (m.path, m.data) not in task_media]
        block.images.extend(_load_images(fresh, trace, image_loader, warnings))
    transcript = Transcript(
        context=context,
        blocks=blocks,
        task_images=_load_images(trace.task.images, trace, image_loader, warnings),
        warnings=warnings,
    )
    fit_to_budget(transcript, budget_tokens * CHARS_PER_TOKEN)
    return transcript


def _display_agent(trace: Trace, step: Step) -> str:
    return "agent" if trace.is_single_agent else step.agent


def cut_middle(text: str, limit: int) -> str:
    """Keep the first and last parts of ``text`` within ``limit`` characters, with a
    marker saying how many characters were left out."""
    if len(text) <= limit:
        return text
    head = int(limit * 0.6)
    tail = max(limit - head, 0)
    omitted = len(text) - head - tail
    return f"{text[:head]}\n[... {omitted:,} characters omitted ...]\n{text[len(text) - tail :]}"


def fit_to_budget(transcript: Transcript, max_chars: int) -> None:
    """Cut the longest fields first (water-filling) until the transcript fits
    ``max_chars``. Every step keeps its header and a head and tail of each field; a
    warning records what was cut, or that even the minimum does not fit."""
    fields = [(b.fields, i) for b in transcript.blocks for i in range(len(b.fields))]
    sizes = [len(fl[i][1]) for fl, i in fields]
    overhead = sum(len(b.header()) + 4 for b in transcript.blocks) + sum(len(t) for _, t in transcript.context)
    if overhead + sum(sizes) <= max_chars or not sizes:
        return
    room = max(max_chars - overhead, 0)
    cap = water_level(sizes, room)
    cap = max(cap, MIN_FIELD_CHARS)
    cut = 0
    for (fl, i), size in zip(fields, sizes, strict=False):
        if size > cap:
            label, text = fl[i]
            fl[i] = (label, cut_middle(text, cap))
            cut += 1
    transcript.warnings.append(
        f"transcript cut to fit the token budget: {cut} long fields keep their first and last {cap:,} characters"
    )
    if overhead + sum(min(s, cap) for s in sizes) > max_chars:
        transcript.warnings.append("transcript still exceeds the budget at the minimum cut")


def water_level(sizes: list[int], room: int) -> int:
    """The largest cap c with sum(min(s, c)) <= room."""
    lo, hi = 0, max(sizes)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if sum(min(s, mid) for s in sizes) <= room:
            lo = mid
        else:
            hi = mid - 1
    return lo


def block_text(block: StepBlock) -> str:
    """A block as prompt text: the header, then each field (labelled ones in
    ``[label]`` markers)."""
    lines = [block.header()]
    for label, text in block.fields:
        lines.append(f"[{label}]\n{text}" if label else text)
    return "\n".join(lines)


def context_text(transcript: Transcript) -> str:
    """The framing entries as prompt text (``[user (human)] ...``)."""
    return "\n".join(f"[{label}]\n{text}" for label, text in transcript.context)
