"""The authors' eval protocol (``eval.protocol: release``): how their release's eval driver runs an
agentic benchmark question, on our episode loop (docs/eval.md, "Protocols"; docs/fidelity.md).

What it changes against ``paravt`` (our tool prompt, the think prefix, ``rollout.k_max`` calls a
turn with the rest answered as errors, no forced turn):

- the system prompt: their agentic prompt (a JSON tool schema in ``<tools>``, several
  ``<tool_call>`` blocks in one turn encouraged, think / calls / answer), or for a grounding
  benchmark (Charades-STA) the bare function-calling envelope, with their grounding question;
  multiple choice gets "answer with the option letter only" after the options;
- no think prefix;
- at most `CALL_CAP` calls a turn: the calls past it are dropped unseen (not run, not shown, not
  counted); no minimum window and no de-duplication (``turn_rules="release"``: their driver crops
  every window it is given);
- `TOOL_ROUNDS` tool rounds, then one user turn asks for the answer (`FORCED_MAX_TOKENS` new
  tokens: 64 for a letter, 128 for an interval) and that reply is final.

The texts are ours (``paravt/protocol/templates/eval_release/``): the same contract in our words.
Dispatch stays the paper's (sub-agents summarise the crops): their driver shows the crops to the
main agent itself, which the paper's text does not do. The calls are read as eval reads them
(``call_forms="per_call"``): their driver also reads each ``<tool_call>`` block alone, but skips a
malformed one unseen where ours answers it with an error line, runs keyword ``<tool_code>``
calls, which ours does not, and skips python-style calls inside ``<tool_call>``, which ours runs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import replace

from paravt.agent import EpisodeInput, EpisodeSettings
from paravt.agent.settings import ForcedAnswer
from paravt.eval.benchmarks.base import AnswerKind
from paravt.protocol import prompts, tags
from paravt.protocol.prompts import CROP_VIDEO_SPEC, ToolSpec

#: Tool rounds before the forced answer turn (the release's eval ``max_turns``).
TOOL_ROUNDS = 3
#: Calls run per turn; the rest of the turn's calls are dropped (the release's ``max_parallel``).
CALL_CAP = 5
#: New tokens of the forced answer turn, by what the benchmark's answer is.
FORCED_MAX_TOKENS: Mapping[AnswerKind, int] = {"letter": 64, "interval": 128, "yes_no": 64}

_DIR = "eval_release"


def _text(name: str, **values: str) -> str:
    return prompts.render_template(_DIR, name, **values)


def system_text(kind: AnswerKind, tools: Sequence[ToolSpec] = ()) -> str:
    """The system prompt: the agentic one, or the bare function-calling envelope for a grounding
    benchmark (an interval answer)."""
    specs = tuple(tools) or (CROP_VIDEO_SPEC,)
    schemas = "\n".join(
        json.dumps(
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": prompts.strip_examples(t.parameters),
                },
            }
        )
        for t in specs
    )
    if kind == "interval":
        return _text("system_minimal", schemas=schemas)
    example = tags.render_tool_call(specs[0].name, prompts.example_arguments(specs[0]))
    return _text("system_agentic", schemas=schemas, example=example)


def forced_answer(kind: AnswerKind) -> ForcedAnswer:
    return ForcedAnswer(_text(f"force_{kind}"), FORCED_MAX_TOKENS[kind])


def settings(base: EpisodeSettings, kind: AnswerKind, tools: Sequence[ToolSpec]) -> EpisodeSettings:
    """``base`` (greedy, the protocol's pixels) under the release's turn protocol."""
    return replace(
        base,
        system_prompt=True,
        system_text=system_text(kind, tools),
        user_suffix=_text("mcq_suffix") if kind == "letter" else "",
        think_prefix=False,
        call_cap=CALL_CAP,
        k_max=CALL_CAP,
        turn_rules="release",
        max_turns=TOOL_ROUNDS,
        forced_answer=forced_answer(kind),
    )


def question(inp: EpisodeInput, kind: AnswerKind) -> EpisodeInput:
    """A grounding question in the release's words (the loader keeps the sentence in
    ``meta["sentence"]``); any other question as it is."""
    sentence = inp.meta.get("sentence")
    if kind != "interval" or not sentence:
        return inp
    return replace(inp, question=_text("question_interval", sentence=str(sentence)))
