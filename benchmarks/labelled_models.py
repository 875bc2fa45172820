"""The probe scripts' model arguments: ``LABEL=MODEL_DIR``, a saved model directory each."""

from __future__ import annotations

import argparse
from pathlib import Path

HELP = "LABEL=MODEL_DIR (a saved model directory), in the order to report"


def labelled_model(item: str) -> tuple[str, str]:
    """An argparse ``type``: ``LABEL=MODEL_DIR`` → (label, path); a clear error otherwise."""
    label, sep, path = item.partition("=")
    if not sep or not label or not Path(path, "config.json").is_file():
        raise argparse.ArgumentTypeError(
            f"{item!r} is not LABEL=MODEL_DIR (a saved model directory)"
        )
    return label, path
