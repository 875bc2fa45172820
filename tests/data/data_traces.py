"""Hand-written traces for the check and convert tests."""

from __future__ import annotations

from paravt.data.rows import ExtraInfo, Message, SFTRow, TextPart, VideoPart
from paravt.protocol import tags as T

DURATION = 120.0


def extra(answer: str = "B") -> ExtraInfo:
    return ExtraInfo(
        id="t",
        task="mcq",
        question="What colour?",
        answer=answer,
        duration=DURATION,
        options=("A. red", "B. blue"),
        nframes=8,
    )


def head() -> list[Message]:
    return [
        Message("system", "sys"),
        Message("user", (VideoPart("v.mp4", 0.0, DURATION, 8), TextPart("\nQ"))),
    ]


def call_turn(think: str, windows: list[tuple[float, float]]) -> Message:
    return Message(
        "assistant", T.render_tool_turn(think, [T.render_crop_call(s, e) for s, e in windows])
    )


def results(windows: list[tuple[float, float]], texts: list[str]) -> Message:
    return Message(
        "tool",
        T.render_tool_response_body(
            [
                T.render_result_line(i + 1, s, e, t)
                for i, ((s, e), t) in enumerate(zip(windows, texts))
            ]
        ),
    )


def answer(think: str = "It is blue.", ans: str = "B") -> Message:
    return Message("assistant", T.render_answer(think, ans))


def parallel(msgs: list[Message], mode: str = "parallel", ans: str = "B") -> SFTRow:
    return SFTRow("t", "main", mode, tuple(msgs), ("v.mp4",), extra(ans))  # type: ignore[arg-type]


def seq_obs(s: float, e: float, summary: str | None) -> Message:
    return Message(
        "tool",
        (
            TextPart(f"[1] {T.fmt_time(s)}–{T.fmt_time(e)}: 16 frames "),
            VideoPart("v.mp4", s, e, 16),
        ),
        summary=summary,
    )
