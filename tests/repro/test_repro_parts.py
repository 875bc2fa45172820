"""The pure parts of `paravt repro`: the variant table, the summary arithmetic, the claims and
the checkpoint-selection rule, on hand-made numbers."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from paravt.config import TrainConfig
from paravt.errors import ConfigError
from paravt.repro.claims import check_claims
from paravt.repro.select import pick_early, sft_checkpoints
from paravt.repro.summary import eval_block, tail_means, train_block
from paravt.repro.variants import VARIANTS, pick, with_overrides

# ---- variants ---------------------------------------------------------------------------------


def test_every_rl_variant_sets_the_three_switches_explicitly() -> None:
    for v in VARIANTS.values():
        if v.rl:
            assert {"reward.anchor", "rollout.think_prefix", "rl.gating.enabled"} <= set(
                v.overrides
            ), v.name
    assert list(VARIANTS) == [
        "sft",
        "vanilla_grpo",
        "anchoring_only",
        "gating_only",
        "paragrpo",
        "paragrpo_no_rtool",
        "paragrpo_no_gamma",
        "weak_prior_vanilla",
        "weak_prior_paragrpo",
    ]


@pytest.mark.parametrize(
    ("name", "anchor", "prefix", "gating", "tool_mode", "gamma"),
    [
        ("vanilla_grpo", False, False, False, "graduated", 0.3),
        ("anchoring_only", True, True, False, "graduated", 0.3),
        ("gating_only", False, False, True, "graduated", 0.3),
        ("paragrpo", True, True, True, "graduated", 0.3),
        ("paragrpo_no_rtool", True, True, True, "off", 0.3),
        ("paragrpo_no_gamma", True, True, True, "graduated", 0.0),
    ],
)
def test_variant_overrides_give_the_ablation(
    name: str, anchor: bool, prefix: bool, gating: bool, tool_mode: str, gamma: float
) -> None:
    base = TrainConfig()
    base.rl.steps = 7  # a base setting no variant touches survives
    c = with_overrides(base, VARIANTS[name].overrides)
    assert (
        c.reward.anchor,
        c.rollout.think_prefix,
        c.rl.gating.enabled,
        c.reward.tool_mode,
        c.reward.gamma,
    ) == (anchor, prefix, gating, tool_mode, gamma)
    # the release: the answer-suffix weights go with the think prefix (paravt.constrained)
    assert c.reward.answer_suffix is prefix
    # no variant pins the overview budget: the un-gated ones train at the default (64)
    assert c.video.overview_nframes == base.video.overview_nframes == 64
    assert c.rl.steps == 7 and base.reward.tool_mode == "graduated"  # the base is not modified


def test_weak_prior_variants_and_pick() -> None:
    assert {v.name for v in VARIANTS.values() if v.prior == "weak"} == {
        "weak_prior_vanilla",
        "weak_prior_paragrpo",
    }
    assert [v.name for v in pick("paragrpo, sft")] == ["sft", "paragrpo"]
    with pytest.raises(ConfigError, match="unknown variant"):
        pick("sft,paragrpo_v2")
    with pytest.raises(ConfigError):
        with_overrides(TrainConfig(), {"reward.tool_mode": "sometimes"})


# ---- summary ----------------------------------------------------------------------------------


def test_tail_means_average_the_last_half_of_the_steps() -> None:
    log = [
        {"step": i, "f_tau": float(i), "kappa": 1.0} for i in range(1, 6)
    ]  # last 3 steps: 3, 4, 5
    assert tail_means(log) == {"f_tau": 4.0, "kappa": 1.0}
    assert tail_means([{"step": 1, "f_tau": 0.2, "note": "x"}]) == {"f_tau": 0.2}


def test_train_block_is_a_t_interval_over_seeds() -> None:
    seeds = [
        {"f_tau": 0.1, "kappa": 1.0, "closed/think": 0.5},
        {"f_tau": 0.2, "kappa": 1.0, "closed/think": 0.5},
        {"f_tau": 0.3, "kappa": 1.0, "closed/think": 0.5},
    ]
    b = train_block(seeds)
    assert b["f_tau"]["mean"] == pytest.approx(0.2)
    assert b["f_tau"]["hi"] - b["f_tau"]["mean"] == pytest.approx(4.303 * 0.1 / 3**0.5)
    assert b["kappa"]["lo"] == pytest.approx(1.0) and b["closure"]["think"]["mean"] == 0.5
    assert b["tool_code_rate"]["n"] == 0  # not measured: said so, not zero
    rates = train_block([{"skip_tool_rate": 1.0}, {"skip_tool_rate": 0.875}])["skip_tool_rate"]
    assert rates["hi"] == 1.0 and rates["lo"] == pytest.approx(
        0.9375 - 12.706 * 0.0884 / 2**0.5, abs=1e-3
    )


def test_eval_block_averages_seeds_per_question_then_bootstraps() -> None:
    rows = [
        {"id": "a", "mode": "parallel", "nframes": 4, "score": 1.0, "tool_necessary": True},
        {
            "id": "a",
            "mode": "parallel",
            "nframes": 4,
            "score": 0.0,
            "tool_necessary": True,
        },  # second seed
        {"id": "b", "mode": "parallel", "nframes": 4, "score": 1.0, "tool_necessary": False},
        {"id": "a", "mode": "parallel", "nframes": 64, "score": 1.0, "tool_necessary": False},
    ]
    e = eval_block(rows)["parallel"]
    assert e["acc_by_n"]["4"]["mean"] == pytest.approx(0.75)  # (0.5 + 1.0) / 2 questions
    assert e["acc_by_n"]["4"]["n"] == 2 and e["acc_by_n"]["64"]["mean"] == 1.0
    assert e["acc_necessary"]["mean"] == pytest.approx(0.5)
    assert e["acc_unnecessary"]["mean"] == 1.0 and e["acc_unnecessary"]["n"] == 2  # b@4 and a@64


# ---- claims -----------------------------------------------------------------------------------


def _v(f: float, k: float, seeds: int = 1, half: float | None = None) -> dict[str, Any]:
    def iv(m: float) -> dict[str, Any]:
        return {
            "mean": m,
            "lo": None if half is None else m - half,
            "hi": None if half is None else m + half,
        }

    return {"f_tau": iv(f), "kappa": iv(k), "seeds": seeds}


def test_claims_hold_or_not_from_the_numbers() -> None:
    s = {
        "sft": _v(0.13, 2.5),
        "vanilla_grpo": _v(0.13, 0.02),
        "paragrpo": _v(0.41, 0.21),
        "gating_only": _v(0.10, 1.36),
        "anchoring_only": _v(0.35, 0.19),
        "paragrpo_no_rtool": _v(0.33, 0.04),
        "paragrpo_no_gamma": _v(0.36, 0.27),
        "weak_prior_vanilla": _v(0.20, 0.0),
    }
    claims = {c["claim"].split(" (")[0]: c for c in check_claims(s, {})}
    assert all(
        c["holds"] for name, c in claims.items() if not name.startswith("parallel")
    )  # the paper's own numbers
    assert claims["vanilla GRPO collapses tool calls"]["ours"] == {
        "sft.kappa": 2.5,
        "vanilla_grpo.kappa": 0.02,
    }
    assert (
        claims["parallel dispatch beats sequential on the same checkpoint"]["holds"] is False
    )  # no eval rows
    s["vanilla_grpo"] = _v(0.13, 1.9)  # no collapse: 1.9 > 2.5 / 4
    s["paragrpo_no_gamma"] = _v(0.45, 0.27)
    c2 = {c["claim"].split(" (")[0]: c for c in check_claims(s, {})}
    assert not c2["vanilla GRPO collapses tool calls"]["holds"]
    assert not c2["removing gamma lowers f_tau"]["holds"]


def test_with_intervals_overlap_means_the_claim_does_not_hold() -> None:
    s = {
        "paragrpo": _v(0.41, 0.2, seeds=3, half=0.2),
        "vanilla_grpo": _v(0.13, 0.0, seeds=3, half=0.2),
    }
    c = check_claims(s, {})[1]
    assert (
        c["claim"].startswith("PARA-GRPO lifts") and c["holds"] is False and "3 seeds" in c["note"]
    )
    s["paragrpo"] = _v(0.61, 0.2, seeds=3, half=0.05)
    assert check_claims(s, {})[1]["holds"] is True  # 0.56 > 0.33


def test_parallel_beats_sequential_is_a_paired_bootstrap() -> None:
    rows = [
        {"id": str(i), "nframes": 4, "mode": m, "score": float(m == "parallel" or i % 4 == 0)}
        for i in range(40)
        for m in ("parallel", "sequential")
    ]
    c = check_claims({"paragrpo": _v(0.4, 0.2)}, {"paragrpo": rows})[-1]
    assert c["holds"] is True and c["ours"]["parallel_minus_sequential"]["mean"] == pytest.approx(
        0.75
    )
    same = [{**r, "score": 1.0} for r in rows]
    assert check_claims({"paragrpo": _v(0.4, 0.2)}, {"paragrpo": same})[-1]["holds"] is False


# ---- checkpoint selection -----------------------------------------------------------------------


def test_pick_early_takes_the_earliest_within_tolerance_of_the_best() -> None:
    scores = [(100, 0.20), (200, 0.38), (300, 0.41), (400, 0.40), (500, 0.30)]
    assert pick_early(scores, tolerance=0.05) == 200  # 0.38 ≥ 0.41 − 0.05
    assert pick_early(scores, tolerance=0.0) == 300
    assert pick_early(scores, tolerance=0.25) == 100
    assert (
        pick_early([(500, 0.1), (100, 0.1)], tolerance=0.0) == 100
    )  # order of input does not matter
    with pytest.raises(ValueError):
        pick_early([], tolerance=0.1)
    with pytest.raises(ValueError):
        pick_early(scores, tolerance=-1)


def test_sft_checkpoints_lists_verified_checkpoints_and_the_final_model(tmp_path: Path) -> None:
    (tmp_path / "model").mkdir()
    (tmp_path / "model" / "config.json").write_text("{}")
    (tmp_path / "train_log.jsonl").write_text('{"step": 1}\n{"step": 2}\n')
    (tmp_path / "checkpoints" / "step_000001.tmp").mkdir(
        parents=True
    )  # a crashed write: not a candidate
    assert sft_checkpoints(tmp_path) == [(2, tmp_path / "model")]


def test_repro_set_overrides_reach_every_stage_config_and_keep_the_base_key() -> None:
    """`paravt repro --set`: the overrides land in the preset's config (validated), and where a run
    happens (model.device) is not part of the shared base's cache key."""
    from paravt.repro.bases import base_key
    from paravt.repro.presets import PRESETS, base_config, with_config_overrides
    from paravt.repro.training import preset_base_settings

    p = PRESETS["quick"]
    plain = base_config(Path("/tmp/r"), p)
    gpu = with_config_overrides(plain, ["model.device=cuda", "model.replicas=1", "eval.workers=4"])
    assert (gpu.model.device, gpu.model.replicas, gpu.eval.workers) == ("cuda", 1, 4)
    assert (plain.model.device, plain.model.replicas) == (
        "cpu",
        p.replicas,
    )  # the preset is not changed
    assert with_config_overrides(plain, []) is plain

    def settings(cfg: TrainConfig) -> dict[str, Any]:
        return preset_base_settings(cfg, p)

    def key(cfg: TrainConfig) -> str:
        return base_key(settings(cfg))

    assert key(gpu) == key(plain)
    assert key(with_config_overrides(plain, ["prior.steps=1000"])) != key(plain)
    assert key(with_config_overrides(gpu, ["model.dtype=bfloat16"])) != key(gpu)  # another base
    # the loss aggregation: another base when it changes; token-mean (the field's default) keeps
    # the key the bases built before the field had
    token_mean = with_config_overrides(plain, ["prior.loss_agg=token-mean"])
    assert plain.prior.loss_agg == "seq-mean-token-mean"  # the preset's base: the row mean
    assert key(token_mean) != key(plain)
    assert key(with_config_overrides(plain, ["prior.loss_agg=seq-mean-token-mean"])) == key(plain)
    assert (
        "loss_agg" not in settings(token_mean)["prior"]
    )  # the keys built before the field stay valid
    # the habit's share under the no-tool prompt: at 0 (its default) out of the key, else another
    assert "plain_share" not in settings(plain)["prior"]
    assert key(with_config_overrides(plain, ["prior.plain_share=0"])) == key(plain)
    assert key(with_config_overrides(plain, ["prior.plain_share=0.3"])) != key(plain)
    # the alignment stage: out of the key at 0, another base with one
    no_stage = with_config_overrides(plain, ["prior.align_steps=0"])
    assert "align_steps" not in settings(no_stage)["prior"]
    assert key(with_config_overrides(plain, ["prior.align_steps=300"])) != key(no_stage)
    # the language stage (copy runs): out of the key at 0, another base with one
    assert "copy_steps" not in settings(plain)["prior"]
    assert key(with_config_overrides(plain, ["prior.copy_steps=0"])) == key(plain)
    with_copy = with_config_overrides(plain, ["prior.copy_steps=500", "prior.steps=1900"])
    assert settings(with_copy)["prior"]["copy_steps"] == 500 and key(with_copy) != key(plain)
    assert "copy_pool" in settings(with_copy) and "copy_pool" not in settings(plain)
    # the report stage (the preset's base has one): out of the key at 0, another base with one
    assert settings(plain)["prior"]["report_steps"] == p.base.report_steps > 0
    without = with_config_overrides(plain, ["prior.report_steps=0", "prior.steps=1400"])
    assert "report_steps" not in settings(without)["prior"]
    with_report = with_config_overrides(without, ["prior.report_steps=250", "prior.steps=1650"])
    assert settings(with_report)["prior"]["report_steps"] == 250 and key(with_report) != key(plain)
    assert "report_replay" not in settings(with_report)["prior"]
    replayed = with_config_overrides(with_report, ["prior.report_replay=0.5"])
    assert settings(replayed)["prior"]["report_replay"] == 0.5 and key(replayed) != key(with_report)
    with pytest.raises(ConfigError, match="model.replicas=1"):
        with_config_overrides(plain, ["model.device=cuda"])


def test_a_new_tiny_factory_is_a_new_base(monkeypatch: pytest.MonkeyPatch) -> None:
    """The base trains from the tiny factory's random init (its tokenizer): another
    `TINY_VERSION` is another base key, not a cached base built from the old init; the version
    the cached bases were built at keeps their keys."""
    import paravt.models.tiny as tiny
    from paravt.repro.bases import base_key
    from paravt.repro.presets import PRESETS, base_config
    from paravt.repro.training import preset_base_settings

    p = PRESETS["demo"]
    cfg = base_config(Path("/tmp/r"), p)
    monkeypatch.setattr(tiny, "TINY_VERSION", 2)
    at_2 = preset_base_settings(cfg, p)
    assert "tiny" not in at_2
    monkeypatch.setattr(tiny, "TINY_VERSION", 3)
    at_3 = preset_base_settings(cfg, p)
    assert at_3["tiny"] == 3
    assert base_key(at_3) != base_key(at_2)
