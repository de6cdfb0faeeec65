"""What an OpenAI-compatible server can do, asked once per base URL and remembered for the
run (docs/architecture.md, 'LLM backends'): the models it serves, the context window, and
which structured-output form it accepts.

Sources, read with short GETs/POSTs that never raise (a server that lacks one just does
not answer it):

- ``GET {base}/models``: model ids; a context window from a model's metadata when the
  server gives one (llama.cpp ``meta.n_ctx_train``, vLLM ``max_model_len``, LM Studio
  ``max_context_length``/``loaded_context_length``, others' ``context_length``).
- llama.cpp's ``GET {root}/props``: ``default_generation_settings.n_ctx`` (the window the
  server was started with, which beats the trained one).
- Ollama's ``POST {root}/api/show`` ``{"model": id}``: ``model_info["<arch>.context_length"]``
  and a ``num_ctx`` parameter when the model file sets one.

``root`` is the base URL without a trailing ``/v1``. Structured output is not probed on
every run: a run learns it from the first rejection (:meth:`ServerInfo.reject`) and every
backend on that base URL remembers it; ``whenpro models --probe`` tries it with a tiny call
(:func:`probe_structured`).
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any

#: Seconds each probe request may take (a probe runs before the first call of a run).
PROBE_TIMEOUT_S = 5.0
#: The forms of structured output a chat server may accept, best first.
STRUCTURED_FORMS = ("json_schema", "json_object", "text")


@dataclass
class ServerInfo:
    """What is known about the server at ``base_url``.

    Attributes:
        base_url: the probed base URL (credentials are never stored here: see
            :func:`whenpro_core.safety.redact.public_url` for display).
        reachable: a probe got an HTTP answer.
        models: model ids listed by ``/models``.
        context_window: tokens of the server's context window, ``None`` when unknown.
        context_source: where ``context_window`` came from (``/props n_ctx``, ...).
        server: ``llama.cpp``, ``ollama``, ``vllm``, ``lm-studio`` or ``""`` when unknown.
        rejected: structured-output forms the server refused (``json_schema``, ``json_object``).
    """

    base_url: str
    reachable: bool = False
    models: list[str] = field(default_factory=list)
    context_window: int | None = None
    context_source: str = ""
    server: str = ""
    rejected: set[str] = field(default_factory=set)

    def reject(self, form: str) -> None:
        """Remember that the server refused structured output of ``form``."""
        self.rejected.add(form)

    @property
    def structured(self) -> str:
        """The best structured-output form not refused yet (``text``: none)."""
        return next(f for f in STRUCTURED_FORMS if f not in self.rejected)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready (for ``whenpro models --probe --json``)."""
        return {
            "reachable": self.reachable,
            "server": self.server or None,
            "models": list(self.models),
            "context_window": self.context_window,
            "context_source": self.context_source or None,
            "structured_output": self.structured,
            "rejected": sorted(self.rejected),
        }


_known: dict[str, ServerInfo] = {}
_lock = threading.Lock()


def server_info(base_url: str, api_key: str | None = None, model: str | None = None) -> ServerInfo:
    """The :class:`ServerInfo` of ``base_url``: probed on the first call of the run, then
    the remembered one (shared by every backend on that URL). Never raises."""
    key = base_url.rstrip("/")
    with _lock:
        info = _known.get(key)
        if info is None:
            info = _probe(key, api_key, model)
            _known[key] = info
    return info


def forget(base_url: str | None = None) -> None:
    """Forget what was learnt about ``base_url`` (every server when ``None``)."""
    with _lock:
        if base_url is None:
            _known.clear()
        else:
            _known.pop(base_url.rstrip("/"), None)


def _root(base_url: str) -> str:
    return base_url[: -len("/v1")] if base_url.endswith("/v1") else base_url


def _get_json(client: Any, url: str) -> Any:
    return _json_of(client, "GET", url, None)


def _post_json(client: Any, url: str, body: dict[str, Any]) -> Any:
    return _json_of(client, "POST", url, body)


def _json_of(client: Any, method: str, url: str, body: dict[str, Any] | None) -> Any:
    """The JSON of a 200 answer to ``method url`` (``body`` as JSON), else ``None``: a probe
    never fails a run, and no answer means "unknown"."""
    try:
        response = client.request(method, url, json=body)
    except Exception:  # noqa: BLE001 - a probe never fails a run
        return None
    if response.status_code != 200:
        return None
    try:
        return response.json()
    except ValueError:
        return None


def _probe(base_url: str, api_key: str | None, model: str | None) -> ServerInfo:
    import httpx  # lazy: loaded with the first LLM call

    info = ServerInfo(base_url)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    with httpx.Client(timeout=PROBE_TIMEOUT_S, headers=headers) as client:
        listing = _get_json(client, f"{base_url}/models")
        if listing is not None:
            info.reachable = True
            _read_models(info, listing, model)
        props = _get_json(client, f"{_root(base_url)}/props")
        if isinstance(props, dict) and _read_props(info, props):
            info.reachable = True
        if info.context_window is None and info.models:
            show = _post_json(client, f"{_root(base_url)}/api/show", {"model": model or info.models[0]})
            if isinstance(show, dict) and _read_ollama(info, show):
                info.reachable = True
    return info


def _positive_int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


#: Context-window fields of a ``/models`` entry (or its ``meta``), most specific first.
_MODEL_FIELDS = (
    ("loaded_context_length", "lm-studio"),
    ("max_context_length", "lm-studio"),
    ("max_model_len", "vllm"),
    ("n_ctx", "llama.cpp"),
    ("n_ctx_train", "llama.cpp"),
    ("context_length", ""),
    ("context_window", ""),
)


def _read_models(info: ServerInfo, listing: Any, model: str | None) -> None:
    """Model ids and, from the entry of ``model`` (or the only one), a context window."""
    entries = listing.get("data") if isinstance(listing, dict) else None
    if not isinstance(entries, list):
        return
    chosen = None
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("id"), str):
            continue
        info.models.append(entry["id"])
        if chosen is None or entry["id"] == model:
            chosen = entry
    if chosen is None or (len(info.models) > 1 and chosen.get("id") != model):
        return
    for where in (chosen, chosen.get("meta")):
        if not isinstance(where, dict):
            continue
        for name, server in _MODEL_FIELDS:
            size = _positive_int(where.get(name))
            if size is not None:
                info.context_window, info.context_source = size, f"/models {name}"
                info.server = info.server or server
                return


def _read_props(info: ServerInfo, props: dict[str, Any]) -> bool:
    """llama.cpp ``/props``: the running window ``n_ctx`` (beats a trained size)."""
    settings = props.get("default_generation_settings")
    size = _positive_int(settings.get("n_ctx")) if isinstance(settings, dict) else None
    size = size or _positive_int(props.get("n_ctx"))
    if size is None:
        return False
    info.context_window, info.context_source, info.server = size, "/props n_ctx", "llama.cpp"
    return True


def _read_ollama(info: ServerInfo, show: dict[str, Any]) -> bool:
    """Ollama ``/api/show``: a ``num_ctx`` parameter, else the model's trained length."""
    params = show.get("parameters")
    if isinstance(params, str):
        for line in params.splitlines():
            name, _, value = line.strip().partition(" ")
            if name == "num_ctx" and value.strip().isdigit():
                info.context_window, info.context_source = int(value.strip()), "/api/show num_ctx"
                info.server = "ollama"
                return True
    model_info = show.get("model_info")
    if isinstance(model_info, dict):
        for name, value in model_info.items():
            size = _positive_int(value)
            if isinstance(name, str) and name.endswith(".context_length") and size is not None:
                info.context_window, info.context_source, info.server = size, f"/api/show {name}", "ollama"
                return True
    return False


def probe_structured(base_url: str, api_key: str | None, model: str) -> ServerInfo:
    """Try each structured-output form with a tiny chat call (``max_tokens`` 8) and
    remember the ones the server refuses (``whenpro models --probe``). Never raises."""
    import httpx  # lazy: only when asked

    info = server_info(base_url, api_key, model)
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    forms = {
        "json_schema": {"type": "json_schema", "json_schema": {"name": "probe", "schema": schema, "strict": True}},
        "json_object": {"type": "json_object"},
    }
    with httpx.Client(timeout=max(PROBE_TIMEOUT_S, 60.0), headers=headers) as client:
        for form, response_format in forms.items():
            body = {
                "model": model,
                "messages": [{"role": "user", "content": 'Answer {"ok": true} as JSON.'}],
                "max_tokens": 8,
                "response_format": response_format,
            }
            try:
                response = client.post(f"{base_url}/chat/completions", json=body)
            except Exception:  # noqa: BLE001 - unreachable: nothing learnt
                return info
            if response.status_code == 200:
                return info
            if names_structured_output(response.status_code, response.text):
                info.reject(form)
            else:
                return info
    return info


#: Words that show an error is about the structured-output request.
_STRUCTURED_WORDS = ("response_format", "json_schema", "json_object", "structured output", "guided_json")


def names_structured_output(status: int | None, message: str) -> bool:
    """Whether an HTTP error is the server refusing the structured-output request: a
    400/422, or any 4xx/5xx whose message names ``response_format``/``json_schema``
    (llama-cpp-python answers an unknown ``response_format`` type with HTTP 500)."""
    if status is None or status < 400:
        return False
    if status in (400, 422):
        return True
    text = message.lower()
    return any(word in text for word in _STRUCTURED_WORDS)


#: How servers name their window when a prompt overflows it: llama-cpp-python ("exceed
#: context window of 2048"), vLLM/OpenAI ("maximum context length is 2048 tokens"),
#: llama.cpp's server (``"n_ctx": 2048`` in its error body).
_WINDOW_IN_ERROR = (
    re.compile(r"context window of (\d+)", re.IGNORECASE),
    re.compile(r"maximum context length is (\d+)", re.IGNORECASE),
    re.compile(r'"n_ctx":\s*(\d+)'),
)


def window_in_error(exc: BaseException) -> int | None:
    """The context window a server names in an HTTP 400 refusing an overflowing prompt,
    else ``None``."""
    if getattr(exc, "status_code", None) != 400:
        return None
    text = error_text(exc)
    for pattern in _WINDOW_IN_ERROR:
        found = pattern.search(text)
        if found and int(found.group(1)) > 0:
            return int(found.group(1))
    return None


def error_text(exc: BaseException) -> str:
    """An SDK status error's body (or message) as text, for :func:`names_structured_output`."""
    body = getattr(exc, "body", None)
    if body is not None and not isinstance(body, str):
        try:
            return json.dumps(body)
        except (TypeError, ValueError):
            return str(body)
    return str(body) if body else str(exc)
