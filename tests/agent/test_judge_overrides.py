"""The LLM judge replaces R_acc of open-ended episodes only (toy judge server on 127.0.0.1)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from paravt.agent import EpisodeInput, EpisodeSettings, episode_reward, run_episode
from paravt.models.base import SamplingParams
from paravt.models.chat import ChatCodec
from paravt.models.hf.loading import load_processor
from paravt.models.openai.judge import judge_overrides
from paravt.protocol.tags import render_answer
from paravt.rewards import RewardWeights
from paravt.tools import build_toolset

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parents[1] / "models"))
from test_episode import ScriptedGenerator, video  # noqa: E402,F401 - the video fixture
from test_judge import server  # noqa: E402,F401 - the toy judge fixture


def _episode(video: str, codec: ChatCodec, task: str, answer: str, said: str):
    gen = ScriptedGenerator(codec, [render_answer("Looked.", said, with_open_think=False)])
    inp = EpisodeInput(f"j-{task}", video, "What happens?", task, answer, None, 4)  # type: ignore[arg-type]
    settings = EpisodeSettings(
        mode="none", sampling=SamplingParams(temperature=0.0, max_new_tokens=32)
    )
    return asyncio.run(
        run_episode(
            inp, generator=gen, codec=codec, settings=settings, tools=build_toolset(["crop_video"])
        )
    )


def test_judge_scores_open_ended_episodes_and_leaves_the_rest(
    server, video: str, tiny_qwen3_dir: str
) -> None:
    url, state = server
    codec = ChatCodec(load_processor(tiny_qwen3_dir))
    oe = _episode(
        video, codec, "oe", "red flash", "red light"
    )  # F1 0.5; the toy judge: shares a word -> 0.5
    oe_exact = _episode(video, codec, "oe", "red flash", "red flash")
    mcq = _episode(video, codec, "mcq", "B", "B")
    overrides, counts = asyncio.run(
        judge_overrides([oe, oe_exact, mcq], url=url, model=None, timeout_s=5)
    )
    assert overrides == [0.5, 1.0, None] and state.requests == 2
    assert counts == {"judge/n": 2.0, "judge/judged": 2.0, "judge/fallback_f1": 0.0}
    assert episode_reward(oe_exact, RewardWeights.default(), overrides[1]).acc == 1.0
    none, empty = asyncio.run(judge_overrides([oe], url=None, model=None, timeout_s=5))
    assert none == [None] and empty == {}


def test_eval_records_judge_counts_per_mode(
    server, video: str, tiny_qwen3_dir: str, tmp_path: Path
) -> None:
    from paravt.agent.backend import Backend
    from paravt.eval.runner import evaluate

    url, _ = server
    codec = ChatCodec(load_processor(tiny_qwen3_dir))
    said = [render_answer("Looked.", "red flash", with_open_think=False)] * 2
    backend = Backend(
        ScriptedGenerator(codec, said), codec, build_toolset(["crop_video"]), judge_url=url
    )
    samples = [
        EpisodeInput(f"q{i}", video, "What happens?", "oe", "red flash", None, 4) for i in range(2)
    ]
    settings = EpisodeSettings(sampling=SamplingParams(temperature=0.0, max_new_tokens=32))
    metrics = evaluate(
        samples, backend, settings, modes=["none"], out=tmp_path / "ev", progress=False
    )
    assert metrics["judge"] == {
        "none": {"judge/n": 2.0, "judge/judged": 2.0, "judge/fallback_f1": 0.0}
    }
    assert metrics["summary"]["oe_f1"] == 1.0
