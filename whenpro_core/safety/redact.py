"""Keep credentials out of everything whenpro shows, logs, caches or saves (the one home
of redaction; brief: API keys never appear anywhere).

Two shapes of input:

- free text (error lines, server messages, executor stderr, anything printed):
  :func:`redact` replaces known secrets and anything shaped like a credential: provider
  keys (``sk-...``, ``sk-ant-...``), ``Authorization`` values (``Bearer <token>``,
  ``Basic <base64>``), ``x-api-key: <token>`` / ``api_key=<token>``, and the
  ``user:password@`` part of URLs;
- JSON values kept from a source file (``Trace.extras``, ``Step.raw``):
  :func:`redact_secrets` replaces the values of members whose key names a secret.

Both write :data:`REDACTED`. :func:`public_url` is a URL fit to show, log and hash.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from typing import TypeVar, cast
from urllib.parse import urlsplit, urlunsplit

#: Any JSON value given to :func:`redact_secrets` (its result has the same type).
_J = TypeVar("_J")

#: What a redacted value is replaced by, everywhere.
REDACTED = "[redacted]"

#: Keys whose values are secrets in a JSON document (token *counts* such as
#: ``prompt_tokens`` are kept: only keys ending in ``token`` match).
SECRET_KEYS = re.compile(r"(api[_-]?key|secret|password|passwd|token$|authorization|access[_-]?key)", re.IGNORECASE)

#: Environment variable names whose values are secrets (see :func:`environment_secrets`).
SECRET_ENV_NAMES = re.compile(r"KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL", re.IGNORECASE)

_CREDENTIAL = re.compile(
    r"\b(?P<key>sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{6,}|(?:pk|rk)-[A-Za-z0-9_\-]{16,})"
    r"|(?P<scheme>\b(?i:bearer)\s+)[A-Za-z0-9._~+/=\-]{4,}"
    r"|(?P<basic>\b(?i:basic)\s+)(?=[A-Za-z]*[0-9+/=])[A-Za-z0-9+/=]{8,}"
    r"|(?P<named>(?<![./$\w-])(?i:x-api-key|api[_-]?key|access[_-]?token|password|passwd)[\"']?\s*[:=]\s*[\"']?)"
    r"[^\s,;&\"'<>]+"
    r"|(?P<url>\b[A-Za-z][A-Za-z0-9+.\-]*://)[^\s/@?#\"'<>]+@"
)


def _replace(m: re.Match[str]) -> str:
    if m.group("key"):
        return REDACTED
    if m.group("url"):
        return f"{m.group('url')}{REDACTED}@"
    return (m.group("scheme") or m.group("basic") or m.group("named") or "") + REDACTED


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every secret of ``secrets`` (strings of 4+ characters) and every
    credential-shaped token replaced by :data:`REDACTED`.

    ``"GET http://u:pw@h/ (Authorization: Basic dTpwdw==) key sk-abc123456"`` ->
    ``"GET http://[redacted]@h/ (Authorization: Basic [redacted]) key [redacted]"``.
    """
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    return _CREDENTIAL.sub(_replace, text)


def environment_secrets(environ: dict[str, str] | None = None) -> list[str]:
    """Values (8+ characters) of the environment variables named like keys, tokens or
    passwords (``OPENAI_API_KEY``, ``GH_TOKEN``, ...): what a child process may echo."""
    env = os.environ if environ is None else environ
    return [value for name, value in env.items() if len(value) >= 8 and SECRET_ENV_NAMES.search(name)]


def redact_secrets(value: _J, _depth: int = 0) -> _J:
    """A copy of a JSON value in which every object member whose key names a secret
    (:data:`SECRET_KEYS`: ``api_key``, ``aws_secret_access_key``, ``password``, ...)
    and holds a non-empty, non-number value is replaced by :data:`REDACTED`. Values
    nested deeper than 64 levels are returned as they are. The copy has the type of
    ``value`` (a dict or list subclass comes back as a plain dict or list)."""
    if _depth > 64:
        return value
    if isinstance(value, dict):
        return cast(
            _J,
            {
                k: (
                    REDACTED
                    if isinstance(k, str)
                    and SECRET_KEYS.search(k)
                    and value[k] not in (None, "", [], {})
                    and not isinstance(value[k], (int, float))
                    else redact_secrets(value[k], _depth + 1)
                )
                for k in value
            },
        )
    if isinstance(value, list):
        return cast(_J, [redact_secrets(v, _depth + 1) for v in value])
    return value


def public_url(url: str | None) -> str | None:
    """A URL without user:password, query or fragment (safe to show, log and hash);
    ``"<invalid url>"`` for one that cannot be parsed."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return "<invalid url>"
    host = parts.hostname or ""
    if port:
        host = f"{host}:{port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))
