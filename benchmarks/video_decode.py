"""Benchmark: window decode with keyframe seek vs decoding from the start, and the cache.

Writes a 10-minute 640×360 25 fps H.264 video (keyframe every 250 frames, B-frames, barcoded
frame indices) into a temporary directory, then times in one process:

  (a) ``sample_frames`` of 16 frames from a 16 s window in the middle (cold cache: open + seek +
      decode one GOP or so);
  (b) the same 16 frames by decoding from the start with a plain PyAV loop (what transformers'
      ``read_video_pyav`` does), checked to give identical pixels;
  (c) the same ``sample_frames`` call again (result-cache hit);
  (d) a 16-frame overview of the whole video with per-target re-seeking vs (e) one seek and
      decoding straight through (``reseek=False``), checked identical.

Prints a rich table (ms, ratios) and, as its last line, JSON. Run once; writing the video takes
a minute or two on 2 cores. Acceptance: (b)/(a) ≥ 5.
"""

from __future__ import annotations

import json
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import av
import numpy as np
from rich.console import Console
from rich.table import Table

from paravt import video
from paravt.video import draw
from paravt.video.writer import Encoding

MINUTES, FPS, W, H, GOP, BITS = 10, 25, 640, 360, 250, 16


def _frames(n: int) -> Iterator[np.ndarray]:
    names = list(draw.COLORS)
    for i in range(n):
        img = draw.solid(H, W, draw.COLORS[names[(i // (FPS * 7)) % len(names)]])
        draw.fill_circle(img, (i * 3) % W, H // 2, 40, (0, 0, 0))
        draw.draw_number(img, i // FPS, (200, 120, 440, 320), (20, 20, 20))
        draw.barcode(img, i, bits=BITS)
        yield img


def _from_start(path: Path, times: tuple[float, ...]) -> list[np.ndarray]:
    """Decode from frame 0 and keep the frame nearest each target (no seeking)."""
    out: list[np.ndarray] = []
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        start = stream.start_time or 0
        j, prev = 0, None
        for frame in container.decode(stream):
            t = float((frame.pts - start) * stream.time_base)
            while j < len(times) and t >= times[j]:
                pick = (
                    prev if prev is not None and times[j] - prev[0] <= t - times[j] else (t, frame)
                )
                out.append(pick[1].to_ndarray(format="rgb24"))
                j += 1
            if j == len(times):
                break
            prev = (t, frame)
    return out


def _ms(fn) -> tuple[float, object]:  # noqa: ANN001 - tiny local timer
    t0 = time.perf_counter()
    value = fn()
    return (time.perf_counter() - t0) * 1000.0, value


def main() -> None:
    console = Console()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ten_minutes.mp4"
        n = int(MINUTES * 60 * FPS)
        write_s, _ = _ms(
            lambda: video.write_video(path, _frames(n), FPS, encoding=Encoding(gop=GOP))
        )
        info = video.probe(path)
        mid = info.duration / 2
        start, end = mid - 8.0, mid + 8.0

        video.clear_cache()
        a_ms, window = _ms(lambda: video.sample_frames(path, start, end, nframes=16))
        a_decoded = video.decode_stats().decoded_frames
        b_ms, baseline = _ms(lambda: _from_start(path, video.target_times(start, end, 16)))
        assert all(np.array_equal(x, y) for x, y in zip(window.array, baseline, strict=True))
        c_ms, _ = _ms(lambda: video.sample_frames(path, start, end, nframes=16))
        assert video.decode_stats().hits == 1 and video.decode_stats().decoded_frames == a_decoded

        times = video.target_times(0.0, info.duration, 16)
        before = video.decode_stats().decoded_frames
        d_ms, seek = _ms(lambda: video.frames_at(path, times, reseek=True))
        d_decoded = video.decode_stats().decoded_frames - before
        e_ms, through = _ms(lambda: video.frames_at(path, times, reseek=False))
        e_decoded = video.decode_stats().decoded_frames - before - d_decoded
        assert np.array_equal(seek.array, through.array)
        barcodes_ok = all(
            draw.read_barcode(x, bits=BITS) == round(t * FPS)
            for x, t in zip(window.array, window.timestamps, strict=True)
        )

    result = {
        "video": f"{MINUTES} min {W}x{H} {FPS} fps gop {GOP}",
        "write_s": round(write_s / 1000, 1),
        "window_ms": round(a_ms, 1),
        "window_decoded_frames": a_decoded,
        "from_start_ms": round(b_ms, 1),
        "cache_hit_ms": round(c_ms, 3),
        "overview_reseek_ms": round(d_ms, 1),
        "overview_reseek_decoded": d_decoded,
        "overview_through_ms": round(e_ms, 1),
        "overview_through_decoded": e_decoded,
        "speedup_window_vs_from_start": round(b_ms / a_ms, 1),
        "speedup_cache_hit_vs_window": round(a_ms / max(c_ms, 1e-6), 0),
        "speedup_reseek_vs_through": round(e_ms / d_ms, 1),
        "barcodes_match_timestamps": barcodes_ok,
    }
    table = Table(title=f"video decode, {result['video']}, 16 frames")
    for col in ("case", "ms", "vs (a)"):
        table.add_column(col)
    table.add_row(f"(a) window [{start:.0f}, {end:.0f}] s, seek", f"{a_ms:.1f}", "1.0")
    table.add_row("(b) same frames, decode from start", f"{b_ms:.1f}", f"{b_ms / a_ms:.1f}×")
    table.add_row("(c) cache hit", f"{c_ms:.3f}", f"{c_ms / a_ms:.4f}×")
    table.add_row(
        f"(d) overview, re-seek ({d_decoded} decoded)", f"{d_ms:.1f}", f"{d_ms / a_ms:.1f}×"
    )
    table.add_row(
        f"(e) overview, decode through ({e_decoded} decoded)", f"{e_ms:.1f}", f"{e_ms / a_ms:.1f}×"
    )
    console.print(table)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
