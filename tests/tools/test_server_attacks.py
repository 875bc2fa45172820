"""Regression tests of issue 13, items 1-4: attacks on ``paravt serve-tools`` by a remote caller.

Each test sends what the attacker sent (the client controls the whole tool context) and asserts
the server now refuses it, with an error that names the limit and leaks nothing outside the roots.
"""

import asyncio
import shutil
import socket
import time
from pathlib import Path

import httpx
import pytest
from server_helpers import ServerThread
from tool_helpers import call

from paravt.config import ToolServerConfig
from paravt.errors import ConfigError
from paravt.tools import VisualBudget
from paravt.tools.server.app import create_app
from paravt.tools.server.client import RemoteToolSet
from paravt.tools.server.wire import context_to_wire

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap (bwrap) is not installed"
)


@pytest.fixture
def root(tmp_path: Path, video: str) -> Path:
    """A video root holding one copy of the test video; the session video lies OUTSIDE it."""
    r = tmp_path / "root"
    r.mkdir()
    shutil.copy(video, r / "clip.mp4")
    (r / "clip.mp4").chmod(0o644)
    return r


def _item(ctx, calls, session="s" * 32):
    return {
        "session": session,
        "trajectory_id": ctx.episode_id,
        "context": context_to_wire(ctx),
        "calls": [{"name": c.name, "arguments": c.arguments, "error": None} for c in calls],
    }


def _post(url, ctx, calls, **kw):
    return httpx.post(url + "/v1/batch", json={"items": [_item(ctx, calls)]}, timeout=60, **kw)


def _crop_errors(url, make_ctx, paths):
    errors = {}
    for p in paths:
        ctx = make_ctx()
        ctx.video = p
        resp = _post(url, ctx, [call("crop_video", start_time=0, end_time=5)])
        assert resp.status_code == 200, resp.text
        (obs,) = resp.json()["results"][0]["observations"]
        assert obs["frames"] is None
        errors[p] = obs["error"].replace(repr(p), "<path>")
    return errors


def test_files_outside_the_video_roots_are_refused_with_one_text_that_reveals_nothing(
    make_ctx, video, root, tmp_path
):
    secret = (
        tmp_path / "private" / "secret.mp4"
    )  # a real, decodable video, root-only, outside the root
    secret.parent.mkdir()
    shutil.copy(video, secret)
    secret.chmod(0o600)
    (root / "link.mp4").symlink_to(secret)  # a symlink inside the root pointing out of it
    (root / "sub").mkdir()
    outside = [
        str(secret),
        "/etc/shadow",
        "/etc/passwd",
        "/nonexistent/x.mp4",
        str(root / "link.mp4"),
        f"{root}/../../../../etc/passwd",
        f"{root}/../private/secret.mp4",
        str(root / "sub"),
        "/",
        str(root / "missing.mp4"),
    ]
    with ServerThread(create_app(["crop_video"], ToolServerConfig(video_roots=[str(root)]))) as srv:
        errors = _crop_errors(srv.url, make_ctx, outside)
        (ok,) = _post(
            srv.url,
            _ctx_at(make_ctx, str(root / "sub" / ".." / "clip.mp4")),
            [call("crop_video", start_time=0, end_time=5)],
        ).json()["results"][0]["observations"]
    assert len(set(errors.values())) == 1, errors  # existence, type and size are indistinguishable
    text = next(iter(errors.values()))
    assert "not a readable regular file under the tool server's video roots" in text
    assert "bytes" not in text and "631" not in text and "No such file" not in text
    assert (
        ok["error"] is None and len(ok["frames"]["shape"]) == 4
    )  # a path inside the root still works


def _ctx_at(make_ctx, path):
    ctx = make_ctx()
    ctx.video = path
    return ctx


def test_the_python_tool_never_binds_a_client_path_outside_the_roots(make_ctx, root):
    # weak isolation only so that the server starts on a machine without bubblewrap: the video is
    # refused before any runtime exists
    app = create_app(
        ["python"], ToolServerConfig(video_roots=[str(root)], python_weak_isolation=True)
    )
    with ServerThread(app) as srv:
        resp = _post(
            srv.url,
            _ctx_at(make_ctx, "/"),
            [call("python", code="print(open('/video/etc/passwd').read())")],
        )
        active = app.state.toolset.tools["python"].active_runtimes
    (obs,) = resp.json()["results"][0]["observations"]
    assert "root:" not in obs["text"] and "video roots" in obs["error"] and active == 0


def test_client_sent_caps_and_budgets_are_clamped_to_the_servers(make_ctx, root):
    cfg = ToolServerConfig(
        video_roots=[str(root)],
        max_crop_frames=4,
        max_crop_pixels=64 * 64,
        max_call_pixels=100_000,
        max_episode_pixels=150_000,
    )
    greedy = VisualBudget(per_call_pixels=10**12, per_episode_pixels=10**12, used_pixels=-(10**9))
    ctx = _ctx_at(make_ctx, str(root / "clip.mp4"))
    ctx.crop_max_frames, ctx.crop_fps, ctx.crop_max_pixels, ctx.size_factor = 299, 30.0, 10**8, 4096
    ctx.budget = greedy
    with ServerThread(create_app(["crop_video", "frame_select"], cfg)) as srv:
        res = _post(
            srv.url,
            ctx,
            [
                call("crop_video", start_time=0, end_time=40),
                call("frame_select", index=1, start_time=0, end_time=40, nframes=40),
            ],
        ).json()
    crop, select = res["results"][0]["observations"]
    t, h, w, _ = crop["frames"]["shape"]
    assert t == 4 and h * w <= 64 * 64  # not 299 frames of 10^8 px
    t2, h2, w2, _ = select["frames"]["shape"]
    assert t2 * h2 * w2 <= 100_000
    assert res["results"][0]["budget"]["per_episode_pixels"] == 150_000
    assert (
        0 < res["results"][0]["budget"]["used_pixels"] <= 100_000
    )  # the negative start was reset to 0


def test_too_many_calls_items_or_bytes_get_413_naming_the_limit(make_ctx, root):
    cfg = ToolServerConfig(
        video_roots=[str(root)],
        max_calls_per_request=4,
        max_items_per_request=2,
        max_body_bytes=64 << 10,
    )
    ctx = _ctx_at(make_ctx, str(root / "clip.mp4"))
    crop = call("crop_video", start_time=0, end_time=2)
    with ServerThread(create_app(["crop_video"], cfg)) as srv:
        calls = _post(srv.url, ctx, [crop] * 5)
        items = httpx.post(
            srv.url + "/v1/batch", json={"items": [_item(ctx, [crop])] * 3}, timeout=30
        )
        big = _post(
            srv.url, ctx, [call("crop_video", start_time=0, end_time=2, pad="x" * (1 << 20))]
        )

        def chunks():  # no Content-Length: the size is counted while reading
            for _ in range(100):
                yield b" " * 4096

        chunked = httpx.post(srv.url + "/v1/batch", content=chunks(), timeout=30)
        fine = _post(srv.url, ctx, [crop] * 4)
    assert calls.status_code == 413 and "max_calls_per_request=4" in calls.json()["error"]
    assert items.status_code == 413 and "max_items_per_request=2" in items.json()["error"]
    assert big.status_code == 413 and "max_body_bytes=65536" in big.json()["error"]
    assert chunked.status_code == 413 and "max_body_bytes=65536" in chunked.json()["error"]
    assert fine.status_code == 200 and all(
        o["error"] is None for o in fine.json()["results"][0]["observations"]
    )


def _read_all(sock: socket.socket, limit_s: float) -> tuple[bytes, float]:
    t0 = time.monotonic()
    sock.settimeout(limit_s)
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except (TimeoutError, ConnectionResetError):
        pass
    return data, time.monotonic() - t0


def test_slow_loris_headers_and_bodies_are_cut_off_with_408(root):
    cfg = ToolServerConfig(video_roots=[str(root)], header_timeout_s=1.0, body_timeout_s=1.0)
    with ServerThread(create_app(["crop_video"], cfg)) as srv:
        port = int(srv.url.rsplit(":", 1)[1])
        idle = socket.create_connection(("127.0.0.1", port))  # connects, says nothing
        trickle = socket.create_connection(("127.0.0.1", port))
        t0 = time.monotonic()
        trickle.sendall(b"POST /v1/batch HTTP/1.1\r\nHost: x\r\n")
        while time.monotonic() - t0 < 2.5:  # one header byte every 0.2 s: never a complete header
            try:
                trickle.sendall(b"X")
            except OSError:
                break
            time.sleep(0.2)
        trickled, _ = _read_all(trickle, 3)
        idle_got, _ = _read_all(idle, 3)
        body = socket.create_connection(("127.0.0.1", port))
        body.sendall(
            b"POST /v1/batch HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b'Content-Length: 1000\r\n\r\n{"items": ['
        )
        body_got, body_s = _read_all(body, 5)
        kept = socket.create_connection(
            ("127.0.0.1", port)
        )  # a keep-alive client, idle after its answer
        kept.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n")
        kept_got, kept_s = _read_all(kept, 4)
        health = httpx.get(srv.url + "/health", timeout=5)
    for got in (trickled, idle_got):
        assert got.startswith(b"HTTP/1.1 408") and b"header_timeout_s=1" in got
    assert body_got.startswith(b"HTTP/1.1 408") and b"body_timeout_s=1" in body_got and body_s < 4
    assert (
        kept_got.startswith(b"HTTP/1.1 200") and b"408" not in kept_got and kept_s < 3
    )  # closed quietly
    assert health.status_code == 200  # the server kept serving


def test_connections_beyond_max_connections_get_503(root):
    cfg = ToolServerConfig(video_roots=[str(root)], max_connections=2)
    with ServerThread(create_app(["crop_video"], cfg)) as srv:
        port = int(srv.url.rsplit(":", 1)[1])
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(2)]
        time.sleep(0.2)
        over = httpx.get(srv.url + "/health", timeout=5)
        for s in held:
            s.close()
        time.sleep(0.3)
        after = httpx.get(srv.url + "/health", timeout=5)
    assert over.status_code == 503 and after.status_code == 200


def test_requests_without_a_session_nonce_are_rejected(make_ctx, root):
    ctx = _ctx_at(make_ctx, str(root / "clip.mp4"))
    item = _item(ctx, [call("crop_video", start_time=0, end_time=2)])
    with ServerThread(create_app(["crop_video"], ToolServerConfig(video_roots=[str(root)]))) as srv:
        missing = httpx.post(
            srv.url + "/v1/batch",
            json={"items": [{k: v for k, v in item.items() if k != "session"}]},
        )
        short = httpx.post(srv.url + "/v1/batch", json={"items": [dict(item, session="s3")]})
    assert missing.status_code == 422 and short.status_code == 422


def test_python_without_bubblewrap_is_refused_at_startup_unless_weak_isolation_is_chosen(
    monkeypatch, root
):
    monkeypatch.setattr(
        "paravt.tools.server.app.isolation_mode", lambda: "unshare"
    )  # a host without bwrap
    with pytest.raises(ConfigError, match="refuses to run without bubblewrap"):
        create_app(["python"], ToolServerConfig(video_roots=[str(root)]))
    app = create_app(
        ["python"], ToolServerConfig(video_roots=[str(root)], python_weak_isolation=True)
    )
    assert app.state.toolset.tools["python"].weak_isolation


@needs_bwrap
def test_two_callers_reusing_a_trajectory_id_never_share_a_python_runtime(make_ctx, root, tmp_path):
    other = tmp_path / "root" / "other.mp4"
    shutil.copy(root / "clip.mp4", other)
    app = create_app(["python"], ToolServerConfig(video_roots=[str(root)]))
    with ServerThread(app) as srv:
        a, b = RemoteToolSet(srv.url, ["python"]), RemoteToolSet(srv.url, ["python"])
        ctx_a, ctx_b = _ctx_at(make_ctx, str(root / "clip.mp4")), _ctx_at(make_ctx, str(other))
        ctx_a.episode_id = ctx_b.episode_id = "s3-e0"  # rl/grpo.py's predictable ids

        async def go():
            await a.run_calls(ctx_a, [call("python", code="secret = 'A-only'")])
            (seen,) = await b.run_calls(
                ctx_b, [call("python", code="print(globals().get('secret'), video._path)")]
            )
            (mine,) = await a.run_calls(ctx_a, [call("python", code="print(secret, video._path)")])
            ctx_a2 = _ctx_at(make_ctx, str(other))
            ctx_a2.episode_id = "s3-e0"
            (rebind,) = await a.run_calls(ctx_a2, [call("python", code="print(1)")])
            for ts, c in ((a, ctx_a), (b, ctx_b)):
                await ts.finish(c)
                await ts.aclose()
            return seen, mine, rebind

        seen, mine, rebind = asyncio.run(go())
    assert seen.text == "None /video/other.mp4"  # B sees neither A's variables nor A's video
    assert mine.text == "A-only /video/clip.mp4"
    assert not rebind.ok and "bound to another video" in rebind.error


@needs_bwrap
def test_live_runtimes_are_capped_with_lru_eviction(make_ctx, root):
    app = create_app(["python"], ToolServerConfig(video_roots=[str(root)], max_runtimes=2))
    tool = app.state.toolset.tools["python"]
    with ServerThread(app) as srv:
        ts = RemoteToolSet(srv.url, ["python"])
        ctxs = {k: _ctx_at(make_ctx, str(root / "clip.mp4")) for k in "abc"}
        for k, c in ctxs.items():
            c.episode_id = f"traj-{k}"

        async def go():
            counts = []
            for k in "abc":
                await ts.run_calls(ctxs[k], [call("python", code=f"v = '{k}'")])
                counts.append(tool.active_runtimes)
            (b,) = await ts.run_calls(ctxs["b"], [call("python", code="v")])
            (a,) = await ts.run_calls(ctxs["a"], [call("python", code="print(globals().get('v'))")])
            await ts.aclose()
            return counts, a, b, tool.active_runtimes

        counts, a, b, final = asyncio.run(go())
    assert counts == [1, 2, 2] and final == 2
    assert b.text == "'b'"  # b was used after a: a was the least recently used and went first
    assert "evicted (max_runtimes=2)" in a.text and a.text.endswith("None")
