"""What an injection at one step can be made of: the failure modes (each with its
taxonomy meaning, and whether the chosen generator can produce it at this step, with the
reason when not), the generators and the executors that apply to a trace. The TUI's
injection dialog shows these; the CLI (``whenpro inject``) enforces the same rules by
raising :class:`~whenpro_core.errors.ConfigError` (docs/architecture.md, 'Injection and warm-start replay' step 1).

Rules:

* a step can be replaced only when it is an agent's step (not the user's task or a system
  message) and not the first step (warm-start replay needs a recorded prefix;
  :func:`~whenpro_core.injection.replay.warm_start`);
* with the ``offline`` generator a mode is available only when its mutator fits the step
  (:func:`~whenpro_core.injection.mutators.applicable_modes`); :data:`FIT_HINTS` says what
  each mutator needs, and modes without a mutator say so;
* with ``text`` (the user's own text) or ``llm`` every mode of the taxonomy is available;
* the ``builtin`` executor only continues runs of the built-in environments
  (:func:`~whenpro_core.envs.env_for_trace`); ``cmd:COMMAND`` and ``simulate`` work on any
  trace; installed ``whenpro.executors`` plugins are listed too.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from whenpro_core.envs import env_for_trace
from whenpro_core.injection.mutators import MUTATORS, applicable_modes
from whenpro_core.injection.registry import plugin_names
from whenpro_core.injection.textedit import is_agent_step
from whenpro_core.trace.model import Trace
from whenpro_core.trace.taxonomy import Taxonomy

#: What each offline mutator needs from a step (the table of :mod:`.mutators`).
FIT_HINTS = {
    "R.1": "needs a one-operator tool expression, a checker's failed-run report, or a number in the content",
    "R.2": "needs an operator (+ - * / >= <= min max) in the tool arguments or the content",
    "R.3": "needs a number in a tool argument or the content",
    "R.4": "needs a number taken from the task, and a task with two or more numbers",
    "PL.1": "needs a numbered plan (a plan step, or three or more numbered lines)",
    "A.1": "needs a tool call with arguments",
    "A.2": "needs a fenced code block with a line ending in ':'",
    "A.3": "needs a step that is neither the last one nor already a final answer",
    "A.4": "needs an earlier, different step by the same agent",
    "C.2": "needs a peer's critique answered by a revision, or a figure taken from a peer",
    "V.2": "needs a verifier-like agent's report of a problem (after its own test run, one where a case passed)",
}
#: Why a mode without an offline mutator is unavailable with the offline generator.
NO_MUTATOR = "no offline mutator: type your own text or use an llm"

#: Generator kinds, in the order a chooser shows them: (kind, label).
GENERATORS = (
    ("offline", "offline mutator"),
    ("text", "type your own text"),
    ("llm", "llm (a model writes the flaw)"),
)


@dataclass(frozen=True)
class ModeChoice:
    """One failure mode as offered for a step: ``code``, ``name``, ``meaning``,
    ``family``; ``available`` with the chosen generator (else ``reason`` says why);
    ``offline`` tells whether the offline mutator fits this step."""

    code: str
    name: str
    meaning: str
    family: str
    available: bool
    reason: str | None
    offline: bool


@dataclass(frozen=True)
class ExecutorChoice:
    """One executor for a trace: ``kind`` (``builtin``, ``cmd``, ``simulate`` or a plugin
    name), a ``label``, whether it needs an ``argument`` (``"command"`` for cmd,
    ``"model"`` for simulate, ``None`` otherwise), ``available`` and, when not, the
    ``reason``."""

    kind: str
    label: str
    argument: str | None
    available: bool = True
    reason: str | None = None

    def spec(self, argument: str = "") -> str:
        """The ``--executor`` value: ``builtin``, ``cmd:COMMAND``, ``simulate[:MODEL]``,
        ``plugin[:ARG]``."""
        argument = argument.strip()
        if self.kind == "cmd":
            return f"cmd:{argument}"
        return f"{self.kind}:{argument}" if argument else self.kind


def injectable_reason(trace: Trace, index: int) -> str | None:
    """Why step ``index`` of ``trace`` cannot be replaced, or ``None`` when it can."""
    if not 0 <= index < len(trace.steps):
        return f"no step #{index} in this trace"
    step = trace.steps[index]
    if not is_agent_step(step):
        who = "the user's task" if step.kind == "user" or step.agent == "user" else f"a {step.kind} message"
        return f"step {step.coord} is {who}, not an agent's step"
    if index < 1:
        return f"step {step.coord} is the first step: warm-start replay needs recorded steps before it"
    return None


def mode_choices(
    trace: Trace,
    index: int,
    generator: str = "offline",
    taxonomy: Taxonomy | None = None,
    *,
    applicable: Iterable[str] | None = None,
) -> list[ModeChoice]:
    """Every mode of ``taxonomy`` (default: built-in) as offered at step ``index`` with
    the generator kind ``generator`` (``offline``, ``text`` or ``llm``; a spec such as
    ``llm:openai:gpt-4.1`` counts by its kind). On a step that cannot be replaced
    (:func:`injectable_reason`) no mode is available. ``applicable`` passes the result of
    :func:`~whenpro_core.injection.mutators.applicable_modes` when it is known already
    (it scans earlier steps: on a long trace, compute it once, off the UI thread)."""
    tax = taxonomy or Taxonomy.builtin()
    kind = generator.split(":", 1)[0].strip() or "offline"
    blocked = injectable_reason(trace, index)
    if blocked is not None:
        fitting: set[str] = set()
    else:
        fitting = set(applicable_modes(trace, index) if applicable is None else applicable)
    out = []
    for fm in tax:
        offline = fm.code in fitting
        if blocked is not None:
            reason: str | None = blocked
        elif kind != "offline" or offline:
            reason = None
        elif fm.code in MUTATORS:
            reason = "the offline mutator " + FIT_HINTS.get(fm.code, "does not apply")
        else:
            reason = NO_MUTATOR
        out.append(ModeChoice(fm.code, fm.name, fm.meaning, fm.family, reason is None, reason, offline))
    return out


def executor_choices(trace: Trace) -> list[ExecutorChoice]:
    """The executors for ``trace``: ``builtin`` (available only for a built-in
    environment's run), ``cmd``, ``simulate``, then installed plugins."""
    env = env_for_trace(trace)
    out = [
        ExecutorChoice(
            "builtin",
            f"builtin ({env.name})" if env is not None else "builtin",
            None,
            available=env is not None,
            reason=None if env is not None else "only for runs of whenpro's built-in environments (whenpro run)",
        ),
        ExecutorChoice("cmd", "cmd (your own framework)", "command"),
        ExecutorChoice("simulate", "simulate (a model plays on)", "model"),
    ]
    out += [ExecutorChoice(name, f"plugin {name}", None) for name in plugin_names()]
    return out


def default_executor(trace: Trace) -> str:
    """``builtin`` for a built-in environment's run, else ``simulate``."""
    return "builtin" if executor_choices(trace)[0].available else "simulate"


__all__ = [
    "FIT_HINTS",
    "GENERATORS",
    "NO_MUTATOR",
    "ExecutorChoice",
    "ModeChoice",
    "default_executor",
    "executor_choices",
    "injectable_reason",
    "mode_choices",
]
