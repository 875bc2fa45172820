"""Token accounting of one episode (docs/ARCHITECTURE.md §7): input tokens of the main agent and of
its
sub-agents (visual and text, summed over every generation request) and generated tokens."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from paravt.models.chat import ChatCodec


@dataclass(frozen=True)
class TokenRow:
    """Tokens of one rollout. The episode produces this record (``EpisodeResult.tokens``) and the
    eval results file stores it as is."""

    main_visual: int = 0
    main_text: int = 0
    sub_visual: int = 0
    sub_text: int = 0
    generated: int = 0

    @property
    def main_input(self) -> int:
        """Input tokens of the main agent (what docs/ARCHITECTURE.md §7's T_seq / T_par model)."""
        return self.main_visual + self.main_text

    @property
    def total_input(self) -> int:
        return self.main_visual + self.main_text + self.sub_visual + self.sub_text


@dataclass
class Tally:
    """The running count an episode keeps while it plays."""

    main_visual: int = 0
    main_text: int = 0
    sub_visual: int = 0
    sub_text: int = 0
    generated: int = 0

    def add_prompt(self, *, visual: int, total: int, sub: bool = False) -> None:
        if sub:
            self.sub_visual += visual
            self.sub_text += total - visual
        else:
            self.main_visual += visual
            self.main_text += total - visual

    def add(self, row: TokenRow) -> None:
        """Add a record's counts (a dispatch mode's sub-agent tokens, ``modes.Dispatched``)."""
        self.main_visual += row.main_visual
        self.main_text += row.main_text
        self.sub_visual += row.sub_visual
        self.sub_text += row.sub_text
        self.generated += row.generated

    def freeze(self) -> TokenRow:
        return TokenRow(
            self.main_visual, self.main_text, self.sub_visual, self.sub_text, self.generated
        )


def count_vision_tokens(codec: ChatCodec, ids: Sequence[int]) -> int:
    """Vision placeholder tokens (pads and their start/end markers) in ``ids``."""
    vision = set(codec.vision_token_ids)
    return sum(1 for i in ids if i in vision)
