"""The config sections: every knob of paravt, typed, with its one default and description.

The sections of an episode are ``paravt.config.episode``, those of training
``paravt.config.training`` and ``paravt.config.reward``, the shared base and fields
``paravt.config.fields``; here the eval, tool-server and distillation sections, the whole
``TrainConfig`` and its cross-field checks."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from paravt.config.choices import (
    MAX_WORKERS,
    DispatchMode,
    EvalProtocol,
    PromptClass,
    Scoring,
    backend_problem,
)
from paravt.config.episode import (
    ModelConfig,
    RolloutConfig,
    SamplingConfig,
    VideoConfig,
)
from paravt.config.fields import _max_row_bytes, _Strict
from paravt.config.limits import step_size_problems
from paravt.config.reward import RewardConfig
from paravt.config.tracking import LoggingConfig
from paravt.config.training import (
    PriorConfig,
    RLConfig,
    SFTConfig,
)
from paravt.config.verl import VerlConfig


class EvalConfig(_Strict):
    modes: list[DispatchMode] = Field(
        ["parallel"],
        description="Dispatch modes each sample is evaluated in: one result row per (sample, "
        "mode).",
    )
    limit: int | None = Field(
        None, ge=1, description="Evaluate only the first N samples (None: all)."
    )
    workers: int = Field(
        4, ge=1, le=MAX_WORKERS, description="Episodes run concurrently; at most 1024."
    )
    temperature: float = Field(0.0, ge=0, description="Eval decodes greedily by default.")
    benchmark_fps: float | None = Field(
        1.0,
        gt=0,
        description="`eval --benchmark`: overview frames per second of video, capped by the "
        "budget video.overview_nframes (64: the paper's 1 fps, subsampled to 64 when longer) "
        "[paper]; None: exactly the budget, uniformly spread, whatever the length (the authors' "
        "eval).",
    )
    benchmark_max_pixels: int = Field(
        224 * 224, ge=16, description="`eval --benchmark`: max pixels per overview frame [paper]."
    )
    prompt_class: PromptClass = Field(
        "agentic",
        description="`eval --benchmark` prompt class [paper §C]: agentic = the tool prompt (mode "
        "parallel/sequential); reasoning = think/answer, no tools; direct = "
        "the question only, no system prompt.",
    )
    protocol: EvalProtocol = Field(
        "release",
        description="`eval --benchmark`, agentic class: how a question's turns run. release = the "
        "authors' eval driver (their agentic prompt, no think prefix, at most 5 calls a turn with "
        "the rest dropped, after the 3rd tool round a forced answer turn of 64 tokens, 128 for "
        "Charades-STA, which gets their grounding prompt); paravt = our tool prompt "
        "(rollout.prompt_version), the think prefix, rollout.k_max and max_turns, no forced turn. "
        "Both dispatch to sub-agents, as the paper does (paravt.eval.benchmarks.release).",
    )
    scoring: Scoring = Field(
        "lmms",
        description="`eval --benchmark` headline scorer: lmms = lmms-eval's task rules; paravt = "
        "our <answer> extraction (both are in metrics.json).",
    )


class ToolServerConfig(_Strict):
    """``paravt serve-tools``: what a remote caller may read and how much it may ask (docs/tools.md,
    "Threat model"). Client-sent caps are clamped to the ``max_*`` fields here."""

    video_roots: list[str] = Field(
        default_factory=list,
        description="Directories whose regular files may be served (symlinks resolved first); "
        "empty = the working directory.",
    )
    max_concurrency: int = Field(64, ge=1, description="Batch requests served at once.")
    request_timeout_s: float = Field(120.0, gt=0, description="Per-request timeout (504 after it).")
    idle_ttl_s: float = Field(
        300.0, gt=0, description="Release a trajectory's python runtime after this idle time."
    )
    max_calls_per_request: int = Field(
        32, ge=1, description="Tool calls in one batch request, over all items (413 beyond)."
    )
    max_items_per_request: int = Field(
        64, ge=1, description="Trajectory items in one batch request (413 beyond)."
    )
    max_body_bytes: int = Field(4 << 20, ge=1024, description="Request body size (413 beyond).")
    header_timeout_s: float = Field(
        10.0,
        gt=0,
        description="A connection must deliver a complete request header within this time (408, "
        "closed).",
    )
    body_timeout_s: float = Field(
        30.0, gt=0, description="A request body must arrive completely within this time (408)."
    )
    max_connections: int = Field(
        512, ge=1, description="Open connections plus running requests (503 beyond)."
    )
    max_runtimes: int = Field(
        16,
        ge=1,
        description="Live python runtimes; the least recently used idle one is evicted for a new "
        "one.",
    )
    max_crop_frames: int = Field(
        VideoConfig.model_fields["crop_max_frames"].default,
        ge=1,
        description="Cap on a client's crop_max_frames.",
    )
    max_crop_fps: float = Field(
        VideoConfig.model_fields["crop_fps"].default,
        gt=0,
        description="Cap on a client's crop_fps.",
    )
    max_crop_pixels: int = Field(
        VideoConfig.model_fields["crop_max_pixels"].default,
        ge=16,
        description="Cap on a client's crop_max_pixels.",
    )
    max_size_factor: int = Field(
        32,
        ge=1,
        description="Cap on a client's size_factor (frames are at least size_factor² pixels).",
    )
    max_call_pixels: int = Field(
        16 * 224 * 224, ge=1, description="Cap on a client's per-call visual budget (frame_select)."
    )
    max_episode_pixels: int = Field(
        64 * 224 * 224,
        ge=1,
        description="Cap on a client's per-episode visual budget (frame_select).",
    )
    python_weak_isolation: bool = Field(
        False,
        description="Let the python tool run WITHOUT bubblewrap (unshare/rlimits only: the host "
        "filesystem is readable); off = refuse to start.",
    )
    api_key_file: str | None = Field(
        None,
        description="File whose first line is the key every request must send as 'Authorization: "
        "Bearer KEY' (401 and nothing run without it); required to bind "
        "beyond loopback. None: no key (loopback only).",
    )


class TrainConfig(_Strict):
    """Top-level config of `paravt train prior|sft|rl` and `paravt eval` (YAML-loadable)."""

    out_dir: str = Field(
        "runs/train",
        description="Run directory of a trainer: checkpoints, train_log.jsonl and the final "
        "model (out_dir/model); with --resume a run continues from the last checkpoint (and the "
        "same tracker runs), without it training starts over from step 1.",
    )
    data: str = Field(
        "runs/synth/rl.parquet", description="Training parquet (rl.parquet or sft.parquet)."
    )
    data_root: str | None = Field(
        None, description="Root for relative video paths (default: the parquet's directory)."
    )
    init_from: str | None = Field(
        None, description="Checkpoint to start from (default: model.path)."
    )
    max_row_bytes: int = _max_row_bytes()
    lock_wait_s: float = Field(
        300.0,
        gt=0,
        allow_inf_nan=False,
        description="Longest wait, in seconds, on "
        "another run's lock that shows no progress (`paravt repro`'s shared base "
        "builder: paravt.repro.bases); then the run stops, naming the holder.",
    )
    model: ModelConfig = Field(
        default_factory=ModelConfig,
        description="The policy: checkpoint or server URL, backend, device, HTTP limits.",
    )
    video: VideoConfig = Field(
        default_factory=VideoConfig, description="Frame sampling of the overview and of the crops."
    )
    sampling: SamplingConfig = Field(
        default_factory=SamplingConfig,
        description="Decoding of the main agent's and the sub-agents' turns.",
    )
    rollout: RolloutConfig = Field(
        default_factory=RolloutConfig, description="One episode: dispatch mode, limits, tools."
    )
    reward: RewardConfig = Field(
        default_factory=RewardConfig,
        description="The reward's terms and weights, and the optional LLM judge (docs/rewards.md).",
    )
    rl: RLConfig = Field(default_factory=RLConfig, description="PARA-GRPO: `paravt train rl`.")
    sft: SFTConfig = Field(
        default_factory=SFTConfig, description="Supervised cold start: `paravt train sft`."
    )
    prior: PriorConfig = Field(
        default_factory=PriorConfig,
        description="The simulated pretrained tool prior: `paravt train prior`.",
    )
    eval: EvalConfig = Field(
        default_factory=EvalConfig,
        description="`paravt eval`: modes, benchmark protocol, scoring (the overview budget is "
        "video.overview_nframes).",
    )
    verl: VerlConfig = Field(
        default_factory=VerlConfig,
        description="Resources of `paravt train rl --engine verl` (nodes, GPUs, rollout engine).",
    )
    logging: LoggingConfig = Field(
        default_factory=LoggingConfig,
        description="The ONE logger list of every trainer (console, jsonl, tensorboard, wandb, "
        "mlflow) and the trackers' project, run name, group and modes.",
    )

    @model_validator(mode="after")
    def _cross_field(self) -> TrainConfig:
        problems = cross_field_problems(self)
        if problems:
            raise ValueError("; ".join(problems))
        return self


def cross_field_problems(c: TrainConfig) -> list[str]:
    """The combinations of fields that cannot run, each named with its values and the fix."""
    out: list[str] = []
    r = c.rollout
    # eval.modes counts only where it was asked for (a config file, `paravt eval --mode`), not its
    # default
    modes = [r.mode, *(c.eval.modes if "modes" in c.eval.model_fields_set else [])]
    if c.video.overview_nframes == 0 and r.mode == "none":
        out.append(
            "video.overview_nframes=0 with rollout.mode='none' shows the model nothing; "
            "set video.overview_nframes > 0 or use a tool mode"
        )
    if "eva" in modes and "frame_select" not in r.tools:
        where = "rollout.mode" if r.mode == "eva" else "eval.modes"
        out.append(
            f"{where} uses 'eva', which selects frames each round, but rollout.tools={r.tools} "
            "lacks "
            "frame_select; add it (--set 'rollout.tools=[frame_select]') or use another mode"
        )
    if c.sft.tool_prompt_direct > 0 and r.mode == "none":
        out.append(
            f"sft.tool_prompt_direct={c.sft.tool_prompt_direct} trains direct traces under the "
            "tool prompt RL samples with, but rollout.mode='none' samples under the reasoning "
            "prompt; set it to 0 or use a tool mode"
        )
    if r.mode != "none" and not r.tools:
        out.append(
            f"rollout.mode={r.mode!r} calls tools but rollout.tools is empty; list a tool "
            "(--set 'rollout.tools=[crop_video]') or set rollout.mode=none"
        )
    if problem := backend_problem(c.model.path, c.model.backend):
        out.append(problem)
    if c.model.replicas > 1 and c.model.device.partition(":")[0] != "cpu":  # cpu, cpu:0
        out.append(
            f"model.replicas={c.model.replicas} with model.device={c.model.device!r}: replicas "
            "are CPU "
            "processes (one process batches on an accelerator); set model.replicas=1"
        )
    out.extend(step_size_problems(c))  # sizes this machine cannot hold (paravt/config/limits.py)
    return out


class DistillConfig(_Strict):
    """`paravt data distill`: cold-start traces from a teacher endpoint (docs/ARCHITECTURE.md, data
    layer)."""

    pipeline: Literal["paravt", "eva"] = Field(
        "paravt",
        description="'paravt': sequential crop_video traces converted to parallel [paper §B]; "
        "'eva': Executor-Reflector frame_select traces [EVA].",
    )
    workers: int = Field(
        4, ge=1, le=MAX_WORKERS, description="Rows distilled concurrently; at most 1024."
    )
    max_turns: int = Field(4, ge=1, description="Teacher turns per row (paravt); EVA rounds (eva).")
    temperature: float = Field(0.0, ge=0, description="Teacher sampling temperature.")
    max_tokens: int = Field(1024, ge=1, description="Max tokens of one teacher turn.")
    request_timeout_s: float = Field(
        120.0,
        gt=0,
        description="Whole-request deadline of one teacher request (connect, headers and body "
        "together).",
    )
    max_reply_bytes: int = Field(
        4 << 20,
        ge=1024,
        description="Largest teacher reply body read; a bigger one is that row's teacher error.",
    )
    max_retries: int = Field(
        4,
        ge=0,
        description="Retries of a teacher request on timeouts, transport errors, 408, 429 and "
        "5xx (paravt.http.retry).",
    )
    backoff_s: float = Field(
        1.0, ge=0, description="First back-off; doubles per retry (a larger Retry-After wins)."
    )
    keep_incorrect: bool = Field(
        False,
        description="Keep traces whose answer scores 0 against the gold (no rejection sampling).",
    )
    llm_cleanup: bool = Field(
        True,
        description="Ask the teacher to reformat a turn the deterministic repair cannot fix "
        "(once).",
    )
    bank_top_k: int = Field(
        2, ge=0, description="EVA: similar successful trajectories shown to the Executor."
    )
    overview_max_pixels: int = Field(
        224 * 224,
        ge=16,
        description="Max pixels per overview frame sent to the teacher (the row's nframes frames).",
    )
    crop_max_frames: int = Field(
        16, ge=1, description="crop_video frames per window for the teacher [paper]."
    )
    crop_max_pixels: int = Field(224 * 224, ge=16, description="Max pixels per crop frame [paper].")
    size_factor: int = Field(
        32, ge=1, description="Resize to multiples of this (Qwen3-VL 32, Qwen2.5-VL 28)."
    )
    max_row_bytes: int = _max_row_bytes()
