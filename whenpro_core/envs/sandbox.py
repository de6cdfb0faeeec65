"""Run untrusted Python (agent-written code and tests) in a constrained child process.

What :func:`run_python` does, and what it does not:

* a fresh temporary folder is the working directory, ``HOME`` and ``TMPDIR``; it is
  deleted afterwards;
* the interpreter runs isolated (``sys.executable -I -B``: no user site, no ``PYTHON*``
  variables, no script folder on ``sys.path``, no bytecode writes) with a minimal
  environment whose proxy variables are blanked;
* limits are set by a small bootstrap *inside the child*, before the untrusted code runs:
  address space (``RLIMIT_AS``), CPU seconds, size of any written file (also caps the
  captured output), no core dumps. (Setting them in ``preexec_fn`` would be equivalent, but
  ``preexec_fn`` is documented as unsafe when the parent has threads, which the TUI does;
  the child cannot raise a hard limit once set.)
* a wall-clock timeout kills the whole process group (a hang becomes ``timed_out``);
* the network: when ``unshare -n`` (or ``unshare -rn``, an unprivileged user namespace)
  works on this machine the child runs in an empty network namespace; otherwise
  :data:`network_isolation` reports ``"audit-hook only"``;
* an audit hook (:pep:`578`) in the child refuses writes, renames and deletions outside
  the temporary folder, sockets, subprocesses, ``fork``/``exec`` and ``ctypes``.

Audit hooks and rlimits are a guard against *mistaken* code (runaway loops, memory hogs,
stray file writes), not a security boundary against hostile code: code that is written to
escape (e.g. through a C extension) can. Run whenpro inside a container or VM when the code
may be hostile.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

#: Bootstrap run in the child before the untrusted file ``main.py``.
_BOOTSTRAP = textwrap.dedent(r"""
    import os, resource, runpy, sys
    mem, cpu, fsize = (int(v) for v in sys.argv[1:4])
    resource.setrlimit(resource.RLIMIT_AS, (mem, mem))
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    ROOT = os.path.realpath(os.getcwd())
    WRITE_FLAGS = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC

    def _inside(path):
        if isinstance(path, int):
            return True
        try:
            real = os.path.realpath(os.fsdecode(path))
        except (TypeError, ValueError):
            return False
        return real == ROOT or real.startswith(ROOT + os.sep)

    PATH_EVENTS = {"os.remove", "os.rmdir", "os.rename", "os.mkdir", "os.chmod", "os.chown",
                   "os.link", "os.symlink", "os.truncate", "os.utime", "shutil.rmtree",
                   "shutil.move", "shutil.copyfile", "os.chdir"}
    BLOCKED = ("socket.", "subprocess.", "os.system", "os.exec", "os.posix_spawn", "os.spawn",
               "os.fork", "os.forkpty", "pty.", "ctypes.", "os.kill", "os.killpg", "signal.pthread_kill")

    def _hook(event, args):
        if event == "open":
            path, mode, flags = (tuple(args) + (None, None, None))[:3]
            writing = (isinstance(mode, str) and any(c in mode for c in "wax+")) or \
                      (isinstance(flags, int) and flags & WRITE_FLAGS)
            if writing and not _inside(path):
                raise PermissionError(f"sandbox: writing outside the sandbox folder: {path!r}")
        elif event in PATH_EVENTS:
            for arg in args:
                if isinstance(arg, (str, bytes, os.PathLike)) and not _inside(arg):
                    raise PermissionError(f"sandbox: {event} outside the sandbox folder: {arg!r}")
        elif event.startswith(BLOCKED) and event not in ("socket.gethostname",):
            raise PermissionError(f"sandbox: {event} is not allowed")

    sys.addaudithook(_hook)
    sys.argv = ["main.py"]
    runpy.run_path("main.py", run_name="__main__")
""")


@dataclass
class SandboxResult:
    """What a sandboxed run produced.

    Attributes:
        stdout, stderr: captured output, each cut to ``max_output`` characters.
        returncode: the exit status (negative: killed by that signal), ``None`` when it
            timed out.
        timed_out: the time limit was hit (wall clock, or the CPU-time limit of the same
            budget: SIGXCPU) and the process group was killed.
        seconds: wall-clock duration.
    """

    stdout: str
    stderr: str
    returncode: int | None
    timed_out: bool
    seconds: float

    @property
    def ok(self) -> bool:
        """Exited with status 0 in time."""
        return not self.timed_out and self.returncode == 0

    def summary(self, limit: int = 4000) -> str:
        """The text an agent reads: stdout, then (on failure) the last lines of stderr and
        the exit status or the timeout."""
        parts = [self.stdout.rstrip()] if self.stdout.strip() else []
        if self.timed_out:
            parts.append("error: timed out (killed after the time limit)")
        elif self.returncode != 0:
            tail = "\n".join(self.stderr.strip().splitlines()[-6:])
            if tail:
                parts.append(tail)
            parts.append(f"error: exit status {self.returncode}")
        text = "\n".join(parts) or "(no output)"
        return text if len(text) <= limit else text[: limit - 1] + "…"


@lru_cache(maxsize=1)
def _unshare_prefix() -> tuple[str, ...]:
    """``("unshare", "-n")`` or ``("unshare", "-rn")`` when one works here, else ``()``."""
    exe = shutil.which("unshare")
    if not exe:
        return ()
    for flags in ("-n", "-rn"):
        try:
            done = subprocess.run([exe, flags, "true"], capture_output=True, timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if done.returncode == 0:
            return (exe, flags)
    return ()


def network_isolation() -> str:
    """How the network is cut off: ``"network namespace"`` or ``"audit-hook only"``."""
    return "network namespace" if _unshare_prefix() else "audit-hook only"


def _clean_env(folder: str) -> dict[str, str]:
    env = {
        "PATH": os.defpath,
        "HOME": folder,
        "TMPDIR": folder,
        "LANG": "C.UTF-8",
        "PYTHONHASHSEED": "0",
        "no_proxy": "*",
        "NO_PROXY": "*",
    }
    for var in (
        "http_proxy",
        "https_proxy",
        "ftp_proxy",
        "all_proxy",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "FTP_PROXY",
        "ALL_PROXY",
    ):
        env[var] = ""
    return env


def run_python(
    source: str,
    *,
    timeout: float = 5.0,
    memory_mb: int = 256,
    max_output: int = 64_000,
    max_file_mb: int = 4,
    cpu_seconds: float | None = None,
) -> SandboxResult:
    """Run ``source`` as ``main.py`` in a fresh temporary folder under the limits above.

    Args:
        source: Python source text (untrusted).
        timeout: wall-clock seconds before the process group is killed (CPU time is
            limited to ``ceil(timeout)`` too, or to ``ceil(cpu_seconds)`` when given).
        memory_mb: address-space limit; allocations beyond it raise MemoryError.
        max_output: characters of stdout/stderr kept.
        max_file_mb: largest file the code may write (its captured output included).

    Never raises for anything the code does; an OSError starting the interpreter
    propagates.
    """
    folder = tempfile.mkdtemp(prefix="whenpro-sandbox-")
    try:
        Path(folder, "main.py").write_text(source, encoding="utf-8")
        Path(folder, "_bootstrap.py").write_text(_BOOTSTRAP, encoding="utf-8")
        cmd = [
            *_unshare_prefix(),
            sys.executable,
            "-I",
            "-B",
            "_bootstrap.py",
            str(memory_mb * 1024 * 1024),
            str(max(1, int((timeout if cpu_seconds is None else cpu_seconds) + 0.999))),
            str(max_file_mb * 1024 * 1024),
        ]
        out_path, err_path = Path(folder, ".stdout"), Path(folder, ".stderr")
        start = time.monotonic()
        with out_path.open("wb") as out, err_path.open("wb") as err:
            proc = subprocess.Popen(
                cmd,
                cwd=folder,
                env=_clean_env(folder),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                start_new_session=True,
            )
            timed_out = False
            try:
                proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                timed_out = True
            finally:
                _kill_group(proc)
            # the CPU-time limit is the same budget (whole seconds): a busy loop on an idle
            # machine can reach it just before the wall clock does
            timed_out = timed_out or proc.returncode == -signal.SIGXCPU
        seconds = time.monotonic() - start
        return SandboxResult(
            stdout=_read(out_path, max_output),
            stderr=_read(err_path, max_output),
            returncode=None if timed_out else proc.returncode,
            timed_out=timed_out,
            seconds=seconds,
        )
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=5)


def _read(path: Path, limit: int) -> str:
    try:
        with path.open("rb") as fh:
            data = fh.read(limit + 1)
    except OSError:
        return ""
    text = data.decode("utf-8", errors="replace")
    return text if len(text) <= limit else text[:limit] + "\n[output cut]"
