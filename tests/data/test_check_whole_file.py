"""Issue 48 item 11: `paravt data check` judges the file, not only each row. A parquet whose rows
are written twice is refused (how many ids, which ones), and a parquet without one of the schema's
columns (``SCHEMA`` of paravt/data/schema.py, the one source of truth) is refused naming it, by
`data check` and by every reader (an SFT file with no ``videos`` column used to train)."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from paravt.cli import app
from paravt.data.schema import SCHEMA, check_columns, read_rows
from paravt.errors import DataError


def _first_rows(src: Path, n: int) -> pa.Table:
    return pq.read_table(str(src)).slice(0, n)


def test_rows_written_twice_are_refused_naming_the_ids(synth_dir: Path, tmp_path: Path) -> None:
    rows = _first_rows(synth_dir / "sft.parquet", 3)
    path = tmp_path / "twice.parquet"
    pq.write_table(pa.concat_tables([rows, rows]), str(path))
    ids = rows.column("id").to_pylist()
    root = ["--root", str(synth_dir)]  # the rows' video paths resolve there
    res = CliRunner().invoke(app, ["data", "check", *root, str(path)])
    assert res.exit_code == 1, res.output
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and "3 ids are written more than once" in lines[0], res.stderr
    assert all(i in lines[0] for i in ids) and "3 extra rows" in lines[0]
    assert "6 rows" in res.stdout and "duplicate_row" in res.stdout
    res = CliRunner().invoke(app, ["data", "check", "--json", *root, str(path)])
    report = json.loads(res.stdout)
    assert report["by_rule"].get("duplicate_row") == 3 and report["failed_rows"] >= 3
    once = tmp_path / "once.parquet"
    pq.write_table(rows, str(once))
    res = CliRunner().invoke(app, ["data", "check", "--json", *root, str(once)])
    assert "duplicate_row" not in json.loads(res.stdout)["by_rule"]


@pytest.mark.parametrize("column", SCHEMA.names)
def test_a_missing_schema_column_is_refused_by_name(
    column: str, synth_dir: Path, tmp_path: Path
) -> None:
    rows = _first_rows(synth_dir / "sft.parquet", 2).drop_columns([column])
    path = tmp_path / f"no_{column}.parquet"
    pq.write_table(rows, str(path))
    with pytest.raises(DataError, match=rf"lacks columns \['{column}'\]"):
        check_columns(path)
    with pytest.raises(DataError, match=column):
        read_rows(path)


def test_data_check_refuses_an_sft_file_without_videos(synth_dir: Path, tmp_path: Path) -> None:
    path = tmp_path / "no_videos.parquet"
    pq.write_table(_first_rows(synth_dir / "sft.parquet", 2).drop_columns(["videos"]), str(path))
    res = CliRunner().invoke(app, ["data", "check", "--root", str(synth_dir), str(path)])
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.exit_code == 2 and len(lines) == 1 and "'videos'" in lines[0], res.output
