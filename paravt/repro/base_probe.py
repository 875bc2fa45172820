"""The simulated pretrained base, measured on HELD-OUT videos before any SFT (greedy), from the
probe rows of ``base_eval.parquet`` (``paravt.data.synth.base.probe_rows``; the assistant message
of each row is its target):

- clips (sub-agent prompt, a window of a held-out video): ``recall`` = hit clips whose reply
  reports something (``diagnosis.reports``); ``timed_right`` = hit clips whose reply reports AND
  states a time overlapping the needle (``diagnosis.timed_right``, ± 1 s); ``false_reports`` = miss
  clips whose reply reports something;
- overview MCQ (plain prompt) at n = 4 and n = 64: the reply's first letter is the answer;
- overview open question (plain prompt; for a flash "What colour is the brief flash?") at n = 4
  and n = 64: ``open`` = replies equal to the target after SQuAD normalisation (no partial credit);
  what the base SEES in an overview, apart from the letter lookup the MCQ adds;
- swapped report (``data.synth.base.report_row``: a question in the native tool form whose tool
  results disagree with the frames: another colour, for the span other times), its final think
  forced (``forced_think``): ``reads_report`` = open questions whose answer (after the last
  ``</think>``, if any) opens with the reported colour, ``keeps_truth`` = with the true one:
  whether the base answers from its tool response, which the final turn of every tool episode
  needs; ``report_by_task`` the same per task (the MCQ's letter of the reported colour's option,
  the span overlapping the reported times more than the true ones: ``follows``), and ``in_form``
  the replies in their task's answer form, right or wrong (``task_check.in_form``: a letter or an
  option's text for the MCQ, two times for the span): whether the base knows WHICH question its
  final turn answers, before what it answers;
- ``induction`` (``induction_probe``): at each gap of ``INDUCTION_GAPS`` tokens, the share of a
  repeated run of random tokens of its own words (``copy_runs.copy_pool``) the base copies
  (``data.synth.copy_runs.induction``; ``induction_pool`` names the pool): the in-context copy of
  a pretrained LM, which the final turn needs to read its tool response;
- ``by_kind``: the same per needle kind (flash, digit, shape), with ``named_right`` = hit clips
  whose reply names the needle exactly as the description does ("A large digit 7"): which kind
  the base cannot yet see, a diagnosis (no check reads it).

``base_checks`` turns the probe into ``summary.json["task_check"]`` entries, each
``{"value", "want", "holds"}`` and each able to fail.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from paravt.data.rows import TASKS, SFTRow
from paravt.data.synth.base import OVQ, REP, SEE
from paravt.data.synth.copy_runs import POOL_VERSION
from paravt.data.synth.perception import NOTHING
from paravt.protocol.tags import THINK_CLOSE
from paravt.repro.diagnosis import reports, timed_right
from paravt.repro.task_check import in_form
from paravt.rewards.accuracy import mcq_accuracy, normalize_text, tvg_iou

RECALL_MIN, TIMED_MIN, FALSE_MAX, MCQ64_MIN, MCQ4_BAND = 0.9, 0.8, 0.1, 0.8, 0.1
OPEN64_MIN = 0.8  # the open question at n = 64: the overview shows the needle, the base names it
#: The swapped report: a pretrained model answers from a tool result in its context nearly always.
READS_MIN = 0.8
#: The strong base's thinks left unclosed at the RL turn budget under τ = 0.7: a tail exists (some
#: run on, paper §H.3) but most close (a base that never closes cannot be cold-started).
OVERRUN_BAND = (0.05, 0.5)
CHUNK = 16  # requests per generate call
INDUCTION_GAPS = (0, 100, 250)
#: The copy at a gap of 100 tokens (a tool response's summaries stand ~100 tokens before the
#: answer they feed): a pretrained LM copies nearly every token of such a run.
INDUCTION_GAP, INDUCTION_MIN = 100, 0.8
assert str(INDUCTION_GAP) in map(str, INDUCTION_GAPS)  # the check reads one of the probe's gaps


def _rate(hits: int, of: int) -> dict[str, Any]:
    return {"rate": round(hits / of, 4) if of else None, "hits": hits, "of": of}


def score_probe(rows: Sequence[SFTRow], replies: Sequence[str]) -> dict[str, Any]:
    """The probe's rates from its rows and the base's greedy replies (in row order)."""
    hit = timed = hit_of = false = miss_of = 0
    mcq: dict[int, list[bool]] = {}
    open_: dict[int, list[bool]] = {}
    kinds: dict[str, dict[str, list[bool]]] = {}
    for row, reply in zip(rows, replies, strict=True):
        target = row.messages[-1].text
        e = row.extra_info
        k = kinds.setdefault(e.needle_kind or "?", {})
        if REP in row.id:
            continue  # report_rates
        if SEE in row.id and target != NOTHING:
            hit_of += 1
            said = reports(reply)
            right = bool(
                said
                and e.needle_start is not None
                and e.needle_end is not None
                and timed_right(reply, (float(e.needle_start), float(e.needle_end)))
            )
            hit, timed = hit + said, timed + right
            for key, v in (
                ("recall", said),
                ("timed_right", right),
                ("named_right", reply.split(" appears")[0] == target.split(" appears")[0]),
            ):
                k.setdefault(key, []).append(bool(v))
        elif SEE in row.id:
            said = reports(reply)
            miss_of, false = miss_of + 1, false + said
            k.setdefault("false_reports", []).append(bool(said))
        elif OVQ in row.id and e.task == "oe":
            n = int(row.id.rsplit("-n", 1)[1].split("v")[0])
            ok = normalize_text(reply) == normalize_text(target)
            open_.setdefault(n, []).append(ok)
            k.setdefault(f"open_{n}", []).append(ok)
        elif OVQ in row.id:
            n = int(row.id.rsplit("-n", 1)[1].split("v")[0])
            ok = reply.strip()[:1].upper() == target.strip()[:1].upper()
            mcq.setdefault(n, []).append(ok)
            k.setdefault(f"mcq_{n}", []).append(ok)
    chance = [
        1.0 / len(r.extra_info.options)
        for r in rows
        if OVQ in r.id and r.extra_info.task == "mcq" and r.extra_info.options
    ]
    return {
        "clip_recall": _rate(hit, hit_of),
        "clip_timed_right": _rate(timed, hit_of),
        "clip_false_reports": _rate(false, miss_of),
        "mcq": {str(n): _rate(sum(v), len(v)) for n, v in sorted(mcq.items())},
        "mcq_chance": round(sum(chance) / len(chance), 4) if chance else None,
        "open": {str(n): _rate(sum(v), len(v)) for n, v in sorted(open_.items())},
        **report_rates(rows, replies),
        "by_kind": {
            kind: {key: _rate(sum(v), len(v)) for key, v in sorted(d.items())}
            for kind, d in sorted(kinds.items())
        },
    }


def report_rates(rows: Sequence[SFTRow], replies: Sequence[str]) -> dict[str, Any]:
    """The swapped-report rows' rates: replies that follow the report (``reads_report``) or the
    truth (``keeps_truth``; ``follows``) and replies in their task's answer form (``in_form``), of
    the open questions (the headline) and per task (``report_by_task``)."""
    counts: dict[str, Counter[str | None]] = {}
    forms: Counter[str] = Counter()  # per task, replies in its answer form
    for row, reply in zip(rows, replies, strict=True):
        if REP in row.id:
            e = row.extra_info
            counts.setdefault(e.task, Counter())[follows(reply, row)] += 1
            forms[e.task] += in_form(e.task, after_think(reply), e.options)

    def rates(task: str) -> dict[str, Any]:
        c = counts.get(task, Counter())
        of = c.total()
        return {
            "reads_report": _rate(c["report"], of),
            "keeps_truth": _rate(c["truth"], of),
            "in_form": _rate(forms[task], of),
        }

    return {
        **rates("oe"),
        "report_by_task": {task: rates(task) for task in sorted(counts)},
    }


def follows(reply: str, row: SFTRow) -> str | None:
    """Which answer a swapped-report row's ``reply`` gives (read after its last ``</think>``):
    ``"report"`` (the row's target), ``"truth"`` (its ``extra_info.answer``) or None. The open
    question by its first word, the MCQ by its letter (the eval's ``mcq_letter``), the span by the
    interval it overlaps more (a span overlapping both alike follows neither)."""
    said, report = after_think(reply), after_think(row.messages[-1].text)
    e = row.extra_info
    if e.task == "tvg":
        to_report, to_truth = tvg_iou(said, report), tvg_iou(said, e.answer)
        if to_report == to_truth:
            return None
        return "report" if to_report > to_truth else "truth"
    for name, want in (("report", report), ("truth", str(e.answer))):
        if e.task == "mcq":
            hit = mcq_accuracy(said, want, e.options) == 1.0
        else:
            target = answer_words(want)
            hit = bool(target) and answer_words(said)[:1] == target[:1]
        if hit:
            return name
    return None


def forced_think(row: SFTRow) -> str:
    """What the probe forces before a row's reply: a swapped-report row's think (its target up to
    the last ``</think>`` and its newline; a greedy think of the base loops on its filler and never
    closes), nothing for the other rows."""
    if REP not in row.id:
        return ""
    head, close, _ = row.messages[-1].text.rpartition(THINK_CLOSE)
    return f"{head}{close}\n" if close else ""


def after_think(text: str) -> str:
    """What follows ``text``'s last ``</think>`` (the whole text when it closes none): a reply's
    answer, as every rate of the probe reads it."""
    return text.rsplit(THINK_CLOSE, 1)[-1]


def answer_words(reply: str) -> list[str]:
    """The normalised words of a reply's answer: what follows its last ``</think>`` (the whole
    reply when it closes none)."""
    return normalize_text(after_think(reply)).split()


def _check(value: Any, want: str, holds: bool) -> dict[str, Any]:
    return {"value": value, "want": want, "holds": bool(holds)}


def habit_checks(habit: Mapping[str, float] | None, *, strong: bool) -> dict[str, Any]:
    """Issue 39's checks of the base's own habits (its τ = 0.7 probe on the RL prompts, no think
    prefix, the RL turn budget; ``repro.training.habit_probe``). The strong (tool-native) prior
    calls tools in BOTH of its forms, native ``<tool_call>`` JSON (parseable) and ``<tool_code>``,
    and some of its thinks run past the budget unclosed; the weak prior has no tool form."""
    h = habit or {}
    native, code = h.get("closed/tool_call"), h.get("tool_code_rate")
    overrun = None if h.get("closed/think") is None else round(1.0 - float(h["closed/think"]), 4)
    if not strong:
        calls = h.get("kappa_written")
        return {
            "weak_base_no_tool_form": _check(
                {"tool_call": native, "tool_code": code, "kappa_written": calls},
                "no <tool_call> and no <tool_code>",
                native is not None and code is not None and native == 0 and code == 0,
            )
        }
    return {
        "base_tool_forms": _check(
            {"tool_call_closed": native, "tool_code": code},
            "both forms: JSON <tool_call> > 0 and <tool_code> > 0",
            native is not None and code is not None and native > 0 and code > 0,
        ),
        "base_think_overrun": _check(
            overrun,
            f"share of thinks unclosed at the RL budget in [{OVERRUN_BAND[0]}, {OVERRUN_BAND[1]}]",
            overrun is not None and OVERRUN_BAND[0] <= overrun <= OVERRUN_BAND[1],
        ),
    }


def report_task_check(probe: Mapping[str, Any]) -> dict[str, Any]:
    """``base_reads_report_by_task``: the swapped report read on EVERY task, not only the open
    question's colour (the final turn of a tool episode answers the question it was asked)."""
    by_task = probe.get("report_by_task") or {}
    rates = [(by_task.get(t) or {}).get("reads_report", {}).get("rate") for t in TASKS]
    return {
        "base_reads_report_by_task": _check(
            by_task or None,
            f"≥ {READS_MIN} on each of {', '.join(TASKS)}",
            all(r is not None and r >= READS_MIN for r in rates),
        )
    }


def base_checks(probe: Mapping[str, Any]) -> dict[str, Any]:
    """The base checks of issues 27 and 31 from a ``score_probe`` result."""

    def rate(key: str) -> float | None:
        return (probe.get(key) or {}).get("rate")

    recall, timed, false = rate("clip_recall"), rate("clip_timed_right"), rate("clip_false_reports")
    m64, m4 = ((probe.get("mcq") or {}).get(n, {}).get("rate") for n in ("64", "4"))
    o64 = (probe.get("open") or {}).get("64", {}).get("rate")
    chance = probe.get("mcq_chance")
    copied = (probe.get("induction") or {}).get(str(INDUCTION_GAP))
    reads = rate("reads_report")
    return {
        "base_clip_recall": _check(
            probe.get("clip_recall"), f"≥ {RECALL_MIN}", recall is not None and recall >= RECALL_MIN
        ),
        "base_clip_timed_right": _check(
            probe.get("clip_timed_right"),
            f"≥ {TIMED_MIN}",
            timed is not None and timed >= TIMED_MIN,
        ),
        "base_clip_false_reports": _check(
            probe.get("clip_false_reports"),
            f"≤ {FALSE_MAX}",
            false is not None and false <= FALSE_MAX,
        ),
        "base_overview_mcq_at_64": _check(
            (probe.get("mcq") or {}).get("64"),
            f"≥ {MCQ64_MIN}",
            m64 is not None and m64 >= MCQ64_MIN,
        ),
        "base_overview_mcq_at_4": _check(
            {"acc": (probe.get("mcq") or {}).get("4"), "chance": chance},
            f"within {MCQ4_BAND} of chance",
            m4 is not None and chance is not None and abs(m4 - chance) <= MCQ4_BAND,
        ),
        "base_overview_open_at_64": _check(
            {
                "acc": (probe.get("open") or {}).get("64"),
                "at_4": (probe.get("open") or {}).get("4"),
            },
            f"≥ {OPEN64_MIN}",
            o64 is not None and o64 >= OPEN64_MIN,
        ),
        "base_reads_report": _check(
            {"acc": probe.get("reads_report"), "keeps_truth": probe.get("keeps_truth")},
            f"≥ {READS_MIN}",
            reads is not None and reads >= READS_MIN,
        ),
        **report_task_check(probe),
        "base_copies_in_context": _check(
            {"acc": copied, "by_gap": probe.get("induction")},
            f"≥ {INDUCTION_MIN} at a gap of {INDUCTION_GAP}",
            copied is not None and copied >= INDUCTION_MIN,
        ),
    }


def induction_probe(model: str) -> dict[str, float]:
    """The in-context copy of the model at ``model`` at each of ``INDUCTION_GAPS``."""
    from paravt.data.synth.copy_runs import copy_pool, induction
    from paravt.models.hf.loading import load_policy

    policy = load_policy(model)
    pool = copy_pool(policy.processor.tokenizer)
    return {str(g): round(induction(policy.model, pool, g), 4) for g in INDUCTION_GAPS}


def run_probe(
    model: str,
    parquet: Path,
    *,
    max_new_tokens: int,
    max_pixels: int,
    crop_max_pixels: int,
    size_factor: int,
) -> dict[str, Any]:
    """Greedy replies of ``model`` to every probe row of ``parquet``, scored (``score_probe``)."""
    from paravt.agent.backend import open_backend
    from paravt.config import ModelConfig, RolloutConfig
    from paravt.data.chat import to_chat_messages
    from paravt.data.schema import read_rows
    from paravt.models.base import GenRequest, SamplingParams

    rows = [r for r in read_rows(parquet) if isinstance(r, SFTRow)]
    backend = open_backend(ModelConfig(path=model), RolloutConfig())
    codec, sp = backend.codec, SamplingParams(temperature=0.0, max_new_tokens=max_new_tokens)
    reqs = []
    for r in rows:
        msgs = to_chat_messages(
            r,
            parquet.parent,
            max_pixels=max_pixels,
            crop_max_pixels=crop_max_pixels,
            size_factor=size_factor,
        )[:-1]  # the prompt: the target is the last message
        enc = codec.encode_messages(msgs)
        head = codec.generation_prompt(forced_think(r))
        reqs.append(GenRequest(enc.ids + head, tuple(msgs), enc.videos, enc.images, sp))

    async def gen() -> list[str]:
        out = []
        for i in range(0, len(reqs), CHUNK):
            out += [o.text for o in await backend.generator.generate(reqs[i : i + CHUNK])]
        await backend.generator.aclose()
        return out

    replies = asyncio.run(gen())
    return {
        **score_probe(rows, replies),
        "induction": induction_probe(model),
        "induction_pool": POOL_VERSION,
        "samples": [
            {"id": r.id, "target": r.messages[-1].text, "reply": t}
            for r, t in list(zip(rows, replies))[:12]
        ],
    }
