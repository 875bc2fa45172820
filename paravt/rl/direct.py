"""SFT's direct answers under the tool prompt (``sft.tool_prompt_direct``, docs/repro.md).

The paper's tool traces call whatever the overview shows, and its other SFT sources answer under
their own prompts; an 8B base still answers directly under the tool prompt now and then (Table 2:
Qwen3-VL-8B makes 0.45 calls a rollout), which is the skip that vanilla GRPO finds when the
overview suffices (the Tool Necessity Gap). A tiny model does not carry a habit across system
prompts: under the tool prompt it has only ever seen calls, so a rollout that skips the call is
broken. A share ``sft.tool_prompt_direct`` of the data's direct traces (main rows of mode
``none``: think, then answer from the overview, written only where the overview shows the needle)
is therefore trained under the tool system prompt RL samples with, the rest under the reasoning
one. The draw is seeded by ``sft.seed`` alone: the pool, and so every batch, stays a function of
the data and the seeds."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from paravt.data.rows import Message, Mode, Row, SFTRow
from paravt.errors import DataError

if TYPE_CHECKING:
    from paravt.config import TrainConfig


@dataclass(frozen=True)
class ToolPromptDirect:
    """Which direct traces train under which tool prompt (module docstring)."""

    share: float  # of the direct traces, seeded
    seed: int
    system: str  # the tool system prompt they get
    mode: Mode  # and the row mode

    @classmethod
    def of(cls, cfg: TrainConfig) -> ToolPromptDirect | None:
        """``cfg``'s move (None at ``sft.tool_prompt_direct`` 0): the system prompt an RL episode
        of ``cfg`` opens with (``agent.messages.system_text``: ``rollout.mode``'s template with
        ``rollout.tools``' specs at ``rollout.prompt_version`` and ``rollout.k_max``); the rows'
        mode sequential in sequential and eva mode, else parallel (the config refuses a share with
        ``rollout.mode`` none)."""
        import asyncio

        from paravt.agent.backend import open_tools
        from paravt.agent.messages import system_text
        from paravt.agent.modes import MODES
        from paravt.agent.settings import EpisodeSettings

        if cfg.sft.tool_prompt_direct <= 0:
            return None
        tools = open_tools(cfg.rollout)
        try:
            specs = tools.specs
        finally:
            asyncio.run(tools.aclose())
        settings = EpisodeSettings.from_config(cfg, training=True)
        system = system_text(settings, MODES[cfg.rollout.mode], specs)
        mode: Mode = "parallel" if cfg.rollout.mode == "parallel" else "sequential"
        return cls(cfg.sft.tool_prompt_direct, cfg.sft.seed, system, mode)

    def apply(self, rows: Sequence[Row]) -> list[Row]:
        """``rows`` with a seeded ``share`` of the direct traces moved under ``system`` (their
        system message replaced, or put first where they have none), ``mode`` and the id suffix
        ``-tp``; every other row as it was, in the same order."""
        if not 0.0 <= self.share <= 1.0:
            raise DataError(f"sft.tool_prompt_direct={self.share}: a share, in [0, 1]")
        direct = [i for i, r in enumerate(rows) if is_direct(r)]
        if not direct:
            raise DataError(
                f"sft.tool_prompt_direct={self.share} moves direct traces under the tool prompt, "
                "but the data holds none (main rows of mode none): set it to 0 or use an "
                "sft.parquet with direct traces"
            )
        moved = seeded_share(direct, self.share, f"sft-tool-prompt-direct:{self.seed}")
        out = list(rows)
        for i in moved:
            r = rows[i]
            assert isinstance(r, SFTRow)  # is_direct
            rest = r.messages[1:] if r.messages and r.messages[0].role == "system" else r.messages
            out[i] = replace(
                r, id=f"{r.id}-tp", mode=self.mode, messages=(Message("system", self.system), *rest)
            )
        return out


def is_direct(row: Row) -> bool:
    """A direct trace: a main SFT row of mode ``none`` (no tool turn)."""
    return isinstance(row, SFTRow) and row.kind == "main" and row.mode == "none"


def seeded_share(indices: Sequence[int], share: float, key: str) -> set[int]:
    """A seeded draw of round(share × len(indices)) of ``indices``, at least one when the share is
    > 0 and there is one to draw; ``key`` seeds it (the same key, the same draw)."""
    count = max(1, round(share * len(indices))) if share > 0 and indices else 0
    return set(random.Random(key).sample(list(indices), count))
