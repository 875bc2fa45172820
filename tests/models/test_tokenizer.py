"""The tiny models' protocol tokenizer: single-token tags, exact round trips, stable boundaries,
and half the tokens (or fewer) of the legacy ≈ 530-token builder on the same protocol text."""

from __future__ import annotations

import numpy as np
import pytest

from paravt.data.synth.corpus import protocol_corpus
from paravt.data.synth.prior import long_think, tool_code_call
from paravt.errors import ModelError
from paravt.models.tokenizer import QWEN_SPECIAL_TOKENS, train_tokenizer
from paravt.protocol import prompts, tags as T


@pytest.fixture(scope="module")
def protocol_tok():  # noqa: ANN201
    return train_tokenizer("protocol", corpus=protocol_corpus())


@pytest.fixture(scope="module")
def legacy_tok():  # noqa: ANN201
    return train_tokenizer("legacy")


def _sample() -> list[str]:
    """Protocol text written here, with numbers and windows the corpus need not hold verbatim."""
    calls = [T.render_crop_call(a, a + 37) for a in (0, 37, 74, 111, 148.5)]
    lines = [
        T.render_result_line(i + 1, a, a + 37, "Nothing brief appears in this window.")
        for i, a in enumerate((0, 37, 74, 111))
    ]
    lines.append(
        T.render_result_line(5, 148, 185, "A large magenta cross appears from 161 s to 166 s.")
    )
    rng = np.random.default_rng(5)
    return [
        prompts.system_prompt("parallel"),
        prompts.system_prompt("sequential"),
        prompts.system_prompt("none"),
        prompts.user_prompt(
            "Which large shape briefly appears?",
            ["magenta cross", "blue circle", "red square", "cyan cross"],
            duration=185,
            nframes=16,
        ),
        prompts.subagent_system_prompt(),
        prompts.subagent_user_prompt("Which digit briefly appears in large print?", 74, 111),
        T.render_tool_turn(
            "The overview shows no brief event. I will search 5 windows in parallel.", calls
        ),
        T.render_tool_response_body(lines),
        T.render_answer(
            "Window [5] shows it. The needle is a large magenta cross from 161 s to 166 s.", "A"
        ),
        long_think(rng, 4, "I will crop 0 to 37 s.") + tool_code_call(0, 37),
        "".join(
            f"<{t:.1f} seconds><|vision_start|><|video_pad|><|vision_end|>"
            for t in np.arange(3.5, 185, 11.5)
        ),
    ]


def _count(tok, texts: list[str]) -> int:  # noqa: ANN001
    return sum(len(tok(t, add_special_tokens=False)["input_ids"]) for t in texts)


@pytest.mark.parametrize("text", [*T.PROTOCOL_TAGS, *QWEN_SPECIAL_TOKENS])
def test_protocol_tags_and_special_tokens_are_single_tokens(protocol_tok, text: str) -> None:
    ids = protocol_tok(text, add_special_tokens=False)["input_ids"]
    assert len(ids) == 1 and protocol_tok.convert_ids_to_tokens(ids[0]) == text


def test_protocol_text_round_trips_exactly(protocol_tok) -> None:
    for text in [*_sample(), "odd bytes: ünïcødé – × ☃ \t\ttabs  double  spaces \n\n\n"]:
        ids = protocol_tok(text, add_special_tokens=False)["input_ids"]
        assert protocol_tok.decode(ids, skip_special_tokens=False) == text


def test_text_after_a_newline_tokenizes_the_same_alone_and_appended(protocol_tok) -> None:
    """Trajectories concatenate pieces (forced ``<think>\\n`` prefix, then sampled text; a turn,
    then its closing newline): the ids must equal those of the whole text."""
    enc = lambda s: protocol_tok(s, add_special_tokens=False)["input_ids"]  # noqa: E731
    for body in (
        "The overview shows no brief event.",
        "I will search 4 windows in parallel.\n</think>",
    ):
        assert enc(T.THINK_PREFIX) + enc(body) == enc(T.THINK_PREFIX + body)
    turn = T.render_answer("The needle is a large digit 7 from 12 s to 15 s.", "C")
    assert enc(turn) + enc("\n") == enc(turn + "\n")


def test_protocol_tokenizer_halves_the_tokens_of_the_legacy_one(protocol_tok, legacy_tok) -> None:
    sample = _sample()
    new, old = _count(protocol_tok, sample), _count(legacy_tok, sample)
    assert new / old <= 0.5, (new, old)
    assert len(legacy_tok) < 600 < len(protocol_tok) <= 4200  # the sizes the ratio is about


def test_same_seed_trains_the_same_vocabulary(protocol_tok) -> None:
    assert (
        train_tokenizer("protocol", corpus=protocol_corpus()).get_vocab()
        == protocol_tok.get_vocab()
    )


def test_unknown_tokenizer_kind_is_rejected_with_choices() -> None:
    with pytest.raises(ModelError, match="protocol, legacy"):
        train_tokenizer("wordpiece")


def test_protocol_kind_without_its_corpus_is_refused() -> None:
    with pytest.raises(ModelError, match="corpus"):
        train_tokenizer("protocol")
