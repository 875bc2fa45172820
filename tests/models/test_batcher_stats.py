"""The request queue counts what it served (``Batcher.stats``): benchmarks/limits.py reads how
full the engine's batches were during an RL step's rollout."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from paravt.models.base import ChatMessage, GenOutput, GenRequest
from paravt.models.hf.batching import Batcher


def _req(i: int) -> GenRequest:
    return GenRequest((1, i), (ChatMessage("user", str(i)),))


def _echo(requests: Sequence[GenRequest]) -> list[GenOutput]:
    return [GenOutput((r.prompt_ids[-1],), (0.0,), "", "stop") for r in requests]


def test_stats_count_batches_rows_and_busy_time() -> None:
    q = Batcher(_echo, window_s=0.01)
    assert q.stats().to_json() == {"batches": 0, "rows": 0, "busy_s": 0.0, "rows_per_batch": 0.0}

    async def calls() -> None:
        await asyncio.gather(
            q.generate([_req(1), _req(2)]), q.generate([_req(3)])
        )  # one batch of 3
        await q.generate([_req(4)])  # then a batch of 1
        await q.aclose()

    asyncio.run(calls())
    s = q.stats()
    assert (s.batches, s.rows) == (2, 4) and s.busy_s > 0
    assert s.to_json()["rows_per_batch"] == 2.0
