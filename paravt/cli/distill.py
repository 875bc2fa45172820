"""`paravt data distill`: cold-start SFT traces from a teacher (``paravt.distill``);
registered on the `paravt data` app by ``paravt.cli.data``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.table import Table

from paravt.cli.checks import output_dir
from paravt.cli.output import SET_HELP, stdout_console
from paravt.errors import ConfigError, DataError

if TYPE_CHECKING:
    from paravt.config import DistillConfig

console = stdout_console()

# `data distill`'s options, declared once here so that the command reads as its parameters.
_DData = Annotated[
    str,
    typer.Option(
        "--data",
        help="QA parquet in our schema (e.g. rl.parquet): question, options, gold, video.",
    ),
]
_DOut = Annotated[
    str,
    typer.Option("--out", help="Output directory: sft.parquet, report.json, progress.jsonl."),
]
_DTeacher = Annotated[
    str, typer.Option("--teacher", help="OpenAI-compatible endpoint URL of the teacher.")
]
_DTeacherModel = Annotated[
    str, typer.Option("--teacher-model", help="Model name sent to the teacher.")
]
_DRoot = Annotated[
    str | None,
    typer.Option("--root", help="Data root of the videos (default: the parquet's directory)."),
]
_DFallback = Annotated[
    str | None,
    typer.Option("--fallback", help="Endpoint asked when the teacher refuses or fails."),
]
_DFallbackModel = Annotated[str | None, typer.Option("--fallback-model")]
_DPipeline = Annotated[
    str | None, typer.Option("--pipeline", help="paravt | eva (default: distill.pipeline).")
]
_DReflector = Annotated[
    str | None,
    typer.Option("--reflector", help="eva: LLM reflector endpoint (after the rule-based one)."),
]
_DReflectorModel = Annotated[str | None, typer.Option("--reflector-model")]
_DKeepIncorrect = Annotated[
    bool, typer.Option("--keep-incorrect", help="Keep traces whose answer scores 0.")
]
_DWorkers = Annotated[
    int | None, typer.Option("--workers", help="Rows in flight (default: distill.workers).")
]
_DLimit = Annotated[int | None, typer.Option("--limit", min=1, help="Only the first N rows.")]
_DApiKey = Annotated[str | None, typer.Option("--api-key", help="API key sent to every endpoint.")]
_DApiKeyFile = Annotated[
    str | None, typer.Option("--api-key-file", help="File whose first line is the API key.")
]
_DConfig = Annotated[
    str | None,
    typer.Option("--config", help="YAML of distill settings (paravt.config.DistillConfig)."),
]
_DSet = Annotated[
    list[str], typer.Option("--set", help=SET_HELP + " Keys are DistillConfig fields.")
]
_DJson = Annotated[bool, typer.Option("--json")]


def distill_cmd(
    data: _DData,
    out: _DOut,
    teacher: _DTeacher,
    teacher_model: _DTeacherModel,
    root: _DRoot = None,
    fallback: _DFallback = None,
    fallback_model: _DFallbackModel = None,
    pipeline: _DPipeline = None,
    reflector: _DReflector = None,
    reflector_model: _DReflectorModel = None,
    keep_incorrect: _DKeepIncorrect = False,
    workers: _DWorkers = None,
    limit: _DLimit = None,
    api_key: _DApiKey = None,
    api_key_file: _DApiKeyFile = None,
    config: _DConfig = None,
    set_: _DSet = [],  # noqa: B006 - typer copies the default; the command never mutates it
    as_json: _DJson = False,
) -> None:
    """Distill cold-start SFT traces from a teacher (paravt.distill)."""
    import asyncio

    from paravt.data.screen import screen_rows
    from paravt.distill import distill
    from paravt.distill.run import nothing_accepted
    from paravt.distill.teacher import read_api_key

    cfg = _settings(config, set_, pipeline, workers, keep_incorrect)
    eps = _endpoints(
        (teacher, teacher_model),
        (fallback, fallback_model),
        (reflector, reflector_model),
        read_api_key(api_key, api_key_file),
    )
    output_dir(out)
    screened = screen_rows(data, root, limit=limit, max_row_bytes=cfg.max_row_bytes)
    report = asyncio.run(
        distill(
            list(screened.rows),
            root=root or str(Path(data).parent),
            out_dir=out,
            cfg=cfg,
            endpoints=eps,
            progress=not as_json,
            data_errors=screened.to_json(),
        )
    )
    if as_json:
        typer.echo(json.dumps(report))
    else:
        _print_report(report, out)
    if problem := nothing_accepted(report, Path(out)):
        raise DataError(problem)  # exit 2: there is nothing to train on


def _settings(
    config: str | None,
    set_: list[str],
    pipeline: str | None,
    workers: int | None,
    keep_incorrect: bool,
) -> DistillConfig:
    """The distill settings: the ``--config`` YAML (or the defaults), ``--set`` and the flags that
    name a field."""
    from paravt import config as cfgmod

    flags = [
        cfgmod.Flag("--pipeline", "pipeline", pipeline),
        cfgmod.Flag("--workers", "workers", workers),
        cfgmod.Flag("--keep-incorrect", "keep_incorrect", True if keep_incorrect else None),
    ]
    mapping = cfgmod.read_mapping(config) if config else {}
    return cfgmod.resolve(cfgmod.DistillConfig, mapping, config or "defaults", set_, flags)


def _endpoints(
    teacher: tuple[str, str],
    fallback: tuple[str | None, str | None],
    reflector: tuple[str | None, str | None],
    key: str | None,
) -> Any:
    """The teacher, fallback and reflector endpoints (each URL checked; a URL and its model go
    together)."""
    from paravt import config as cfgmod
    from paravt.distill import Endpoints
    from paravt.distill.teacher import Endpoint

    cfgmod.check_url(teacher[0], "--teacher")
    for (url, model), flag in ((fallback, "--fallback"), (reflector, "--reflector")):
        if (url is None) != (model is None):
            raise ConfigError(f"{flag} and {flag}-model go together; give both or neither")
        if url is not None:
            cfgmod.check_url(url, flag)
    return Endpoints(
        Endpoint(teacher[0], teacher[1], key),
        Endpoint(fallback[0], fallback[1], key) if fallback[0] and fallback[1] else None,
        Endpoint(reflector[0], reflector[1], key) if reflector[0] and reflector[1] else None,
    )


def _print_report(report: dict[str, Any], out: str) -> None:
    t = Table("statistic", "value")
    for k, v in report.items():
        t.add_row(k, json.dumps(v) if isinstance(v, dict) else str(v))
    console.print(t)
    wrote = [p for p in (Path(out) / "sft.parquet", Path(out) / "report.json") if p.exists()]
    console.print(f"wrote {' and '.join(map(str, wrote))}")
