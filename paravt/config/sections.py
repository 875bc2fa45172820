"""The config sections: every knob of paravt, typed, with its one default and description."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from paravt.config.choices import (
    MAX_OVERVIEW_FRAMES,
    DispatchMode,
    KLKind,
    LrDecay,
    PromptClass,
    Scoring,
    ServeEngine,
    ToolMode,
    backend_problem,
    frame_budgets_problem,
    http_url_or_none,
)
from paravt.config.tracking import LoggingConfig, refuse_moved_verl_keys
from paravt.config.limits import step_size_problems



def _micro_batch_tokens() -> Any:
    """The one definition of the batched-pass budget, shared by the sft, prior and rl sections."""
    return Field(8192, ge=1, description="Padded tokens (rows × longest row) one forward of the batched "
                 "training pass may hold: sequences go in right-padded micro-batches with their media "
                 "(paravt/rl/batch.py); a longer sequence goes alone.")

_Beta = Annotated[float, Field(ge=0, lt=1)]  # one of AdamW's betas


def _weight_decay() -> Any:
    """The one definition of AdamW's decoupled weight decay, shared by the rl, sft and prior sections."""
    return Field(0.0, ge=0, description="AdamW's decoupled weight decay of the trainer's optimiser; both "
                 "engines get it (local: torch.optim.AdamW; verl: actor.optim.weight_decay, whose own "
                 "default 0.01 is not used).")


def _adam_betas() -> Any:
    """The one definition of AdamW's betas, shared by the rl, sft and prior sections."""
    return Field((0.9, 0.999), description="AdamW's (beta1, beta2): decay rates of the gradient's running "
                 "mean and of its square, each in [0, 1); both engines get them (verl: actor.optim.betas).")


def _max_row_bytes() -> Any:
    """The one definition of the row size cap (the train/eval and the distill configs)."""
    return Field(1 << 20, ge=1024, description="Largest row read (bytes of its messages and "
                 "extra_info JSON): a bigger row is a data error named by its id, refused before it "
                 "is parsed or trained on (paravt.data.screen; a 50 MB row took 58 s and 6.4 GB).")


class _Strict(BaseModel):
    """Every section: unknown keys refused, and every float finite (``allow_inf_nan=False``: inf,
    -inf and nan are refused under the field's name, in every section; issue 34)."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=False, allow_inf_nan=False)


class VideoConfig(_Strict):
    """How frames are sampled from a video (overview and crops)."""

    overview_nframes: int = Field(64, ge=0, le=MAX_OVERVIEW_FRAMES, description=(
        "The overview frame budget, the ONE name of the frames of the whole video the main agent sees "
        "first (0 = on-demand context: metadata only). `--nframes` of `infer`, `eval` (--data and "
        "--benchmark) and `data import` sets it. Used as is by infer, `eval --data` and RL with "
        "rl.gating.enabled=false (gating draws from rl.gating.choices instead); `eval --benchmark` "
        "takes min(budget, round(duration × eval.benchmark_fps)), at least 1 "
        "(paravt.video.overview_count)."))
    overview_max_pixels: int = Field(64 * 64, ge=16, description="Max pixels per overview frame (resized keeping aspect).")
    crop_max_frames: int = Field(16, ge=1, le=256, description="Max frames a sub-agent sees of its window [docs/ARCHITECTURE.md §2].")
    crop_fps: float = Field(1.0, gt=0, description="Sampling rate inside a crop window, capped by crop_max_frames [docs/ARCHITECTURE.md §2].")
    crop_max_pixels: int = Field(224 * 224, ge=16, description="Max pixels per crop frame [docs/ARCHITECTURE.md §2].")
    size_factor: int = Field(32, ge=1, description="Resize to multiples of patch*merge: 28 for Qwen2.5-VL, 32 for Qwen3-VL.")
    cache_size: int = Field(256, ge=0, description="Entries of the per-process decoded-frames LRU cache.")


class ModelConfig(_Strict):
    """Which policy to load and how."""

    path: str = Field("runs/tiny-model", description="HF checkpoint directory or hub id (loaded offline), or an http(s) URL for the openai backend.")
    backend: Literal["hf", "openai"] = Field("hf", description="Inference backend of the Generator.")
    device: str = Field("cpu", description="torch device for the hf backend.")
    dtype: Literal["float32", "bfloat16", "float16"] = Field("float32", description="Parameter dtype for the hf backend.")
    served_model_name: str | None = Field(None, description="Model name sent to an OpenAI-compatible server (default: the server's first model).")
    request_timeout_s: float = Field(120.0, gt=0, description="Whole-request deadline of one openai-backend request (connect, headers and body together; paravt.models.openai.retry).")
    max_retries: int = Field(3, ge=0, description="Retries of an openai-backend request on timeouts, transport errors, 408, 429 and 5xx: exponential back-off from 0.5 s, or the server's Retry-After when longer (paravt.models.openai.retry).")
    max_concurrency: int = Field(16, ge=1, description="Concurrent requests of the openai backend.")
    api_key_file: str | None = Field(None, description="openai backend: file whose first line is the server's API key (e.g. the file `paravt serve-model --api-key-file` reads), sent as 'Authorization: Bearer'; None: send none.")
    api_key_file: str | None = Field(None, description="openai backend: file whose first line is the server's API key (e.g. the file `paravt serve-model --api-key-file` reads), sent as 'Authorization: Bearer'; None: send none.")
    prefill_threads: int | None = Field(None, ge=1, le=256, description="hf backend: torch threads of each batch's prefill (vision tower, prompt); the decode steps keep the process's count. None: the process's count throughout. Worth it when decode runs with fewer threads than the cores (docs/performance.md).")
    replicas: int = Field(1, ge=1, le=64, description="hf backend on a CPU: processes serving requests side by side, each with a copy of the policy (this one included; paravt.models.hf.replicas). 2 uses both cores of a 2-core machine, whose one process is bound by Python. 1 on an accelerator.")
    continuous_batching: bool = Field(False, description="hf backend: one decode loop owns the model and every live sequence (episodes, sub-agents, G rollouts) advances one token per forward; requests that arrive are prefilled together and join at the next forward, finished ones leave (paravt.models.hf.continuous; same tokens as off, docs/performance.md). Off: concurrent calls meet in window batches that run to completion. With replicas, this process's engine only.")
    replica_timeout_s: float = Field(600.0, gt=0, description="hf replicas: a worker that does not answer a batch within this time (hung, stopped) is killed and restarted; its rows are served by this process (paravt.models.hf.replicas).")


class SamplingConfig(_Strict):
    temperature: float = Field(0.7, ge=0, description="Sampling temperature tau [paper]; 0 = greedy.")
    top_p: float = Field(1.0, gt=0, le=1, description="Nucleus sampling: draw from the smallest set of tokens whose probability reaches top_p; 1 = off.")
    max_new_tokens: int = Field(2048, ge=1, description="Max new tokens per main-agent turn [paper].")
    sub_max_new_tokens: int = Field(512, ge=1, description="Max tokens of a sub-agent summary [docs/ARCHITECTURE.md §2].")


class RolloutConfig(_Strict):
    """One episode: dispatch mode and limits (docs/ARCHITECTURE.md §2)."""

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
    tool_server_key_file: str | None = Field(None, description="File whose first line is the tool server's key (the file `paravt serve-tools --api-key-file` reads), sent as 'Authorization: Bearer' with every request; None: send none.")
    tool_server_key_file: str | None = Field(None, description="File whose first line is the tool server's key (the file `paravt serve-tools --api-key-file` reads), sent as 'Authorization: Bearer' with every request; None: send none.")
    python_weak_isolation: bool = Field(False, description="Let the in-process python tool run WITHOUT bubblewrap (weak isolation: the host filesystem is readable); off = its calls are refused (docs/tools.md).")
    prompt_version: str = Field("v1", description="Version of the packaged prompt templates.")

    _server_url = field_validator("tool_server_url")(lambda url: http_url_or_none(url))


class RewardConfig(_Strict):
    """R = R_acc + lambda_fmt * R_fmt + R_tool, R_fmt = R_base + lambda_anchor * R_anchor (docs/ARCHITECTURE.md §4)."""

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
    judge_timeout_s: float = Field(30.0, gt=0, description="Whole-request deadline of one judge request (connect, headers and body); past it the request is retried, then scored by token F1.")

    _judge_url = field_validator("judge_url")(lambda url: http_url_or_none(url))

    @model_validator(mode="after")
    def _judge(self) -> RewardConfig:
        if self.judge_model is not None and self.judge_url is None:
            raise ValueError(f"reward.judge_model={self.judge_model!r} has no effect without reward.judge_url; "
                             "set reward.judge_url to the judge's endpoint or drop judge_model")
        return self


class GatingConfig(_Strict):
    enabled: bool = Field(True, description="nFrames Gating: per-prompt overview budget drawn from `choices` [paper].")
    choices: list[int] = Field(default_factory=lambda: [4, 8, 16, 32, 64], description="Overview frame budgets [paper], each in 1..768 (the one rule: paravt.config.choices.frame_budgets_problem).")

    @field_validator("choices")
    @classmethod
    def _in_range(cls, choices: list[int]) -> list[int]:
        if problem := frame_budgets_problem(choices):
            raise ValueError(problem)
        return choices


class RLConfig(_Strict):
    """PARA-GRPO (docs/ARCHITECTURE.md §5)."""

    engine: Literal["local", "verl"] = Field("local", description="Where `paravt train rl` runs: local = this process (paravt.rl.loop); verl = write verl's run files and start verl (the `verl:` section, docs/scale.md).")
    group_size: int = Field(8, ge=2, description="G rollouts per prompt [paper].")
    prompts_per_step: int = Field(4, ge=1, description="Prompts kept per step (after online filtering).")
    oversample: float = Field(1.0, ge=1.0, description="Roll out ceil(oversample * prompts_per_step) prompts, keep the top by reward std.")
    drop_zero_variance: bool = Field(True, description="Drop groups whose rewards are all equal.")
    std_normalize: bool = Field(True, description="Divide group-centred rewards by the group std (False: PyVision-RL / Dr.GRPO).")
    clip_eps: float = Field(0.2, gt=0, description="PPO clip epsilon [paper].")
    kl_coef: float = Field(0.01, ge=0, description="KL coefficient to the reference policy [paper].")
    kl_estimator: KLKind = Field("k3", description="Per-token estimator of KL(policy || reference): k1 = the log ratio; k3 = exp(-d) + d - 1, unbiased and never negative (verl's low_var_kl).")
    lr: float = Field(2e-6, gt=0, description="Learning rate [paper].")
    weight_decay: float = _weight_decay()
    adam_betas: tuple[_Beta, _Beta] = _adam_betas()
    max_grad_norm: float = Field(1.0, gt=0, description="Clip the gradient's global L2 norm to this before each optimiser step.")
    steps: int = Field(30, ge=1, description="RL steps; each rolls out its prompts' groups and updates the policy.")
    ppo_epochs: int = Field(1, ge=1, description="Optimiser passes over one step's rollouts; > 1 lets the ratio leave 1, so the clip can act.")
    seed: int = Field(0, description="Seed of the run: prompt order, gating draws and each step's sampling (reseeded from (seed, step), so a resumed run matches).")
    gating: GatingConfig = Field(default_factory=GatingConfig, description="nFrames Gating: the per-prompt overview frame budget [paper].")
    save_every: int = Field(10, ge=1, description="Checkpoint every N steps (the final model is saved at the end in any case).")
    logprob_mismatch_warn: float = Field(0.05, ge=0, description="Warn when mean |recomputed - sampled| old logprob exceeds this.")
    micro_batch_tokens: int = _micro_batch_tokens()
    log_rollouts: int = Field(4, ge=0, description="Rollouts per step written raw to rollouts.jsonl (seeded draw; plus the first <tool_code> reversion and unclosed tag of the step).")


class _SupervisedConfig(_Strict):
    """The fields the two supervised trainers share (``sft`` and ``prior``: the same ``SFTTrainer``);
    each section keeps its own YAML keys and values."""

    lr: float = Field(1e-3, gt=0, description="Peak learning rate (AdamW), reached after the warm-up.")
    weight_decay: float = _weight_decay()
    adam_betas: tuple[_Beta, _Beta] = _adam_betas()
    batch_size: int = Field(8, ge=1, description="Examples per optimiser step (drawn from a seeded permutation per epoch).")
    max_grad_norm: float = Field(1.0, gt=0, description="Clip the gradient's global L2 norm to this before each optimiser step.")
    warmup_steps: int = Field(10, ge=0, description="Steps of linear learning-rate warm-up from lr / warmup_steps to lr.")
    seed: int = Field(0, description="Seed of the batch order (a function of (seed, epoch)) and of the torch RNG.")
    save_every: int = Field(100, ge=1, description="Checkpoint every N steps (the final model is saved at the end in any case).")
    micro_batch_tokens: int = _micro_batch_tokens()


class SFTConfig(_SupervisedConfig):
    """Supervised cold start (``paravt train sft``) on distilled or oracle traces."""

    epochs: int = Field(1, ge=1, description="Passes over the SFT traces; steps = ceil(examples / batch_size) × epochs, capped by max_steps.")
    max_steps: int | None = Field(None, ge=1, description="Stop after this many steps (None: all the epochs).")
    include_subagent_rows: bool = Field(True, description="Train the sub-agents' turns of a trace too (off: only the main agent's).")
    mask_think_prefix: bool = Field(False, description="Put the assistant turns' leading '<think>\\n' into the prompt (mask 0) instead of training it. Off: SFT teaches the whole format and the think prefix stays an RL-time constraint [paper].")


class PriorConfig(_SupervisedConfig):
    """The simulated pretrained tool prior (``paravt train prior``, paravt/data/synth/prior.py): SFT on
    pretraining-style traces before the cold start. Strength = ``steps`` and ``tool_mix``."""

    steps: int = Field(200, ge=1, description="Optimisation steps of the simulated pretraining (prior strength).")
    habit_copies: int = Field(1, ge=1, le=16, description="Habit traces per prompt, each with its own filler and tool draw (the habit's share of the base's data: prior strength).")
    tool_mix: float = Field(0.7, ge=0, le=1, description="Share of prompts whose trace has the <tool_code> habit: 0 = weak prior (answers only, the Qwen2.5-VL side), > 0 = strong prior (the Qwen3-VL side).")
    think_sentences: int = Field(6, ge=1, description="Filler sentences per think (the long-think habit).")
    max_calls: int = Field(2, ge=1, description="Most <tool_code> turns (one call each) in a tool trace.")
    lr_decay: LrDecay = Field("cosine", description="After the warm-up: cosine down to min_lr_ratio × lr at the last step (a pretraining schedule), or constant.")
    min_lr_ratio: float = Field(0.1, ge=0, le=1, description="The cosine schedule's last learning rate, as a share of lr.")


class EvalConfig(_Strict):
    modes: list[DispatchMode] = Field(default_factory=lambda: ["parallel"], description="Dispatch modes each sample is evaluated in: one result row per (sample, mode).")
    limit: int | None = Field(None, ge=1, description="Evaluate only the first N samples (None: all).")
    workers: int = Field(4, ge=1, description="Episodes run concurrently.")
    temperature: float = Field(0.0, ge=0, description="Eval decodes greedily by default.")
    benchmark_fps: float = Field(1.0, gt=0, description="`eval --benchmark`: overview frames per second of video, capped by the budget video.overview_nframes (64: the paper's ≤ 64 frames at 1 fps) [paper Table 1 protocol].")
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
    total_epochs: int = Field(1, ge=1, description="Passes over the training parquet (trainer.total_epochs).")
    val_data: str | None = Field(None, description="Validation parquet in verl's layout (None: no validation).")
    save_freq: int = Field(10, description="Checkpoint every N steps (-1: never).")
    steps_per_epoch: int = Field(1, ge=1, description="Steps per data epoch: the gating epoch is (global_step - 1) // steps_per_epoch; launch_verl fills it from the parquet size.")
    extra_overrides: list[str] = Field(default_factory=list, description="Raw Hydra overrides appended to the command (escape hatch).")

    @model_validator(mode="before")
    @classmethod
    def _moved(cls, data: Any) -> Any:
        return refuse_moved_verl_keys(data)  # verl.loggers → logging.loggers, …


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
    api_key_file: str | None = Field(None, description="File whose first line is the key every request must send as 'Authorization: Bearer KEY' (401 and nothing run without it); required to bind beyond loopback. None: no key (loopback only).")
    api_key_file: str | None = Field(None, description="File whose first line is the key every request must send as 'Authorization: Bearer KEY' (401 and nothing run without it); required to bind beyond loopback. None: no key (loopback only).")


class TrainConfig(_Strict):
    """Top-level config of `paravt train prior|sft|rl` and `paravt eval` (YAML-loadable)."""

    out_dir: str = Field("runs/train", description="Run directory of a trainer: checkpoints, train_log.jsonl and the final model (out_dir/model); a run on a directory with checkpoints resumes from the last.")
    data: str = Field("runs/synth/rl.parquet", description="Training parquet (rl.parquet or sft.parquet).")
    data_root: str | None = Field(None, description="Root for relative video paths (default: the parquet's directory).")
    init_from: str | None = Field(None, description="Checkpoint to start from (default: model.path).")
    max_row_bytes: int = _max_row_bytes()
    lock_wait_s: float = Field(300.0, gt=0, allow_inf_nan=False, description="Longest wait, in seconds, on "
                               "another run's lock that shows no progress (`paravt repro`'s shared base "
                               "builder: paravt.repro.bases); then the run stops, naming the holder.")
    model: ModelConfig = Field(default_factory=ModelConfig, description="The policy: checkpoint or server URL, backend, device, HTTP limits.")
    video: VideoConfig = Field(default_factory=VideoConfig, description="Frame sampling of the overview and of the crops.")
    sampling: SamplingConfig = Field(default_factory=SamplingConfig, description="Decoding of the main agent's and the sub-agents' turns.")
    rollout: RolloutConfig = Field(default_factory=RolloutConfig, description="One episode: dispatch mode, limits, tools.")
    reward: RewardConfig = Field(default_factory=RewardConfig, description="The reward's terms and weights, and the optional LLM judge (docs/rewards.md).")
    rl: RLConfig = Field(default_factory=RLConfig, description="PARA-GRPO: `paravt train rl`.")
    sft: SFTConfig = Field(default_factory=SFTConfig, description="Supervised cold start: `paravt train sft`.")
    prior: PriorConfig = Field(default_factory=PriorConfig, description="The simulated pretrained tool prior: `paravt train prior`.")
    eval: EvalConfig = Field(default_factory=EvalConfig, description="`paravt eval`: modes, benchmark protocol, scoring (the overview budget is video.overview_nframes).")
    verl: VerlConfig = Field(default_factory=VerlConfig, description="Resources of `paravt train rl --engine verl` (nodes, GPUs, rollout engine).")
    logging: LoggingConfig = Field(default_factory=LoggingConfig, description="The ONE logger list of every trainer (console, jsonl, tensorboard, wandb, mlflow) and the trackers' project, run name, group and modes.")

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
    if problem := backend_problem(c.model.path, c.model.backend):
        out.append(problem)
    if c.model.replicas > 1 and c.model.device.partition(":")[0] != "cpu":  # cpu, cpu:0
        out.append(f"model.replicas={c.model.replicas} with model.device={c.model.device!r}: replicas are CPU "
                   "processes (one process batches on an accelerator); set model.replicas=1")
    out.extend(step_size_problems(c))  # sizes this machine cannot hold (paravt/config/limits.py)
    return out


class DistillConfig(_Strict):
    """`paravt data distill`: cold-start traces from a teacher endpoint (docs/ARCHITECTURE.md, data layer)."""

    pipeline: Literal["paravt", "eva"] = Field("paravt", description="'paravt': sequential crop_video traces converted to parallel [paper §B]; 'eva': Executor-Reflector frame_select traces [EVA].")
    workers: int = Field(4, ge=1, description="Rows distilled concurrently.")
    max_turns: int = Field(4, ge=1, description="Teacher turns per row (paravt); EVA rounds (eva).")
    temperature: float = Field(0.0, ge=0, description="Teacher sampling temperature.")
    max_tokens: int = Field(1024, ge=1, description="Max tokens of one teacher turn.")
    request_timeout_s: float = Field(120.0, gt=0, description="Whole-request deadline of one teacher request (connect, headers and body together).")
    max_reply_bytes: int = Field(4 << 20, ge=1024, description="Largest teacher reply body read; a bigger one is that row's teacher error.")
    max_retries: int = Field(4, ge=0, description="Retries of a teacher request on timeouts, transport errors, 408, 429 and 5xx (paravt.models.openai.retry).")
    backoff_s: float = Field(1.0, ge=0, description="First back-off; doubles per retry (a larger Retry-After wins).")
    keep_incorrect: bool = Field(False, description="Keep traces whose answer scores 0 against the gold (no rejection sampling).")
    llm_cleanup: bool = Field(True, description="Ask the teacher to reformat a turn the deterministic repair cannot fix (once).")
    bank_top_k: int = Field(2, ge=0, description="EVA: similar successful trajectories shown to the Executor.")
    overview_max_pixels: int = Field(224 * 224, ge=16, description="Max pixels per overview frame sent to the teacher (the row's nframes frames).")
    crop_max_frames: int = Field(16, ge=1, description="crop_video frames per window for the teacher [paper].")
    crop_max_pixels: int = Field(224 * 224, ge=16, description="Max pixels per crop frame [paper].")
    size_factor: int = Field(32, ge=1, description="Resize to multiples of this (Qwen3-VL 32, Qwen2.5-VL 28).")
    max_row_bytes: int = _max_row_bytes()
