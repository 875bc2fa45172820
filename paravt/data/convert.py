"""Sequential → parallel trace conversion (`paravt data convert`).

A sequential trace makes one crop per turn and sees the frames of each crop. We merge ADJACENT
call turns into one parallel turn when the later call could have been made without the earlier
response. The later call j DEPENDS on an earlier call i of the current group (merge refused,
reason in brackets) when:

- [overlap] the windows overlap (intersection > 0) — this covers [contained]: j's window lies
  inside i's (a zoom into what i showed), reported separately;
- [adjacent] j's window starts or ends within ``adjacent_tol_s`` (default 1 s) of i's end or
  start: continuing a scan right where i stopped usually follows from what i's last frames showed;
- [cites] the reasoning before j (its think text) cites a timestamp (``MM:SS``, ``H:MM:SS`` or a
  number followed by s/sec/seconds) that appears in i's RESPONSE (its summary), within 0.5 s;
- [k_max] the merged turn would exceed ``k_max`` calls.

Otherwise j joins the group. A merged turn's think is the group's think texts joined in order.
Frame responses become text: each observation is replaced by ``[i] window: summary`` lines
(`render_result_line`), where the summary is the tool message's ``summary`` field when present,
else the think text of the assistant turn that consumed it (the continuation), else "(no summary)".
The system prompt is re-rendered for parallel mode when it is the sequential one.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from paravt.data.rows import Message, Row, SFTRow
from paravt.errors import DataError
from paravt.protocol import tags as T
from paravt.protocol.times import parse_time

_CALL_RE = re.compile(re.escape(T.TOOL_CALL_OPEN) + r"(.*?)" + re.escape(T.TOOL_CALL_CLOSE), re.S)
_THINK_RE = re.compile(re.escape(T.THINK_OPEN) + r"\n?(.*?)" + re.escape(T.THINK_CLOSE), re.S)
_TIME_RE = re.compile(
    r"\b\d+:\d{2}(?::\d{2})?(?:\.\d+)?\b|\b\d+(?:\.\d+)?\s*(?:s|sec|secs|seconds)\b"
)
_LABEL_RE = re.compile(r"^\[\d+\](?: \d+(?::\d{2}){1,2}–\d+(?::\d{2}){1,2})?: ?")
NO_SUMMARY = "(no summary)"


@dataclass(frozen=True)
class CallTurn:
    think: str
    windows: tuple[tuple[float, float], ...]
    summary: str  # text replacing the frames this turn's calls returned
    response_times: tuple[float, ...]  # timestamps cited IN the response (summary)


@dataclass(frozen=True)
class ConvertStats:
    rows: int = 0
    converted: int = 0
    skipped: int = 0  # not a sequential main trace
    turns_before: int = 0
    turns_after: int = 0
    calls: int = 0
    merges: int = 0
    refused: dict[str, int] = field(default_factory=dict)

    @property
    def calls_per_turn_before(self) -> float:
        return self.calls / self.turns_before if self.turns_before else 0.0

    @property
    def calls_per_turn_after(self) -> float:
        return self.calls / self.turns_after if self.turns_after else 0.0


def times_in(text: str) -> tuple[float, ...]:
    """Timestamps cited in free text (clock forms and numbers with a seconds unit)."""
    out = []
    for tok in _TIME_RE.findall(text):
        try:
            out.append(parse_time(tok.strip()))
        except Exception:  # noqa: BLE001 - a token that is not a time is simply not cited
            continue
    return tuple(out)


def _think(text: str) -> str:
    m = _THINK_RE.search(text)
    return m.group(1).strip() if m else ""


def _windows(text: str) -> tuple[tuple[float, float], ...]:
    out = []
    for body in _CALL_RE.findall(text):
        try:
            args = json.loads(body)["arguments"]
            out.append((parse_time(args["start_time"]), parse_time(args["end_time"])))
        except Exception as e:  # noqa: BLE001
            raise DataError(
                f"call {body.strip()[:60]!r} is not a JSON crop_video call ({e}); "
                "run `paravt data check` on the input first"
            ) from None
    return tuple(out)


def dependency(
    turn: CallTurn, group: Sequence[CallTurn], *, adjacent_tol_s: float = 1.0
) -> str | None:
    """Why ``turn`` depends on a call of ``group`` (a reason from the module docstring) or None."""
    cited = times_in(turn.think)
    for prev in group:
        for a, b in prev.windows:
            for s, e in turn.windows:
                if a <= s and e <= b:
                    return "contained"
                if min(b, e) - max(a, s) > 0:
                    return "overlap"
                if abs(s - b) <= adjacent_tol_s or abs(e - a) <= adjacent_tol_s:
                    return "adjacent"
        if any(abs(c - r) <= 0.5 for c in cited for r in prev.response_times):
            return "cites"
    return None


def _call_turns(msgs: Sequence[Message]) -> tuple[list[CallTurn], int]:
    """The call turns from message 2 on, and the index of the first message after them."""
    turns: list[CallTurn] = []
    i = 2
    while i + 1 < len(msgs) and msgs[i].role == "assistant" and T.TOOL_CALL_OPEN in msgs[i].text:
        tool = msgs[i + 1]
        if tool.role != "tool":
            raise DataError(f"message {i} calls tools but message {i + 1} is a {tool.role} message")
        nxt = msgs[i + 2].text if i + 2 < len(msgs) else ""
        summary = tool.summary or _text_summary(tool) or _think(nxt) or NO_SUMMARY
        turns.append(
            CallTurn(_think(msgs[i].text), _windows(msgs[i].text), summary, times_in(summary))
        )
        i += 2
    return turns, i


def _text_summary(tool: Message) -> str:
    """Text the observation itself carries besides its frames (labels and markers removed)."""
    lines = [_LABEL_RE.sub("", ln).replace("<video>", "").strip() for ln in tool.text.split("\n")]
    return " ".join(ln for ln in lines if ln)


def convert_row(
    row: SFTRow, *, k_max: int = 8, adjacent_tol_s: float = 1.0
) -> tuple[SFTRow, Counter, int]:
    """The parallel version of a sequential trace, the refusal reasons, and merges done."""
    from paravt.protocol import prompts

    turns, rest_at = _call_turns(row.messages)
    groups: list[list[CallTurn]] = []
    refused: Counter = Counter()
    for t in turns:
        if groups:
            why = dependency(t, groups[-1], adjacent_tol_s=adjacent_tol_s)
            if why is None and sum(len(g.windows) for g in groups[-1]) + len(t.windows) > k_max:
                why = "k_max"
            if why is None:
                groups[-1].append(t)
                continue
            refused[why] += 1
        groups.append([t])
    system = row.messages[0]
    if system.role == "system" and system.text == prompts.system_prompt("sequential"):
        system = Message("system", prompts.system_prompt("parallel"))
    out: list[Message] = [system, row.messages[1]]
    for g in groups:
        calls = [T.render_crop_call(s, e) for t in g for (s, e) in t.windows]
        out.append(Message("assistant", T.render_tool_turn(" ".join(t.think for t in g), calls)))
        lines, k = [], 1
        for t in g:
            for s, e in t.windows:
                lines.append(T.render_result_line(k, s, e, t.summary))
                k += 1
        out.append(Message("tool", T.render_tool_response_body(lines)))
    out.extend(row.messages[rest_at:])
    merges = len(turns) - len(groups)
    return replace(row, id=f"{row.id}-conv", mode="parallel", messages=tuple(out)), refused, merges


def convert_rows(
    rows: Sequence[Row], *, k_max: int = 8, adjacent_tol_s: float = 1.0
) -> tuple[list[Row], ConvertStats]:
    """Convert every sequential main trace; other rows pass through unchanged (counted skipped)."""
    out: list[Row] = []
    refused: Counter = Counter()
    conv = skipped = before = after = calls = merges = 0
    for r in rows:
        if not (isinstance(r, SFTRow) and r.kind == "main" and r.mode == "sequential"):
            skipped += 1
            out.append(r)
            continue
        new, why, m = convert_row(r, k_max=k_max, adjacent_tol_s=adjacent_tol_s)
        n_calls = sum(len(_CALL_RE.findall(x.text)) for x in r.messages if x.role == "assistant")
        before += sum(1 for x in r.messages if x.role == "assistant" and T.TOOL_CALL_OPEN in x.text)
        after += sum(
            1 for x in new.messages if x.role == "assistant" and T.TOOL_CALL_OPEN in x.text
        )
        calls += n_calls
        refused.update(why)
        merges += m
        conv += 1
        out.append(new)
    stats = ConvertStats(
        len(rows), conv, skipped, before, after, calls, merges, dict(sorted(refused.items()))
    )
    return out, stats
