"""The tags every tracker run carries, so a dashboard can filter the runs of a repro by what they
are: ``kind`` (base, sft, rl, eval, summary), ``variant``, ``seed`` and the paravt git commit.

MLflow gets them as run tags (``paravt.kind``, ``paravt.variant``, ``paravt.seed`` and MLflow's own
``mlflow.source.git.commit``; an eval nests under the training run it evaluates through
``mlflow.parentRunId``), wandb as the run's ``job_type`` (the kind) and tags (``variant:NAME``,
``seed:N``, ``commit:SHA``), TensorBoard as a ``tags`` text."""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path

#: What a run is: the simulated pretrained base (``train prior``), an SFT or RL training run, an
#: eval of a model, or the summary of a repro.
KINDS = ("base", "sft", "rl", "eval", "summary")

#: The training kind (``paravt train KIND``) → the run's kind tag.
OF_TRAINER = {"prior": "base", "sft": "sft", "rl": "rl"}


def run_tags(
    kind: str, *, variant: str | None = None, seed: int | None = None
) -> tuple[tuple[str, str], ...]:
    """``(name, value)`` pairs in a fixed order; a value that is None is left out."""
    if kind not in KINDS:
        raise ValueError(f"run kind {kind!r} is not one of {', '.join(KINDS)}")
    tags = {"kind": kind, "variant": variant, "seed": None if seed is None else str(seed)}
    tags["commit"] = git_commit()
    return tuple((k, v) for k, v in tags.items() if v is not None)


@functools.lru_cache(maxsize=1)
def git_commit() -> str | None:
    """The commit of the paravt checkout this code runs from; None when it is not a git checkout
    (an installed wheel) or git is missing."""
    here = Path(__file__).resolve().parent
    try:
        out = subprocess.run(
            ["git", "-C", str(here), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    sha = out.stdout.strip()
    return sha if out.returncode == 0 and len(sha) == 40 else None


def mlflow_tags(tags: tuple[tuple[str, str], ...], parent_run_id: str | None) -> dict[str, str]:
    out = {("mlflow.source.git.commit" if k == "commit" else f"paravt.{k}"): v for k, v in tags}
    if parent_run_id:
        out["mlflow.parentRunId"] = parent_run_id
    return out


def wandb_tags(tags: tuple[tuple[str, str], ...]) -> tuple[str | None, list[str]]:
    """(job_type, tags): the kind as the job type, the rest as ``name:value`` tags."""
    d = dict(tags)
    return d.get("kind"), [f"{k}:{v}" for k, v in tags if k != "kind"]
