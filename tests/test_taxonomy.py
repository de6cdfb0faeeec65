"""The failure-mode taxonomy a judge sees (issue 15): each mode's description whole, with
its notes on neighbouring modes, in whenpro's own requests and in a template's
``taxonomy``; the built-in table's descriptions are whenpro's own, a dataset's own
``taxonomy.yaml`` replaces them."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from conftest import SAMPLES
from whenpro_core.attribution.dry_run import preview
from whenpro_core.attribution.prompts import all_at_once, system_prompt, taxonomy_block
from whenpro_core.attribution.template import load_template, template_messages
from whenpro_core.formats import load_trace
from whenpro_core.trace.taxonomy import Taxonomy, load_taxonomy, taxonomy_for
from whenpro_core.views.transcript import render_transcript

TWO_PARAGRAPHS = """\
X.1:
  name: Made-up mode
  description: 'First sentence of the mode. Second sentence with detail.

    Distinguished from X.2: only the first one is made up.

    '
X.2:
  name: Other mode
  description: ''
"""


def test_the_system_prompt_gives_each_description_whole(tmp_path: Path) -> None:
    path = tmp_path / "taxonomy.yaml"
    path.write_text(TWO_PARAGRAPHS)
    taxonomy = load_taxonomy(path)
    prompt = system_prompt(taxonomy)
    whole = (
        "First sentence of the mode. Second sentence with detail. "
        "Distinguished from X.2: only the first one is made up."
    )
    assert f"- X.1: Made-up mode — {whole}" in prompt.splitlines()
    assert "- X.2: Other mode — Other mode" in prompt.splitlines()  # no description: the meaning (its name)
    assert taxonomy.get("X.1").meaning == "First sentence of the mode."  # the one-liner stays for the UI


_SENTENCE_END = re.compile(r"""[.!?]['")]*(?=\s+[A-Z]|$)""")  # a stop, closing quotes, then a capital
_NOT_NEIGHBOUR = re.compile(r"\bNot ((?:PL|P|R|A|V|C)\.\d)\b")


def test_builtin_descriptions_are_whole_and_name_their_neighbours() -> None:
    builtin = Taxonomy.builtin()
    assert len(builtin) == 17 and len(builtin.by_family()) == 6
    for mode in builtin:
        sentences = len(_SENTENCE_END.findall(mode.description))
        assert 3 <= sentences <= 5, (mode.code, sentences)
        assert mode.description != mode.meaning and mode.meaning not in mode.description, mode.code
        neighbours = _NOT_NEIGHBOUR.findall(mode.description)
        assert neighbours, f"{mode.code} names no neighbouring mode it is not"
        assert all(n in builtin and n != mode.code for n in neighbours), (mode.code, neighbours)
        assert "trace" in mode.description, f"{mode.code} says nothing of how it shows in a trace"


def test_every_request_carries_each_description_whole() -> None:
    builtin = Taxonomy.builtin()
    trace = load_trace(SAMPLES / "team_text" / "trace.json")
    messages = all_at_once(trace, render_transcript(trace), builtin, with_gold=True)
    assert [m.role for m in messages] == ["system", "user"] and "\n<transcript>\n" in messages[1].plain()
    lines = messages[0].plain().splitlines()  # the taxonomy sits in the instructions, before any transcript
    for mode in builtin:
        assert f"- {mode.code}: {mode.name} — {mode.description}" in lines, mode.code


MADE_UP = """\
R.2:
  name: Made-up reasoning slip
  description: "A dataset-specific wording of the slip. It is told apart from X.9 by fiat."
C.3:
  name: Made-up deference
  description: "Deferring to a peer, in this dataset's words."
"""


def test_a_datasets_own_taxonomy_text_is_used_when_present(tmp_path: Path, llm_settings: Any) -> None:
    root = tmp_path / "dataset"
    root.mkdir()
    shutil.copy(SAMPLES / "team_text" / "trace.json", root / "trace.json")
    assert taxonomy_for(root).source == "built-in"  # no taxonomy.yaml yet
    (root / "taxonomy.yaml").write_text(MADE_UP, encoding="utf-8")
    own = taxonomy_for(root)
    assert [m.code for m in own] == ["R.2", "C.3"] and own.source == str(root / "taxonomy.yaml")
    trace = load_trace(root / "trace.json")
    (req,) = preview(trace, "all-at-once", "openai:gpt-4.1", llm_settings())["requests"]
    system = "".join(p["text"] for p in req["messages"][0]["content"] if p["type"] == "text")
    taxonomy = system[system.index("## Failure-mode taxonomy") :].splitlines()[1:]
    assert taxonomy == [
        "- R.2: Made-up reasoning slip — A dataset-specific wording of the slip. It is told apart from X.9 by fiat.",
        "- C.3: Made-up deference — Deferring to a peer, in this dataset's words.",
    ]
    assert Taxonomy.builtin().get("R.2").description not in system


def test_a_templates_taxonomy_is_the_same_block(tmp_path: Path) -> None:
    tpl = tmp_path / "t.j2"
    tpl.write_text("{{ taxonomy }}\n{{ transcript }}")
    trace = load_trace(SAMPLES / "team_text" / "trace.json")
    builtin = Taxonomy.builtin()
    (msg,) = template_messages(load_template(tpl), trace, render_transcript(trace), builtin, with_gold=False)
    assert msg.plain().startswith(taxonomy_block(builtin) + "\n")
