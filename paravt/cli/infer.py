"""`paravt infer`: one question on one video, printed as a readable transcript (or JSON)."""

from __future__ import annotations

import asyncio
import json
from dataclasses import asdict
from pathlib import Path

import typer
from rich.panel import Panel
from rich.table import Table

from typing import TYPE_CHECKING

from paravt.config import TrainConfig
from paravt.errors import ParavtError
from paravt.cli.output import fail, stdout_console

if TYPE_CHECKING:
    from paravt.agent import EpisodeResult

console = stdout_console()


def _options(text: str | None) -> tuple[str, ...] | None:
    """"A) red B) blue" or "red|blue" → ("A) red", "B) blue")."""
    if not text:
        return None
    import re

    if "|" in text:
        return tuple(o.strip() for o in text.split("|") if o.strip())
    parts = re.split(r"\s(?=[A-Z][).:]\s)", " " + text.strip())
    return tuple(p.strip() for p in parts if p.strip())


def infer(
    model: str = typer.Option(..., "--model", help="HF checkpoint dir, or http(s) URL of an OpenAI-compatible server"),
    video: Path = typer.Option(..., "--video", exists=True, dir_okay=False),
    question: str = typer.Option(..., "--question"),
    mode: str = typer.Option("parallel", "--mode", help="parallel | sequential | none"),
    options: str | None = typer.Option(None, "--options", help='"A) ... B) ..." or "opt1|opt2"'),
    nframes: int = typer.Option(16, "--nframes", help="Overview frames"),
    temperature: float = typer.Option(0.0, "--temperature"),
    max_new_tokens: int = typer.Option(256, "--max-new-tokens"),
    processor: str | None = typer.Option(None, "--processor", help="Processor dir (with a URL model)"),
    as_json: bool = typer.Option(False, "--json"),
) -> None:
    """Run one episode and print its transcript."""
    from paravt.agent import EpisodeInput, EpisodeSettings, run_episode
    from paravt.eval.runner import open_backend

    if mode not in ("parallel", "sequential", "none"):
        raise fail(f"--mode {mode!r} must be parallel, sequential or none") from None
    cfg = TrainConfig()
    cfg.sampling.max_new_tokens = max_new_tokens
    settings = EpisodeSettings.from_config(cfg, mode=mode, temperature=temperature)  # type: ignore[arg-type]
    try:
        backend = open_backend(model, processor_dir=processor)
    except (ParavtError, ValueError, OSError) as err:
        raise fail(str(err)) from None
    opts = _options(options)
    inp = EpisodeInput("infer", str(video.resolve()), question, "mcq" if opts else "oe", "", opts, nframes)
    res = asyncio.run(run_episode(inp, generator=backend.generator, codec=backend.codec, settings=settings,
                                  tools=backend.tools, episode_id="infer"))
    if as_json:
        typer.echo(json.dumps(episode_json(res), indent=1))
    else:
        render(res)


def episode_json(res: "EpisodeResult") -> dict:
    return {
        "answer": res.answer, "end_reason": res.end_reason, "error": res.error,
        "turns": [t.text for t in res.main.turns],
        "calls": [c.to_json() for c in res.calls],
        "subagents": [{"index": s.index, "text": s.turns[0].text if s.turns else ""} for s in res.subs],
        "tokens": asdict(res.tokens), "latency_s": res.latency_s,
    }


def render(res: "EpisodeResult") -> None:
    for i, turn in enumerate(res.main.turns, start=1):
        console.print(Panel(turn.text, title=f"main agent · turn {i} · {turn.finish_reason}", expand=False))
        if turn.calls:
            t = Table(title=f"tool calls of turn {i}")
            for col in ("#", "tool", "window", "status", "result / sub-agent summary"):
                t.add_column(col)
            for c in turn.calls:
                window = f"{c.start:.1f}–{c.end:.1f}s" if c.start is not None and c.end is not None else "-"
                t.add_row(str(c.index), c.name or "?", window, "ok" if c.ok else "[red]error[/red]",
                          c.summary if c.ok else (c.error or ""))
            console.print(t)
    tok = res.tokens
    console.print(f"[bold]answer:[/bold] {res.answer!r}   end: {res.end_reason}   "
                  f"tokens in main {tok.main_visual}v+{tok.main_text}t, sub {tok.sub_visual}v+{tok.sub_text}t, "
                  f"generated {tok.generated}   latency {res.latency_s:.2f}s")
    if res.error:
        console.print(f"[yellow]episode error:[/yellow] {res.error}")
