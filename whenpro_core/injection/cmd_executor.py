"""The ``cmd:COMMAND`` executor: the user's own agent framework as a subprocess speaking
JSON lines on stdin/stdout (protocol ``whenpro.replay/1``, ``docs/replay-protocol.md``).

whenpro writes one ``start`` message, answers ``tool_call`` requests from the recorded
results, and collects ``step`` messages until ``done``. Every line the process prints on
stdout must be one JSON object of the protocol (logs go to stderr). Failures become a
:class:`~whenpro_core.errors.ReplayError` carrying the last lines of the process's stderr:
exiting before ``done``, an ``error`` message, a line that is not a protocol message, no
message for ``message_timeout`` seconds, or the whole continuation exceeding the replay's
deadline. The process (and its process group) is always killed at the end.
"""

from __future__ import annotations

import collections
import contextlib
import os
import queue
import shlex
import signal
import subprocess
import threading
import time
from typing import Any

import orjson
from pydantic import ValidationError

from whenpro_core.envs.base import ToolRunner
from whenpro_core.errors import ConfigError, ReplayError
from whenpro_core.injection.executors import Continuation, ReplayContext
from whenpro_core.injection.toolcache import call_key
from whenpro_core.safety.redact import environment_secrets
from whenpro_core.safety.redact import redact as redact_text
from whenpro_core.storage import jsonio
from whenpro_core.trace.model import Step, ToolCall, Trace

PROTOCOL = "whenpro.replay/1"
#: Longest accepted stdout line (bytes).
MAX_LINE = 32 * 1024 * 1024
#: Most steps one continuation may emit.
MAX_STEPS = 2000
_EOF = object()


class CommandExecutor:
    """Runs ``argv`` and speaks ``whenpro.replay/1`` with it.

    Args:
        argv: the command and its arguments (no shell).
        message_timeout: seconds to wait for each message from the process.
        cwd, env: working directory and environment of the process (default: whenpro's).
    """

    def __init__(
        self,
        argv: list[str],
        *,
        message_timeout: float = 60.0,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        if not argv:
            raise ConfigError("empty executor command", expected="--executor cmd:'python my_agents.py'")
        self.argv = argv
        self.message_timeout = message_timeout
        self.cwd = cwd
        self.env = env
        self.name = "cmd:" + shlex.join(argv)

    @classmethod
    def from_spec(cls, command: str, **kwargs: Any) -> CommandExecutor:
        """From the text after ``cmd:`` (split like a POSIX shell, never run by one)."""
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise ConfigError(
                f"cannot parse the executor command: {exc}", expected="--executor cmd:'python my_agents.py --flag'"
            ) from None
        return cls(argv, **kwargs)

    def live_tools(self, trace: Trace) -> ToolRunner | None:
        """``None``: the process runs (or simulates) unmatched tool calls itself."""
        return None

    def continue_run(self, ctx: ReplayContext) -> Continuation:
        session = _Session(self, ctx)
        try:
            return session.run()
        finally:
            session.close()


class _Session:
    """One run of the subprocess (reader threads, writer thread, message loop)."""

    def __init__(self, owner: CommandExecutor, ctx: ReplayContext) -> None:
        self.owner = owner
        self.ctx = ctx
        #: stdout lines (bytes), then _EOF; messages to send, then None (close stdin)
        self.inbox: queue.Queue[object] = queue.Queue()
        self.outbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=12)
        self.served: set[str] = set()
        self.proc: subprocess.Popen[bytes] | None = None
        self.stderr_reader: threading.Thread | None = None

    # --- process plumbing ---------------------------------------------------------------
    def start(self) -> None:
        try:
            self.proc = subprocess.Popen(
                self.owner.argv,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=self.owner.cwd,
                env=self.owner.env,
                start_new_session=True,
            )
        except OSError as exc:
            raise ReplayError(
                f"cannot start the executor command {self.owner.argv[0]!r}: {exc.strerror or exc}",
                expected="an executable command",
            ) from None
        self.stderr_reader = threading.Thread(target=self._read_stderr, daemon=True)
        for thread in (
            threading.Thread(target=self._read_stdout, daemon=True),
            self.stderr_reader,
            threading.Thread(target=self._write_stdin, daemon=True),
        ):
            thread.start()

    def _read_stdout(self) -> None:
        assert self.proc and self.proc.stdout
        try:
            while True:
                line = self.proc.stdout.readline(MAX_LINE + 1)
                if not line:
                    break
                self.inbox.put(line)
        except (OSError, ValueError):
            pass
        self.inbox.put(_EOF)

    def _read_stderr(self) -> None:
        assert self.proc and self.proc.stderr
        stderr = self.proc.stderr
        try:
            for raw in iter(lambda: stderr.readline(64 * 1024), b""):
                text = raw.decode("utf-8", errors="replace").rstrip()
                if text:
                    self.stderr_tail.append(text[:300])
        except (OSError, ValueError):
            pass

    def _write_stdin(self) -> None:
        assert self.proc and self.proc.stdin
        while True:
            msg = self.outbox.get()
            if msg is None:
                break
            try:
                self.proc.stdin.write(jsonio.dumps(msg) + b"\n")
                self.proc.stdin.flush()
            except (OSError, ValueError):
                break
        with contextlib.suppress(OSError, ValueError):
            self.proc.stdin.close()

    def send(self, msg: dict[str, Any]) -> None:
        self.outbox.put(msg)

    def close(self) -> None:
        self.outbox.put(None)
        proc = self.proc
        if proc is None:
            return
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=0.5 if proc.poll() is None else 0)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)
        for stream in (proc.stdout, proc.stderr):
            with contextlib.suppress(OSError):
                stream and stream.close()

    def fail(self, what: str, expected: str | None = None) -> ReplayError:
        if self.proc is not None and self.proc.poll() is not None and self.stderr_reader is not None:
            self.stderr_reader.join(timeout=1.0)  # collect the last lines a crash printed
        tail = redact(" | ".join(self.stderr_tail))
        if tail:
            what += f"; stderr: {tail[-600:]}"
        return ReplayError(f"executor {self.owner.argv[0]!r}: {what}", expected=expected)

    # --- the protocol -------------------------------------------------------------------
    def next_message(self, number: int) -> dict[str, Any]:
        ctx = self.ctx
        wait = min(self.owner.message_timeout, ctx.time_left())
        if wait <= 0:
            raise self.fail("the replay timeout passed", expected="a larger --timeout")
        end = time.monotonic() + wait
        while True:
            remaining = end - time.monotonic()
            if remaining <= 0:
                limit = (
                    "replay timeout" if ctx.time_left() <= 0 else f"{self.owner.message_timeout:g} s message timeout"
                )
                raise self.fail(
                    f"no message within the {limit} (message #{number})", expected="one JSON line per message, flushed"
                )
            try:
                item = self.inbox.get(timeout=min(remaining, 0.2))
                break
            except queue.Empty:
                if ctx.cancelled():
                    raise self.fail("cancelled") from None
        if item is _EOF:
            code = self.proc.wait(timeout=5) if self.proc else None
            raise self.fail(f"exited with status {code} before sending 'done'", expected="a 'done' or 'error' message")
        assert isinstance(item, bytes)  # the stdout reader puts lines and then _EOF
        if len(item) > MAX_LINE:
            raise self.fail(f"message #{number} is longer than {MAX_LINE} bytes")
        try:
            msg = orjson.loads(item)
        except orjson.JSONDecodeError:
            shown = item[:80].decode("utf-8", errors="replace").strip()
            raise self.fail(
                f"printed a line that is not JSON (message #{number}): {shown!r}",
                expected="only protocol messages on stdout (logs on stderr)",
            ) from None
        if not isinstance(msg, dict) or not isinstance(msg.get("type"), str):
            raise self.fail(f"message #{number} has no 'type'", expected='{"type": ...}')
        return msg

    def run(self) -> Continuation:
        ctx = self.ctx
        self.start()
        replaced = ctx.replaced
        pending = (
            replaced is not None
            and bool(replaced.tool_calls)
            and replaced.observation is None
            and replaced.error is None
        )
        self.send(
            {
                "type": "start",
                "protocol": PROTOCOL,
                "trace": ctx.trace.model_dump(mode="json"),
                "prefix_len": ctx.prefix_len,
                "steps": [s.model_dump(mode="json", exclude={"hidden", "raw"}) for s in ctx.steps],
                "replaced_step": replaced.model_dump(mode="json", exclude={"hidden", "raw"}) if replaced else None,
                "pending_observation": pending,
            }
        )
        emitted = 0
        number = 0
        while True:
            number += 1
            msg = self.next_message(number)
            kind = msg["type"]
            if kind == "tool_call":
                self.send(self._tool_result(msg, number))
            elif kind == "observation":
                if not pending or emitted:
                    raise self.fail(
                        f"unexpected 'observation' (message #{number})",
                        expected="'observation' only for a pending replaced step, before any 'step'",
                    )
                assert replaced is not None  # pending: the replaced step waits for its observation
                replaced.observation = _opt_str(msg.get("observation"))
                replaced.error = _opt_str(msg.get("error"))
                replaced.meta["tool_source"] = "executor"
                if msg.get("simulated"):
                    replaced.meta["simulated"] = True
                pending = False
            elif kind == "step":
                step = self._step(msg, number)
                self.ctx.emit(step)
                emitted += 1
                if emitted > MAX_STEPS:
                    raise self.fail(f"more than {MAX_STEPS} steps")
            elif kind == "done":
                final = msg.get("final_answer")
                return Continuation(
                    None if final is None else str(final), str(msg.get("termination") or "final_answer")
                )
            elif kind == "error":
                raise self.fail(f"reported an error: {redact(str(msg.get('message')))[:500]}")
            else:
                raise self.fail(
                    f"unknown message type {kind!r} (message #{number})",
                    expected="tool_call, observation, step, done or error",
                )

    def _tool_result(self, msg: dict[str, Any], number: int) -> dict[str, Any]:
        raw_calls = msg.get("calls")
        if not isinstance(raw_calls, list) or not raw_calls:
            raise self.fail(
                f"'tool_call' without a list of calls (message #{number})",
                expected='{"type": "tool_call", "id": ..., "calls": [{"name": ..., "arguments": ...}]}',
            )
        try:
            calls = [ToolCall.model_validate(c) for c in raw_calls]
        except ValidationError as exc:
            raise self.fail(
                f"bad call in 'tool_call' (message #{number}): {exc.errors()[0]['msg']}",
                expected="calls of {name, arguments}",
            ) from None
        found = self.ctx.cache.get(calls)
        reply: dict[str, Any] = {"type": "tool_result", "id": msg.get("id"), "hit": found is not None}
        if found is not None:
            self.served.add(call_key(calls))
            reply["observation"], reply["error"] = found
        return reply

    def _step(self, msg: dict[str, Any], number: int) -> Step:
        payload = msg.get("step")
        if not isinstance(payload, dict):
            raise self.fail(
                f"'step' without a step object (message #{number})",
                expected='{"type": "step", "step": {"agent": ..., "content": ...}}',
            )
        payload = {k: v for k, v in payload.items() if k not in ("index", "hidden")}
        try:
            step = Step.model_validate({**payload, "index": len(self.ctx.steps)})
        except ValidationError as exc:
            err = exc.errors()[0]
            loc = ".".join(str(p) for p in err["loc"])
            raise self.fail(
                f"invalid step in message #{number} at step.{loc}: {err['msg']}",
                expected="a whenpro step (docs/replay-protocol.md)",
            ) from None
        if step.tool_calls:
            step.meta.setdefault("tool_source", "cache" if call_key(step.tool_calls) in self.served else "executor")
        return step


def redact(text: str) -> str:
    """``text`` with secrets replaced by ``[redacted]``: the values of environment
    variables named like keys, tokens or passwords, and credential-shaped strings
    (:func:`whenpro_core.safety.redact.redact`). Executor stderr is quoted in error messages,
    which must never carry API keys."""
    return redact_text(text, environment_secrets())


def _opt_str(value: Any) -> str | None:
    return None if value is None else str(value)
