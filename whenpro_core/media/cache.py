"""On-disk cache of derived media (video keyframes, image thumbnails).

Entries are keyed by the **content** of the source file (sha256 of its bytes) plus the
parameters that produced them, so a renamed or copied video still hits and an edited one
misses. Hashing reads the whole file (about 1 s/GB), which is small next to decoding it
(a 1 GB video is minutes of frames at ~1000 fps); the digest is memoised per process by
(device, inode, size, mtime) so repeated calls on one file hash it once.

Storage is a :class:`diskcache.Cache` (SQLite index + value files; writes are
transactional, so a reader never sees a half-written entry; least-recently-stored
entries are evicted past :data:`SIZE_LIMIT`) in ``<cache root>/media``, where the cache
root is ``$WHENPRO_CACHE_DIR`` or ``platformdirs.user_cache_dir("whenpro")``. Values are
raw bytes (no pickle).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from pathlib import Path
from typing import Any

import orjson
import platformdirs

#: Bump when the layout or meaning of cached values changes.
CACHE_VERSION = 1
#: Evict least-recently-stored entries beyond this many bytes.
SIZE_LIMIT = 512 * 1024 * 1024

_lock = threading.Lock()
_caches: dict[Path, Any] = {}
_digests: dict[tuple[int, int, int, int], str] = {}


def cache_root() -> Path:
    """whenpro's cache folder: ``$WHENPRO_CACHE_DIR`` if set, else the platform user
    cache dir (``~/.cache/whenpro`` on Linux)."""
    env = os.environ.get("WHENPRO_CACHE_DIR")
    if env:
        return Path(env).expanduser()

    return Path(platformdirs.user_cache_dir("whenpro"))


def media_cache_dir() -> Path:
    """The folder of the media cache (``<cache root>/media``)."""
    return cache_root() / "media"


def _open() -> Any:
    import diskcache  # lazy: loaded when a cache is opened

    directory = media_cache_dir()
    with _lock:
        cache = _caches.get(directory)
        if cache is None:
            cache = diskcache.Cache(str(directory), size_limit=SIZE_LIMIT)
            _caches[directory] = cache
        return cache


def file_digest(path: str | Path) -> str:
    """sha256 hex digest of a file's bytes, memoised by (device, inode, size, mtime_ns).

    Raises OSError when the file cannot be read.
    """
    st = os.stat(path)
    memo = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
    with _lock:
        hit = _digests.get(memo)
    if hit is not None:
        return hit
    with open(path, "rb") as fh:
        digest = hashlib.file_digest(fh, "sha256").hexdigest()
    with _lock:
        _digests[memo] = digest
    return digest


def entry_key(namespace: str, digest: str, params: dict[str, Any]) -> str:
    """A cache key for a result derived from content ``digest`` with ``params``
    (JSON-serialisable; key order does not matter)."""
    blob = orjson.dumps(
        {"v": CACHE_VERSION, "ns": namespace, "src": digest, "params": params}, option=orjson.OPT_SORT_KEYS
    )
    return f"{namespace}:{hashlib.sha256(blob).hexdigest()}"


def get_bytes(key: str) -> bytes | None:
    """The cached value for ``key``, or ``None`` (miss, or the cache is unusable)."""
    try:
        value = _open().get(key, default=None, retry=True)
    except Exception:  # a broken or unwritable cache must never break the caller
        return None
    return value if isinstance(value, bytes) else None


def put_bytes(key: str, value: bytes) -> bool:
    """Store ``value`` under ``key``; returns False (and carries on) if the cache
    cannot be written."""
    try:
        return bool(_open().set(key, value, retry=True))
    except Exception:
        return False


def delete(key: str) -> None:
    """Drop one entry (used when a cached value fails to parse)."""
    with contextlib.suppress(Exception):
        _open().delete(key, retry=True)


def pack(header: dict[str, Any], blobs: list[bytes]) -> bytes:
    """Pack a JSON ``header`` and binary ``blobs`` into one cache value:
    ``b"WPMC1\\n"``, 4-byte big-endian header length, orjson header (with the blob
    lengths added as ``_lens``), then the blobs back to back."""
    head = orjson.dumps({**header, "_lens": [len(b) for b in blobs]})
    return b"WPMC1\n" + len(head).to_bytes(4, "big") + head + b"".join(blobs)


def unpack(value: bytes) -> tuple[dict[str, Any], list[bytes]] | None:
    """Inverse of :func:`pack`; ``None`` if ``value`` is not a well-formed pack."""
    try:
        if not value.startswith(b"WPMC1\n"):
            return None
        n = int.from_bytes(value[6:10], "big")
        header = orjson.loads(value[10 : 10 + n])
        pos = 10 + n
        blobs = []
        for length in header.pop("_lens"):
            blobs.append(value[pos : pos + length])
            pos += length
        if pos != len(value):
            return None
        return header, blobs
    except Exception:
        return None
