"""MCP tools against a real MCP server (tests/tools/mcp_server.py, written with the official SDK)
started by the test over stdio and over streamable HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

pytest.importorskip("mcp")

from tool_helpers import call  # noqa: E402

from paravt.errors import ConfigError  # noqa: E402
from paravt.protocol.prompts import system_prompt  # noqa: E402
from paravt.tools import build_toolset  # noqa: E402

SERVER = Path(__file__).with_name("mcp_server.py")
# the SDK starts a stdio server with a minimal environment: hand it this process's import path
STDIO = f"mcp:env PYTHONPATH={os.pathsep.join(sys.path)} {sys.executable} {SERVER} stdio"


@pytest.fixture(scope="module")
def stdio_tools() -> Iterator:
    tools = build_toolset(["crop_video", STDIO], timeouts={STDIO: 2.0})
    yield tools
    asyncio.run(tools.aclose())


def test_the_servers_tools_join_the_toolset_with_their_schemas(stdio_tools) -> None:
    assert stdio_tools.names == {
        "crop_video",
        "describe",
        "swatch",
        "broken",
        "slow",
        "big",
        "big_streamed",
        "pid",
    }
    spec = next(s for s in stdio_tools.specs if s.name == "swatch")
    assert spec.parameters["properties"]["colour"]["type"] == "string" and spec.parameters[
        "required"
    ] == ["colour"]
    prompt = system_prompt("parallel", stdio_tools.specs)
    assert "swatch" in prompt and "n solid colour images" in prompt and "describe" in prompt


def test_text_images_errors_and_timeouts_per_call(stdio_tools, make_ctx) -> None:
    ctx = make_ctx(crop_max_pixels=64 * 64, size_factor=32)
    calls = [
        call("describe", 0, topic="flash"),
        call("swatch", 1, colour="red", n=3),
        call("broken", 2, reason="test"),
        call("slow", 3, seconds=5.0),
        call("describe", 4),
    ]
    t0 = time.perf_counter()
    text, images, broken, slow, missing = asyncio.run(stdio_tools.run_calls(ctx, calls))
    assert (
        time.perf_counter() - t0 < 4.5
    )  # the 5 s call was cut at its 2 s timeout; calls ran concurrently
    assert text.ok and text.text == "flash: a short description" and text.frames is None
    assert images.ok and images.delivery == "inline" and images.frames is not None
    assert images.frames.array.shape == (
        3,
        32,
        64,
        3,
    )  # 40x50 → Qwen's smart resize to 64·64 px max
    assert tuple(images.frames.array[0, 0, 0]) == pytest.approx((220, 30, 30), abs=2)
    assert not broken.ok and "broken on purpose: test" in (broken.error or "")
    assert not slow.ok and "timed out" in (slow.error or "")
    assert not missing.ok and "topic" in (missing.error or "")  # the schema's required argument
    again = asyncio.run(stdio_tools.run_calls(ctx, [call("describe", 0, topic="after")]))[0]
    assert again.text == "after: a short description"  # one failing call left the session usable


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture(scope="module")
def http_ref() -> Iterator[str]:
    """The ``mcp:`` entry of the test server, serving streamable HTTP on a free loopback port."""
    port = _port()
    proc = subprocess.Popen(
        [sys.executable, str(SERVER), "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                httpx.get(f"http://127.0.0.1:{port}/mcp", timeout=1.0)
                break
            except httpx.HTTPError:
                time.sleep(0.2)
        yield f"mcp:http://127.0.0.1:{port}/mcp"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_a_streamable_http_server(http_ref, make_ctx) -> None:
    tools = build_toolset([http_ref])
    try:
        obs = asyncio.run(tools.run_calls(make_ctx(), [call("describe", 0, topic="http")]))[0]
        assert obs.ok and obs.text == "http: a short description"
    finally:
        asyncio.run(tools.aclose())


def _peak_rss_mb(reset: bool = False) -> float:
    """This process's peak RSS (VmHWM); ``reset`` first lowers it to the current RSS where the
    kernel allows (clear_refs 5), so an earlier test's peak cannot hide this one's."""
    if reset:
        with contextlib.suppress(OSError):
            Path("/proc/self/clear_refs").write_text("5")
    return int(Path("/proc/self/status").read_text().split("VmHWM:")[1].split()[0]) / 1024


@pytest.mark.parametrize(
    ("tool", "names_the_cap"),
    [
        (
            "big",
            "over the cap of 4,194,304 (max_message_bytes)",
        ),  # a JSON reply, refused by its Content-Length
        (
            "big_streamed",
            "exceeded the 4194304 byte limit",
        ),  # an SSE reply: the SDK's per-event cap
    ],
)
def test_an_http_reply_over_the_byte_cap_is_refused_fast_and_small(
    http_ref, make_ctx, tool, names_the_cap
) -> None:
    """Issue 28 item 7: the SDK read a streamable-HTTP JSON reply whole before the text cap applied
    (a 20 MB text: +194 MB peak RSS here); now paravt's httpx2 client refuses a body over
    max_message_bytes (the SSE path caps each event at the same size): an error for that call, in
    well under a second, and the next call on the same session is answered."""
    tools = build_toolset([http_ref], timeouts={http_ref: 20.0})
    try:
        ctx = make_ctx()
        peak0, t0 = _peak_rss_mb(reset=True), time.perf_counter()
        (huge,) = asyncio.run(tools.run_calls(ctx, [call(tool, 0, megabytes=20)]))
        elapsed, grown = time.perf_counter() - t0, _peak_rss_mb() - peak0
        assert not huge.ok and names_the_cap in (huge.error or ""), huge
        assert elapsed < 5.0 and grown < 16, (elapsed, grown)
        (after,) = asyncio.run(tools.run_calls(ctx, [call("describe", 0, topic="after")]))
        assert after.ok and after.text == "after: a short description", after
    finally:
        asyncio.run(tools.aclose())


def test_the_http_body_cap_counts_as_it_reads_and_refuses_what_it_cannot_bound() -> None:
    """``_CappedBody`` on a body with no Content-Length stops one chunk past the cap; a declared
    length over the cap, or a compressed body (its decoded size is unbounded), is refused unread."""
    import httpx2

    from paravt.tools.mcp_tools import _CappedBody

    class Endless(httpx2.AsyncByteStream):
        pulled = 0

        async def __aiter__(self):  # type: ignore[override]
            while True:
                self.pulled += 1 << 16
                yield b"x" * (1 << 16)

    async def refused(**headers: str) -> tuple[int, str]:
        inner = Endless()
        headers = {"content-type": "application/json", **headers}
        response = httpx2.Response(
            200, headers=headers, stream=_CappedBody(inner, 1 << 20, headers)
        )
        with pytest.raises(httpx2.StreamError) as err:
            await response.aread()
        return inner.pulled, str(err.value)

    pulled, message = asyncio.run(refused())
    assert (1 << 20) < pulled <= (1 << 20) + (
        1 << 16
    ) and "over the cap of 1,048,576 (max_message_bytes)" in message
    pulled, message = asyncio.run(refused(**{"content-length": "50000000"}))
    assert pulled == 0 and "50,000,000+ bytes, over the cap of 1,048,576" in message
    pulled, message = asyncio.run(refused(**{"content-encoding": "gzip"}))
    assert pulled == 0 and "compressed reply (Content-Encoding: gzip)" in message


def test_an_unreachable_server_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="cannot connect to the MCP server"):
        build_toolset([f"mcp:http://127.0.0.1:{_port()}/mcp"])
    with pytest.raises(ConfigError, match="names no MCP server"):
        build_toolset(["mcp:"])


def _rss_mb() -> float:
    return int(Path("/proc/self/status").read_text().split("VmRSS:")[1].split()[0]) / 1024


@pytest.fixture(scope="module")
def capped_tools() -> Iterator:
    tools = build_toolset(
        [STDIO], timeouts={STDIO: 20.0}, options={STDIO: {"max_output_chars": 8000}}
    )
    yield tools
    asyncio.run(tools.aclose())


def test_replies_over_the_caps_are_truncated_or_refused_fast_and_small(
    capped_tools, make_ctx
) -> None:
    """Issue 28 item 7: an 8 MB text reply took 15 s and ~100 MB here before (the SDK re-joins a
    long line per chunk); now the stdio transport refuses it before parsing (per-call error naming
    the cap), and a reply under the byte cap has its text cut to max_output_chars with a marker."""
    ctx = make_ctx()
    rss0, t0 = _rss_mb(), time.perf_counter()
    huge, small = asyncio.run(
        capped_tools.run_calls(ctx, [call("big", 0, megabytes=8), call("big", 1, megabytes=0.1)])
    )
    elapsed, grown = time.perf_counter() - t0, _rss_mb() - rss0
    assert (
        not huge.ok
        and "over the cap of 4,194,304" in (huge.error or "")
        and "max_message_bytes" in huge.error
    )
    assert small.ok and small.text.startswith("x" * 8000) and len(small.text) < 8100
    assert small.text.endswith("[92000 more characters truncated (max_output_chars=8000)]")
    assert elapsed < 8.0 and grown < 60, (elapsed, grown)
    (after,) = asyncio.run(capped_tools.run_calls(ctx, [call("describe", topic="after")]))
    assert after.text == "after: a short description"  # the session survived the refused reply


def test_a_killed_stdio_server_is_restarted_on_the_next_call(capped_tools, make_ctx) -> None:
    """Issue 28 item 7: before, every call after the server died failed at once ("Connection
    closed"); now the next call starts the server again and is answered by the new process."""
    ctx = make_ctx()
    (first,) = asyncio.run(capped_tools.run_calls(ctx, [call("pid")]))
    os.kill(int(first.text), signal.SIGKILL)
    deadline = time.monotonic() + 5
    while (
        Path(f"/proc/{first.text}").exists()
        and "Z" not in Path(f"/proc/{first.text}/stat").read_text().split()[2]
    ):
        assert time.monotonic() < deadline
        time.sleep(0.05)
    again, pid = asyncio.run(
        capped_tools.run_calls(ctx, [call("describe", 0, topic="back"), call("pid", 1)])
    )
    assert again.ok and again.text == "back: a short description", again
    assert pid.ok and pid.text != first.text


def test_a_dead_stdio_server_reads_as_ended_before_its_eof_is_seen() -> None:
    """CI failure of stop 29: the server was a zombie but the reader task had not yet read EOF, so
    the next call went to the dead session ("Connection closed"). ``_exited`` sees the death
    itself."""
    from paravt.tools.mcp_stdio import _exited

    child = subprocess.Popen(["sleep", "30"])
    assert not _exited(child.pid)
    child.kill()
    deadline = time.monotonic() + 5
    while not _exited(child.pid):  # a zombie: killed, not yet reaped
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert child.poll() is not None and _exited(child.pid)  # reaped: gone from /proc
