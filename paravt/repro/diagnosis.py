"""Diagnosis of the parallel pipeline on eval results (issue 19, deliverable 4): where does an
episode lose the needle? Pure, from ``results.jsonl`` rows and the needle times of ``eval.parquet``.

Per parallel-mode episode with at least one executed window (``CallRow.ok``):
- ``coverage``: some window overlaps the needle [needle_start, needle_end] (overlap > 0);
- ``recall``: over windows that overlap it, the share whose sub-agent REPORTS something
  (a summary that is not empty and does not say nothing appears, ``reports``);
- ``false_reports``: over windows that do not overlap it, the share that report something;
- ``timed_right``: over the reports of overlapping windows, the share whose stated time span
  ("… appears from S s to E s" or "… appears at S s", the frame-supported wording of
  ``paravt.data.synth.perception``) overlaps the needle within ``TIME_SLACK_S``:
  a report at the wrong time is a hallucination that happened to land in the right window;
- ``acc_given_report``: over episodes where an overlapping window reported, the share answered
  correctly (the main agent's last step);
- ``clean``: over every executed window, the share whose summary is what the testbed's sub-agent
  learnt to write (``clean``: one line, no tag of the main agent's protocol, not cut at the token
  cap): a sub-agent that leaks the main agent's format ("… at 65.0 s.\n</think>\n<answer>…")
  still reports, so recall does not see it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from paravt.agent.subagents import TRUNCATED
from paravt.data.synth.perception import NOTHING
from paravt.eval.results import ResultRow
from paravt.protocol.tags import TAG_RE

_NOTHING_HEAD = NOTHING.split()[0].lower()  # "nothing"
_SPAN_RE = re.compile(r"from\s+(\d+(?:\.\d+)?)\s*s\s+to\s+(\d+(?:\.\d+)?)\s*s", re.IGNORECASE)
_AT_RE = re.compile(r"\bat\s+(\d+(?:\.\d+)?)\s*s\b", re.IGNORECASE)
TIME_SLACK_S = 1.0


def timed_right(summary: str, needle: tuple[float, float], slack: float = TIME_SLACK_S) -> bool:
    """The report states a time span ("from S s to E s") or a time ("at S s") and it overlaps the
    needle (± ``slack`` seconds)."""
    m = _SPAN_RE.search(summary)
    if m is not None:
        s, e = sorted((float(m.group(1)), float(m.group(2))))
    elif (a := _AT_RE.search(summary)) is not None:
        s = e = float(a.group(1))
    else:
        return False
    return min(e + slack, needle[1]) - max(s - slack, needle[0]) >= 0


def reports(summary: str) -> bool:
    """A sub-agent summary that claims to see something."""
    s = summary.strip().lower()
    return bool(s) and not s.startswith(_NOTHING_HEAD) and not s.startswith("error")


def clean(summary: str) -> bool:
    """A summary in the form ParaVT-Synth's sub-agent learnt (``perception.describe_clip``'s one
    line): one line, no protocol tag, not cut at the token cap (only the line's form is read: a
    second sentence on the same line passes)."""
    s = summary.strip()
    return bool(s) and "\n" not in s and not TAG_RE.search(s) and not s.endswith(TRUNCATED.strip())


def _share(hits: int, total: int) -> dict[str, Any]:
    return {"rate": hits / total if total else None, "hits": hits, "of": total}


def diagnose(
    rows: Sequence[ResultRow], needles: Mapping[str, tuple[float, float]]
) -> dict[str, Any]:
    """The pipeline diagnosis of the parallel-mode ``rows`` (``needles``: id → needle window)."""
    episodes = covered = cover_w = cover_rep = other_w = other_rep = reported = correct_rep = (
        timed
    ) = n_clean = 0
    for r in rows:
        if r.mode != "parallel" or r.id not in needles:
            continue
        wins = [c for c in r.calls if c.ok and c.start is not None and c.end is not None]
        if not wins:
            continue
        episodes += 1
        ns, ne = needles[r.id]
        overlaps = [min(c.end, ne) - max(c.start, ns) > 0 for c in wins]  # type: ignore[type-var,operator]
        said = [reports(c.summary) for c in wins]
        hit_said = [c for c, o, s in zip(wins, overlaps, said) if o and s]
        covered += any(overlaps)
        cover_w += sum(overlaps)
        cover_rep += len(hit_said)
        timed += sum(timed_right(c.summary, (ns, ne)) for c in hit_said)
        other_w += len(wins) - sum(overlaps)
        other_rep += sum(s for o, s in zip(overlaps, said) if not o)
        n_clean += sum(clean(c.summary) for c in wins)
        if hit_said:
            reported += 1
            correct_rep += bool(r.correct)
    return {
        "episodes_with_windows": episodes,
        "coverage": _share(covered, episodes),
        "recall": _share(cover_rep, cover_w),
        "false_reports": _share(other_rep, other_w),
        "timed_right": _share(timed, cover_rep),
        "acc_given_report": _share(correct_rep, reported),
        "clean": _share(n_clean, cover_w + other_w),
    }


def needle_windows(eval_parquet: str) -> dict[str, tuple[float, float]]:
    """id → (needle_start, needle_end) of the prompts of an eval parquet that carry them."""
    from paravt.data.schema import read_rows

    out = {}
    for row in read_rows(eval_parquet):
        e = row.extra_info
        if e.needle_start is not None and e.needle_end is not None:
            out[e.id] = (float(e.needle_start), float(e.needle_end))
    return out
