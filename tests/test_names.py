"""One name per concept: no class name is defined in two modules of paravt/ (two ``Tally`` or two
``Scored`` make a reader, a grep and an import guess which one is meant). Read with ``ast``."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PKG = Path(__file__).parents[1] / "paravt"


def class_homes(root: Path) -> dict[str, list[str]]:
    """Class name -> the modules (relative to ``root``'s parent) that define it, at any depth."""
    homes: dict[str, list[str]] = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                homes[node.name].append(str(path.relative_to(root.parent)))
    return homes


def test_no_class_name_is_defined_in_two_modules() -> None:
    twice = {name: where for name, where in class_homes(PKG).items() if len(set(where)) > 1}
    assert not twice, f"class names defined in two modules (rename one by its concept): {twice}"


def test_the_walk_finds_a_name_defined_twice(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "a.py").write_text("class Tally:\n    pass\n\n\nclass Only:\n    pass\n")
    (pkg / "sub" / "b.py").write_text("def f():\n    class Tally:\n        pass\n")
    homes = class_homes(pkg)
    assert homes["Tally"] == ["pkg/a.py", "pkg/sub/b.py"] and homes["Only"] == ["pkg/a.py"]


def test_no_module_sits_beside_its_own_plural() -> None:
    """``rl/trainer.py`` beside ``rl/trainers.py`` named two concepts (contract, registry) by
    one word; a module is named by what it holds."""
    pairs = [
        str(p.relative_to(PKG.parent))
        for p in PKG.rglob("*s.py")
        if p.with_name(p.name[:-4] + ".py").exists()
    ]
    assert not pairs, f"modules beside their singular (name each by its concept): {pairs}"
