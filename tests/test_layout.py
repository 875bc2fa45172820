"""Repository layout rules that CI would otherwise only show as confusing failures."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

ROOT = Path(__file__).parents[1]


def test_test_modules_have_unique_basenames() -> None:
    """pytest's default (prepend) import mode imports test modules by basename."""
    names = Counter(p.name for p in (ROOT / "tests").rglob("test_*.py"))
    assert [n for n, c in names.items() if c > 1] == []


def test_tests_mirror_the_package() -> None:
    """Every test folder is named after a paravt subpackage."""
    packages = {
        p.name for p in (ROOT / "paravt").iterdir() if p.is_dir() and not p.name.startswith("__")
    }
    folders = {
        p.name
        for p in (ROOT / "tests").iterdir()
        if p.is_dir() and not p.name.startswith(("__", "."))
    }
    assert folders <= packages, folders - packages
