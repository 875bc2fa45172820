"""ChatCodec: the token-exact renderer trajectories are built from (docs/ARCHITECTURE.md §3).

A trajectory is a concatenation of pieces, never a re-rendering:

    encode_message(system) + encode_message(user with video) +  # prompt, mask 0
    generation_prompt("<think>\\n") +                # scaffolding + forced prefix, mask 0
    sampled ids (ending with <|im_end|> when finish_reason == "stop") +
                                                  # mask 1, sampling logprobs
    close_turn(sampled ids) +                     # "\\n" (or "<|im_end|>\\n"), mask 0
    encode_message(tool message) + generation_prompt(...) + ...

Token accounting rules:
- ``encode_message(m)`` is ``<|im_start|>{role}\\n{content}<|im_end|>\\n`` with every media marker
  expanded by the processor (vision pads, and Qwen3-VL's per-frame ``<t seconds>`` text); a
  ``tool`` message is
  ``<|im_start|>user\\n<tool_response>\\n{content}\\n</tool_response><|im_end|>\\n``.
- ``generation_prompt(prefix)`` = ``<|im_start|>assistant\\n`` + prefix: NOT sampled.
- The sampled ids are exactly what the generator returned, including the stop token
  ``<|im_end|>``: they are the only loss-bearing ids.
- ``close_turn(sampled)`` is scaffolding: ``"\\n"`` when the sample ended with ``<|im_end|>``,
  else ``<|im_end|>`` + ``"\\n"`` (a response cut by ``length`` is closed by the template).
Provided the sampled text tokenizes canonically, the concatenation equals the chat template's
rendering of the same conversation (the golden test checks this for both families).

Tool content is data, never control: in a ``tool`` message (tool output, python stdout, sub-agent
summaries, error texts quoting the model) the text of any added token (``<|im_start|>``,
``<|im_end|>``, ``<|video_pad|>``, ``<tool_call>``, …) is encoded as ordinary characters, so that
a tool cannot forge a turn, a system message, a vision placeholder or a protocol tag in the mask-0
observation. Only the scaffolding and the media markers the codec itself inserts are control
tokens. Tool content without such text encodes exactly as the template renders it.

Video markers: a message's text holds one ``<video>`` / ``<image>`` per media item. For
Qwen2.5-VL ``<video>`` becomes ``<|vision_start|><|video_pad|><|vision_end|>``; for Qwen3-VL a
bare ``<|video_pad|>``, which its processor expands into per-frame ``<t seconds><|vision_start|>
pads<|vision_end|>`` (the format Qwen3-VL was trained on). Images are
``<|vision_start|><|image_pad|><|vision_end|>`` in both.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from paravt.errors import ModelError
from paravt.models.base import ChatMessage
from paravt.models.features import FEATURES
from paravt.models.media import processor_media_kwargs
from paravt.models.tokenizer import IMAGE_MARKER, VIDEO_MARKERS
from paravt.protocol.tags import IM_END, IM_START, TOOL_RESPONSE_CLOSE, TOOL_RESPONSE_OPEN
from paravt.video.types import Frames

VIDEO_TAG, IMAGE_TAG = "<video>", "<image>"
# vision placeholders: never sampled (a generator suppresses them; a sampled one breaks the next
# turn)
VISION_TOKENS = ("<|image_pad|>", "<|video_pad|>", "<|vision_start|>", "<|vision_end|>")
_MARKER_RE = re.compile(r"(<video>|<image>)")


@dataclass(frozen=True, eq=False)
class Encoded:
    """Token ids of one piece of a trajectory and the media whose placeholders they contain."""

    ids: tuple[int, ...]
    videos: tuple[Frames, ...] = ()
    images: tuple[Frames, ...] = ()

    def __len__(self) -> int:
        return len(self.ids)


def family_of_processor(processor: Any) -> str:
    name = type(processor).__name__
    if name.startswith("Qwen3VL"):
        return "qwen3_vl"
    if name.startswith("Qwen2_5_VL"):
        return "qwen2_5_vl"
    raise ModelError(f"processor {name} is not supported; use a Qwen2.5-VL or Qwen3-VL processor")


def to_template_messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """ChatMessages as chat-template dicts (content split into text/video/image parts)."""
    out: list[dict[str, Any]] = []
    for m in messages:
        parts: list[dict[str, Any]] = []
        for piece in _MARKER_RE.split(m.content):
            if piece == VIDEO_TAG:
                parts.append({"type": "video"})
            elif piece == IMAGE_TAG:
                parts.append({"type": "image"})
            elif piece:
                parts.append({"type": "text", "text": piece})
        out.append({"role": m.role, "content": parts})
    return out


def _merge(pieces: Sequence[tuple[str, bool]]) -> list[tuple[str, bool]]:
    """Adjacent non-literal pieces joined (the tokenizer must see them as one text), empties
    dropped."""
    out: list[tuple[str, bool]] = []
    for text, literal in pieces:
        if not text:
            continue
        if out and not literal and not out[-1][1]:
            out[-1] = (out[-1][0] + text, False)
        else:
            out.append((text, literal))
    return out


class ChatCodec:
    """Renders ChatMessages into token ids exactly as training sees them."""

    def __init__(self, processor: Any, family: str | None = None) -> None:
        self.processor = processor
        self.tokenizer = processor.tokenizer
        self.family = family or family_of_processor(processor)
        tok = self.tokenizer
        self.im_start_id: int = tok.convert_tokens_to_ids(IM_START)
        self.im_end_id: int = tok.convert_tokens_to_ids(IM_END)
        self.pad_id: int = (
            tok.pad_token_id
            if tok.pad_token_id is not None
            else tok.convert_tokens_to_ids("<|endoftext|>")
        )
        self.newline_ids: tuple[int, ...] = self.encode_text("\n")
        self.stop_token_ids: tuple[int, ...] = (self.im_end_id,)
        self.vision_token_ids: tuple[int, ...] = tuple(
            tok.convert_tokens_to_ids(t) for t in VISION_TOKENS
        )
        added = tok.get_added_vocab()  # special tokens and protocol tags: text -> id
        self.control_ids: frozenset[int] = frozenset(added.values())
        self._control_re = re.compile(
            "|".join(re.escape(t) for t in sorted(added, key=len, reverse=True))
        )

    # ---- text -----------------------------------------------------------------------------
    def encode_text(self, text: str) -> tuple[int, ...]:
        """Plain text (no media markers) → ids, no BOS/EOS added."""
        return tuple(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def encode_literal(self, text: str) -> tuple[int, ...]:
        """``text`` as ordinary characters: every added-token string in it (``<|im_start|>``,
        ``<think>``, …) is split into plain byte-level tokens, never its control token."""
        ids: list[int] = []
        pos = 0
        for m in self._control_re.finditer(text) if self.control_ids else ():
            ids += self.encode_text(text[pos : m.start()])
            ids += self._forged(m.group())
            pos = m.end()
        return tuple(ids + list(self.encode_text(text[pos:])))

    def _forged(self, token_text: str) -> list[int]:
        """One added-token string as plain text: its first character and the rest encoded apart
        (neither part is an added token); per character if a part still matched one."""
        head, rest = token_text[:1], token_text[1:]
        ids = [*self._split(head), *self._split(rest)]
        if any(i in self.control_ids for i in ids):
            ids = [i for ch in token_text for i in self._split(ch)]
        return ids

    def _split(self, text: str) -> list[int]:
        return list(
            self.tokenizer(text, add_special_tokens=False, split_special_tokens=True)["input_ids"]
        )

    def decode(self, ids: Sequence[int], *, skip_special_tokens: bool = True) -> str:
        """Text of ``ids``; special scaffolding (<|im_end|>, vision tokens) dropped by default,
        protocol tags (<think>, <tool_call>, …) kept."""
        return self.tokenizer.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def render(self, msg: ChatMessage) -> str:
        """The message's template text with media markers in the family's placeholder form."""
        body = msg.content.replace(VIDEO_TAG, VIDEO_MARKERS[self.family]).replace(
            IMAGE_TAG, IMAGE_MARKER
        )
        if msg.role == "tool":
            return f"{IM_START}user\n{TOOL_RESPONSE_OPEN}\n{body}\n{TOOL_RESPONSE_CLOSE}{IM_END}\n"
        return f"{IM_START}{msg.role}\n{body}{IM_END}\n"

    # ---- messages --------------------------------------------------------------------------
    def encode_message(self, msg: ChatMessage) -> Encoded:
        n_vid, n_img = msg.content.count(VIDEO_TAG), msg.content.count(IMAGE_TAG)
        if n_vid != len(msg.videos) or n_img != len(msg.images):
            raise ModelError(
                f"a {msg.role} message has {n_vid} {VIDEO_TAG} / {n_img} {IMAGE_TAG} markers but "
                f"{len(msg.videos)} videos / {len(msg.images)} images; put exactly one marker "
                "per media item"
            )
        if msg.role == "tool" and self.control_ids and self._control_re.search(msg.content):
            return self._encode_guarded(msg)
        return self._encode_rendered(self.render(msg), msg.videos, msg.images)

    def _encode_rendered(
        self, text: str, videos: Sequence[Frames], images: Sequence[Frames]
    ) -> Encoded:
        if not videos and not images:
            return Encoded(ids=self.encode_text(text))
        kw = processor_media_kwargs(videos, images)
        enc = self.processor(text=[text], **kw)
        FEATURES.put_output(self.processor, enc, videos, images)  # reused by the forward inputs
        return Encoded(
            ids=tuple(int(i) for i in enc["input_ids"][0]),
            videos=tuple(videos),
            images=tuple(images),
        )

    def _encode_guarded(self, msg: ChatMessage) -> Encoded:
        """A tool message whose text holds added-token strings: the rendering is cut at each of
        them; the pieces between are encoded as usual (a piece's media go with it), the forged
        strings as plain text (``encode_literal``)."""
        head, tail = self.render(ChatMessage("tool", "\x00")).split("\x00")
        pieces: list[tuple[str, bool]] = [(head, False)]  # (text, literal)
        for part in _MARKER_RE.split(msg.content):
            if part in (VIDEO_TAG, IMAGE_TAG):
                pieces.append((self.render_markers(part), False))
                continue
            pos = 0
            for m in self._control_re.finditer(part):
                pieces += [(part[pos : m.start()], False), (m.group(), True)]
                pos = m.end()
            pieces.append((part[pos:], False))
        pieces.append((tail, False))
        videos, images = list(msg.videos), list(msg.images)
        ids: list[int] = []
        for text, literal in _merge(pieces):
            if literal:
                ids += self._forged(text)
                continue
            nv, ni = text.count(VIDEO_MARKERS[self.family]), text.count(IMAGE_MARKER)
            ids += self._encode_rendered(text, videos[:nv], images[:ni]).ids
            videos, images = videos[nv:], images[ni:]
        return Encoded(ids=tuple(ids), videos=msg.videos, images=msg.images)

    def render_markers(self, marker: str) -> str:
        return VIDEO_MARKERS[self.family] if marker == VIDEO_TAG else IMAGE_MARKER

    def encode_messages(self, messages: Sequence[ChatMessage]) -> Encoded:
        """Concatenation of ``encode_message`` over ``messages``."""
        ids: list[int] = []
        videos: list[Frames] = []
        images: list[Frames] = []
        for m in messages:
            e = self.encode_message(m)
            ids += e.ids
            videos += e.videos
            images += e.images
        return Encoded(ids=tuple(ids), videos=tuple(videos), images=tuple(images))

    def generation_prompt(self, prefix: str = "") -> tuple[int, ...]:
        """``<|im_start|>assistant\\n`` + the forced ``prefix`` (e.g. ``"<think>\\n"``); not
        sampled."""
        return self.encode_text(f"{IM_START}assistant\n{prefix}")

    def end_of_turn_ids(self) -> tuple[int, ...]:
        """``<|im_end|>`` + ``"\\n"``: what closes an assistant turn in the template."""
        return (self.im_end_id, *self.newline_ids)

    def close_turn(self, sampled_ids: Sequence[int]) -> tuple[int, ...]:
        """Scaffolding appended after a sampled response: ``"\\n"`` if it ended with
        ``<|im_end|>`` (the stop token is sampled), else ``<|im_end|>\\n``."""
        if sampled_ids and sampled_ids[-1] == self.im_end_id:
            return self.newline_ids
        return self.end_of_turn_ids()
