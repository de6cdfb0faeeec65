"""The sandbox that runs agent-written code: limits hold and nothing hangs."""

from __future__ import annotations

from whenpro_core.envs.code_pair import run_tests_code
from whenpro_core.envs.sandbox import network_isolation, run_python


def test_ordinary_code_runs():
    result = run_python("print(sum(range(10)))")
    assert result.ok and result.stdout.strip() == "45"


def test_infinite_loop_times_out_and_is_killed():
    result = run_python("while True:\n    pass\n", timeout=1.0)  # ends only if killed
    assert result.timed_out and result.returncode is None
    assert "timed out" in result.summary()


def test_memory_hog_is_stopped():
    result = run_python("x = bytearray(3 * 1024 ** 3)\nprint('allocated')", memory_mb=200)
    assert not result.ok and "allocated" not in result.stdout
    assert "MemoryError" in result.stderr or result.returncode < 0


def test_file_writes_stay_in_the_temporary_folder(tmp_path):
    outside = tmp_path / "escaped.txt"
    code = (
        "open('inside.txt', 'w').write('ok')\nprint(open('inside.txt').read())\n"
        f"open({str(outside)!r}, 'w').write('no')\n"
    )
    result = run_python(code)
    assert result.stdout.strip() == "ok"
    assert "PermissionError" in result.stderr and not outside.exists()


def test_network_and_subprocesses_are_refused():
    result = run_python("import socket\ns = socket.socket()\ns.connect(('127.0.0.1', 9))\n")
    assert not result.ok and "not allowed" in result.stderr
    result = run_python("import subprocess\nsubprocess.run(['true'])\n")
    assert not result.ok and "not allowed" in result.stderr
    assert network_isolation() in ("network namespace", "audit-hook only")


def test_huge_output_is_capped():
    result = run_python("print('x' * 5_000_000)", max_output=1000)
    assert len(result.stdout) < 1100


def test_a_test_run_that_waited_for_a_busy_machine_is_run_again(monkeypatch):
    """A code_pair test run that timed out by the wall clock without using its CPU time
    (here: it sleeps; on a loaded machine: it waits to be scheduled) is run again with
    more wall-clock time: a made-up timeout turned a passing counterfactual into a
    decisive label. Code that keeps running still times out."""
    monkeypatch.setenv("WHENPRO_SANDBOX_TIMEOUT", "1")
    slow = run_tests_code("import time\ntime.sleep(1.5)\nprint('PASS f(1) == 1')")
    assert not slow.timed_out and slow.ok and "PASS" in slow.stdout
    busy = run_tests_code("while True:\n    pass")
    assert busy.timed_out and not busy.ok
