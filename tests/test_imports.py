"""The package's import graph: no cycles (lazy imports inside functions count) and no import from
a lower layer to a higher one (docs/ARCHITECTURE.md §1):

    errors, jsonl, runlock, http < config, protocol, video < rewards < models, tools, tracking <
    data < agent, distill < eval < rl < integrations, servers, repro < report < demo < cli

The floors issue 40 set: the dataset layer (rows, schema, screening) below agent/; rewards/ pure
and below models/ (the LLM judge is an HTTP client in models/openai/); report/ above eval/ and
repro/; rl/ never imports eval/ (the training rollout log is `rl/rollouts.py`).

Imports under ``if TYPE_CHECKING:`` count like the others (issue 25): a cycle hidden from the
interpreter still ties two modules together for the reader and the type checker.
"""

from __future__ import annotations

import ast
from pathlib import Path

PKG = Path(__file__).parents[1] / "paravt"
LAYERS = (
    ("errors", "jsonl", "runlock", "http"),
    ("config", "protocol", "video"),
    ("rewards",),
    ("models", "tools", "tracking"),
    ("data",),
    ("agent", "distill"),
    ("eval",),
    ("rl",),
    ("integrations", "servers", "repro"),
    ("report",),
    ("demo",),
    ("cli", "__main__"),
)
RANK = {name: i for i, group in enumerate(LAYERS) for name in group}


def _modules() -> dict[str, Path]:
    out = {}
    for path in PKG.rglob("*.py"):
        parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    base = node.module or ""
    if node.level:
        pkg = module.split(".")
        if MODULES[module].name != "__init__.py":
            pkg = pkg[:-1]
        pkg = pkg[: len(pkg) - (node.level - 1)]
        base = ".".join(pkg + ([base] if base else []))
    return [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]


def _known(name: str) -> str | None:
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        deps: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                deps.update(
                    d
                    for t in _targets(module, node)
                    if (d := _known(t)) and d.startswith("paravt.") and d != module
                )
        graph[module] = deps
    return graph


def _layer(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_every_subpackage_has_a_layer() -> None:
    assert {_layer(m) for m in MODULES if _layer(m)} <= set(RANK)


def test_no_import_cycles() -> None:
    assert _cycles(import_graph()) == []


def test_no_import_runs_up_the_layers() -> None:
    upward = sorted(
        (a, b)
        for a, deps in import_graph().items()
        for b in deps
        if _layer(a) in RANK and _layer(b) in RANK and RANK[_layer(b)] > RANK[_layer(a)]
    )
    assert upward == []


def test_the_checker_sees_lazy_and_type_checking_imports() -> None:
    # paravt.cli imports its command modules at the top; cli.train imports rl.loop inside a function
    graph = import_graph()
    assert "paravt.cli.score" in graph["paravt.cli"]
    assert "paravt.rl.loop" in graph["paravt.cli.train"]
    assert (
        "paravt.models.chat" in graph["paravt.agent.modes"]
    )  # imported only under TYPE_CHECKING there


def test_modules_and_functions_stay_readable() -> None:
    """docs/ARCHITECTURE.md §1 (Layers): modules under about 400 lines, functions under about 60."""
    long_modules, long_functions = [], []
    for module, path in MODULES.items():
        text = path.read_text(encoding="utf-8")
        if text.count("\n") > 400:
            long_modules.append(module)
        for node in ast.walk(ast.parse(text)):
            if (
                isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
                and node.end_lineno - node.lineno + 1 > 60
            ):
                long_functions.append(f"{module}.{node.name}")
    assert (long_modules, long_functions) == ([], [])


def test_no_function_outside_the_cli_takes_ten_parameters() -> None:
    """Values that travel together go as one small frozen dataclass (issue 40 item 5): no function
    outside cli/ (whose typer commands declare one parameter per option) takes 10 or more,
    ``self``/``cls`` not counted."""
    wide = []
    for module, path in MODULES.items():
        if module.split(".")[1:2] == ["cli"]:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                a = node.args
                names = [x.arg for x in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
                names += [x.arg for x in (a.vararg, a.kwarg) if x is not None]
                n = len(names) - (names[:1] in (["self"], ["cls"]))
                if n >= 10:
                    wide.append(f"{module}.{node.name} ({n})")
    assert wide == []


def _top_level_names(tree: ast.Module) -> tuple[set[str], dict[str, tuple[str, str]]]:
    """Names a module defines at its top level, and those it imports from paravt (name →
    (module, original name))."""
    defined: set[str] = set()
    imported: dict[str, tuple[str, str]] = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            defined.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("paravt"):
            for a in node.names:
                imported[a.asname or a.name] = (node.module or "", a.name)
    return defined, imported


def test_names_are_imported_from_the_module_that_defines_them() -> None:
    """Re-exports only at a package's face (its __init__): a name imported from any other
    paravt module is defined there (issue 40 item 6), so the import says where to read it."""
    names = {
        m: _top_level_names(ast.parse(p.read_text(encoding="utf-8"))) for m, p in MODULES.items()
    }
    roots = [PKG, PKG.parent / "tests", PKG.parent / "benchmarks"]
    chained = []
    for path in (p for root in roots for p in root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or node.module not in MODULES or node.level:
                continue
            if MODULES[node.module].name == "__init__.py":
                continue
            defined, imported = names[node.module]
            chained += [
                f"{path.relative_to(PKG.parent)}:{node.lineno} {a.name} via {node.module}"
                for a in node.names
                if a.name not in defined
                and a.name in imported
                and f"{node.module}.{a.name}" not in MODULES
            ]
    assert chained == []
