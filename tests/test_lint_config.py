"""`make lint` type-checks the whole library: mypy's files are paravt/ and no override of
pyproject.toml ignores a package's errors (issue 40 item 4)."""

from __future__ import annotations

import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).parents[1] / "pyproject.toml"


def test_mypy_checks_all_of_paravt_and_ignores_no_package() -> None:
    mypy = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["mypy"]
    assert mypy["files"] == ["paravt"]
    ignored = [o["module"] for o in mypy.get("overrides", []) if o.get("ignore_errors")]
    assert ignored == []
    # the only overrides skip third-party packages whose inline types are slow to analyse
    ours = [m for o in mypy.get("overrides", []) for m in o["module"] if m.startswith("paravt")]
    assert ours == []
