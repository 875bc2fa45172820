"""Checks of a command's inputs that run before any work (a model load, a video written): each
failure is a `ParavtError` that names the input and ends with the fix (paravt.cli.root prints it).
"""

from __future__ import annotations

import os
from pathlib import Path

from paravt.config import Flag, backend_of
from paravt.errors import ConfigError, ModelError


def output_dir(path: Path | str, option: str = "--out") -> Path:
    """``path`` when it can be an output directory (a directory, or a new path under a writable
    directory); `ConfigError` naming ``option`` otherwise."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise ConfigError(
            f"{option} {p} is an existing file, not a directory; pass a directory path (new or "
            "existing)"
        )
    parent = next((a for a in (p, *p.parents) if a.exists()), Path("."))
    if not parent.is_dir():
        raise ConfigError(
            f"{option} {p}: {parent} is a file, so nothing can be created under it; "
            "choose a path under a directory"
        )
    if not os.access(parent, os.W_OK | os.X_OK):
        raise ConfigError(f"{option} {p}: {parent} is not writable; choose a writable directory")
    return p


def model_flags(model: str) -> list[Flag]:
    """``--model`` as config: it sets ``model.path`` and the ``model.backend`` that serves it (a
    URL: openai; a checkpoint: hf), so the backend builder reads both from the config."""
    return [
        Flag("--model", "model.path", model),
        Flag("--model", "model.backend", backend_of(model)),
    ]


def model_source(model: str, what: str = "--model") -> str:
    """``model`` when it is an http(s) URL, a directory, or a hub id in the local HF cache (models
    load offline); `ModelError` naming ``what`` otherwise, before torch is imported."""
    if model.startswith(("http://", "https://")) or Path(model).is_dir():
        return model
    from huggingface_hub import try_to_load_from_cache

    try:
        cached = try_to_load_from_cache(model, "config.json")
    except ValueError:  # not a valid repo id either
        cached = None
    if not isinstance(cached, str):
        raise ModelError(
            f"{what} {model!r} is neither a checkpoint directory nor a hub id in the local HF "
            "cache "
            f"(models load offline); build one with `paravt model tiny --out {model}` or fix the "
            "path"
        )
    return model
