"""Write fresh Inspect AI logs with the installed inspect-ai (a dev dependency), for
tests/test_inspect_zstd.py: ``python -m tests.support.inspect_logs LOG_DIR``.

Two tasks on Inspect's own ``mockllm/model``: ``finished`` (a generate() solver that
answers, scored by ``match``) and ``errored`` (a solver that raises, so the sample ends
with an error). inspect-ai 0.3.x writes ``.eval`` ZIPs whose members are
Zstandard-compressed (ZIP method 93). Run in its own process: importing inspect-ai
patches :mod:`zipfile` (zipfile-zstd), which would hide the very problem tested.

The mock model counts prompt tokens with tiktoken, which downloads its BPE table on first
use; the sandbox has no network, so the count is replaced by a word count (the log
format does not depend on it). Prints one line per log: ``<task> <status> <path>``.
"""

from __future__ import annotations

import sys

from inspect_ai import Task
from inspect_ai import eval as inspect_eval
from inspect_ai.dataset import Sample
from inspect_ai.model._providers.mockllm import MockLLM
from inspect_ai.scorer import match
from inspect_ai.solver import Generate, TaskState, generate, solver


async def _word_count(self: MockLLM, text: str) -> int:
    return max(1, len(text.split()))


MockLLM.count_text_tokens = _word_count  # type: ignore[method-assign]  # no network for tiktoken


@solver
def explode():  # type: ignore[no-untyped-def]
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        raise RuntimeError("the tool exploded")

    return solve


def main(log_dir: str) -> None:
    finished = Task(
        dataset=[Sample(id="s1", input="Say hello.", target="Default output from mockllm/model")],
        solver=[generate()],
        scorer=match(location="any"),
        name="finished",
    )
    errored = Task(
        dataset=[Sample(id="s1", input="Say hello.", target="hello")],
        solver=[explode()],
        scorer=match(),
        name="errored",
    )
    logs = inspect_eval(
        [finished, errored], model="mockllm/model", log_dir=log_dir, display="none", fail_on_error=False
    )
    for log in logs:
        print(log.eval.task, log.status, log.location)


if __name__ == "__main__":
    main(sys.argv[1])
