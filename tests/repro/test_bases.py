"""The shared base cache: its directories follow what the base depends on, and two runs on one
cache root build it once (the second waits for the first)."""

from __future__ import annotations

import json
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


def _built_base(root: Path, settings: dict) -> Path:
    """A finished base as `_ensure_base` leaves it (a model dir, settings, probe, training log)."""
    _, _, bdir = bases.base_paths(root, settings, "strong")
    (bdir / "train" / "model").mkdir(parents=True)
    (bdir / "train" / "model" / "model.safetensors").write_bytes(b"weights")
    (bdir / "train" / "checkpoint-100").mkdir()
    (bdir / "train" / "train_log.jsonl").write_text('{"step": 1}\n')
    (bdir / "settings.json").write_text(json.dumps(settings))
    (bdir / "probe.json").write_text('{"clip_recall": {"rate": 1.0}}')
    return bdir


def test_a_shipped_base_is_used_only_under_its_own_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shipped = tmp_path / "shipped"
    dst = bases.ship_base(_built_base(tmp_path / "cache", SETTINGS), shipped)
    assert (dst / "train" / "model" / "model.safetensors").read_bytes() == b"weights"
    assert (dst / "build_log.jsonl").is_file() and not (dst / "train" / "checkpoint-100").exists()
    model, probe = bases.shipped_base(SETTINGS, "strong", shipped) or (None, None)
    assert model == dst / "train" / "model" and probe == {"clip_recall": {"rate": 1.0}}
    assert bases.shipped_base(SETTINGS, "weak", shipped) is None  # another prior: not shipped
    assert capsys.readouterr().err == ""
    changed = {**SETTINGS, "prior": {"steps": 3}}  # the code's base settings moved on
    assert bases.shipped_base(changed, "strong", shipped) is None
    err = capsys.readouterr().err
    assert dst.name in err and bases.base_key(changed) in err and "building the base" in err
    assert bases.shipped_base({**changed, "model_size": "s"}, "strong", shipped) is None
    assert (
        capsys.readouterr().err == ""
    )  # another model size: not a stale copy of it (e.g. the micro preset)


def test_shipping_an_unfinished_base_is_refused(tmp_path: Path) -> None:
    _, _, bdir = bases.base_paths(tmp_path, SETTINGS, "strong")
    bdir.mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match="no finished base"):
        bases.ship_base(bdir, tmp_path / "shipped")
