import pytest

from paravt.protocol.answer import extract_answer, is_degenerate

IM = "<|im_start|>"


@pytest.mark.parametrize(
    "text, answer",
    [
        ("<think>x</think><answer> B </answer>", "B"),  # level 1, stripped
        ("<answer>A</answer> then <answer>C</answer>", "C"),  # LAST block wins
        ("<think>x</think><answer>B<|im_end|>", "B"),  # unclosed: up to the next tag
        (
            "<think>x</think><answer></answer> B",
            None,
        ),  # empty answer block: no answer, no fall-through
        (
            "<think>x</think>\n<tool_call>{}</tool_call>\nThe answer is B\n",
            "The answer is B",
        ),  # level 2
        ("<think>a</think>x<think>b</think> final ", "final"),  # after the LAST </think>
        ("<think>\nfirst line\nlast line B\n\n", "last line B"),  # level 3
        ("<think>x</think><tool_call>{}</tool_call>", "x"),  # level 2 empty -> level 3
        ("<tool_response><answer>Z</answer></tool_response>\nC", "C"),  # observations are not read
        ("", None),
        ("   \n  ", None),
    ],
)
def test_three_levels(text: str, answer: str | None) -> None:
    assert extract_answer(text) == answer


def test_degenerate_needs_five_markers_within_under_300_chars() -> None:
    # markers are 12 chars; 5 markers each followed by f filler chars span 4*(12+f)+12 chars
    assert is_degenerate((IM + "x" * 58) * 4 + IM)  # span 4*70+12 = 292 < 300
    assert not is_degenerate((IM + "x" * 60) * 4 + IM)  # span 4*72+12 = 300, not under 300
    assert not is_degenerate(IM * 4)  # only four
    assert is_degenerate("y" * 1000 + IM * 5 + "y" * 1000)  # anywhere in the text
    assert not is_degenerate((IM + "x" * 100) * 20)  # many, but never 5 within 300 chars
