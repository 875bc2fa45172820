"""paravt: agentic video RL with parallel tool use."""

__version__ = "0.1.0"
