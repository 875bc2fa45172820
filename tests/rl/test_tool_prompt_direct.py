"""`sft.tool_prompt_direct`: a seeded share of the SFT data's direct traces trains under the tool
system prompt RL samples with (a direct-answer mode under that prompt)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from paravt.config import TrainConfig, VideoConfig
from paravt.data.rows import ExtraInfo, Message, SFTRow
from paravt.data.schema import read_rows
from paravt.errors import DataError
from paravt.models.chat import ChatCodec
from paravt.models.hf.loading import LoadedPolicy
from paravt.rl.direct import ToolPromptDirect, is_direct
from paravt.rl.sft import SFTTrainer, load_examples

_EXTRA = ExtraInfo(id="q", task="oe", question="Which colour?", answer="red", duration=60.0)


def _row(i: int, mode: str, kind: str = "main", system: bool = True) -> SFTRow:
    head = (Message("system", "reasoning prompt"),) if system else ()
    msgs = (*head, Message("user", f"question {i}"), Message("assistant", f"answer {i}"))
    return SFTRow(f"r{i}", kind, mode, msgs, (), _EXTRA)  # type: ignore[arg-type]


def _rows() -> list[SFTRow]:
    """12 direct traces among tool traces and sub-agent rows."""
    out = []
    for i in range(12):
        out += [_row(i, "none"), _row(100 + i, "parallel"), _row(200 + i, "sub", kind="sub")]
    return out


def _move(share: float, seed: int = 0) -> ToolPromptDirect:
    return ToolPromptDirect(share, seed, "TOOL PROMPT", "parallel")


def test_a_seeded_share_of_the_direct_traces_moves_and_nothing_else_changes() -> None:
    rows = _rows()
    out = _move(0.25).apply(rows)
    assert len(out) == len(rows) and [r.id.removesuffix("-tp") for r in out] == [r.id for r in rows]
    moved = [(a, b) for a, b in zip(rows, out) if a != b]
    assert len(moved) == 3  # round(0.25 × 12)
    for before, after in moved:
        assert is_direct(before) and after.id == f"{before.id}-tp" and after.mode == "parallel"
        assert after.messages[0] == Message("system", "TOOL PROMPT")
        assert after.messages[1:] == before.messages[1:]  # the question and the answer as written
    assert _move(0.25).apply(rows) == out  # a function of the seed
    seeds = {
        tuple(r.id for r in _move(0.25, s).apply(rows) if r.id.endswith("-tp")) for s in range(5)
    }
    assert len(seeds) > 1
    every = _move(1.0).apply(rows)
    assert not any(is_direct(r) for r in every) and sum(r.id.endswith("-tp") for r in every) == 12


def test_all_direct_traces_at_share_one_and_a_missing_system_message_is_put_first() -> None:
    rows = [_row(0, "none", system=False), _row(1, "none"), _row(2, "parallel")]
    out = _move(1.0).apply(rows)
    assert [r.mode for r in out] == ["parallel", "parallel", "parallel"]
    assert out[0].messages == (Message("system", "TOOL PROMPT"), *rows[0].messages)
    assert out[2] == rows[2]


def test_no_direct_trace_or_a_share_outside_0_1_is_refused() -> None:
    with pytest.raises(DataError, match="holds none"):
        _move(0.5).apply([_row(0, "parallel"), _row(1, "sub", kind="sub")])
    with pytest.raises(DataError, match=r"in \[0, 1\]"):
        _move(1.5).apply(_rows())


def test_the_tool_prompt_is_the_episode_s_and_by_default_the_one_the_tool_traces_carry(
    short_synth: Path,
) -> None:
    assert ToolPromptDirect.of(TrainConfig()) is None  # 0 by default
    move = ToolPromptDirect.of(TrainConfig.model_validate({"sft": {"tool_prompt_direct": 0.5}}))
    assert move is not None and move.mode == "parallel" and move.share == 0.5
    rows = read_rows(short_synth / "sft.parquet")
    tool = [r for r in rows if isinstance(r, SFTRow) and r.kind == "main" and r.mode == "parallel"]
    assert tool and {r.messages[0].text for r in tool} == {move.system}
    seq = TrainConfig.model_validate(
        {"sft": {"tool_prompt_direct": 0.5}, "rollout": {"mode": "sequential"}}
    )
    got = ToolPromptDirect.of(seq)
    assert got is not None and got.mode == "sequential" and got.system != move.system
    four = ToolPromptDirect.of(
        TrainConfig.model_validate({"sft": {"tool_prompt_direct": 0.5}, "rollout": {"k_max": 4}})
    )
    assert four is not None and four.system != move.system  # the episode's own call limit
    with pytest.raises(ValidationError, match="tool_prompt_direct"):
        TrainConfig.model_validate(
            {"sft": {"tool_prompt_direct": 0.5}, "rollout": {"mode": "none"}}
        )


def test_sft_trains_the_moved_traces_under_the_tool_prompt(
    short_synth: Path, policy: LoadedPolicy
) -> None:
    codec = ChatCodec(policy.processor)
    n_direct = sum(is_direct(r) for r in read_rows(short_synth / "sft.parquet"))
    assert n_direct >= 2
    move = ToolPromptDirect.of(TrainConfig.model_validate({"sft": {"tool_prompt_direct": 1.0}}))
    video = VideoConfig(overview_max_pixels=64 * 64, crop_max_pixels=64 * 64)
    path = short_synth / "sft.parquet"
    plain = load_examples(path, None, codec, video, subagent_rows=0.0, seed=0)
    moved = load_examples(
        path, None, codec, video, subagent_rows=0.0, seed=0, tool_prompt_direct=move
    )
    tool = next(t for t in plain if t.episode_id.endswith("-par"))
    system = tool.ids[: tool.ids.index(codec.im_end_id) + 1]  # the tool trace's system turn
    got = [t for t in moved if t.episode_id.endswith("-tp")]
    assert len(got) == n_direct and len(moved) == len(plain)
    assert all(t.ids[: len(system)] == system for t in got)
    direct = [t for t in plain if t.episode_id.endswith("-dir")]
    assert len(direct) == n_direct and not any(t.ids[: len(system)] == system for t in direct)
    # the rest of each moved trace (question, overview, think and answer) is the direct trace's
    tails = {t.episode_id.removesuffix("-tp"): t.ids[t.ids.index(codec.im_end_id) :] for t in got}
    assert all(tails[t.episode_id] == t.ids[t.ids.index(codec.im_end_id) :] for t in direct)


def test_check_data_refuses_a_share_on_data_without_direct_traces(
    short_synth: Path, tmp_path: Path
) -> None:
    from paravt.data.schema import write_rows

    rows = [r for r in read_rows(short_synth / "sft.parquet") if not is_direct(r)]
    write_rows(tmp_path / "sft.parquet", rows)
    (tmp_path / "videos").symlink_to(short_synth / "videos")
    cfg = TrainConfig.model_validate(
        {
            "out_dir": str(tmp_path / "out"),
            "data": str(tmp_path / "sft.parquet"),
            "sft": {"tool_prompt_direct": 0.3},
        }
    )
    with pytest.raises(DataError, match="tool_prompt_direct"):
        SFTTrainer.check_data(cfg)
