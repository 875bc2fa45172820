"""The local Hugging Face engine: generator, prefill and caches, batching, replicas."""
