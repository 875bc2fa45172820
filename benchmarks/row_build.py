"""The base's row build: seconds per 1,000 rows of ``base.parquet`` turned into training sequences
(``paravt.rl.prior.prior_examples``: the habit traces, every frame decoded, every message encoded
by the tiny ``s`` model's codec), as the prior stage does before its first step.

A ParaVT-Synth of ``--videos`` flash-needle train videos (the base's own kind and frame size,
``paravt.repro.run``) and the tiny Qwen3-VL ``s`` are built once and cached under ``--out``. The
build is timed in a fresh video cache, split into the time spent in the video layer (decoding and
converting frames) and the rest (prompt rendering, the processor, tokenization).

    nice -n 19 .venv/bin/python benchmarks/row_build.py [--videos 16] [--out runs/row_build]
    [--windowed]

``--windowed`` is the reference: each request decoded by its own window, as before issue 33.

Prints a summary; the last line is JSON (``base_build_s_per_1k_rows``).
"""

from __future__ import annotations

import argparse
import json
import resource
import time
from pathlib import Path
from typing import Any

PIXELS, FACTOR = 64 * 64, 32  # the s presets' frames (paravt.repro.presets.base_config)


def ensure_data(out: Path, videos: int) -> Path:
    """Synth data (train videos only) + the tiny s model, cached (``out/.done``)."""
    from paravt.data.synth.build import SceneSpec, build
    from paravt.data.synth.corpus import protocol_corpus
    from paravt.models.tiny import build_tiny

    if not (out / ".done").exists():
        build(
            out / "synth",
            videos=videos,
            eval_videos=0,
            seed=0,
            workers=2,
            scenes=SceneSpec(needle_kinds=("flash",)),
        )
        build_tiny("qwen3_vl", "s", out / "init", corpus=protocol_corpus())
        (out / ".done").write_text(f"{videos}\n")
    return out


class _Timer:
    """Wraps a module function: total seconds spent inside it (outermost calls only)."""

    def __init__(self, module: Any, name: str) -> None:
        self.module, self.name, self.inner = module, name, getattr(module, name)
        self.seconds, self.depth = 0.0, 0

        def timed(*args: Any, **kwargs: Any) -> Any:
            self.depth += 1
            t0 = time.perf_counter()
            try:
                return self.inner(*args, **kwargs)
            finally:
                self.depth -= 1
                if self.depth == 0:
                    self.seconds += time.perf_counter() - t0

        setattr(module, name, timed)

    def restore(self) -> None:
        setattr(self.module, self.name, self.inner)


def measure(synth: Path, model: Path) -> dict[str, Any]:
    """Build the training sequences of ``synth``/base.parquet with ``model``'s processor (a fresh
    video cache); seconds in all, in the video layer, and per 1,000 rows."""
    from paravt.config import VideoConfig
    from paravt.data import chat
    from paravt.data.schema import read_rows
    from paravt.data.synth.prior import Habit
    from paravt.models.chat import ChatCodec
    from paravt.models.hf.loading import load_processor
    from paravt.rl.prior import prior_examples
    from paravt.video import clear_cache, decode_stats

    codec = ChatCodec(load_processor(str(model)))
    rows = read_rows(synth / "base.parquet")
    clear_cache()
    timer = _Timer(chat, "_decode")  # every frame the rows read goes through it
    t0 = time.perf_counter()
    try:
        examples, _, _ = prior_examples(
            rows,
            synth,
            codec,
            tool_mix=0.7,
            habit=Habit(think_sentences=2, max_calls=2),
            seed=0,
            video=VideoConfig(
                overview_max_pixels=PIXELS, crop_max_pixels=PIXELS, size_factor=FACTOR
            ),
        )
    finally:
        timer.restore()
    total = time.perf_counter() - t0
    stats = decode_stats()
    n = len(examples)
    from paravt.video import cache

    mib = {
        "decoded_frames_cache": cache.DECODED.nbytes,
        "rgb_frames_cache": cache.FRAMES.nbytes,
        "peak_rss": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }
    return {
        "rows": n,
        "videos": len({r.videos[0] for r in rows if r.videos}),
        "build_s": round(total, 3),
        "video_s": round(timer.seconds, 3),
        "other_s": round(total - timer.seconds, 3),
        "base_build_s_per_1k_rows": round(1000 * total / n, 3),
        "decode_stats": {k: getattr(stats, k) for k in stats.__dataclass_fields__},
        "mib": {k: round(v / 2**20, 1) for k, v in mib.items()},
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--videos", type=int, default=16, help="train videos of the cached synth (24 rows each)"
    )
    ap.add_argument(
        "--out", type=Path, default=Path("runs/row_build"), help="where data and model are cached"
    )
    ap.add_argument(
        "--windowed",
        action="store_true",
        help="the reference: every request decoded by its own window (no whole-video path)",
    )
    a = ap.parse_args()
    if a.windowed:
        from paravt.video import timeline

        timeline.WHOLE_MAX_PIXELS = 0
    out = ensure_data(a.out, a.videos)
    res = measure(out / "synth", out / "init")
    print(
        f"{res['rows']} rows of {res['videos']} videos in {res['build_s']:.2f} s "
        f"(video layer {res['video_s']:.2f} s, the rest {res['other_s']:.2f} s): "
        f"{res['base_build_s_per_1k_rows']:.2f} s per 1,000 rows"
    )
    print(json.dumps(res))


if __name__ == "__main__":
    main()
