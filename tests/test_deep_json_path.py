"""JSON nested past :data:`~whenpro_core.storage.jsonio.MAX_DEPTH` levels: the one error
line names the JSON path of the container where the limit was passed."""

from __future__ import annotations

from support.cli import one_line_error, run_whenpro
from whenpro_core.storage import jsonio


def test_path_where_the_depth_limit_is_passed():
    text = b'{"a": [1, {"b\\"": [[]]}], "c": {"d": [0, 0, [[[]]]]}}'
    assert jsonio.path_past_depth(text, 3) == '$.a[1]["b\\""]'
    assert jsonio.path_past_depth(text, 4) == '$.a[1]["b\\""][0]'
    assert jsonio.path_past_depth(text, 5) == "$.c.d[2][0][0]"
    assert jsonio.path_past_depth(text, 6) is None
    assert jsonio.path_past_depth(b"[" * 10 + b"]" * 10, 8) == "$([0] x8)"


def test_info_on_json_1100_levels_deep_names_the_path(tmp_path):
    p = tmp_path / "deep1100.json"
    p.write_text('{"steps": ' + "[" * 1100 + "]" * 1100 + "}")
    out = run_whenpro("info", str(p))
    assert one_line_error(out), out.stderr
    assert "nested more than 1024 levels" in out.stderr
    assert "at $.steps([0] x1023)" in out.stderr
