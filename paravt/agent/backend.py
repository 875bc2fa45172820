"""What an episode runs on, built from the typed config: the ONE builder of a backend (generator +
chat codec + tools) for every caller (`paravt eval`, `paravt infer`, `paravt repro`, the trainers'
`PolicySession`, verl's agent loop).

Config stops here (docs/ARCHITECTURE.md, "Builders"): callers hand over ``ModelConfig`` and
``RolloutConfig`` whole, never their fields one by one, so a new field reaches every command through
this module alone and
no caller can leave one out (tests/agent/test_backend.py changes every field and follows each one
to where it lands). Per-command values that are not settings, such as a served model's processor
directory, are the only keyword arguments.

``model.backend`` picks the generator: ``hf`` loads the checkpoint at ``model.path`` (device,
dtype, prefill threads, CPU replicas); ``openai`` talks to the OpenAI-compatible server at
``model.path`` (timeout, retries, concurrency, served name, key file), which must answer before
any episode runs (``OpenAIGenerator.check``: a server that refuses the key or fails is one line).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING

from paravt.config import ModelConfig, RewardConfig, RolloutConfig, backend_problem
from paravt.errors import ConfigError

if TYPE_CHECKING:
    from paravt.models.base import Generator
    from paravt.models.chat import ChatCodec
    from paravt.models.hf.loading import LoadedPolicy
    from paravt.tools import ToolSet


@dataclass
class Backend:
    """A generator, its chat codec and the tools; the optional LLM judge of open-ended answers."""

    generator: Generator
    codec: ChatCodec
    tools: ToolSet
    judge_url: str | None = None  # OpenAI-compatible endpoint of the judge (reward.judge_url)
    judge_model: str | None = None
    judge_timeout_s: float = RewardConfig.model_fields[
        "judge_timeout_s"
    ].default  # written once, in config


def open_tools(rollout: RolloutConfig) -> ToolSet:
    """The enabled tools of ``rollout``: in-process, or through ``rollout.tool_server_url`` with
    its key file; ``python_weak_isolation`` lets the in-process python tool run."""
    from paravt.tools import build_toolset

    options = {"python": {"weak_isolation": True}} if rollout.python_weak_isolation else None
    return build_toolset(
        list(rollout.tools),
        server_url=rollout.tool_server_url,
        server_key_file=rollout.tool_server_key_file,
        options=options,
    )


def policy_generator(policy: LoadedPolicy, model: ModelConfig) -> Generator:
    """The hf generator of a loaded policy: one process, or ``model.replicas`` CPU processes."""
    from paravt.models.hf.replicas import hf_generator

    return hf_generator(
        policy,
        replicas=model.replicas,
        prefill_threads=model.prefill_threads,
        replica_timeout_s=model.replica_timeout_s,
        continuous=model.continuous_batching,
    )


def open_backend(
    model: ModelConfig,
    rollout: RolloutConfig,
    *,
    processor_dir: str | None = None,
    judge: RewardConfig | None = None,
) -> Backend:
    """The backend of ``model`` with the tools of ``rollout`` (and ``judge``'s LLM judge, when
    given). ``processor_dir``: the served model's processor (openai backend: token ids)."""
    if problem := backend_problem(model.path, model.backend):
        raise ConfigError(problem)
    toolset = open_tools(rollout)
    if model.backend == "openai":
        backend = _open_remote(model, processor_dir, toolset)
    else:
        from paravt.models.chat import ChatCodec
        from paravt.models.hf.loading import load_policy

        policy = load_policy(model.path, device=model.device, dtype=model.dtype)
        policy.model.eval()
        backend = Backend(policy_generator(policy, model), ChatCodec(policy.processor), toolset)
    if judge is not None:
        backend.judge_url, backend.judge_model = judge.judge_url, judge.judge_model
        backend.judge_timeout_s = judge.judge_timeout_s
    return backend


def _open_remote(model: ModelConfig, processor_dir: str | None, toolset: ToolSet) -> Backend:
    from paravt.config import read_key_file
    from paravt.http.retry import RetryPolicy
    from paravt.models.chat import ChatCodec
    from paravt.models.hf.loading import load_processor
    from paravt.models.openai.backend import OpenAIGenerator

    if processor_dir is None:
        raise ConfigError(
            f"{model.path}: pass --processor DIR (the served model's processor, for token ids)"
        )
    processor = load_processor(processor_dir)
    key = read_key_file(model.api_key_file, "model.api_key_file") if model.api_key_file else None
    gen = OpenAIGenerator(
        model.path,
        model=model.served_model_name,
        timeout_s=model.request_timeout_s,
        retry=RetryPolicy(max_retries=model.max_retries),
        max_concurrency=model.max_concurrency,
        tokenizer=processor.tokenizer,
        api_key=key,
    )
    asyncio.run(gen.check(model.api_key_file))  # a dead or refusing server stops here, exit 2
    return Backend(gen, ChatCodec(processor), toolset)
