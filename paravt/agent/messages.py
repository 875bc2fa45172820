"""The text of an episode's turns: the opening messages the main agent reads, its sampled text as
the rewards see it, and the ONE tool-response turn that carries every call's result back."""

from __future__ import annotations

from collections.abc import Sequence

from paravt.agent.modes import DispatchMode
from paravt.agent.settings import EpisodeInput, EpisodeSettings
from paravt.agent.trajectory import CallRecord
from paravt.models.base import ChatMessage, GenOutput
from paravt.models.chat import ChatCodec
from paravt.protocol import prompts, tags
from paravt.protocol.parser import ParsedCall
from paravt.protocol.prompts import ToolSpec
from paravt.tools import Observation
from paravt.video.types import Frames, VideoInfo


def system_text(s: EpisodeSettings, mode: DispatchMode, specs: Sequence[ToolSpec]) -> str:
    """The main agent's system prompt in ``mode`` with the tools ``specs``: ``s.system_text`` when
    set, else the mode's template at ``s.prompt_version`` and ``s.k_max`` (the one text an episode
    opens with and SFT's direct traces under the tool prompt get, ``paravt.rl.direct``)."""
    return s.system_text or prompts.system_prompt(
        mode.prompt, specs if mode.uses_tools else (), version=s.prompt_version, k_max=s.k_max
    )


def opening_messages(
    inp: EpisodeInput,
    s: EpisodeSettings,
    mode: DispatchMode,
    specs: Sequence[ToolSpec],
    info: VideoInfo | None,
    overview: Frames | None,
    error: str | None,
) -> list[ChatMessage]:
    """The system prompt of the dispatch mode (``system_text``; none with ``system_prompt=False``)
    and the question with the overview video (or a note that the video could not be opened),
    ``s.user_suffix`` on a line of its own after it."""
    system = system_text(s, mode, specs)
    if info is None:
        question = f"{inp.question}\n(The video could not be opened: {error})"
        user = prompts.user_prompt(
            question, inp.options, duration=0.0, nframes=0, version=s.prompt_version
        )
    else:
        user = prompts.user_prompt(
            inp.question,
            inp.options,
            duration=info.duration,
            nframes=len(overview) if overview else 0,
            fps=info.fps,
            size=(info.width, info.height),
            version=s.prompt_version,
        )
    if s.user_suffix:
        user = f"{user}\n{s.user_suffix}"
    videos = (overview,) if overview is not None else ()
    opening = [ChatMessage("user", user, videos=videos)]
    return [ChatMessage("system", system), *opening] if s.system_prompt else opening


def raw_text(codec: ChatCodec, out: GenOutput) -> str:
    """The response as sampled, special tokens kept (``<|im_start|>`` loops must reach the
    degenerate-output rule, docs/ARCHITECTURE.md §2) but the closing ``<|im_end|>`` dropped. A
    chat backend that re-tokenized server text has already lost special tokens: its text is used
    as is."""
    if not out.token_ids:
        return out.text
    return codec.decode(out.token_ids, skip_special_tokens=False).removesuffix(tags.IM_END)


def compose_tool_turn(
    turn: int, calls: Sequence[ParsedCall], obs: Sequence[Observation], latency: float
) -> tuple[list[str], list[Frames], list[CallRecord]]:
    """The ONE tool-response turn: a labelled line per call in call order, the frames shown inline,
    and the call records."""
    lines: list[str] = []
    videos: list[Frames] = []
    records: list[CallRecord] = []
    for i, (call, o) in enumerate(zip(calls, obs, strict=True), start=1):
        start, end = o.window if o.window else (call.window or (None, None))
        text = tags.defuse_observation(
            o.text
        )  # observation text is data: one rule for every backend
        if o.error is not None:
            body = f"error: {tags.defuse_observation(o.error)}"
        elif o.frames is not None:
            videos.append(o.frames)
            body = tags.with_media_marker(text)
        else:
            body = text
        lines.append(tags.render_result_line(i, start, end, body))
        records.append(
            CallRecord(turn, i, call.name, start, end, o.error is None, o.error, o.text, latency)
        )
    return lines, videos, records
