"""Who&When Pro trajectory entries -> :class:`~whenpro_core.trace.model.Step` s (docs/architecture.md,
'Formats and step coordinates').

The coordinate and agent of each step come from :mod:`whenpro_core.trace.coords`; this module
turns the entry's fields into the step's content, tool calls, observation, media and
error, whatever the framework's entry shape:

* smolagents ``action`` {step_number, reasoning, code, observation,
  observation_images, error, is_final_answer}: ``content`` is the reasoning (the
  model's raw output, which already holds its code) with the dangling ``</code>`` that
  smolagents appends removed when there is no opening ``<code>``; ``code`` becomes a
  :class:`ToolCall` named ``python`` whose ``arguments`` is the code string (so the code
  is not shown twice); ``error`` {type, message} becomes ``"Type: message"``.
* GUI / ALFWorld ``action`` {step_number, agent, reasoning, action, observation,
  observation_images, action_raw, error}: the action string is a ToolCall ``action``.
  An ``action`` entry may also carry ``content`` (when it has no reasoning) and a
  ``tool_calls`` list (datasets written by ``whenpro build``).
* ``planning`` {plan}: ``kind="plan"``.
* agent turns {agent_id|agent, role, output, ...} (macnet, mathchat, metagpt, debate,
  dylan, pixelcraft, magentic-one): ``content`` is the output; magentic-one
  ``tool_actions`` [{type, name, args}] become tool calls, the ``ledger`` goes to meta.
* chat entries {kind: system|user|assistant|tool, content, tool_calls, tool_call_id,
  tool_name, frames} (dvd, eva): tool-call ``arguments`` held as JSON strings are
  parsed; ``frames`` [{index, time_s, path}] become ``MediaRef(kind="frame")``.

Label-leaking fields (:data:`HIDDEN_FIELDS`) go to ``Step.hidden`` and are removed from
``Step.raw``; inline base64 images are replaced by a short placeholder in ``raw``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from whenpro_core.formats.base import as_text, dict_or_empty, list_or_empty, maybe_json
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.coords import Slot
from whenpro_core.trace.model import LABEL_LEAKING_FIELDS, MediaKind, MediaRef, Step, ToolCall

#: Entry fields moved to ``Step.hidden``: the injection markers of the release
#: (``is_injected``, ``is_replayed``, ``injected``, ``phase``, ``step_legacy``), other
#: spellings of them, and ``input_messages`` (the reference evaluation never shows a
#: judge the per-turn prompt, which can hold pre-injection text).
HIDDEN_FIELDS = tuple(
    dict.fromkeys(
        LABEL_LEAKING_FIELDS
        + (
            "is_injection",
            "injection",
            "injection_info",
            "injected_step",
            "injected_content",
            "original_output",
            "pre_injection_output",
            "replayed",
            "is_live",
            "input_messages",
        )
    )
)

_B64_MIME = (
    ("iVBORw0KGgo", "image/png"),
    ("/9j/", "image/jpeg"),
    ("R0lGOD", "image/gif"),
    ("UklGR", "image/webp"),
    ("Qk", "image/bmp"),
)
_DATA_URL = re.compile(r"^data:([\w.+-]+/[\w.+-]+);base64,", re.IGNORECASE)
_LAST_OUTPUT = "Last output from code snippet:"


def split_hidden(src: JSONObject) -> tuple[JSONObject, JSONObject]:
    """``(clean, hidden)``: the entry without label-leaking fields, and those fields."""
    hidden = {k: src[k] for k in HIDDEN_FIELDS if k in src}
    clean = {k: v for k, v in src.items() if k not in HIDDEN_FIELDS} if hidden else dict(src)
    return clean, hidden


#: Below this depth a value is kept as it is: inline images sit a few levels down in a
#: message's content, and a scrub that recursed to the 1,024 levels a document may hold
#: would overflow Python's recursion limit.
INLINE_MEDIA_DEPTH = 64


def strip_inline_media(value: Any, depth: int = 0) -> Any:
    """A copy of ``value`` with every long inline base64 ``data`` string replaced by
    ``"<inline image: N base64 chars>"`` (for ``Step.raw``); parts deeper than
    :data:`INLINE_MEDIA_DEPTH` are kept unchanged."""
    if depth >= INLINE_MEDIA_DEPTH:
        return value
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k == "data" and isinstance(v, str) and len(v) > 512:
                out[k] = f"<inline image: {len(v)} base64 chars>"
            else:
                out[k] = strip_inline_media(v, depth + 1)
        return out
    if isinstance(value, list):
        return [strip_inline_media(v, depth + 1) for v in value]
    return value


def _mime_of(data: str) -> str:
    for prefix, mime in _B64_MIME:
        if data.startswith(prefix):
            return mime
    return "image/png"


def _media_common(obj: dict[str, Any], kind: str, label: str | None) -> dict[str, Any]:
    """The MediaRef fields every stored image has: ``kind``, frame ``index`` and
    ``time_s`` (when well typed) and the label (the image's ``source``, else ``label``)."""
    t = obj.get("time_s")
    source = obj.get("source") if isinstance(obj.get("source"), str) else None
    return {
        "kind": kind,
        "index": obj.get("index") if isinstance(obj.get("index"), int) else None,
        "time_s": float(t) if isinstance(t, (int, float)) and not isinstance(t, bool) else None,
        "label": source or label,
    }


def _inline_media(data: str, mime: str | None, common: dict[str, Any]) -> MediaRef:
    """An inline image from base64 ``data`` (a data URL gives its own mime when none is
    stored; else the mime is sniffed from the data)."""
    m = _DATA_URL.match(data)
    if m:
        mime, data = mime or m.group(1), data[m.end() :]
    return MediaRef(data=data, mime=mime or _mime_of(data), **common)


def _path_media(path: str, prefix: str | None, mime: str | None, common: dict[str, Any]) -> MediaRef:
    """An image stored at ``path`` (``prefix`` prepended to a relative path that lacks it)."""
    if prefix and not path.startswith(("/", "\\")) and not path.startswith(prefix):
        path = prefix + path
    return MediaRef(path=path, mime=mime, **common)


def media_ref(obj: Any, *, kind: str = "image", label: str | None = None, prefix: str | None = None) -> MediaRef | None:
    """A MediaRef for one stored image: ``{"__type__": "PIL.Image", "data": <base64>,
    "mime"?, "source"?}`` (inline), ``{"path": ...}`` or a bare path string, or a
    frame ``{index, time_s, path}``. ``prefix`` is prepended to relative paths (JSONL
    video rows: ``video_assets/<framework>/``). Returns None for anything else."""
    if isinstance(obj, str):
        obj = {"data": obj} if _DATA_URL.match(obj) else {"path": obj}
    if not isinstance(obj, dict):
        return None
    data, path = obj.get("data"), obj.get("path")
    mime = obj.get("mime") if isinstance(obj.get("mime"), str) else None
    if isinstance(data, str) and data:
        return _inline_media(data, mime, _media_common(obj, kind, label))
    if isinstance(path, str) and path:
        return _path_media(path, prefix, mime, _media_common(obj, kind, label))
    return None


def media_list(
    items: Any, *, kind: MediaKind = "image", label: str = "image", prefix: str | None = None
) -> list[MediaRef]:
    """MediaRefs for a list of stored images (others are skipped)."""
    if not isinstance(items, list):
        items = [items] if items else []
    out = []
    for n, item in enumerate(items):
        if kind == "frame" and isinstance(item, dict):
            lab = f"frame {item.get('index', n)}" + (
                f" @ {item['time_s']}s" if isinstance(item.get("time_s"), (int, float)) else ""
            )
        else:
            lab = f"{label} #{n + 1}"
        ref = media_ref(item, kind=kind, label=lab, prefix=prefix)
        if ref is not None:
            out.append(ref)
    return out


#: The fields of a trajectory entry (or task) that hold images or frames.
MEDIA_FIELDS = ("images", "observation_images", "frames")


def unread_media(src: Any, where: str) -> list[str]:
    """One note per media field of ``src`` (a trajectory entry, turn or task) holding
    something :func:`media_list` cannot read and so leaves out: ``where`` is its JSON path
    (``$.trajectory[3]``). ``[]`` when every image is read or there are none."""
    if not isinstance(src, dict):
        return []
    notes = []
    for name in MEDIA_FIELDS:
        value = src.get(name)
        if value in (None, "", [], {}):
            continue
        items = value if isinstance(value, list) else [value]
        lost = sum(1 for item in items if media_ref(item, kind="frame" if name == "frames" else "image") is None)
        if lost:
            shape = "" if isinstance(value, list) else f" ({type(value).__name__}, not a list)"
            notes.append(
                f"{where}.{name}{shape}: {lost} of {len(items)} images not read "
                f"(expected a list of image paths or {{data|path}} objects)"
            )
    return notes


def strip_dangling_code(text: str) -> str:
    """Remove the trailing ``</code>`` smolagents appends to the model output when the
    text has no opening ``<code>`` (reference ``render/smolagents.py``)."""
    if not text or "<code>" in text:
        return text
    stripped = text.rstrip()
    if stripped.endswith("</code>"):
        return stripped[: -len("</code>")].rstrip()
    return text


def error_text(value: Any) -> str | None:
    """``{type, message}`` -> ``"Type: message"``; strings as they are; null -> None."""
    if value is None or value == "" or value == {}:
        return None
    if isinstance(value, dict):
        typ, msg = value.get("type"), value.get("message")
        if typ or msg:
            return f"{typ}: {as_text(msg)}" if typ else as_text(msg)
    return as_text(value)


def _tool_call(tc: Any) -> ToolCall | None:
    if not isinstance(tc, dict):
        return None
    fn = dict_or_empty(tc.get("function"))
    name = tc.get("name") or fn.get("name") or "tool"
    args = tc.get("arguments", fn.get("arguments"))
    tid = tc.get("id")
    return ToolCall(id=str(tid) if tid is not None else None, name=str(name), arguments=maybe_json(args))


def _kind_of(src: JSONObject, fw: str) -> str:
    kind = src.get("kind")
    if kind == "planning":
        return "plan"
    if isinstance(kind, str) and kind in ("user", "system", "assistant", "tool", "final_answer", "action", "round"):
        return kind
    role = src.get("role")
    if fw == "macnet" and isinstance(role, str) and role:
        return role
    return kind if isinstance(kind, str) and kind and kind != "agent" else "assistant"


_ENTRY_META_KEYS = ("round", "position", "stage", "step_number", "tool_call_id", "tool_name", "timestamp")


def _step_source(slot: Slot, entry: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """``(source, hidden, meta)`` of one slot: the turn (round-grouped frameworks) or the
    entry without its hidden fields, the hidden fields (the round's and the turn's), and
    the step's starting ``meta`` (round/position, the round's other fields on its first
    turn; or the entry's round, position, stage, step number, tool ids and timestamp)."""
    if slot.turn is None:
        src, hidden = split_hidden(entry)
        return src, hidden, {key: src[key] for key in _ENTRY_META_KEYS if src.get(key) is not None}
    round_clean, round_hidden = split_hidden({k: v for k, v in entry.items() if k != "turns"})
    src, hidden = split_hidden(entry["turns"][slot.turn])
    meta: dict[str, Any] = {"round": slot.round, "position": slot.position}
    extra_round = {k: v for k, v in round_clean.items() if k not in ("kind", "round")}
    if extra_round and slot.turn == 0:
        meta["round_fields"] = strip_inline_media(extra_round)
    return src, {**round_hidden, **hidden}, meta


@dataclass
class _StepBody:
    """What a step says and does: text, tool calls, observation text and media."""

    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    observation: str | None = None
    media: list[MediaRef] = field(default_factory=list)


def _observation(src: dict[str, Any]) -> str | None:
    """The entry's ``observation`` as text, None when absent."""
    return as_text(src["observation"]) if src.get("observation") is not None else None


def _action_tool_calls(src: dict[str, Any]) -> list[ToolCall]:
    """An action entry's calls: its ``code`` (as ``python``), its ``action`` and its ``tool_calls``."""
    calls: list[ToolCall] = []
    if isinstance(src.get("code"), str) and src["code"]:
        calls.append(ToolCall(name="python", arguments=src["code"]))
    if src.get("action") not in (None, ""):
        calls.append(ToolCall(name="action", arguments=maybe_json(src["action"])))
    for tc in list_or_empty(src.get("tool_calls")):
        call = _tool_call(tc)
        if call:
            calls.append(call)
    return calls


def _action_body(src: dict[str, Any], meta: dict[str, Any], media_prefix: str | None) -> _StepBody:
    """The body of an ``action`` entry (smolagents, GUI agents); records ``is_final_answer``
    and ``action_raw`` in ``meta``."""
    reasoning = as_text(src.get("reasoning"))
    content = strip_dangling_code(reasoning) if "code" in src else reasoning
    tool_calls = _action_tool_calls(src)
    if not content and src.get("content") is not None:
        content = as_text(src.get("content"))
    observation = _observation(src)
    media = media_list(src.get("observation_images"), label="observation", prefix=media_prefix)
    if src.get("is_final_answer"):
        meta["is_final_answer"] = True
    if src.get("action_raw") is not None:
        meta["action_raw"] = strip_inline_media(src["action_raw"])
    return _StepBody(content, tool_calls, observation, media)


def _message_tool_calls(src: dict[str, Any]) -> list[ToolCall]:
    """A message entry's ``tool_calls`` and ``tool_actions`` (``{name|type, args|arguments}``)."""
    calls: list[ToolCall] = []
    for tc in src.get("tool_calls") or []:
        call = _tool_call(tc)
        if call:
            calls.append(call)
    for ta in src.get("tool_actions") or []:
        if isinstance(ta, dict):
            calls.append(
                ToolCall(
                    name=str(ta.get("name") or ta.get("type") or "tool"),
                    arguments=maybe_json(ta.get("args", ta.get("arguments"))),
                )
            )
    return calls


def _message_body(src: dict[str, Any], meta: dict[str, Any], media_prefix: str | None) -> _StepBody:
    """The body of any other entry (a message: ``output`` or ``content``, tool calls,
    images, observation images and video frames); records ``ledger`` in ``meta``."""
    content = as_text(src.get("output", src.get("content")))
    tool_calls = _message_tool_calls(src)
    if src.get("ledger") is not None:
        meta["ledger"] = src["ledger"]
    observation = _observation(src)
    media = media_list(src.get("images"), label="image", prefix=media_prefix)
    media += media_list(src.get("observation_images"), label="observation", prefix=media_prefix)
    media += media_list(src.get("frames"), kind="frame", prefix=media_prefix)
    return _StepBody(content, tool_calls, observation, media)


def build_step(
    index: int, slot: Slot, entry: JSONObject, fw: str, *, agent: str, media_prefix: str | None = None
) -> Step:
    """The :class:`Step` for one slot of a Who&When Pro trajectory.

    ``entry`` is the trajectory entry the slot comes from (its ``turns[slot.turn]`` is
    used for round-grouped frameworks). ``agent`` is the step's final agent id.
    """
    src, hidden, meta = _step_source(slot, entry)
    kind = _kind_of(src, fw)
    if kind == "plan":
        body = _StepBody(content=as_text(src.get("plan", src.get("content"))))
    elif kind == "action":
        body = _action_body(src, meta, media_prefix)
    else:
        body = _message_body(src, meta, media_prefix)
    if src.get("agent") is not None and src.get("role") is not None and fw == "magentic-one":
        meta["role"] = src["role"]
    return Step(
        index=index,
        coord=slot.coord,
        agent=agent,
        kind=kind,
        content=body.content,
        tool_calls=body.tool_calls,
        observation=body.observation,
        media=body.media,
        error=error_text(src.get("error")),
        hidden=hidden,
        meta=meta,
        raw=strip_inline_media(src),
    )


def _final_answer_entry(entries: list[dict[str, Any]]) -> str | None:
    """The content of the first ``final_answer`` entry, else the output of the last
    magentic-one turn whose ``phase`` lists ``final_answer``; None when there is neither."""
    for e in entries:
        if e.get("kind") == "final_answer":
            return as_text(e.get("content", e.get("output")))
    for e in reversed(entries):
        phase = e.get("phase")
        if isinstance(phase, list) and "final_answer" in phase:
            return as_text(e.get("output", e.get("content")))
    return None


def _final_action_answer(entries: list[dict[str, Any]]) -> tuple[str | None] | None:
    """``(answer,)`` from the last smolagents/GUI action marked ``is_final_answer``: its
    observation's last output, else the argument of its ``final_answer(...)`` code, else
    its observation (None when empty); None when no action is marked."""
    for e in reversed(entries):
        if e.get("kind") == "action" and e.get("is_final_answer"):
            obs = as_text(e.get("observation"))
            if _LAST_OUTPUT in obs:
                return (obs.split(_LAST_OUTPUT, 1)[1].strip(),)
            m = re.search(r"final_answer\((.*)\)\s*$", as_text(e.get("code")), re.DOTALL)
            return (m.group(1).strip().strip("\"'") if m else (obs.strip() or None),)
    return None


def _dvd_finish(entries: list[dict[str, Any]]) -> str | None:
    """dvd: the result of the last ``finish`` tool call (None when there is none or it is empty)."""
    for e in reversed(entries):
        if e.get("kind") == "tool" and e.get("tool_name") == "finish":
            return as_text(e.get("content")).strip() or None
    return None


def _eva_answer(entries: list[dict[str, Any]]) -> str | None:
    """eva: the ``<answer>...</answer>`` of the last non-empty assistant entry, else its whole text."""
    for e in reversed(entries):
        if e.get("kind") == "assistant" and as_text(e.get("content")).strip():
            text = as_text(e.get("content"))
            m = re.search(r"<answer>\s*(.+?)\s*</answer>", text, re.IGNORECASE | re.DOTALL)
            return m.group(1) if m else text.strip()
    return None


def final_answer_of(doc: JSONObject, entries: list[JSONObject], fw: str) -> str | None:
    """The system's final answer: top-level ``final_answer``; else a ``final_answer``
    entry; else the magentic-one turn whose ``phase`` includes ``final_answer``; else
    the smolagents/GUI final action's last output; else dvd's ``finish`` tool result;
    else eva's last ``<answer>...</answer>``."""
    if doc.get("final_answer") is not None:
        return as_text(doc["final_answer"])
    answer = _final_answer_entry(entries)
    if answer is not None:
        return answer
    action = _final_action_answer(entries)
    if action is not None:
        return action[0]
    if fw == "dvd":
        return _dvd_finish(entries)
    if fw == "eva":
        return _eva_answer(entries)
    return None
