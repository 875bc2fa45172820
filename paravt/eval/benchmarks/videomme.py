"""Video-MME, with and without subtitles.

Layout: HF ``lmms-lab/Video-MME`` parquet (``**/test-*.parquet``): ``videoID``, ``question_id``,
``duration`` (short/medium/long), ``domain``, ``task_type``, ``question``, ``options``
("A. …"), ``answer``; videos ``data/<videoID>.mp4``; subtitles ``subtitle/<videoID>.srt``
(prepended to the question for ``videomme_sub``). Scoring: lmms-eval's ``videomme`` task
(letter extraction, case-insensitive match); micro accuracy, by duration, task type and domain.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from paravt.eval.benchmarks import lmms_rules as L
from paravt.eval.benchmarks.base import (
    Benchmark,
    EvalSample,
    Groups,
    Scored,
    ScoredItem,
    by_group,
    micro_accuracy,
    table1_column,
)
from paravt.eval.benchmarks.loading import need, video_path


def _srt_text(path: Path) -> str:
    lines = []
    for ln in path.read_text(encoding="utf-8", errors="replace").splitlines():
        ln = ln.strip()
        if not ln or ln.isdigit() or "-->" in ln:
            continue
        lines.append(re.sub(r"<[^>]+>", "", ln))
    return "\n".join(lines)


def load_videomme(root: Path, *, subtitles: bool = False) -> list[EvalSample]:
    import pyarrow.parquet as pq

    ann = need(root, "videomme", ["**/test-*.parquet", "**/videomme*.json"])
    recs = (
        pq.read_table(str(ann)).to_pylist()
        if ann.suffix == ".parquet"
        else json.loads(ann.read_text())
    )
    out = []
    for r in recs:
        vid = str(r["videoID"])
        q = str(r["question"])
        if subtitles:
            srt = root / "subtitle" / f"{vid}.srt"
            if srt.exists():
                q = f"Subtitles:\n{_srt_text(srt)}\n{q}"
        out.append(
            EvalSample(
                id=str(r["question_id"]),
                benchmark="videomme_sub" if subtitles else "videomme",
                video=str(video_path(root, ["data", "videos"], f"{vid}.mp4")),
                question=q,
                task="mcq",
                answer=str(r["answer"]).strip(),
                options=tuple(str(o) for o in r["options"]),
                subset=str(r.get("duration", "")),
                meta={"domain": r.get("domain"), "task_type": r.get("task_type")},
            )
        )
    return out


def load_videomme_sub(root: Path) -> list[EvalSample]:
    return load_videomme(root, subtitles=True)


def rule(
    text: str, answer: str, options: Sequence[str] | None, *, item_id: str, seed: int
) -> Scored:
    pred = L.extract_mcq_answer(text, L.MCQ_ABCD)
    return Scored(pred, float(pred.lower() == answer.lower()))


def groups(s: EvalSample) -> Groups:
    return {
        "duration": s.subset,
        "task_type": str(s.meta.get("task_type") or ""),
        "domain": str(s.meta.get("domain") or ""),
    }


def aggregate(items: Sequence[ScoredItem]) -> dict[str, object]:
    return {
        "by_duration": by_group(items, "duration"),
        "by_task_type": by_group(items, "task_type"),
        "by_domain": by_group(items, "domain"),
        **micro_accuracy(items),
    }


VIDEOMME = Benchmark(
    "videomme", load_videomme, rule, aggregate, groups, table1=table1_column("VideoMME", 59.9, 62.1)
)
VIDEOMME_SUB = Benchmark(
    "videomme_sub",
    load_videomme_sub,
    rule,
    aggregate,
    groups,
    table1=table1_column("VideoMME w/ sub", 68.4, 69.4),
    shares_dir_of="videomme",
)
