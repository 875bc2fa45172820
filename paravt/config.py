"""Every knob of paravt, typed and validated, in one place.

Each default is written once, here, with one ``description``. Defaults marked [paper] follow
DESIGN.md §4–5 (docs/ARCHITECTURE.md). Objects below the CLI/trainer layer never receive these
models: builders pass plain values (STYLE.md §3). ``paravt config show`` prints the reference YAML.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from difflib import get_close_matches
from pathlib import Path
from typing import Any, Literal, TypeVar
from urllib.parse import urlsplit

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from paravt.errors import ConfigError

# ---- The ONE definition of each choice set; every other module imports it from here ------------
#: Dispatch modes (each is a class in paravt.agent.modes, registered in MODES): parallel (the
#: method), sequential (the baseline), eva (EVA's plan-then-select rounds), none.
DispatchMode = Literal["parallel", "sequential", "eva", "none"]
#: Task types of a sample: multiple choice, temporal grounding, open-ended.
TaskType = Literal["mcq", "tvg", "oe"]
#: Model families paravt builds and loads.
ModelFamily = Literal["qwen2_5_vl", "qwen3_vl"]
#: R_tool variants (paravt.rewards.terms.tool_reward).
ToolMode = Literal["parse_bonus", "graduated", "accumulative", "off"]
#: `eval --benchmark` prompt classes [paper §C] (paravt.eval.benchmarks.protocol).
PromptClass = Literal["agentic", "reasoning", "direct"]
#: `eval --benchmark` headline scorers: lmms-eval's task rules or our <answer> extraction.
Scoring = Literal["lmms", "paravt"]
#: KL estimators of the loss (paravt.rl.loss).
KLKind = Literal["k1", "k3"]
#: OpenAI-compatible serving engines (`paravt serve-model`, verl's rollout).
ServeEngine = Literal["vllm", "sglang"]

#: Most overview frames a prompt may carry (Qwen-VL's video frame cap); gating choices included.
MAX_OVERVIEW_FRAMES = 768


def url_problem(url: str) -> str | None:
    """Why ``url`` is not an http(s) URL with a host and a valid port (None when it is one)."""
    try:
        parts = urlsplit(url.strip())
        ok = parts.scheme in ("http", "https") and bool(parts.hostname) and (parts.port or 1) > 0
    except ValueError:  # a port that is not a number or out of range
        ok = False
    return None if ok else f"{url!r} is not an http(s) URL with a host (and a port in 1..65535); pass one like http://127.0.0.1:8000/v1"


def _http_url_or_none(url: str | None) -> str | None:
    """Field validator of an optional URL field (pydantic reports the ValueError under its name)."""
    if url is not None and (problem := url_problem(url)):
        raise ValueError(problem)
    return url


def check_url(url: str, option: str) -> str:
    """``url`` when it is an http(s) URL, else `ConfigError` naming ``option`` (a flag or field)."""
    problem = url_problem(url)
    if problem:
        raise ConfigError(f"{option} {problem}")
    return url


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=False)


class VideoConfig(_Strict):
    """How frames are sampled from a video (overview and crops)."""

    overview_nframes: int = Field(16, ge=0, le=MAX_OVERVIEW_FRAMES, description="Frames in the main agent's overview (0 = on-demand context: metadata only).")
    overview_max_pixels: int = Field(64 * 64, ge=16, description="Max pixels per overview frame (resized keeping aspect).")
    crop_max_frames: int = Field(16, ge=1, le=256, description="Max frames a sub-agent sees of its window [DESIGN §2].")
    crop_fps: float = Field(1.0, gt=0, description="Sampling rate inside a crop window, capped by crop_max_frames [DESIGN §2].")
    crop_max_pixels: int = Field(224 * 224, ge=16, description="Max pixels per crop frame [DESIGN §2].")
    size_factor: int = Field(32, ge=1, description="Resize to multiples of patch*merge: 28 for Qwen2.5-VL, 32 for Qwen3-VL.")
    cache_size: int = Field(256, ge=0, description="Entries of the per-process decoded-frames LRU cache.")


class ModelConfig(_Strict):
    """Which policy to load and how."""

    path: str = Field("runs/tiny-model", description="HF checkpoint directory or hub id (loaded offline), or an http(s) URL for the openai backend.")
    backend: Literal["hf", "openai"] = Field("hf", description="Inference backend of the Generator.")
    device: str = Field("cpu", description="torch device for the hf backend.")
    dtype: Literal["float32", "bfloat16", "float16"] = Field("float32", description="Parameter dtype for the hf backend.")
    served_model_name: str | None = Field(None, description="Model name sent to an OpenAI-compatible server (default: the server's first model).")
    request_timeout_s: float = Field(120.0, gt=0, description="Per-request timeout of the openai backend.")
    max_retries: int = Field(3, ge=0, description="Retries with exponential back-off of the openai backend.")
    max_concurrency: int = Field(16, ge=1, description="Concurrent requests of the openai backend.")
    prefill_threads: int | None = Field(None, ge=1, le=256, description="hf backend: torch threads of each batch's prefill (vision tower, prompt); the decode steps keep the process's count. None: the process's count throughout. Worth it when decode runs with fewer threads than the cores (docs/performance.md).")
    replicas: int = Field(1, ge=1, le=64, description="hf backend on a CPU: processes serving requests side by side, each with a copy of the policy (this one included; paravt.models.hf.replicas). 2 uses both cores of a 2-core machine, whose one process is bound by Python. 1 on an accelerator.")
    replica_timeout_s: float = Field(600.0, gt=0, description="hf replicas: a worker that does not answer a batch within this time (hung, stopped) is killed and restarted; its rows are served by this process (paravt.models.hf.replicas).")


class SamplingConfig(_Strict):
    temperature: float = Field(0.7, ge=0, description="Sampling temperature tau [paper]; 0 = greedy.")
    top_p: float = Field(1.0, gt=0, le=1)
    max_new_tokens: int = Field(2048, ge=1, description="Max new tokens per main-agent turn [paper].")
    sub_max_new_tokens: int = Field(512, ge=1, description="Max tokens of a sub-agent summary [DESIGN §2].")


class RolloutConfig(_Strict):
    """One episode: dispatch mode and limits (DESIGN §2)."""

    mode: DispatchMode = Field("parallel", description="Dispatch mode (paravt.agent.modes): parallel (the method), sequential (the baseline), eva (plan, then one frame_select per round), none.")
    k_max: int = Field(8, ge=1, description="Max tool calls per main turn.")
    max_turns: int = Field(3, ge=1, description="Max main-agent turns.")
    min_window_s: float = Field(1.0, gt=0, description="Minimum crop window length in seconds.")
    max_context_tokens: int = Field(16384, ge=64, description="Context length; an observation that overflows ends the episode with reason 'length'.")
    think_prefix: bool = Field(True, description="Force '<think>\\n' at the start of every main-agent response (Exploration Anchoring).")
    execute_tool_code: bool = Field(False, description="Execute <tool_code> blocks as calls (they are always counted as reversions).")
    train_subagents: bool = Field(True, description="Sub-agent trajectories are trained with their episode's advantage.")
    subagent_timeout_s: float = Field(300.0, gt=0, description="Timeout of one batched sub-agent request.")
    tools: list[str] = Field(default_factory=lambda: ["crop_video"], description="Enabled tools: registry names, or 'mcp:URL' / 'mcp:COMMAND ARGS' for every tool of an MCP server (paravt[mcp]).")
    tool_server_url: str | None = Field(None, description="Use tools through this paravt tool server instead of in-process.")
    python_weak_isolation: bool = Field(False, description="Let the in-process python tool run WITHOUT bubblewrap (weak isolation: the host filesystem is readable); off = its calls are refused (docs/tools.md).")
    prompt_version: str = Field("v1", description="Version of the packaged prompt templates.")

    _server_url = field_validator("tool_server_url")(lambda url: _http_url_or_none(url))


class RewardConfig(_Strict):
    """R = R_acc + lambda_fmt * R_fmt + R_tool, R_fmt = R_base + lambda_anchor * R_anchor (DESIGN §4)."""

    lambda_fmt: float = Field(1.0, description="Weight of the format reward [paper].")
    lambda_anchor: float = Field(0.5, description="Weight of the anchor reward inside R_fmt [paper].")
    alpha: float = Field(0.4, description="Anchor bonus for a correctly closed </think> [paper].")
    beta: float = Field(0.3, description="Anchor bonus for the full think -> /think -> answer flow [paper].")
    gamma: float = Field(0.3, description="Anchor penalty for <think> opened but never closed [paper].")
    anchor: bool = Field(True, description="Exploration Anchoring reward on/off (ablation switch).")
    tool_mode: ToolMode = Field("parse_bonus", description="R_tool: the paper's 0.1 parse bonus, the authors' released graduated reward (0.1/0.3/+0.5), PyVision-RL accumulative, or off.")
    tool_bonus: float = Field(0.1, description="Parse bonus, or per-successful-call reward in accumulative mode [paper].")
    bias: float = Field(-0.2, description="Added to every reward before group normalisation [paper].")
    judge_url: str | None = Field(None, description="OpenAI-compatible endpoint of an LLM judge for open-ended answers (None = token F1).")
    judge_model: str | None = Field(None, description="Model name sent to the judge (None: the server's first model).")
    judge_timeout_s: float = Field(30.0, gt=0)

    _judge_url = field_validator("judge_url")(lambda url: _http_url_or_none(url))

    @model_validator(mode="after")
    def _judge(self) -> RewardConfig:
        if self.judge_model is not None and self.judge_url is None:
            raise ValueError(f"reward.judge_model={self.judge_model!r} has no effect without reward.judge_url; "
                             "set reward.judge_url to the judge's endpoint or drop judge_model")
        return self


class GatingConfig(_Strict):
    enabled: bool = Field(True, description="nFrames Gating: per-prompt overview budget drawn from `choices` [paper].")
    choices: list[int] = Field(default_factory=lambda: [4, 8, 16, 32, 64], description="Overview frame budgets [paper].")

    @field_validator("choices")
    @classmethod
    def _in_range(cls, choices: list[int]) -> list[int]:
        bad = [c for c in choices if not 1 <= c <= MAX_OVERVIEW_FRAMES]
        if not choices or bad:
            raise ValueError(f"{choices} must be a non-empty list of frame counts in 1..{MAX_OVERVIEW_FRAMES} "
                             f"(the overview cap){f', not {bad}' if bad else ''}; fix the list "
                             "(paper default: [4, 8, 16, 32, 64])")
        return choices


class RLConfig(_Strict):
    """PARA-GRPO (DESIGN §5)."""

    engine: Literal["local", "verl"] = "local"
    group_size: int = Field(8, ge=2, description="G rollouts per prompt [paper].")
    prompts_per_step: int = Field(4, ge=1, description="Prompts kept per step (after online filtering).")
    oversample: float = Field(1.0, ge=1.0, description="Roll out ceil(oversample * prompts_per_step) prompts, keep the top by reward std.")
    drop_zero_variance: bool = Field(True, description="Drop groups whose rewards are all equal.")
    std_normalize: bool = Field(True, description="Divide group-centred rewards by the group std (False: PyVision-RL / Dr.GRPO).")
    clip_eps: float = Field(0.2, gt=0, description="PPO clip epsilon [paper].")
    kl_coef: float = Field(0.01, ge=0, description="KL coefficient to the reference policy [paper].")
    kl_estimator: KLKind = "k3"
    lr: float = Field(2e-6, gt=0, description="Learning rate [paper].")
    max_grad_norm: float = Field(1.0, gt=0)
    steps: int = Field(30, ge=1)
    ppo_epochs: int = Field(1, ge=1)
    seed: int = 0
    gating: GatingConfig = Field(default_factory=GatingConfig)
    save_every: int = Field(10, ge=1)
    logprob_mismatch_warn: float = Field(0.05, ge=0, description="Warn when mean |recomputed - sampled| old logprob exceeds this.")
    micro_batch_tokens: int = Field(8192, ge=1, description="Padded tokens (rows × longest row) one forward of the batched training pass may hold: sequences go in right-padded micro-batches with their media (paravt/rl/batch.py); a longer sequence goes alone.")
    log_rollouts: int = Field(4, ge=0, description="Rollouts per step written raw to rollouts.jsonl (seeded draw; plus the first <tool_code> reversion and unclosed tag of the step).")


class SFTConfig(_Strict):
    lr: float = Field(1e-3, gt=0)
    epochs: int = Field(1, ge=1)
    max_steps: int | None = Field(None, ge=1)
    batch_size: int = Field(8, ge=1)
    max_grad_norm: float = Field(1.0, gt=0)
    warmup_steps: int = Field(10, ge=0)
    seed: int = 0
    save_every: int = Field(100, ge=1)
    include_subagent_rows: bool = True
    micro_batch_tokens: int = Field(8192, ge=1, description="Padded tokens (rows × longest row) one forward of the batched training pass may hold: sequences go in right-padded micro-batches with their media (paravt/rl/batch.py); a longer sequence goes alone.")
    mask_think_prefix: bool = Field(False, description="Put the assistant turns' leading '<think>\\n' into the prompt (mask 0) instead of training it. Off: SFT teaches the whole format and the think prefix stays an RL-time constraint [paper].")


class PriorConfig(_Strict):
    """The simulated pretrained tool prior (``paravt train prior``, paravt/data/synth/prior.py): SFT on
    pretraining-style traces before the cold start. Strength = ``steps`` and ``tool_mix``."""

    steps: int = Field(200, ge=1, description="Optimisation steps of the simulated pretraining (prior strength).")
    tool_mix: float = Field(0.7, ge=0, le=1, description="Share of prompts whose trace has the <tool_code> habit: 0 = weak prior (answers only, the Qwen2.5-VL side), > 0 = strong prior (the Qwen3-VL side).")
    think_sentences: int = Field(6, ge=1, description="Filler sentences per think (the long-think habit).")
    max_calls: int = Field(2, ge=1, description="Most <tool_code> turns (one call each) in a tool trace.")
    lr: float = Field(1e-3, gt=0)
    batch_size: int = Field(8, ge=1)
    max_grad_norm: float = Field(1.0, gt=0)
    warmup_steps: int = Field(10, ge=0)
    seed: int = 0
    save_every: int = Field(100, ge=1)
    micro_batch_tokens: int = Field(8192, ge=1, description="Padded tokens (rows × longest row) one forward of the batched training pass may hold: sequences go in right-padded micro-batches with their media (paravt/rl/batch.py); a longer sequence goes alone.")


class EvalConfig(_Strict):
    modes: list[DispatchMode] = Field(default_factory=lambda: ["parallel"])
    nframes: int = Field(64, ge=0, le=MAX_OVERVIEW_FRAMES, description="Overview frames of each eval sample (`eval --data`).")
    limit: int | None = Field(None, ge=1, description="Evaluate only the first N samples (None: all).")
    workers: int = Field(4, ge=1, description="Episodes run concurrently.")
    temperature: float = Field(0.0, ge=0, description="Eval decodes greedily by default.")
    benchmark_fps: float = Field(1.0, gt=0, description="`eval --benchmark`: overview frames per second of video, before the cap [paper Table 1 protocol].")
    benchmark_max_frames: int = Field(64, ge=1, le=MAX_OVERVIEW_FRAMES, description="`eval --benchmark`: overview frames at most, sampled uniformly (all frames at benchmark_fps when fewer) [paper].")
    benchmark_max_pixels: int = Field(224 * 224, ge=16, description="`eval --benchmark`: max pixels per overview frame [paper].")
    prompt_class: PromptClass = Field("agentic", description="`eval --benchmark` prompt class [paper §C]: agentic = the tool prompt (mode parallel/sequential); reasoning = think/answer, no tools; direct = the question only, no system prompt.")
    scoring: Scoring = Field("lmms", description="`eval --benchmark` headline scorer: lmms = lmms-eval's task rules; paravt = our <answer> extraction (both are in metrics.json).")


class VerlConfig(_Strict):
    """Resources and engine settings of ``paravt train rl --engine verl`` (the ``verl:`` section).

    Not PARA-GRPO hyper-parameters (those are ``rl`` / ``sampling`` / ``video``) but what a verl run
    uses: nodes, GPUs, the rollout engine and its memory limits. Plain pydantic: the core never
    imports verl."""

    nnodes: int = Field(1, ge=1, description="Ray nodes (trainer.nnodes).")
    n_gpus_per_node: int = Field(8, ge=1, description="GPUs per node (trainer.n_gpus_per_node).")
    rollout_backend: ServeEngine = Field("vllm", description="Rollout engine (actor_rollout_ref.rollout.name).")
    tensor_parallel_size: int = Field(1, ge=1, description="Tensor parallel size of each rollout replica.")
    gpu_memory_utilization: float = Field(0.6, gt=0, le=1, description="Share of GPU memory the rollout engine may take (KV cache + weights).")
    max_num_batched_tokens: int = Field(16384, ge=256, description="Tokens per engine step; must exceed the longest single prompt (video prompts are long).")
    max_num_seqs: int = Field(256, ge=1, description="Concurrent sequences per rollout replica.")
    prompt_length: int = Field(8192, ge=64, description="Max prompt tokens of a trajectory row (overview video tokens included).")
    response_length: int = Field(8192, ge=64, description="Max response tokens of a row (all main turns + tool responses).")
    train_batch_size: int = Field(32, ge=1, description="Prompts per step (data.train_batch_size); each gets rl.group_size rollouts.")
    ppo_mini_batch_size: int = Field(8, ge=1, description="Prompts per PPO mini-batch (actor.ppo_mini_batch_size).")
    micro_batch_size_per_gpu: int = Field(1, ge=1, description="Rows per GPU per forward/backward (actor + log-prob passes).")
    use_dynamic_bsz: bool = Field(True, description="Pack rows by token count (actor.use_dynamic_bsz).")
    max_token_len_per_gpu: int = Field(32768, ge=1024, description="Token budget per GPU with dynamic batch size.")
    param_offload: bool = Field(False, description="FSDP parameter offload to CPU.")
    optimizer_offload: bool = Field(False, description="FSDP optimizer-state offload to CPU.")
    gradient_checkpointing: bool = Field(True, description="Activation checkpointing in the actor.")
    agent_workers: int = Field(8, ge=1, description="Agent-loop workers (rollout.agent.num_workers).")
    total_epochs: int = Field(1, ge=1)
    val_data: str | None = Field(None, description="Validation parquet in verl's layout (None: no validation).")
    project_name: str = "paravt"
    experiment_name: str = "paragrpo"
    loggers: list[str] = Field(default_factory=lambda: ["console"], description="trainer.logger (console, wandb, tensorboard); the local trainer writes tb/ only when tensorboard is listed.")
    save_freq: int = Field(10, description="Checkpoint every N steps (-1: never).")
    steps_per_epoch: int = Field(1, ge=1, description="Steps per data epoch: the gating epoch is (global_step - 1) // steps_per_epoch; launch_verl fills it from the parquet size.")
    extra_overrides: list[str] = Field(default_factory=list, description="Raw Hydra overrides appended to the command (escape hatch).")


class ToolServerConfig(_Strict):
    """``paravt serve-tools``: what a remote caller may read and how much it may ask (docs/tools.md,
    "Threat model"). Client-sent caps are clamped to the ``max_*`` fields here."""

    video_roots: list[str] = Field(default_factory=list, description="Directories whose regular files may be served (symlinks resolved first); empty = the working directory.")
    max_concurrency: int = Field(64, ge=1, description="Batch requests served at once.")
    request_timeout_s: float = Field(120.0, gt=0, description="Per-request timeout (504 after it).")
    idle_ttl_s: float = Field(300.0, gt=0, description="Release a trajectory's python runtime after this idle time.")
    max_calls_per_request: int = Field(32, ge=1, description="Tool calls in one batch request, over all items (413 beyond).")
    max_items_per_request: int = Field(64, ge=1, description="Trajectory items in one batch request (413 beyond).")
    max_body_bytes: int = Field(4 << 20, ge=1024, description="Request body size (413 beyond).")
    header_timeout_s: float = Field(10.0, gt=0, description="A connection must deliver a complete request header within this time (408, closed).")
    body_timeout_s: float = Field(30.0, gt=0, description="A request body must arrive completely within this time (408).")
    max_connections: int = Field(512, ge=1, description="Open connections plus running requests (503 beyond).")
    max_runtimes: int = Field(16, ge=1, description="Live python runtimes; the least recently used idle one is evicted for a new one.")
    max_crop_frames: int = Field(VideoConfig.model_fields["crop_max_frames"].default, ge=1, description="Cap on a client's crop_max_frames.")
    max_crop_fps: float = Field(VideoConfig.model_fields["crop_fps"].default, gt=0, description="Cap on a client's crop_fps.")
    max_crop_pixels: int = Field(VideoConfig.model_fields["crop_max_pixels"].default, ge=16, description="Cap on a client's crop_max_pixels.")
    max_size_factor: int = Field(32, ge=1, description="Cap on a client's size_factor (frames are at least size_factor² pixels).")
    max_call_pixels: int = Field(16 * 224 * 224, ge=1, description="Cap on a client's per-call visual budget (frame_select).")
    max_episode_pixels: int = Field(64 * 224 * 224, ge=1, description="Cap on a client's per-episode visual budget (frame_select).")
    python_weak_isolation: bool = Field(False, description="Let the python tool run WITHOUT bubblewrap (unshare/rlimits only: the host filesystem is readable); off = refuse to start.")


class TrainConfig(_Strict):
    """Top-level config of `paravt train prior|sft|rl` and `paravt eval` (YAML-loadable)."""

    out_dir: str = "runs/train"
    data: str = Field("runs/synth/rl.parquet", description="Training parquet (rl.parquet or sft.parquet).")
    data_root: str | None = Field(None, description="Root for relative video paths (default: the parquet's directory).")
    init_from: str | None = Field(None, description="Checkpoint to start from (default: model.path).")
    model: ModelConfig = Field(default_factory=ModelConfig)
    video: VideoConfig = Field(default_factory=VideoConfig)
    sampling: SamplingConfig = Field(default_factory=SamplingConfig)
    rollout: RolloutConfig = Field(default_factory=RolloutConfig)
    reward: RewardConfig = Field(default_factory=RewardConfig)
    rl: RLConfig = Field(default_factory=RLConfig)
    sft: SFTConfig = Field(default_factory=SFTConfig)
    prior: PriorConfig = Field(default_factory=PriorConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    verl: VerlConfig = Field(default_factory=VerlConfig)

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
    # eval.modes counts only where it was asked for (a config file, `paravt eval --mode`), not its default
    modes = [r.mode, *(c.eval.modes if "modes" in c.eval.model_fields_set else [])]
    if c.video.overview_nframes == 0 and r.mode == "none":
        out.append("video.overview_nframes=0 with rollout.mode='none' shows the model nothing; "
                   "set video.overview_nframes > 0 or use a tool mode")
    if "eva" in modes and "frame_select" not in r.tools:
        where = "rollout.mode" if r.mode == "eva" else "eval.modes"
        out.append(f"{where} uses 'eva', which selects frames each round, but rollout.tools={r.tools} lacks "
                   "frame_select; add it (--set 'rollout.tools=[frame_select]') or use another mode")
    if r.mode != "none" and not r.tools:
        out.append(f"rollout.mode={r.mode!r} calls tools but rollout.tools is empty; list a tool "
                   "(--set 'rollout.tools=[crop_video]') or set rollout.mode=none")
    if c.model.replicas > 1 and c.model.device != "cpu":
        out.append(f"model.replicas={c.model.replicas} with model.device={c.model.device!r}: replicas are CPU "
                   "processes (one process batches on an accelerator); set model.replicas=1")
    return out


class DistillConfig(_Strict):
    """`paravt data distill`: cold-start traces from a teacher endpoint (docs/ARCHITECTURE.md, data layer)."""

    pipeline: Literal["paravt", "eva"] = Field("paravt", description="'paravt': sequential crop_video traces converted to parallel [paper §B]; 'eva': Executor-Reflector frame_select traces [EVA].")
    workers: int = Field(4, ge=1, description="Rows distilled concurrently.")
    max_turns: int = Field(4, ge=1, description="Teacher turns per row (paravt); EVA rounds (eva).")
    temperature: float = Field(0.0, ge=0, description="Teacher sampling temperature.")
    max_tokens: int = Field(1024, ge=1, description="Max tokens of one teacher turn.")
    request_timeout_s: float = Field(120.0, gt=0, description="Per-request timeout.")
    max_reply_bytes: int = Field(4 << 20, ge=1024, description="Largest teacher reply body read; a bigger one is that row's teacher error.")
    max_retries: int = Field(4, ge=0, description="Retries of a request on 429 / 5xx / timeouts, exponential back-off.")
    backoff_s: float = Field(1.0, ge=0, description="First back-off; doubles per retry (a larger Retry-After wins).")
    keep_incorrect: bool = Field(False, description="Keep traces whose answer scores 0 against the gold (no rejection sampling).")
    llm_cleanup: bool = Field(True, description="Ask the teacher to reformat a turn the deterministic repair cannot fix (once).")
    bank_top_k: int = Field(2, ge=0, description="EVA: similar successful trajectories shown to the Executor.")
    overview_max_pixels: int = Field(224 * 224, ge=16, description="Max pixels per overview frame sent to the teacher (the row's nframes frames).")
    crop_max_frames: int = Field(16, ge=1, description="crop_video frames per window for the teacher [paper].")
    crop_max_pixels: int = Field(224 * 224, ge=16, description="Max pixels per crop frame [paper].")
    size_factor: int = Field(32, ge=1, description="Resize to multiples of this (Qwen3-VL 32, Qwen2.5-VL 28).")


M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Flag:
    """A command-line option that sets one config field (``--workers 0`` → ``Flag("--workers",
    "eval.workers", 0)``); ``value`` None = not given. Errors name the option."""

    name: str
    key: str
    value: Any


def resolve(cls: type[M], data: dict[str, Any], source: str, overrides: Sequence[str] = (),
            flags: Sequence[Flag] = ()) -> M:
    """``data`` (a file's mapping, or ``{}``), then the ``--set key.sub=value`` overrides, then the
    given flags, validated into ``cls``: the ONE path from the command line to a typed config, so a
    value out of range is refused (`ConfigError`), never replaced."""
    for item in overrides:
        apply_override(data, item)
    given = [f for f in flags if f.value is not None]
    for f in given:
        set_value(data, f.key, f.value)
    return validate(cls, data, source, labels={f.key: f.name for f in given})


def validate(cls: type[M], data: dict[str, Any], source: str = "<dict>",
             labels: Mapping[str, str] | None = None) -> M:
    """Build ``cls`` from a dict, raising one-line `ConfigError` that names every bad field
    (``labels``: the command-line option that set a field)."""
    try:
        return cls.model_validate(data)
    except ValidationError as err:
        raise ConfigError(validation_message(err, source, cls, labels)) from None


def validation_message(err: ValidationError, source: str, cls: type[BaseModel] | None = None,
                       labels: Mapping[str, str] | None = None) -> str:
    """One line naming every bad field of ``err`` (with the option that set it, from ``labels``)."""
    labels = labels or {}
    parts, own = [], 0
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"])
        flag = next((labels[k] for k in labels if loc == k or loc.startswith(k + ".")), None)
        name = f"{flag} ({loc})" if flag else loc
        if e["type"] == "value_error":  # our own checks: the message names the values and the fix
            msg, own = e["msg"].removeprefix("Value error, "), own + 1
            parts.append(f"{name}: {msg}" if name else msg)
        elif e["type"] == "extra_forbidden":
            close = get_close_matches(str(e["loc"][-1]), _field_names(cls, e["loc"][:-1]), n=3) if cls else []
            parts.append(f"{name}: unknown field" + (f" (did you mean {' or '.join(close)}?)" if close else ""))
        else:
            parts.append(f"{name or '<root>'}: {e['msg']} (got {_short(e.get('input'))})")
    fix = "" if own == len(parts) else (f"; fix {'it' if len(parts) == 1 else 'them'} "
                                        "(`paravt config show` prints every field with its default)")
    return f"invalid config ({source}): {'; '.join(parts)}{fix}"


def _field_names(cls: type[BaseModel], loc: Sequence[Any]) -> list[str]:
    model: Any = cls
    for part in loc:
        field = model.model_fields.get(str(part))
        model = field.annotation if field is not None else None
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return []
    return list(model.model_fields)


def _short(value: Any, width: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


# ---- YAML: the ONE loader of config text (files and --set values) ---------------------------------
#: Largest config file read (a config is a few KB) and most nodes its aliases may expand to: a
#: small file of nested aliases ("billion laughs") is refused at once instead of expanded.
MAX_CONFIG_BYTES = 1 << 20
MAX_YAML_NODES = 100_000


class _AliasBomb(yaml.YAMLError):
    pass


class _Loader(yaml.SafeLoader):
    """yaml.SafeLoader that refuses a document whose aliases expand past MAX_YAML_NODES nodes."""

    def compose_document(self) -> Any:
        node = super().compose_document()
        if node is not None:
            _expanded_size(node, {}, set())
        return node


def _expanded_size(node: yaml.Node, sizes: dict[int, int], active: set[int]) -> int:
    """Nodes of ``node`` with every alias written out (memoised per node: linear time)."""
    key = id(node)
    if key in sizes:
        return sizes[key]
    if key in active:
        raise _AliasBomb("an alias refers to itself (a recursive structure)")
    active.add(key)
    children: list[yaml.Node] = []
    if isinstance(node, yaml.SequenceNode):
        children = list(node.value)
    elif isinstance(node, yaml.MappingNode):
        children = [n for pair in node.value for n in pair]
    size = 1 + sum(_expanded_size(c, sizes, active) for c in children)
    active.discard(key)
    if size > MAX_YAML_NODES:
        raise _AliasBomb(f"its aliases expand to more than {MAX_YAML_NODES:,} values")
    sizes[key] = size
    return size


def parse_yaml(text: str, what: str) -> Any:
    """``text`` as YAML (safe, aliases bounded); `ConfigError` naming ``what`` when it is not."""
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - _Loader is a SafeLoader
    except _AliasBomb as err:
        raise ConfigError(f"{what} is refused: {err}; write the values out instead of nesting aliases") from None
    except yaml.YAMLError as err:
        raise ConfigError(f"{what} is not valid YAML ({_yaml_problem(err)}); fix the syntax "
                          "(quote a string that holds ': ', '[' or '{')") from None
    except RecursionError:
        raise ConfigError(f"{what} nests too deeply to read; flatten it") from None


def _yaml_problem(err: yaml.YAMLError) -> str:
    if isinstance(err, yaml.MarkedYAMLError) and err.problem_mark is not None:
        m = err.problem_mark
        return f"{err.problem} at line {m.line + 1}, column {m.column + 1}"
    return str(err).splitlines()[0] if str(err) else type(err).__name__


def read_mapping(path: str | Path) -> dict[str, Any]:
    """The top-level mapping of a YAML config file (not validated yet); `ConfigError` when the file
    is missing, too large, not UTF-8, not YAML or not a mapping."""
    p = Path(path)
    if not p.is_file():
        what = "is a directory" if p.is_dir() else "does not exist"
        raise ConfigError(f"config file {p} {what}; pass an existing YAML file (see configs/)")
    try:
        size = p.stat().st_size
        if size > MAX_CONFIG_BYTES:
            raise ConfigError(f"config file {p} is {size:,} bytes, over the {MAX_CONFIG_BYTES:,}-byte limit of a "
                              "config; pass the YAML config, not a data file")
        raw = p.read_bytes()
    except OSError as err:
        raise ConfigError(f"cannot read config file {p}: {err.strerror}; check its permissions") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(f"config file {p} is not UTF-8 text (byte {raw[err.start]:#04x} at offset {err.start}); "
                          "save it as UTF-8") from None
    data = parse_yaml(text, f"config file {p}") or {}
    if not isinstance(data, dict):
        raise ConfigError(f"config file {p} must hold a mapping at the top level, got {type(data).__name__}; "
                          "write `section:` blocks as in configs/")
    return data


def load(path: str | Path, cls: type[M] = TrainConfig, overrides: Sequence[str] | None = None,  # type: ignore[assignment]
         flags: Sequence[Flag] = ()) -> M:
    """Load a YAML file into ``cls``; ``overrides`` are ``a.b.c=value`` strings (YAML values),
    ``flags`` command-line options applied last."""
    return resolve(cls, read_mapping(path), str(path), overrides or (), flags)


def apply_override(data: dict[str, Any], item: str) -> None:
    """Apply one ``a.b.c=value`` override (``--set``; the value is YAML) in place."""
    key, sep, raw = item.partition("=")
    if not sep or not all(part.strip() for part in key.split(".")):
        raise ConfigError(f"--set {item!r} must look like key.sub=value; write e.g. --set rl.steps=10")
    set_value(data, key.strip(), parse_yaml(raw, f"--set {item!r}: the value {raw!r}"))


def set_value(data: dict[str, Any], key: str, value: Any) -> None:
    """Set the dotted ``key`` of the nested mapping ``data`` to ``value`` (sections created)."""
    node = data
    parts = key.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(f"{key}: {part!r} holds a value, not a section; name a field under a section "
                              "(`paravt config show` prints the layout)")
    node[parts[-1]] = value


def dump(cfg: BaseModel) -> str:
    """The config as YAML (every field, defaults included)."""
    return yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False)


def save(cfg: BaseModel, path: str | Path) -> None:
    Path(path).write_text(dump(cfg))


#: A trained model directory carries the settings it was trained with (``paravt.rl.loop``).
RUN_CONFIG = "paravt_config.yaml"


def load_for_model(model: str, config: str | Path | None = None, overrides: Sequence[str] | None = None,
                   flags: Sequence[Flag] = ()) -> tuple[TrainConfig, str]:
    """The settings to run ``model`` with, and where they came from: ``config`` when given, else
    the ``paravt_config.yaml`` a paravt checkpoint carries (video, sampling, rollout, prompt
    version as trained), else the defaults. ``overrides`` (``a.b=value``) and ``flags`` apply on top."""
    carried = Path(model) / RUN_CONFIG
    path = config if config is not None else carried if carried.is_file() else None
    source = "defaults" if path is None else str(path)
    data = {} if path is None else read_mapping(path)
    return resolve(TrainConfig, data, source, overrides or (), flags), source
