"""Write the text and image sample traces of ``sample_traces/`` (deterministic).

Run from the repository root: ``python sample_traces/make_samples.py``. The traces are
written for this project (not copied from any dataset); each is a failed run with a
labelled decisive error, in whenpro's native format.
"""

from __future__ import annotations

from pathlib import Path

from whenpro_core.formats.native import write_trace
from whenpro_core.trace.model import (
    Agent,
    GroundTruth,
    MediaRef,
    Modality,
    Outcome,
    Source,
    Step,
    Task,
    ToolCall,
    Trace,
)

HERE = Path(__file__).resolve().parent


def _steps(rows: list[dict]) -> list[Step]:
    return [Step(index=i, coord=str(i), **row) for i, row in enumerate(rows)]


def text_sample() -> Trace:
    """A planner / solver / verifier / reporter team scheduling a workshop. The solver
    multiplies the breaks wrongly at step 3 (R.3); the verifier only re-checks the
    sessions, and the wrong end time reaches the final answer."""
    query = (
        "A workshop starts at 09:10. It has 3 sessions of 45 minutes each and a "
        "15-minute break after each of the first two sessions. At what time does it end? "
        "Answer as HH:MM."
    )
    steps = _steps(
        [
            dict(agent="user", kind="user", content=query),
            dict(
                agent="planner",
                kind="plan",
                content=(
                    "Plan:\n1. solver: total session time = sessions x 45 min.\n"
                    "2. solver: total break time = breaks x 15 min.\n"
                    "3. verifier: check both totals.\n4. solver: add the total to 09:10.\n"
                    "5. reporter: state the end time as HH:MM."
                ),
            ),
            dict(
                agent="solver",
                kind="action",
                content="Session time first.",
                tool_calls=[ToolCall(id="c1", name="calculator", arguments={"expression": "3 * 45"})],
                observation="135",
            ),
            dict(
                agent="solver",
                kind="action",
                content=(
                    "There are 2 breaks of 15 minutes, so the breaks take 2 * 15 = 20 minutes. Total time is 135 + 20."
                ),
                tool_calls=[ToolCall(id="c2", name="calculator", arguments={"expression": "135 + 20"})],
                observation="155",
            ),
            dict(
                agent="verifier",
                kind="assistant",
                content=(
                    "Checked: 3 sessions x 45 minutes = 135 minutes. Correct. "
                    "The total of 155 minutes looks plausible; approved."
                ),
            ),
            dict(
                agent="solver",
                kind="action",
                content="Adding 155 minutes to 09:10.",
                tool_calls=[ToolCall(id="c3", name="clock_add", arguments={"start": "09:10", "minutes": 155})],
                observation="11:45",
            ),
            dict(agent="reporter", kind="final_answer", content="The workshop ends at 11:45."),
        ]
    )
    return Trace(
        id="sample-workshop-schedule",
        framework="whenpro-team",
        benchmark="sample",
        modality=Modality.text,
        agents=[
            Agent(id="user", role="User"),
            Agent(id="planner", role="Planner"),
            Agent(id="solver", role="Solver (calculator, clock)"),
            Agent(id="verifier", role="Verifier"),
            Agent(id="reporter", role="Reporter"),
        ],
        task=Task(query=query, answer="11:55"),
        steps=steps,
        ground_truth=GroundTruth(
            agent="solver",
            step="3",
            step_index=3,
            mode="R.3",
            reason="2 breaks x 15 minutes is 30 minutes, not 20; every later time is 10 minutes early.",
        ),
        final_answer="11:45",
        outcome=Outcome.failure,
        source=Source(format="native"),
    )


def _bar_chart(path: Path) -> None:
    import cv2
    import numpy as np

    months = ["Jan", "Feb", "Mar", "Apr", "May"]
    values = [40, 55, 70, 65, 30]
    img = np.full((240, 360, 3), 255, np.uint8)
    cv2.line(img, (40, 200), (340, 200), (0, 0, 0), 2)
    cv2.line(img, (40, 20), (40, 200), (0, 0, 0), 2)
    for tick in range(0, 81, 20):
        y = 200 - tick * 2
        cv2.putText(img, str(tick), (8, y + 4), cv2.FONT_HERSHEY_SIMPLEX, 0.35, (0, 0, 0), 1)
        cv2.line(img, (38, y), (340, y), (220, 220, 220), 1)
    colours = [(200, 120, 60), (60, 160, 60), (60, 60, 200), (160, 60, 160), (60, 160, 200)]
    for i, (month, value) in enumerate(zip(months, values, strict=False)):
        x = 60 + i * 56
        cv2.rectangle(img, (x, 200 - value * 2), (x + 36, 200), colours[i], -1)
        cv2.putText(img, month, (x + 2, 220), cv2.FONT_HERSHEY_SIMPLEX, 0.45, (0, 0, 0), 1)
    cv2.putText(img, "Units sold per month", (110, 16), cv2.FONT_HERSHEY_SIMPLEX, 0.45, (0, 0, 0), 1)
    cv2.imwrite(str(path), img, [cv2.IMWRITE_PNG_COMPRESSION, 9])


def image_sample(folder: Path) -> Trace:
    """A describer / analyst pair reading a bar chart. The describer misreads the March
    bar (P.1) and the analyst picks the wrong month."""
    folder.mkdir(parents=True, exist_ok=True)
    _bar_chart(folder / "chart.png")
    query = "Using the chart, which month sold the most units?"
    steps = _steps(
        [
            dict(
                agent="user",
                kind="user",
                content=query,
                media=[MediaRef(kind="image", path="chart.png", mime="image/png", label="chart")],
            ),
            dict(
                agent="describer",
                kind="assistant",
                content=("Reading the bars against the gridlines: Jan 40, Feb 55, Mar 45, Apr 65, May 30."),
            ),
            dict(
                agent="analyst",
                kind="assistant",
                content=("From the describer's readings the maximum is Apr with 65 units."),
            ),
            dict(agent="analyst", kind="final_answer", content="Apr"),
        ]
    )
    return Trace(
        id="sample-bar-chart",
        framework="whenpro-team",
        benchmark="sample",
        modality=Modality.image,
        agents=[
            Agent(id="user", role="User"),
            Agent(id="describer", role="Chart describer"),
            Agent(id="analyst", role="Analyst"),
        ],
        task=Task(
            query=query,
            answer="Mar",
            images=[MediaRef(kind="image", path="chart.png", mime="image/png", label="chart")],
        ),
        steps=steps,
        ground_truth=GroundTruth(
            agent="describer",
            step="1",
            step_index=1,
            mode="P.1",
            reason="The March bar reaches 70 on the axis, not 45; the analyst relies on the misreading.",
        ),
        final_answer="Apr",
        outcome=Outcome.failure,
        source=Source(format="native"),
    )


def main() -> None:
    """Write ``team_text/trace.json`` and ``bar_chart/trace.json`` (+ ``chart.png``)."""
    write_trace(text_sample(), HERE / "team_text" / "trace.json")
    folder = HERE / "bar_chart"
    write_trace(image_sample(folder), folder / "trace.json")


if __name__ == "__main__":
    main()
