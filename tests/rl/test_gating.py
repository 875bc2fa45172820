import json
import os
import subprocess
import sys
from collections import Counter

import pytest

from paravt.errors import ConfigError
from paravt.rl.gating import gated_nframes

CHOICES = (4, 8, 16, 32, 64)
IDS = [f"synth-{i:05d}" for i in range(5000)]


def test_all_rollouts_of_a_prompt_get_the_same_n() -> None:
    draws = {gated_nframes(7, 3, "synth-00042", CHOICES) for _ in range(8)}  # G = 8 rollouts
    assert len(draws) == 1 and draws <= set(CHOICES)


def test_values_are_identical_in_a_process_with_another_hash_seed() -> None:
    ids = IDS[:200]
    here = [gated_nframes(0, 1, pid, CHOICES) for pid in ids]
    code = (
        "import json,sys\nfrom paravt.rl.gating import gated_nframes\n"
        "ids=json.loads(sys.stdin.read())\n"
        f"values = [gated_nframes(0, 1, p, {list(CHOICES)}) for p in ids]\n"
        "print(json.dumps([hash('synth'), values]))"
    )
    salted = set()
    for hash_seed in ("1", "12345"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        out = subprocess.run(
            [sys.executable, "-c", code],
            input=json.dumps(ids),
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=60,
        )
        str_hash, values = json.loads(out.stdout)
        salted.add(str_hash)
        assert values == here
    assert len(salted) == 2  # the built-in hash really differed between the two processes


def test_distribution_over_5000_prompts_is_near_uniform() -> None:
    counts = Counter(gated_nframes(0, 0, pid, CHOICES) for pid in IDS)
    assert set(counts) == set(CHOICES)
    # chi-square with 4 degrees of freedom; expected 1000 per choice; the 0.999 quantile is 18.47
    chi2 = sum((counts[c] - 1000) ** 2 / 1000 for c in CHOICES)
    assert chi2 < 18.47, counts


def test_a_new_epoch_reshuffles_about_four_fifths_of_prompts() -> None:
    # independent uniform draws over 5 values agree with probability 1/5, so ~80 % change;
    # binomial std over 5000 prompts is sqrt(5000·0.8·0.2) ≈ 28 ⇒ 4000 ± 150 is a > 5σ band
    changed = sum(gated_nframes(0, 0, p, CHOICES) != gated_nframes(0, 1, p, CHOICES) for p in IDS)
    assert 3850 < changed < 4150


def test_the_seed_also_reshuffles() -> None:
    changed = sum(gated_nframes(0, 0, p, CHOICES) != gated_nframes(1, 0, p, CHOICES) for p in IDS)
    assert 3850 < changed < 4150


def test_key_fields_are_not_concatenated_ambiguously() -> None:
    # (seed=1, epoch=23) and (seed=12, epoch=3) must be different keys: over 500 prompts at
    # least one draw differs (all-equal by chance has probability (1/5)^500)
    a = [gated_nframes(1, 23, p, CHOICES) for p in IDS[:500]]
    b = [gated_nframes(12, 3, p, CHOICES) for p in IDS[:500]]
    assert a != b


def test_single_choice_always_returns_it() -> None:
    assert {gated_nframes(0, e, p, [16]) for e in range(3) for p in IDS[:50]} == {16}


@pytest.mark.parametrize("bad", [[], [4, 0], [8, -2], [4.0, 8], [True, 8]])
def test_bad_choices_raise_config_error_naming_the_fix(bad: list) -> None:
    with pytest.raises(ConfigError, match="rl.gating.choices"):
        gated_nframes(0, 0, "p", bad)
