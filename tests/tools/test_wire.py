"""The tool server's binary frames transport (issue 14.3): raw bytes, negotiated by ``Accept``,
bit-identical to the JSON/base64 encoding and to the in-process frames; malformed bodies are
refused with a clear error, never a crash."""

import asyncio
import struct
from pathlib import Path

import httpx
import numpy as np
import pytest
from server_helpers import ServerThread
from tool_helpers import call

from paravt.config import ToolServerConfig
from paravt.errors import ToolCallError
from paravt.tools import Observation, build_toolset
from paravt.tools.server.app import create_app
from paravt.tools.server.client import RemoteToolSet
from paravt.tools.server.wire import (
    BINARY_TYPE,
    context_to_wire,
    decode_binary,
    encode_binary,
    observation_from_wire,
    observation_to_wire,
)
from paravt.video.types import Frames

NAMES = ["crop_video", "frame_select"]


def _obs(seed: int, shape: tuple[int, ...]) -> Observation:
    rng = np.random.default_rng(seed)
    arr = rng.integers(0, 256, size=shape, dtype=np.uint8)
    return Observation(
        text=f"o{seed}",
        frames=Frames(arr, tuple(0.1 * i + 1 / 3 for i in range(shape[0]))),
        window=(1 / 3, 2.5),
        delivery="subagent",
        metrics={"frames": float(shape[0])},
    )


def _roundtrip_binary(observations: list[Observation]) -> list[Observation]:
    buffers: list[memoryview] = []
    header = {"results": [observation_to_wire(o, buffers) for o in observations]}
    payload, got = decode_binary(encode_binary(header, buffers))
    return [observation_from_wire(d, got) for d in payload["results"]]


def test_binary_and_json_encodings_round_trip_frames_bit_identically():
    observations = [_obs(0, (3, 7, 5, 3)), Observation.failure("no"), _obs(1, (1, 2, 2, 3))]
    via_json = [observation_from_wire(observation_to_wire(o)) for o in observations]
    for got in (_roundtrip_binary(observations), via_json):
        for a, b in zip(observations, got, strict=True):
            assert (a.text, a.window, a.error, a.delivery, dict(a.metrics)) == (
                b.text,
                b.window,
                b.error,
                b.delivery,
                dict(b.metrics),
            )
            if a.frames is None:
                assert b.frames is None
                continue
            assert b.frames.array.shape == a.frames.array.shape and b.frames.array.dtype == np.uint8
            assert b.frames.array.tobytes() == a.frames.array.tobytes()
            assert b.frames.timestamps == a.frames.timestamps


def _body(header: dict, blobs: list[bytes]) -> bytes:
    return encode_binary(header, [memoryview(b) for b in blobs])


@pytest.mark.parametrize(
    "body, message",
    [
        (b"HTTP/1.1 200", "magic"),
        (b"PVTF1" + struct.pack(">I", 999) + b"{}", "overruns"),
        (_body({"results": []}, [b"abc"])[:-1], "length"),
        (b"PVTF1" + struct.pack(">I", 2) + b"[]", "not valid"),
    ],
)
def test_malformed_binary_bodies_are_refused_clearly(body, message):
    with pytest.raises(ToolCallError, match=message):
        decode_binary(body)


def test_a_frames_entry_naming_a_missing_or_short_buffer_is_refused():
    d = {"shape": [1, 2, 2, 3], "dtype": "uint8", "timestamps": [0.0], "buffer": 1}
    with pytest.raises(ToolCallError, match="buffer 1"):
        observation_from_wire({"frames": d}, [memoryview(bytes(12))])
    with pytest.raises(ToolCallError, match="11 bytes"):
        observation_from_wire({"frames": {**d, "buffer": 0}}, [memoryview(bytes(11))])


def _post(url: str, ctx, accept: str | None) -> httpx.Response:
    item = {
        "session": "s" * 16,
        "trajectory_id": "w",
        "context": context_to_wire(ctx),
        "calls": [
            {"name": "crop_video", "arguments": {"start_time": 3, "end_time": 20}},
            {"name": "frame_select", "arguments": {"start_time": 0, "end_time": 9, "nframes": 3}},
        ],
    }
    headers = {"accept": accept} if accept is not None else {}
    return httpx.post(f"{url}/v1/batch", json={"items": [item]}, headers=headers, timeout=60)


def test_server_answers_binary_when_asked_and_json_to_older_clients(make_ctx, video):
    cfg = ToolServerConfig(video_roots=[str(Path(video).parent)])
    with ServerThread(create_app(NAMES, cfg)) as srv:
        plain = _post(srv.url, make_ctx(), None)
        binary = _post(srv.url, make_ctx(), f"{BINARY_TYPE}, application/json")
        remote = RemoteToolSet(srv.url, NAMES)

        async def go():
            try:
                return await remote.run_calls(
                    make_ctx(), [call("crop_video", start_time=3, end_time=20)]
                )
            finally:
                await remote.aclose()

        via_client = asyncio.run(go())
    assert plain.status_code == binary.status_code == 200
    assert plain.headers["content-type"].startswith("application/json")
    assert binary.headers["content-type"].startswith(BINARY_TYPE)
    assert b'"data"' not in binary.content  # no base64 in the binary body
    from_json = [observation_from_wire(o) for o in plain.json()["results"][0]["observations"]]
    header, buffers = decode_binary(binary.content)
    from_binary = [observation_from_wire(o, buffers) for o in header["results"][0]["observations"]]
    local = asyncio.run(
        build_toolset(NAMES).run_calls(
            make_ctx(),
            [
                call("crop_video", start_time=3, end_time=20),
                call("frame_select", index=1, start_time=0, end_time=9, nframes=3),
            ],
        )
    )
    assert len(buffers) == 2 and all(o.ok for o in local)
    for lo, jo, bo in zip(local, from_json, from_binary, strict=True):
        assert lo.frames.array.tobytes() == jo.frames.array.tobytes() == bo.frames.array.tobytes()
        assert lo.frames.array.shape == jo.frames.array.shape == bo.frames.array.shape
        assert lo.frames.timestamps == jo.frames.timestamps == bo.frames.timestamps
    assert (
        via_client[0].ok and via_client[0].frames.array.tobytes() == local[0].frames.array.tobytes()
    )


@pytest.mark.parametrize(
    "reply",
    [
        (
            f"HTTP/1.1 200 OK\r\ncontent-type: {BINARY_TYPE}\r\ncontent-length: 7\r\n\r\nPVTF1xx"
        ).encode(),
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: "
        b'14\r\n\r\n{"results": []}'[:-1],
        b"HTTP/1.1 502 Bad Gateway\r\ncontent-length: 4\r\n\r\noops",
    ],
)
def test_a_malformed_or_failed_response_becomes_error_observations(make_ctx, video, reply):
    cfg = ToolServerConfig(video_roots=[str(Path(video).parent)])
    with ServerThread(create_app(NAMES, cfg)) as srv:
        remote = RemoteToolSet(srv.url, NAMES)

    async def go():
        async def answer(reader, writer):
            await reader.readuntil(b"\r\n\r\n")
            writer.write(reply)
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(answer, "127.0.0.1", 0)
        remote.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        try:
            return await remote.run_calls(
                make_ctx(),
                [
                    call("crop_video", start_time=3, end_time=20),
                    call("frame_select", index=1, start_time=0, end_time=9),
                ],
            )
        finally:
            await remote.aclose()
            server.close()

    obs = asyncio.run(go())
    assert len(obs) == 2 and all(not o.ok for o in obs)
    assert all("tool server" in o.error for o in obs)
