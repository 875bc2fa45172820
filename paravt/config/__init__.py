"""Every knob of paravt, typed and validated, in one place (this package).

Each default is written once, here, with one ``description``. Defaults marked [paper] follow
docs/ARCHITECTURE.md §4–5. Objects below the CLI/trainer layer never receive these
models: builders pass plain values. ``paravt config show`` prints the reference YAML.

The package: `choices` (the ONE definition of each choice set), `sections` (the config models
and their cross-field checks), `loading` (config files, --set overrides, flags, validation
messages), `yamltext` (the ONE YAML loader). Import from ``paravt.config``; the modules are its
layout, not separate APIs.
"""

from __future__ import annotations

from paravt.config.choices import (
    MAX_OVERVIEW_FRAMES,
    PROMPT_VERSION,
    SUBAGENT_PROMPT,
    AdvNormUnit,
    CallForms,
    DispatchMode,
    EvalProtocol,
    FormatRules,
    KLIn,
    KLKind,
    LossAgg,
    LrDecay,
    ModelFamily,
    PromptClass,
    RLFilter,
    Scoring,
    ServeEngine,
    SubagentPrompt,
    TaskType,
    ToolMode,
    TurnRules,
    backend_of,
    backend_problem,
    check_url,
    frame_budgets_problem,
    http_url_or_none,
    url_problem,
)
from paravt.config.episode import ModelConfig, RolloutConfig, SamplingConfig, VideoConfig
from paravt.config.keys import is_loopback, read_key_file, require_key_beyond_loopback
from paravt.config.loading import (
    RUN_CONFIG,
    Flag,
    apply_override,
    dump,
    load,
    load_for_model,
    read_mapping,
    resolve,
    save,
    set_value,
    validate,
    validation_message,
)
from paravt.config.reward import RewardConfig
from paravt.config.sections import (
    DistillConfig,
    EvalConfig,
    ToolServerConfig,
    TrainConfig,
    cross_field_problems,
)
from paravt.config.training import (
    GatingConfig,
    PriorConfig,
    RLConfig,
    SFTConfig,
)
from paravt.config.verl import VerlConfig
from paravt.config.yamltext import MAX_CONFIG_BYTES, MAX_YAML_NODES, parse_yaml

__all__ = [
    "CallForms",
    "TurnRules",
    "DispatchMode",
    "EvalProtocol",
    "PROMPT_VERSION",
    "SUBAGENT_PROMPT",
    "RLFilter",
    "SubagentPrompt",
    "DistillConfig",
    "EvalConfig",
    "Flag",
    "GatingConfig",
    "AdvNormUnit",
    "KLIn",
    "KLKind",
    "LossAgg",
    "LrDecay",
    "MAX_CONFIG_BYTES",
    "MAX_OVERVIEW_FRAMES",
    "MAX_YAML_NODES",
    "ModelConfig",
    "ModelFamily",
    "PriorConfig",
    "PromptClass",
    "RLConfig",
    "RUN_CONFIG",
    "RewardConfig",
    "RolloutConfig",
    "SFTConfig",
    "SamplingConfig",
    "Scoring",
    "ServeEngine",
    "TaskType",
    "ToolMode",
    "FormatRules",
    "ToolServerConfig",
    "TrainConfig",
    "VerlConfig",
    "VideoConfig",
    "apply_override",
    "backend_of",
    "backend_problem",
    "check_url",
    "cross_field_problems",
    "dump",
    "frame_budgets_problem",
    "http_url_or_none",
    "is_loopback",
    "load",
    "load_for_model",
    "parse_yaml",
    "read_key_file",
    "read_mapping",
    "require_key_beyond_loopback",
    "resolve",
    "save",
    "set_value",
    "url_problem",
    "validate",
    "validation_message",
]
