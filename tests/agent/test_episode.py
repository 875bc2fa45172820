"""Episode behaviour: dispatch modes, batched sub-agents, token-exact trajectories, failures as
data.

Most tests drive the episode with ``ScriptedGenerator``, which stands in for the inference server
(it returns fixed texts, tokenized by the real tiny tokenizer), so that the structure can be
asserted exactly; the last tests run the real HF backend end to end.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from paravt.agent import EpisodeInput, EpisodeSettings, run_episode
from paravt.models.base import ChatMessage, GenOutput, GenRequest, SamplingParams
from paravt.models.chat import ChatCodec
from paravt.models.hf.loading import load_processor
from paravt.protocol import prompts
from paravt.protocol.tags import render_answer, render_crop_call, render_tool_turn
from paravt.tools import build_toolset
from paravt.video import write_video
from paravt.video.draw import solid


def is_sub_request(r: GenRequest) -> bool:
    """A sub-agent's request: no system prompt (the default summary prompt) or the question
    prompt's system prompt; a main-agent request here always starts with its system prompt."""
    first = r.messages[0]
    return first.role == "user" or first.content == prompts.subagent_system_prompt()


class ScriptedGenerator:
    """Stands in for the inference server: main-agent requests get ``main`` texts in order, each
    sub-agent request gets ``f"nothing brief in {window}"``. Records every batch it was sent."""

    def __init__(self, codec: ChatCodec, main: Sequence[str]) -> None:
        self.codec, self.main, self.batches = codec, list(main), []

    async def generate(self, requests: Sequence[GenRequest]) -> list[GenOutput]:
        self.batches.append(list(requests))
        outs = []
        for r in requests:
            is_sub = is_sub_request(r)
            text = "a grey scene, nothing brief" if is_sub else self.main.pop(0)
            ids = self.codec.encode_text(text) + (self.codec.im_end_id,)
            outs.append(GenOutput(ids, tuple(-0.5 for _ in ids), text, "stop"))
        return outs

    async def aclose(self) -> None:
        return None


@pytest.fixture(scope="module")
def video(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = Path(tmp_path_factory.mktemp("vid")) / "v.mp4"
    frames = [solid(64, 64, (40 + 3 * i, 90, 120)) for i in range(40)]  # 20 s at 2 fps
    write_video(path, frames, fps=2.0)
    return str(path)


@pytest.fixture(scope="module")
def codec(tiny_qwen3_dir: str) -> ChatCodec:
    return ChatCodec(load_processor(tiny_qwen3_dir))


def _settings(**kw) -> EpisodeSettings:
    base = dict(
        mode="parallel",
        overview_max_pixels=64 * 64,
        crop_max_pixels=64 * 64,
        crop_max_frames=4,
        sampling=SamplingParams(temperature=0.0, max_new_tokens=64),
        sub_sampling=SamplingParams(temperature=0.0, max_new_tokens=16),
    )
    base.update(kw)
    return EpisodeSettings(**base)


def _inp(video: str, nframes: int = 4) -> EpisodeInput:
    return EpisodeInput(
        "q1", video, "What colour flashes?", "mcq", "B", ("A. red", "B. blue"), nframes
    )


def _run(video, codec, main_texts, **kw):
    gen = ScriptedGenerator(codec, main_texts)
    res = asyncio.run(
        run_episode(
            _inp(video),
            generator=gen,
            codec=codec,
            settings=_settings(**kw),
            episode_id="ep1",
            tools=build_toolset(["crop_video"]),
        )
    )
    return res, gen


TURN1 = render_tool_turn(
    "I need to look.",
    [render_crop_call(0, 5), render_crop_call(5, 10), render_crop_call(12, 11)],
    with_open_think=False,
)
TURN2 = render_answer("The second window shows it.", "B", with_open_think=False)


def test_parallel_turn_sends_all_subagents_in_one_batch(video: str, codec: ChatCodec) -> None:
    res, gen = _run(video, codec, [TURN1, TURN2])
    # batches: main turn 1, ONE batch of the 2 valid windows' sub-agents, main turn 2
    assert [len(b) for b in gen.batches] == [1, 2, 1]
    assert [s.index for s in res.subs] == [1, 2] and all(s.episode_id == "ep1" for s in res.subs)
    assert all(s.role == "sub" for s in res.subs) and res.main.role == "main"
    assert res.answer == "B" and res.end_reason == "answer"
    assert [c.ok for c in res.calls] == [
        True,
        True,
        False,
    ]  # start >= end is an error for call 3 only
    assert res.n_successful_calls == 2


def test_tool_response_is_one_turn_labelled_in_call_order(video: str, codec: ChatCodec) -> None:
    _, gen = _run(video, codec, [TURN1, TURN2])
    tool_msgs = [m for m in gen.batches[2][0].messages if m.role == "tool"]
    assert len(tool_msgs) == 1
    lines = tool_msgs[0].content.splitlines()
    assert lines[0].startswith("[1] 00:00–00:05: a grey scene")
    assert lines[1].startswith("[2] 00:05–00:10: a grey scene")
    assert lines[2].startswith("[3]") and "error" in lines[2]


def test_loss_mask_covers_exactly_the_sampled_tokens(video: str, codec: ChatCodec) -> None:
    res, _ = _run(video, codec, [TURN1, TURN2])
    sampled = [codec.encode_text(t) + (codec.im_end_id,) for t in (TURN1, TURN2)]
    masked = [i for i, m in zip(res.main.ids, res.main.loss_mask) if m]
    assert masked == [i for s in sampled for i in s]
    assert all(lp == -0.5 for lp, m in zip(res.main.logprobs, res.main.loss_mask) if m)
    assert all(lp == 0.0 for lp, m in zip(res.main.logprobs, res.main.loss_mask) if not m)
    # the forced think prefix is prompt: the token right before each response is not trained
    assert res.completion.startswith("<think>\n") and res.completion.count("<think>\n") == 2


def test_trajectory_equals_the_chat_template_rendering(video: str, codec: ChatCodec) -> None:
    """Golden test at the episode level: appended ids == one rendering of the whole conversation."""
    res, gen = _run(video, codec, [TURN1, TURN2])
    conversation = list(gen.batches[2][0].messages) + [
        ChatMessage("assistant", "<think>\n" + TURN2)
    ]
    whole = codec.encode_messages(conversation)
    assert res.main.ids == whole.ids
    assert len(res.main.videos) == 1 and res.main.videos[0] is whole.videos[0]


def test_sequential_reinjects_crop_frames_one_call_per_turn(video: str, codec: ChatCodec) -> None:
    turn1 = render_tool_turn(
        "look", [render_crop_call(0, 5), render_crop_call(5, 10)], with_open_think=False
    )
    res, gen = _run(video, codec, [turn1, TURN2], mode="sequential")
    assert [len(b) for b in gen.batches] == [1, 1]  # no sub-agents
    assert res.subs == ()
    assert len(res.main.videos) == 2  # overview + the re-injected crop
    assert [c.ok for c in res.calls] == [True, False]  # second call refused: one per turn


def test_direct_mode_answers_in_one_turn_and_runs_no_tool(video: str, codec: ChatCodec) -> None:
    res, gen = _run(video, codec, [TURN1], mode="none")
    assert len(gen.batches) == 1 and res.calls == () and res.end_reason == "answer"


def test_calls_on_the_last_turn_end_with_max_turns(video: str, codec: ChatCodec) -> None:
    """max_turns=1: one tool round read, so two generations; ours does not run the last turn's
    calls, the release's rules run and count them (no turn reads them: no tool turn appended)."""
    res, gen = _run(video, codec, [TURN1, TURN1], max_turns=1, turn_rules="paravt")
    assert res.end_reason == "max_turns" and len(res.main.turns) == 2
    assert [len(b) for b in gen.batches] == [1, 2, 1]  # tools of the last turn are not run
    assert res.n_successful_calls == 2 and len(res.subs) == 2
    rel, gen = _run(video, codec, [TURN1, TURN1], max_turns=1, turn_rules="release")
    assert rel.end_reason == "max_turns" and len(rel.main.turns) == 2
    assert [len(b) for b in gen.batches] == [1, 2, 1, 2]  # the last turn's 2 windows run too
    assert rel.n_successful_calls == 4 and len(rel.subs) == 4 and len(rel.calls) == 6
    assert rel.main.ids == res.main.ids  # ... and append nothing after the final turn


def test_observation_that_overflows_is_rolled_back(video: str, codec: ChatCodec) -> None:
    res0, _ = _run(video, codec, [TURN1, TURN2])
    first_turn_end = res0.main.ids.index(codec.im_end_id, res0.main.prompt_len) + 2
    res, _ = _run(video, codec, [TURN1, TURN2], max_context_tokens=first_turn_end + 20)
    assert res.end_reason == "length"
    assert len(res.main.ids) == first_turn_end  # nothing of the tool turn was appended


def test_broken_video_is_an_error_not_a_crash(tmp_path: Path, codec: ChatCodec) -> None:
    bad = tmp_path / "broken.mp4"
    bad.write_bytes(
        b"\x00\x00\x00\x18ftypmp42"
        + bytes(np.random.default_rng(0).integers(0, 255, 500, dtype=np.uint8))
    )
    gen = ScriptedGenerator(codec, [TURN1, TURN2])
    res = asyncio.run(
        run_episode(
            _inp(str(bad)),
            generator=gen,
            codec=codec,
            settings=_settings(),
            episode_id="ep2",
            tools=build_toolset(["crop_video"]),
        )
    )
    assert res.error and res.answer == "B"
    assert all(not c.ok and "unavailable" in (c.error or "") for c in res.calls)


def test_real_model_runs_every_mode_end_to_end(video: str, tiny_qwen3_dir: str) -> None:
    from paravt.models.hf.generator import HFGenerator
    from paravt.models.hf.loading import load_policy

    policy = load_policy(tiny_qwen3_dir)
    gen, codec = HFGenerator(policy), ChatCodec(policy.processor)
    for mode in ("parallel", "sequential", "none"):
        res = asyncio.run(
            run_episode(
                _inp(video),
                generator=gen,
                codec=codec,
                settings=_settings(mode=mode),
                episode_id=f"real-{mode}",
                tools=build_toolset(["crop_video"]),
            )
        )
        generated = sum(t.n_generated_tokens for t in res.main.turns)
        assert res.main.n_sampled == generated > 0
        assert res.end_reason in ("answer", "max_turns", "length")
        assert all(s.n_sampled > 0 and s.episode_id == f"real-{mode}" for s in res.subs)


def test_degenerate_output_reaches_the_reward_and_scores_only_the_bias(
    video: str, codec: ChatCodec
) -> None:
    """Special tokens are kept in the completion, so docs/ARCHITECTURE.md §2's degenerate rule can
    fire."""
    from paravt.agent import episode_reward
    from paravt.rewards import RewardWeights

    loop = "<|im_start|>assistant\n" * 6
    res, _ = _run(video, codec, [loop])
    assert "<|im_start|>" in res.completion
    b = episode_reward(res, RewardWeights.default())
    assert b.degenerate and b.reward == pytest.approx(RewardWeights.default().bias)


class FailingSecondSub(ScriptedGenerator):
    """Fails the second sub-agent request of the first sub-agent batch."""

    async def generate(self, requests):
        outs = await super().generate(requests)
        if len(requests) > 1 and not getattr(self, "failed", False):
            self.failed = True
            outs[1] = GenOutput((), (), "", "error", error="boom")
        return outs


def test_subagent_indices_stay_unique_when_one_fails(video: str, codec: ChatCodec) -> None:
    turn = render_tool_turn(
        "look",
        [render_crop_call(0, 5), render_crop_call(5, 10), render_crop_call(10, 15)],
        with_open_think=False,
    )
    gen = FailingSecondSub(codec, [turn, turn, TURN2])
    res = asyncio.run(
        run_episode(
            _inp(video),
            generator=gen,
            codec=codec,
            settings=_settings(),
            episode_id="ep3",
            tools=build_toolset(["crop_video"]),
        )
    )
    assert [s.index for s in res.subs] == [1, 3, 4, 5, 6]  # index 2 failed and is never reused
    assert [c.ok for c in res.calls[:3]] == [True, False, True] and "boom" in (
        res.calls[1].error or ""
    )
    assert res.backend_errors == 1  # the trainer drops this group: a crash is not a training signal


def test_rolled_back_tool_turn_trains_no_subagent_and_counts_no_call(
    video: str, codec: ChatCodec
) -> None:
    res0, _ = _run(video, codec, [TURN1, TURN2])
    first_turn_end = res0.main.ids.index(codec.im_end_id, res0.main.prompt_len) + 2
    res, _ = _run(video, codec, [TURN1, TURN2], max_context_tokens=first_turn_end + 20)
    assert (
        res.end_reason == "length"
        and res.subs == ()
        and res.calls == ()
        and res.n_successful_calls == 0
    )
