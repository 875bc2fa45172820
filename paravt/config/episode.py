"""The sections of what an episode runs on: the video sampling, the model backend, the sampling
parameters and the rollout limits (``paravt.config.sections`` gathers every section)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator

from paravt.config.choices import (
    DEVICES,
    MAX_CALLS_PER_TURN,
    MAX_NEW_TOKENS,
    MAX_OVERVIEW_FRAMES,
    PROMPT_VERSION,
    PROMPT_VERSIONS,
    SUBAGENT_PROMPT,
    TOOLS,
    CallForms,
    DispatchMode,
    SubagentPrompt,
    TurnRules,
    http_url_or_none,
)
from paravt.config.fields import _Strict


class VideoConfig(_Strict):
    """How frames are sampled from a video (overview and crops)."""

    overview_nframes: int = Field(
        64,
        ge=0,
        le=MAX_OVERVIEW_FRAMES,
        description=(
            "The overview frame budget, the ONE name of the frames of the whole video the main "
            "agent sees "
            "first (0 = on-demand context: metadata only). `--nframes` of `infer`, `eval` "
            "(--data and "
            "--benchmark) and `data import` sets it. Eval and infer show exactly this many "
            "frames, uniformly spread; RL with rl.gating.enabled=false uses it as the budget "
            "(gating draws from rl.gating.choices instead), capped by overview_fps."
        ),
    )
    overview_fps: float | None = Field(
        1.0,
        gt=0,
        description="RL rollouts (and the τ = 0.7 probes and the offline filter that stand for "
        "them): an overview of budget n (the gated n, or overview_nframes) shows min(n, "
        "round(duration × overview_fps)) frames, at least 1, uniformly spread "
        "(paravt.video.overview_count): the authors' RL decodes at 1 fps capped at 64 frames. "
        "None: exactly n. Eval and infer always show exactly n.",
    )
    overview_max_pixels: int = Field(
        64 * 64, ge=16, description="Max pixels per overview frame (resized keeping aspect)."
    )
    crop_max_frames: int = Field(
        16,
        ge=1,
        le=256,
        description="Max frames a sub-agent sees of its window [docs/ARCHITECTURE.md §2].",
    )
    crop_fps: float = Field(
        1.0,
        gt=0,
        description="Sampling rate inside a crop window, capped by crop_max_frames "
        "[docs/ARCHITECTURE.md §2].",
    )
    crop_max_pixels: int = Field(
        224 * 224, ge=16, description="Max pixels per crop frame [docs/ARCHITECTURE.md §2]."
    )
    size_factor: int = Field(
        32,
        ge=1,
        description="Resize to multiples of patch*merge: 28 for Qwen2.5-VL, 32 for Qwen3-VL.",
    )
    cache_size: int = Field(
        256, ge=0, description="Entries of the per-process decoded-frames LRU cache."
    )


class ModelConfig(_Strict):
    """Which policy to load and how."""

    path: str = Field(
        "runs/tiny-model",
        description="HF checkpoint directory or hub id (loaded offline), or an http(s) URL for "
        "the openai backend.",
    )
    backend: Literal["hf", "openai"] = Field(
        "hf", description="Inference backend of the Generator."
    )
    device: Annotated[str, DEVICES] = Field(
        "cpu", description="torch device for the hf backend: cpu, cuda, cuda:1, mps, ..."
    )
    dtype: Literal["float32", "bfloat16", "float16"] = Field(
        "float32", description="Parameter dtype for the hf backend."
    )
    served_model_name: str | None = Field(
        None,
        description="Model name sent to an OpenAI-compatible server (default: the server's first "
        "model).",
    )
    request_timeout_s: float = Field(
        120.0,
        gt=0,
        description="Whole-request deadline of one openai-backend request (connect, headers and "
        "body together; paravt.http.retry).",
    )
    max_retries: int = Field(
        3,
        ge=0,
        description="Retries of an openai-backend request on timeouts, transport errors, 408, "
        "429 and 5xx: exponential back-off from 0.5 s, or the server's "
        "Retry-After when longer (paravt.http.retry).",
    )
    max_concurrency: int = Field(16, ge=1, description="Concurrent requests of the openai backend.")
    api_key_file: str | None = Field(
        None,
        description="openai backend: file whose first line is the server's API key (e.g. the "
        "file `paravt serve-model --api-key-file` reads), sent as "
        "'Authorization: Bearer'; None: send none.",
    )
    prefill_threads: int | None = Field(
        None,
        ge=1,
        le=256,
        description="hf backend: torch threads of each batch's prefill (vision tower, prompt); "
        "the decode steps keep the process's count. None: the process's "
        "count throughout. Worth it when decode runs with fewer threads than "
        "the cores (docs/performance.md).",
    )
    replicas: int = Field(
        1,
        ge=1,
        le=64,
        description="hf backend on a CPU: processes serving requests side by side, each with a "
        "copy of the policy (this one included; paravt.models.hf.replicas). "
        "2 uses both cores of a 2-core machine, whose one process is bound "
        "by Python. 1 on an accelerator.",
    )
    continuous_batching: bool = Field(
        True,
        description="hf backend: one decode loop owns the model and every live sequence "
        "(episodes, sub-agents, G rollouts) advances one token per forward; "
        "requests that arrive are prefilled together and join at the next "
        "forward, finished ones leave (paravt.models.hf.continuous; same "
        "tokens as off, more rows a forward, docs/performance.md). Off: "
        "concurrent calls meet in window batches that run to completion. With "
        "replicas, this process's engine only.",
    )
    replica_timeout_s: float = Field(
        600.0,
        gt=0,
        description="hf replicas: a worker that does not answer a batch within this time (hung, "
        "stopped) is killed and restarted; its rows are served by this "
        "process (paravt.models.hf.replicas).",
    )


class SamplingConfig(_Strict):
    temperature: float = Field(
        0.7, ge=0, description="Sampling temperature tau [paper]; 0 = greedy."
    )
    top_p: float = Field(
        1.0,
        gt=0,
        le=1,
        description="Nucleus sampling: draw from the smallest set of tokens whose probability "
        "reaches top_p; 1 = off.",
    )
    max_new_tokens: int = Field(
        2048,
        ge=1,
        le=MAX_NEW_TOKENS,
        description="Max new tokens per main-agent turn [paper]; at most 262144 (a turn never "
        "outgrows the longest context a served VLM has).",
    )
    sub_max_new_tokens: int = Field(
        512,
        ge=1,
        le=MAX_NEW_TOKENS,
        description="A sub-agent's output cap N: the main agent reads at most N tokens of a "
        "summary; a longer one is cut to its first N tokens plus ' [truncated]' (the authors' "
        "512-token cut). The sub-agent generates up to N + 1 tokens, the last only to tell a cut "
        "[docs/ARCHITECTURE.md §2]; at most 262144.",
    )
    sub_temperature: float | None = Field(
        None,
        ge=0,
        description="The sub-agents' sampling temperature; None: the main agent's (temperature, "
        "τ = 0.7 in RL), as the authors sample theirs with the rollout's own settings. An eval's "
        "or a probe's own temperature (greedy eval) applies to both.",
    )


class RolloutConfig(_Strict):
    """One episode: dispatch mode and limits (docs/ARCHITECTURE.md §2)."""

    mode: DispatchMode = Field(
        "parallel",
        description="Dispatch mode (paravt.agent.modes): parallel (the method), sequential (the "
        "baseline), eva (plan, then one frame_select per round), none.",
    )
    k_max: int = Field(
        8,
        ge=1,
        le=MAX_CALLS_PER_TURN,
        description="Max tool calls per main turn under turn_rules=paravt (and eval); at most "
        "64 (8 times the paper's 8). The release's RL has no cap. The system prompt states it "
        "either way.",
    )
    max_turns: int = Field(
        3,
        ge=0,
        description="Tool rounds, counted as the release counts (`while turn <= max_turns`): "
        "the main agent generates up to max_turns + 1 times; the calls of each of the first "
        "max_turns generations run and the next generation reads their results; the calls of "
        "the final generation run and count in kappa but no generation reads them "
        "(turn_rules=paravt: they do not run). 3 [release]: up to 4 generations, 3 tool rounds "
        "read. The earlier count (generations) N is max_turns=N-1 with turn_rules=paravt.",
    )
    min_window_s: float = Field(
        1.0,
        gt=0,
        description="Minimum crop window length in seconds under turn_rules=paravt (and eval); "
        "the release's RL only needs a non-empty window inside the video.",
    )
    max_context_tokens: int = Field(
        16384,
        ge=64,
        description="Context length; an observation that overflows ends the episode with reason "
        "'length'.",
    )
    think_prefix: bool = Field(
        True,
        description="Force '<think>\\n' at the start of every main-agent response (Exploration "
        "Anchoring).",
    )
    call_forms: CallForms = Field(
        "release",
        description="Which calls of a main turn run (docs/tools.md, paravt.protocol.parser). "
        "release [release]: JSON in <tool_call> only, and all of the turn's blocks or none (one "
        "block that is not a JSON object with name and arguments drops them all; a last block "
        "left open runs if the turn was cut before its end-of-turn token); else python-style "
        "calls in <tool_code> run (one per line); a turn with no call ends the episode. "
        "per_call: each <tool_call> block judged alone (JSON, lenient JSON or a python-style "
        "call), an unreadable one is an error line the model reads and the episode goes on; "
        "<tool_code> never runs. <tool_code> is counted as a reversion under both. RL only: "
        "eval and infer keep per_call.",
    )
    turn_rules: TurnRules = Field(
        "release",
        description="Per-turn rules of RL episodes. release [release]: no call cap, no minimum "
        "window, no de-duplication (a window must still be non-empty inside the video), and "
        "the final turn's calls run and count in kappa. paravt: at most k_max calls a turn, "
        "windows of at least min_window_s, a window repeated in a turn refused, the final "
        "turn's calls not run. Eval and infer keep paravt (their own limits).",
    )
    train_subagents: bool = Field(
        False,
        description="Train the sub-agents' trajectories too, each with its episode's advantage. "
        "Off [authors: the hierarchical actor's include_subagent_in_loss defaults off and is "
        "never set]: only the main trajectories enter the loss, its token count and the "
        "advantage normalisation.",
    )
    subagent_timeout_s: float = Field(
        300.0, gt=0, description="Timeout of one batched sub-agent request."
    )
    subagent_prompt: SubagentPrompt = Field(
        SUBAGENT_PROMPT,
        description="What a sub-agent is asked: summary = a concise summary of its window "
        "(MM:SS), no question, no system prompt (the authors' release); question = the "
        "question and its window, with a system prompt (paravt.protocol.prompts."
        "subagent_messages). Training and eval use the same.",
    )
    tool_server_url: str | None = Field(
        None, description="Use tools through this paravt tool server instead of in-process."
    )
    tool_server_key_file: str | None = Field(
        None,
        description="File whose first line is the tool server's key (the file `paravt "
        "serve-tools --api-key-file` reads), sent as 'Authorization: Bearer' "
        "with every request; None: send none.",
    )
    tools: Annotated[list[str], TOOLS] = Field(
        default_factory=lambda: ["crop_video"],
        description="Enabled tools: registry names, or 'mcp:URL' / 'mcp:COMMAND ARGS' for every "
        "tool of an MCP server (paravt[mcp]); checked against the registry when the config loads, "
        "unless tool_server_url names a server (its own list is checked when it connects).",
    )
    python_weak_isolation: bool = Field(
        False,
        description="Let the in-process python tool run WITHOUT bubblewrap (weak isolation: the "
        "host filesystem is readable); off = its calls are refused "
        "(docs/tools.md).",
    )
    prompt_version: Annotated[str, PROMPT_VERSIONS] = Field(
        PROMPT_VERSION,
        description="Version of the packaged prompt templates: v2 = the paper's RL system prompt "
        "(tools always, never <tool_code>; the user turn does not state the frame count); v1 = "
        "the earlier one (answer directly if the overview is enough; 'N frames shown'); the "
        "versions are the folders of paravt/protocol/templates/.",
    )

    _server_url = field_validator("tool_server_url")(lambda url: http_url_or_none(url))
