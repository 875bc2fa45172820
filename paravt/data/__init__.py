"""Data layer (docs/ARCHITECTURE.md §1 `data/`): parquet schema, ParaVT-Synth builder,
sequential→parallel
converter, trace checker, DAPO pre-filter, authors' release import and benchmark loaders."""

from paravt.data.schema import (
    ExtraInfo,
    Message,
    RLRow,
    SFTRow,
    TextPart,
    VideoPart,
    read_rows,
    write_rows,
)

__all__ = [
    "ExtraInfo",
    "Message",
    "RLRow",
    "SFTRow",
    "TextPart",
    "VideoPart",
    "read_rows",
    "write_rows",
]
