"""Optional LLM judge for open-ended answers (DESIGN §4), applied to a batch of episodes.

With no judge URL nothing changes (token F1). With one, every open-ended episode's R_acc is the
judge's 0 / 0.5 / 1; an item the judge cannot score falls back to token F1, and the fallbacks are
counted (``JudgeStats``), never silent.
"""

from __future__ import annotations

from collections.abc import Sequence

from paravt.agent.episode import EpisodeResult


async def judge_overrides(results: Sequence[EpisodeResult], *, url: str | None, model: str | None,
                          timeout_s: float) -> tuple[list[float | None], dict[str, float]]:
    """Per-episode R_acc overrides (None: not open-ended or no judge) and judge counters."""
    if url is None:
        return [None] * len(results), {}
    from paravt.rewards.judge import JudgeItem, LLMJudge

    oe = [i for i, r in enumerate(results) if r.input.task == "oe"]
    if not oe:
        return [None] * len(results), {}
    items = [JudgeItem(results[i].input.question, results[i].input.answer, results[i].answer) for i in oe]
    async with LLMJudge(url, model, timeout_s=timeout_s) as judge:
        res = await judge.score(items)
    out: list[float | None] = [None] * len(results)
    for i, score in zip(oe, res.scores, strict=True):
        out[i] = score
    st = res.stats
    return out, {"judge/n": float(st.n), "judge/judged": float(st.n_judged), "judge/fallback_f1": float(st.n_fallback)}
