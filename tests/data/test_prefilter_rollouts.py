"""The all-G-wrong rule through the real episode (`run_group`)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

from paravt.agent import EpisodeSettings
from paravt.data.schema import read_rows
from paravt.models.base import GenOutput, GenRequest, SamplingParams
from paravt.models.chat import ChatCodec
from paravt.models.hf.loading import load_processor
from paravt.rl.prefilter import prefilter, rollout_accuracies

SETTINGS = EpisodeSettings(mode="none", sampling=SamplingParams(temperature=0.0, max_new_tokens=16))


class AnswerBook:
    """A policy that answers from a book keyed by question text: the k-th request for a question
    gets ``book[question][k % len]`` in arrival order (so some rollouts are right and some
    wrong)."""

    def __init__(self, codec: ChatCodec, book: dict[str, list[str]]) -> None:
        self.codec, self.book, self.seen = codec, book, {q: 0 for q in book}

    async def generate(self, requests: Sequence[GenRequest]) -> list[GenOutput]:
        outs = []
        for r in requests:
            q = next(q for q in self.book if q in r.messages[1].content)
            answers = self.book[q]
            text = f"guess\n</think>\n<answer>{answers[self.seen[q] % len(answers)]}</answer>"
            self.seen[q] += 1
            ids = self.codec.encode_text(text) + (self.codec.im_end_id,)
            outs.append(GenOutput(ids, tuple(-0.1 for _ in ids), text, "stop"))
        return outs

    async def aclose(self) -> None:
        return None


def test_prompts_whose_rollouts_are_all_wrong_are_dropped(
    synth_dir: Path, tiny_qwen3_dir: str
) -> None:
    rows = read_rows(synth_dir / "rl.parquet")[:2]  # the mcq and tvg prompts of one video
    mcq, tvg = rows
    wrong_letter = next(L for L in "ABCD" if L != mcq.extra_info.answer)
    book = {
        mcq.extra_info.question: [mcq.extra_info.answer, wrong_letter],
        tvg.extra_info.question: ["[0, 1]"],
    }
    gen = AnswerBook(ChatCodec(load_processor(tiny_qwen3_dir)), book)
    accs = asyncio.run(
        rollout_accuracies(rows, synth_dir, generator=gen, codec=gen.codec, settings=SETTINGS, g=4)
    )
    assert sorted(accs[mcq.id]) == [0.0, 0.0, 1.0, 1.0]  # episodes run concurrently: order is free
    assert len(accs[tvg.id]) == 4 and max(accs[tvg.id]) < 0.5
    kept, report = prefilter(rows, accs)
    assert [r.id for r in kept] == [mcq.id]
    assert [(d.id, d.rule) for d in report.dropped] == [(tvg.id, "all_wrong")]


def test_a_real_tiny_model_gives_g_accuracies_per_prompt(
    synth_dir: Path, tiny_qwen3_dir: str
) -> None:
    from paravt.models.hf.generator import HFGenerator
    from paravt.models.hf.loading import load_policy

    policy = load_policy(tiny_qwen3_dir)
    row = read_rows(synth_dir / "rl.parquet")[1]
    accs = asyncio.run(
        rollout_accuracies(
            [row],
            synth_dir,
            generator=HFGenerator(policy),
            codec=ChatCodec(policy.processor),
            settings=SETTINGS,
            g=2,
        )
    )
    assert list(accs) == [row.id] and len(accs[row.id]) == 2
    assert all(0.0 <= a <= 1.0 for a in accs[row.id])
