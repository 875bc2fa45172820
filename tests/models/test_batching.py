"""The request queue of an engine (``paravt.models.hf.batching``): concurrent calls meet in one
batch, and an engine that fails leaves no request waiting."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from paravt.models.base import ChatMessage, GenOutput, GenRequest
from paravt.models.hf.batching import Batcher


def _req(i: int) -> GenRequest:
    return GenRequest((1, 2, i), (ChatMessage("user", str(i)),))


def _echo(requests: Sequence[GenRequest]) -> list[GenOutput]:
    return [
        GenOutput(
            (r.prompt_ids[-1],),
            (0.0,),
            str(r.prompt_ids[-1]),
            "stop",
            metrics={"batch": float(len(requests))},
        )
        for r in requests
    ]


def test_concurrent_calls_meet_in_one_batch_in_order() -> None:
    q = Batcher(_echo, window_s=0.01)

    async def calls() -> list[list[GenOutput]]:
        return await asyncio.gather(q.generate([_req(1), _req(2)]), q.generate([_req(3)]))

    a, b = asyncio.run(calls())
    assert [o.token_ids for o in a + b] == [(1,), (2,), (3,)]
    assert {o.metrics["batch"] for o in a + b} == {3.0}


def _raises(requests: Sequence[GenRequest]) -> list[GenOutput]:
    raise MemoryError("no room")


def test_a_failing_engine_answers_every_row_with_an_error() -> None:
    for q in (
        Batcher(_raises, window_s=0.0),
        Batcher(lambda reqs: _echo(reqs)[:1], window_s=0.0),
        Batcher(_echo, window_s=0.0, chunker=lambda batch: [[0], [9]]),
    ):
        outs = asyncio.run(asyncio.wait_for(q.generate([_req(1), _req(2)]), timeout=10))
        assert [o.finish_reason for o in outs].count("error") >= 1
        assert all(
            o.error and "engine failed" in o.error for o in outs if o.finish_reason == "error"
        )
    # the queue still serves afterwards
    q = Batcher(_echo, window_s=0.0)
    assert asyncio.run(q.generate([_req(5)]))[0].token_ids == (5,)
