"""The ``cmd:`` executor with the shipped example, with misbehaving executors, on a real
trace, and through the ``whenpro inject`` command line."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from conftest import REPO
from whenpro_core.errors import ReplayError
from whenpro_core.formats import load_trace
from whenpro_core.formats.native import write_trace
from whenpro_core.injection.cmd_executor import CommandExecutor
from whenpro_core.injection.generate import OfflineGenerator
from whenpro_core.injection.inject import inject
from whenpro_core.injection.replay import continued_trace, prefix_matches, warm_start
from whenpro_core.trace.model import Agent, Step, Task, Trace

EXAMPLE = [sys.executable, str(REPO / "examples" / "replay_executor.py")]
QUERY = "Add up these expenses: rent 1200, food 340, travel 85, books 42. What is the total?"


def example(**kw) -> CommandExecutor:
    return CommandExecutor(EXAMPLE, message_timeout=kw.pop("message_timeout", 20), **kw)


@pytest.fixture(scope="module")
def tally_run() -> Trace:
    """A successful run of the example system, recorded through the protocol itself
    (continuing a trace that holds only the user's task)."""
    task_only = Trace(
        id="tally",
        framework="example-tally",
        agents=[Agent(id="user"), Agent(id="adder", role="Adder"), Agent(id="checker", role="Checker")],
        task=Task(query=QUERY, answer="1667"),
        steps=[Step(index=0, coord="0", agent="user", kind="user", content=QUERY)],
    )
    result = warm_start(task_only, 1, None, example())
    return continued_trace(task_only, result)


def test_example_executor_records_a_fresh_successful_run(tally_run):
    assert tally_run.outcome.value == "success" and tally_run.final_answer == "1667"
    assert [s.agent for s in tally_run.steps] == ["user", "adder", "adder", "adder", "adder", "checker"]
    assert all(s.hidden == {} for s in tally_run.steps)


def test_injection_caught_by_the_example_checker(tally_run):
    result = inject(tally_run, 2, "R.3", OfflineGenerator(), example())
    cf = result.counterfactual
    assert prefix_matches(tally_run, cf.steps, 2)
    assert cf.steps[2].meta.get("tool_source") == "executor"  # not recorded: the process ran it
    assert any("start over" in s.content for s in cf.steps[3:])
    assert result.verdict.counterfactual_success and not result.verdict.decisive
    # After the restart the adder's calls match the recording and are served from it.
    assert [s.meta.get("tool_source") for s in cf.steps if s.index > 2 and s.tool_calls].count("cache") >= 3


def test_premature_answer_is_decisive_with_the_example(tally_run):
    result = inject(tally_run, 5, "C.2", OfflineGenerator(), example())  # the checker answers early
    assert result.verdict.decisive and result.counterfactual.final_answer == "1540"
    assert result.counterfactual.ground_truth.agent == "checker"


def test_streaming_from_the_subprocess(tally_run):
    seen = []
    inject(tally_run, 1, "R.3", OfflineGenerator(), example(), on_step=lambda s: seen.append((s.index, s.agent)))
    assert seen[0] == (1, "adder") and seen[-1][1] == "checker"
    assert [i for i, _ in seen] == list(range(1, len(seen) + 1))


def _script(tmp_path, name: str, body: str) -> list[str]:
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return [sys.executable, str(path)]


@pytest.mark.parametrize(
    "name, body, message",
    [
        (
            "crash.py",
            """
        import sys
        sys.stdin.readline()
        print("loading the agents...", file=sys.stderr)
        raise RuntimeError("model weights not found")
        """,
            "exited with status 1 before sending 'done'.*model weights not found",
        ),
        (
            "garbage.py",
            """
        import sys
        sys.stdin.readline()
        print("hello, I am not JSON")
        sys.stdout.flush()
        import time; time.sleep(600)  # longer than the test may run: the error must not wait for it
        """,
            "not JSON.*hello, I am not JSON",
        ),
        (
            "badstep.py",
            """
        import json, sys
        sys.stdin.readline()
        print(json.dumps({"type": "step", "step": {"agent": "a", "content": 5, "bogus": 1}}), flush=True)
        import time; time.sleep(600)
        """,
            "invalid step in message #1",
        ),
        (
            "reported.py",
            """
        import json, sys
        sys.stdin.readline()
        print(json.dumps({"type": "error", "message": "tool server down"}), flush=True)
        """,
            "reported an error: tool server down",
        ),
    ],
    ids=["crash", "garbage", "bad-step", "error-message"],
)
def test_misbehaving_executors_give_a_clear_replay_error(tmp_path, tally_run, name, body, message):
    # message_timeout=600: the error names the executor's fault, never a timeout
    ex = CommandExecutor(_script(tmp_path, name, body), message_timeout=600)
    with pytest.raises(ReplayError, match=message) as info:
        inject(tally_run, 2, "R.3", OfflineGenerator(), ex)
    assert "\n" not in info.value.one_line()


def test_hanging_executor_times_out(tmp_path, tally_run):
    argv = _script(
        tmp_path,
        "hang.py",
        """
        import sys, time
        print("thinking forever", file=sys.stderr, flush=True)
        time.sleep(600)
        """,
    )
    with pytest.raises(ReplayError, match="no message within the 1 s message timeout.*thinking forever"):
        inject(tally_run, 2, "R.3", OfflineGenerator(), CommandExecutor(argv, message_timeout=1))
    with pytest.raises(ReplayError, match="replay timeout"):
        inject(tally_run, 2, "R.3", OfflineGenerator(), CommandExecutor(argv, message_timeout=30), timeout=1)


def test_secrets_in_executor_stderr_are_redacted(tmp_path, tally_run, monkeypatch):
    monkeypatch.setenv("MY_SERVICE_API_KEY", "s3cr3t-value-123456")
    argv = _script(
        tmp_path,
        "leak.py",
        """
        import os, sys
        sys.stdin.readline()
        print("using key", os.environ["MY_SERVICE_API_KEY"], "and sk-abcdefghijklmnopqrstuv", file=sys.stderr)
        sys.exit(3)
        """,
    )
    with pytest.raises(ReplayError) as info:
        inject(tally_run, 2, "R.3", OfflineGenerator(), CommandExecutor(argv, message_timeout=10))
    text = info.value.one_line()
    assert "status 3" in text and "using key [redacted]" in text
    assert "s3cr3t" not in text and "sk-abc" not in text


def test_missing_command_is_a_replay_error(tally_run):
    with pytest.raises(ReplayError, match="cannot start"):
        inject(tally_run, 2, "R.3", OfflineGenerator(), CommandExecutor(["/no/such/executor"]))


@pytest.mark.real_traces
def test_real_trace_goes_through_the_protocol(tmp_path, real_traces):
    """A Who&When run, replayed into a minimal executor that reports what it received."""
    trace = load_trace(real_traces / "who-and-when/Who&When/Hand-Crafted/1.json")
    argv = _script(
        tmp_path,
        "echo.py",
        """
        import json, sys
        start = json.loads(sys.stdin.readline())
        last = start["steps"][-1]
        print(json.dumps({"type": "step", "step": {"agent": "echo", "kind": "final_answer",
              "content": f"{start['prefix_len']} {len(start['steps'])} {last['agent']}"}}), flush=True)
        print(json.dumps({"type": "done", "final_answer": "echo"}), flush=True)
        """,
    )
    index = 3
    result = inject(trace, index, "A.4", OfflineGenerator(), CommandExecutor(argv, message_timeout=20))
    cf = result.counterfactual
    assert cf.steps[-1].content == f"{index} {index + 1} {trace.steps[index].agent}"
    assert prefix_matches(trace, cf.steps, index)
    assert result.verdict.original_success is False and not result.verdict.decisive


def _whenpro(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "whenpro_core.cli", *args], cwd=REPO, capture_output=True, text=True, timeout=120
    )


def test_inject_command_with_the_example_executor(tmp_path, tally_run):
    seed = write_trace(tally_run, tmp_path / "tally.json")
    out = tmp_path / "cf.json"
    cmd = f"cmd:{sys.executable} {REPO / 'examples' / 'replay_executor.py'}"
    done = _whenpro("inject", str(seed), "--step", "5", "--mode", "C.2", "--executor", cmd, "--out", str(out))
    assert done.returncode == 0, done.stderr
    assert "now fails — decisive" in done.stdout and f"wrote {out}" in done.stdout
    assert json.loads(out.read_text())["ground_truth"]["mode"] == "C.2"
    again = _whenpro("inject", str(seed), "--step", "5", "--mode", "C.2", "--executor", cmd, "--out", str(out))
    assert again.returncode == 2 and "--force" in again.stderr
    text = _whenpro(
        "inject",
        str(seed),
        "--step",
        "2",
        "--mode",
        "R.3",
        "--executor",
        cmd,
        "--out",
        str(out),
        "--force",
        "--generator",
        "text:Adding food 340 to the running total 1300.",
    )
    assert text.returncode == 0 and "still succeeds — not decisive" in text.stdout


def test_the_shipped_seed_is_a_current_run_of_the_example(tmp_path, tally_run):
    """examples/expense_tally_seed.json is what the docstring's command needs: a run of the
    example system as it records today (same steps, same answer)."""
    shipped = load_trace(REPO / "examples" / "expense_tally_seed.json")
    assert shipped.outcome.value == "success" and shipped.final_answer == "1667"
    assert [(s.agent, s.content, s.observation) for s in shipped.steps] == [
        (s.agent, s.content, s.observation) for s in tally_run.steps
    ]
    # the command docs/injection.md and the example's docstring give, run from the repository
    out = tmp_path / "cf.json"
    done = _whenpro(
        "inject",
        "examples/expense_tally_seed.json",
        "--step",
        "2",
        "--mode",
        "R.3",
        "--executor",
        f"cmd:{sys.executable} examples/replay_executor.py",
        "--out",
        str(out),
    )
    assert done.returncode == 0, done.stderr
    assert "still succeeds" in done.stdout  # the checker catches the wrong number
