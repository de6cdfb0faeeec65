"""Wire-format helpers of the fake LLM server (:mod:`tests.support.llm_server`): token
estimates, prompt linearisation (for answer callables and prefix-cache emulation), and the
JSON answers of chat completions, Responses and Anthropic messages."""

from __future__ import annotations

import bisect
import hashlib
import json
import math
import time
from collections import deque
from typing import Any

from whenpro_core.injection.diff import common_prefix_len

IMAGE_TOKENS = 85


def approx_tokens(text: str) -> int:
    """The server's token estimate: ceil(len/4)."""
    return math.ceil(len(text) / 4)


def image_marker(data: str) -> str:
    """A short stand-in for an image in the linearised prompt (same image, same marker)."""
    return f"<image {hashlib.sha1(data.encode()).hexdigest()[:12]}>"


def segments(body: dict[str, Any]) -> list[tuple[str, bool, int]]:
    """The prompt of any of the three request formats as (text, cache_breakpoint, images)
    segments in order: system prompt / instructions first, then each message."""
    segs: list[tuple[str, bool, int]] = []

    def part(p: Any) -> None:
        if isinstance(p, str):
            segs.append((p, False, 0))
            return
        if not isinstance(p, dict):
            return
        bp = bool(p.get("cache_control"))
        t = p.get("type")
        if t in ("text", "input_text", "output_text"):
            segs.append((str(p.get("text", "")), bp, 0))
        elif t == "image_url":
            segs.append((image_marker(str((p.get("image_url") or {}).get("url", ""))), bp, 1))
        elif t == "input_image":
            segs.append((image_marker(str(p.get("image_url", ""))), bp, 1))
        elif t == "image":
            segs.append((image_marker(str((p.get("source") or {}).get("data", ""))), bp, 1))

    def content(role: str, c: Any) -> None:
        segs.append((f"\n{role}: ", False, 0))
        for p in c if isinstance(c, list) else [c]:
            part(p)

    for key in ("system", "instructions"):
        if body.get(key):
            content("system", body[key])
    turns = body.get("messages") if "messages" in body else body.get("input")
    if isinstance(turns, str):
        content("user", turns)
    for m in turns if isinstance(turns, list) else []:
        if isinstance(m, dict):
            content(str(m.get("role", "user")), m.get("content"))
    return segs


def output_constraint_key(body: dict[str, Any]) -> str:
    """A short key of what a request forces the answer into (the structured-output schema:
    chat ``response_format``, Responses ``text.format``, messages ``output_config.format``;
    and ``tools``/``tool_choice``), ``""`` for none. Providers put it in front of the
    prompt's cached prefix (OpenAI: "the structured output schema serves as a prefix to the
    system message"; Anthropic: tools come before the system prompt, and a changed output
    format misses the cache), so requests with different keys share no cached prefix."""
    text = body.get("text")
    oc = body.get("output_config")
    parts = {
        "response_format": body.get("response_format"),
        "text.format": text.get("format") if isinstance(text, dict) else None,
        "output_config.format": oc.get("format") if isinstance(oc, dict) else None,
        "tools": body.get("tools"),
        "tool_choice": body.get("tool_choice"),
    }
    parts = {k: v for k, v in parts.items() if v}
    if not parts:
        return ""
    return hashlib.sha1(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:12]


def prompt_text(body: dict[str, Any]) -> str:
    """All prompt text of a chat-completions, Responses or messages request body, in order
    (``role: text`` lines; images as ``<image sha1>`` markers). For answer callables."""
    return "".join(s for s, _, _ in segments(body))


class SeenPrompts:
    """The last ``keep`` prompts of one model, to tell how long a prefix a new prompt shares
    with any of them (an OpenAI-style automatic prefix cache).

    In sorted order the prompt sharing the longest prefix with a new one sits next to the
    new one's place, so each prompt costs two prefix comparisons, not ``keep``. (Comparing
    with every earlier prompt cost the server ~4 ms of CPU per 23 KB request under its lock,
    which made larger requests slower in throughput benchmarks.)"""

    def __init__(self, keep: int = 200) -> None:
        self.keep = keep
        self._sorted: list[str] = []
        self._arrival: deque[str] = deque()

    def add(self, prompt: str) -> int:
        """Remember ``prompt``; the length (characters) of the longest prefix it shares with
        a remembered prompt."""
        at = bisect.bisect_left(self._sorted, prompt)
        near = self._sorted[max(at - 1, 0) : at + 1]
        best = max((common_prefix_len(old, prompt) for old in near), default=0)
        self._sorted.insert(at, prompt)
        self._arrival.append(prompt)
        if len(self._arrival) > self.keep:
            oldest = self._arrival.popleft()
            del self._sorted[bisect.bisect_left(self._sorted, oldest)]
        return best


def wants_schema(api: str, body: dict[str, Any]) -> bool:
    if api == "chat":
        rf = body.get("response_format")
        return isinstance(rf, dict) and rf.get("type") == "json_schema"
    if api == "responses":
        fmt = (body.get("text") or {}).get("format") if isinstance(body.get("text"), dict) else None
        return isinstance(fmt, dict) and fmt.get("type") == "json_schema"
    oc = body.get("output_config")
    return isinstance(oc, dict) and isinstance(oc.get("format"), dict)


def chat_payload(n: int, model: str, text: str, truncated: bool, pt: int, ct: int, cached: int) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-{n}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text, "refusal": None},
                "finish_reason": "length" if truncated else "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": pt,
            "completion_tokens": ct,
            "total_tokens": pt + ct,
            "prompt_tokens_details": {"cached_tokens": cached},
        },
    }


def responses_payload(n: int, model: str, text: str, truncated: bool, pt: int, ct: int, cached: int) -> dict[str, Any]:
    return {
        "id": f"resp_{n}",
        "object": "response",
        "created_at": int(time.time()),
        "model": model,
        "status": "incomplete" if truncated else "completed",
        "incomplete_details": {"reason": "max_output_tokens"} if truncated else None,
        "error": None,
        "output": [
            {
                "type": "message",
                "id": f"msg_{n}",
                "status": "incomplete" if truncated else "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        ],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": pt,
            "input_tokens_details": {"cached_tokens": cached},
            "output_tokens": ct,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": pt + ct,
        },
    }


def messages_payload(
    n: int,
    model: str,
    text: str,
    truncated: bool,
    pt: int,
    ct: int,
    read: int,
    write: int,
    tool_body: dict[str, Any] | None,
) -> dict[str, Any]:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    stop = "max_tokens" if truncated else "end_turn"
    if tool_body is not None:
        try:
            tool_input = json.loads(text)
        except ValueError:
            tool_input = None
        if isinstance(tool_input, dict):
            name = tool_body["tool_choice"].get("name", "tool")
            content = [{"type": "tool_use", "id": f"toolu_{n}", "name": name, "input": tool_input}]
            stop = "tool_use"
    return {
        "id": f"msg_{n}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": stop,
        "stop_sequence": None,
        "usage": {
            "input_tokens": max(0, pt - read - write),
            "output_tokens": ct,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": write,
        },
    }
