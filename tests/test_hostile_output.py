"""Issue 13, items 3 and 4: what the CLI prints is inert and carries no credentials.

Item 3: a file name (or folder name, or command word) holding terminal escapes
(``ESC ] 52`` writes the clipboard, ``ESC [ 2 J`` clears the screen) must reach stdout and
stderr as visible text, whatever path it takes (error line, table, log record, warning).
Item 4: a base URL with ``user:pw@`` makes the SDK send ``Authorization: Basic ...``; a
server that echoes request headers in its error message must not make whenpro print the
credentials (nor the API key), through the real openai and anthropic SDKs over HTTP.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, SAMPLES
from tests.support.fixtures import TEST_KEY
from tests.support.llm_server import Fault, LLMServer
from whenpro_core.safety.inert_output import inert

HOSTILE = "esc\x1b]52;c;cHduZWQ=\x07\x1b[2J"
#: characters a terminal acts on: ESC, BEL, CSI (C1)
ACTIVE = ("\x1b", "\x07", "\x9b")


def whenpro(*args: str, cwd: Path = REPO, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO), **(env or {})},
    )


def assert_inert(text: str) -> None:
    assert not any(ch in text for ch in ACTIVE), repr(text)


def test_info_on_a_file_named_with_escapes_prints_the_name_inert(tmp_path):
    bad = tmp_path / f"{HOSTILE}.json"
    bad.write_text("{}")
    out = whenpro("info", str(bad))
    assert out.returncode == 2
    assert_inert(out.stderr + out.stdout)
    assert "esc␛]52;c;cHduZWQ=␇␛[2J.json" in out.stderr
    assert out.stderr.count("\n") == 1


def test_info_and_ls_on_a_folder_named_with_escapes(tmp_path):
    folder = tmp_path / HOSTILE
    folder.mkdir()
    (folder / f"{HOSTILE}.json").write_text('{"not": "a trace"}')
    for command in ("info", "ls"):
        out = whenpro(command, str(folder))
        assert_inert(out.stderr + out.stdout)
        assert "␛]52" in out.stderr


def test_a_mistyped_command_with_escapes_is_shown_inert():
    out = whenpro("\x1b[2Jbogus")
    assert out.returncode == 2
    assert_inert(out.stderr)


LOGS_AND_WARNINGS = """
import logging, sys, warnings
from whenpro_core.safety.inert_output import inert_streams
log_file = sys.argv[1]
logging.getLogger("whenpro.file").addHandler(logging.FileHandler(log_file))
with inert_streams():
    logging.getLogger("whenpro.llm").warning("server said %s", "\\x1b]52;c;eA==\\x07 Bearer abcdef123456")
    logging.getLogger("whenpro.file").warning("cache at %s", "/tmp/\\x1b[2J")
    warnings.warn("bad name \\x1b[2J", UserWarning, stacklevel=1)
    print("id \\x1b]8;;http://evil\\x07link\\x1b]8;;\\x07", file=sys.stderr)
"""


def test_logs_and_warnings_go_through_the_same_cleaning(tmp_path):
    log_file = tmp_path / "whenpro.log"
    out = subprocess.run(
        [sys.executable, "-c", LOGS_AND_WARNINGS, str(log_file)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    err = out.stderr
    assert out.returncode == 0, err
    assert_inert(err)
    assert "␛]52" in err and "bad name ␛[2J" in err and "␛]8;;" in err
    assert "abcdef123456" not in err and "Bearer [redacted]" in err
    logged = log_file.read_text()
    assert_inert(logged)
    assert "␛[2J" in logged


def test_colour_sequences_pass_everything_else_is_made_visible():
    assert inert("\x1b[1;31merror\x1b[0m") == "\x1b[1;31merror\x1b[0m"
    assert inert("\x1b[31m\x1b[2J\x1b[0m") == "\x1b[31m␛[2J\x1b[0m"
    assert inert("a\x9b2Jb\u202e") == "a⟨U+009B⟩2Jb⟨U+202E⟩"


def test_error_lines_are_inert_and_redacted_in_every_channel():
    from whenpro_core.errors import TraceFormatError

    err = TraceFormatError("server said: Authorization: Basic dXNlcjpwdw== \x1b[2J", path="a\x1b]0;t\x07.json")
    line = err.one_line()
    assert_inert(line)
    assert "dXNlcjpwdw==" not in line and "[redacted]" in line


# ------------------------------------------------------------------ item 4: credentials

USERINFO = "user:hunter2pw"
BASIC = base64.b64encode(USERINFO.encode()).decode()


def _with_userinfo(url: str) -> str:
    return url.replace("http://", f"http://{USERINFO}@", 1)


@pytest.mark.parametrize(
    ("model", "key_env", "base"),
    [
        ("openai-compatible:qwen3", "OPENAI_API_KEY", "openai_base_url"),
        ("anthropic:claude-sonnet-4-6", "ANTHROPIC_API_KEY", "anthropic_base_url"),
    ],
)
def test_an_echoing_server_cannot_make_whenpro_print_credentials(llm_server: LLMServer, tmp_path, model, key_env, base):
    llm_server.fail(*[Fault.http(500, message=f"boom {TEST_KEY}", echo_auth=True)] * 3)
    url = _with_userinfo(getattr(llm_server, base))
    out = whenpro(
        "attribute",
        str(SAMPLES / "team_text" / "trace.json"),
        "-m",
        model,
        "--base-url",
        url,
        "--timeout",
        "5",
        "--max-retries",
        "1",
        "--no-save",
        env={key_env: TEST_KEY},
    )
    assert out.returncode == 2, out.stderr
    assert llm_server.requests and all(r.fault == "status" for r in llm_server.requests)
    text = out.stdout + out.stderr
    for secret in (BASIC, "hunter2pw", TEST_KEY):
        assert secret not in text, text
    assert "[redacted]" in out.stderr and "HTTP 500" in out.stderr
