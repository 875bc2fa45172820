"""One exception family for the whole package.

Model output is *data*: a malformed tool call or a failed tool becomes a result record, never an
exception. These errors are for bad inputs from the user (config, files, arguments) and for
infrastructure failures. Every message says what was wrong, which rule it broke, and how to fix it,
on one line: the command line prints it as is (``paravt.cli.root``, exit status 2), so commands
never catch these errors themselves.
"""

from __future__ import annotations


class ParavtError(Exception):
    """Base class of every error paravt raises on purpose."""


class ConfigError(ParavtError):
    """A configuration file or value is invalid (the message names every bad field)."""


class VideoError(ParavtError):
    """A video cannot be opened, probed or decoded, or a window does not fit the video."""


class ToolCallError(ParavtError):
    """A tool call is malformed or violates a limit (used inside tools; surfaced as data)."""


class ModelError(ParavtError):
    """A model cannot be loaded, or an inference backend failed after its retries."""


class DataError(ParavtError):
    """A dataset file or row does not follow the schema."""
