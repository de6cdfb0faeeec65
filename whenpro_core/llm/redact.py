"""Keep API keys out of messages, logs and caches (brief: keys never appear anywhere).

:func:`redact` replaces the known secrets and anything shaped like a provider key
(``sk-...``, ``sk-ant-...``, ``Bearer <token>``, ``x-api-key: <token>``) with ``***``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urlsplit, urlunsplit

_KEYLIKE = re.compile(
    r"(?i)\b(sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{6,})"
    r"|(bearer\s+)[^\s,;\"']+"
    r"|(x-api-key[\"']?\s*[:=]\s*[\"']?)[^\s,;\"']+"
)


def _sub(m: re.Match[str]) -> str:
    if m.group(1):
        return "sk-***"
    return (m.group(2) or m.group(3) or "") + "***"


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every secret (strings of 4+ characters) and key-shaped token replaced by ``***``."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return _KEYLIKE.sub(_sub, text)


def one_line(text: str, limit: int = 240) -> str:
    """Collapse whitespace and control characters; cut to ``limit`` characters."""
    text = "".join(ch if ch.isprintable() else " " for ch in text)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def public_url(url: str | None) -> str | None:
    """A URL without user:password, query or fragment (safe to show, log and hash)."""
    if not url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return "<invalid url>"
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))
