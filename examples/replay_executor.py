#!/usr/bin/env python3
"""A working example of a ``cmd:`` replay executor (protocol ``whenpro.replay/1``, see
``docs/replay-protocol.md``): a tiny two-agent "expense tally" system in plain Python,
no whenpro import needed.

The task (step 0, the user) lists expenses such as ``rent 1200, food 340, travel 85``.

* **adder** adds one expense per step with the ``add`` tool, starting from the running
  total it reads in the conversation (the observation of its own latest ``add``, or a total
  it stated in words), and names the expense it adds (``Adding food 340 ...``).
* **checker**, once every expense has been added, recomputes the sum of the expenses of
  the *task* and compares it with the running total: on a mismatch it asks the adder to
  start over, otherwise it gives the final answer (the running total). After two mismatches
  it gives up and reports the running total anyway.

It resumes from whatever steps whenpro sends (the replayed prefix plus the replaced step),
asks whenpro for recorded tool results first (``tool_call``), and runs ``add`` itself when
there is no recorded result. Try it:

    whenpro inject examples/expense_tally_seed.json --step 2 --mode R.3 \
        --executor "cmd:python examples/replay_executor.py"

where examples/expense_tally_seed.json is a successful run of this system (recorded by
replaying from step 1 with no replacement; tests/test_replay_cmd.py checks it stays
current). It continues runs of this system only: given another system's trace it plays
its own agents on that task and the outcome means nothing.
"""

from __future__ import annotations

import json
import re
import sys

EXPENSE = re.compile(r"([a-z]+) (\d+(?:\.\d+)?)")
NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def send(msg: dict) -> None:
    sys.stdout.write(json.dumps(msg) + "\n")
    sys.stdout.flush()


def receive() -> dict:
    line = sys.stdin.readline()
    if not line:
        raise SystemExit("whenpro closed stdin")
    return json.loads(line)


def fmt(x: float) -> str:
    return str(int(x)) if x == int(x) else f"{x:.2f}".rstrip("0").rstrip(".")


def expenses(query: str) -> list[tuple[str, float]]:
    body = query.split(":", 1)[1] if ":" in query else query
    body = body.split("?")[0].split(". ")[0]
    return [(name, float(value)) for name, value in EXPENSE.findall(body)]


def since_restart(steps: list[dict]) -> list[dict]:
    """Steps after the checker's latest request to start over."""
    last = -1
    for i, s in enumerate(steps):
        if s.get("agent") == "checker" and "start over" in (s.get("content") or ""):
            last = i
    return steps[last + 1 :]


def running_total(steps: list[dict]) -> float:
    total = 0.0
    for s in since_restart(steps):
        if s.get("agent") != "adder":
            continue
        if s.get("tool_calls") and s.get("observation") is not None:
            found = NUMBER.findall(s["observation"])
        else:
            found = NUMBER.findall((s.get("content") or "").split("total", 1)[-1])
        if found:
            total = float(found[-1])
    return total


def added(steps: list[dict]) -> set[str]:
    done = set()
    for s in since_restart(steps):
        m = re.match(r"Adding ([a-z]+)", s.get("content") or "") if s.get("agent") == "adder" else None
        if m:
            done.add(m.group(1))
    return done


def call_tool(name: str, arguments: dict, request: int) -> tuple[str, bool]:
    """Ask whenpro for a recorded result; run the tool here when there is none."""
    send({"type": "tool_call", "id": f"r{request}", "calls": [{"name": name, "arguments": arguments}]})
    reply = receive()
    if reply.get("type") != "tool_result":
        raise SystemExit(f"expected tool_result, got {reply.get('type')}")
    if reply.get("hit"):
        return reply.get("observation") or "", True
    return fmt(float(arguments["a"]) + float(arguments["b"])), False


def next_step(query: str, steps: list[dict], request: int) -> dict:
    items = expenses(query)
    done = added(steps)
    todo = [(n, v) for n, v in items if n not in done]
    mismatches = sum(1 for s in steps if s.get("agent") == "checker" and "start over" in (s.get("content") or ""))
    if todo:
        name, value = todo[0]
        total = running_total(steps)
        args = {"a": fmt(total), "b": fmt(value)}
        observation, cached = call_tool("add", args, request)
        return {
            "agent": "adder",
            "kind": "action",
            "content": f"Adding {name} {fmt(value)} to the running total {fmt(total)}.",
            "tool_calls": [{"id": f"call_{len(steps)}", "name": "add", "arguments": args}],
            "observation": observation,
        }
    total = running_total(steps)
    expected = sum(v for _, v in items)
    if abs(total - expected) > 1e-9 and mismatches < 2:
        return {
            "agent": "checker",
            "kind": "assistant",
            "content": f"The expenses sum to {fmt(expected)}, not {fmt(total)}. Adder, please start over.",
        }
    return {"agent": "checker", "kind": "final_answer", "content": f"Final answer: {fmt(total)}"}


def main() -> None:
    start = receive()
    if start.get("type") != "start":
        send({"type": "error", "message": f"expected start, got {start.get('type')}"})
        return
    steps = list(start["steps"])
    query = start["trace"]["task"]["query"]
    if start.get("pending_observation"):
        replaced = steps[-1]
        call = replaced["tool_calls"][0]
        try:
            result = fmt(float(call["arguments"]["a"]) + float(call["arguments"]["b"]))
            send({"type": "observation", "observation": result})
            replaced["observation"] = result
        except (KeyError, TypeError, ValueError) as exc:
            send({"type": "observation", "observation": f"error: {exc}", "error": f"ToolError: {exc}"})
            replaced["observation"] = f"error: {exc}"
    if steps and steps[-1].get("kind") == "final_answer":
        answer = steps[-1]["content"].split(":", 1)[-1].strip()
        send({"type": "done", "final_answer": answer})
        return
    for request in range(1, 60):
        step = next_step(query, steps, request)
        send({"type": "step", "step": step})
        steps.append(step)
        print(f"[example executor] {step['agent']}: {step['content']}", file=sys.stderr)
        if step["kind"] == "final_answer":
            send({"type": "done", "final_answer": step["content"].split(":", 1)[1].strip()})
            return
    send({"type": "done", "final_answer": None, "termination": "max_steps"})


if __name__ == "__main__":
    main()
