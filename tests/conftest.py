"""Shared fixtures: tiny Qwen-VL checkpoints built once per test session (offline, ~2 s each).

Use ``tiny_qwen3_dir`` / ``tiny_qwen25_dir`` (size xs) or ``tiny_model_dir(family, size)`` for
other combinations; every checkpoint is built at most once per session into a tmp dir and must be
treated as read-only (copy it before training into it).
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import torch

from paravt.data.synth.corpus import protocol_corpus
from paravt.models.tiny import build_tiny

# Tiny models: one intra-op thread is faster than two that stall each other on a busy 2-core
# machine (measured: the same forward 0.01 s vs 0.4–0.9 s).
torch.set_num_threads(1)


@pytest.fixture(autouse=True)
def _no_inherited_wandb_service() -> Iterator[None]:
    """After each test, forget the wandb service a test started in this process: wandb names it
    in ``WANDB_SERVICE``, which every later subprocess would inherit and share (a killed run's
    id left "in use" there; a disk test's run writing through a service outside its mounts)."""
    yield
    os.environ.pop("WANDB_SERVICE", None)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--real-servers",
        action="store_true",
        default=False,
        help="also run the tests marked real_server: a real vLLM from .venv-vllm (make "
        "test-servers)",
    )


@pytest.fixture(scope="session")
def mlflow_store(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Path], Path]:
    """Seed an empty MLflow SQLite store at a path (``OUT/mlruns/mlflow.db``) before a run makes
    one: a new store spends ~10 s on MLflow's schema migrations, a copy of one made once per
    session none. Returns the path. Without mlflow installed it seeds nothing."""
    template = Path(tmp_path_factory.mktemp("mlflow-template")) / "mlflow.db"
    try:
        import mlflow

        mlflow.MlflowClient(f"sqlite:///{template}").search_experiments()
    except ImportError:
        pass

    def seed(db: Path) -> Path:
        db.parent.mkdir(parents=True, exist_ok=True)
        if template.exists() and not db.exists():
            shutil.copy(template, db)
        return db

    return seed


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory: pytest.TempPathFactory) -> Callable[..., str]:
    built: dict[tuple[str, str], str] = {}

    def get(family: str, size: str = "xs") -> str:
        key = (family, size)
        if key not in built:
            out = Path(tmp_path_factory.mktemp(f"tiny-{family}-{size}"))
            built[key] = build_tiny(family, size, out, corpus=protocol_corpus()).path
        return built[key]

    return get


@pytest.fixture(scope="session")
def tiny_qwen3_dir(tiny_model_dir: Callable[..., str]) -> str:
    return tiny_model_dir("qwen3_vl", "xs")


@pytest.fixture(scope="session")
def tiny_qwen25_dir(tiny_model_dir: Callable[..., str]) -> str:
    return tiny_model_dir("qwen2_5_vl", "xs")
