"""Loopback load test of the tool server (`paravt serve-tools`).

Starts the server as a subprocess on 127.0.0.1 (a free port), then sends N batch requests from C
concurrent clients (each request: one crop_video + one frame_select on a tiny synthetic video,
frames returned as raw uint8 arrays). Prints latency percentiles, throughput and error counts;
the last line is JSON for other scripts. The baseline is the same calls run in-process
(LocalToolSet), so the table shows what the HTTP hop costs per request.

    .venv/bin/python benchmarks/tool_server_load.py [--requests 2000] [--concurrency 64]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx
import numpy as np

from paravt.protocol.parser import ParsedCall
from paravt.tools import ToolContext, build_toolset
from paravt.video import Encoding, probe, write_video


def _call(name: str, index: int, **args: float) -> ParsedCall:
    return ParsedCall(
        index=index, name=name, arguments=dict(args), raw="", source="json", closed=True
    )


def _calls(i: int) -> list[ParsedCall]:
    s = float(i % 30)
    return [
        _call("crop_video", 0, start_time=s, end_time=s + 8),
        _call("frame_select", 1, start_time=0.0, end_time=4.0, nframes=2, resize=0.25),
    ]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def _drive(ts, make_ctx, n: int, concurrency: int) -> tuple[list[float], int]:
    lat: list[float] = []
    errors = 0

    async def client(k: int) -> None:
        nonlocal errors
        for i in range(k, n, concurrency):
            t0 = time.perf_counter()
            obs = await ts.run_calls(make_ctx(i), _calls(i))
            lat.append(time.perf_counter() - t0)
            errors += sum(1 for o in obs if not o.ok)

    await asyncio.gather(*(client(k) for k in range(concurrency)))
    await ts.aclose()
    return lat, errors


def _pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.array(xs), q) * 1000)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--concurrency", type=int, default=64)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="paravt-bench-"))
    video = str(
        write_video(
            tmp / "v.mp4",
            [np.full((240, 320, 3), 3 * i, np.uint8) for i in range(80)],
            2.0,
            encoding=Encoding(gop=10),
        )
    )
    info = probe(video)

    def make_ctx(i: int) -> ToolContext:
        return ToolContext(
            episode_id=f"b-{i}", video=video, info=info, crop_max_frames=4, crop_max_pixels=64 * 64
        )

    names = ["crop_video", "frame_select"]
    t0 = time.perf_counter()
    local_lat, local_err = asyncio.run(
        _drive(build_toolset(names), make_ctx, args.requests, args.concurrency)
    )
    local_wall = time.perf_counter() - t0

    port = _free_port()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from paravt.cli import main; main()",
            "serve-tools",
            "--port",
            str(port),
            "--tools",
            ",".join(names),
            "--max-concurrency",
            "64",
            "--video-root",
            str(tmp),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(url + "/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise SystemExit("tool server did not start")
            time.sleep(0.2)
        t0 = time.perf_counter()
        lat, err = asyncio.run(
            _drive(build_toolset(names, server_url=url), make_ctx, args.requests, args.concurrency)
        )
        wall = time.perf_counter() - t0
    finally:
        proc.terminate()
        proc.wait(timeout=30)

    rows = [
        ("local (in-process)", local_lat, local_err, local_wall),
        ("remote (HTTP)", lat, err, wall),
    ]
    print(f"{args.requests} requests × 2 calls, {args.concurrency} concurrent clients, loopback")
    print(f"{'':20s} {'p50 ms':>8s} {'p99 ms':>8s} {'mean ms':>8s} {'req/s':>8s} {'errors':>7s}")
    for name, xs, e, w in rows:
        print(
            f"{name:20s} {_pct(xs, 50):8.1f} {_pct(xs, 99):8.1f} {statistics.mean(xs) * 1000:8.1f} "
            f"{len(xs) / w:8.1f} {e:7d}"
        )
    print(f"remote/local p50 ratio: {_pct(lat, 50) / max(_pct(local_lat, 50), 1e-9):.1f}×")
    print(
        json.dumps(
            {
                "requests": args.requests,
                "concurrency": args.concurrency,
                "p50_ms": round(_pct(lat, 50), 2),
                "p99_ms": round(_pct(lat, 99), 2),
                "req_per_s": round(len(lat) / wall, 1),
                "errors": err,
                "local_p50_ms": round(_pct(local_lat, 50), 2),
                "local_p99_ms": round(_pct(local_lat, 99), 2),
            }
        )
    )


if __name__ == "__main__":
    main()
