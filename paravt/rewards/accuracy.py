"""R_acc by task type (docs/ARCHITECTURE.md §4 [paper]): MCQ letter match, temporal-grounding IoU,
token F1.

Every function takes the extracted prediction (``None`` = no answer → 0) and never raises on
any string.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Callable, Sequence

from paravt.errors import DataError, ToolCallError
from paravt.protocol.times import TIME_TOKEN, parse_time

AccuracyFn = Callable[[str | None, object, Sequence[str] | None], float]

_LETTER_ONLY = re.compile(r"^\(?\s*([A-Za-z])\s*\)?\s*[.:)]?$")  # "B", "(B)", "B.", "b"
_LETTER_LEAD = re.compile(r"^\(?([A-Z])\s*[).:]\s*\S")  # "B. red", "(B) red", "B: red"
_LETTER_PHRASE = re.compile(
    r"(?i:answer|option|choice)\s*(?i:is)?\s*[:\-]?\s*\(?([A-Z])\)?(?![A-Za-z])"
)
# a stand-alone capital, but not the article "A" or the pronoun "I" before a lowercase word
# ("A red ball", "I think"); "A or B" still counts both letters (a hedge: no single answer)
_LONE_CAPITAL = re.compile(r"(?<![A-Za-z])(?![AI]\s+(?!(?:or|and|nor)\b)[a-z])([A-Z])(?![A-Za-z])")
_OPTION_PREFIX = re.compile(r"^\(?[A-Z]\s*[).:]\s*")
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


# -------------------------------------------------------------------------------------- MCQ


def mcq_letter(text: str | None, options: Sequence[str] | None = None) -> str | None:
    """The option letter ``text`` names, or None. In order: a bare letter ("B", "(B)", "B.");
    a leading letter ("B. red"); the last "answer/option/choice (is) B" phrase; the full text of
    exactly one option; a single distinct stand-alone capital letter. Letters beyond the options
    (or beyond Z) give None."""
    if not isinstance(text, str) or not text.strip():
        return None
    s = text.strip()
    valid = _valid_letters(options)
    m = _LETTER_ONLY.match(s) or _LETTER_LEAD.match(s)
    if m:
        return _in(m.group(1).upper(), valid)
    phrases = _LETTER_PHRASE.findall(s)
    if phrases:
        return _in(phrases[-1], valid)
    if options:
        norm = _norm_option(s)
        hits = [i for i, o in enumerate(options) if _norm_option(_OPTION_PREFIX.sub("", o)) == norm]
        if len(hits) == 1:
            return chr(ord("A") + hits[0])
    lone = {c for c in _LONE_CAPITAL.findall(s) if c in valid}
    return lone.pop() if len(lone) == 1 else None


def mcq_accuracy(pred: str | None, answer: object, options: Sequence[str] | None = None) -> float:
    """1.0 when the predicted letter equals the gold letter (gold: a letter or an option's text)."""
    gold = mcq_letter(str(answer), options) if answer is not None else None
    got = mcq_letter(pred, options)
    return 1.0 if gold is not None and got == gold else 0.0


def _valid_letters(options: Sequence[str] | None) -> str:
    n = len(options) if options else 26
    return string.ascii_uppercase[: max(1, min(n, 26))]


def _in(letter: str, valid: str) -> str | None:
    return letter if letter in valid else None


def _norm_option(s: str) -> str:
    return " ".join(s.lower().translate(_PUNCT).split())


# -------------------------------------------------------------------------- temporal grounding


def parse_interval(value: object) -> tuple[float, float] | None:
    """``[a, b]`` from a pair of numbers or a string holding two times (``[a, b]``, ``a - b``,
    ``a to b``, ``from a s to b s``, ``MM:SS``…): the first two time tokens. None if absent."""
    if isinstance(value, (list, tuple)) and len(value) == 2:
        try:
            return parse_time(value[0]), parse_time(value[1])
        except ToolCallError:
            return None
    if not isinstance(value, str):
        return None
    tokens = TIME_TOKEN.findall(value)
    if len(tokens) < 2:
        return None
    try:
        return parse_time(tokens[0]), parse_time(tokens[1])
    except ToolCallError:
        return None


def tvg_iou(pred: object, gt: object, options: Sequence[str] | None = None) -> float:
    """IoU of the predicted interval with the ground truth; a reversed or empty interval (either
    side), or an unparseable one, scores 0."""
    p, g = parse_interval(pred), parse_interval(gt)
    if p is None or g is None or p[0] >= p[1] or g[0] >= g[1]:
        return 0.0
    inter = max(0.0, min(p[1], g[1]) - max(p[0], g[0]))
    union = max(p[1], g[1]) - min(p[0], g[0])
    return inter / union if union > 0 else 0.0


# ------------------------------------------------------------------------------- open-ended


def normalize_text(s: str) -> str:
    """SQuAD normalisation: lowercase, drop punctuation and articles, collapse whitespace."""
    return " ".join(_ARTICLES.sub(" ", s.lower().translate(_PUNCT)).split())


def token_f1(pred: str | None, gt: object, options: Sequence[str] | None = None) -> float:
    """SQuAD token F1 (Counter overlap). If either side normalises to no tokens, 1.0 when both
    do and 0.0 otherwise (SQuAD's rule)."""
    p = normalize_text(pred).split() if isinstance(pred, str) else []
    g = normalize_text(str(gt)).split() if gt is not None else []
    if not p or not g:
        return float(p == g)
    common = sum((Counter(p) & Counter(g)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(p), common / len(g)
    return 2 * precision * recall / (precision + recall)


#: Accuracy function by task type (``paravt.config.TaskType``).
ACCURACY: dict[str, AccuracyFn] = {"mcq": mcq_accuracy, "tvg": tvg_iou, "oe": token_f1}


def accuracy(
    task: str, pred: str | None, answer: object, options: Sequence[str] | None = None
) -> float:
    try:
        fn = ACCURACY[task]
    except KeyError:
        raise DataError(f"task type {task!r} is unknown; use one of {sorted(ACCURACY)}") from None
    return fn(pred, answer, options)
