"""Every "§" reference can be followed: it names a document of this repository and a section
that document has (``docs/ARCHITECTURE.md §4``, ``docs/ARCHITECTURE.md §2–3``, ``§4/§6``
continuing the line's last citation; in a doc, a bare ``(§10)`` is that doc's own section), or
the ParaVT paper (``paper §B``, ``ParaVT §B``: outside the repository, not checked here). A
reference to a document that is not in the repository (``DESIGN §2``, ``STYLE.md §3``) or to a
section the document lacks fails, with the file and line."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).parents[1]
SCANNED = (
    "paravt/**/*.py",
    "tests/**/*.py",
    "benchmarks/**/*.py",
    "docs/*.md",
    "README.md",
    "configs/*.yaml",
    "Makefile",
)
PAPER = {"paper", "paper's", "ParaVT"}
SEPARATORS = (",", "/", "and", "or", "&")
SECTION = re.compile(r"§\s?(\d+(?:\.\d+)*|[A-Z]\b)(?:\s*[–-]\s*(\d+(?:\.\d+)*))?")
HEADING = re.compile(r"^#{1,6}\s+(\d+(?:\.\d+)*)\.?\s", re.M)


@cache
def sections(doc: str) -> frozenset[str]:
    """The numbered headings of a repository markdown file (``## 4. Rewards`` → ``4``)."""
    return frozenset(HEADING.findall((ROOT / doc).read_text(encoding="utf-8")))


def document(word: str) -> str | None:
    """The repository doc a citation's word names ("docs/ARCHITECTURE.md", "ARCHITECTURE.md",
    "README.md"), "paper" for the paper, or None for anything else."""
    word = word.strip("([`*\"'").rstrip(",:")
    if word in PAPER:
        return "paper"
    name = word if word.endswith(".md") else f"{word}.md"
    for candidate in (name, f"docs/{name}", f"docs/{Path(name).name}"):
        if (ROOT / candidate).is_file() and candidate.endswith(".md"):
            return candidate
    return None


def problems(text: str, here: str) -> list[str]:
    """The references in ``text`` (the file ``here``) that cannot be followed."""
    out: list[str] = []
    for n, line in enumerate(text.splitlines(), 1):
        last: str | None = None
        for m in SECTION.finditer(line):
            before = line[: m.start()].rstrip()
            words = before.split()
            word = words[-1] if words else ""
            if last is not None and (before.endswith(SEPARATORS[:2]) or word in SEPARATORS):
                doc: str | None = last
            else:
                doc = document(word)
                if doc is None and here.endswith(".md") and not re.search(r"\w$", before):
                    doc = here  # "(§10)" in a doc: its own section
            if doc is None:
                out.append(
                    f"{here}:{n}: '{word} §{m.group(1)}' names no document of this "
                    "repository (cite docs/ARCHITECTURE.md §N, or paper §X for the paper)"
                )
                continue
            last = doc
            if doc == "paper":
                continue
            for sec in filter(None, (m.group(1), m.group(2))):
                if sec not in sections(doc):
                    have = sorted(sections(doc), key=lambda s: [int(x) for x in s.split(".")])
                    out.append(
                        f"{here}:{n}: {doc} has no section {sec} (its sections: {', '.join(have)})"
                    )
    return out


def test_every_section_reference_in_the_repository_can_be_followed() -> None:
    found: list[str] = []
    n_refs = 0
    for pattern in SCANNED:
        for path in sorted(ROOT.glob(pattern)):
            if path == Path(__file__):
                continue  # its docstring and its checks of the checker cite badly on purpose
            text = path.read_text(encoding="utf-8")
            n_refs += text.count("§")
            found += problems(text, str(path.relative_to(ROOT)))
    assert n_refs > 50  # the walk reads the tree (the code cites docs/ARCHITECTURE.md throughout)
    assert not found, "dangling § references:\n" + "\n".join(found)


def test_the_checker_catches_what_a_reader_could_not_follow() -> None:
    ok = (
        "see docs/ARCHITECTURE.md §4 and docs/ARCHITECTURE.md §2–3 [paper §C], ParaVT §B\n"
        "format reward (docs/ARCHITECTURE.md §4/§6, §7)\n"
    )
    assert problems(ok, "paravt/x.py") == []
    assert problems("cold start (§10)\n", "docs/ARCHITECTURE.md") == []
    bad = problems(
        "(DESIGN §2)\nx (STYLE.md §3)\ndocs/ARCHITECTURE.md §42\n"
        "docs/ARCHITECTURE.md §4–11\nTable 2 and §3\n",
        "paravt/x.py",
    )
    assert [b.split(":")[1] for b in bad] == ["1", "2", "3", "4", "5"], bad
    assert "no section 42" in bad[2] and "no section 11" in bad[3]
    assert problems("see §2\n", "paravt/x.py") and problems("(§99)\n", "docs/ARCHITECTURE.md")
