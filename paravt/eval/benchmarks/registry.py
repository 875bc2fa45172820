"""The ONE registry of benchmarks: name → `Benchmark` (`paravt.eval.benchmarks.base`).

Adding a benchmark is one module in this package (its loader, lmms-eval rule, groups,
aggregation and a `Benchmark` record; docs/extending.md) and one line in `REGISTRY` below.
Everything else — ``paravt eval --benchmark``, ``paravt data bench``, ``paravt score
--benchmark``, the CLI help, the report's Table 1 columns — reads this registry. An unknown name
is answered with the close matches and the list (`UnknownBenchmarkError`).
"""

from __future__ import annotations

import difflib
from pathlib import Path

from paravt.errors import ConfigError, DataError
from paravt.eval.benchmarks import (
    charades_sta,
    elv_halluc,
    longvideobench,
    lvbench,
    mlvu,
    mmvu,
    videomme,
)
from paravt.eval.benchmarks.base import Benchmark, EvalSample

REGISTRY: dict[str, Benchmark] = {
    b.name: b
    for b in (
        videomme.VIDEOMME,
        videomme.VIDEOMME_SUB,
        longvideobench.LONGVIDEOBENCH,
        lvbench.LVBENCH,
        mlvu.MLVU,
        mmvu.MMVU,
        charades_sta.CHARADES_STA,
        elv_halluc.ELV_HALLUC,
    )
}


class UnknownBenchmarkError(ConfigError, DataError):
    """A benchmark name that is not in the registry. A `ConfigError` (the name is a setting the
    user typed) and a `DataError` (what loading a benchmark raises)."""


def benchmark_names() -> tuple[str, ...]:
    """The registered names, in registry order."""
    return tuple(REGISTRY)


def get_benchmark(name: str) -> Benchmark:
    """The registered benchmark ``name``; `UnknownBenchmarkError` with the close matches
    otherwise."""
    bench = REGISTRY.get(name)
    if bench is None:
        close = difflib.get_close_matches(name, list(REGISTRY), n=3, cutoff=0.6)
        hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise UnknownBenchmarkError(
            f"benchmark {name!r} is unknown.{hint} Names available: {', '.join(REGISTRY)}; "
            "pass one of those names (or register yours: docs/extending.md)"
        )
    return bench


def check_benchmark(name: str) -> str:
    """``name`` when it is registered (`get_benchmark`'s error otherwise)."""
    return get_benchmark(name).name


def register(bench: Benchmark) -> None:
    """Add ``bench``; `ConfigError` when its name is taken by another benchmark."""
    existing = REGISTRY.get(bench.name)
    if existing is not None and existing is not bench:
        raise ConfigError(
            f"benchmark name {bench.name!r} is registered twice; rename one of them "
            "(benchmark names must be unique)"
        )
    REGISTRY[bench.name] = bench


def unregister(name: str) -> None:
    REGISTRY.pop(name, None)


def load_benchmark(
    name: str, root: str | Path, *, limit: int | None = None, check_videos: bool = True
) -> list[EvalSample]:
    """Samples of benchmark ``name`` from ``root``; `DataError` listing every missing video."""
    bench = get_benchmark(name)
    rootp = Path(root)
    if not rootp.is_dir():
        raise DataError(
            f"benchmark root {rootp} is not a directory; pass the directory holding {name}'s files"
        )
    samples = bench.loader(rootp)
    if limit is not None:
        samples = samples[:limit]
    if check_videos:
        missing = sorted({s.video for s in samples if not Path(s.video).exists()})
        if missing:
            shown = "\n  ".join(missing[:20])
            more = f"\n  … and {len(missing) - 20} more" if len(missing) > 20 else ""
            raise DataError(
                f"{name}: {len(missing)} video(s) missing under {rootp}:\n  {shown}{more}\n"
                "Download/extract the videos, or pass check_videos=False to load annotations only"
            )
    return samples
