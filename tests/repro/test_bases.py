"""The shared base cache: its directories follow what the base depends on, and two runs on one
cache root build it once (the second waits for the first)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from paravt.repro import bases

SETTINGS = {
    "version": 1,
    "synth": {"videos": 4, "eval_videos": 1, "seed": 0},
    "model_size": "xs",
    "prior": {"steps": 2},
    "video": {},
    "probe_max_new_tokens": 8,
}


def test_every_cached_piece_is_keyed_by_what_it_depends_on(tmp_path: Path) -> None:
    synth, init, prior = bases.base_paths(tmp_path, SETTINGS, "strong")
    bumped = {**SETTINGS, "version": 2}
    s2, i2, p2 = bases.base_paths(tmp_path, bumped, "strong")
    assert (
        s2 != synth and i2 != init and p2 != prior
    )  # a data-version bump rebuilds the synth data too
    _, i3, _ = bases.base_paths(tmp_path, SETTINGS, "strong", tiny_version=999)
    assert i3 != init  # a new tiny factory (e.g. its tokenizer) builds a new init
    other_prior = {**SETTINGS, "prior": {"steps": 3}}
    s4, i4, p4 = bases.base_paths(tmp_path, other_prior, "strong")
    assert (s4, i4) == (synth, init) and p4 != prior  # the prior's settings key only the prior


@pytest.mark.timeout(60)
def test_a_second_run_waits_for_the_builder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import sys, time; from paravt import runlock\n"
                f"with runlock.hold({str(tmp_path)!r}, 'builder'):\n"
                "    print('held', flush=True); time.sleep(2.5)\n"
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
    calls: list[float] = []
    monkeypatch.setattr(bases, "WAIT_S", 0.2)
    monkeypatch.setattr(
        bases, "_ensure_base", lambda *a: calls.append(time.monotonic()) or (tmp_path, {})
    )
    t0 = time.monotonic()
    from paravt.config import TrainConfig

    assert bases.ensure_base(tmp_path, TrainConfig(), SETTINGS, "strong") == (tmp_path, {})
    holder.wait(timeout=30)
    assert len(calls) == 1 and calls[0] - t0 > 1.5  # built only after the holder let go
    assert (
        "waiting for the run holding" in caplog.text
    )  # said once, naming the lock (runlock.acquire_waiting)
    assert not list(tmp_path.glob(".paravt.lock*"))  # released
