"""`paravt.jsonl`: the one writer/reader of every resumed append-only file keeps every whole row
after a kill that tore the last line."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from paravt.jsonl import append_jsonl, ends_torn, read_jsonl, rewrite_jsonl


def test_append_after_a_torn_line_keeps_the_new_row_whole(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    p = tmp_path / "sub" / "log.jsonl"
    append_jsonl(p, [{"id": "a"}, {"id": "b"}])
    with p.open("a") as f:  # a writer killed mid-line
        f.write(json.dumps({"id": "c", "pad": "x" * 50})[:20])
    assert ends_torn(p)
    with caplog.at_level(logging.WARNING, logger="paravt.jsonl"):
        assert [d["id"] for d in read_jsonl(p)] == ["a", "b"]
    assert "skipped 1 line" in caplog.text and "line 3" in caplog.text
    append_jsonl(
        p, [{"id": "c"}]
    )  # the resumed run: without ending the torn line first, "c" would be glued to it
    assert not ends_torn(p)
    assert [d["id"] for d in read_jsonl(p)] == ["a", "b", "c"]


def test_missing_file_blank_lines_and_non_objects(tmp_path: Path) -> None:
    p = tmp_path / "x.jsonl"
    assert read_jsonl(p) == [] and not ends_torn(p)
    p.write_text('{"a": 1}\n\n[1, 2]\n{"a": 2}\n')
    assert read_jsonl(p) == [{"a": 1}, {"a": 2}]


def test_rewrite_replaces_the_file_whole(tmp_path: Path) -> None:
    p = tmp_path / "x.jsonl"
    append_jsonl(p, [{"step": i} for i in range(5)], fsync=False)
    rewrite_jsonl(p, [r for r in read_jsonl(p) if r["step"] < 2])
    assert p.read_text() == '{"step": 0}\n{"step": 1}\n'
    assert not (tmp_path / "x.jsonl.tmp").exists()


def test_rows_with_unicode_line_separators_read_back_whole(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """U+2028, U+2029 and U+0085 are written raw (``ensure_ascii=False``) and are not line ends of
    the format: only "\\n" is (``str.splitlines`` would tear such a row in two and skip it)."""
    p = tmp_path / "rows.jsonl"
    rows = [{"text": "a\u2028b"}, {"text": "c\u0085d"}, {"text": "e\u2029f"}]
    append_jsonl(p, rows)
    with caplog.at_level(logging.WARNING, logger="paravt.jsonl"):
        assert read_jsonl(p) == rows
    assert not caplog.records
    rewrite_jsonl(p, read_jsonl(p)[:2])  # a resume's truncate: the rows it keeps survive
    assert read_jsonl(p) == rows[:2]
    with p.open("a", encoding="utf-8") as f:
        f.write('{"text": "torn\u2028')  # a cut-off last line is still skipped
    assert read_jsonl(p) == rows[:2]
