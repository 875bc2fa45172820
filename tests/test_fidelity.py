"""docs/fidelity.md's "ours" column is read from the code: every row with a "read from" cell names a
config default, a variant's config, a demo preset field or a module constant, and the cell must
equal what the code holds (so the table cannot go stale)."""

from __future__ import annotations

import importlib
import re
from pathlib import Path
from typing import Any

import pytest

from paravt.config import TrainConfig
from paravt.repro.presets import PRESETS
from paravt.repro.variants import VARIANTS, with_overrides

DOC = Path(__file__).resolve().parents[1] / "docs" / "fidelity.md"
STATUSES = ("same", "scaled", "deviates", "our choice", "pending")
RELEASE_REF = re.compile(r"`release:[\w./-]+:\d+(-\d+)?`")


def rows() -> list[dict[str, str]]:
    out: list[dict[str, str]] = []
    header: list[str] = []
    for line in DOC.read_text().splitlines():
        if not line.startswith("| "):
            header = [] if not line.strip() else header
            continue
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip()[1:-1])]
        if cells[0] == "#":
            header = cells
        elif header and not set(cells[0]) <= {"-", "|"}:
            out.append(dict(zip(header, cells)))
    return out


def _dotted(obj: Any, path: str) -> Any:
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def read(source: str) -> Any:
    kind, _, rest = source.strip("`").partition(":")
    if kind == "cfg":
        return _dotted(TrainConfig(), rest)
    if kind == "var":
        name, _, path = rest.partition(":")
        return _dotted(with_overrides(TrainConfig(), VARIANTS[name].overrides), path)
    if kind == "demo":
        return getattr(PRESETS["demo"], rest)
    if kind == "py":
        module, _, name = rest.partition(":")
        return getattr(importlib.import_module(module), name)
    raise AssertionError(f"unknown source kind in {source!r}")


def ours_value(cell: str) -> str:
    """The backticked value at the start of an "ours" cell."""
    assert cell.startswith("`"), f"an 'ours' cell read from the code starts with `value`: {cell!r}"
    return cell[1:].split("`", 1)[0]


TABLE = rows()
READ = [r for r in TABLE if r.get("read from")]


def test_the_table_is_whole() -> None:
    assert len(TABLE) >= 50 and len(READ) >= 35
    assert [int(r["#"]) for r in TABLE] == list(range(1, len(TABLE) + 1))
    for r in TABLE:
        assert r["status"].startswith(STATUSES), r
        assert r["paper"] and r["release"] and r["ours"], r


def test_every_release_cell_names_its_file_and_line() -> None:
    """A release cell says where in the release it was read (``release:PATH:LINE``), or "–" where
    the release has nothing to say."""
    for r in TABLE:
        assert r["release"] == "–" or RELEASE_REF.search(r["release"]), (r["#"], r["release"])


def test_every_item_of_issue_46_has_its_row() -> None:
    items = [re.search(r"\(item (\d+)\)", r["setting"]) for r in TABLE]
    assert [int(m.group(1)) for m in items if m] == list(range(1, 14))


@pytest.mark.parametrize("row", READ, ids=[f"{r['#']}-{r['read from']}" for r in READ])
def test_ours_is_what_the_code_holds(row: dict[str, str]) -> None:
    assert str(read(row["read from"])) == ours_value(row["ours"]), row["setting"]
