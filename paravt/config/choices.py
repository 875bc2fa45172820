"""The ONE definition of each choice set and the small value checks the config sections share."""

from __future__ import annotations

import difflib
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata, resources
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import GetCoreSchemaHandler, ValidationInfo
from pydantic_core import core_schema

from paravt.errors import ConfigError

# ---- The ONE definition of each choice set; every other module imports it from here ------------
#: Dispatch modes (each is a class in paravt.agent.modes, registered in MODES): parallel (the
#: method), sequential (the baseline), eva (EVA's plan-then-select rounds), none.
DispatchMode = Literal["parallel", "sequential", "eva", "none"]
#: Which call forms of a main turn run (paravt.protocol.parser.parse_calls, docs/tools.md): the
#: release's Hermes rules (JSON in <tool_call>, all or none; <tool_code> as the fallback; a turn
#: with no call ends the episode) or ours, each call judged alone with errors shown to the model.
CallForms = Literal["release", "per_call"]
#: The per-turn rules of an RL episode (paravt.protocol.validate, paravt.agent.episode): the
#: release's (no call cap, no minimum window, no de-duplication; the final turn's calls run and
#: count) or ours (rollout.k_max, rollout.min_window_s, de-duplicated windows; the final turn's
#: calls do not run).
TurnRules = Literal["release", "paravt"]
#: Task types of a sample: multiple choice, temporal grounding, open-ended.
TaskType = Literal["mcq", "tvg", "oe"]
#: Model families paravt builds and loads.
ModelFamily = Literal["qwen2_5_vl", "qwen3_vl"]
#: R_tool variants (paravt.rewards.terms.tool_reward).
ToolMode = Literal["parse_bonus", "graduated", "accumulative", "off"]
#: How R_fmt reads a broken output (paravt.rewards.terms): release = the authors' format.py
#: rules, paravt = our stricter next-tag rules (docs/rewards.md).
FormatRules = Literal["release", "paravt"]
#: `eval --benchmark` prompt classes [paper §C] (paravt.eval.benchmarks.protocol).
PromptClass = Literal["agentic", "reasoning", "direct"]
#: `eval --benchmark` headline scorers: lmms-eval's task rules or our <answer> extraction.
Scoring = Literal["lmms", "paravt"]
#: `eval --benchmark`'s turn protocol for the agentic class (paravt.eval.benchmarks.release).
EvalProtocol = Literal["release", "paravt"]
#: Learning-rate schedules after the warm-up (paravt.rl.sft.lr_scale): constant, or cosine down to
#: ``min_lr_ratio`` of the peak at the last step (a pretraining's schedule).
LrDecay = Literal["constant", "cosine"]
#: How a supervised batch's token NLLs become its loss (paravt.rl.sft.sft_backward; verl's names):
#: the mean over every loss token, or the mean over rows of each row's token-mean.
LossAgg = Literal["token-mean", "seq-mean-token-mean"]
#: The packaged prompt templates' default version (paravt/protocol/templates/<version>/): v2 is the
#: paper's RL system prompt (Appendix C: tools always, never ``<tool_code>``), v1 the earlier one.
PROMPT_VERSION = "v2"
#: What a sub-agent is asked (paravt.protocol.prompts.subagent_messages): summary = a generic
#: request to summarise its window, no question (the authors' release); question = the question
#: and its window, with a system prompt saying what to look for (ours before issue 46).
SubagentPrompt = Literal["summary", "question"]
#: The default of rollout.subagent_prompt; ParaVT-Synth's and distillation's sub-agent rows are
#: written in it (as the templates' PROMPT_VERSION).
SUBAGENT_PROMPT: SubagentPrompt = "summary"
#: RL prompt filtering (paravt.rl.grpo): offline = the DAPO pre-filter run once before RL
#: (paravt.rl.prefilter) and every group trained; online = drop zero-variance groups and rank.
RLFilter = Literal["offline", "online"]
RL_FILTER_DOC = (
    "offline [paper]: the DAPO pre-filter ran once before RL (paravt.rl.prefilter, run by "
    "`paravt repro`), every group is trained; online: oversample, drop zero-variance groups, keep "
    "the prompts_per_step of largest reward std."
)
#: KL estimators (paravt.rl.loss.kl_penalty), in the loss or in the per-token reward.
KLKind = Literal["k1", "k3"]
#: Where the KL to the reference acts (paravt.rl.update): a per-token reward whose return-to-go is
#: added to the advantage (the release), or a term of the loss (verl's use_kl_loss).
KLIn = Literal["reward", "loss"]
#: Over what the batch advantage normalisation takes its mean and std (paravt.rl.update).
AdvNormUnit = Literal["token", "episode"]
#: OpenAI-compatible serving engines (`paravt serve-model`, verl's rollout).
ServeEngine = Literal["vllm", "sglang"]


def prompt_versions() -> tuple[str, ...]:
    """The packaged prompt template versions, sorted: the folders of paravt/protocol/templates/
    that hold every template the default version has (another folder there, such as an eval
    protocol's ``eval_release``, is no version). The ONE list: ``rollout.prompt_version`` is
    checked against it, the tokenizer corpus covers each."""
    folder = resources.files("paravt") / "protocol" / "templates"
    needs = {p.name for p in (folder / PROMPT_VERSION).iterdir() if p.name.endswith(".txt")}
    return tuple(
        sorted(
            p.name
            for p in folder.iterdir()
            if p.is_dir() and p.name[0] not in "._" and needs <= {f.name for f in p.iterdir()}
        )
    )


#: The built-in tools' names (``paravt.tools.registry`` registers their classes; a test checks
#: that the two agree) and the entry-point group of plugin tools. The tools layer sits above the
#: config, so the config reads names only: the built-ins, the plugins' entry-point names (none
#: imported) and the names ``register_tool`` noted (`note_tool`).
BUILTIN_TOOLS = ("crop_video", "frame_select", "python")
TOOL_ENTRY_POINTS = "paravt.tools"
_CODE_TOOLS: set[str] = set()


def note_tool(name: str, registered: bool = True) -> None:
    """Called by ``paravt.tools.register_tool`` / ``unregister_tool``: a tool registered in code."""
    (_CODE_TOOLS.add if registered else _CODE_TOOLS.discard)(name)


def tool_names() -> tuple[str, ...]:
    """The names ``rollout.tools`` may list: the built-ins, every ``paravt.tools`` entry point and
    the tools registered in code."""
    plugins = {ep.name for ep in metadata.entry_points(group=TOOL_ENTRY_POINTS)}
    return tuple(sorted({*BUILTIN_TOOLS, *plugins, *_CODE_TOOLS}))


#: The device types ``torch.device`` parses (its own list, from torch 2.x's error message "Expected
#: one of cpu, cuda, ...", less the deprecated mkldnn); a device is a type, optionally ``:INDEX``.
TORCH_DEVICE_TYPES = (
    "cpu",
    "cuda",
    "ipu",
    "xpu",
    "opengl",
    "opencl",
    "ideep",
    "hip",
    "ve",
    "fpga",
    "maia",
    "xla",
    "lazy",
    "vulkan",
    "mps",
    "meta",
    "hpu",
    "mtia",
    "privateuseone",
)


def _device_type(device: str) -> str | None:
    """The type of a ``TYPE`` or ``TYPE:INDEX`` device string (None when it has another shape)."""
    kind, sep, index = device.partition(":")
    return kind if not sep or index.isdigit() else None


def _is_mcp_ref(name: str) -> bool:
    return name.startswith("mcp:")  # paravt.tools.registry.MCP_PREFIX: a server lists its own


@dataclass(frozen=True)
class ValuesFrom:
    """The marker of a ``str`` (or ``list[str]``) field whose valid values live outside the config
    (a folder of templates, a registry, torch): ``Annotated[str, ValuesFrom(...)]`` checks the value
    when the config loads, naming the values, so a wrong one never reaches the run (issue 48). The
    config tests find every field that carries one.

    ``what`` names one value ("prompt template version"), ``where`` says where the list lives,
    ``values`` reads it, ``key`` maps a value to the part that must be listed (None: malformed),
    ``passes`` accepts a value without the list, ``unless`` names an earlier field of the same
    section that, when set, supplies the values itself (the check is then its job), and ``hints``
    answers a common wrong value with what it likely means."""

    what: str
    where: str
    values: Callable[[], tuple[str, ...]]
    key: Callable[[str], str | None] = str
    passes: Callable[[str], bool] = lambda _: False
    unless: str | None = None
    hints: tuple[tuple[str, str], ...] = ()  # (a common wrong value, what it means)

    def problem(self, value: str) -> str | None:
        """Why ``value`` is not one of the values (None when it is)."""
        known = self.values()
        if self.passes(value) or self.key(value) in known:
            return None
        close = [to for wrong, to in self.hints if wrong == value.strip().lower()]
        close = close or difflib.get_close_matches(value.strip().lower(), known, n=1, cutoff=0.5)
        hint = f" (did you mean {close[0]!r}?)" if close else ""
        return (
            f"{value!r} is not a {self.what}{hint}; use one of {', '.join(known) or '(none)'} "
            f"({self.where})"
        )

    def __get_pydantic_core_schema__(
        self, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        return core_schema.with_info_after_validator_function(self._check, handler(source))

    def _check(self, value: Any, info: ValidationInfo) -> Any:
        if self.unless is not None and info.data.get(self.unless) is not None:
            return value
        for item in value if isinstance(value, list) else [value]:
            if problem := self.problem(item):
                raise ValueError(problem)
        return value


PROMPT_VERSIONS = ValuesFrom(
    "prompt template version", "the folders of paravt/protocol/templates/", prompt_versions
)
TOOLS = ValuesFrom(
    "registered tool",
    "the tool registry: the built-ins and the paravt.tools entry-point plugins; or 'mcp:URL' / "
    "'mcp:COMMAND' for an MCP server's tools",
    tool_names,
    passes=_is_mcp_ref,
    unless="tool_server_url",
)
DEVICES = ValuesFrom(
    "torch device",
    "the device types torch knows, optionally with :INDEX, e.g. cuda:0",
    lambda: TORCH_DEVICE_TYPES,
    key=lambda d: _device_type(d) or "",
    hints=(("gpu", "cuda"), ("auto", "cuda")),
)

# ---- Upper bounds of sizes no real run needs (issue 48): past them a value is a typo ------------
#: Tokens one turn may generate: 256 Ki, Qwen3-VL's native context (the longest of the families
#: paravt builds); a turn cannot generate more than its context holds (``10**11`` used to be run).
MAX_NEW_TOKENS = 1 << 18
#: Tool calls of one main turn: 8 times the paper's k_max of 8. Each call is a sub-agent request
#: with up to 16 crop frames, so 64 calls already show ~1,000 frames in one turn.
MAX_CALLS_PER_TURN = 64
#: Episodes (eval) or rows (distill) run at once: 4 times the 256 concurrent sequences of a vLLM
#: replica (verl.max_num_seqs); past it the requests only queue at the server, each worker holding
#: its decoded frames (``eval.workers=10**7`` used to be accepted).
MAX_WORKERS = 1024

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
