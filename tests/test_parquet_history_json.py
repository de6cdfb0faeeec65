"""A Parquet row whose ``history`` is a JSON string that does not parse: the error says
the string does not parse, where in it, and at which row and column."""

from __future__ import annotations

import pytest

from whenpro_core.errors import TraceFormatError
from whenpro_core.formats import load_trace, walk

pa = pytest.importorskip("pyarrow", reason="the parquet extra (pyarrow) is not installed")
pq = pytest.importorskip("pyarrow.parquet")


def test_history_json_string_that_does_not_parse_says_so(tmp_path):
    good = '[{"name": "human", "role": "user", "content": "hi"}, {"name": "A", "role": "assistant", "content": "x"}]'
    p = tmp_path / "rows.parquet"
    table = pa.table(
        {"history": [good, '[{"role": "user", "content": '], "mistake_agent": ["A", "A"], "mistake_step": ["1", "1"]}
    )
    pq.write_table(table, p)
    rows = list(walk(p))
    assert rows[0].error is None
    assert "history" in rows[1].error and "JSON string does not parse" in rows[1].error
    assert "wrong type" not in rows[1].error and "line 1 column" in rows[1].error
    with pytest.raises(TraceFormatError) as info:
        load_trace(f"{p}#2")
    assert info.value.json_path == "$.history" and info.value.row == 2
