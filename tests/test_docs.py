"""The docs name only what exists: every path, dotted module path and code symbol that
docs/ARCHITECTURE.md and docs/extending.md write in backticks is checked against the tree.

What is checked (in backticks only):
- a repository path (``paravt/…``, ``tests/…``, ``benchmarks/…``, ``configs/…``, ``docs/…``) exists;
- a dotted name starting with ``paravt.`` resolves to a module, then to names defined in it;
- ``module.symbol`` where ``module`` is the base name of a paravt module: some module of that name
  defines ``symbol``;
- a CamelCase name or a ``CONSTANT_NAME`` with an underscore is defined somewhere in the package;
- ``name(…)``: a function or class of that name is defined somewhere in the package.
Names are read with ``ast`` (nothing is imported)."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
PKG = ROOT / "paravt"
DOCS = ("docs/ARCHITECTURE.md", "docs/extending.md")
FILE_EXTS = {
    "json",
    "jsonl",
    "yaml",
    "yml",
    "py",
    "md",
    "html",
    "parquet",
    "png",
    "mp4",
    "txt",
    "toml",
    "lock",
    "pt",
}
NOT_NAMES = {"NaN"}


@cache
def _modules() -> dict[str, Path]:
    out = {}
    for path in PKG.rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


@cache
def _defined(module: str) -> frozenset[str]:
    """Top-level names of a module and the attributes/fields/methods of its classes."""
    tree = ast.parse(_modules()[module].read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
            names.update(t.attr for t in node.targets if isinstance(t, ast.Attribute))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return frozenset(names)


@cache
def _all_names() -> frozenset[str]:
    return frozenset().union(*(_defined(m) for m in _modules()))


def _by_basename(base: str) -> list[str]:
    return [m for m in _modules() if m.rsplit(".", 1)[-1] == base]


def _problem(token: str) -> str | None:
    """Why ``token`` names nothing in the tree, or None when it names something (or is not a
    name)."""
    token = token.strip().rstrip(",;:")
    if token in NOT_NAMES or "my_" in token:  # the examples of what a reader adds do not exist yet
        return None
    if re.fullmatch(r"(paravt|tests|benchmarks|configs|docs)/[\w/.\-*]*", token):
        path = token.split("*")[0].rstrip("/")
        return (
            None
            if (ROOT / path).exists() or "*" in token and (ROOT / path).parent.exists()
            else "no such path"
        )
    if m := re.fullmatch(r"(paravt(?:\.\w+)+)(?:\(.*\))?", token):
        parts = m.group(1).split(".")
        for i in range(len(parts), 0, -1):
            mod = ".".join(parts[:i])
            if mod in _modules():
                rest = parts[i:]
                if not rest or rest[0] in _defined(mod):
                    return None
                return f"{mod} defines no {rest[0]}"
        return "no such module"
    if (why := _config_problem(token)) is not True:
        return why
    if m := re.fullmatch(r"([a-z_][a-z0-9_]*)\.([A-Za-z_]\w*)(?:\(.*\))?", token):
        mods = _by_basename(m.group(1))
        if not mods or m.group(2) in FILE_EXTS:
            return None
        return (
            None
            if any(m.group(2) in _defined(x) for x in mods)
            else f"no module named {m.group(1)} defines {m.group(2)}"
        )
    if re.fullmatch(r"[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[A-Z][A-Z0-9]*_[A-Z0-9_]+", token):
        return None if token in _all_names() else "defined nowhere in paravt/"
    if m := re.fullmatch(r"([a-z_][a-z0-9_]*_[a-z0-9_]+)\((?:…|\.\.\.)?\)", token):
        return None if m.group(1) in _all_names() else "defined nowhere in paravt/"
    return None


def _config_problem(token: str) -> str | None | bool:
    """``section.field[.sub]`` of the train config (or ``distill.field`` of the distill config):
    None
    when it exists, why not when it does not, True when the token is not a config path at all."""
    from pydantic import BaseModel

    from paravt import config

    m = re.fullmatch(r"([a-z_]+)((?:\.[a-z_0-9]+)+)", token)
    if not m or token.rsplit(".", 1)[-1] in FILE_EXTS:
        return True
    parts = token.split(".")
    if parts[0] == "distill":
        model: type[BaseModel] | None = config.DistillConfig
        parts = parts[1:]
    elif parts[0] in config.TrainConfig.model_fields:
        model = config.TrainConfig
    else:
        return True
    for part in parts:
        field = model.model_fields.get(part) if model else None
        if field is None:
            return "no such config field"
        ann = field.annotation
        model = ann if isinstance(ann, type) and issubclass(ann, BaseModel) else None
    return None


def _tokens(doc: str) -> list[tuple[int, str]]:
    out = []
    in_fence = False
    for i, line in enumerate((ROOT / doc).read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("```"):
            in_fence = not in_fence
            continue
        if not in_fence:
            out += [(i, t) for t in re.findall(r"`([^`\n]+)`", line)]
    return out


@pytest.mark.parametrize("doc", DOCS)
def test_docs_name_only_what_exists(doc: str) -> None:
    bad = [f"{doc}:{line}: `{tok}`: {why}" for line, tok in _tokens(doc) if (why := _problem(tok))]
    assert bad == [], "\n".join(bad)


def test_the_checker_catches_a_stale_name() -> None:
    assert _problem("paravt/models/hf.py") == "no such path"
    assert _problem("paravt.models.hf.generator.NoSuchGenerator") is not None
    assert _problem("chat.to_episode_input") is not None  # it lives in agent/inputs.py
    assert _problem("episodes.to_episode_input") is None
    assert _problem("NoSuchRegistryThing") is not None and _problem("WINDOW_TOOLS_NOPE") is not None
    assert _problem("summary.json") is None and _problem("paravt/config/sections.py") is None
    assert (
        _problem("model.replicas") is None
        and _problem("model.no_such_knob") == "no such config field"
    )
