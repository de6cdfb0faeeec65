"""Resolve and confine the media a trace points at (docs/architecture.md, 'Untrusted content').

A :class:`~whenpro_core.trace.model.MediaRef` carries either inline base64 ``data`` or a
``path``. Paths come from trace files written by others, so they are never opened as
given: a relative path is joined to the dataset root first, then to the trace file's
folder (Who&When Pro sample traces store ``assets/examples/<name>/query_0.jpg``
relative to the dataset root while the trace lives in ``data/traces/``; SOURCE.md of
who-when-pro-samples), symlinks are resolved, and the result must lie inside one of
those folders. Everything else raises :class:`~whenpro_core.errors.MediaError`.
"""

from __future__ import annotations

import base64
import binascii
import re
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from whenpro_core.errors import MediaError

if TYPE_CHECKING:
    from whenpro_core.trace.model import MediaRef, Trace

#: Largest inline (base64) or on-disk media file read into memory, in bytes.
MAX_MEDIA_BYTES = 64 * 1024 * 1024

_DATA_URL = re.compile(r"^\s*data:[^,]{0,256}?;base64,", re.IGNORECASE)
_URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*://")
_WINDOWS_ABS = re.compile(r"^(?:[a-zA-Z]:[/\\]|[/\\]{2})")
_URLSAFE_B64 = re.compile(r"[A-Za-z0-9_-]+={0,2}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def safe_text(text: str, limit: int = 160) -> str:
    """``text`` made safe for a one-line message: control characters (terminal escape
    sequences, newlines) shown as ``\\xNN`` and the length capped at ``limit``."""
    out = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    return out if len(out) <= limit else out[: limit - 1] + "…"


def decode_inline(data: str, *, max_bytes: int = MAX_MEDIA_BYTES, where: str | None = None) -> bytes:
    """Decode inline base64 media, with or without a ``data:<mime>;base64,`` prefix.

    Whitespace and line breaks inside the base64 text are ignored. The decoded size is
    checked against ``max_bytes`` *before* decoding (from the text length).

    Raises:
        MediaError: empty data, invalid base64, or more than ``max_bytes`` bytes.
    """
    text = _DATA_URL.sub("", data, count=1)
    if len(text) > 2 * (max_bytes * 4 // 3 + 4):  # even with generous line breaks: too big
        raise MediaError(
            f"inline media larger than {max_bytes} bytes", path=where, expected=f"at most {max_bytes} bytes"
        )
    compact = "".join(text.split())
    if not compact:
        raise MediaError("empty inline media data", path=where, expected="base64 image or video bytes")
    if len(compact) // 4 * 3 > max_bytes:
        raise MediaError(
            f"inline media larger than {max_bytes} bytes", path=where, expected=f"at most {max_bytes} bytes"
        )
    try:
        raw = base64.b64decode(compact + "=" * (-len(compact) % 4), validate=True)
    except (binascii.Error, ValueError):
        try:
            if not _URLSAFE_B64.fullmatch(compact):
                raise ValueError("not base64url either")
            raw = base64.urlsafe_b64decode(compact + "=" * (-len(compact) % 4))
        except (binascii.Error, ValueError):
            raise MediaError(
                "inline media is not valid base64",
                path=where,
                expected="base64 text, optionally after data:<mime>;base64,",
            ) from None
    if not raw:
        raise MediaError("empty inline media data", path=where, expected="base64 image or video bytes")
    return raw


def media_bases(trace_path: str | Path | None = None, root: str | Path | None = None) -> list[Path]:
    """The folders a relative media path may resolve into, in lookup order: the dataset
    ``root``, then the folder of ``trace_path`` (or ``trace_path`` itself when it is a
    folder). Both are resolved (symlinks followed); duplicates are dropped."""
    bases: list[Path] = []
    if root is not None:
        bases.append(Path(root).resolve())
    if trace_path is not None:
        tp = Path(trace_path)
        bases.append((tp if tp.is_dir() else tp.parent).resolve())
    unique: list[Path] = []
    for b in bases:
        if b not in unique:
            unique.append(b)
    return unique


def resolve_path(path: str, bases: list[Path]) -> Path:
    """Resolve an untrusted media ``path`` against ``bases`` (see :func:`media_bases`).

    Backslashes count as separators. A relative path is tried against each base in
    order and the first existing regular file inside a base wins; an absolute path is
    accepted only when it lies inside a base. Symlinks are resolved before the
    containment check, so a link pointing out of the dataset is refused like ``../..``;
    if no file is found and any lookup led outside the bases, the error says "refused".

    Returns:
        The resolved absolute path of an existing regular file.

    Raises:
        MediaError: URL, NUL byte, no base to resolve against, a path that leads outside
        every base ("refused"), or no such file inside them ("not found").
    """
    shown = safe_text(path)
    if not path or not path.strip():
        raise MediaError("empty media path", expected="a file path relative to the dataset root")
    if "\x00" in path:
        raise MediaError("media path contains a NUL byte", path=shown)
    if _URL.match(path):
        raise MediaError(
            "remote media URLs are not fetched", path=shown, expected="a file path relative to the dataset root"
        )
    norm = path.replace("\\", "/")
    if _WINDOWS_ABS.match(path):
        raise MediaError(
            "absolute media path refused (outside the dataset root and trace folder)",
            path=shown,
            expected="a path relative to the dataset root",
        )
    is_abs = PurePosixPath(norm).is_absolute()
    if not bases:
        raise MediaError(
            "cannot resolve a media path without a trace folder or dataset root",
            path=shown,
            expected="a trace file or --root to resolve against",
        )
    candidates = [Path(norm)] if is_abs else [b / norm for b in bases]
    escaped = False
    for cand in candidates:
        try:
            real = cand.resolve()
        except (OSError, RuntimeError):  # symlink loop, permission
            continue
        if not any(real.is_relative_to(b) for b in bases):
            escaped = True
            continue
        if real.is_file():
            return real
    if escaped:
        what = "absolute media path refused" if is_abs else "media path refused"
        raise MediaError(
            f"{what}: it leads outside the dataset root and trace folder",
            path=shown,
            expected="a file inside " + " or ".join(str(b) for b in bases),
        )
    raise MediaError("media file not found", path=shown, expected="a file under " + " or ".join(str(b) for b in bases))


def resolve_media(
    ref: MediaRef,
    trace_path: str | Path | None = None,
    root: str | Path | None = None,
    *,
    max_bytes: int = MAX_MEDIA_BYTES,
) -> Path | bytes:
    """Where a media reference's bytes are: decoded inline bytes, or a confined path.

    Args:
        ref: the media reference (image, video or frame).
        trace_path: the trace file (its folder is a base) or a folder.
        root: the dataset root (tried first), e.g. ``Trace.source.root``.
        max_bytes: cap on inline data size.

    Returns:
        ``bytes`` for inline ``data``; otherwise the resolved :class:`~pathlib.Path` of
        an existing file inside ``root`` or the trace folder (see :func:`resolve_path`).

    Raises:
        MediaError: neither ``data`` nor ``path``, bad base64, oversize data, or a
        refused / missing path.
    """
    label = safe_text(ref.label or ref.kind)
    if ref.data:
        return decode_inline(ref.data, max_bytes=max_bytes, where=f"inline {label}")
    if ref.path:
        return resolve_path(ref.path, media_bases(trace_path, root))
    raise MediaError(
        f"{ref.kind} reference has neither data nor path", path=label, expected="inline base64 data or a file path"
    )


def read_media_bytes(
    ref: MediaRef,
    trace_path: str | Path | None = None,
    root: str | Path | None = None,
    *,
    max_bytes: int = MAX_MEDIA_BYTES,
) -> bytes:
    """The bytes of a media reference (inline or from its confined file).

    Raises:
        MediaError: as :func:`resolve_media`, or the file is larger than ``max_bytes``
        or unreadable.
    """
    where = resolve_media(ref, trace_path, root, max_bytes=max_bytes)
    if isinstance(where, bytes):
        return where
    return read_file_capped(where, max_bytes=max_bytes)


def read_file_capped(path: Path, *, max_bytes: int = MAX_MEDIA_BYTES) -> bytes:
    """Read a whole file, refusing files over ``max_bytes``. Raises MediaError."""
    try:
        size = path.stat().st_size
        if size > max_bytes:
            raise MediaError(
                f"media file larger than {max_bytes} bytes ({size})", path=path, expected=f"at most {max_bytes} bytes"
            )
        with path.open("rb") as fh:
            data = fh.read(max_bytes + 1)
    except OSError as exc:
        raise MediaError(f"cannot read media file: {exc.strerror or exc}", path=path) from None
    if len(data) > max_bytes:
        raise MediaError(f"media file larger than {max_bytes} bytes", path=path)
    return data


def resolve_for_trace(ref: MediaRef, trace: Trace, *, max_bytes: int = MAX_MEDIA_BYTES) -> Path | bytes:
    """:func:`resolve_media` with the bases a loaded trace knows: ``trace.source.root``
    and the folder of ``trace.source.path``."""
    return resolve_media(ref, trace.source.path, trace.source.root, max_bytes=max_bytes)
