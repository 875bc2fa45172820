"""``python tests/repro/kill_inside.py STAGE ARGS…``: the `paravt` command with ARGS, killed with
SIGKILL (kill -9: no handler, no flush, no cleanup) at a fixed point inside one stage of
`paravt repro`, for the resume test (tests/repro/test_repro_resume.py). STAGE:

- ``sft``: right after the SFT's step-1 checkpoint is written (the run is half trained);
- ``select``: as the checkpoint selection starts its second checkpoint's probe;
- ``filter``: after the offline filter's rollouts, before its files are written;
- ``rl``: after the RL run's last step, before its final model is saved;
- ``none``: not killed (the uninterrupted run).

Each point patches the module attribute its caller reads at call time."""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # this checkout's paravt


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def _arm(stage: str) -> None:
    if stage == "sft":
        import paravt.rl.loop as loop

        real_save = loop.save_checkpoint

        def save(root: Any, step: int, **kw: Any) -> Any:
            out = real_save(root, step, **kw)
            if "sft_" in str(root) and step == 1:
                _die()
            return out

        loop.save_checkpoint = save  # type: ignore[assignment]
    elif stage == "select":
        import paravt.repro.probe as probe

        real_probe, seen = probe.sample_metrics, []

        def sample(model: str, *a: Any, **kw: Any) -> Any:
            if "sft_" in model:
                seen.append(model)
                if len(seen) == 2:
                    _die()
            return real_probe(model, *a, **kw)

        probe.sample_metrics = sample
    elif stage == "filter":
        import paravt.rl.prefilter as pf

        pf.prefilter = lambda *a, **kw: _die()  # type: ignore[assignment,misc]
    elif stage == "rl":
        import paravt.rl.loop as loop

        real_final = loop.save_final_model

        def final(path: Any, **kw: Any) -> Any:
            if "grpo" in str(path):
                _die()
            return real_final(path, **kw)

        loop.save_final_model = final  # type: ignore[assignment]
    elif stage != "none":
        raise SystemExit(f"unknown stage {stage!r}")


if __name__ == "__main__":
    _arm(sys.argv[1])
    from paravt.cli import main

    sys.argv = ["paravt", *sys.argv[2:]]
    main()
