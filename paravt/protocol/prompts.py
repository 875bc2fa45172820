"""Prompt rendering from the versioned templates in ``paravt/protocol/templates/<version>/``.

Templates are ``string.Template`` files (``$name`` placeholders; literal braces are safe). Every
text that shows media holds exactly one ``<video>`` marker per clip; the chat layer replaces it.
Prompts are deliberately short: a tiny model with a 2K context is trained on them.

Changing a template's wording means adding a new version directory (``v2``) and a line here,
never editing ``v1`` in place (a saved run's ``prompt_version`` keeps naming the text it ran).

Versions (the default, ``PROMPT_VERSION``, is written once in ``paravt.config``):
- v1: first version (system prompts for parallel / sequential / none / eva; user; sub-agent;
  sequential observation). Its tool prompts allow answering directly "if the overview is enough"
  and its user turn states "N frames shown".
- v2: the paper's RL system prompt (Appendix C, docs/PAPER digest): think about which segments
  hold the evidence, call crop_video in ``<tool_call>`` JSON (several disjoint windows in one turn
  in parallel mode), answer after the ``<tool_response>``; only that JSON format, never
  ``<tool_code>`` or Python syntax, never the same window twice; NO licence to skip the tools.
  ``none`` is the reasoning prompt (think, then answer). The user turn gives the video, its
  duration, the question and the options, not the number of overview frames. Sub-agent prompts and
  the sequential observation are v1's text.

Sub-agent prompts (``subagent_messages``, picked by ``rollout.subagent_prompt``, the same text in
every version): ``summary`` (``subagent_summary.txt``, the default): no system prompt and no
question, a request for a concise factual summary of the window, given as MM:SS to MM:SS and its
length in seconds (the authors' release asks its sub-agents this way); ``question``
(``subagent_system.txt`` + ``subagent_user.txt``): a system prompt saying to report what helps
answer the question, and the question with the window. A saved run's ``prompt_version`` and
``subagent_prompt`` together name the text it ran.
"""

from __future__ import annotations

import json
import string
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any, get_args

from paravt.config import PROMPT_VERSION, DispatchMode as Mode, SubagentPrompt
from paravt.config.choices import prompt_versions
from paravt.errors import ConfigError
from paravt.protocol import tags as T

VIDEO_MARKER = "<video>"
VERSIONS = prompt_versions()  # the template directories; the tokenizer corpus covers each
_LETTERED = ("A. ", "A) ", "(A) ")


@dataclass(frozen=True)
class ToolSpec:
    """A tool as the model sees it: ``parameters`` is a JSON schema (``examples`` of a property
    feed the call example and are not printed)."""

    name: str
    description: str
    parameters: dict[str, Any] = field(default_factory=dict)

    @property
    def positional(self) -> tuple[str, ...]:
        """The parameter names a python-style call's positional arguments map to, in order:
        the schema's ``properties`` as declared (``crop_video(80, 150)`` → start_time, end_time)."""
        props = self.parameters.get("properties", {})
        return tuple(str(k) for k in props) if isinstance(props, dict) else ()


def positional_params(specs: Iterable[ToolSpec]) -> dict[str, tuple[str, ...]]:
    """Tool name → positional parameter order (``ToolSpec.positional``): what the parser's
    ``parse_calls(positional=…)`` takes for the tools of an episode."""
    return {s.name: s.positional for s in specs}


CROP_VIDEO_SPEC = ToolSpec(
    name="crop_video",
    description="Look closely at one time window of the video.",
    parameters={
        "type": "object",
        "properties": {
            "start_time": {"type": "number", "description": "start, seconds", "examples": [30]},
            "end_time": {"type": "number", "description": "end, seconds", "examples": [60]},
        },
        "required": ["start_time", "end_time"],
    },
)

FRAME_SELECT_SPEC = ToolSpec(
    name="frame_select",
    description=(
        "Select frames from a time window and see them directly. At most 1 frame per "
        "second; nframes × resized pixels is charged to a per-call and per-episode visual "
        "budget (the result says how much is left)."
    ),
    parameters={
        "type": "object",
        "properties": {
            "start_time": {"type": "number", "description": "start, seconds", "examples": [30]},
            "end_time": {"type": "number", "description": "end, seconds", "examples": [60]},
            "nframes": {
                "type": "integer",
                "description": "frames to sample (≤ 1 per second)",
                "examples": [8],
            },
            "resize": {
                "type": "number",
                "description": "scale of the native resolution, in (0, 1]",
                "examples": [0.5],
            },
        },
        "required": ["start_time", "end_time", "nframes"],
    },
)


PYTHON_SPEC = ToolSpec(
    name="python",
    description=(
        "Run Python code on the video. `video.info` (duration, fps, width, height) and "
        "`video.frames(start, end, n)` (uint8 n×H×W×3) are available, with numpy as `np` "
        "and PIL's `Image`; call `show(img)` to look at an image. Variables persist "
        "across calls; printed output is returned."
    ),
    parameters={
        "type": "object",
        "properties": {
            "code": {
                "type": "string",
                "description": "Python source",
                "examples": ["f = video.frames(0, 10, 4)\nprint(f.mean(axis=(1, 2, 3)))"],
            }
        },
        "required": ["code"],
    },
)


def system_prompt(
    mode: Mode, tools: Sequence[ToolSpec] = (), *, version: str = PROMPT_VERSION, k_max: int = 8
) -> str:
    """The main agent's system prompt. Tool modes default to ``(CROP_VIDEO_SPEC,)``; ``k_max``
    is the per-turn call limit stated in parallel mode."""
    if mode not in get_args(Mode):
        raise ConfigError(
            f"prompt mode {mode!r} is unknown; use one of {', '.join(get_args(Mode))}"
        )
    if mode == "none":
        return _render(version, "system_none")
    specs = tuple(tools) or (CROP_VIDEO_SPEC,)
    return _render(version, f"system_{mode}", k_max=str(k_max), tools=tool_section(specs, version))


def tool_section(tools: Sequence[ToolSpec], version: str = PROMPT_VERSION) -> str:
    """Name, description and JSON schema of each tool, then one call in the canonical form."""
    specs = "\n".join(
        f"- {t.name}: {t.description} Arguments: {json.dumps(strip_examples(t.parameters))}"
        for t in tools
    )
    example = T.render_tool_call(tools[0].name, example_arguments(tools[0])) if tools else ""
    return _render(version, "tools", specs=specs, example=example)


def user_prompt(
    question: str,
    options: Sequence[str] | None,
    *,
    duration: float,
    nframes: int,
    fps: float | None = None,
    size: tuple[int, int] | None = None,
    version: str = PROMPT_VERSION,
) -> str:
    """The main agent's first user turn: one ``<video>`` marker (the overview) when
    ``nframes > 0``; with ``nframes == 0`` (on-demand context) no marker, only the metadata.
    The templates pick their line: ``$meta`` (v1: the duration and "N frames shown") or ``$length``
    (v2: the duration only)."""
    meta = length = f"Video: {_secs(duration)} s ({T.fmt_time(duration)})"
    if nframes > 0:
        video, meta, length = VIDEO_MARKER + "\n", f"{meta}, {nframes} frames shown.", f"{meta}."
    else:
        extra = ([f"{_secs(fps)} fps"] if fps else []) + ([f"{size[0]}x{size[1]}"] if size else [])
        video = ""
        meta = length = ", ".join([meta, *extra]) + ". No frames shown: use tools to look."
    opts = ""
    if options:
        opts = "\nOptions:\n" + "\n".join(_lettered(i, o) for i, o in enumerate(options))
    return _render(
        version,
        "user",
        video=video,
        meta=meta,
        length=length,
        question=question.strip(),
        options=opts,
    )


def subagent_system_prompt(version: str = PROMPT_VERSION) -> str:
    return _render(version, "subagent_system")


def subagent_user_prompt(
    question: str, start: float, end: float, *, version: str = PROMPT_VERSION
) -> str:
    return _render(
        version,
        "subagent_user",
        window=_window(start, end),
        start=_secs(start),
        end=_secs(end),
        question=question.strip(),
    )


def subagent_summary_prompt(start: float, end: float, *, version: str = PROMPT_VERSION) -> str:
    """The ``summary`` sub-agent's one user turn: the window in MM:SS, its length, no question."""
    return _render(
        version,
        "subagent_summary",
        start=T.fmt_time(start),
        end=T.fmt_time(end),
        length=f"{max(0.0, float(end) - float(start)):.1f}",
    )


def subagent_messages(
    kind: SubagentPrompt,
    question: str,
    start: float,
    end: float,
    *,
    version: str = PROMPT_VERSION,
) -> tuple[str | None, str]:
    """A sub-agent's (system prompt or None, user text) for ``rollout.subagent_prompt`` =
    ``kind``; the user text holds one ``<video>`` marker (the window's frames). ``summary``
    ignores ``question``."""
    if kind == "summary":
        return None, subagent_summary_prompt(start, end, version=version)
    if kind == "question":
        return (
            subagent_system_prompt(version),
            subagent_user_prompt(question, start, end, version=version),
        )
    raise ConfigError(
        f"sub-agent prompt {kind!r} is unknown; use one of {', '.join(get_args(SubagentPrompt))}"
    )


def sequential_observation_text(start: float, end: float, *, version: str = PROMPT_VERSION) -> str:
    return _render(version, "sequential_observation", window=_window(start, end))


# ----------------------------------------------------------------------------------- helpers


def render_template(directory: str, name: str, **values: str) -> str:
    """``templates/<directory>/<name>.txt`` with its ``$name`` placeholders filled: a folder of
    the package's own that is no prompt version (an eval protocol's, ``eval_release``)."""
    path = resources.files("paravt.protocol") / "templates" / directory / f"{name}.txt"
    return string.Template(path.read_text(encoding="utf-8")).substitute(values).strip("\n")


def _render(version: str, name: str, **values: str) -> str:
    return string.Template(_template(version, name)).substitute(values).strip("\n")


@lru_cache(maxsize=64)
def _template(version: str, name: str) -> str:
    root = resources.files("paravt.protocol") / "templates"
    path = root / version / f"{name}.txt"
    if version not in VERSIONS or not path.is_file():  # the config refuses it at load already
        raise ConfigError(
            f"prompt template {version}/{name}.txt does not exist; "
            f"rollout.prompt_version must be one of {list(VERSIONS)}"
        )
    return path.read_text(encoding="utf-8")


def strip_examples(schema: Any) -> Any:
    """A JSON schema without its ``examples`` keys (they feed the call example only)."""
    if isinstance(schema, dict):
        return {k: strip_examples(v) for k, v in schema.items() if k != "examples"}
    return schema


def example_arguments(spec: ToolSpec) -> dict[str, Any]:
    """Arguments of the tool's example call: each required property's first example."""
    props = spec.parameters.get("properties", {})
    defaults = {"number": 0, "integer": 0, "string": "...", "boolean": False}
    out = {}
    for key in spec.parameters.get("required", list(props)):
        prop = props.get(key, {})
        examples = prop.get("examples") or [defaults.get(prop.get("type", "string"), "...")]
        out[key] = examples[0]
    return out


def _lettered(i: int, option: str) -> str:
    text = option.strip()
    letter = chr(ord("A") + i)
    if any(text.startswith(p.replace("A", letter)) for p in _LETTERED):
        return text
    return f"{letter}. {text}"


def _window(start: float, end: float) -> str:
    return f"{T.fmt_time(start)}-{T.fmt_time(end)}"


def _secs(x: float) -> str:
    return f"{float(x):.2f}".rstrip("0").rstrip(".")
