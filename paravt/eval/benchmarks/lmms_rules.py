"""lmms-eval's answer-extraction rules, re-implemented (read from lmms-eval 0.7.3, not copied).

The published numbers of the field are scored by lmms-eval's per-task code, and small rule
differences move them by points, so each rule below reproduces the task code's behaviour
exactly, quirks included (they are listed per function). Sources, all in the ``lmms-eval`` wheel:

- `strip_reasoning_tags`: ``lmms_eval/api/reasoning.py`` (the CLI default pairs, ``__main__.py``);
- `extract_mcq_answer`: ``lmms_eval/tasks/_task_utils/mcq_extract.py`` (VideoMME, LVBench and MLVU
  call it through their ``extract_characters_regex`` with choices A-D);
- `parse_lvb_response`: ``tasks/longvideobench/utils.py::parse_multi_choice_response``;
- `mmvu_mcq_correct`: ``tasks/mmvu/utils.py::evaluate_with_rule_based`` (multiple-choice branch);
- `extract_time`, `lmms_iou`: ``tasks/charades_sta/utils.py``.

``tests/eval/test_lmms_differential.py`` checks every function here against lmms-eval's own on a
generated corpus of responses. Pure functions; no I/O.
"""

from __future__ import annotations

import random
import re
import string
from collections.abc import Sequence

#: lmms-eval's CLI default ``--reasoning_tags`` (applied before every task's scorer).
DEFAULT_REASONING_TAGS: tuple[tuple[str, str], ...] = (
    ("<think>", "</think>"),
    ("<analysis>", "</analysis>"),
)
MCQ_ABCD: tuple[str, ...] = ("A", "B", "C", "D")
_MCQ_DEFAULT: tuple[str, ...] = ("A", "B", "C", "D", "E", "F", "G", "H")


def strip_reasoning_tags(
    text: str, pairs: Sequence[tuple[str, str]] = DEFAULT_REASONING_TAGS
) -> str:
    """Remove every closed ``open…close`` block, pair by pair; when only a close tag is left (the
    template pre-filled the open tag), keep what follows the LAST close tag. An open tag that is
    never closed stays, with all its text. Case-sensitive. Result stripped."""
    out = text
    for open_tag, close_tag in pairs:
        while open_tag in out and close_tag in out:
            i = out.find(open_tag)
            j = out.find(close_tag, i)
            if j == -1:  # the only close tags come before the first open tag
                break
            out = out[:i] + out[j + len(close_tag) :]
        if close_tag in out and open_tag not in out:
            out = out.rsplit(close_tag, 1)[-1]
    return out.strip()


# --------------------------------------------------------------------------------- MCQ ranking

_PHRASES: tuple[str, ...] = (
    "the answer is",
    "answer is",
    "the correct answer is",
    "correct answer is",
    "the best answer is",
    "best answer is",
    "the correct option is",
    "correct option is",
    "the best option is",
    "best option is",
    "the choice is",
    "choice is",
    "the correct choice is",
    "correct choice is",
    "i choose",
    "i select",
    "i pick",
    "my answer is",
    "my choice is",
    "옵션",
    "정답은",
    "답은",
    "답:",
    "答案是",
    "答案为",
    "选",
    "答えは",
)
#: Format → rank; a higher rank wins, then the later position within the text.
_RANK = {
    "start": 10,
    "end": 9,
    "phrase": 7,
    "parentheses": 6,
    "period": 5,
    "colon": 4,
    "right_paren": 3,
    "space": 2,
    "fallback": 0,
}
_SUFFIXED = (
    ("({})", "parentheses"),
    ("{}.", "period"),
    ("{}:", "colon"),
    ("{})", "right_paren"),
    ("{} ", "space"),
)


def extract_mcq_answer(response: str, choices: Sequence[str] = _MCQ_DEFAULT) -> str:
    """The choice letter lmms-eval's ranked MCQ extractor picks, or "" when none.

    Rules (quirks kept): the response is stripped, then stripped of each of ``, . ! ? ; : ' "``
    in that order, then padded with one space each side. Candidates: the LAST ``(X)``, ``X.``,
    ``X:``, ``X)``, ``X `` of each letter; after the FIRST occurrence of each answer phrase
    (case-insensitive), the first occurrence of each letter anywhere after it (inside words too);
    a letter opening the text not followed by a letter ("A person…" → A); a letter closing it not
    preceded by a letter. Only when nothing matched: the last occurrence of any letter anywhere.
    The best rank wins, then the later position."""
    if not response or not response.strip():
        return ""
    text = response.strip()
    for ch in ",.!?;:'\"":
        text = text.strip(ch)
    text = f" {text} "
    found: list[tuple[int, int, str]] = []  # (rank, position, letter)
    for pattern, fmt in _SUFFIXED:
        for ch in choices:
            pos = text.rfind(pattern.format(ch))
            if pos != -1:
                found.append((_RANK[fmt], pos, ch))
    lower = text.lower()
    for phrase in _PHRASES:
        at = lower.find(phrase)
        if at == -1:
            continue
        for ch in choices:
            pos = text.find(ch, at + len(phrase))
            if pos != -1:
                found.append((_RANK["phrase"], pos, ch))
    core = text.strip()
    for ch in choices:
        if core.startswith(ch) and (len(core) == 1 or not core[1].isalpha()):
            found.append((_RANK["start"], 0, ch))
        if core.endswith(ch) and (len(core) == 1 or not core[-2].isalpha()):
            found.append((_RANK["end"], len(text) - 1, ch))
    if not found:
        found = [(0, text.rfind(ch), ch) for ch in choices if ch in text]
    if not found:
        return ""
    return max(found, key=lambda c: (c[0], c[1]))[2]


# ------------------------------------------------------------------------------ LongVideoBench

_LVB_PREFIXES = (
    "The best answer is",
    "The correct answer is",
    "The answer is",
    "The answer",
    "The best option is",
    "The correct option is",
    "Best answer:",
    "Best option:",
)
_LVB_LETTER = re.compile(r"[ABCDE]")


def parse_lvb_response(
    response: str, choices: Sequence[str], rng: random.Random
) -> tuple[str, bool]:
    """LongVideoBench's parser: ``(letter, was_random)``.

    The answer prefixes are deleted (case-sensitive, in order), then the FIRST capital A-E
    anywhere wins (even inside a word: "Based on…" → B, and even a letter beyond the options).
    No such capital → a random choice among ``choices`` drawn from ``rng`` (lmms-eval draws from
    the global ``random`` seeded once per run, so its draw depends on the order of the calls)."""
    s = response.strip()
    for prefix in _LVB_PREFIXES:
        s = s.replace(prefix, "")
    m = _LVB_LETTER.search(s)
    if m is None:  # (lmms-eval's extra "> 10 words and no capital" test implies this one)
        return rng.choice(list(choices)), True
    return m.group(0), False


# ---------------------------------------------------------------------------------------- MMVU

_MMVU_STANDALONE = re.compile(r"\b([A-E])\b", re.IGNORECASE)
_MMVU_LOGGED = re.compile(r"\b([A-E])\b")


def mmvu_mcq_correct(prediction: str, answer: str, choices: dict[str, str]) -> bool:
    """MMVU's rule-based multiple-choice check (lenient, case-insensitive):

    1. the FIRST standalone letter A-E in any case ("a cat" counts as A) equals the answer; or
    2. the answer letter appears standalone anywhere (any case); or
    3. the answer's choice text (lower-cased) is a substring of the prediction; or
    4. the answer letter appears anywhere (even inside a word) and one word of more than two
       characters of the choice text is a substring of the prediction."""
    pred = str(prediction).strip()
    ans = str(answer).strip()
    m = _MMVU_STANDALONE.search(pred)
    if m and m.group(1).upper() == ans.upper():
        return True
    if ans.upper() in pred.upper() and re.search(rf"\b{re.escape(ans)}\b", pred, re.IGNORECASE):
        return True
    if ans in choices:
        text = choices[ans].strip().lower()
        low = pred.lower()
        if text in low:
            return True
        if ans.upper() in pred.upper():
            words = [
                w.strip(string.punctuation)
                for w in text.split()
                if len(w.strip(string.punctuation)) > 2
            ]
            if any(w in low for w in words):
                return True
    return False


def mmvu_logged_letter(prediction: str) -> str:
    """The letter MMVU logs as its prediction: the first standalone capital A-E, else "N/A"."""
    m = _MMVU_LOGGED.search(str(prediction))
    return m.group(1) if m else "N/A"


# ------------------------------------------------------------------------------- Charades-STA

_TVG_KEYWORDS = ("starts", "ends", "happens in", "start time", "end time", "start", "end", "happen")
_CLOCK_RANGE = re.compile(r"\b(\d{1,2}:\d{2}(?::\d{2})?)\s*[–-]\s*(\d{1,2}:\d{2}(?::\d{2})?)\b")
_NUM_RANGE = re.compile(r"(\d+(?:\.\d+)?)\s*[–-]\s*(\d+(?:\.\d+)?)")
_NUMBER = re.compile(r"\b(\d+(?:\.\d+)?)\b")
_CLOCK = re.compile(r"\b(\d{1,2}:\d{2}(?::\d{2})?)\b")
_NUM_RANGE_S = re.compile(r"(\d+(?:\.\d+)?)\s*s?\s*[–-]\s*(\d+(?:\.\d+)?)\s*s?")
_EXAMPLE = "a specific example is : 20.8 - 30.0 seconds"


def _clock_seconds(t: str) -> float:
    parts = [float(p) for p in t.split(":")]
    if len(parts) == 3:
        return parts[0] * 3600 + parts[1] * 60 + parts[2]
    return parts[0] * 60 + parts[1]


def _pairs(values: list[float]) -> list[tuple[float, float]]:
    return [(values[i], values[i + 1]) for i in range(0, len(values) // 2 * 2, 2)]


def _first_ranges(
    sentences: list[str], pattern: re.Pattern[str], conv
) -> list[tuple[float, float]]:
    for s in sentences:
        hits = pattern.findall(s)
        if hits:
            return [(conv(a), conv(b)) for a, b in hits]
    return []


def extract_time(paragraph: str) -> list[list[float]]:
    """Charades-STA's interval parser: at most one ``[start, end]`` (start ≤ end), or ``[]``.

    Lower-cases, deletes the prompt's example sentence, replaces EVERY "to" by "-" (so "stop"
    becomes "s-p"), splits into sentences on ``! ? \\n`` (not on "."), and keeps the sentences
    holding a keyword (start/end/happen…; all sentences when none does). Then, first hit wins:
    a clock range ``m:ss - m:ss`` in the first sentence having one; a number range ``a - b`` in
    the first sentence having one; all clock times of all candidate sentences paired in order;
    the FIRST number of each candidate sentence paired in order; a number range with ``s`` units.
    The first pair is returned, swapped when reversed."""
    text = paragraph.lower().replace(_EXAMPLE, "").replace("to", "-")
    sentences = re.split(r"[!?\n]", text)
    cands = [s for s in sentences if any(k in s for k in _TVG_KEYWORDS)] or sentences
    stamps = _first_ranges(cands, _CLOCK_RANGE, _clock_seconds) or _first_ranges(
        cands, _NUM_RANGE, float
    )
    if not stamps:
        stamps = _pairs([_clock_seconds(t) for s in cands for t in _CLOCK.findall(s)])
    if not stamps:
        stamps = _pairs([float(m[0]) for s in cands if (m := _NUMBER.findall(s))])
    if not stamps:
        stamps = _first_ranges(cands, _NUM_RANGE_S, float)
    return [[a, b] if b > a else [b, a] for a, b in stamps[:1]]


def lmms_iou(a: Sequence[float], b: Sequence[float]) -> float:
    """Temporal IoU as Charades-STA's scorer computes it (0 when the hull is empty)."""
    hull = max(a[1], b[1]) - min(a[0], b[0])
    if hull <= 0:
        return 0.0
    return max(min(a[1], b[1]) - max(a[0], b[0]), 0) / hull
