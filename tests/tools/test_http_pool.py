"""`KeepAlivePool` (the tool client's transport): connections are reused, a connection the server
closed while idle is replaced, chunked and close-delimited bodies are read, and a broken or slow
server gives `PoolError`, never a hang or another exception."""

import asyncio

import pytest

from paravt.tools.server.pool import KeepAlivePool, PoolError


async def _serve(responses, *, close_after=None):
    """A raw HTTP/1.1 server answering each request with the next of ``responses`` (bytes);
    returns (server, url, stats) where stats counts connections and requests."""
    stats = {"connections": 0, "requests": 0}
    queue = list(responses)

    async def handle(reader, writer):
        stats["connections"] += 1
        served = 0
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    (
                        int(h.split(b":")[1])
                        for h in head.split(b"\r\n")
                        if h.lower().startswith(b"content-length")
                    ),
                    0,
                )
                await reader.readexactly(length)
                stats["requests"] += 1
                writer.write(queue.pop(0))
                await writer.drain()
                served += 1
                if close_after is not None and served >= close_after:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        writer.close()

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    return server, f"http://127.0.0.1:{port}", stats


def _ok(body: bytes, extra: str = "") -> bytes:
    return f"HTTP/1.1 200 OK\r\ncontent-length: {len(body)}\r\n{extra}\r\n".encode() + body


def test_requests_reuse_one_kept_alive_connection():
    async def go():
        server, url, stats = await _serve([_ok(b'{"n": %d}' % i) for i in range(5)])
        pool = KeepAlivePool(url, max_connections=4, timeout_s=5)
        got = [(await pool.post("/v1/batch", b"{}")).json()["n"] for _ in range(5)]
        await pool.aclose()
        server.close()
        return got, stats

    got, stats = asyncio.run(go())
    assert got == [0, 1, 2, 3, 4] and stats == {"connections": 1, "requests": 5}


def test_a_connection_closed_by_the_server_while_idle_is_replaced():
    async def go():
        server, url, stats = await _serve([_ok(b"a"), _ok(b"b")], close_after=1)
        pool = KeepAlivePool(url, max_connections=1, timeout_s=5)
        first = await pool.post("/x", b"")
        await asyncio.sleep(0.1)  # the server's FIN arrives while the connection is idle
        second = await pool.post("/x", b"")
        await pool.aclose()
        server.close()
        return first.content + second.content, stats

    body, stats = asyncio.run(go())
    assert body == b"ab" and stats["connections"] == 2


def test_chunked_and_close_delimited_bodies_are_read_whole():
    chunked = (
        b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n2;x=1\r\nde\r\n0\r\n\r\n"
    )
    closing = b"HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\n\r\nbusy"

    async def go():
        server, url, _ = await _serve([chunked, closing])
        pool = KeepAlivePool(url, max_connections=1, timeout_s=5)
        a = await pool.post("/x", b"")
        b = await pool.post("/x", b"")
        await pool.aclose()
        server.close()
        return a, b

    a, b = asyncio.run(go())
    assert (a.status_code, a.content) == (200, b"abcde")
    assert (b.status_code, b.text) == (503, "busy")


@pytest.mark.parametrize(
    "reply",
    [
        b"garbage\r\n\r\n",
        b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nshort",
        b"HTTP/1.1 200 OK\r\ncontent-length: -4\r\n\r\n",
    ],
)
def test_a_malformed_or_truncated_response_is_a_pool_error(reply):
    async def go():
        server, url, _ = await _serve([reply], close_after=1)
        pool = KeepAlivePool(url, max_connections=1, timeout_s=5)
        try:
            with pytest.raises(PoolError):
                await pool.post("/x", b"")
        finally:
            server.close()

    asyncio.run(go())


def test_a_server_that_never_answers_times_out_and_unreachable_is_an_error():
    async def go():
        async def mute(reader, writer):
            await asyncio.sleep(10)

        server = await asyncio.start_server(mute, "127.0.0.1", 0)
        url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        with pytest.raises(PoolError, match="within 0.3 s"):
            await KeepAlivePool(url, max_connections=1, timeout_s=0.3).post("/x", b"")
        server.close()
        with pytest.raises(PoolError):
            await KeepAlivePool(url, max_connections=1, timeout_s=2).post("/x", b"")

    asyncio.run(go())
