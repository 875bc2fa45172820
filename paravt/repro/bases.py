"""The simulated pretrained base (with its tool prior), built ONCE per settings and shared by every
run that asks for the same one (issue 27): the demo's second run, `paravt repro --quick` and the
science run use the same base when their base settings agree (the presets share them).

``base_settings`` is everything the base depends on (its training videos, model size, the whole
``prior`` config block, the frame sizes, the data version); ``base_key`` hashes it, and the key
names the directory under the cache root (``paravt repro``: ``OUT/../bases``)::

    synth-KEY/    ParaVT-Synth of the base's settings (keyed by the data version and the synth
                  settings): train videos → base.parquet, eval videos → base_eval.parquet (the
                  probe) init-SIZE-KEY/ the random tiny model (``build_tiny``, seeded; keyed by the
                  size, the data
                  version and the tiny factory's version, so a tokenizer change builds a new one)
    PRIOR-KEY/    settings.json, train/ (``paravt train prior``: resumes from its checkpoints),
                  probe.json (``repro.base_probe`` on the held-out probe rows, greedy, and
                  its in-context copy; a probe.json from before the copy was measured gets it
                  added when the base is next used)

Each piece is a resumable stage (``repro.stages``); a run copies the base's model into its own
``prior_PRIOR/model`` so the run directory stays self-contained. Two runs sharing the cache root
(the demo beside a science run) build one base: the second waits on the root's lock
(`paravt.runlock.acquire_waiting`: at most ``lock_wait_s`` without progress from the builder, then
one error naming it) and then finds the stages done.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from paravt import runlock
from paravt.config import PriorConfig, TrainConfig
from paravt.jsonl import write_atomic
from paravt.repro.stages import finish_stage, start_stage

DATA_VERSION = 12  # bump when paravt.data.synth.base / perception change what the base learns
# (6: issue 38, the v2 prompts in the habit traces' prompts; RL videos apart from the base's;
# 7: issue 46, the sub-agent rows in the default sub-agent prompt, a summary request;
# 10: issue 47 entry l, the habit's tool results name the needle, 8 text report drills a video,
# the swapped-report probe rows; 8 and 9 were probes of entry l and earlier clone experiments;
# 11: entry n's report drills of three tasks (measured, reverted); 12: the swapped-report probe
# rows of every task, the drills open questions as in 10)


def base_settings(
    cfg: TrainConfig,
    *,
    videos: int,
    probe_videos: int,
    model_size: str,
    probe_max_new_tokens: int,
    needle_kinds: Sequence[str],
    durations: tuple[int, int],
) -> dict[str, Any]:
    """What the base depends on (``cfg.prior`` already holds the prior's ``tool_mix``)."""
    from paravt.data.synth.copy_runs import POOL_VERSION
    from paravt.data.synth.corpus import corpus_digest
    from paravt.models.tiny import TINY_VERSION

    v = cfg.video
    return {
        "version": DATA_VERSION,
        "synth": {
            "videos": videos,
            "eval_videos": probe_videos,
            "seed": 0,
            "needle_kinds": list(needle_kinds),
            "durations": list(durations),
        },
        "model_size": model_size,
        # a field added to the prior keeps the keys built before it while it is at its old
        # behaviour: loss_agg joins the key only when it is not token-mean, plain_share,
        # align_steps, copy_steps, report_steps and report_replay when > 0
        "prior": cfg.prior.model_dump(mode="json", exclude=_at_old_behaviour(cfg.prior)),
        # the copy runs' tokens: another pool is another base (only a base with the stage)
        **({"copy_pool": POOL_VERSION} if cfg.prior.copy_steps else {}),
        # the init's tokenizer is trained on it (synth/corpus.py)
        "tokenizer_corpus": corpus_digest(),
        "video": {
            "overview_max_pixels": v.overview_max_pixels,
            "crop_max_pixels": v.crop_max_pixels,
            "size_factor": v.size_factor,
        },
        "probe_max_new_tokens": probe_max_new_tokens,
        # the parameter dtype changes what the base learns (not where it runs): a bf16 base is
        # another base; fp32 adds nothing, so the keys of the bases built before stay valid
        **({"dtype": cfg.model.dtype} if cfg.model.dtype != "float32" else {}),
        # the random init it trains from (its tokenizer): a new tiny factory is a new base; the
        # version every cached base was built at (2) keeps their keys
        **({"tiny": TINY_VERSION} if TINY_VERSION != 2 else {}),
    }


def _at_old_behaviour(prior: PriorConfig) -> set[str]:
    old = {
        "loss_agg": prior.loss_agg == "token-mean",
        "plain_share": prior.plain_share == 0,
        "align_steps": prior.align_steps == 0,
        "copy_steps": prior.copy_steps == 0,
        "report_steps": prior.report_steps == 0,
        "report_replay": prior.report_replay == 0,
    }
    return {k for k, at_old in old.items() if at_old}


def base_paths(
    root: Path, settings: dict[str, Any], name: str, *, tiny_version: int | None = None
) -> tuple[Path, Path, Path]:
    """(synth, init, prior) directories of ``settings`` under ``root`` (module docstring)."""
    from paravt.models.tiny import TINY_VERSION

    tiny = TINY_VERSION if tiny_version is None else tiny_version
    init_key = base_key([settings["version"], tiny, settings.get("tokenizer_corpus")])
    return (
        root / f"synth-{base_key({'version': settings['version'], **settings['synth']})}",
        root / f"init-{settings['model_size']}-{init_key}",
        root / f"{name}-{base_key(settings)}",
    )


def base_key(settings: Any) -> str:
    """12 hex digits of the SHA-256 of the settings' canonical JSON."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()[:12]


WAIT_S = 5.0  # between two looks at a base another run is building


def ensure_base(
    root: Path, cfg: TrainConfig, settings: dict[str, Any], name: str
) -> tuple[Path, dict[str, Any]]:
    """Build (or reuse) the base of ``settings`` under ``root``; returns its model dir and probe.
    One builder at a time per cache root: a second run waits for the first (never two writers),
    while the builder makes progress; after ``cfg.lock_wait_s`` seconds without (a stopped or hung
    builder) it stops with `OutputLocked` naming the builder (`paravt.runlock.acquire_waiting`)."""
    root.mkdir(parents=True, exist_ok=True)
    me = runlock.acquire_waiting(
        root, f"paravt repro: base {name}", wait_s=cfg.lock_wait_s, poll_s=WAIT_S
    )
    try:
        return _ensure_base(root, cfg, settings, name)
    finally:
        runlock.release(root, me)


def _ensure_base(
    root: Path, cfg: TrainConfig, settings: dict[str, Any], name: str
) -> tuple[Path, dict[str, Any]]:
    from paravt.data.synth.build import SceneSpec, build
    from paravt.data.synth.copy_runs import POOL_VERSION
    from paravt.data.synth.corpus import protocol_corpus
    from paravt.models.tiny import build_tiny
    from paravt.repro.base_probe import induction_probe, run_probe
    from paravt.rl.loop import run_training

    synth, init, bdir = base_paths(root, settings, name)
    if start_stage(synth, "ParaVT-Synth of the pretrained base"):
        s = settings["synth"]
        build(
            synth,
            videos=s["videos"],
            rl_videos=1,  # the base never sees RL videos: its synth needs none (one, the minimum)
            eval_videos=s["eval_videos"],
            seed=s["seed"],
            workers=2,
            scenes=SceneSpec(
                needle_kinds=s["needle_kinds"],
                min_duration=s["durations"][0],
                max_duration=s["durations"][1],
            ),
        )
        finish_stage(synth)
    if start_stage(init, "tiny Qwen3-VL random init"):
        build_tiny("qwen3_vl", settings["model_size"], init, corpus=protocol_corpus())
        finish_stage(init)
    train = bdir / "train"
    if start_stage(train, f"simulated pretrained base ({name}: {bdir.name})"):
        (bdir / "settings.json").write_text(json.dumps(settings, indent=1, sort_keys=True))
        c = cfg.model_copy(deep=True)
        c.out_dir, c.data, c.data_root = str(train), str(synth / "base.parquet"), None
        c.model = c.model.model_copy(update={"path": str(init), "replicas": 1})
        c.logging.run_name = f"prior_{name}/{bdir.name}"  # its trackers' run: not "train"
        c.logging.variant = f"prior_{name}"
        run_training(c, kind="prior", resume=True)
        finish_stage(train)
    probe = bdir / "probe"
    if start_stage(probe, f"base probe on held-out videos ({name})"):
        v = settings["video"]
        result = run_probe(
            str(train / "model"),
            synth / "base_eval.parquet",
            max_new_tokens=settings["probe_max_new_tokens"],
            max_pixels=v["overview_max_pixels"],
            crop_max_pixels=v["crop_max_pixels"],
            size_factor=v["size_factor"],
        )
        write_atomic(bdir / "probe.json", json.dumps(result, indent=1), "the base probe")
        finish_stage(probe)
    result = json.loads((bdir / "probe.json").read_text())
    if result.get("induction_pool") != POOL_VERSION:  # probed before the copy (or its pool)
        result["induction"] = induction_probe(str(train / "model"))
        result["induction_pool"] = POOL_VERSION
        write_atomic(bdir / "probe.json", json.dumps(result, indent=1), "the base probe")
    return train / "model", result


def copy_model(src: Path, dst: Path) -> None:
    """Copy a saved model directory (weights, config, processor files) to ``dst`` (replaced)."""
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(src, dst)
