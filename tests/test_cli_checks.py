"""Bad command lines found by a fresh-user test of the CLI: each ends in one line
``whenpro: error: ...`` and exit status 2 (or the documented status), never a traceback,
never a half-done run."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REAL_TRACES, REPO, SAMPLES
from tests.support.cli import run_whenpro

TRACE = str(SAMPLES / "team_text" / "trace.json")
JSONL = REAL_TRACES / "who-when-pro-jsonl" / "data" / "text.jsonl"


whenpro = run_whenpro


def one_line_error(out: subprocess.CompletedProcess, *words: str) -> None:
    """Exit 2, exactly one stderr line starting ``whenpro: error:``, holding ``words``."""
    assert out.returncode == 2, (out.returncode, out.stderr)
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("whenpro: error:"), out.stderr
    for word in words:
        assert word in lines[0], (word, lines[0])


# 1. bench --out / --report-dir that cannot be written: refused before the run


def test_bench_out_under_a_file_is_refused_before_the_run(tmp_path):
    (tmp_path / "somefile.json").write_text("{}")
    out = whenpro("bench", TRACE, "--protocol", "heuristic", "--out", str(tmp_path / "somefile.json" / "x.jsonl"))
    one_line_error(out, "somefile.json", "is a file")
    assert (tmp_path / "somefile.json").read_text() == "{}"


def test_bench_out_in_an_unwritable_place_is_refused_before_the_run():
    out = whenpro("bench", TRACE, "--protocol", "heuristic", "--out", "/proc/x.jsonl")
    one_line_error(out, "/proc/x.jsonl")


def test_bench_report_dir_under_a_file_is_refused_before_the_run(tmp_path):
    (tmp_path / "f").write_text("mine")
    out = whenpro(
        "bench",
        TRACE,
        "--protocol",
        "heuristic",
        "--out",
        str(tmp_path / "r.jsonl"),
        "--report-dir",
        str(tmp_path / "f" / "rep"),
    )
    one_line_error(out, "is a file")
    assert not (tmp_path / "r.jsonl").exists()


# 2. ls and bench take PATH#key (one trace), as info/view/convert/attribute do


def test_ls_lists_the_one_trace_of_a_path_key(real_traces):
    out = whenpro("ls", f"{JSONL}#3")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert len(lines) == 1 and lines[0].split()[0] == f"{JSONL}#3" and "dabench_smolagents_0024" in lines[0]


def test_ls_path_with_an_unknown_key_is_one_line(real_traces):
    one_line_error(whenpro("ls", f"{JSONL}#999"), "text.jsonl")


def test_bench_runs_the_one_trace_of_a_path_key(real_traces, tmp_path):
    out = whenpro("bench", f"{JSONL}#3", "--protocol", "heuristic", "--out", str(tmp_path / "r.jsonl"), "--no-report")
    assert out.returncode == 0, out.stderr
    assert "1 trace × 1 setting = 1 item" in out.stderr
    assert len((tmp_path / "r.jsonl").read_text().splitlines()) == 1


# 3. options that contradict each other are refused, not silently dropped


@pytest.mark.parametrize(
    "args, words",
    [
        (["bench", TRACE, "--both", "--no-gold"], ["--both and --no-gold do not go together"]),
        (["bench", TRACE, "--gold", "--no-gold"], ["--gold and --no-gold do not go together"]),
        (["bench", TRACE, "--no-gold", "--gold"], ["--gold and --no-gold do not go together"]),
        (["bench", TRACE, "--limit", "3", "--sample", "2"], ["--limit and --sample do not go together"]),
        (
            ["attribute", TRACE, "--protocol", "heuristic", "--model", "openai:gpt-4.1"],
            ["--protocol heuristic and --model do not go together", "heuristic uses no model"],
        ),
        (["view", "--no-judge", str(SAMPLES)], ["--no-judge and PATH do not go together", "--follow"]),
        (["view", "--model", "openai:gpt-4.1", TRACE], ["--model and PATH do not go together"]),
    ],
)
def test_conflicting_options_are_one_line(tmp_path, args, words):
    out = whenpro(*args, cwd=tmp_path)
    one_line_error(out, *words)
    assert list(tmp_path.iterdir()) == []  # nothing was run or written


def test_bench_on_a_folder_where_no_file_imports_is_one_line_and_writes_nothing(tmp_path):
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "a.json").write_text("{not json")
    (tmp_path / "bad" / "b.json").write_text('{"x": 1}')
    out = whenpro("bench", "bad", cwd=tmp_path)
    one_line_error(out, "no labelled trace to score in bad: 2 files failed to import", "bad/a.json")
    assert [p.name for p in tmp_path.iterdir()] == ["bad"]


# 4. view --serve on a busy port: one line before "serving on ..."


def test_view_serve_on_a_busy_port_is_one_line():
    import socket

    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        out = whenpro("view", TRACE, "--serve", "--port", str(port))
    one_line_error(out, f"cannot listen on 127.0.0.1:{port}")
    assert "serving on" not in out.stderr


# 5. numbers out of range (and nan) fail at parse time, before any plan or run


@pytest.mark.parametrize(
    "args, option",
    [
        (["inject", TRACE, "--step", "#1", "--mode", "R.3", "--timeout", "-1"], "--timeout"),
        (["inject", TRACE, "--step", "#1", "--mode", "R.3", "--timeout", "nan"], "--timeout"),
        (["inject", TRACE, "--step", "#1", "--mode", "R.3", "--message-timeout", "0"], "--message-timeout"),
        (["bench", TRACE, "--tolerance", "-1"], "--tolerance"),
        (["bench", TRACE, "--concurrency", "0"], "--concurrency"),
        (["bench", TRACE, "--limit", "0"], "--limit"),
        (["bench", TRACE, "--sample", "0"], "--sample"),
        (["report", "r.jsonl", "--tolerance", "-2"], "--tolerance"),
        (["bench", TRACE, "--tolerance", "99999999999999999999"], "--tolerance"),
        (["build", TRACE, "--out", "ds", "--per-seed", "0"], "--per-seed"),
        (["build", TRACE, "--out", "ds", "--concurrency", "0"], "--concurrency"),
        (["build", TRACE, "--out", "ds", "--timeout", "inf"], "--timeout"),
        (["run", "arith_team", "--out", "runs", "--n", "0"], "--n"),
        (["watch", TRACE, "--idle-timeout", "-5"], "--idle-timeout"),
        (["watch", TRACE, "--budget-usd", "nan"], "--budget-usd"),
        (["view", TRACE, "--serve", "--port", "70000"], "--port"),
        (["attribute", TRACE, "--timeout", "nan"], "--timeout"),
        (["keyframes", "v.mp4", "--threshold", "2"], "--threshold"),
        (["keyframes", "v.mp4", "--max-side", "0"], "--max-side"),
    ],
)
def test_numbers_out_of_range_fail_at_parse_time(tmp_path, args, option):
    out = whenpro(*args, cwd=tmp_path)
    assert out.returncode == 2, (out.returncode, out.stderr)
    assert option in out.stderr and "Invalid value" in out.stderr and "Traceback" not in out.stderr
    assert "items" not in out.stderr  # refused before the bench plan
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "args, words",
    [
        (["attribute"], ["Missing argument", "whenpro attribute --help"]),
        (["attribute", TRACE, "--protocol"], ["'--protocol' requires an argument", "whenpro attribute --help"]),
        (["info", TRACE, "--no-such-flag"], ["No such option: --no-such-flag", "whenpro info --help"]),
        (["bench", TRACE, "--tolerance", "-1"], ["Invalid value", "--tolerance", "whenpro bench --help"]),
        (["view", TRACE, "--images", "ascii"], ["Invalid value", "--images"]),
        (["ls", TRACE, "--json", "extra-argument"], ["extra-argument"]),
    ],
)
def test_usage_errors_are_one_line_with_status_2(tmp_path, args, words):
    """typer/click usage errors print as the other errors do: one ``whenpro: error:`` line
    naming the command's --help, no usage block, no rich box."""
    out = whenpro(*args, cwd=tmp_path)
    one_line_error(out, *words)
    assert "Usage:" not in out.stderr and "╭" not in out.stderr and out.stdout == ""


def test_a_usage_error_shows_a_hostile_option_inert(tmp_path):
    out = whenpro("info", TRACE, "--\x1b]0;pwned\x07x", cwd=tmp_path)
    one_line_error(out, "No such option")
    assert "\x1b" not in out.stderr and "\x07" not in out.stderr


def test_bench_empty_where_is_one_line(tmp_path):
    one_line_error(whenpro("bench", TRACE, "--where", "", cwd=tmp_path), "--where")
    assert list(tmp_path.iterdir()) == []


# 6. a closed stdout pipe (| head) ends quietly; watch says which of FILE/--otlp is wrong


def test_watch_into_a_closed_pipe_ends_quietly(tmp_path):
    import json

    from whenpro_core.formats import load_trace

    sample = load_trace(SAMPLES / "team_text" / "trace.json")
    header = {
        "format": "whenpro.trace/1",
        "id": "live-run",
        "framework": sample.framework,
        "task": sample.task.model_dump(),
        "agents": [a.model_dump() for a in sample.agents],
    }
    steps = [s.model_dump(mode="json", exclude={"index", "coord"}) for s in sample.steps]
    lines = [header, *(steps[i % len(steps)] for i in range(3000)), {"id": "live-run", "outcome": "failure"}]
    run = tmp_path / "run.jsonl"
    run.write_text("".join(json.dumps(line) + "\n" for line in lines))
    shell = (
        f"( {sys.executable} -m whenpro_core.cli watch {run} --json --steps "
        f"--idle-timeout 0.5 2>err; echo $? >rc ) | head -3"
    )
    out = subprocess.run(
        ["bash", "-c", shell],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert len(out.stdout.splitlines()) == 3
    assert (tmp_path / "err").read_text() == ""
    assert (tmp_path / "rc").read_text().strip() == "141"


@pytest.mark.parametrize(
    "args, words",
    [
        ([], ["nothing to watch", "give a FILE to follow or --otlp [HOST:PORT]"]),
        (["x.jsonl", "--otlp"], ["FILE and --otlp do not go together"]),
    ],
)
def test_watch_says_which_of_file_and_otlp_is_wrong(tmp_path, args, words):
    out = whenpro("watch", *args, cwd=tmp_path)
    one_line_error(out, *words)
    assert "not both" not in out.stderr


# 7. whenpro --version


def test_version_prints_the_package_version():
    import whenpro_core

    out = whenpro("--version")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == f"whenpro {whenpro_core.__version__}"


def test_bare_whenpro_prints_help_with_clicks_usage_status():
    out = whenpro()
    assert out.returncode == 2  # click >= 8.2: no_args_is_help is a usage error
    assert "Usage: whenpro" in out.stdout + out.stderr and "bench" in out.stdout + out.stderr


# 8. convert: a .json name for many traces, a parent that is a file, a full disk, a device


def test_convert_many_traces_to_a_json_name_is_refused(tmp_path):
    out = whenpro("convert", str(SAMPLES), str(tmp_path / "single.json"))
    one_line_error(out, "single.json", "ends in .json", "traces", "give a folder")
    assert not (tmp_path / "single.json").exists()


def test_convert_under_a_file_says_the_parent_is_a_file(tmp_path):
    (tmp_path / "f").write_text("mine")
    out = whenpro("convert", TRACE, str(tmp_path / "f" / "x.json"))
    one_line_error(out, "x.json", f"parent {tmp_path / 'f'} is a file")
    assert (tmp_path / "f").read_text() == "mine"


def test_convert_never_replaces_a_special_file(tmp_path):
    import os
    import stat

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    out = whenpro("convert", TRACE, str(fifo), "--force")
    one_line_error(out, "pipe", "not a regular file")
    assert stat.S_ISFIFO(fifo.lstat().st_mode)


@pytest.mark.parametrize("args", [["ls", str(SAMPLES)], ["schema"], ["info", TRACE]])
def test_a_full_stdout_is_one_line_naming_stdout(args):
    with open("/dev/full", "w") as full:
        out = subprocess.run(
            [sys.executable, "-m", "whenpro_core.cli", *args],
            cwd=REPO,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            check=False,
        )
    assert out.returncode == 2
    assert out.stderr.strip().splitlines() == ["whenpro: error: stdout: No space left on device"]


# 9. build that keeps no trace exits 1 and says why, keeping the manifest


def test_build_that_keeps_nothing_exits_1_with_the_reasons(tmp_path):
    out = whenpro("build", TRACE, "--out", str(tmp_path / "ds"))  # a failed run: no seed to use
    assert out.returncode == 1, out.stderr
    last = out.stderr.strip().splitlines()[-1]
    assert last.startswith("whenpro: no trace kept") and "not_success 1" in last and "manifest.json" in last
    assert (tmp_path / "ds" / "manifest.json").is_file()


def test_build_that_keeps_nothing_names_seeds_skipped_once(tmp_path):
    """``(seeds skipped: outcome_unknown 4, seeds skipped: trivial 1)``"""
    (tmp_path / "seeds").mkdir()
    doc = json.loads(Path(TRACE).read_text())
    (tmp_path / "seeds" / "failed.json").write_text(json.dumps(doc))
    doc.update(id="unknown", outcome="unknown", ground_truth=None)
    doc["task"]["answer"] = None
    (tmp_path / "seeds" / "unknown.json").write_text(json.dumps(doc))
    out = whenpro("build", str(tmp_path / "seeds"), "--out", str(tmp_path / "ds"))
    last = out.stderr.strip().splitlines()[-1]
    assert out.returncode == 1 and "(seeds skipped: not_success 1, outcome_unknown 1)" in last, out.stderr


def test_build_whose_replays_all_fail_exits_1_with_the_drop_reasons(tmp_path):
    assert whenpro("run", "arith_team", "--n", "1", "--out", str(tmp_path / "runs")).returncode == 0
    out = whenpro(
        "build", str(tmp_path / "runs"), "--out", str(tmp_path / "ds"), "--per-seed", "1", "--executor", "cmd:false"
    )
    assert out.returncode == 1, out.stderr
    # every attempt of the seed run is tried (an attempt that is not kept makes way for the next)
    assert "no trace kept" in out.stderr and re.search(r"\(replay_failed \d+\)", out.stderr)
    assert (tmp_path / "ds" / "manifest.json").is_file()


# 10. report warns (stderr, one line per file) about the lines it skipped


def test_report_warns_about_skipped_lines(tmp_path):
    results = tmp_path / "r.jsonl"
    ran = whenpro("bench", str(SAMPLES), "--protocol", "heuristic", "--out", str(results), "--no-report")
    assert ran.returncode == 0, ran.stderr
    good = results.read_text().splitlines()
    results.write_text("\n".join(["garbage", *good[:2], "{}", *good[2:]]) + "\n")
    out = whenpro("report", str(results), "--out", str(tmp_path / "rep"))
    assert out.returncode == 0, out.stderr
    warnings = [line for line in out.stderr.splitlines() if line.startswith("whenpro: warning:")]
    expected = (
        f"whenpro: warning: {results}: skipped 2 lines that are not whenpro bench records "
        "(lines 1, 4; line 1: not valid JSON)"
    )
    assert warnings == [expected]


def test_report_counts_many_skipped_lines(tmp_path):
    results = tmp_path / "r.jsonl"
    assert whenpro("bench", TRACE, "--protocol", "heuristic", "--out", str(results), "--no-report").returncode == 0
    results.write_text(results.read_text() + "junk\n" * 30)
    out = whenpro("report", str(results), "--out", str(tmp_path / "rep"))
    warnings = [line for line in out.stderr.splitlines() if line.startswith("whenpro: warning:")]
    assert len(warnings) == 1 and "skipped 30 lines" in warnings[0] and "lines 2, 3, 4, 5, 6, …" in warnings[0]


def test_convert_to_dash_writes_one_trace_to_stdout(tmp_path):
    import json

    out = whenpro("convert", TRACE, "-", cwd=tmp_path)
    assert out.returncode == 0 and out.stderr == ""
    doc = json.loads(out.stdout)
    assert doc["format"] == "whenpro.trace/1" and doc["id"] == "sample-workshop-schedule"
    assert not (tmp_path / "-").exists()
    many = whenpro("convert", str(SAMPLES), "-", cwd=tmp_path)
    one_line_error(many, "OUT - (stdout) takes one trace")
    assert not (tmp_path / "-").exists()


def test_convert_to_a_path_ending_in_slash_makes_a_folder(tmp_path):
    out = whenpro("convert", TRACE, str(tmp_path / "newdir") + "/")
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "newdir" / "sample-workshop-schedule.json").is_file()


def test_convert_names_a_trace_whose_id_ends_in_json_once(tmp_path):
    """A trace id taken from a file name keeps its ``.json``: the output was ``run.json.json``."""
    doc = json.loads((SAMPLES / "team_text" / "trace.json").read_text())
    doc["id"] = "run.json"
    (tmp_path / "in.json").write_text(json.dumps(doc))
    out = whenpro("convert", str(tmp_path / "in.json"), str(tmp_path / "out") + "/")
    assert out.returncode == 0, out.stderr
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["run.json"]


def test_dataset_errors_go_to_stderr_one_line_each(tmp_path):
    os.mkfifo(tmp_path / "pipe.json")
    (tmp_path / "cut.json").write_text('{"format": "whenpro.trace/1", "id": "x", "steps": [')
    (tmp_path / "ok.json").write_bytes((SAMPLES / "team_text" / "trace.json").read_bytes())
    for command in (("info", str(tmp_path)), ("ls", str(tmp_path)), ("ls", str(tmp_path / "*.json"))):
        out = whenpro(*command)
        assert out.returncode == 0, out.stderr
        lines = out.stderr.splitlines()
        assert len(lines) == 2 and all(line.startswith("whenpro: warning: ") for line in lines), lines
        assert "not a regular file (a named pipe)" in out.stderr and "whenpro: warning" not in out.stdout


# 11. --where typos: a value outside a fixed set, ``==`` and empty terms are errors


@pytest.mark.parametrize(
    ("where", "words"),
    [
        ("modality=imag", ("unknown --where value", "'imag'", "text, image, video")),
        ("outcome=failed", ("unknown --where value", "'failed'", "success, failure, unknown")),
        ("mode=Z.9", ("unknown --where value", "'Z.9'", "R.3")),
        ("modality==image", ("bad --where term",)),
        ("modality=image,,", ("empty --where term",)),
        ("modality=image|", ("bad --where term",)),
    ],
)
def test_ls_where_typo_is_one_line_error(where, words):
    one_line_error(whenpro("ls", str(SAMPLES), "--where", where, "--labels"), *words)


def test_bench_where_typo_is_refused_before_the_run(tmp_path):
    out = whenpro(
        "bench", str(SAMPLES), "--protocol", "heuristic", "--out", str(tmp_path / "r.jsonl"), "--where", "mode=Z.9"
    )
    one_line_error(out, "unknown --where value")
    assert not (tmp_path / "r.jsonl").exists()


def test_where_known_values_still_match_case_insensitively():
    out = whenpro("ls", str(SAMPLES), "--where", "mode=r.3,outcome=FAILURE", "--labels")
    assert out.returncode == 0 and out.stdout.strip(), out.stderr
    assert all("/R.3" in line for line in out.stdout.splitlines())


# 12. inject: an error located inside the trace names the trace file


def test_inject_into_a_trace_of_no_builtin_env_names_the_file(tmp_path):
    out = whenpro("inject", TRACE, "--step", "3", "--mode", "r.3", "--out", str(tmp_path / "cf.json"))
    one_line_error(out, f"{TRACE} at $.extras.env.name:", "built-in environments")
    assert not (tmp_path / "cf.json").exists()


# 13. an output FILE in a missing folder, or an output file that is a folder


def test_convert_to_a_file_in_a_missing_folder_makes_nothing(tmp_path):
    out = whenpro("convert", TRACE, str(tmp_path / "nodir" / "out.json"))
    one_line_error(out, str(tmp_path / "nodir"), "no such folder")
    assert list(tmp_path.iterdir()) == []


def test_export_html_in_a_missing_folder_makes_nothing(tmp_path):
    out = whenpro("export", TRACE, "--html", str(tmp_path / "nodir" / "x.html"))
    one_line_error(out, str(tmp_path / "nodir"), "no such folder")
    assert list(tmp_path.iterdir()) == []


def test_export_html_to_a_folder_says_it_is_a_folder(tmp_path):
    (tmp_path / "adir").mkdir()
    out = whenpro("export", TRACE, "--html", str(tmp_path / "adir"))
    one_line_error(out, "adir", "is a folder (expected a file path)")
    assert "exists" not in out.stderr
    assert list((tmp_path / "adir").iterdir()) == []


# 14. the injection example of docs/injection.md runs as written: tests/test_docs_commands.py


# 15. bench --protocol counterfactual runs offline on built-in systems, as attribute does


def test_bench_counterfactual_runs_offline_on_builtin_systems(tmp_path):
    import json

    res = tmp_path / "r.jsonl"
    out = whenpro("bench", str(SAMPLES / "arith_team"), "--protocol", "counterfactual", "--out", str(res))
    assert out.returncode == 0, out.stderr
    records = [json.loads(line) for line in res.read_text().splitlines() if line.strip()]
    assert records and all(r["protocol"] == "counterfactual" and r["model"] == "offline" for r in records)
    assert all(r.get("error") is None for r in records), records
    assert any(r["prediction"]["step"] for r in records)  # a verdict came from replays, not nothing


def test_errors_located_in_fills_the_file_only_of_errors_inside_the_trace():
    from whenpro_core.errors import ReplayError, WhenproError, errors_located_in

    with pytest.raises(ReplayError) as inside, errors_located_in("t.json"):
        raise ReplayError("not a built-in run", json_path="$.extras.env.name")
    assert str(inside.value) == "t.json at $.extras.env.name: not a built-in run"
    with pytest.raises(WhenproError) as other, errors_located_in("t.json"):
        raise WhenproError("executor crashed")  # not located in the trace: no file added
    assert str(other.value) == "executor crashed"
    with pytest.raises(WhenproError) as own, errors_located_in("t.json"):
        raise WhenproError("bad", path="cmd.py", json_path="$.x")  # its own file stays
    assert str(own.value).startswith("cmd.py at $.x")


# offline counterfactual over a folder: a trace it cannot replay is that trace's error


def test_offline_counterfactual_bench_goes_on_past_a_trace_it_cannot_replay(tmp_path):
    """A folder holding a built-in system's run and a foreign trace: the run is attributed
    by offline replay, the foreign trace gets an error record naming what it needs, and the
    bench is not stopped by it."""
    import json
    import shutil

    data = tmp_path / "data"
    shutil.copytree(SAMPLES / "arith_team", data / "arith_team")
    shutil.copytree(SAMPLES / "team_text", data / "team_text")
    out = whenpro("bench", str(data), "--protocol", "counterfactual", "--out", str(tmp_path / "r.jsonl"), "--no-report")
    assert out.returncode == 0, out.stderr
    records = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    failed = [r for r in records if r.get("error")]
    done = [r for r in records if not r.get("error")]
    assert done and all(r["prediction"] for r in done)
    assert len(failed) == 1 and "not a run of a built-in system" in failed[0]["error"]
    assert "--model" in failed[0]["error"]


def test_report_on_a_trace_is_one_error_line():
    one_line_error(whenpro("report", TRACE), "no benchmark records found", "whenpro bench it first")


def test_run_with_a_huge_n_is_one_line_and_writes_nothing(tmp_path):
    """A mistyped count was planned file by file before the first run (17 GB, no output)."""
    out = whenpro("run", "arith_team", "--n", "99999999999999999999", "--out", str(tmp_path / "runs"), cwd=tmp_path)
    one_line_error(out, "--n must be 1 to 100000")
    assert not (tmp_path / "runs").exists() and "first seed" not in out.stdout  # said before the error
