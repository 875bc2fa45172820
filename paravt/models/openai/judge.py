"""Optional LLM judge for open-ended answers (docs/ARCHITECTURE.md §4): an OpenAI-compatible chat
endpoint scores each (question, reference, prediction) as 0, 0.5 or 1.

Requests of one ``score`` call run concurrently (bounded by ``concurrency``). Each request follows
the ONE policy of the OpenAI-compatible clients (``paravt.http.retry``): a WHOLE-request
deadline of ``timeout_s`` (a server that drips one byte a second is cut at ``timeout_s``), a reply
cap of ``max_reply_bytes`` (not retried), and timeouts, transport errors, 408, 429 and 5xx retried
``max_retries`` times after ``backoff_s * 2**retry`` or the server's ``Retry-After`` when longer.
A request that still fails, or whose reply holds no 0 / 0.5 / 1 (or is too large), falls back to
token F1 and is counted in ``JudgeStats.n_fallback`` (log it: a
judge that silently degrades to F1 changes the reward). A missing prediction scores 0 without a
request. Never raises for one bad item.

`judge_overrides` applies the judge to a batch of episodes: with no judge URL nothing changes
(token F1); with one, every open-ended episode's R_acc is the judge's 0 / 0.5 / 1.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import httpx

from paravt.http.bounded import Reply
from paravt.http.retry import RetryPolicy, send
from paravt.http.urls import api_base
from paravt.protocol.tags import defuse_control_text
from paravt.rewards.accuracy import token_f1

_SCORE_RE = re.compile(r"(?<![\d.])(0\.5|1(?:\.0+)?|0(?:\.0+)?)(?!\d|\.\d)")

JUDGE_SYSTEM = (
    "You grade answers to questions about a video. Compare the prediction with the "
    "reference answer. Reply with one number only: 1 (correct), 0.5 (partly correct) "
    "or 0 (wrong)."
)


@dataclass(frozen=True)
class JudgeItem:
    question: str
    reference: str
    prediction: str | None


@dataclass(frozen=True)
class JudgeStats:
    n: int  # items scored
    n_judged: int  # scored by the judge
    n_fallback: int  # scored by token F1 after failures or unreadable replies
    n_retries: int  # extra attempts made
    n_empty: int  # missing predictions (0 without a request)

    def as_metrics(self) -> dict[str, float]:
        return {
            "judge/n": float(self.n),
            "judge/judged": float(self.n_judged),
            "judge/fallback_f1": float(self.n_fallback),
        }


@dataclass(frozen=True)
class JudgeResult:
    scores: tuple[float, ...]
    stats: JudgeStats


@dataclass(frozen=True)
class _One:
    score: float
    judged: bool
    retries: int


class LLMJudge:
    """``LLMJudge(url)`` where ``url`` is the server's base, ``http://host:port/v1`` or
    ``http://host:port`` (the same convention as the openai backend,
    ``paravt.http.urls``)."""

    def __init__(
        self,
        url: str,
        model: str | None = None,
        *,
        timeout_s: float = 30.0,
        max_retries: int = 2,
        concurrency: int = 8,
        backoff_s: float = 0.2,
        max_reply_bytes: int = 1 << 20,
    ) -> None:
        self._endpoint = api_base(url) + "/chat/completions"
        self._model = model or "judge"
        self._timeout = timeout_s
        self._max_bytes = max_reply_bytes  # a judge answers with one number: 1 MiB is far beyond it
        self._retry = RetryPolicy(max_retries=max(0, max_retries), backoff_s=backoff_s)
        self._sem = asyncio.Semaphore(max(1, concurrency))
        self._client = httpx.AsyncClient(timeout=timeout_s)

    async def score(self, items: Sequence[JudgeItem]) -> JudgeResult:
        results = await asyncio.gather(*(self._score_one(it) for it in items))
        empty = sum(1 for it in items if not (it.prediction or "").strip())
        judged = sum(r.judged for r in results)
        stats = JudgeStats(
            n=len(results),
            n_judged=judged,
            n_fallback=len(results) - judged - empty,
            n_retries=sum(r.retries for r in results),
            n_empty=empty,
        )
        return JudgeResult(tuple(r.score for r in results), stats)

    async def aclose(self) -> None:
        await self._client.aclose()

    async def __aenter__(self) -> LLMJudge:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _score_one(self, item: JudgeItem) -> _One:
        if not (item.prediction or "").strip():
            return _One(0.0, False, 0)
        body = {
            "model": self._model,
            "temperature": 0,
            "max_tokens": 8,
            "messages": judge_messages(item),
        }
        async with self._sem:
            out = await send(
                self._client,
                "POST",
                self._endpoint,
                json=body,
                policy=self._retry,
                timeout_s=self._timeout,
                max_bytes=self._max_bytes,
            )
        # a reply that is no chat completion, or holds no score, is not asked again: F1
        score = None if out.reply is None else parse_judge_reply(_reply_text(out.reply))
        if score is not None:
            return _One(score, True, out.retries)
        return _One(token_f1(item.prediction, item.reference), False, out.retries)


def _reply_text(reply: Reply) -> str:
    """The chat completion's text; "" for any other reply (an error status, not JSON, no choice)."""
    if reply.status != 200:
        return ""
    try:
        return str(reply.json()["choices"][0]["message"]["content"])
    except (ValueError, KeyError, IndexError, TypeError):
        return ""


async def judge_where_given(
    items: Sequence[JudgeItem | None], *, url: str | None, model: str | None, timeout_s: float
) -> tuple[list[float | None], dict[str, float]]:
    """The judge's score of every given item (None where the item is None, or with no ``url``) and
    the judge counters; one batched pass. The scoring path of train, eval, verl and ``paravt
    score``."""
    out: list[float | None] = [None] * len(items)
    asked = [i for i, it in enumerate(items) if it is not None]
    if url is None or not asked:
        return out, {}
    async with LLMJudge(url, model, timeout_s=timeout_s) as judge:
        res = await judge.score([it for it in items if it is not None])
    for i, value in zip(asked, res.scores, strict=True):
        out[i] = value
    return out, res.stats.as_metrics()


def judge_messages(item: JudgeItem) -> list[dict[str, str]]:
    """The judge's chat messages. Question, reference and prediction are data: control-token text
    in them (``<|im_end|>``…) is defused so that the judge server cannot read it as a turn."""
    q, r, p = (
        defuse_control_text(x or "") for x in (item.question, item.reference, item.prediction)
    )
    return [
        {"role": "system", "content": JUDGE_SYSTEM},
        {"role": "user", "content": f"Question: {q}\nReference: {r}\nPrediction: {p}"},
    ]


def parse_judge_reply(text: str) -> float | None:
    """The first 0 / 0.5 / 1 in the reply (``"Score: 1"``, ``"0.5"``), else None."""
    m = _SCORE_RE.search(text or "")
    return float(m.group(1)) if m else None


class JudgedInput(Protocol):
    """What `judge_overrides` reads of an episode's input (`paravt.agent.EpisodeInput`)."""

    @property
    def task(self) -> str: ...
    @property
    def question(self) -> str: ...
    @property
    def answer(self) -> str: ...


class Judged(Protocol):
    """What `judge_overrides` reads of a finished episode (`paravt.agent.EpisodeResult`)."""

    @property
    def input(self) -> JudgedInput: ...
    @property
    def answer(self) -> str | None: ...


async def judge_overrides(
    results: Sequence[Judged], *, url: str | None, model: str | None, timeout_s: float
) -> tuple[list[float | None], dict[str, float]]:
    """Per-episode R_acc overrides (None: not open-ended or no judge) and judge counters."""
    items = [
        JudgeItem(r.input.question, r.input.answer, r.answer) if r.input.task == "oe" else None
        for r in results
    ]
    return await judge_where_given(items, url=url, model=model, timeout_s=timeout_s)
