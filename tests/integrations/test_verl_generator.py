"""VerlServerGenerator: our Generator contract over verl's server-client ``generate``.

``RecordingServer`` stands in for verl's LLM server client (the real one needs GPUs and Ray); it
answers with real tiny-tokenizer ids and records what it was sent.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

pytest.importorskip("verl", reason="verl is not installed (pip install -e '.[verl]')")

from verl.workers.rollout.replica import TokenOutput  # noqa: E402

from paravt.integrations.verl.generator import VerlServerGenerator  # noqa: E402
from paravt.models.base import GenRequest, SamplingParams  # noqa: E402
from paravt.models.chat import ChatCodec  # noqa: E402
from paravt.models.hf.loading import load_processor  # noqa: E402
from paravt.video.types import Frames  # noqa: E402


class RecordingServer:
    """Answers once ``expected`` requests are in flight together (proves concurrency)."""

    def __init__(self, codec: ChatCodec, expected: int, texts: list[str]) -> None:
        self.codec, self.expected, self.texts, self.calls = codec, expected, texts, []
        self.all_in = asyncio.Event()

    async def generate(
        self, request_id, *, prompt_ids, sampling_params, image_data=None, video_data=None, **kw
    ):
        k = len(self.calls)
        self.calls.append(
            dict(
                request_id=request_id,
                prompt_ids=prompt_ids,
                sampling_params=sampling_params,
                image_data=image_data,
                video_data=video_data,
                **kw,
            )
        )
        if len(self.calls) == self.expected:
            self.all_in.set()
        await asyncio.wait_for(self.all_in.wait(), 5)
        text = self.texts[k]
        if text == "boom":
            raise RuntimeError("server down")
        ids = list(self.codec.encode_text(text))
        if not text.endswith("..."):
            ids.append(self.codec.im_end_id)
        return TokenOutput(token_ids=ids, log_probs=[-0.25] * len(ids), stop_reason="completed")


@pytest.fixture(scope="module")
def codec(tiny_qwen3_dir: str) -> ChatCodec:
    return ChatCodec(load_processor(tiny_qwen3_dir))


def _frames() -> Frames:
    return Frames(np.zeros((4, 32, 32, 3), np.uint8), (0.0, 0.5, 1.0, 1.5))


def test_requests_are_sent_concurrently_and_returned_in_order(codec: ChatCodec) -> None:
    server = RecordingServer(codec, 3, ["first answer", "second ...", "boom"])
    gen = VerlServerGenerator(server, codec, request_id="ep-1", base_params={"top_k": -1})
    reqs = [
        GenRequest((1, 2, 3), (), (_frames(),), (), SamplingParams(0.7, 0.9, 64)),
        GenRequest(
            (4, 5), (), (), (), SamplingParams(0.7, 1.0, len(codec.encode_text("second ...")))
        ),
        GenRequest((6,), (), (), (), SamplingParams(0.0, 1.0, 8)),
    ]
    outs = asyncio.run(gen.generate(reqs))
    assert [o.finish_reason for o in outs] == ["stop", "length", "error"]
    assert outs[0].text == "first answer" and outs[0].token_ids[-1] == codec.im_end_id
    assert outs[0].logprobs == (-0.25,) * len(outs[0].token_ids)
    assert "server down" in outs[2].error
    first = server.calls[0]
    assert first["request_id"] == "ep-1" and first["prompt_ids"] == [1, 2, 3]
    assert first["sampling_params"] == {
        "top_k": -1,
        "temperature": 0.7,
        "top_p": 0.9,
        "max_tokens": 64,
        "logprobs": True,
    }
    assert server.calls[2]["sampling_params"]["top_k"] == -1  # greedy
    ((array, meta),) = first["video_data"]
    assert array.shape == (4, 32, 32, 3)
    assert (
        meta["frames_indices"] == [0, 500, 1000, 1500] and meta["fps"] == 1000.0
    )  # real timestamps in ms
    assert first["mm_processor_kwargs"] == {"do_sample_frames": False}
    assert server.calls[1]["video_data"] is None and server.calls[1]["image_data"] is None


def test_sglang_gets_processor_features_instead_of_frames(codec: ChatCodec) -> None:
    server = RecordingServer(codec, 1, ["ok"])
    gen = VerlServerGenerator(server, codec, request_id="ep-2", backend="sglang")
    asyncio.run(gen.generate([GenRequest((1,), (), (_frames(),), (), SamplingParams())]))
    (payload,) = server.calls[0]["mm_processor_output"]
    assert payload["format"] == "processor_output"
    assert payload["video_grid_thw"].tolist() == [
        [2, 2, 2]
    ]  # 4 frames / temporal 2, 32 px / patch 16
