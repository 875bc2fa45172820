"""`paravt video probe|frames`: inspect a video and dump sampled frames with a contact sheet."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import typer
from PIL import Image
from rich.table import Table

from paravt import video
from paravt.cli.output import stdout_console
from paravt.video.sheet import contact_sheet, format_timestamp

app = typer.Typer(help="Probe videos and sample frames.", no_args_is_help=True)
console = stdout_console()


@app.command("probe")
def probe(
    file: Path = typer.Argument(..., help="A video file."),
    as_json: bool = typer.Option(False, "--json", help="Print JSON instead of a table."),
) -> None:
    """Print duration, fps, frame count, size, codec and start time."""
    info = video.probe(file)
    if as_json:
        typer.echo(json.dumps(dataclasses.asdict(info)))
        return
    table = Table(title=str(file), show_header=False)
    for field in dataclasses.fields(info):
        table.add_row(field.name, str(getattr(info, field.name)))
    console.print(table)


@app.command("frames")
def frames(
    file: Path = typer.Argument(..., help="A video file."),
    start: float = typer.Option(..., "--start", help="Window start, seconds from the first frame."),
    end: float = typer.Option(..., "--end", help="Window end, seconds."),
    nframes: int = typer.Option(
        8, "--nframes", min=1, help="Frames sampled uniformly over the window."
    ),
    out: Path = typer.Option(
        ..., "--out", help="Directory for frame_XXX.png and contact_sheet.png."
    ),
    max_pixels: int | None = typer.Option(
        None, "--max-pixels", help="Resize to ≤ this many pixels."
    ),
    size_factor: int = typer.Option(
        32, "--size-factor", min=1, help="Resize to multiples of this (28/32)."
    ),
) -> None:
    """Sample NFRAMES frames from [START, END]; write PNGs and a contact sheet."""
    sampled = video.sample_frames(
        file, start, end, nframes=nframes, max_pixels=max_pixels, size_factor=size_factor
    )
    out.mkdir(parents=True, exist_ok=True)
    for i, array in enumerate(sampled.array):
        Image.fromarray(array).save(out / f"frame_{i:03d}.png")
    contact_sheet(sampled).save(out / "contact_sheet.png")
    stamps = ", ".join(format_timestamp(t) for t in sampled.timestamps)
    console.print(
        f"wrote {len(sampled)} frames ({sampled.width}×{sampled.height}) to {out}: {stamps}"
    )
