"""Rollout metrics (docs/ARCHITECTURE.md §6), aggregated from per-rollout records. Pure Python.

Keys of ``aggregate`` (all floats; means over the records unless said otherwise):

- ``n``: number of records;
- ``f_tau``: mean R_fmt of the GENERATED text under the run's own weights
  (``RewardBreakdown.format_generated``): what the authors' release logs as ``format_reward``
  (the forced think prefix is not scored); at the sampling temperature when the records are the
  training rollouts. ``f_tau_ref``: mean R_fmt of the scored text under the default weights with
  the anchor on (``format_ref``), one yardstick across reward switches;
- ``kappa``: mean number of tool calls EXECUTED per rollout (``RolloutRecord.executed_calls``,
  the sub-agent calls that ran, as the release logs ``tool_call_count``; records without an
  execution record count their parseable calls); ``kappa_written``: mean number of calls the
  model WROTE (``RewardBreakdown.n_calls``: well-formed or not, run or not);
- ``closed/think``, ``closed/tool_call``, ``closed/answer``: fraction of rollouts with a
  correctly closed first ``<think>``, a closed and JSON-parseable ``<tool_call>``, a closed
  ``<answer>``; ``closed/all``: fraction of WELL-FORMED rollouts, whose first ``<think>`` and
  ``<answer>`` are closed and which, if they wrote a ``<tool_call>``, closed a JSON-parseable one:
  a rollout without ``<answer>`` never counts (the RL init's selection key, docs/repro.md);
- ``tool_code_rate``: fraction emitting ``<tool_code>``;
- ``skip_tool_rate``: fraction with no executed call (``kappa``'s count is 0);
- ``path/<path>``: the share of rollouts on each path of ``PATHS`` (``classify_path``: a call
  executed, a call written but not run, answered without a call, broken), the reward-by-path
  probe's classes (issue 47, ``paravt.repro.paths``) logged at every RL step;
- ``degenerate_rate``;
- ``acc``, ``acc/task/<task>``, ``acc/n/<n_frames>`` (records with ``n_frames`` set);
- ``reward/mean``; ``reward/<term>`` for every term of ``paravt.rewards.terms.TERMS`` (acc,
  format, tool) and every part of ``COMPONENTS`` (format_base, anchor); ``reward/bias``;
- ``subagent_latency_s`` (records that have it) and ``tokens/<key>`` (mean over records holding
  that key).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from paravt.rewards.composite import RewardBreakdown
from paravt.rewards.terms import COMPONENT_NAMES, TERM_NAMES

PathName = Literal["executed", "written_not_run", "direct", "broken"]
PATHS: tuple[PathName, ...] = ("executed", "written_not_run", "direct", "broken")


def classify_path(
    *, executed_calls: int, written_calls: int, tool_code: bool, answered: bool
) -> PathName:
    """The one path of a rollout, decided in this order: ``executed`` (a tool call ran);
    ``written_not_run`` (a ``<tool_call>``, well-formed or not, or a ``<tool_code>`` was written
    and none ran); ``direct`` (no call written, a FINISHED answer: an ``<answer>`` block or text
    after ``</think>``, ``RewardBreakdown.finished``); ``broken`` (neither: e.g. a think that never
    closed, whose last line the reward still reads as its answer)."""
    if executed_calls > 0:
        return "executed"
    if written_calls > 0 or tool_code:
        return "written_not_run"
    return "direct" if answered else "broken"


def path_shares(paths: Sequence[PathName]) -> dict[str, float]:
    """The share of each path of ``PATHS`` among ``paths`` (0.0 for a path absent or no path)."""
    n = len(paths)
    return {p: (sum(1 for x in paths if x == p) / n if n else 0.0) for p in PATHS}


@dataclass(frozen=True)
class RolloutRecord:
    breakdown: RewardBreakdown
    task: str
    n_frames: int | None = None  # gated overview budget of the rollout's group
    subagent_latency_s: float | None = None  # mean latency of this rollout's sub-agent calls
    tokens: Mapping[str, int] = field(
        default_factory=dict
    )  # e.g. {"main_text": 120, "visual": 512}
    executed_calls: int | None = None  # tool calls that ran; None: no execution record

    @property
    def calls(self) -> int:
        """The tool calls of kappa: those EXECUTED, or (no execution record) those parseable."""
        if self.executed_calls is not None:
            return self.executed_calls
        return self.breakdown.n_parseable

    @property
    def written_calls(self) -> int:
        """The tool calls the model WROTE (well-formed or not, run or not)."""
        return self.breakdown.n_calls

    @property
    def path(self) -> PathName:
        """``classify_path`` of this rollout (its executed calls as kappa counts them)."""
        b = self.breakdown
        return classify_path(
            executed_calls=self.calls,
            written_calls=b.n_calls,
            tool_code=b.tool_code,
            answered=b.finished,
        )


def aggregate(records: Sequence[RolloutRecord]) -> dict[str, float]:
    """The docs/ARCHITECTURE.md §6 metrics of ``records`` (empty input → ``{"n": 0.0}``)."""
    recs = list(records)
    out: dict[str, float] = {"n": float(len(recs))}
    if not recs:
        return out
    b = [r.breakdown for r in recs]
    out["f_tau"] = _mean(x.format_generated for x in b)
    out["f_tau_ref"] = _mean(x.format_ref for x in b)
    out["kappa"] = _mean(r.calls for r in recs)
    out["kappa_written"] = _mean(r.written_calls for r in recs)
    out["closed/think"] = _mean(x.closed_think for x in b)
    out["closed/tool_call"] = _mean(x.closed_tool_call for x in b)
    out["closed/answer"] = _mean(x.closed_answer for x in b)
    out["closed/all"] = _mean(well_formed(x) for x in b)
    out["tool_code_rate"] = _mean(x.tool_code for x in b)
    out["skip_tool_rate"] = _mean(r.calls == 0 for r in recs)
    out.update({f"path/{p}": v for p, v in path_shares([r.path for r in recs]).items()})
    out["degenerate_rate"] = _mean(x.degenerate for x in b)
    out["acc"] = _mean(x.acc for x in b)
    for key, vals in _grouped(recs, lambda r: f"acc/task/{r.task}").items():
        out[key] = _mean(vals)
    for key, vals in _grouped(
        recs, lambda r: None if r.n_frames is None else f"acc/n/{r.n_frames}"
    ).items():
        out[key] = _mean(vals)
    out["reward/mean"] = _mean(x.reward for x in b)
    for name in TERM_NAMES:
        out[f"reward/{name}"] = _mean(x.terms[name] for x in b)
    for name in COMPONENT_NAMES:
        out[f"reward/{name}"] = _mean(x.components[name] for x in b)
    out["reward/bias"] = _mean(x.bias for x in b)
    lat = [r.subagent_latency_s for r in recs if r.subagent_latency_s is not None]
    if lat:
        out["subagent_latency_s"] = _mean(lat)
    tok: dict[str, list[float]] = defaultdict(list)
    for r in recs:
        for k, v in r.tokens.items():
            tok[f"tokens/{k}"].append(float(v))
    out.update({k: _mean(v) for k, v in sorted(tok.items())})
    return out


def well_formed(b: RewardBreakdown) -> bool:
    """Closed think, closed answer, and a closed JSON-parseable call if any call was written."""
    return b.closed_think and b.closed_answer and (b.n_calls == 0 or b.closed_tool_call)


def _grouped(
    recs: Iterable[RolloutRecord], key_of: Callable[[RolloutRecord], str | None]
) -> dict[str, list[float]]:
    groups: dict[str, list[float]] = defaultdict(list)
    for r in recs:
        key = key_of(r)
        if key is not None:
            groups[key].append(r.breakdown.acc)
    return dict(sorted(groups.items()))


def _mean(values: Iterable[float | bool | int]) -> float:
    vals = [float(v) for v in values]
    return sum(vals) / len(vals) if vals else 0.0
