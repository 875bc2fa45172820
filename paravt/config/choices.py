"""The ONE definition of each choice set and the small value checks the config sections share."""

from __future__ import annotations

from typing import Literal
from urllib.parse import urlsplit

from paravt.errors import ConfigError

# ---- The ONE definition of each choice set; every other module imports it from here ------------
#: Dispatch modes (each is a class in paravt.agent.modes, registered in MODES): parallel (the
#: method), sequential (the baseline), eva (EVA's plan-then-select rounds), none.
DispatchMode = Literal["parallel", "sequential", "eva", "none"]
#: Task types of a sample: multiple choice, temporal grounding, open-ended.
TaskType = Literal["mcq", "tvg", "oe"]
#: Model families paravt builds and loads.
ModelFamily = Literal["qwen2_5_vl", "qwen3_vl"]
#: R_tool variants (paravt.rewards.terms.tool_reward).
ToolMode = Literal["parse_bonus", "graduated", "accumulative", "off"]
#: `eval --benchmark` prompt classes [paper §C] (paravt.eval.benchmarks.protocol).
PromptClass = Literal["agentic", "reasoning", "direct"]
#: `eval --benchmark` headline scorers: lmms-eval's task rules or our <answer> extraction.
Scoring = Literal["lmms", "paravt"]
#: `eval --benchmark`'s turn protocol for the agentic class (paravt.eval.benchmarks.release).
EvalProtocol = Literal["release", "paravt"]
#: Learning-rate schedules after the warm-up (paravt.rl.sft.lr_scale): constant, or cosine down to
#: ``min_lr_ratio`` of the peak at the last step (a pretraining's schedule).
LrDecay = Literal["constant", "cosine"]
#: The packaged prompt templates' default version (paravt/protocol/templates/<version>/): v2 is the
#: paper's RL system prompt (Appendix C: tools always, never ``<tool_code>``), v1 the earlier one.
PROMPT_VERSION = "v2"
#: RL prompt filtering (paravt.rl.grpo): offline = the DAPO pre-filter run once before RL
#: (paravt.rl.prefilter) and every group trained; online = drop zero-variance groups and rank.
RLFilter = Literal["offline", "online"]
RL_FILTER_DOC = (
    "offline [paper]: the DAPO pre-filter ran once before RL (paravt.rl.prefilter, run by "
    "`paravt repro`), every group is trained; online: oversample, drop zero-variance groups, keep "
    "the prompts_per_step of largest reward std."
)
#: KL estimators of the loss (paravt.rl.loss).
KLKind = Literal["k1", "k3"]
#: OpenAI-compatible serving engines (`paravt serve-model`, verl's rollout).
ServeEngine = Literal["vllm", "sglang"]

#: Most overview frames a prompt may carry (Qwen-VL's video frame cap); gating choices included.
MAX_OVERVIEW_FRAMES = 768


def frame_budgets_problem(choices: object) -> str | None:
    """Why ``choices`` is not a list of overview frame budgets (None when it is one): the ONE rule
    of ``rl.gating.choices``, checked where the config loads and again by ``paravt.rl.gating``:
    a non-empty list of ints (not bools) in 1..MAX_OVERVIEW_FRAMES."""
    items = list(choices) if isinstance(choices, (list, tuple)) else []
    bad = [
        c
        for c in items
        if isinstance(c, bool) or not isinstance(c, int) or not 1 <= c <= MAX_OVERVIEW_FRAMES
    ]
    if items and not bad:
        return None
    return (
        f"{choices!r} must be a non-empty list of frame counts in 1..{MAX_OVERVIEW_FRAMES} "
        f"(the overview cap){f', not {bad}' if bad else ''}; fix the list "
        "(paper default: [4, 8, 16, 32, 64])"
    )


def url_problem(url: str) -> str | None:
    """Why ``url`` is not an http(s) URL with a host and a valid port (None when it is one)."""
    try:
        parts = urlsplit(url.strip())
        ok = parts.scheme in ("http", "https") and bool(parts.hostname) and (parts.port or 1) > 0
    except ValueError:  # a port that is not a number or out of range
        ok = False
    return (
        None
        if ok
        else f"{url!r} is not an http(s) URL with a host (and a port in 1..65535); pass one like "
        "http://127.0.0.1:8000/v1"
    )


def backend_of(path: str) -> Literal["hf", "openai"]:
    """The ``model.backend`` that serves ``model.path``: openai for an http(s) URL (a server),
    hf for a checkpoint directory or hub id."""
    return "openai" if path.startswith(("http://", "https://")) else "hf"


def backend_problem(path: str, backend: str) -> str | None:
    """Why ``model.backend`` cannot serve ``model.path`` (None when it can)."""
    want = backend_of(path)
    if backend == want:
        return None
    return (
        f"model.path={path!r} with model.backend={backend!r}: a server URL is the openai backend, "
        f"a checkpoint directory or hub id the hf backend; set model.backend={want}"
    )


def http_url_or_none(url: str | None) -> str | None:
    """Field validator of an optional URL field (pydantic reports the ValueError under its name)."""
    if url is not None and (problem := url_problem(url)):
        raise ValueError(problem)
    return url


def check_url(url: str, option: str) -> str:
    """``url`` when it is an http(s) URL, else `ConfigError` naming ``option`` (a flag or field)."""
    problem = url_problem(url)
    if problem:
        raise ConfigError(f"{option} {problem}")
    return url
