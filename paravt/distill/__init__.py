"""Cold-start data from a teacher (`paravt data distill`): ParaVT's distillation (paper §B) and
EVA's Executor–Reflector loop with an Experience Bank. Entry point: `run.distill`."""

from __future__ import annotations

from paravt.distill.run import Endpoints, distill, finalize

__all__ = ["Endpoints", "distill", "finalize"]
