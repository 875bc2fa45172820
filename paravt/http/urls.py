"""The URL convention of OpenAI-compatible servers, shared by the openai backend and the LLM judge
(torch-free, so that reward code can import it)."""

from __future__ import annotations


def api_base(url: str) -> str:
    """``http://host:port`` or ``http://host:port/v1`` (trailing ``/`` allowed) → the ``/v1`` form,
    to which ``/models`` and ``/chat/completions`` are appended."""
    base = url.strip().rstrip("/")
    return base if base.endswith("/v1") else base + "/v1"
