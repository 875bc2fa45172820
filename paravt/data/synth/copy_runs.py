"""Text-only copy runs: the simulated base's LANGUAGE stage (``prior.copy_steps``), in which the
in-context copy of a pretrained language model forms before the model sees a frame.

A row is a run of 8–24 tokens drawn from the base's own words (``copy_pool``: the tokens the
protocol corpus holds at least 5 times, but the special and protocol ones), then 0–250 other
tokens, then the run again; the loss is on the repeat's tokens after its first, the only ones a
model can predict. What it teaches is an induction head (after a token, predict what followed its
earlier occurrence), which every pretrained LM has and a tiny base trained on our mixture alone
never forms (docs/repro-log.md, 2026-12-06 h). The trainer draws the rows afresh each step, as a
function of (seed, step) (``rl.prior.copy_batch``): nothing is stored.

``induction`` is the stage's own check: the share of a held-out repeat's tokens 2–20 whose argmax is
the copy, at a fixed gap (docs/repro.md, "The simulated pretrained base").
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

import torch

RUN = (8, 24)  # tokens of a run
GAP = (0, 250)  # tokens between the run and its repeat
PROBE_RUN, PROBE_ROWS = 20, 32  # the induction probe's run length and rows per gap
#: a pool token occurs this often in the tokenizer's corpus: the words the base reads and writes,
#: not the merges it never sees (a tiny model's copy formed over those, 2026-12-07 k)
POOL_MIN_COUNT = 5
#: what the pool is, for the caches that hold a copy measured over it (a base's key, its probe)
POOL_VERSION = f"protocol-corpus>={POOL_MIN_COUNT}"


def copy_pool(tokenizer: Any, min_count: int = POOL_MIN_COUNT) -> list[int]:
    """The base's own words: the token ids that the protocol corpus (``corpus.protocol_corpus``,
    the text the tiny tokenizer is trained on) holds at least ``min_count`` times under
    ``tokenizer``, but the special and added (protocol) tokens; sorted."""
    counts = _corpus_counts(tokenizer.backend_tokenizer.to_str())
    skip = set(tokenizer.all_special_ids) | set(tokenizer.get_added_vocab().values())
    return sorted(t for t, n in counts.items() if n >= min_count and t not in skip)


@lru_cache(maxsize=2)  # per tokenizer (its JSON): a base's build and its probes share one count
def _corpus_counts(tokenizer_json: str) -> Counter[int]:
    from tokenizers import Tokenizer

    from paravt.data.synth.corpus import protocol_corpus

    tok = Tokenizer.from_str(tokenizer_json)
    counts: Counter[int] = Counter()
    for enc in tok.encode_batch(list(protocol_corpus()), add_special_tokens=False):
        counts.update(enc.ids)
    return counts


def copy_row(
    rng: random.Random, pool: Sequence[int], *, run: int | None = None, gap: int | None = None
) -> tuple[list[int], list[int]]:
    """(ids, loss mask) of one copy row: a run, a gap of other tokens, the run again (mask 1 from
    its second token: its first follows a random token)."""
    n = rng.randint(*RUN) if run is None else run
    g = rng.randint(*GAP) if gap is None else gap
    first = [rng.choice(pool) for _ in range(n)]
    between = [rng.choice(pool) for _ in range(g)]
    return first + between + first, [0] * (n + g + 1) + [1] * (n - 1)


@torch.no_grad()
def induction(model: Any, pool: Sequence[int], gap: int, *, rows: int = PROBE_ROWS) -> float:
    """The share of held-out repeats' tokens 2..``PROBE_RUN`` whose greedy next token is the copy,
    ``gap`` tokens after the run (rows drawn by ``gap`` alone: every model sees the same ones)."""
    rng = random.Random(f"induction:{gap}")
    device = next(model.parameters()).device
    was_training = model.training
    model.eval()
    hits = 0
    for _ in range(rows):
        ids, _ = copy_row(rng, pool, run=PROBE_RUN, gap=gap)
        logits = model(input_ids=torch.tensor([ids], device=device)).logits[0]
        start = PROBE_RUN + gap  # the repeat's first token; its second is the first predictable
        guess = logits[start : start + PROBE_RUN - 1].argmax(-1).tolist()
        hits += sum(g == t for g, t in zip(guess, ids[start + 1 :], strict=True))
    model.train(was_training)
    return hits / (rows * (PROBE_RUN - 1))
