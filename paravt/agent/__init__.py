"""The agent: token-level trajectories and episodes (docs/ARCHITECTURE.md §2–3)."""

from paravt.agent.episode import run_episode, run_group
from paravt.agent.result import EpisodeResult, episode_reward
from paravt.agent.settings import EpisodeInput, EpisodeSettings
from paravt.agent.trajectory import CallRecord, Trajectory, TrajectoryBuilder, TurnRecord

__all__ = [
    "CallRecord",
    "EpisodeInput",
    "EpisodeResult",
    "EpisodeSettings",
    "Trajectory",
    "TrajectoryBuilder",
    "TurnRecord",
    "episode_reward",
    "run_episode",
    "run_group",
]
