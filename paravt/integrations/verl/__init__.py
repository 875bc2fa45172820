"""PARA-GRPO on verl 0.9.x (docs/ARCHITECTURE.md §8): multi-GPU / multi-node training.

- ``agent_loop``: ``ParavtAgentLoop`` (registered as ``paravt_agent``) runs our Episode inside a
  verl agent-loop worker, with verl's LLM server client as the ``Generator`` backend; one episode
  returns its sub-agent trajectories and then the main trajectory as a list of
  ``AgentLoopOutput`` (verl copies the LAST output's reward to the others and broadcasts the
  session's GRPO advantage to every output of the session).
- ``generator``: the ``Generator`` adapter over ``server_manager.generate`` (tokens in, tokens +
  logprobs out).
- ``reward``: ``compute_score`` for verl's reward manager (users of verl's own tool agent).
- ``render``: ``TrainConfig`` → verl's Hydra config (``render_verl_config``).
- the cluster / engine knobs are ``paravt.config.VerlConfig`` (``verl:`` in YAML, ``cfg.verl``).
- ``data``: our rl.parquet → verl's RLHF parquet layout.

Only ``agent_loop``, ``generator`` and the test helpers import verl; ``render`` and ``reward``
import without it, so ``paravt train rl --engine verl --dry-run`` works anywhere.
"""
