"""``--preset whowhen-pro``: the official Who&When Pro all-at-once request, rebuilt from
its published rules (``whowhen_eval``: ``prompts.py``, ``render/<framework>.py``,
``run.py``); the instructions are whenpro's own words, every rule and format matches.

The request is **one user message, no system message**, sent with temperature 0 and at
most 2,048 output tokens, answered in **four free-text lines** (no forced schema). Its
content, in order:

1. a text part: ``# Task`` with the instructions, ``## Error Mode Taxonomy`` with one
   bullet per mode of the dataset's ``taxonomy.yaml`` (required at the dataset root) (``- CODE: **Title Cased Name** -
   full description on one line``), ``## User Question`` with the task's query;
2. the task images (JPEG, longest side 1,024 px, quality 80);
3. ``## Transcript`` and the framework's transcript: one block per step, blocks joined
   by one newline, each block's images right after its text;
4. ``## Step Coordinate Format`` with the framework's hint (left out when it has none),
   then ``## Response Format`` with the four labelled lines.

Neighbouring text parts are merged; where the merge would leave three or more newlines
at the seam they become two. No gold answer is shown.

Transcript rules by framework (only frameworks listed in :data:`RENDERERS` are
supported; others raise ConfigError rather than send a request that is not the official
one). Every renderer takes its step coordinates from the trace's layout
(:func:`whenpro_core.trace.coords.layout`, the rules the importer numbers steps by), never
counting for itself; on the release's data those are the official renderers' numbers.

* ``smolagents``: coordinates count the non-framing entries (``user``, ``system`` and
  ``final_answer`` are framing) from 0 when the first is a ``planning`` entry, else from
  1. A block is ``Step N | Agent: agent`` (``(planning)`` appended for plans) then its
  body: ``[plan]…[/plan]`` (``(empty plan)``), or for an action ``[output]`` +
  ``reasoning`` (one trailing ``</code>`` dropped when no ``<code>`` opens it) +
  ``[/output]`` and ``[observation]`` + the observation + ``[/observation]``, where each
  ``<PIL.Image.Image … size=WxH at 0x…>`` becomes ``[observation_image #K size=WxH]`` and
  images without such a mention are announced first as ``[observation_image #K
  source="…"]``; ``(empty step)`` when both are empty. Observation images that repeat a
  task image are dropped. Images are inline base64 ``data`` in the release; a ``path``
  (the per-file showcase layout) is read from the dataset folder, confined to it.
  Hint: "Step coords are sequential integers across the trajectory. ".
* ``macnet``, ``magentic-one``, ``eva``, ``dvd``, ``debate``, ``dylan``, ``pixelcraft``,
  ``mathchat``, ``metagpt``, ``alfagent`` and the GUI agents (``coact``, ``openai_cua``,
  ``agentoccam``, ``gemini``): see the ``render_*`` functions. Speakers are the names the
  trace records (mathchat, pixelcraft, GUI steps); task images and pixelcraft's viewed
  images are passed through as released (never re-encoded); GUI screenshots are capped
  in width; video frames at 512 px. Lists the showcase files store as Python
  text (eva's ``tool_calls``, ``frames``) are read as lists.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias, TypeVar

import orjson
from pydantic import BaseModel

from whenpro_core.attribution.harness_parse import PARSER_WHOWHEN_PRO, read_whowhen_pro
from whenpro_core.attribution.judge import CallSettings, Judge, Progress, ProgressCallback, Tally
from whenpro_core.attribution.official_harness import TASK_ANCHOR, WHENPRO_WORDING, harness_worded, load_harness
from whenpro_core.attribution.prompts import Message
from whenpro_core.attribution.protocols import PRESET_PROTOCOLS
from whenpro_core.errors import ConfigError, MediaError
from whenpro_core.formats import whowhen_pro, whowhen_pro_jsonl
from whenpro_core.media.paths import decode_inline, media_bases, read_file_capped, resolve_path
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.coords import Layout, Slot, layout, listish, normalize_coord
from whenpro_core.trace.frameworks import canonical_framework
from whenpro_core.trace.model import Attribution, Trace
from whenpro_core.trace.taxonomy import Taxonomy, taxonomy_for
from whenpro_core.views.transcript import ImagePart, Part, TextPart

#: Request settings of the preset (``whowhen_eval/run.py`` defaults).
TEMPERATURE = 0.0
MAX_TOKENS = 2048
#: Image re-encoding of the official renderers: longest side and JPEG quality.
IMAGE_MAX_SIDE = 1024
IMAGE_QUALITY = 80

_LOWER_WORDS = {"or", "and", "of", "in", "to", "for", "from", "by", "vs", "with", "the", "on", "at"}

INTRO = (
    "# Task\n\n"
    "You diagnose failures of agentic systems.\n\n"
    "Below is the transcript of an agentic system that tried to answer a user question and "
    "failed. Somewhere in it lies the decisive error: the first step that most directly sends "
    "the system toward its wrong final answer.\n\n"
    "Name the agent that made that decisive error, the exact step coordinate where it happened, "
    "and the error mode from the taxonomy below that fits it best, then explain briefly.\n\n"
)

RESPONSE_FORMAT = (
    "Answer in exactly this format:\n"
    "Agent Name: (the agent whose turn first introduces the error)\n"
    "Step Number: (the step coordinate, written as in the transcript above)\n"
    "Error Mode: (one of the listed error modes)\n"
    "Reason: (one or two sentences on what went wrong)"
)


@dataclass
class Block:
    """One rendered transcript block: its coordinate (``None`` for framing text), text,
    the images shown right after the text, and ``body`` text after the images (eva puts
    the step header before its frames and the step's content after them)."""

    coord: str | None
    text: str
    images: list[ImagePart] = field(default_factory=list)
    body: str = ""


@dataclass
class Rendered:
    """A framework's transcript under the official rules: task images, blocks, and the
    step-coordinate hint (``""``: no hint section)."""

    task_images: list[ImagePart]
    blocks: list[Block]
    hint: str


# ---------------------------------------------------------------- taxonomy and text


def title_case(name: str) -> str:
    """A mode name in the official title case: each word capitalised (the rest lower
    case), short joining words lower case unless first; ``/`` and ``-`` split words."""
    out: list[str] = []
    first = True
    for chunk in re.split(r"(\s+)", name):
        if not chunk or chunk.isspace():
            out.append(chunk)
            continue
        pieces = re.split(r"([/\-])", chunk)
        words = []
        for i, piece in enumerate(pieces):
            if piece in ("/", "-") or not piece:
                words.append(piece)
            elif not (first and i == 0) and piece.lower() in _LOWER_WORDS:
                words.append(piece.lower())
            else:
                words.append(piece[:1].upper() + piece[1:].lower())
        out.append("".join(words))
        first = False
    return "".join(out)


def taxonomy_block(taxonomy: Taxonomy) -> str:
    """One bullet per mode in file order: ``- CODE: **Name** - description``."""
    return "\n".join(
        f"- {m.code}: **{title_case(m.name.strip())}** - {' '.join((m.description or m.meaning).split())}"
        for m in taxonomy
    )


def coalesce(parts: list[Part]) -> list[Part]:
    """Merge neighbouring text parts; three or more newlines at a seam become two."""
    out: list[Part] = []
    for part in parts:
        prev = out[-1] if out else None
        if isinstance(part, TextPart) and isinstance(prev, TextPart):
            a, b = prev.text, part.text
            seam = (len(a) - len(a.rstrip("\n"))) + (len(b) - len(b.lstrip("\n")))
            out[-1] = TextPart(a.rstrip("\n") + "\n\n" + b.lstrip("\n") if seam >= 3 else a + b)
        else:
            out.append(part)
    return out


# ---------------------------------------------------------------- images


@dataclass(frozen=True)
class Reencode:
    """How a renderer re-encodes its images: longest side (or, with ``width_only``, the
    width alone: GUI screenshots keep tall pages tall) in pixels, and JPEG quality."""

    max_side: int = IMAGE_MAX_SIDE
    quality: int = IMAGE_QUALITY
    width_only: bool = False


#: Video frames (eva, dvd): longest side 512, quality 75.
FRAMES = Reencode(512, 75)
#: GUI screenshots: width at most 1,024 (height scaled to match), quality 80.
SCREENSHOTS = Reencode(1024, 80, width_only=True)

_T = TypeVar("_T")

#: Reads one release image entry (``{"data": base64}`` or ``{"path": ...}``) into the
#: part sent: re-encoded as given, or passed through unchanged for ``None``; ``None``
#: when it cannot be read (:class:`ImageFiles`).
ImageReader: TypeAlias = "ImageFiles"


def jpeg_part(raw: bytes, how: Reencode | None = None) -> ImagePart:
    """Image bytes re-encoded as the official renderers do: longest side at most
    ``how.max_side``, RGB or grey, JPEG at ``how.quality`` (default 1,024 px, 80)."""
    from PIL import Image  # lazy: only image traces need Pillow

    how = how or Reencode()
    img: Image.Image = Image.open(io.BytesIO(raw))
    if not how.width_only:
        img.thumbnail((how.max_side, how.max_side))
    elif img.width > how.max_side:
        img = img.resize((how.max_side, max(1, round(img.height * how.max_side / img.width))))
    if img.mode not in ("RGB", "L"):
        img = img.convert("RGB")
    buf = io.BytesIO()
    img.save(buf, "JPEG", quality=how.quality, optimize=True)
    return ImagePart(base64.b64encode(buf.getvalue()).decode("ascii"), "image/jpeg")


def _image_entries(entries: Any) -> list[JSONObject]:
    return [
        e
        for e in (entries if isinstance(entries, list) else [])
        if isinstance(e, dict) and (e.get("data") or e.get("path"))
    ]


def _jpegs(entries: list[JSONObject], read: ImageReader, how: Reencode | None = Reencode()) -> list[ImagePart]:
    return [part for part in (read(e, how) for e in entries) if part is not None]


def _placed(doc: JSONObject, lay: Layout) -> list[tuple[Slot, JSONObject]]:
    """Every slot of the trace's layout (:func:`whenpro_core.trace.coords.layout`, the one
    home of step coordinates) with the trajectory entry, or round turn, it was laid out
    from. The renderers number their blocks from these slots and never count themselves."""
    entries = doc.get("trajectory") or []
    out = []
    for slot in lay.slots:
        entry = entries[slot.entry]
        out.append((slot, entry["turns"][slot.turn] if slot.turn is not None else entry))
    return out


def _steps(doc: JSONObject, lay: Layout) -> list[tuple[Slot, JSONObject, str]]:
    """(slot, entry or turn, coordinate) of every slot that has a coordinate, in order."""
    return [(slot, e, slot.coord) for slot, e in _placed(doc, lay) if slot.coord is not None]


# ---------------------------------------------------------------- smolagents

_PIL_REPR = re.compile(r"<PIL\.Image\.Image\s+image\s+mode=(\w+)\s+size=(\d+)x(\d+)\s+at\s+0x[0-9a-fA-F]+>")
SMOLAGENTS_HINT = "Step coords are sequential integers across the trajectory. "


def _drop_unpaired_close(text: str) -> str:
    if not text or "<code>" in text:
        return text
    stripped = text.rstrip()
    return stripped[: -len("</code>")].rstrip() if stripped.endswith("</code>") else text


def _mark_images(observation: str, n: int) -> tuple[str, int]:
    if n <= 0 or not observation:
        return observation, 0
    seen = 0

    def sub(m: re.Match[str]) -> str:
        nonlocal seen
        seen += 1
        return m.group(0) if seen > n else f"[observation_image #{seen} size={m.group(2)}x{m.group(3)}]"

    return _PIL_REPR.sub(sub, observation), min(seen, n)


def _smol_action(entry: JSONObject, task_blobs: set[str], read: ImageReader) -> tuple[str, list[ImagePart]]:
    reasoning = _drop_unpaired_close((entry.get("reasoning") or "").strip())
    observation = (entry.get("observation") or "").strip()
    images = [e for e in _image_entries(entry.get("observation_images")) if read.identity(e) not in task_blobs]
    marked, matched = _mark_images(observation, len(images))
    extra = [
        f'[observation_image #{k + 1} source="{images[k].get("source") or "<inline>"}"]'
        for k in range(matched, len(images))
    ]
    body = []
    if reasoning:
        body.append(f"[output]\n{reasoning}\n[/output]")
    if extra or marked:
        body.append("[observation]\n" + "\n".join(extra + ([marked] if marked else [])) + "\n[/observation]")
    return "\n".join(body) if body else "(empty step)", _jpegs(images, read)


def render_smolagents(doc: JSONObject, lay: Layout, read: ImageReader) -> Rendered:
    """The smolagents transcript under the official rules (module doc)."""
    task_images = _image_entries((doc.get("task") or {}).get("images"))
    task_blobs = {read.identity(e) for e in task_images}
    blocks: list[Block] = []
    for _, entry, coord in _steps(doc, lay):
        kind, tag = entry.get("kind"), ""
        images: list[ImagePart] = []
        if kind == "planning":
            plan = (entry.get("plan") or "").strip()
            body, tag = (f"[plan]\n{plan}\n[/plan]" if plan else "(empty plan)"), " (planning)"
        elif kind == "action":
            body, images = _smol_action(entry, task_blobs, read)
        else:
            body = f"(unknown kind={kind!r})"
        blocks.append(Block(coord, f"Step {coord} | Agent: agent{tag}\n{body.rstrip()}", images))
    return Rendered(_jpegs(task_images, read), blocks, SMOLAGENTS_HINT)


# ---------------------------------------------------------------- macnet and magentic-one

MAGENTIC_HINT = (
    "Magentic-One is an orchestrator + specialist framework: a central orchestrator routes work "
    "each round to a specialist agent. Step coordinate is 'step R.P' where R is the round and P is "
    "the within-round position: P=0 is the orchestrator's turn, P=1 is the specialist's response. "
)


def render_macnet(doc: JSONObject, lay: Layout, read: ImageReader) -> Rendered:
    """MacNet: one block per turn with a ``role``, ``Step R.P | Agent: <node id>`` where
    R.P comes from the role (:data:`~whenpro_core.trace.coords.MACNET_ROLES`; an unknown
    role takes the next position of layer 1), body ``[output]…[/output]`` or
    ``(empty turn)``; no hint; task images passed through."""
    blocks: list[Block] = []
    for _, entry, coord in _steps(doc, lay):
        output = (entry.get("output") or "").strip()
        body = f"[output]\n{output}\n[/output]" if output else "(empty turn)"
        agent = entry.get("agent_id") or "unknown"
        blocks.append(Block(coord, f"Step {coord} | Agent: {agent}\n{body}"))
    return Rendered(_jpegs(_image_entries((doc.get("task") or {}).get("images")), read, None), blocks, "")


def _tool_actions(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, indent=2)
    except (TypeError, ValueError):
        return repr(value)


def render_magentic(doc: JSONObject, lay: Layout, read: ImageReader) -> Rendered:
    """Magentic-One: one block per ``agent`` entry with a round and position,
    ``Step R.P | Agent: <agent>``, body ``[output]`` and ``[tool_actions]`` (the actions
    as indented JSON, whatever their shape) or ``(empty turn)``; the ledger is not shown."""
    blocks: list[Block] = []
    for _, entry, coord in _steps(doc, lay):
        if entry.get("kind") != "agent":
            continue
        output = (entry.get("output") or "").strip()
        body = [f"[output]\n{output}\n[/output]"] if output else []
        if entry.get("tool_actions"):
            body.append(f"[tool_actions]\n{_tool_actions(entry['tool_actions'])}\n[/tool_actions]")
        text = "\n".join(body) if body else "(empty turn)"
        blocks.append(Block(coord, f"Step {coord} | Agent: {entry.get('agent') or 'unknown'}\n{text}"))
    return Rendered(_jpegs(_image_entries((doc.get("task") or {}).get("images")), read, None), blocks, MAGENTIC_HINT)


# ---------------------------------------------------------------- eva (video)

_TOOL_REMINDER = re.compile(
    r"\n*If more information is needed, call the frame selection tool again\.?\s*", re.IGNORECASE
)
_ASKED_AGAIN = re.compile(r"\n*Question:\s.*\Z", re.DOTALL | re.IGNORECASE)


def _clock(t: Any) -> str:
    try:
        secs = float(t)
    except (TypeError, ValueError):
        return "??:??" if t is None else str(t)
    h, m, s = int(secs // 3600), int(secs % 3600 // 60), int(secs % 60)
    return f"{h:02d}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"


def _call_line(call: Any, *, hidden: frozenset[str] = frozenset(), names: dict[str, str] | None = None) -> str:
    """One tool call as ``name(k=v, …)`` (arguments given as JSON text are read); the
    ``hidden`` arguments are left out and ``names`` renames tools."""
    if not isinstance(call, dict):
        return str(call)
    args = _arguments(call)
    shown = ", ".join(f"{k}={v!r}" for k, v in args.items() if k not in hidden) if isinstance(args, dict) else str(args)
    name = call.get("name", "?")
    return f"{(names or {}).get(name, name)}({shown})"


def _arguments(call: JSONObject) -> Any:
    args = call.get("arguments", "")
    if isinstance(args, str):
        with contextlib.suppress(json.JSONDecodeError):
            return json.loads(args)
    return args


def _eva_tool(turn: JSONObject, read: ImageReader) -> tuple[str, list[ImagePart]]:
    images, missing = [], []
    for frame in listish(turn.get("frames")):
        if not isinstance(frame, dict) or not frame.get("path"):
            continue
        part = read({"path": frame["path"]}, FRAMES)
        if part is None:
            missing.append(f"[frame {frame.get('index', '?')} at {_clock(frame.get('time_s'))} missing]")
        else:
            images.append(part)
    content = _ASKED_AGAIN.sub("", _TOOL_REMINDER.sub("\n", (turn.get("content") or "").strip())).rstrip()
    if images and "<image>" in content:
        count = iter(range(10**9))
        content = re.sub(
            "<image>", lambda _m: f"[frame {i}]" if (i := next(count)) < len(images) else "<image>", content
        )
    inner = "\n".join(([content] if content else []) + missing) or "(empty)"
    return f"[tool_output tool={turn.get('tool_name') or '?'}]\n{inner}\n[/tool_output]", images


def render_eva(doc: JSONObject, lay: Layout, read: ImageReader) -> Rendered:
    """eva: the system prompt (first) and the user question (second) are framing; each
    assistant turn is ``Step N | Agent: agent`` (N from 0) with its frames after the
    header, then ``[output]``, one ``[tool_call]`` per call and the following tool turns
    (one per call) folded in as ``[tool_output tool=NAME]`` (the repeated question and the
    tool reminder dropped, ``<image>`` read as ``[frame K]``, unreadable frames as
    ``[frame K at MM:SS missing]``); frames at most 512 px, JPEG quality 75; no hint. The
    layout gives a turn and the tool turns folded into it one coordinate."""
    grouped: dict[str, list[JSONObject]] = {}
    for _, turn, coord in _steps(doc, lay):
        grouped.setdefault(coord, []).append(turn)
    return Rendered([], [_eva_block(coord, turns, read) for coord, turns in grouped.items()], "")


def _eva_block(coord: str, turns: list[JSONObject], read: ImageReader) -> Block:
    """One eva step: ``turns`` is the assistant turn and the tool turns answering it (or
    one turn of another kind, shown as unknown)."""
    turn, kind = turns[0], turns[0].get("kind")
    if kind != "assistant":
        return Block(coord, f"Step {coord} | {kind}", [], f"[unknown kind={kind!r}]\n{turn.get('content') or ''}")
    body: list[str] = []
    images: list[ImagePart] = []
    calls = listish(turn.get("tool_calls"))
    if (turn.get("content") or "").strip():
        body.append(f"[output]\n{turn['content'].strip()}\n[/output]")
    body += [f"[tool_call]\n{_call_line(c)}\n[/tool_call]" for c in calls]
    for tool in turns[1:]:
        text, frames = _eva_tool(tool, read)
        body.append(text)
        images += frames
    return Block(coord, f"Step {coord} | Agent: agent", images, "\n".join(body) if body else "(empty assistant turn)")


# ---------------------------------------------------------------- turn-list frameworks
# debate, dylan, pixelcraft (rounds of turns), mathchat, metagpt (flat turns): one block
# per turn, ``Step C | Agent: <agent_id>`` then ``[output]…[/output]`` or ``(empty turn)``;
# task images passed through as released.

DEBATE_HINT = (
    "step R.P where R is the round and P is the turn's position within that round. "
    "The agent cannot see the other agents' turns in the same round."
)
DYLAN_HINT = (
    "step R.P where R is the round and P is the agent's position within that round (0-indexed, as "
    "recorded by DyLAN — values may be non-contiguous when the framework skips agents in later "
    "rounds). The agent cannot see the other agents' turns in the same round."
)
METAGPT_HINT = "step S where S is the SOP stage (0-indexed)"
GUI_HINT = "Step coords are sequential integers across the trajectory, 1-indexed."
#: GUI screenshots attached: the first, every 10th and the last of the steps that have one.
SCREENSHOT_INTERVAL = 10
#: dvd: at most this many frames per frame-inspection step, evenly sampled.
DVD_FRAME_CAP = 8
DVD_INSPECTOR = "frame_inspect_agent"


def _output(text: Any) -> str:
    output = text.strip() if isinstance(text, str) else ""
    return f"[output]\n{output}\n[/output]" if output else "(empty turn)"


def _speaker(entry: JSONObject, key: str = "agent_id", default: str = "unknown") -> str:
    return str(entry.get(key) or default)


def _passthrough_task_images(doc: JSONObject, read: ImageReader) -> list[ImagePart]:
    return _jpegs(_image_entries((doc.get("task") or {}).get("images")), read, None)


def render_debate(doc: JSONObject, lay: Layout, read: ImageReader) -> Rendered:
    """Debate: ``Step R.P`` with P the turn's index in its round."""
    blocks = [
        Block(coord, f"Step {coord} | Agent: {_speaker(t)}\n{_output(t.get('output'))}")
        for _, t, coord in _steps(doc, lay)
    ]
    return Rendered(_passthrough_task_images(doc, read), blocks, DEBATE_HINT)


def render_dylan(doc: JSONObject, lay: Layout, read: ImageReader) -> Rendered:
    """DyLAN: ``Step R.P`` with P the turn's recorded ``position`` (gaps kept); the role
    is not shown."""
    blocks = [
        Block(coord, f"Step {coord} | Agent: {_speaker(t)}\n{_output(t.get('output'))}")
        for _, t, coord in _steps(doc, lay)
    ]
    return Rendered(_passthrough_task_images(doc, read), blocks, DYLAN_HINT)


def render_pixelcraft(doc: JSONObject, lay: Layout, read: ImageReader) -> Rendered:
    """PixelCraft: ``Step R.P | Agent: <agent_id>``, then one ``[viewed image: SOURCE]``
    line per image the turn viewed, the images themselves (passed through, never
    re-encoded: charts stay lossless), then the turn's output; no hint."""
    blocks = []
    for _, t, coord in _steps(doc, lay):
        entries = _image_entries(t.get("images"))
        header = "\n".join(
            [f"Step {coord} | Agent: {_speaker(t)}"]
            + [f"[viewed image: {e.get('source') or '<inline>'}]" for e in entries]
        )
        blocks.append(Block(coord, header, _jpegs(entries, read, None), _output(t.get("output"))))
    return Rendered(_passthrough_task_images(doc, read), blocks, "")


def render_mathchat(doc: JSONObject, lay: Layout, read: ImageReader) -> Rendered:
    """MathChat: the opening ``user_proxy`` turn (round 0, position 0) is unnumbered
    ``User Input`` framing; every other turn is ``Step N`` with N = 2·round + position,
    labelled with its real speaker (``assistant``, ``user_proxy``); no hint."""
    blocks = []
    for _, e, coord in _steps_and_user_input(doc, lay):
        if coord is None:
            blocks.append(Block(None, f"User Input\n{_output(e.get('output'))}"))
        else:
            blocks.append(Block(coord, f"Step {coord} | Agent: {_speaker(e)}\n{_output(e.get('output'))}"))
    return Rendered(_passthrough_task_images(doc, read), blocks, "")


def _steps_and_user_input(doc: JSONObject, lay: Layout) -> list[tuple[Slot, JSONObject, str | None]]:
    """MathChat's numbered turns and its unnumbered opening ``user_proxy`` turn (the
    layout's framing slot at round 0, position 0), in order."""
    return [
        (slot, e, slot.coord)
        for slot, e in _placed(doc, lay)
        if slot.coord is not None or (slot.round, slot.position, slot.agent) == (0, 0, "user_proxy")
    ]


def render_metagpt(doc: JSONObject, lay: Layout, read: ImageReader) -> Rendered:
    """MetaGPT: one block per staged turn, ``Step S`` with S the SOP stage."""
    blocks = [
        Block(coord, f"Step {coord} | Agent: {_speaker(e)}\n{_output(e.get('output'))}")
        for _, e, coord in _steps(doc, lay)
    ]
    return Rendered(_passthrough_task_images(doc, read), blocks, METAGPT_HINT)


# ---------------------------------------------------------------- single-agent action frameworks


def _tagged(pairs: list[tuple[str, Any]], empty: str) -> str:
    """``[tag]\nvalue\n[/tag]`` for each non-empty value, joined by newlines."""
    shown = [
        f"[{tag}]\n{v}\n[/{tag}]"
        for tag, value in pairs
        if (v := (value.strip() if isinstance(value, str) else (str(value) if value else "")))
    ]
    return "\n".join(shown) if shown else empty


def render_alfagent(doc: JSONObject, lay: Layout, read: ImageReader) -> Rendered:
    """ALFWorld agent: ``Step N | Agent: agent`` with N the entry's ``step_number``, body
    ``[think]``, ``[action]``, ``[observation]`` (those present) or ``(empty step)``;
    other kinds with a number show ``(unknown kind=…)``; no images, no hint."""
    blocks = []
    for _, e, coord in _steps(doc, lay):
        kind = e.get("kind")
        if kind != "action":
            blocks.append(Block(coord, f"Step {coord} | Agent: agent\n(unknown kind={kind!r})"))
        else:
            body = _tagged(
                [("think", e.get("reasoning")), ("action", e.get("action")), ("observation", e.get("observation"))],
                "(empty step)",
            )
            blocks.append(Block(coord, f"Step {coord} | Agent: agent\n{body}"))
    return Rendered([], blocks, "")


def _screenshot_entries(entries: list[JSONObject]) -> set[int]:
    """Indexes of the action entries whose screenshot is attached."""
    with_shot = [
        i for i, e in enumerate(entries) if e.get("kind") == "action" and _image_entries(e.get("observation_images"))
    ]
    if not with_shot:
        return set()
    keep = {0, len(with_shot) - 1, *range(0, len(with_shot), SCREENSHOT_INTERVAL)}
    return {with_shot[k] for k in keep}


def render_gui(doc: JSONObject, lay: Layout, read: ImageReader) -> Rendered:
    """GUI agents (coact, openai_cua, agentoccam, gemini): ``Step N | Agent: <agent>``
    (the entry's real speaker; ``agent`` when it has none), ``[screenshot]`` and the
    screenshot when the step's is attached (the first, every 10th and the last; width at
    most 1,024 px, JPEG 80), then ``[reasoning]``, ``[action]``, ``[observation]``,
    ``[error]`` (those present) or ``(empty step)``."""
    shots = _screenshot_entries(doc.get("trajectory") or [])
    blocks = []
    for slot, e, coord in _steps(doc, lay):
        if e.get("kind") != "action":
            continue
        images = _jpegs(_image_entries(e.get("observation_images")), read, SCREENSHOTS) if slot.entry in shots else []
        header = f"Step {coord} | Agent: {_speaker(e, 'agent', 'agent')}" + ("\n[screenshot]" if images else "")
        body = _tagged(
            [
                ("reasoning", e.get("reasoning")),
                ("action", e.get("action")),
                ("observation", e.get("observation")),
                ("error", e.get("error")),
            ],
            "(empty step)",
        )
        blocks.append(Block(coord, header, images, body))
    return Rendered(_passthrough_task_images(doc, read), blocks, GUI_HINT)


# ---------------------------------------------------------------- dvd (video)


def _dvd_call(call: Any) -> str:
    """A dvd tool call: the injected ``database`` argument left out, the frame inspector
    named as the agent it is."""
    return _call_line(call, hidden=frozenset({"database"}), names={"frame_inspect_tool": DVD_INSPECTOR})


def _time_ranges(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(f"{x[0]}-{x[1]}" if isinstance(x, list | tuple) and len(x) == 2 else str(x) for x in value)
    return str(value)


def _evenly(items: list[_T], k: int) -> list[_T]:
    n = len(items)
    return items if n <= k or k <= 0 else [items[round(i * (n - 1) / (k - 1))] for i in range(k)]


def _dvd_inspection(turn: JSONObject, coord: str, window: str | None, read: ImageReader) -> Block:
    images, missing = [], []
    for frame in _evenly([f for f in listish(turn.get("frames")) if isinstance(f, dict)], DVD_FRAME_CAP):
        if not frame.get("path"):
            continue
        part = read({"path": frame["path"]}, FRAMES)
        if part is None:
            missing.append(f"[frame {frame.get('index', '?')} at {_clock(frame.get('time_s'))} missing]")
        else:
            images.append(part)
    header = [f"Step {coord} | Agent: {DVD_INSPECTOR}"]
    if images or missing:
        header.append(
            f"[input_frames at {window}, {len(images)} frame(s)]"
            if window
            else f"[input_frames, {len(images)} frame(s)]"
        )
    content = (turn.get("content") or "").strip() or "(empty)"
    return Block(coord, "\n".join(header), images, "\n".join([*missing, f"[output]\n{content}\n[/output]"]))


def _dvd_turn(turn: JSONObject, coord: str, windows: dict[str, str], read: ImageReader) -> Block:
    kind = turn.get("kind")
    if kind == "assistant":
        calls = listish(turn.get("tool_calls"))
        for call in calls:
            if isinstance(call, dict) and call.get("name") == "frame_inspect_tool" and call.get("id"):
                args = _arguments(call)
                window = args.get("time_ranges_hhmmss") or args.get("time_ranges") if isinstance(args, dict) else None
                if window:
                    windows[str(call["id"])] = _time_ranges(window)
        content = (turn.get("content") or "").strip()
        body = [f"[output]\n{content}\n[/output]"] if content else []
        body += [f"[tool_call]\n{_dvd_call(c)}\n[/tool_call]" for c in calls]
        return Block(coord, f"Step {coord} | Agent: orchestrator", [], "\n".join(body) or "(empty assistant turn)")
    if kind == "tool":
        tool = turn.get("tool_name") or "?"
        if tool == "frame_inspect_tool":
            return _dvd_inspection(turn, coord, windows.pop(str(turn.get("tool_call_id") or ""), None), read)
        content = (turn.get("content") or "").strip() or "(empty)"
        return Block(coord, f"Step {coord} | Tool: {tool}", [], f"[tool_result tool={tool}]\n{content}\n[/tool_result]")
    return Block(coord, f"Step {coord} | {kind}", [], f"[unknown kind={kind!r}]\n{turn.get('content') or ''}")


def render_dvd(doc: JSONObject, lay: Layout, read: ImageReader) -> Rendered:
    """DeepVideoDiscovery: the system prompt (first) and user question (second) are
    framing; every later turn is a step numbered from 0 by its place in the trajectory:
    the orchestrator's turns (``[output]``, ``[tool_call]`` lines), the frame inspector's
    replies as ``Agent: frame_inspect_agent`` (an ``[input_frames at WINDOW, K frame(s)]``
    line, up to 8 evenly sampled frames at most 512 px, JPEG 75, then ``[output]``) and
    the plain tools as ``Tool: NAME`` with ``[tool_result tool=NAME]``; no hint."""
    windows: dict[str, str] = {}
    blocks = [_dvd_turn(turn, coord, windows, read) for _, turn, coord in _steps(doc, lay)]
    return Rendered([], blocks, "")


#: Frameworks whose transcript the preset renders under the official rules.
RENDERERS: dict[str, Callable[[JSONObject, Layout, ImageReader], Rendered]] = {
    "smolagents": render_smolagents,
    "macnet": render_macnet,
    "magentic-one": render_magentic,
    "eva": render_eva,
    "dvd": render_dvd,
    "debate": render_debate,
    "dylan": render_dylan,
    "pixelcraft": render_pixelcraft,
    "mathchat": render_mathchat,
    "metagpt": render_metagpt,
    "alfagent": render_alfagent,
    "coact": render_gui,
    "openai_cua": render_gui,
    "agentoccam": render_gui,
    "gemini": render_gui,
}


def _mime_of(raw: bytes) -> str:
    """The MIME type of image bytes from their signature (PNG unless JPEG/GIF/WebP)."""
    if raw.startswith(b"\xff\xd8"):
        return "image/jpeg"
    if raw[:6] in (b"GIF87a", b"GIF89a"):
        return "image/gif"
    if raw[:4] == b"RIFF" and raw[8:12] == b"WEBP":
        return "image/webp"
    return "image/png"


class ImageFiles:
    """Reads the trace's release image entries: inline ``data`` (base64) or a ``path``
    confined to the dataset root and the trace's folder
    (:func:`whenpro_core.media.paths.resolve_path`), re-encoded (:func:`jpeg_part`) or
    passed through (``how=None``); a failure is noted in ``problems`` and the image left
    out. :meth:`identity` tells byte-identical images apart from others whatever their
    file names (the release inlines them, so the official harness compares bytes)."""

    def __init__(self, trace: Trace, problems: list[str]) -> None:
        self.problems = problems
        self.bases = media_bases(trace.source.path, trace.source.root)
        if trace.source.root:  # JSONL video rows: frames under video_assets/<framework>/
            assets = Path(trace.source.root) / "video_assets" / trace.framework
            if assets.is_dir():
                self.bases.insert(0, assets.resolve())

    def _bytes(self, entry: JSONObject) -> bytes:
        if entry.get("data"):
            return decode_inline(str(entry["data"]))
        return read_file_capped(resolve_path(str(entry.get("path")), self.bases))

    def identity(self, entry: JSONObject) -> str:
        """The SHA-256 of the image's bytes (the entry's text when they cannot be read)."""
        try:
            return hashlib.sha256(self._bytes(entry)).hexdigest()
        except (MediaError, OSError, ValueError):
            return str(entry.get("data") or entry.get("path"))

    def __call__(self, entry: JSONObject, how: Reencode | None) -> ImagePart | None:
        try:
            if entry.get("data") and how is None:  # passed through as released
                return ImagePart(str(entry["data"]), str(entry.get("mime") or "image/png"))
            raw = self._bytes(entry)
            if how is None:  # the file's own bytes, as the release's inline data would be
                return ImagePart(base64.b64encode(raw).decode("ascii"), _mime_of(raw))
            return jpeg_part(raw, how)
        except MediaError as exc:
            self.problems.append(f"image left out: {exc.one_line()}")
        except (OSError, ValueError) as exc:  # Pillow cannot decode it
            self.problems.append(f"image left out: not a readable image ({type(exc).__name__})")
        return None


def image_reader(trace: Trace, problems: list[str]) -> ImageReader:
    """The trace's :class:`ImageFiles`."""
    return ImageFiles(trace, problems)


# ---------------------------------------------------------------- the request


def release_document(trace: Trace) -> JSONObject:
    """The trace's Who&When Pro document as released (a JSONL row decoded, or the
    per-file JSON). ConfigError for a trace of another format."""
    src = trace.source
    if src.format == whowhen_pro_jsonl.FORMAT and src.path:
        return whowhen_pro_jsonl.load_document(Path(src.path), src.key)
    if src.format == whowhen_pro.FORMAT and src.path:
        doc = orjson.loads(Path(src.path).read_bytes())
        if isinstance(doc, dict):
            return doc
    raise ConfigError(
        f"--preset whowhen-pro needs a Who&When Pro trace (this one is {src.format})",
        expected="a Who&When Pro release row or per-file document",
    )


def _rendered(trace: Trace, problems: list[str]) -> tuple[JSONObject, Rendered, Path]:
    """The trace's release document, its transcript under the official rules, and the
    dataset root (ConfigError for a framework without renderer or no taxonomy.yaml)."""
    doc = release_document(trace)
    framework = canonical_framework(doc.get("framework") or trace.framework)
    render = RENDERERS.get(framework)
    if render is None:
        raise ConfigError(
            f"--preset whowhen-pro does not render {framework} traces yet",
            expected="a trace of " + ", ".join(sorted(RENDERERS)),
        )
    lay = layout(framework, doc.get("trajectory"), doc.get("agents"))
    rendered = render(doc, lay, image_reader(trace, problems))
    root = Path(trace.source.root) if trace.source.root else None
    if root is None or not (root / "taxonomy.yaml").is_file():
        raise ConfigError(
            "--preset whowhen-pro needs the dataset's taxonomy.yaml (the official prompt lists its modes in full)",
            path=root or trace.source.path,
            expected="taxonomy.yaml at the dataset root, next to data/",
        )
    return doc, rendered, root


def _whenpro_worded(rendered: Rendered, taxonomy: Taxonomy, query: str) -> list[Part]:
    """The request in whenpro's words (module doc)."""
    parts: list[Part] = [
        TextPart(
            INTRO
            + "## Error Mode Taxonomy\n\n"
            + taxonomy_block(taxonomy)
            + "\n\n## User Question\n\n"
            + query
            + "\n\n"
        )
    ]
    parts.extend(rendered.task_images)
    parts.append(TextPart("\n\n## Transcript\n\n"))
    first = True
    for block in rendered.blocks:
        if block.text:
            parts.append(TextPart(("" if first else "\n") + block.text))
            first = False
        parts.extend(block.images)
        if block.body:
            parts.append(TextPart(("" if first else "\n") + block.body))
            first = False
    hint = f"## Step Coordinate Format\n\n{rendered.hint}\n\n" if rendered.hint else ""
    parts.append(TextPart(f"\n\n{hint}## Response Format\n\n{RESPONSE_FORMAT}\n"))
    return coalesce(parts)


def request_parts_worded(trace: Trace, problems: list[str] | None = None) -> tuple[list[Part], str]:
    """The content parts of the preset's single user message for ``trace`` and the line
    saying whose wording they carry: the official harness's when one is chosen
    (:mod:`whenpro_core.attribution.official_harness`), else whenpro's. Images that cannot
    be read are left out and described in ``problems``."""
    doc, rendered, root = _rendered(trace, problems if problems is not None else [])
    query = (doc.get("task") or {}).get("query") or ""
    harness = load_harness()
    if harness is None:
        return _whenpro_worded(rendered, taxonomy_for(root), query), WHENPRO_WORDING
    blocks = [Block(TASK_ANCHOR, "", rendered.task_images)] if rendered.task_images else []
    return harness_worded(harness, [*blocks, *rendered.blocks], rendered.hint, query, root), harness.wording


def request_parts(trace: Trace, problems: list[str] | None = None) -> list[Part]:
    """The content parts of the preset's request (:func:`request_parts_worded`)."""
    return request_parts_worded(trace, problems)[0]


async def run_whowhen_pro(
    trace: Trace, judge: Judge, taxonomy: Taxonomy, *, with_gold: bool = False, progress: ProgressCallback | None = None
) -> Attribution:
    """One all-at-once call with the official request, its answer read by the official
    parser's rules (:func:`~whenpro_core.attribution.harness_parse.read_whowhen_pro`); the
    gold answer is never shown (``with_gold`` is ignored: the official harness has no
    such setting). Images are dropped, with a warning, for a judge that reads text only."""
    name = PRESET_PROTOCOLS["whowhen-pro"]
    tally = Tally(name, judge, with_gold=False, parser=PARSER_WHOWHEN_PRO)
    problems: list[str] = []
    parts, wording = request_parts_worded(trace, problems)
    tally.warn(wording)
    for problem in problems:
        tally.warn(problem)
    if not judge.multimodal and any(isinstance(p, ImagePart) for p in parts):
        tally.warn("the judge reads text only: the trace's images were left out (--images on to send them)")
        parts = coalesce([p for p in parts if isinstance(p, TextPart)])
    if progress:
        progress(Progress(name, 1, (), "reading the whole transcript"))
    codes = [m.code for m in taxonomy]

    def readable(text: str, _parsed: BaseModel | None) -> bool:
        reading = read_whowhen_pro(text, codes)
        return reading.agent is not None or reading.step is not None

    reply = await judge.ask(
        [Message("user", parts)], None, readable, CallSettings(temperature=TEMPERATURE, max_tokens=MAX_TOKENS)
    )
    tally.record(reply)
    reading = read_whowhen_pro(reply.text, codes)
    for warning in reading.warnings:
        tally.warn(warning)
    return tally.finish(
        trace,
        agent=reading.agent,
        step=normalize_coord(reading.step) if reading.step else None,
        mode=reading.mode,
        reason=reading.reason,
        step_text=reading.step,
    )
