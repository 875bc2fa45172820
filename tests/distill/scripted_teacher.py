"""A scripted OpenAI-compatible teacher for the distillation tests: a FastAPI app served by
uvicorn on 127.0.0.1 (a real HTTP server; the client under test is the real one).

It knows each row's gold (``Script``) by the question and the video length it reads from the
prompt, and replies as a noisy teacher would: tool calls in a rotating noise style (python-call,
single quotes, trailing comma + prose, ``<tool_code>``, untagged, garbled → needs the LLM
cleanup), refusals for the keys in ``refuse``, an answer after the tool responses, sub-agent
summaries from the window it is shown, and EVA Executor rounds. ``fail_first`` requests get a
429 first (the client must back off and retry). It records what it saw (images per request,
bank examples in EVA system prompts).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from live_server import RunningServer  # noqa: F401 - the tests start the teachers with it
from paravt.data.schema import read_rows

STYLES = ("python", "single", "trailing", "tool_code", "untagged", "garbled", "canonical")


@dataclass(frozen=True)
class Script:
    answer: str  # what the teacher answers
    needle: tuple[float, float]
    duration: float
    style: str = "canonical"
    behaviour: str = "good"  # good | bad_window | start_ge_end | empty


@dataclass
class State:
    scripts: dict[tuple[str, str], Script]
    refuse: set[tuple[str, str]] = field(default_factory=set)
    fail_first: int = 0
    requests: int = 0
    failed: int = 0
    images: list[int] = field(default_factory=list)
    bank_examples_seen: int = 0
    summaries: int = 0
    cleanups: int = 0
    reflections: int = 0


def key(duration: float, question: str) -> tuple[str, str]:
    return (f"{float(duration):.2f}".rstrip("0").rstrip("."), question.strip())


def unique_rows(synth: Path) -> list:
    """The synth set's prompt rows of its TRAIN videos (base.parquet's kind=rl rows), one per
    (video length, question): the teacher's lookup key."""
    rows, seen = [], set()
    for r in read_rows(synth / "base.parquet"):
        if r.kind != "rl":
            continue
        k = key(r.extra_info.duration, r.extra_info.question)
        if k not in seen:
            seen.add(k)
            rows.append(r)
    return rows


def scripts_for(
    rows: list, behaviours: Mapping[int, str] | None = None
) -> dict[tuple[str, str], Script]:
    """A script per row: the gold answer (MCQ as its option text, which the teacher writes as the
    letter), noise style rotating over `STYLES`; ``behaviours`` maps a row index to a misbehaviour
    (``wrong``: a wrong answer, else a `Script.behaviour`)."""
    out = {}
    for i, r in enumerate(rows):
        e = r.extra_info
        behaviour = (behaviours or {}).get(i, "good")
        answer = e.answer
        if behaviour == "wrong":
            answer = "Z" if e.task == "mcq" else "[0, 1]" if e.task == "tvg" else "purple banana"
        elif e.task == "mcq" and e.options:
            answer = e.options[
                "ABCDEFGH".index(e.answer)
            ]  # "D. magenta square": written as the letter
        out[key(e.duration, e.question)] = Script(
            answer,
            (e.needle_start, e.needle_end),
            e.duration,
            STYLES[i % len(STYLES)],
            "good" if behaviour == "wrong" else behaviour,
        )
    return out


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content if p.get("type") == "text")


def _images(messages: list[dict[str, Any]]) -> int:
    return sum(
        1
        for m in messages
        if not isinstance(m["content"], str)
        for p in m["content"]
        if p.get("type") == "image_url"
    )


def _call(style: str, s: float, e: float) -> str:
    think = "<think>The overview does not show it clearly. I will look at a window.</think>\n"
    return {
        "python": f'I will look at a window first.\n<tool_call>crop_video("video.mp4", {s:g}, '
        f"{e:g})</tool_call>",
        "single": think
        + f"<tool_call>{{'name': 'crop_video', 'arguments': {{'start_time': {s:g}, 'end_time': "
        f"{e:g}}}}}</tool_call>",
        "trailing": think
        + f'<tool_call>{{"name": "crop_video", "arguments": {{"start_time": {s:g}, "end_time": '
        f"{e:g},}},}}"
        "</tool_call>\nLet me see what it shows.",
        "tool_code": think + f"<tool_code>crop_video(start={s:g}, end={e:g})</tool_code>",
        "untagged": think + f"crop_video({s:g}, {e:g})",
        "garbled": think + f"<tool_call>crop the video from {s:g} to {e:g}</tool_call>",
        "canonical": think
        + f'<tool_call>{{"name": "crop_video", "arguments": {{"start_time": {s:g}, "end_time": '
        f"{e:g}}}}}</tool_call>",
    }[style]


def _windows(sc: Script) -> tuple[tuple[float, float], tuple[float, float]]:
    """A first window away from the needle, then one around it (disjoint, not adjacent)."""
    ns, ne = sc.needle
    near = (max(0.0, float(int(ns) - 4)), min(sc.duration, float(int(ne) + 5)))
    far = (0.0, 20.0) if near[0] > 24 else (sc.duration - 20, sc.duration)
    return far, near


def _main(sc: Script, n_responses: int) -> str:
    far, near = _windows(sc)
    if n_responses == 0:
        if sc.behaviour == "bad_window":
            return _call("canonical", sc.duration + 10, sc.duration + 40)
        if sc.behaviour == "start_ge_end":
            return _call("canonical", 30, 10)
        return _call(sc.style, *far)
    if n_responses == 1:
        return _call("canonical", *near)
    if sc.behaviour == "empty":
        return "<think>The second window shows it.</think>\n<answer></answer>"
    return (
        f"<think>The second window shows the event near {near[0]:g} "
        f"s.</think>\n<answer>{sc.answer}</answer>"
    )


def _eva(sc: Script, n_responses: int) -> str:
    d, (ns, ne) = sc.duration, sc.needle
    fs = (
        '<tool_call>{{"name": "frame_select", "arguments": {{"start_time": {}, "end_time": {}, '
        '"nframes": {}, "resize": {}}}}}</tool_call>'
    )
    if n_responses == 0:
        return "<think>Plan: scan the whole video cheaply, then zoom in.</think>\n" + fs.format(
            0, d, 10, 0.1
        )
    if n_responses == 1:
        return (
            "<think>I found nothing in the scan. I will try a random part.</think>\n"
            + fs.format(10, 30, 20, 0.3)
        )
    if n_responses == 2:
        return f"<think>The event is near {ns:g} s. I will zoom in.</think>\n" + fs.format(
            max(0, int(ns) - 2), min(int(d), int(ne) + 2), 30, 0.5
        )
    return f"<think>The zoom shows it.</think>\n<answer>{sc.answer}</answer>"


def make_app(state: State, *, role: str = "primary") -> FastAPI:
    app = FastAPI()

    @app.post("/v1/chat/completions")
    async def chat(request: Request) -> JSONResponse:
        body = await request.json()
        state.requests += 1
        if state.failed < state.fail_first:
            state.failed += 1
            return JSONResponse(
                {"error": "rate limited"}, status_code=429 if state.fail_first < 100 else 500
            )
        msgs = body["messages"]
        state.images.append(_images(msgs))
        return JSONResponse(_reply(state, msgs, role))

    return app


def _reply(state: State, msgs: list[dict[str, Any]], role: str) -> dict[str, Any]:
    system, first = _text(msgs[0]["content"]), _text(msgs[-1]["content"]) if len(msgs) == 1 else ""
    if first.startswith("You audit"):
        state.reflections += 1
        proposal = json.loads(first.rsplit("\n\n", 1)[1])["proposal"]
        if proposal["end_time"] - proposal["start_time"] > 40:
            return _completion("NO_CHANGE")
        # widen a zoom to 40 s around its centre, 1 frame per 2 s at full resolution
        c = (proposal["start_time"] + proposal["end_time"]) / 2
        text = json.dumps(
            {"start_time": max(0, c - 20), "end_time": c + 20, "nframes": 20, "resize": 1.0}
        )
        return _completion(text)
    if first.startswith("Rewrite the text below"):
        state.cleanups += 1
        s, e = re.search(r"from (\S+) to (\S+)</tool_call>", first).groups()
        text = (
            '<think>I will look at a window.</think>\n<tool_call>{"name": "crop_video", '
            f'"arguments": {{"start_time": {s}, "end_time": {e}}}}}</tool_call>'
        )
    elif system.startswith("You watch one time window"):
        state.summaries += 1
        text = _summary(state, _text(msgs[1]["content"]))
    else:
        user = _text(msgs[1]["content"])
        d = re.search(r"Video: ([\d.]+) s", user).group(1)
        q = re.search(r"Question: (.*?)(?:\nOptions:|$)", user, re.S).group(1)
        k = key(float(d), q)
        n = sum(
            1
            for m in msgs
            if m["role"] == "user" and _text(m["content"]).startswith("<tool_response>")
        )
        if k in state.refuse and role == "primary":
            text = "I'm sorry, but I can't help with that request."
        elif "frame_select" in system:
            state.bank_examples_seen += "Successful searches on similar questions" in system
            text = _eva(state.scripts[k], n)
        else:
            text = _main(state.scripts[k], n)
    return _completion(text)


def _completion(text: str) -> dict[str, Any]:
    usage = {
        "prompt_tokens": 100,
        "completion_tokens": len(text.split()),
        "total_tokens": 100 + len(text.split()),
    }
    return {
        "id": "x",
        "object": "chat.completion",
        "model": "scripted",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": usage,
    }


def _summary(state: State, user: str) -> str:
    s, e = (float(x) for x in re.search(r"\(([\d.]+)-([\d.]+) s\)", user).groups())
    q = re.search(r"Question: (.*)", user).group(1)
    for sc_key, sc in state.scripts.items():
        if sc_key[1] == q.strip() and min(e, sc.needle[1]) > max(s, sc.needle[0]):
            return (
                f"The event appears from {max(s, sc.needle[0]):g} s to {min(e, sc.needle[1]):g} s."
            )
    return "Nothing relevant appears in this window."
