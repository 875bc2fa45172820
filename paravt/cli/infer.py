"""`paravt infer`: one question on one video, printed as a readable transcript (or JSON)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, get_args

import typer
from rich.panel import Panel
from rich.table import Table

from paravt.cli.checks import model_flags, model_source
from paravt.cli.output import SET_HELP, fail, note, stdout_console
from paravt.config import DispatchMode, Flag, load_for_model
from paravt.errors import VideoError

if TYPE_CHECKING:
    from paravt.agent import EpisodeResult
    from paravt.config import TrainConfig

console = stdout_console()


def _options(text: str | None) -> tuple[str, ...] | None:
    """ "A) red B) blue" or "red|blue" → ("A) red", "B) blue")."""
    if not text:
        return None
    import re

    if "|" in text:
        return tuple(o.strip() for o in text.split("|") if o.strip())
    parts = re.split(r"\s(?=[A-Z][).:]\s)", " " + text.strip())
    return tuple(p.strip() for p in parts if p.strip())


# The command's options, declared once here so that the command reads as its parameters.
_Model = Annotated[
    str,
    typer.Option(
        "--model", help="HF checkpoint dir, or http(s) URL of an OpenAI-compatible server"
    ),
]
_Video = Annotated[Path, typer.Option("--video", exists=True, dir_okay=False)]
_Question = Annotated[str, typer.Option("--question")]
_Mode = Annotated[
    str | None,
    typer.Option("--mode", help=" | ".join(get_args(DispatchMode)) + " (default rollout.mode)"),
]
_Options = Annotated[str | None, typer.Option("--options", help='"A) ... B) ..." or "opt1|opt2"')]
_NFrames = Annotated[
    int | None, typer.Option("--nframes", help="Overview frame budget: sets video.overview_nframes")
]
_Temperature = Annotated[float, typer.Option("--temperature", min=0.0, help="0 = greedy")]
_MaxNewTokens = Annotated[
    int | None,
    typer.Option("--max-new-tokens", help="Per main turn (default sampling.max_new_tokens)"),
]
_Processor = Annotated[
    str | None, typer.Option("--processor", help="Processor dir (with a URL model)")
]
_Config = Annotated[
    Path | None,
    typer.Option(
        "--config", help="YAML settings (default: the ones the checkpoint was trained with)"
    ),
]
_Set = Annotated[list[str] | None, typer.Option("--set", help=SET_HELP)]
_Json = Annotated[bool, typer.Option("--json")]


def infer(
    model: _Model,
    video: _Video,
    question: _Question,
    mode: _Mode = None,
    options: _Options = None,
    nframes: _NFrames = None,
    temperature: _Temperature = 0.0,
    max_new_tokens: _MaxNewTokens = None,
    processor: _Processor = None,
    config: _Config = None,
    set_: _Set = None,
    as_json: _Json = False,
) -> None:
    """Run one episode and print its transcript. Settings: --config, else the checkpoint's own
    (paravt_config.yaml, written by training), else the defaults; flags override."""
    from paravt.video import probe
    from paravt.video.usable import too_short

    flags = [
        Flag("--mode", "rollout.mode", mode),
        Flag("--nframes", "video.overview_nframes", nframes),
        Flag("--max-new-tokens", "sampling.max_new_tokens", max_new_tokens),
        *model_flags(model),
    ]
    cfg, source = load_for_model(model, config, set_ or [], flags)
    note(f"settings: {source}")
    info = probe(video)  # a file that is not a video is refused here, before a model is loaded
    if (short := too_short(info)) is not None:
        raise VideoError(f"video {str(video)!r} {short}; use a longer video")
    model_source(model)
    res = _run_one(cfg, video, question, _options(options), temperature, processor)
    if as_json:
        typer.echo(json.dumps(episode_json(res), indent=1))
    else:
        render(res)
    if res.error:  # exit 2 when the model server failed it (the server is to fix)
        raise fail(f"the episode failed: {res.error}", code=2 if res.backend_errors else 1)


def _run_one(
    cfg: TrainConfig,
    video: Path,
    question: str,
    opts: tuple[str, ...] | None,
    temperature: float,
    processor: str | None,
) -> EpisodeResult:
    """The one episode, on the backend the settings name (torch is imported only now that the
    inputs are good)."""
    from paravt.agent import EpisodeInput, EpisodeSettings, run_episode
    from paravt.agent.backend import open_backend

    settings = EpisodeSettings.from_config(cfg, temperature=temperature)
    backend = open_backend(cfg.model, cfg.rollout, processor_dir=processor)
    inp = EpisodeInput(
        "infer",
        str(video.resolve()),
        question,
        "mcq" if opts else "oe",
        "",
        opts,
        cfg.video.overview_nframes,
    )
    return asyncio.run(
        run_episode(
            inp,
            generator=backend.generator,
            codec=backend.codec,
            settings=settings,
            tools=backend.tools,
            episode_id="infer",
        )
    )


def episode_json(res: EpisodeResult) -> dict:
    return {
        "answer": res.answer if res.answered else None,
        "extracted": res.answer,
        "end_reason": res.end_reason,
        "error": res.error,
        "turns": [t.text for t in res.main.turns],
        "calls": [c.to_json() for c in res.calls],
        "subagents": [
            {"index": s.index, "text": s.turns[0].text if s.turns else ""} for s in res.subs
        ],
        "tokens": asdict(res.tokens),
        "latency_s": res.latency_s,
    }


def render(res: EpisodeResult) -> None:
    for i, turn in enumerate(res.main.turns, start=1):
        console.print(
            Panel(turn.text, title=f"main agent · turn {i} · {turn.finish_reason}", expand=False)
        )
        if turn.calls:
            t = Table(title=f"tool calls of turn {i}")
            for col in ("#", "tool", "window", "status", "result / sub-agent summary"):
                t.add_column(col)
            for c in turn.calls:
                window = (
                    f"{c.start:.1f}–{c.end:.1f}s"
                    if c.start is not None and c.end is not None
                    else "-"
                )
                t.add_row(
                    str(c.index),
                    c.name or "?",
                    window,
                    "ok" if c.ok else "[red]error[/red]",
                    c.summary if c.ok else (c.error or ""),
                )
            console.print(t)
    tok = res.tokens
    answer = (
        repr(res.answer)
        if res.answered
        else f"none: the episode ended ({res.end_reason}) without an <answer>"
    )
    console.print(
        f"[bold]answer:[/bold] {answer}   end: {res.end_reason}   "
        f"tokens in main {tok.main_visual}v+{tok.main_text}t, sub "
        f"{tok.sub_visual}v+{tok.sub_text}t, "
        f"generated {tok.generated}   latency {res.latency_s:.2f}s"
    )
