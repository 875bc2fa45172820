"""EVA's Experience Bank: successful trajectories, retrieved by query similarity to guide the
Executor. File-backed (one JSON object per line, appended as trajectories succeed, so a resumed
run keeps what it learned); similarity is Okapi BM25 over the question's lowercase word tokens
(offline, no embedding model): ``idf(t) = ln(1 + (N − df + 0.5) / (df + 0.5))``,
``score = Σ_t idf(t) · tf·(k1 + 1) / (tf + k1·(1 − b + b·|d| / avgdl))``, k1 = 1.5, b = 0.75.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from paravt.jsonl import append_jsonl, read_jsonl

_TOKEN_RE = re.compile(r"[a-z0-9]+")


def tokenize(text: str) -> list[str]:
    return _TOKEN_RE.findall(text.lower())


class BM25:
    def __init__(self, docs: Sequence[Sequence[str]], *, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self.tfs = [Counter(d) for d in docs]
        self.lens = [len(d) for d in docs]
        self.avgdl = sum(self.lens) / len(docs) if docs else 0.0
        df = Counter(t for d in docs for t in set(d))
        n = len(docs)
        self.idf = {t: math.log(1 + (n - f + 0.5) / (f + 0.5)) for t, f in df.items()}

    def scores(self, query: Sequence[str]) -> list[float]:
        out = []
        for tf, dl in zip(self.tfs, self.lens):
            norm = self.k1 * (1 - self.b + self.b * dl / self.avgdl) if self.avgdl else self.k1
            out.append(
                sum(
                    self.idf.get(t, 0.0) * tf[t] * (self.k1 + 1) / (tf[t] + norm)
                    for t in set(query)
                    if t in tf
                )
            )
        return out


@dataclass(frozen=True)
class Experience:
    question: str
    task: str
    plan: str  # the Executor's first think
    calls: tuple[dict[str, Any], ...]  # the executed (reflected) frame_select arguments, in order
    answer: str

    def as_example(self) -> str:
        steps = (
            "; ".join(f"frame_select({json.dumps(c, sort_keys=True)})" for c in self.calls)
            or "no tool call"
        )
        return (
            f"Question: {self.question}\nPlan: {self.plan}\nCalls: {steps}\nAnswer: {self.answer}"
        )


class ExperienceBank:
    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.items: list[Experience] = []
        for d in read_jsonl(self.path):  # missing file: empty; a cut-off last line: skipped
            self.items.append(
                Experience(d["question"], d["task"], d["plan"], tuple(d["calls"]), d["answer"])
            )

    def add(self, exp: Experience) -> None:
        self.items.append(exp)
        append_jsonl(self.path, [asdict(exp)], fsync=False)  # a torn last line is ended first

    def top_k(self, question: str, k: int) -> list[Experience]:
        """The ``k`` most similar stored experiences (score > 0 only; ties keep insertion order)."""
        if k <= 0 or not self.items:
            return []
        scores = BM25([tokenize(e.question) for e in self.items]).scores(tokenize(question))
        order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
        return [self.items[i] for i in order[:k] if scores[i] > 0]
