"""``whenpro watch --otlp --steps`` prints one line per step as spans arrive, as
``whenpro watch FILE --steps`` does (the OTLP receiver announces steps inside
``trace_updated`` events, not as ``step_added``)."""

from __future__ import annotations

import re

from test_live_judge import _endpoint, spawn
from whenpro_core.cli.watch import Printer
from whenpro_core.live.events import TraceStarted, TraceUpdated
from whenpro_core.trace.model import Step, ToolCall

TID = "4bf92f3577b34da6a3ce929d0e0e4736"


def _step(i: int, kind: str = "action", agent: str = "planner", **kw) -> Step:
    return Step(index=i, coord=str(i), agent=agent, kind=kind, content=f"content {i}", **kw)


def test_trace_updates_print_their_steps_with_the_trace_prefix():
    lines: list[str] = []
    printer = Printer(as_json=False, show_steps=True, prefix=True, write=lines.append)
    first = (_step(0, "agent"), _step(1, tool_calls=[ToolCall(name="calc", arguments={"x": 1})]))
    printer(TraceStarted(TID, "/s/t.json", "svc", 2))
    printer(TraceUpdated(TID, "/s/t.json", 2, 0, first))
    printer(TraceUpdated(TID, "/s/t.json", 3, 2, (_step(2, "tool", agent="calc"),)))
    printer(TraceUpdated(TID, "/s/t.json", 4, 1, (_step(1, "agent", agent="root"), _step(2), _step(3))))
    assert lines == [
        "[4bf92f35] trace started (service svc): /s/t.json",
        "[4bf92f35] step 0 [planner] agent: content 0",
        "[4bf92f35] step 1 [planner] action calls calc: content 1",
        "[4bf92f35] step 2 [calc] tool: content 2",
        "[4bf92f35] trace reordered: kept 1 step, now 4",
        "[4bf92f35] step 1 [root] agent: content 1",
        "[4bf92f35] step 2 [planner] action: content 2",
        "[4bf92f35] step 3 [planner] action: content 3",
    ]


def test_without_steps_trace_updates_print_nothing():
    lines: list[str] = []
    printer = Printer(as_json=False, show_steps=False, prefix=True, write=lines.append)
    printer(TraceStarted(TID, "/s/t.json", "svc", 1))
    printer(TraceUpdated(TID, "/s/t.json", 1, 0, (_step(0),)))
    assert lines == ["[4bf92f35] trace started (service svc): /s/t.json"]


def test_watch_otlp_steps_prints_step_lines(tmp_path):
    from tests.support.otel_agent import provider, run_workshop_agent

    proc = spawn("watch", "--otlp", "127.0.0.1:0", "--idle-timeout", "2", "--steps", "--store", str(tmp_path))
    try:
        endpoint = _endpoint(proc)
        tp = provider(endpoint, batch=True)
        trace_id = run_workshop_agent(tp)
        tp.shutdown()
        out, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 1, err
    prefix = f"[{trace_id[:8]}] "
    step_lines = [line for line in out.splitlines() if re.match(re.escape(prefix) + r"step \S+ \[", line)]
    assert len(step_lines) >= 5, out  # the invoke_agent span frames the five steps
    assert any("[planner] action" in line for line in step_lines)
    assert any(line.startswith(prefix + "DECISIVE ERROR") for line in out.splitlines())
