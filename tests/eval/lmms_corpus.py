"""A deterministic corpus of model responses for the lmms-eval differential test.

`corpus()` yields one record per (benchmark, response): the response text and the item it
answers (gold answer, options, the groups the aggregation uses). The responses mix what models
write: bare letters in every bracket style, answer phrases (English, Chinese, Korean), option
texts, reasoning blocks closed / unclosed / with a pre-filled open tag, ``<answer>`` tags, hedges,
lowercase, letters inside words, no letter at all, empty output; and for Charades-STA, intervals
as ranges, "from … to …", clock times, "starts at … ends at …", JSON lists, reversed, several or
none. Seeded: the corpus is the same on every machine.
"""

from __future__ import annotations

import random
from collections.abc import Iterator
from typing import Any

MCQ_BENCHES = ("videomme", "longvideobench", "lvbench", "mlvu", "mmvu")
_TEXTS = [
    "a red car",
    "the man in black",
    "Because it rains",
    "Dancing",
    "Eleven",
    "Cooking pasta",
    "A bird",
    "Into the house",
    "He opens the door",
    "Blue sky",
    "Cat",
    "two dogs",
]
_LETTERS = "ABCDE"


def _mcq_bodies(rng: random.Random, letter: str, text: str) -> list[str]:
    other = rng.choice([c for c in "ABCD" if c != letter])
    return [
        letter,
        f"({letter})",
        f"{letter}.",
        f"{letter})",
        f"{letter}:",
        f" {letter} ",
        letter.lower(),
        f"{letter}. {text}",
        f"({letter}) {text}",
        f"Answer: {letter}",
        f"The answer is {letter}.",
        f"The best answer is: ({letter}) {text}",
        f"The correct answer is {letter}",
        f"I choose {letter}",
        f"答案是{letter}",
        f"정답은 {letter}",
        f"Best option: ({letter}",
        f"Best option: {letter}) {text}",
        f"{text}",
        f"It is {text}.",
        f"Option {letter}",
        f"option {letter.lower()}",
        f"{other} or {letter}",
        f"Not {other}, the answer is {letter}.",
        f"{letter} and {other}",
        f"Based on the video, {text}.",
        f"After watching, I think the answer is {letter} because {text}.",
        f"A person walks in. The answer is {letter}",
        f"The video shows {text}; therefore {letter}",
        "I cannot tell from these frames which option is right at all really sorry",
        "none of the options fit",
        "",
        "   ",
        f"'{letter}'",
        f'"{letter}".',
        f"{letter}!",
        f"[{letter}]",
        f"**{letter}**",
        f"{letter}\n\nExplanation: {text}",
        f"Explanation: {text}\nAnswer: {letter}",
        f"{letter}={text}",
        f"1. {letter}",
        f"my answer is {letter.lower()}",
        f"ANSWER: {letter}",
        f"{text} ({letter})",
        f"The answer is {letter}: {text}.",
        f"E. {text}" if letter != "E" else "E",
    ]


def _wrap(rng: random.Random, body: str, letter: str) -> str:
    other = rng.choice([c for c in "ABCD" if c != letter])
    think = rng.choice(
        [
            "Let me look at option " + other + ".",
            "The frames show a kitchen.",
            "Options A and B are unlikely.",
            "Hmm, (C) seems wrong; D. maybe.",
            "",
        ]
    )
    return rng.choice(
        [
            body,
            f"<think>{think}</think>{body}",
            f"<think>{think}</think>\n<answer>{body}</answer>",
            f"<think>\n{think}</think>\n\n{body}",
            f"{think}</think>{body}",
            f"<think>{think} {body}",
            f"<answer>{body}</answer>",
            f"<think>{think}</think><think>again</think>{body}",
            f"<analysis>{think}</analysis>{body}",
            f"<THINK>{think}</THINK>{body}",
            f'<think>{think}</think>\n<tool_call>{{"name": '
            f'"crop_video"}}</tool_call>\n<answer>{body}</answer>',
            f"{body}</think>",
            f"<thinking>{think}</thinking>{body}",
        ]
    )


def _groups(bench: str, rng: random.Random) -> dict[str, Any]:
    if bench == "videomme":
        return {
            "duration": rng.choice(["short", "medium", "long"]),
            "task_type": rng.choice(["Counting Problem", "OCR Problems", "Temporal Reasoning"]),
            "domain": rng.choice(["Knowledge", "Sports Competition"]),
            "sub_category": "Astronomy",
        }
    if bench == "longvideobench":
        return {
            "duration_group": rng.choice(["15", "60", "600", "3600"]),
            "question_category": rng.choice(["S2E", "T3O", "E2O"]),
        }
    if bench == "mlvu":
        return {
            "task_type": rng.choice(["anomaly_reco", "count", "ego", "needle", "order", "plotQA"])
        }
    if bench == "mmvu":
        return {
            "subject": rng.choice(["Biology", "Law", "Computer_Science", "Dentistry", "Physics"])
        }
    return {
        "question_type": [rng.choice(["reasoning", "key information retrieval", "summarization"])]
    }


def mcq_records(seed: int = 15) -> Iterator[dict[str, Any]]:
    rng = random.Random(seed)
    n = 0
    for bench in MCQ_BENCHES:
        for _ in range(3):
            letter = rng.choice("ABCD")
            texts = rng.sample(_TEXTS, 5)
            n_opts = 5 if bench in ("mmvu", "longvideobench") else 4
            options = [f"{_LETTERS[i]}. {texts[i]}" for i in range(n_opts)]
            for body in _mcq_bodies(rng, letter, texts[_LETTERS.index(letter)]):
                answer = letter if rng.random() < 0.6 else rng.choice("ABCD")
                yield {
                    "id": f"{bench}-{n}",
                    "bench": bench,
                    "response": _wrap(rng, body, letter),
                    "answer": answer,
                    "options": options,
                    "groups": _groups(bench, rng),
                }
                n += 1


def _tvg_bodies(rng: random.Random, a: float, b: float) -> list[str]:
    ia, ib = int(a), int(b)
    return [
        f"The event happens in {a} - {b} seconds.",
        f"{a} - {b}",
        f"[{a}, {b}]",
        f"<answer>[{a}, {b}]</answer>",
        f"from {a} to {b} seconds",
        f"It starts at {a}s and ends at {b}s.",
        f"Start time: {a}\nEnd time: {b}",
        f"The start time is {a} seconds, and the end time is {b} seconds.",
        f"00:{ia:02d} - 00:{ib:02d}",
        f"starts at 00:00:{ia:02d} and ends at 00:00:{ib:02d}",
        f"{b} - {a}",
        f"{a}s - {b}s",
        f"happens in {a}–{b} s",
        f"The person stops at {a} and starts again at {b}.",
        f"Between {a} and {b}.",
        f"It happens at {a} - {b}, and again at {b + 2} - {b + 5}.",
        f'{{"start": {a}, "end": {b}}}',
        "I cannot find the event.",
        "",
        f"At {a} seconds.",
        f"A specific example is : 20.8 - 30.0 seconds. The event happens in {a} - {b}.",
        f"The event 'person turns on the light' happens in the {a} - {b} seconds.",
        f"{a}-{b}!",
        f"start {ia}:{30:02d} end {ib + 1}:{5:02d}",
        f"Timestamps: {a} to {b}; total 30 s",
        f"first {a}\nthen {b}\nfinally {b + 1}",
        f"happen {a}\nend {b}\nstart 1",
    ]


def tvg_records(seed: int = 16) -> Iterator[dict[str, Any]]:
    rng = random.Random(seed)
    n = 0
    for _ in range(9):
        a = round(rng.uniform(0, 25), rng.choice([0, 1, 2]))
        b = round(a + rng.uniform(0.5, 12), rng.choice([0, 1]))
        for body in _tvg_bodies(
            rng, a, b
        ):  # gold near the written interval: IoUs spread over [0, 1]
            gs = round(max(0.0, a + rng.uniform(-3, 3)), 1)
            ge = round(max(gs + 0.5, b + rng.uniform(-3, 3)), 1)
            vid = rng.choice(["3MSZA", "AO8RW", "Y6R7T"])
            caption = rng.choice(["person turns on the light", "a person opens a door"])
            yield {
                "id": f"charades_sta-{n}",
                "bench": "charades_sta",
                "response": _wrap(rng, body, "A"),
                "answer": f"[{gs}, {ge}]",
                "options": None,
                "groups": {"video": f"{vid}.mp4", "caption": caption},
            }
            n += 1


def corpus() -> list[dict[str, Any]]:
    return [*mcq_records(), *tvg_records()]
