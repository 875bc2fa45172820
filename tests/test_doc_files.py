"""Every repository file a doc cites exists (issue 40 item 7): a path in README.md or docs/*.md
that starts at the repository root (``paravt/rl/loop.py``, ``tests/…``, ``benchmarks/…``,
``configs/…``, ``docs/…``, ``.ci/…``) or inside the package (``rl/loop.py``, ``data/synth/``), and
a bare ``NAME.md``, must name a file or directory of this repository. Outside it, a citation says
so: ``../shared/NOTES-ENV.md`` (the helpers' notes), ``release:paravt/rl/workflow.py`` (the
authors' repository). Placeholders (``protocol/templates/VERSION/``,
``paravt/rl/my_trainer.py``) are not files."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).parents[1]
PACKAGES = {p.name for p in (ROOT / "paravt").iterdir() if p.is_dir() and p.name[0] != "_"}
TOP = {"paravt", "tests", "benchmarks", "docs", "configs", ".ci"}
PATH = re.compile(r"(?<![\w./:-])([\w.-]+(?:/[\w.-]+)*/?)(?![\w/])")
FILE_ENDINGS = (".py", ".md", ".yaml", ".yml", ".toml", ".sh", ".txt", ".jsonl", ".json", "/")


def _placeholder(path: str) -> bool:
    return any(part.isupper() or part.startswith("my_") for part in path.split("/"))


def cited_paths(text: str) -> list[tuple[int, str]]:
    """(line, path) of every repository path ``text`` cites."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        for m in PATH.finditer(line):
            path = m.group(1).rstrip(".")
            if "/" in path:
                repo_path = path.split("/")[0] in TOP | PACKAGES and path.endswith(FILE_ENDINGS)
                if repo_path and not _placeholder(path):
                    out.append((n, path))
            elif re.fullmatch(r"[A-Z][\w-]*\.md", path):
                out.append((n, path))
    return out


def _exists(path: str) -> bool:
    return any((ROOT / base / path).exists() for base in ("", "paravt", "docs"))


def test_the_checker_reads_citations_and_leaves_marked_outside_paths() -> None:
    text = (
        "see `paravt/rl/loop.py` and rl/loop.py, data/synth/ and NOTES-ENV.md;\n"
        "outside: ../shared/NOTES-ENV.md, release:paravt/rl/workflow.py, OUT/report.html, "
        "protocol/templates/VERSION/system.txt"
    )
    assert cited_paths(text) == [
        (1, "paravt/rl/loop.py"),
        (1, "rl/loop.py"),
        (1, "data/synth/"),
        (1, "NOTES-ENV.md"),
    ]
    assert _exists("rl/loop.py") and not _exists("NOTES-ENV.md")


def test_every_file_a_doc_cites_is_in_the_repository() -> None:
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    missing = [
        f"{doc.relative_to(ROOT)}:{n}: {path}"
        for doc in docs
        for n, path in cited_paths(doc.read_text(encoding="utf-8"))
        if not _exists(path)
    ]
    assert missing == []
