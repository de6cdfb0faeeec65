"""The user's own coding-agent sessions, found in each tool's default folder (issue 17):
``whenpro sessions [claude|codex|gemini]`` lists them, ``whenpro view --sessions`` opens
them as a library.

Folders (the first that applies):

* Claude Code: setting ``claude_sessions`` (``WHENPRO_CLAUDE_SESSIONS`` or
  ``claude_sessions = "..."`` in config.toml), else ``$CLAUDE_CONFIG_DIR/projects``, else
  ``~/.claude/projects``; sessions are ``<project>/<session>.jsonl`` (their
  ``<session>/subagents/`` files, or older ``agent-*.jsonl`` files beside them, are read
  with them, not listed);
* Codex CLI: ``codex_sessions``, else ``$CODEX_HOME/sessions``, else ``~/.codex/sessions``;
  sessions are ``YYYY/MM/DD/rollout-*.jsonl``;
* Gemini CLI: ``gemini_sessions``, else ``~/.gemini/tmp``; sessions are
  ``<project>/chats/session-*.json`` or ``.jsonl``; ``<project>/.project_root`` names the
  project folder.

Nothing outside those folders is read: the walk does not follow links to folders, and a
file whose real path leaves its folder (a link) is skipped. Rows are newest first (the
file's last change): tool, project, time, first prompt, steps, errors (steps with an
error). A session that fails to import is a row with its one-line error.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from whenpro_core.config import load_settings
from whenpro_core.errors import ConfigError, WhenproError
from whenpro_core.formats.base import summarize
from whenpro_core.formats.registry import error_summary, load_trace
from whenpro_core.safety.textsafe import one_line
from whenpro_core.storage.jsonio import JSONObject
from whenpro_core.trace.model import Trace, TraceSummary
from whenpro_core.trace.usage import total_usage

TOOLS = ("claude", "codex", "gemini")
#: ``tool -> (setting name, the tool's own variable for its home, home below ~, folder in it)``
_DEFAULTS = {
    "claude": ("claude_sessions", "CLAUDE_CONFIG_DIR", ".claude", "projects"),
    "codex": ("codex_sessions", "CODEX_HOME", ".codex", "sessions"),
    "gemini": ("gemini_sessions", None, ".gemini", "tmp"),
}
#: How deep a walk goes below a tool's folder (Codex: YYYY/MM/DD/file).
MAX_DEPTH = {"claude": 1, "codex": 3, "gemini": 2}


@dataclass
class SessionRow:
    """One local session: ``tool``, ``path``, ``project`` (a folder), ``modified`` (UTC: the
    last step's time, else the file's last change),
    ``prompt`` (the first user prompt, one line), ``steps``, ``errors``, the listing
    row ``summary`` (its ``error`` set when the file failed to import), and what the steps
    record of ``tokens`` (in + out) and ``cost_usd`` (``None`` when none records it:
    :func:`whenpro_core.trace.usage.total_usage`)."""

    tool: str
    path: Path
    project: str
    modified: datetime
    prompt: str
    steps: int
    errors: int
    summary: TraceSummary
    tokens: int | None = None
    cost_usd: float | None = None

    @property
    def local_time(self) -> str:
        """``modified`` in local time, ``2026-05-11 13:26`` (the zone: :func:`local_zone`)."""
        return self.modified.astimezone().strftime("%Y-%m-%d %H:%M")


def local_zone() -> str:
    """The local time zone's name as the clock shows it (``CET``, ``UTC``, ``+0530``)."""
    return datetime.now().astimezone().tzname() or datetime.now().astimezone().strftime("%z")


def tool_names(tool: str | None) -> tuple[str, ...]:
    """The tools to list: all of them for ``None``, else the one named (ConfigError for
    another name)."""
    if tool is None:
        return TOOLS
    name = tool.strip().lower()
    if name not in TOOLS:
        raise ConfigError(f"unknown tool {tool!r}", expected=", ".join(TOOLS))
    return (name,)


def session_folder(tool: str) -> Path:
    """The folder holding ``tool``'s sessions (see the module doc); it may not exist."""
    setting, env, home_dir, sub = _DEFAULTS[tool]
    configured = getattr(load_settings(), setting)
    if configured:
        return Path(configured).expanduser()
    if env and os.environ.get(env):
        return Path(os.environ[env]).expanduser() / sub
    return Path.home() / home_dir / sub


def _is_session_name(tool: str, rel: Path) -> bool:
    name = rel.name
    if tool == "claude":  # agent-<id>.jsonl beside a session is an older sub-agent file
        return len(rel.parts) == 2 and name.endswith(".jsonl") and not name.startswith("agent-")
    if tool == "codex":
        return name.startswith("rollout-") and name.endswith(".jsonl")
    return (
        len(rel.parts) == 3
        and rel.parts[1] == "chats"
        and name.startswith("session-")
        and name.endswith((".json", ".jsonl"))
    )


def session_files(tool: str, folder: Path) -> Iterator[Path]:
    """The session files of ``tool`` under ``folder`` (links that leave it are skipped)."""
    if not folder.is_dir():
        return
    real_root = folder.resolve()
    for dirpath, dirnames, filenames in os.walk(folder):  # never follows links to folders
        here = Path(dirpath)
        depth = len(here.relative_to(folder).parts)
        dirnames[:] = sorted(d for d in dirnames if depth < MAX_DEPTH[tool] and not d.startswith("."))
        for name in sorted(filenames):
            path = here / name
            if not _is_session_name(tool, path.relative_to(folder)):
                continue
            try:
                real = path.resolve()
            except OSError:
                continue
            if real.is_relative_to(real_root) and real.is_file():
                yield path


def _project(tool: str, path: Path, folder: Path, trace: Trace | None) -> str:
    extras = trace.extras if trace is not None else {}
    if tool == "claude" and extras.get("cwd"):
        return str(extras["cwd"])
    meta = extras.get("session_meta")
    if tool == "codex" and isinstance(meta, dict) and meta.get("cwd"):
        return str(meta["cwd"])
    if tool == "gemini":
        marker = path.parent.parent / ".project_root"
        if marker.is_file() and marker.resolve().is_relative_to(folder.resolve()):
            try:
                return marker.read_text(encoding="utf-8", errors="replace").strip()[:4096]
            except OSError:
                pass
        return path.parent.parent.name
    return path.parent.name if tool == "claude" else ""


def _parse_time(value: object) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        when = datetime.fromisoformat(value)
    except ValueError:
        return None
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def last_activity(trace: Trace) -> datetime | None:
    """When the session last did something: the latest step timestamp (or a Gemini
    header's ``lastUpdated``), ``None`` when the file records none."""
    times = [t for s in trace.steps if (t := _parse_time(s.meta.get("timestamp"))) is not None]
    header = trace.extras.get("header")
    if isinstance(header, dict) and (t := _parse_time(header.get("lastUpdated"))) is not None:
        times.append(t)
    return max(times, default=None)


def session_row(tool: str, path: Path, folder: Path) -> SessionRow:
    """The row of one session file (an import failure is a row with its error)."""
    try:
        modified = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC)
    except OSError:
        modified = datetime.fromtimestamp(0, tz=UTC)
    try:
        trace: Trace | None = load_trace(path)
    except WhenproError as exc:
        trace = None
        summary = error_summary(path, exc.located(path=path).one_line())
    if trace is None:
        return SessionRow(tool, path, _project(tool, path, folder, None), modified, "", 0, 0, summary)
    usage = total_usage(trace.steps)
    tokens = None if usage.input_tokens is None and usage.output_tokens is None else 0
    return SessionRow(
        tool,
        path,
        _project(tool, path, folder, trace),
        last_activity(trace) or modified,
        one_line(trace.task.query, 120),
        len(trace.steps),
        sum(1 for s in trace.steps if s.error),
        summarize(trace),
        None if tokens is None else (usage.input_tokens or 0) + (usage.output_tokens or 0),
        usage.cost_usd,
    )


def list_sessions(tools: Iterable[str] = TOOLS) -> list[SessionRow]:
    """Every local session of ``tools``, newest first."""
    rows: list[SessionRow] = []
    for tool in tools:
        folder = session_folder(tool)
        rows.extend(session_row(tool, path, folder) for path in session_files(tool, folder))
    rows.sort(key=lambda r: (r.modified, str(r.path)), reverse=True)
    return rows


def folders_line(tools: Iterable[str]) -> str:
    """``claude: <folder>, codex: <folder>`` (what was searched), for an empty listing."""
    return ", ".join(f"{t}: {session_folder(t)}" for t in tools)


def row_record(row: SessionRow) -> JSONObject:
    """A session row as plain data (``whenpro sessions --json``)."""
    return {
        "tool": row.tool,
        "path": str(row.path),
        "project": row.project,
        "modified": row.modified.isoformat(timespec="seconds"),
        "prompt": row.prompt,
        "steps": row.steps,
        "errors": row.errors,
        "tokens": row.tokens,
        "cost_usd": row.cost_usd,
        "id": row.summary.id,
        "error": row.summary.error,
    }


__all__ = [
    "SessionRow",
    "TOOLS",
    "folders_line",
    "list_sessions",
    "row_record",
    "session_files",
    "session_folder",
    "session_row",
    "tool_names",
]
