"""One question on one video: the turn loop, whatever the dispatch mode (docs/ARCHITECTURE.md §2).

The main agent sees the system prompt, the question and an overview of ``nframes`` frames. Each
main turn starts with the forced think prefix (prompt tokens). What its tool calls become is the
dispatch mode's (``paravt.agent.modes``): ``parallel`` (K calls at once, each crop summarised by a
sub-agent, K summaries in ONE tool turn), ``sequential`` and ``eva`` (one call per turn, frames
re-injected), ``none`` (no tools; the first response is final).

Turns are counted as the release counts them (``rollout.max_turns`` = R): up to R + 1 main
generations. Which calls a turn holds, which run, and when the episode ends after a turn
(``rollout.call_forms``, ``rollout.turn_rules``) are ``paravt.agent.turn_rules``.

Failures are data: a malformed call (``per_call``), a bad window, a broken video or a sub-agent
timeout becomes an ``error:`` line in the tool response, and the episode goes on. An observation
that would overflow the context is rolled back and the episode ends with reason ``length`` (vision
spans never cut). An unexpected exception (a bug, not model behaviour) ends only ITS episode: the
result carries ``crashed=True`` and the error, the traceback goes to the log, and the other
episodes of ``run_group`` (the GRPO group) go on. The result and its reward are
``paravt.agent.result``; the text of the turns (opening messages, the tool-response turn) is
``paravt.agent.messages``.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from paravt.agent.messages import compose_tool_turn, opening_messages, raw_text
from paravt.agent.modes import MODES, Dispatched, DispatchMode
from paravt.agent.result import EpisodeResult
from paravt.agent.settings import EpisodeInput, EpisodeSettings, ForcedAnswer, derive_seed
from paravt.agent.tally import Tally, count_vision_tokens
from paravt.agent.trajectory import CallRecord, EndReason, Trajectory, TrajectoryBuilder, TurnRecord
from paravt.agent.turn_rules import read_calls, stop_reason, validate_turn
from paravt.errors import VideoError
from paravt.models.base import ChatMessage, Generator, GenOutput, GenRequest, SamplingParams
from paravt.models.chat import ChatCodec
from paravt.protocol import tags
from paravt.protocol.answer import extract_answer
from paravt.protocol.parser import ParsedCall
from paravt.protocol.prompts import positional_params
from paravt.tools import Observation, ToolContext, ToolSet, build_toolset
from paravt.video import overview_count, probe, sample_frames
from paravt.video.types import Frames, VideoInfo

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class MainGeneration:
    """One main-agent generation request and its output."""

    out: GenOutput
    prefix: str  # the forced response prefix (the think prefix, or "")
    visual: int  # vision tokens of the prompt
    n_prompt: int  # all tokens of the prompt


@dataclass
class _Run:
    inp: EpisodeInput
    generator: Generator
    codec: ChatCodec
    settings: EpisodeSettings
    tools: ToolSet
    episode_id: str
    main: TrajectoryBuilder = field(init=False)
    mode: DispatchMode = field(init=False)
    positional: dict[str, tuple[str, ...]] = field(
        init=False
    )  # python-style call order, from the tools' specs
    messages: list[ChatMessage] = field(default_factory=list)
    subs: list[Trajectory] = field(default_factory=list)
    calls: list[CallRecord] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    generated: list[str] = field(default_factory=list)  # texts without their forced prefixes
    tally: Tally = field(default_factory=Tally)
    error: str | None = None
    ctx: ToolContext | None = None  # one per episode: budgets (frame_select) persist across turns
    n_sub_issued: int = 0  # sub-agent indices handed out so far (1-based indices, never reused)
    backend_errors: int = 0

    def __post_init__(self) -> None:
        self.main = TrajectoryBuilder(self.episode_id, "main", 0)
        self.mode = MODES[self.settings.mode]
        self.positional = positional_params(self.tools.specs)

    # -- setup -----------------------------------------------------------------------------
    async def _open_video(self) -> tuple[VideoInfo | None, Frames | None]:
        s = self.settings
        try:
            info = await asyncio.to_thread(probe, self.inp.video)
            if self.inp.nframes <= 0:
                return info, None
            frames = await asyncio.to_thread(
                sample_frames,
                self.inp.video,
                0.0,
                info.duration,
                nframes=overview_count(self.inp.nframes, info.duration, s.overview_fps),
                max_pixels=s.overview_max_pixels,
                size_factor=s.size_factor,
                whole=True,
            )  # whole: the overviews of a video at every n (and its crops) share one decode
            return info, frames
        except VideoError as err:
            self.error = str(err)
            return None, None

    # -- one main turn -----------------------------------------------------------------------
    async def _generate_main(self, max_new_tokens: int | None = None) -> MainGeneration | None:
        """One main-agent generation (None: no room is left in the context); ``max_new_tokens``
        caps this one below the settings' own."""
        s = self.settings
        prefix = tags.THINK_PREFIX if s.think_prefix else ""
        head = self.codec.generation_prompt(prefix)
        room = s.max_context_tokens - len(self.main) - len(head)
        if room <= 0:
            return None
        self.main.add_context(head)
        prompt_ids = tuple(self.main.ids)
        visual = count_vision_tokens(self.codec, prompt_ids)
        self.tally.add_prompt(visual=visual, total=len(prompt_ids))
        cap = min(room, max_new_tokens or s.sampling.max_new_tokens)
        sampling = s.sampling if s.sampling.max_new_tokens <= cap else _with_max(s.sampling, cap)
        sampling = derive_seed(sampling, self.episode_id, "main", len(self.texts))
        req = GenRequest(
            prompt_ids,
            tuple(self.messages),
            tuple(self.main.videos),
            tuple(self.main.images),
            sampling,
            response_prefix=prefix,
            keep_kv=True,
        )
        (out,) = await self.generator.generate([req])
        self.tally.generated += len(out.token_ids)
        return MainGeneration(out, prefix, visual, len(prompt_ids))

    def _take(self, gen: MainGeneration, t0: float) -> str | None:
        """The generation's text, recorded; None when the backend failed (its error turn kept)."""
        out = gen.out
        text = gen.prefix + raw_text(self.codec, out)
        self.texts.append(text)
        self.generated.append(text.removeprefix(gen.prefix))
        if out.finish_reason == "error":
            self.error = out.error
            self.backend_errors += 1
            self.main.turns.append(TurnRecord(text, "error", latency_s=time.perf_counter() - t0))
            self.main.add_context(self.codec.close_turn(()))
            return None
        self._record_sampled(out)
        self.messages.append(ChatMessage("assistant", text))
        return text

    def _record_turn(
        self, gen: MainGeneration, text: str, calls: tuple[CallRecord, ...], t0: float
    ) -> None:
        out = gen.out
        self.main.turns.append(
            TurnRecord(
                text,
                out.finish_reason,
                calls,
                time.perf_counter() - t0,
                gen.n_prompt,
                gen.visual,
                len(out.token_ids),
            )
        )

    def _record_sampled(self, out: GenOutput) -> None:
        self.main.add_sampled(out.token_ids, out.logprobs)
        self.main.add_context(self.codec.close_turn(out.token_ids))

    async def run(self) -> EpisodeResult:
        t0 = time.perf_counter()
        crashed = False
        try:
            end = await self._play()
        except Exception as err:  # noqa: BLE001 - one episode's bug must not end the group (docs/ARCHITECTURE.md §2)
            log.exception("episode %s crashed", self.episode_id)
            self.error, end, crashed = (
                f"episode crashed: {type(err).__name__}: {err}",
                "error",
                True,
            )
        finally:
            await self._finish_tools()
        completion = tags.join_turns(self.texts)
        ok_calls = sum(1 for c in self.calls if c.ok)
        return EpisodeResult(
            input=self.inp,
            main=self.main.freeze(end),
            subs=tuple(self.subs),
            completion=completion,
            answer=extract_answer(completion) if completion else None,
            calls=tuple(self.calls),
            n_successful_calls=ok_calls,
            tokens=self.tally.freeze(),
            latency_s=time.perf_counter() - t0,
            error=self.error,
            backend_errors=self.backend_errors,
            crashed=crashed,
            generated=tags.join_turns(self.generated),
        )

    async def _play(self) -> EndReason:
        info, overview = await self._open_video()
        self.messages = opening_messages(
            self.inp, self.settings, self.mode, self.tools.specs, info, overview, self.error
        )
        for msg in self.messages:
            enc = self.codec.encode_message(msg)
            self.main.add_context(enc.ids, enc.videos, enc.images)
        return await self._loop(info)

    async def _finish_tools(self) -> None:
        if self.ctx is None:
            return
        try:
            await self.tools.finish(self.ctx)
        except Exception:  # noqa: BLE001 - releasing a runtime must not turn a result into a crash
            log.exception("episode %s: releasing its tool runtimes failed", self.episode_id)

    async def _loop(self, info: VideoInfo | None) -> EndReason:
        s = self.settings
        for turn in range(s.max_generations):
            t0 = time.perf_counter()
            gen = await self._generate_main()
            if gen is None:
                return "length"
            out = gen.out
            text = self._take(gen, t0)
            if text is None:
                return "error"
            parsed = read_calls(text, s, self.positional, out.finish_reason)
            stop = stop_reason(s, self.mode, out.finish_reason, bool(parsed), turn)
            if stop is None:
                records, fits = await self._act(turn, parsed, info)
            elif stop == "max_turns" and s.turn_rules == "release":
                records, fits = await self._act(turn, parsed, info, read=False)
            else:
                records, fits = [], True
            kept = tuple(records) if fits else ()  # a rolled-back tool turn leaves no trace
            self._record_turn(gen, text, kept, t0)
            if stop:
                return stop
            if not fits:
                return "length"
            if s.forced_answer is not None and turn == s.max_turns - 1:
                return await self._forced_turn(s.forced_answer)
        return "max_turns"

    async def _forced_turn(self, forced: ForcedAnswer) -> EndReason:
        """The last tool round is read: one user turn asks for the answer, one reply capped at
        ``forced.max_new_tokens`` ends the episode (its calls, if any, never run)."""
        t0 = time.perf_counter()
        msg = ChatMessage("user", forced.text)  # text only: no media to carry
        self.main.add_context(self.codec.encode_message(msg).ids)
        self.messages.append(msg)
        gen = await self._generate_main(forced.max_new_tokens)
        if gen is None:
            return "length"
        text = self._take(gen, t0)
        if text is None:
            return "error"
        self._record_turn(gen, text, (), t0)
        return "max_turns"

    # -- tools and sub-agents ---------------------------------------------------------------
    def _ctx(self, info: VideoInfo) -> ToolContext:
        if self.ctx is not None:
            return self.ctx
        s = self.settings
        self.ctx = ToolContext(
            episode_id=self.episode_id,
            video=self.inp.video,
            info=info,
            crop_max_frames=s.crop_max_frames,
            crop_fps=s.crop_fps,
            crop_max_pixels=s.crop_max_pixels,
            size_factor=s.size_factor,
        )
        return self.ctx

    async def _act(
        self, turn: int, parsed: Sequence[ParsedCall], info: VideoInfo | None, read: bool = True
    ) -> tuple[list[CallRecord], bool]:
        """Run the turn's calls and append their tool turn. ``read=False`` (the final turn under
        the release's rules): they run and are recorded (kappa, sub-agents), but no generation
        reads them, so no tool turn is appended."""
        t0 = time.perf_counter()
        calls = validate_turn(parsed, info, self.settings, self.mode, self.tools.names, self.error)
        valid = [c for c in calls if c.error is None]
        if info is None:
            obs_valid = [Observation(error=f"video unavailable: {self.error}") for _ in valid]
        else:
            obs_valid = await self.tools.run_calls(self._ctx(info), valid)
        obs_by_pos = dict(zip([id(c) for c in valid], obs_valid, strict=True))
        observations = [obs_by_pos.get(id(c)) or Observation(error=c.error) for c in calls]
        done = await self.mode.deliver(self, observations)
        lines, videos, records = compose_tool_turn(
            turn, calls, done.observations, time.perf_counter() - t0
        )
        if not read:
            self._apply(done, True)
            self.calls.extend(records)
            return records, True
        msg = ChatMessage("tool", tags.render_tool_response_body(lines), videos=tuple(videos))
        enc = self.codec.encode_message(msg)
        prefix = tags.THINK_PREFIX if self.settings.think_prefix else ""
        fits = (
            len(self.main) + len(enc.ids) + len(self.codec.generation_prompt(prefix))
            < self.settings.max_context_tokens
        )
        self._apply(done, fits)
        if fits:
            self.main.add_context(enc.ids, enc.videos, enc.images)
            self.messages.append(msg)
            self.calls.extend(records)
        return records, fits

    def _apply(self, done: Dispatched, fits: bool) -> None:
        """The episode's state after its mode's ``deliver``: tokens, sub-agent indices and backend
        errors are spent whether or not the tool turn fits; a rolled-back turn leaves no trace in
        the trajectories (no trained sub-agents, no counted calls)."""
        self.tally.add(done.tokens)
        self.n_sub_issued += done.n_sub_issued
        self.backend_errors += done.backend_errors
        if fits:
            self.subs.extend(done.subs)


def _with_max(sp: SamplingParams, n: int) -> SamplingParams:
    return replace(sp, max_new_tokens=max(1, n))


async def run_episode(
    inp: EpisodeInput,
    *,
    generator: Generator,
    codec: ChatCodec,
    settings: EpisodeSettings,
    episode_id: str | None = None,
    tools: ToolSet | None = None,
) -> EpisodeResult:
    """Run one episode. Never raises for model output, a broken video or a bug inside the episode
    (``EpisodeResult.crashed``, see the module doc); only cancellation propagates."""
    toolset = tools if tools is not None else build_toolset(["crop_video"])
    run = _Run(inp, generator, codec, settings, toolset, episode_id or uuid.uuid4().hex[:12])
    return await run.run()


async def run_group(
    inputs: Sequence[EpisodeInput],
    *,
    generator: Generator,
    codec: ChatCodec,
    settings: EpisodeSettings,
    tools: ToolSet | None = None,
    episode_ids: Sequence[str] | None = None,
) -> list[EpisodeResult]:
    """Run many episodes concurrently (G rollouts of many prompts). Their generation requests
    reach the backend together, so a batching backend serves them in shared batches; decoded
    overview frames are shared through the video cache. One episode's exception is its own
    ``crashed`` result: the others finish and the list always has one result per input."""
    toolset = tools if tools is not None else build_toolset(["crop_video"])
    ids = list(episode_ids) if episode_ids is not None else [uuid.uuid4().hex[:12] for _ in inputs]
    return list(
        await asyncio.gather(
            *(
                run_episode(
                    inp,
                    generator=generator,
                    codec=codec,
                    settings=settings,
                    episode_id=eid,
                    tools=toolset,
                )
                for inp, eid in zip(inputs, ids, strict=True)
            )
        )
    )
