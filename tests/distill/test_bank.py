"""The Experience Bank: BM25 ranking with hand-computed scores, file persistence, top-k."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from paravt.distill.bank import BM25, Experience, ExperienceBank, tokenize


def test_bm25_scores_match_the_formula() -> None:
    docs = [["red", "cup"], ["blue", "cup", "cup"], ["dog"]]
    s = BM25(docs).scores(["cup"])
    # df(cup) = 2, N = 3 → idf = ln(1 + 1.5/2.5); avgdl = 2
    idf = math.log(1 + 1.5 / 2.5)
    d0 = idf * 1 * 2.5 / (1 + 1.5 * (1 - 0.75 + 0.75 * 2 / 2))
    d1 = idf * 2 * 2.5 / (2 + 1.5 * (1 - 0.75 + 0.75 * 3 / 2))
    assert s == pytest.approx([d0, d1, 0.0])
    assert s[1] > s[0]  # two mentions beat one despite the longer document


def test_rare_terms_weigh_more() -> None:
    docs = [
        tokenize("when does the flash appear"),
        tokenize("what colour is the flash"),
        tokenize("which shape appears in the video"),
    ]
    s = BM25(docs).scores(tokenize("what colour"))
    assert s.index(max(s)) == 1 and s[0] == 0.0


def _exp(q: str) -> Experience:
    return Experience(
        q,
        "oe",
        "scan then zoom",
        ({"start_time": 0, "end_time": 60, "nframes": 15, "resize": 1.0},),
        "x",
    )


def test_bank_top_k_ranks_persists_and_skips_unrelated(tmp_path: Path) -> None:
    bank = ExperienceBank(tmp_path / "bank.jsonl")
    for q in (
        "When does the green flash appear?",
        "Which large shape briefly appears?",
        "What colour is the brief full-frame flash?",
        "How many dogs are there?",
    ):
        bank.add(_exp(q))
    again = ExperienceBank(tmp_path / "bank.jsonl")  # a resumed run reads what was learned
    top = again.top_k("What colour is the flash?", 2)
    assert [e.question for e in top] == [
        "What colour is the brief full-frame flash?",
        "When does the green flash appear?",
    ]
    assert again.top_k("zebra", 3) == [] and again.top_k("flash", 0) == []
    assert "frame_select(" in top[0].as_example() and "Plan: scan then zoom" in top[0].as_example()
