"""The dataset layer (docs/ARCHITECTURE.md §1 `data/`), below agent/: row types, the parquet schema,
the screening of rows, the ParaVT-Synth builder, the sequential→parallel converter, the trace
checker and the authors' release import."""

from paravt.data.rows import ExtraInfo, Message, RLRow, SFTRow, TextPart, VideoPart
from paravt.data.schema import read_rows, write_rows

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
