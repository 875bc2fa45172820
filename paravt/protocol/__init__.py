"""The ParaVT text protocol (docs/ARCHITECTURE.md §2): tags, the one tool-call parser, answer
extraction, format statistics and the versioned prompt templates.

Import the submodules directly (``paravt.protocol.parser``, ``.answer``, ``.stats``, ``.prompts``);
this package imports nothing heavy (no torch).
"""
