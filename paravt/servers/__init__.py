"""Inference servers for the openai backend: ``paravt serve-model`` (vLLM / SGLang) builds the
engine's command line with the flags our protocol needs and supervises the process."""
