"""`paravt` command line: thin commands over library functions.

Each command group lives in its own module and is registered here. Errors: `paravt.cli.root`
(one handler for every command: a user error is one line on stderr, exit 2).
"""

from __future__ import annotations

import typer

from paravt.cli import (
    config_cmd,
    data as data_cmd,
    demo,
    eval_cmd,
    infer,
    model as model_cmd,
    report,
    repro,
    score,
    serve_model,
    tools,
    train,
    video as video_cmd,
)
from paravt.cli.root import RootGroup

app = typer.Typer(
    name="paravt",
    cls=RootGroup,
    help="Agentic video RL with parallel tool use (ParaVT / PARA-GRPO).",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
    add_completion=False,
)

app.add_typer(config_cmd.app, name="config")
app.add_typer(train.app, name="train")
app.command("infer")(infer.infer)
app.command("eval")(eval_cmd.eval_cmd)
app.command("demo")(demo.demo)
app.command("repro")(repro.repro)
app.add_typer(model_cmd.app, name="model")
app.command("report")(report.report)
app.command("score")(score.score)
app.add_typer(video_cmd.app, name="video")
app.command("serve-tools")(tools.serve_tools)
app.command("serve-model")(serve_model.serve_model)
app.add_typer(data_cmd.app, name="data")


def main() -> None:  # pragma: no cover - console entry
    _quiet_libraries()
    app()


def _quiet_libraries() -> None:
    """Our own rich progress bars are the output; hide transformers' per-file load/save bars.
    Through huggingface_hub, whose switch transformers reads when it is imported: importing
    transformers itself here would cost every command two seconds."""
    try:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()
    except ImportError:  # pragma: no cover
        pass
