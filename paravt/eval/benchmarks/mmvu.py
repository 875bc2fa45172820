"""MMVU (validation set, multiple-choice questions).

Layout: ``validation.json``: ``id``, ``question``, ``choices`` {letter: text}, ``answer``
(letter), ``question_type`` (multiple-choice only are kept), ``video`` (URL ending in
``videos/<Subject>/<n>.mp4``), ``metadata.subject``; videos ``videos/<Subject>/<n>.mp4``.
Scoring: lmms-eval's ``mmvu`` rule (a letter or the option's text); the headline counts only
subjects of lmms-eval's discipline map, by discipline and subject alongside.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path

from paravt.eval.benchmarks import lmms_rules as L
from paravt.eval.benchmarks.base import (
    Benchmark,
    EvalSample,
    Groups,
    Scored,
    ScoredItem,
    by_group,
    option_texts,
    pct,
    table1_column,
)
from paravt.eval.benchmarks.loading import need, video_path

#: lmms-eval's MMVU subject → discipline map; subjects outside it are not counted.
MMVU_DISCIPLINES: Mapping[str, str] = {
    **dict.fromkeys(
        (
            "Biology",
            "Chemistry",
            "Modern_Physics",
            "Astronomy",
            "Geography",
            "Materials_Science",
            "Neurobiology",
            "Electromagnetism",
            "Thermodynamics",
            "Mechanics",
        ),
        "Science",
    ),
    **dict.fromkeys(
        (
            "Civil_Engineering",
            "Electrical_Engineering",
            "Mechanical_Engineering",
            "Biomedical_Engineering",
            "Electronics_and_Communication",
            "Computer_Science",
        ),
        "Engineering",
    ),
    **dict.fromkeys(
        ("Clinical_Medicine", "Basic_Medicine", "Preventive_Medicine", "Pharmacy", "Dentistry"),
        "Healthcare",
    ),
    **dict.fromkeys(
        ("Art", "Literature", "History", "Law", "Economics", "Management"),
        "Humanities_and_Social_Science",
    ),
}


def load_mmvu(root: Path) -> list[EvalSample]:
    ann = need(root, "mmvu", ["validation.json", "**/validation.json"])
    out = []
    for r in json.loads(ann.read_text()):
        if r.get("question_type") != "multiple-choice":
            continue
        rel = str(r["video"]).split("videos/", 1)[-1]
        choices = r.get("choices") or {}
        out.append(
            EvalSample(
                id=str(r["id"]),
                benchmark="mmvu",
                video=str(video_path(root, ["videos", "."], rel)),
                question=str(r["question"]),
                task="mcq",
                answer=str(r["answer"]).strip(),
                options=tuple(f"{k}. {choices[k]}" for k in sorted(choices)),
                subset=str((r.get("metadata") or {}).get("subject", "")),
            )
        )
    return out


def rule(
    text: str, answer: str, options: Sequence[str] | None, *, item_id: str, seed: int
) -> Scored:
    ok = L.mmvu_mcq_correct(text, answer, option_texts(options))
    return Scored(L.mmvu_logged_letter(text), float(ok))


def groups(s: EvalSample) -> Groups:
    subject = Path(s.video).parent.name
    return {"subject": subject, "discipline": MMVU_DISCIPLINES.get(subject, "")}


def aggregate(items: Sequence[ScoredItem]) -> dict[str, object]:
    kept = [it for it in items if it.groups.get("subject") in MMVU_DISCIPLINES]
    return {
        "by_discipline": by_group(kept, "discipline"),
        "by_subject": by_group(kept, "subject"),
        "not_in_discipline_map": len(items) - len(kept),
        "headline": pct([it.scored.score for it in kept]),
        "headline_metric": "acc",
    }


MMVU = Benchmark(
    "mmvu", load_mmvu, rule, aggregate, groups, table1=table1_column("MMVU", 68.0, 68.6)
)
