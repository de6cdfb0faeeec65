"""Typed records kept in ``Trace.extras`` (docs/architecture.md, 'The trace model'): the
injection provenance of a counterfactual (``extras["injection"]``, :class:`Injection`) and
the built-in environment run a trace came from (``extras["env"]``, :class:`EnvRun`).

:func:`whenpro_core.injection.inject.inject` writes the injection record (the seed trace,
the injected step, the generator and executor, the replay statistics, the model usage, the
verification verdict), the build adds the ``control`` replay, and the counterfactual search
(``attribution/counterfactual.py``) writes the same record with ``mode="fix"``.
``envs.base.run_episode`` writes the env record; the injection updates its
``termination``. Read them with :attr:`whenpro_core.trace.model.Trace.injection` and
:attr:`~whenpro_core.trace.model.Trace.env_run`, write them with ``set_injection`` and
``set_env_run``: the saved JSON stays what the record was read from (only the keys that
were present, in field order, unknown keys kept after them), so trace files and datasets
read and write identically.

Everything here comes from files: a read never raises. A record without its identifying
string (``seed_trace``, ``name``) is no record (``None``); a field of the wrong type is left
out, the rest kept.
"""

from __future__ import annotations

from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, ValidationError

#: Keys of ``Trace.extras`` holding the records.
INJECTION_KEY = "injection"
ENV_KEY = "env"


class _Record(BaseModel):
    # extra="allow": keys written by other versions survive a read and a write;
    # coerce_numbers_to_str: a coordinate saved as a number (``"step": 3``) still reads.
    model_config = ConfigDict(extra="allow", coerce_numbers_to_str=True)
    #: The field without which a mapping is no record of this kind (see :meth:`read`).
    ID_FIELD: ClassVar[str] = ""

    def as_json(self) -> dict[str, Any]:
        """The record as ``Trace.extras`` holds it: the keys that were set (read or
        assigned) in field order, then the unknown keys as read."""
        return self.model_dump(exclude_unset=True)

    def without(self, *names: str) -> Self:
        """A copy with the keys ``names`` left out (not even written as ``null``)."""
        return self.model_validate({k: v for k, v in self.as_json().items() if k not in names})

    @classmethod
    def read(cls, data: object) -> Self | None:
        """The record in ``data``, or ``None`` when it is not a mapping whose ``ID_FIELD``
        is a string; fields of the wrong type are dropped, the rest kept."""
        key = cls.ID_FIELD
        if not isinstance(data, dict) or not isinstance(data.get(key), str):
            return None
        fields = dict(data)
        for _ in range(len(cls.model_fields)):  # each round drops at least one bad field
            try:
                return cls.model_validate(fields)
            except ValidationError as exc:
                bad = {e["loc"][0] for e in exc.errors() if e["loc"]}
                if not bad & fields.keys() or key in bad:
                    return None
                fields = {k: v for k, v in fields.items() if k not in bad}
        return None


class ModelUsage(_Record):
    """LLM use of a generator or a simulated continuation, as ``llm.generation.usage_dict``
    writes it (the fields of ``trace.model.Usage``, in its order): ``calls``, tokens in, out
    and served from a prefix cache, ``cost_usd`` (US dollars) and wall-clock ``seconds``."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cost_usd: float = 0.0
    seconds: float = 0.0


class ReplayStats(_Record):
    """The warm-start replay: ``prefix_len`` steps taken from the record, ``new_steps``
    run after the injected one, how it ended (``termination``), tool-cache hits and
    misses, and ``seconds`` of wall-clock time (the build drops it: files are reproducible)."""

    prefix_len: int | None = None
    new_steps: int | None = None
    termination: str | None = None
    tool_cache_hits: int | None = None
    tool_cache_misses: int | None = None
    seconds: float | None = None


class ContinuationRecord(_Record):
    """What a simulated continuation reports (``injection/simulate.py``, fields in its
    order): the ``model``, ``calls`` made of ``max_calls`` allowed, the ``max_steps`` cap,
    its ``usage``, ``simulated_steps`` (tool results the model wrote) and
    ``tool_results_from_record``; its other keys (``recorded_executions``, ``speakers``,
    ``warnings``) are kept after them, as written."""

    model: str | None = None
    calls: int = 0
    max_calls: int | None = None
    max_steps: int | None = None
    usage: ModelUsage | None = None
    simulated_steps: int = 0
    tool_results_from_record: int = 0


class ControlRun(_Record):
    """The build's control: the *unmodified* step replayed through the same executor.
    ``success`` is ``None`` when it could not be told (an executor error, no answer)."""

    success: bool | None = None
    detail: str = ""
    final_answer: str | None = None
    termination: str = ""


class Injection(_Record):
    """Provenance of a counterfactual.

    Attributes:
        seed_trace: id of the seed run.
        seed_ref: where the seed was read (``path`` or ``path#key``; relative in a dataset).
        step, step_index: coordinate and 0-based index of the injected (or corrected) step.
        agent, mode: its agent and the failure-mode code (``fix`` for a correction).
        description: the generator's description of the flaw.
        generator, executor: names (``llm:<model>``, ``template``, ``simulate:<model>``, ...).
        seed: the generator's seed; timestamp: ISO 8601 UTC of the injection.
        replay: :class:`ReplayStats`; usage: the generator's :class:`ModelUsage`.
        generation: the generator's stage outputs (free plain data).
        continuation: :class:`ContinuationRecord` of a simulated continuation.
        verdict: ``injection.verify.Verdict.as_dict()`` (read it with
            ``injection.provenance.verdict_of``).
        control: the build's :class:`ControlRun`.
    """

    ID_FIELD: ClassVar[str] = "seed_trace"

    seed_trace: str
    seed_ref: str | None = None
    step: str | None = None
    step_index: int | None = None
    agent: str | None = None
    mode: str | None = None
    description: str | None = None
    generator: str | None = None
    executor: str | None = None
    seed: int | None = None
    timestamp: str | None = None
    replay: ReplayStats | None = None
    usage: ModelUsage | None = None
    generation: dict[str, Any] | None = None
    continuation: ContinuationRecord | None = None
    verdict: dict[str, Any] | None = None
    control: ControlRun | None = None

    def spent(self) -> ModelUsage:
        """``calls`` and ``cost_usd`` of the generator plus the simulated continuation
        (0 for what is missing)."""
        parts = [self.usage, self.continuation.usage if self.continuation else None]
        used = [u for u in parts if u is not None]
        return ModelUsage(calls=sum(u.calls for u in used), cost_usd=round(sum(u.cost_usd for u in used), 6))


class EnvRun(_Record):
    """The run of a built-in environment (``whenpro run``) a trace records.

    Attributes:
        name: the environment (``arith_team``, ``code_pair``, ...); version: its version.
        seed: the task seed; policy: the agents' policy (``scripted``, ``llm:<model>``, ...).
        task: the task's parameters, as the environment's ``task_from_params`` reads them.
        termination: how the run ended (``final_answer``, ``max_steps``, ...).
        check: the checker's explanation of the outcome (dropped from a counterfactual:
            its verification says instead).
    """

    ID_FIELD: ClassVar[str] = "name"

    name: str
    version: int | str | None = None
    seed: int | None = None
    policy: str | None = None
    task: dict[str, Any] | None = None
    termination: str | None = None
    check: str | None = None


__all__ = [
    "ENV_KEY",
    "INJECTION_KEY",
    "EnvRun",
    "ContinuationRecord",
    "ControlRun",
    "Injection",
    "ModelUsage",
    "ReplayStats",
]
