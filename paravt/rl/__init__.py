"""PARA-GRPO (DESIGN §5): nFrames gating, filters, group advantages, PPO-clip loss, batching.

The math lives in small pure modules (`gating`, `filters`, `advantages`, `loss`, `batching`) that
both the single-process trainer and the verl integration call.
"""
