"""`paravt score --benchmark NAME --in F.jsonl`: score completions by that benchmark's lmms-eval
rule.

Input line: ``{"completion": str, "answer": str, "options": [str]?, "task_type": str?, "id": str?}``
(``answer``: the option letter, or ``"[start, end]"`` seconds for charades_sta). Output, one line
per input line in order: ``{"pred", "score"}``: the extracted letter or interval (``""`` when none)
and 0/1 or the IoU; ``"random": true`` is added when LongVideoBench's fallback drew the letter
(seeded by ``id``, else the line number). A bad line gives ``{"error": …}`` and the rest go on.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from paravt.config.choices import Scoring
from paravt.errors import DataError
from paravt.eval.benchmarks.registry import check_benchmark
from paravt.eval.benchmarks.scoring import score_response
from paravt.eval.completions import completion_line


def _parse(line: str) -> dict[str, Any]:
    row = completion_line(line)
    if not isinstance(row.get("answer"), str):
        raise DataError('"answer" must be a string (a letter, or "[start, end]" for charades_sta)')
    return row


def score_lines(
    bench: str, lines: Iterable[str], scoring: Scoring = "lmms"
) -> list[dict[str, Any]]:
    """One output object per non-blank input line (see the module doc)."""
    check_benchmark(bench)
    out: list[dict[str, Any]] = []
    for n, line in enumerate(x for x in lines if x.strip()):
        try:
            row = _parse(line)
            sc = score_response(
                bench,
                row["completion"],
                row["answer"],
                row.get("options"),
                scoring=scoring,
                item_id=str(row.get("id", n)),
            )
        except DataError as exc:
            out.append({"error": str(exc)})
            continue
        out.append({"pred": sc.pred, "score": sc.score, **({"random": True} if sc.random else {})})
    return out
