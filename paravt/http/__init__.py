"""HTTP client helpers shared by every OpenAI-compatible client (the model backend, the LLM judge,
the distillation teacher): one bounded exchange (`bounded`), the ONE retry policy (`retry`), the
`/v1` URL convention (`urls`). Torch-free."""
