"""HFGenerator: the local transformers backend of ``Generator`` (CPU / one GPU).

- Continuous batching (``continuous=True``, ``model.continuous_batching``): every call goes to
  one decode loop in which all live rows advance one token per forward and new requests join
  between forwards (``paravt.models.hf.continuous``); same tokens as the batches below.
  ``decode_stats``: forwards that sampled a token and the live rows they advanced, either path.
- Batching: concurrent ``generate`` calls (e.g. the sub-agents of one turn, the G rollouts of a
  group) are queued for ``window_s`` and served as left-padded batched ``model.generate`` calls of
  at most ``max_batch`` rows, grouped by (temperature, top_p). Rows with smaller
  ``max_new_tokens`` are cut afterwards: decoding is causal, so a cut row equals a row generated
  with its own limit.
- Tokens: vision placeholder ids are suppressed (a random model would otherwise sample them and
  break the next turn's rope index); generation stops on ``<|im_end|>``, which is returned as the
  last sampled token (finish ``stop``); without it the finish is ``length``.
- Logprobs are ``log_softmax`` of the PROCESSED scores, i.e. the log-probability under the
  distribution actually sampled from: at temperature τ and top_p = 1 that is
  ``log_softmax(logits / τ)`` over the non-suppressed vocabulary; greedy (τ = 0) reports
  ``log_softmax(logits)`` (τ = 1). With top_p < 1 tokens outside the nucleus get -inf, so the
  logprob is renormalised over the nucleus.
- Seeds: when every request of a batch carries a seed and top_p = 1, each row samples with its OWN
  ``torch.Generator`` (Gumbel-max over ``logits / τ``, ``RowSampler``): a row's tokens depend only
  on its seed and prompt, never on which other requests share its batch, so a training step is
  reproducible however the concurrent episodes happen to be batched (bit-for-bit resume). Mixed
  or missing seeds (or top_p < 1) fall back to ``do_sample`` under ``torch.manual_seed(mix(seeds))``
  in a forked RNG: reproducible per batch only.
- Prompt work (``paravt.models.hf.prefill``): identical prompts of a batch (a GRPO group's G
  rollouts) share ONE prefill, vision tower included, and a main-agent turn that extends a kept
  row cache (``GenRequest.keep_kv``) prefills only its new tokens; ``generate`` continues from
  the assembled cache. Same tokens and logprobs as full prefills (float tolerance). Each output's
  metrics carry ``prefill_tokens`` (tokens of its prompt actually run) and ``prefill_rows``.
  Each media item goes through the vision processor once (``paravt.models.features``), and the
  ``GenerationConfig`` of a parameter set is built once (``_generation_config``).
- Failures: a batch that raises is retried row by row; a row that still raises becomes a
  ``finish_reason="error"`` output carrying the message.
- Threads: ``prefill_threads`` (e.g. 2 on a 2-core machine) runs each batch's prefill (vision
  tower, prompt) with that many torch threads and its decode steps with the caller's count
  (process-wide ``torch.set_num_threads``, restored after the batch). The torch work runs in a
  worker thread (``paravt.models.hf.batching``) so the event loop stays free; batches never run
  concurrently. Both cores of a CPU: ``paravt.models.hf.replicas`` (policy copies in worker
  processes).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

import torch
from transformers import GenerationConfig, LogitsProcessor, LogitsProcessorList

from paravt.models.base import FinishReason, GenOutput, GenRequest, error_output
from paravt.models.chat import ChatCodec
from paravt.models.hf.batching import Batcher, DecodeStats, prefill_threads
from paravt.models.hf.continuous import ContinuousScheduler
from paravt.models.hf.loading import LoadedPolicy
from paravt.models.hf.prefill import Prefiller


def _batch_seed(requests: Sequence[GenRequest]) -> int | None:
    seeds = [r.sampling.seed for r in requests]
    if any(s is None for s in seeds):
        return None
    mixed = 0
    for s in seeds:
        mixed = (mixed * 1_000_003 + int(s)) % (2**63 - 1)  # type: ignore[arg-type]
    return mixed


class RowSampler(LogitsProcessor):
    """Per-row seeded sampling as a logits processor for greedy ``generate``: returns
    ``logits / τ + Gumbel noise`` drawn from each row's own generator (argmax of that is a sample
    of softmax(logits / τ)); keeps the clean ``logits / τ`` for the logprobs."""

    def __init__(self, seeds: Sequence[int], temperature: float, device: torch.device) -> None:
        self.temperature = temperature
        self.gens = [torch.Generator(device="cpu").manual_seed(sd) for sd in seeds]
        self.device = device
        self.clean: list[torch.Tensor] = []

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        scaled = scores.float() / self.temperature  # B×V (suppressed ids stay -inf)
        self.clean.append(scaled)
        u = torch.stack([torch.rand(scores.shape[-1], generator=g) for g in self.gens])  # B×V
        gumbel = -torch.log(-torch.log(u.clamp(1e-20, 1.0 - 1e-7)))  # B×V
        return scaled + gumbel.to(self.device)

    def clean_logprobs(self) -> torch.Tensor:
        return torch.stack(self.clean, dim=1)  # B×N×V


class _DecodeThreads(LogitsProcessor):
    """A no-op on the scores; its first call (right after the prefill forward) sets the decode
    steps' thread count: the prefill (vision tower, prompt) is compute-bound and gains from more
    threads, one-token decode steps are overhead-bound and lose."""

    def __init__(self, threads: int) -> None:
        self.threads, self.done = threads, False

    def __call__(self, input_ids: torch.Tensor, scores: torch.Tensor) -> torch.Tensor:
        if not self.done:
            torch.set_num_threads(self.threads)
            self.done = True
        return scores


class HFGenerator:
    """Batched local generation with a transformers model (see the module docstring)."""

    def __init__(
        self,
        policy: LoadedPolicy,
        *,
        max_batch: int = 16,
        window_s: float = 0.005,
        share_prefill: bool = True,
        turn_cache_entries: int = 32,
        prefill_threads: int | None = None,
        continuous: bool = False,
        max_live_rows: int = 64,
    ) -> None:
        self.policy = policy
        self.model = policy.model
        self.codec = ChatCodec(policy.processor, policy.family)
        # share_prefill=False / turn_cache_entries=0 only to measure or test the sharing against
        self.prefiller = Prefiller(
            self.model,
            policy.processor,
            pad_id=self.codec.pad_id,
            vision_ids=self.codec.vision_token_ids,
            share=share_prefill,
            turn_entries=turn_cache_entries,
        )
        self.max_batch = max_batch
        self.prefill_threads = (
            prefill_threads  # torch threads for the prefill only (None: unchanged)
        )
        self._queue = Batcher(self.run_batch, window_s=window_s, chunker=self.chunks)
        self._gen_configs: dict[tuple[tuple[str, Any], ...], GenerationConfig] = {}
        self._decoded = (0, 0)  # token-producing forwards, rows they advanced (the batch path)
        self.scheduler: ContinuousScheduler | None = None
        if continuous:  # one decode loop owns the model (paravt.models.hf.continuous)
            self.scheduler = ContinuousScheduler(self, window_s=window_s, max_rows=max_live_rows)

    async def generate(self, requests: Sequence[GenRequest]) -> list[GenOutput]:
        if self.scheduler is not None:
            return await self.scheduler.generate(requests)
        return await self._queue.generate(requests)

    async def aclose(self) -> None:
        await self._queue.aclose()
        if self.scheduler is not None:
            await self.scheduler.aclose()

    def decode_stats(self) -> DecodeStats:
        """Forwards that sampled a token and the live rows they advanced (both paths together)."""
        forwards, rows = self._decoded
        if self.scheduler is not None:
            s = self.scheduler.stats()
            forwards, rows = forwards + s.forwards, rows + s.rows
        return DecodeStats(forwards, rows)

    def chunks(self, batch: list[GenRequest]) -> list[list[int]]:
        """Row indices grouped by (temperature, top_p), at most ``max_batch`` per group."""
        groups: dict[tuple[float, float], list[int]] = {}
        for i, r in enumerate(batch):
            groups.setdefault((r.sampling.temperature, r.sampling.top_p), []).append(i)
        return [
            g[i : i + self.max_batch]
            for g in groups.values()
            for i in range(0, len(g), self.max_batch)
        ]

    # ---- blocking part (worker thread) -----------------------------------------------------
    def run_batch(self, requests: Sequence[GenRequest]) -> list[GenOutput]:
        """Serve requests of equal (temperature, top_p) in one ``model.generate``; never raises."""
        t0 = time.perf_counter()
        try:
            with prefill_threads(self.prefill_threads) as decode_threads:
                return self._generate_batch(requests, t0, decode_threads)
        except Exception as err:  # noqa: BLE001 - a failed batch is retried row by row
            if len(requests) == 1:
                return [error_output(f"{type(err).__name__}: {err}", time.perf_counter() - t0)]
            return [self.run_batch([r])[0] for r in requests]

    @torch.no_grad()
    def _generate_batch(
        self, requests: Sequence[GenRequest], t0: float, decode_threads: int
    ) -> list[GenOutput]:
        device = next(self.model.parameters()).device
        prep = self.prefiller.prepare(requests, device)
        inputs = prep.kwargs
        s = requests[0].sampling
        max_new = max(r.sampling.max_new_tokens for r in requests)
        sample = s.temperature > 0
        params: dict[str, Any] = {"max_new_tokens": max_new, "do_sample": sample}
        if sample:  # explicit, so that a checkpoint's generation_config (top_k=20...) never applies
            params.update(top_k=0, top_p=s.top_p, temperature=s.temperature)
        seeds = [r.sampling.seed for r in requests]
        row_sampler = None
        kwargs: dict[str, Any] = {}
        if sample and s.top_p >= 1.0 and all(x is not None for x in seeds):
            row_sampler = RowSampler([int(x) for x in seeds], s.temperature, device)  # type: ignore[arg-type]
            params = {"max_new_tokens": max_new, "do_sample": False}
            kwargs["logits_processor"] = LogitsProcessorList([row_sampler])
        kwargs["generation_config"] = self._generation_config(tuple(sorted(params.items())))
        if self.prefill_threads:  # back to the caller's thread count once the prefill is done
            kwargs.setdefault("logits_processor", LogitsProcessorList()).append(
                _DecodeThreads(decode_threads)
            )
        seed = _batch_seed(requests) if sample and row_sampler is None else None
        if seed is None:  # unseeded: draw from (and advance) the global RNG, never replay it
            out = self.model.generate(**inputs, **kwargs)
        else:
            with torch.random.fork_rng(devices=[] if device.type == "cpu" else [device]):
                torch.manual_seed(seed)
                out = self.model.generate(**inputs, **kwargs)
        width = inputs["input_ids"].shape[1]
        new = out.sequences[:, width:]  # B×N
        scores = (
            row_sampler.clean_logprobs()
            if row_sampler is not None
            else torch.stack(out.scores, dim=1)
        )
        logp = torch.log_softmax(scores.float(), dim=-1)  # B×N×V
        tok_logp = logp.gather(-1, new[..., None])[..., 0]  # B×N
        metrics = {
            "latency_s": time.perf_counter() - t0,
            "batch_size": float(len(requests)),
            "prefill_rows": float(prep.prefill_rows),
        }
        outs = [
            self._row_output(
                new[i],
                tok_logp[i],
                r.sampling.max_new_tokens,
                {**metrics, "prefill_tokens": float(prep.prefill_tokens[i])},
            )
            for i, r in enumerate(requests)
        ]
        self.prefiller.keep(requests, prep, out.past_key_values, width, [o.token_ids for o in outs])
        forwards, rows = self._decoded  # a row is live until its stop token or its own limit
        self._decoded = (forwards + new.shape[1], rows + sum(len(o.token_ids) for o in outs))
        return outs

    def _generation_config(self, params: tuple[tuple[str, Any], ...]) -> GenerationConfig:
        """The ``GenerationConfig`` of these parameters, built once: ``generate`` then skips its
        per-call scan of the model config for legacy generation settings (~8 ms of each call on a
        CPU; issue 14.4). ``generate`` deep-copies it before use, so sharing it is safe."""
        if params not in self._gen_configs:
            if len(self._gen_configs) >= 64:
                self._gen_configs.clear()
            self._gen_configs[params] = GenerationConfig(
                **dict(params),
                repetition_penalty=1.0,
                eos_token_id=list(self.codec.stop_token_ids),
                pad_token_id=self.codec.pad_id,
                suppress_tokens=list(self.codec.vision_token_ids),
                output_scores=True,
                return_dict_in_generate=True,
            )
        return self._gen_configs[params]

    def _row_output(
        self, ids: torch.Tensor, logps: torch.Tensor, max_new: int, metrics: dict[str, float]
    ) -> GenOutput:
        tokens = ids.tolist()[:max_new]
        stops = set(self.codec.stop_token_ids)
        end = next((i + 1 for i, t in enumerate(tokens) if t in stops), None)
        finish: FinishReason = "stop" if end is not None else "length"
        tokens = tokens[:end] if end is not None else tokens
        return GenOutput(
            token_ids=tuple(tokens),
            logprobs=tuple(float(x) for x in logps[: len(tokens)].tolist()),
            text=self.codec.decode(tokens),
            finish_reason=finish,
            metrics=metrics,
        )
