"""``--model local:PATH.gguf`` / ``local:smollm2`` without starting a server: names,
endpoints and the one-line errors of a model file that cannot be served (the real server is
exercised by tests/test_real_model.py)."""

from __future__ import annotations

from tests.conftest import team_trace
from tests.support.cli import run_whenpro
from whenpro_core.formats.native import write_trace
from whenpro_core.llm.endpoints import resolve_endpoint
from whenpro_core.llm.models import parse_model, reads_images


def test_local_names_parse_as_chat_models_that_read_text():
    spec = parse_model("local:smollm2")
    assert spec is not None and (spec.provider, spec.model, spec.api) == ("local", "smollm2", "chat")
    path = parse_model("local:/models/qwen2.5-0.5b-instruct-q4_k_m.gguf")
    assert path is not None and path.model == "/models/qwen2.5-0.5b-instruct-q4_k_m.gguf"
    assert not reads_images(spec)


def test_a_local_model_with_a_base_url_uses_that_server(llm_settings):
    spec = parse_model("local:smollm2")
    assert spec is not None
    ep = resolve_endpoint(spec, llm_settings("local:smollm2", base_url="http://127.0.0.1:9/v1"))
    assert (ep.base_url, ep.base_url_source, ep.api_key) == ("http://127.0.0.1:9/v1", "base_url", None)
    assert resolve_endpoint(spec, llm_settings("local:smollm2")).base_url_source == "started for the run"


def test_a_missing_or_foreign_model_file_is_one_line(tmp_path):
    trace = write_trace(team_trace(), tmp_path / "t.json")
    missing = run_whenpro("attribute", str(trace), "--model", f"local:{tmp_path / 'none.gguf'}")
    assert missing.returncode == 2 and "no such model file" in missing.stderr
    assert missing.stderr.strip().count("\n") == 0
    foreign = tmp_path / "model.gguf"
    foreign.write_bytes(b"PK\x03\x04 not a model")
    wrong = run_whenpro("attribute", str(trace), "--model", f"local:{foreign}")
    assert wrong.returncode == 2 and "not a GGUF model file" in wrong.stderr and str(foreign) in wrong.stderr
