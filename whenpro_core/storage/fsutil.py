"""Atomic file writes (docs/architecture.md, 'Files whenpro writes': temp file + rename, never a half-written user
file)."""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from whenpro_core.errors import WhenproError


def atomic_write_bytes(path: str | Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically: a temp file in the same folder, fsync,
    then ``os.replace``. Creates missing parent folders. Returns the path.

    Raises WhenproError ("cannot write file: <reason>", naming the path) when the
    folder cannot be created or written ("parent ... is a file" when an ancestor is a
    file), or when ``path`` is not a regular file (a device such as /dev/full, a FIFO:
    never replaced); the original file is then untouched.
    """
    return _atomic_write(Path(path), lambda fh: fh.write(data))


def atomic_copy(src: str | Path, path: str | Path) -> Path:
    """Copy the file ``src`` to ``path`` atomically, streaming (a large video is never
    held in memory); errors as :func:`atomic_write_bytes`, and ``OSError`` when ``src``
    cannot be read."""
    with open(src, "rb") as source:
        return _atomic_write(Path(path), lambda fh: shutil.copyfileobj(source, fh, 1 << 20))


def _atomic_write(path: Path, fill: Callable[[BinaryIO], object]) -> Path:
    if path.exists() and not path.is_file():  # a folder, device, FIFO or socket: never replaced
        raise WhenproError("cannot write file: not a regular file", path=path, expected="a file path")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except (FileExistsError, NotADirectoryError):
        check_can_write_in(path.parent, path=path)  # names the parent that is a file
        raise
    except OSError as exc:
        raise WhenproError(f"cannot write file: {exc.strerror or exc}", path=path) from None
    try:
        os.chmod(tmp, _mode_for(path))
        with os.fdopen(fd, "wb") as fh:
            fill(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise WhenproError(f"cannot write file: {exc.strerror or exc}", path=path) from None
        raise
    return path


def _mode_for(path: Path) -> int:
    """Keep an existing file's permissions; new files get 0o666 minus the umask."""
    try:
        return path.stat().st_mode & 0o7777
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def atomic_write_text(path: str | Path, text: str) -> Path:
    """:func:`atomic_write_bytes` for UTF-8 text."""
    return atomic_write_bytes(path, text.encode("utf-8"))


def check_can_write_in(folder: str | Path, *, path: str | Path | None = None, what: str = "file") -> None:
    """Check, before any long work, that files can be created in ``folder`` (which may
    not exist yet: its nearest existing ancestor must be a writable folder). Creates
    nothing that stays: it probes with a temp file it removes.

    Raises WhenproError naming ``path`` (default: ``folder``): "parent ... is a file"
    when an ancestor is a file, else "cannot write <what>: <reason>".
    """
    folder = Path(folder)
    named = Path(path) if path is not None else folder
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    if not probe.is_dir():
        raise WhenproError(
            f"cannot write {what}: parent {probe} is a file", path=named, expected="a path inside a folder"
        )
    try:  # a real probe: os.access says yes to root in /proc, which then refuses
        fd, tmp = tempfile.mkstemp(prefix=".whenpro-probe.", dir=probe)
        os.close(fd)
        os.unlink(tmp)
    except OSError as exc:
        raise WhenproError(f"cannot write {what}: {exc.strerror or exc}", path=named) from None


def check_output_file(path: str | Path) -> None:
    """Check that ``path`` can name an output FILE: not an existing folder ("is a folder")
    and inside an existing folder ("no such folder", naming the missing parent). A missing
    parent is not made: a typo in a folder name must not leave a new folder behind.

    Raises WhenproError naming the path concerned."""
    path = Path(path)
    if path.is_dir():
        raise WhenproError("is a folder", path=path, expected="a file path")
    parent = path.parent
    if not parent.exists():
        raise WhenproError("no such folder", path=parent, expected=f"an existing folder to write {path.name} in")


def exists(path: str | Path) -> bool:
    """``Path(path).exists()``, but False (never OSError) for a name no file can have:
    a component over the file system's limit (ENAMETOOLONG), a NUL byte..."""
    try:
        return Path(path).exists()
    except (OSError, ValueError):
        return False


#: The longest name :func:`safe_name` gives (file systems take 255 bytes; room is left
#: for suffixes such as ``-2``, ``.json`` or ``.verdicts.jsonl``).
SAFE_NAME_MAX = 150


def safe_name(text: str) -> str:
    """A file-name-safe version of a trace id (or key): runs of characters other than
    letters, digits, ``.``, ``_`` and ``-`` become ``_``; leading/trailing dots and
    underscores are dropped; ``"trace"`` when nothing is left. A name longer than
    :data:`SAFE_NAME_MAX` characters is cut and ends with ``-`` and 16 hex digits of a
    hash of the whole ``text``, so long ids that share a beginning stay distinct."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "trace"
    if len(name) <= SAFE_NAME_MAX:
        return name
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()
    return f"{name[: SAFE_NAME_MAX - 17]}-{digest}"
