"""PARA-GRPO (docs/ARCHITECTURE.md §5): nFrames gating, filters, group advantages, PPO-clip loss,
trainers.

The math lives in small pure modules (`gating`, `filters`, `advantages`, `loss`) that both the
single-process trainer and the verl integration call; `update` is the model-facing PPO step,
`grpo` and `sft` the trainers, `loop` their shared outer loop.
"""
