"""Teacher-forced probe of the main agent's CALL DECISION, over checkpoints (docs/repro-log.md,
2026-12-07 j): does an RL run move the decision to call, and which way?

    .venv/bin/paravt repro --preset demo --variants vanilla_grpo --seeds 1 \\
        --set rl.save_every=1 --out runs/rl0
    .venv/bin/python benchmarks/decision_probe.py runs/rl0 --out runs/dec.json \\
        init=runs/rl0/sft_strong/checkpoints/step_000125/model \\
        rl1=runs/rl0/vanilla_grpo/seed0/checkpoints/step_000001/model ...

For each of the first ``--prompts`` RL prompts (at n = ``--nframes``, the ``vanilla_grpo``
variant's episode settings, the parallel mode's tool prompt) the context is the episode's
opening (``agent.messages.opening_messages``, the overview decoded as an episode decodes it) and
the generation prompt. Two think openings are scored token by token, each as ONE string (the
protocol tokenizer merges words across a sentence boundary): ``<think>\\n`` + the oracle's asks
sentence + the tool trace's " I will search" or the direct trace's " The overview shows"
(``data.synth.oracle``). From the first token where the two differ: its log p (``first``) and
the sum to the end (``seq``); ``logodds_seq`` = tool − direct, > 0 where the checkpoint would
rather search. Prints one line per checkpoint; OUT holds every prompt's values.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import torch

from labelled_models import HELP, labelled_model
from paravt.agent.backend import open_tools
from paravt.agent.inputs import load_episode_inputs
from paravt.agent.messages import opening_messages
from paravt.agent.modes import MODES
from paravt.agent.settings import EpisodeInput, EpisodeSettings
from paravt.config import TrainConfig
from paravt.data.synth.oracle import ASKS
from paravt.models.chat import ChatCodec
from paravt.models.hf.loading import load_policy, load_processor
from paravt.models.media import model_inputs, sampling_log_softmax
from paravt.protocol.tags import THINK_PREFIX
from paravt.repro.presets import PRESETS, base_config, with_config_overrides
from paravt.repro.variants import VARIANTS, with_overrides
from paravt.video import overview_count, probe, sample_frames
from paravt.video.types import Frames

#: oracle.parallel_trace's first think: f"{asks(q, spec)} I will search {K} windows in parallel …"
TOOL = " I will search"
#: oracle._direct_think: f"{asks(q, spec)} The overview shows {description} at {t} s.{step}"
DIRECT = " The overview shows"
ASKS_EVENT = "The question asks for the event."  # oracle.asks: an open question, not a flash
VARIANT = "vanilla_grpo"
Prompt = tuple[EpisodeInput, list[int], list[Frames], str]


def asks_of(inp: EpisodeInput) -> str:
    """``oracle.asks``: the needle kind is the row's subset ``synth-{kind}``."""
    if not inp.subset.startswith("synth-"):
        raise ValueError(f"{inp.id}: subset {inp.subset!r} does not name a synth needle kind")
    kind = inp.subset.removeprefix("synth-")
    return ASKS_EVENT if inp.task == "oe" and kind != "flash" else ASKS[inp.task]


def prompts_of(
    cfg: TrainConfig, run: Path, nframes: int, limit: int, codec: ChatCodec
) -> list[Prompt]:
    """(input, opening ids with the generation prompt, videos, think head) per RL prompt."""
    cfg = with_overrides(cfg, dict(VARIANTS[VARIANT].overrides))
    s = EpisodeSettings.from_config(cfg, training=True)
    specs = open_tools(cfg.rollout).specs
    prefix = THINK_PREFIX if s.think_prefix else ""
    out: list[Prompt] = []
    for inp in load_episode_inputs(run / "synth" / "rl.parquet", nframes=nframes, limit=limit):
        info = probe(inp.video)
        n = overview_count(inp.nframes, info.duration, s.overview_fps)
        frames = sample_frames(
            inp.video,
            0.0,
            info.duration,
            nframes=n,
            max_pixels=s.overview_max_pixels,
            size_factor=s.size_factor,
            whole=True,
        )
        ids: list[int] = []
        videos: list[Frames] = []
        for msg in opening_messages(inp, s, MODES["parallel"], specs, info, frames, None):
            enc = codec.encode_message(msg)
            ids += enc.ids
            videos += enc.videos
        ids += codec.generation_prompt(prefix)
        out.append((inp, ids, videos, ("" if prefix else THINK_PREFIX) + asks_of(inp)))
    return out


def token_logps(
    model: Any, codec: ChatCodec, ctx: list[int], videos: list[Frames], cont: list[int]
) -> list[float]:
    """log p of each token of ``cont`` after ``ctx`` (τ = 1, vision placeholders suppressed as
    the generator suppresses them)."""
    device = next(model.parameters()).device
    inputs = model_inputs(codec.processor, ctx + cont, videos, device=device)
    inputs.pop("attention_mask")  # one row, no pads
    pos = torch.arange(len(ctx), len(ctx) + len(cont), device=device)
    hidden = model.model(**inputs, use_cache=False).last_hidden_state  # 1×L×H
    logp = sampling_log_softmax(
        model.lm_head(hidden[0, pos - 1]), suppress_ids=codec.vision_token_ids
    )  # P×V: token t is predicted at t − 1
    target = inputs["input_ids"][0, pos]
    return [float(x) for x in logp.gather(-1, target[:, None])[:, 0]]


def score(path: str, prompts: list[Prompt]) -> list[dict[str, Any]]:
    policy = load_policy(path)
    codec = ChatCodec(policy.processor)
    rows = []
    with torch.no_grad():
        for inp, ids, videos, head in prompts:
            seqs = {
                name: list(codec.encode_text(head + c))
                for name, c in (("tool", TOOL), ("direct", DIRECT))
            }
            t, d = seqs["tool"], seqs["direct"]
            fork = next((i for i in range(min(len(t), len(d))) if t[i] != d[i]), None)
            if fork is None:
                raise ValueError(f"{TOOL!r} and {DIRECT!r} tokenize alike after {head!r}")
            r: dict[str, Any] = {"id": inp.id, "task": inp.task, "fork": fork}
            for name, cont in seqs.items():
                lp = token_logps(policy.model, codec, ids, videos, cont)
                r[f"{name}_first"], r[f"{name}_seq"] = lp[fork], sum(lp[fork:])
            r["logodds_first"] = r["tool_first"] - r["direct_first"]
            r["logodds_seq"] = r["tool_seq"] - r["direct_seq"]
            rows.append(r)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("run", type=Path, help="a `paravt repro --preset demo` output directory")
    ap.add_argument("models", nargs="+", type=labelled_model, help=HELP)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--nframes", type=int, default=64)
    ap.add_argument("--prompts", type=int, default=24)
    ap.add_argument("--preset", default="demo", choices=sorted(PRESETS), help="the run's preset")
    ap.add_argument("--set", action="append", default=[], help="the run's --set overrides")
    a = ap.parse_args()
    labels = a.models
    codec = ChatCodec(load_processor(labels[0][1]))  # the checkpoints share one tokenizer
    cfg = with_config_overrides(base_config(a.run, PRESETS[a.preset]), a.set)
    prompts = prompts_of(cfg, a.run, a.nframes, a.prompts, codec)
    if not prompts:
        ap.error(f"{a.run}/synth/rl.parquet: no RL prompt")
    result: dict[str, Any] = {"run": str(a.run), "nframes": a.nframes, "checkpoints": {}}
    for label, path in labels:
        rows = score(path, prompts)
        mean = {k: sum(r[k] for r in rows) / len(rows) for k in ("logodds_first", "logodds_seq")}
        calls = sum(r["logodds_seq"] > 0 for r in rows)
        result["checkpoints"][label] = {"model": path, "mean": mean, "prompts": rows}
        print(
            f"{label}: logodds first {mean['logodds_first']:+.2f} seq {mean['logodds_seq']:+.2f}, "
            f"tool preferred on {calls} of {len(rows)} prompts",
            flush=True,
        )
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
