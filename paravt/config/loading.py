"""Reading and writing configs: the ONE YAML loader (bounded), --set overrides, flags, validation
messages that name the input, and the settings a trained model directory carries."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from difflib import get_close_matches
from pathlib import Path
from typing import Any, TypeVar

import yaml
from pydantic import BaseModel, ValidationError

from paravt.config.sections import TrainConfig
from paravt.config.yamltext import MAX_CONFIG_BYTES, parse_yaml
from paravt.errors import ConfigError

M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Flag:
    """A command-line option that sets one config field (``--workers 0`` → ``Flag("--workers",
    "eval.workers", 0)``); ``value`` None = not given. Errors name the option."""

    name: str
    key: str
    value: Any


def resolve(
    cls: type[M],
    data: dict[str, Any],
    source: str,
    overrides: Sequence[str] = (),
    flags: Sequence[Flag] = (),
) -> M:
    """``data`` (a file's mapping, or ``{}``), then the ``--set key.sub=value`` overrides, then the
    given flags, validated into ``cls``: the ONE path from the command line to a typed config, so a
    value out of range is refused (`ConfigError`), never replaced."""
    for item in overrides:
        apply_override(data, item)
    given = [f for f in flags if f.value is not None]
    for f in given:
        set_value(data, f.key, f.value)
    return validate(cls, data, source, labels={f.key: f.name for f in given})


#: Fields that were folded into another (issue 32: one name for the overview frame budget): a
#: config that still sets one is told where it went; a checkpoint's carried settings drop them.
MOVED = {
    "eval.nframes": "video.overview_nframes",
    "eval.benchmark_max_frames": "video.overview_nframes",
    "rollout.execute_tool_code": "rollout.call_forms",  # issue 46: release runs <tool_code>
    "sft.include_subagent_rows": "sft.subagent_rows",  # issue 47: a share, the paper's 0
}


def validate(
    cls: type[M],
    data: dict[str, Any],
    source: str = "<dict>",
    labels: Mapping[str, str] | None = None,
) -> M:
    """Build ``cls`` from a dict, raising one-line `ConfigError` that names every bad field
    (``labels``: the command-line option that set a field)."""
    try:
        return cls.model_validate(data)
    except ValidationError as err:
        raise ConfigError(validation_message(err, source, cls, labels)) from None


def validation_message(
    err: ValidationError,
    source: str,
    cls: type[BaseModel] | None = None,
    labels: Mapping[str, str] | None = None,
) -> str:
    """One line naming every bad field of ``err`` (with the option that set it, from ``labels``)."""
    labels = labels or {}
    parts, own = [], 0
    for e in err.errors():
        loc = ".".join(str(p) for p in e["loc"])
        flag = next((labels[k] for k in labels if loc == k or loc.startswith(k + ".")), None)
        name = f"{flag} ({loc})" if flag else loc
        if e["type"] == "value_error":  # our own checks: the message names the values and the fix
            msg, own = e["msg"].removeprefix("Value error, "), own + 1
            parts.append(f"{name}: {msg}" if name else msg)
        elif e["type"] == "extra_forbidden" and loc in MOVED:
            parts.append(
                f"{name}: gone; its value is set by {MOVED[loc]} now (one name per concept)"
            )
        elif e["type"] == "extra_forbidden":
            close = (
                get_close_matches(str(e["loc"][-1]), _field_names(cls, e["loc"][:-1]), n=3)
                if cls
                else []
            )
            hint = f"did you mean {' or '.join(close)}?" if close else ""
            leaves = _leaves(e.get("input"))  # `--set a.b.c.d=1`: name the whole path, not `a`
            if leaves:
                shown = ", ".join(f"{name}.{leaf}" for leaf in leaves[:3])
                more = f" and {len(leaves) - 3} more" if len(leaves) > 3 else ""
                parts.append(
                    f"{shown}{more}: unknown field{'s' if len(leaves) > 1 else ''} ({name} is no "
                    f"section{'; ' + hint if hint else ''})"
                )
            else:
                parts.append(f"{name}: unknown field" + (f" ({hint})" if hint else ""))
        elif e["type"] == "literal_error" and isinstance(e.get("input"), bool):
            parts.append(
                f"{name}: YAML read an unquoted on/yes/true (or off/no/false) as "
                f"{str(e['input']).lower()}, not a choice; write one of "
                f"{e.get('ctx', {}).get('expected', 'its choices')} in quotes"
            )
        else:
            parts.append(f"{name or '<root>'}: {e['msg']} (got {_short(e.get('input'))})")
    fix = (
        ""
        if own == len(parts)
        else (
            f"; fix {'it' if len(parts) == 1 else 'them'} "
            "(`paravt config show` prints every field with its default)"
        )
    )
    return f"invalid config ({source}): {'; '.join(parts)}{fix}"


def _field_names(cls: type[BaseModel], loc: Sequence[Any]) -> list[str]:
    model: Any = cls
    for part in loc:
        field = model.model_fields.get(str(part))
        model = field.annotation if field is not None else None
        if not (isinstance(model, type) and issubclass(model, BaseModel)):
            return []
    return list(model.model_fields)


def _leaves(value: Any, depth: int = 0) -> list[str]:
    """The dotted paths of the leaves under a mapping (``{"b": {"c": 1}}`` → ``["b.c"]``)."""
    if not isinstance(value, dict) or depth > 16:
        return []
    out: list[str] = []
    for key, sub in value.items():
        below = _leaves(sub, depth + 1)
        out += [f"{key}.{leaf}" for leaf in below] if below else [str(key)]
    return out


def _short(value: Any, width: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= width else text[: width - 3] + "..."


# ---- config files
def read_mapping(path: str | Path, cls: type[BaseModel] | None = None) -> dict[str, Any]:
    """The top-level mapping of a YAML config file (not validated yet); `ConfigError` when the file
    is missing, too large (naming the key of its longest line, checked against ``cls``'s fields),
    empty, not UTF-8, not YAML or not a mapping."""
    p = Path(path)
    if not p.is_file():
        what = "is a directory" if p.is_dir() else "does not exist"
        raise ConfigError(f"config file {p} {what}; pass an existing YAML file (see configs/)")
    try:
        size = p.stat().st_size
        if size > MAX_CONFIG_BYTES:
            raise ConfigError(
                f"config file {p} is {size:,} bytes, over the {MAX_CONFIG_BYTES:,}-byte limit of a "
                f"config{_longest_line(p, size, cls)}; pass the YAML config, not a data file"
            )
        raw = p.read_bytes()
    except OSError as err:
        raise ConfigError(
            f"cannot read config file {p}: {err.strerror}; check its permissions"
        ) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(
            f"config file {p} is not UTF-8 text (byte {raw[err.start]:#04x} at offset "
            f"{err.start}); "
            "save it as UTF-8"
        ) from None
    data = parse_yaml(text, f"config file {p}")
    if data is None:  # no document, or only comments: never "the defaults" by accident
        raise ConfigError(
            f"empty config file {p}: it sets no field; write the fields to change as in configs/ "
            "(`paravt config show` prints them all), or `{}` for every default"
        )
    if not isinstance(data, dict):
        raise ConfigError(
            f"config file {p} must hold a mapping at the top level, got {type(data).__name__}; "
            "write `section:` blocks as in configs/"
        )
    return data


#: Largest oversized config file whose longest line is located by key (a bigger one is data).
_SCAN_BYTES = 64 << 20
_KEY_LINE = re.compile(r"^( *)(?:- +)?('[^']*'|\"[^\"]*\"|[^\s#'\"][^:#]*?) *:(?: |$)")


def _longest_line(p: Path, size: int, cls: type[BaseModel] | None) -> str:
    """``: line N (sec.key) holds B bytes ('xxx...')`` for the longest line of an oversized YAML
    file, its key path read from the indentation (and whether ``cls`` has that field); empty when
    the file is too big to scan or its longest line is no ``key: value``."""
    if size > _SCAN_BYTES:
        return ""
    try:
        lines = p.read_bytes().decode("utf-8", errors="replace").split("\n")
    except OSError:
        return ""
    at = max(range(len(lines)), key=lambda i: len(lines[i]))
    stack: list[tuple[int, str]] = []
    for i, line in enumerate(lines[: at + 1]):
        m = _KEY_LINE.match(line)
        indent = len(line) - len(line.lstrip(" "))
        while stack and stack[-1][0] >= indent:
            stack.pop()
        if m:
            stack.append((indent, m.group(2).strip("'\"")))
        elif i == at:
            return ""
    keys = [k for _, k in stack]
    value = lines[at].partition(":")[2].strip()
    where = f": line {at + 1} ({'.'.join(keys)}) holds a {len(value.encode()):,}-byte value "
    where += f"({_short(value, 24)})"
    if cls is not None and not _is_field(cls, keys):
        where += f", and {'.'.join(keys)} is not a field of the config"
    return where


def _is_field(cls: type[BaseModel], keys: Sequence[str]) -> bool:
    return bool(keys) and keys[-1] in _field_names(cls, keys[:-1])


def load(
    path: str | Path,
    cls: type[M] = TrainConfig,  # type: ignore[assignment]
    overrides: Sequence[str] | None = None,
    flags: Sequence[Flag] = (),
) -> M:
    """Load a YAML file into ``cls``; ``overrides`` are ``a.b.c=value`` strings (YAML values),
    ``flags`` command-line options applied last."""
    return resolve(cls, read_mapping(path, cls), str(path), overrides or (), flags)


def apply_override(data: dict[str, Any], item: str) -> None:
    """Apply one ``a.b.c=value`` override (``--set``; the value is YAML) in place."""
    key, sep, raw = item.partition("=")
    if not sep or not all(part.strip() for part in key.split(".")):
        raise ConfigError(
            f"--set {item!r} must look like key.sub=value; write e.g. --set rl.steps=10"
        )
    set_value(data, key.strip(), parse_yaml(raw, f"--set {item!r}: the value {raw!r}"))


def set_value(data: dict[str, Any], key: str, value: Any) -> None:
    """Set the dotted ``key`` of the nested mapping ``data`` to ``value`` (sections created)."""
    node = data
    parts = key.split(".")
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ConfigError(
                f"{key}: {part!r} holds a value, not a section; name a field under a section "
                "(`paravt config show` prints the layout)"
            )
    node[parts[-1]] = value


def dump(cfg: BaseModel) -> str:
    """The config as YAML (every field, defaults included)."""
    return yaml.safe_dump(cfg.model_dump(mode="json"), sort_keys=False)


def save(cfg: BaseModel, path: str | Path) -> None:
    Path(path).write_text(dump(cfg))


#: A trained model directory carries the settings it was trained with (``paravt.rl.loop``).
RUN_CONFIG = "paravt_config.yaml"


def load_for_model(
    model: str,
    config: str | Path | None = None,
    overrides: Sequence[str] | None = None,
    flags: Sequence[Flag] = (),
) -> tuple[TrainConfig, str]:
    """The settings to run ``model`` with, and where they came from: ``config`` when given, else
    the ``paravt_config.yaml`` a paravt checkpoint carries (video, sampling, rollout, prompt
    version as trained), else the defaults. ``overrides`` (``a.b=value``) and ``flags`` apply on
    top."""
    carried = Path(model) / RUN_CONFIG
    path = config if config is not None else carried if carried.is_file() else None
    source = "defaults" if path is None else str(path)
    data = {} if path is None else read_mapping(path, TrainConfig)
    if path is carried:  # written by an older paravt: its eval frame fields were never "as trained"
        for key in MOVED:
            section, _, field = key.partition(".")
            if isinstance(data.get(section), dict):
                data[section].pop(field, None)
    return resolve(TrainConfig, data, source, overrides or (), flags), source
