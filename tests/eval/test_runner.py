"""`paravt eval` runner: results rows, resume by id, the OpenAI-compatible URL backend, and one
writer per output directory."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from paravt.agent import EpisodeSettings
from paravt.agent.backend import Backend, open_backend
from paravt.agent.inputs import load_episode_inputs
from paravt.config import ModelConfig, RolloutConfig
from paravt.data.synth.build import build
from paravt.errors import ConfigError
from paravt.eval.results import load_results
from paravt.eval.runner import evaluate
from paravt.models.base import SamplingParams
from paravt.runlock import OutputLocked

sys.path.insert(0, str(Path(__file__).parents[1] / "models"))
from oai_server import RunningServer, ServerState, make_app  # noqa: E402

SETTINGS = EpisodeSettings(
    overview_max_pixels=64 * 64,
    crop_max_pixels=64 * 64,
    crop_max_frames=4,
    sampling=SamplingParams(temperature=0.0, max_new_tokens=16),
    sub_sampling=SamplingParams(temperature=0.0, max_new_tokens=8),
)


@pytest.fixture(scope="module")
def samples(tmp_path_factory: pytest.TempPathFactory):
    root = Path(tmp_path_factory.mktemp("synth"))
    build(root, videos=1, eval_videos=1, seed=3)
    return load_episode_inputs(root / "eval.parquet", nframes=4)


def test_eval_writes_a_row_per_sample_and_mode_and_resumes_by_id(
    samples, tiny_qwen3_dir: str, tmp_path: Path
) -> None:
    backend = open_backend(ModelConfig(path=tiny_qwen3_dir), RolloutConfig())
    out = tmp_path / "ev"
    evaluate(samples[:2], backend, SETTINGS, modes=["parallel", "none"], out=out, progress=False)
    rows = load_results(out / "results.jsonl")
    assert sorted((r.id, r.mode) for r in rows) == sorted(
        (s.id, m) for s in samples[:2] for m in ("parallel", "none")
    )
    assert all(r.nframes == 4 and r.tokens.main_visual > 0 and r.transcript for r in rows)
    assert all(r.format_reward is not None and r.format_reward <= 1.35 for r in rows)
    # a rerun over more samples only runs the new ids
    metrics = evaluate(
        samples, backend, SETTINGS, modes=["parallel", "none"], out=out, progress=False
    )
    rows = load_results(out / "results.jsonl")
    assert len(rows) == 2 * len(samples) and len({(r.id, r.mode) for r in rows}) == len(rows)
    assert metrics["by_mode"]["none"]["summary"]["n"] == len(samples)
    assert json.loads((out / "metrics.json").read_text())["summary"]["n"] == len(rows)


def test_eval_against_an_openai_compatible_server_url(
    samples, tiny_qwen3_dir: str, tmp_path: Path
) -> None:
    from paravt.models.hf.generator import HFGenerator
    from paravt.models.hf.loading import load_policy

    with RunningServer(make_app(HFGenerator(load_policy(tiny_qwen3_dir)), ServerState())) as srv:
        backend = open_backend(
            ModelConfig(path=srv.url, backend="openai"),
            RolloutConfig(),
            processor_dir=tiny_qwen3_dir,
        )
        evaluate(
            samples[:2], backend, SETTINGS, modes=["none"], out=tmp_path / "url", progress=False
        )
    rows = load_results(tmp_path / "url" / "results.jsonl")
    assert len(rows) == 2 and all(
        r.end_reason in ("answer", "length") and r.tokens.generated > 0 for r in rows
    )


def test_a_url_without_a_processor_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match="--processor"):
        open_backend(ModelConfig(path="http://127.0.0.1:9/v1", backend="openai"), RolloutConfig())
    with pytest.raises(
        ConfigError, match="set model.backend=openai"
    ):  # the URL is not a checkpoint
        open_backend(ModelConfig(path="http://127.0.0.1:9/v1"), RolloutConfig())


HOLD = """
import sys, time
from paravt import runlock
with runlock.hold(sys.argv[1], "paravt eval"):
    print("held", flush=True)
    time.sleep(30)
"""


def test_a_second_eval_on_one_out_is_refused_and_a_killed_ones_lock_is_taken_over(
    tmp_path: Path,
) -> None:
    out = tmp_path / "ev"
    idle = Backend(generator=None, codec=None, tools=None)  # type: ignore[arg-type]  # no sample reaches it
    first = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(out)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert first.stdout is not None and first.stdout.readline().strip() == "held"
        with pytest.raises(OutputLocked, match=rf"pid {first.pid} on .* since .*paravt eval"):
            evaluate([], idle, SETTINGS, modes=["none"], out=out, progress=False)
        assert not (out / "metrics.json").exists()
    finally:
        first.send_signal(signal.SIGKILL)  # killed: its lock file stays behind, stale
        first.wait(10)
    evaluate(
        [], idle, SETTINGS, modes=["none"], out=out, progress=False
    )  # takes the stale lock over
    assert (out / "metrics.json").exists() and not (out / ".paravt.lock").exists()
