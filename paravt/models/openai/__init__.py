"""The OpenAI-compatible HTTP backend (vLLM / SGLang servers)."""
