"""`paravt serve-model`: an OpenAI-compatible vLLM / SGLang server for a checkpoint, with the flags
the openai backend needs (paravt/servers/launch.py), in the foreground."""

from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Annotated, TypeGuard, get_args

import typer

from paravt.config import ServeEngine, TrainConfig
from paravt.errors import ConfigError


def visible_gpus() -> int:
    """NVIDIA GPUs ``nvidia-smi -L`` lists (0 without the tool)."""
    if shutil.which("nvidia-smi") is None:
        return 0
    try:
        listing = subprocess.run(
            ["nvidia-smi", "-L"], capture_output=True, text=True, timeout=20
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return 0
    return sum(1 for line in listing.splitlines() if line.startswith("GPU "))


# The command's options, declared once here so that the command reads as its parameters.
_Model = Annotated[
    str, typer.Option("--model", help="Checkpoint directory (or a hub id in the local HF cache).")
]
_Port = Annotated[int, typer.Option("--port", min=1, max=65535)]
_Host = Annotated[
    str,
    typer.Option("--host", help="Interface to bind (keep loopback unless the network is trusted)."),
]
_Engine = Annotated[str, typer.Option("--engine", help=" | ".join(get_args(ServeEngine)))]
_Gpus = Annotated[
    int | None,
    typer.Option(
        "--gpus",
        min=0,
        help="Tensor-parallel GPUs; 0 = the CPU build (default: all that nvidia-smi lists).",
    ),
]
_Python = Annotated[
    str | None,
    typer.Option(
        "--python", help="Interpreter that has the engine (default: this one, else .venv-vllm)."
    ),
]
_MaxModelLen = Annotated[
    int | None,
    typer.Option(
        "--max-model-len", min=1, help="Context length (default rollout.max_context_tokens)."
    ),
]
_ServedName = Annotated[str | None, typer.Option("--served-model-name")]
_ReadyTimeout = Annotated[
    float,
    typer.Option(
        "--ready-timeout",
        min=0.001,
        help="Give up when /v1/models has not answered after this many seconds.",
    ),
]
_Config = Annotated[
    Path | None,
    typer.Option("--config", help="YAML: rollout limits decide the context and media limits."),
]
_ApiKeyFile = Annotated[
    Path | None,
    typer.Option(
        "--api-key-file",
        help="File whose first line is the key clients must send as 'Authorization: Bearer KEY' "
        "(the engine's own --api-key; model.api_key_file on the client); required "
        "beyond loopback.",
    ),
]


def _is_engine(name: str) -> TypeGuard[ServeEngine]:
    return name in get_args(ServeEngine)


def serve_model(
    model: _Model,
    port: _Port = 8000,
    host: _Host = "127.0.0.1",
    engine: _Engine = "vllm",
    gpus: _Gpus = None,
    python: _Python = None,
    max_model_len: _MaxModelLen = None,
    served_model_name: _ServedName = None,
    ready_timeout_s: _ReadyTimeout = 900.0,
    config: _Config = None,
    api_key_file: _ApiKeyFile = None,
) -> None:
    """Start an OpenAI-compatible server for --model; print the command, then a ready line."""
    from paravt import config as cfgmod
    from paravt.config.keys import MIN_SERVER_KEY_CHARS
    from paravt.servers.launch import ServeSpec, command, default_roots, engine_env, find_python
    from paravt.servers.supervise import supervise

    if not _is_engine(engine):
        raise ConfigError(
            f"--engine {engine!r} is not a serving engine; choose from "
            f"{', '.join(get_args(ServeEngine))}"
        )
    cfgmod.require_key_beyond_loopback(host, api_key_file, "--api-key-file", "paravt serve-model")
    key = (
        cfgmod.read_key_file(api_key_file, "--api-key-file", min_chars=MIN_SERVER_KEY_CHARS)
        if api_key_file is not None
        else None
    )
    cfg = cfgmod.load(config) if config else TrainConfig()
    exe = find_python(engine, python, default_roots())
    r = cfg.rollout
    per_prompt = 1 + r.max_turns * r.k_max  # the overview + one per tool call of every turn
    spec = ServeSpec(
        model=model,
        host=host,
        port=port,
        engine=engine,
        gpus=visible_gpus() if gpus is None else gpus,
        max_model_len=max_model_len or r.max_context_tokens,
        max_videos=per_prompt,
        max_images=per_prompt,
        served_model_name=served_model_name,
        api_key=key,
    )
    cmd, env = command(exe, spec), engine_env(spec)
    line = " ".join(f"{k}={v}" for k, v in env.items()) + " " + shlex.join(cmd)
    print("$ " + (line.replace(key, f"<key of {api_key_file}>") if key else line), flush=True)
    raise typer.Exit(supervise(cmd, env, spec.url, ready_timeout_s=ready_timeout_s, api_key=key))
