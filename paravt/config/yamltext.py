"""The ONE loader of config text (files and ``--set`` values): safe YAML with aliases bounded, a
key written twice refused, and nesting too deep to read named by the field that holds it."""

from __future__ import annotations

from typing import Any

import yaml

from paravt.errors import ConfigError

#: Largest config file read (a config is a few KB) and most nodes its aliases may expand to: a
#: small file of nested aliases ("billion laughs") is refused at once instead of expanded.
MAX_CONFIG_BYTES = 1 << 20
MAX_YAML_NODES = 100_000


class _AliasBomb(yaml.YAMLError):
    pass


class _DuplicateKey(yaml.YAMLError):
    pass


class _Loader(yaml.SafeLoader):
    """yaml.SafeLoader that refuses a document whose aliases expand past MAX_YAML_NODES nodes, and
    a mapping that writes one key twice (YAML would keep the last silently: a second ``rl:`` block
    would drop the first)."""

    def compose_document(self) -> Any:
        node = super().compose_document()
        if node is not None:
            _expanded_size(node, {}, set())
        return node

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> Any:
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:  # the keys as written (a ``<<`` merge may be overridden)
            if (
                not isinstance(key_node, yaml.ScalarNode)
                or key_node.tag == "tag:yaml.org,2002:merge"
            ):
                continue
            key = self.construct_object(key_node)
            line = key_node.start_mark.line + 1
            if key in seen:
                raise _DuplicateKey(
                    f"the key {key!r} is written twice (lines {seen[key]} and {line}), and "
                    "YAML would silently keep only the second; merge the two into one"
                )
            seen[key] = line
        return super().construct_mapping(node, deep=deep)


def _expanded_size(node: yaml.Node, sizes: dict[int, int], active: set[int]) -> int:
    """Nodes of ``node`` with every alias written out (memoised per node: linear time)."""
    key = id(node)
    if key in sizes:
        return sizes[key]
    if key in active:
        raise _AliasBomb("an alias refers to itself (a recursive structure)")
    active.add(key)
    children: list[yaml.Node] = []
    if isinstance(node, yaml.SequenceNode):
        children = list(node.value)
    elif isinstance(node, yaml.MappingNode):
        children = [n for pair in node.value for n in pair]
    size = 1 + sum(_expanded_size(c, sizes, active) for c in children)
    active.discard(key)
    if size > MAX_YAML_NODES:
        raise _AliasBomb(f"its aliases expand to more than {MAX_YAML_NODES:,} values")
    sizes[key] = size
    return size


def parse_yaml(text: str, what: str) -> Any:
    """``text`` as YAML (safe, aliases bounded); `ConfigError` naming ``what`` when it is not."""
    try:
        return yaml.load(text, Loader=_Loader)  # noqa: S506 - _Loader is a SafeLoader
    except _AliasBomb as err:
        raise ConfigError(
            f"{what} is refused: {err}; write the values out instead of nesting aliases"
        ) from None
    except _DuplicateKey as err:
        raise ConfigError(f"{what} is refused: {err}") from None
    except yaml.YAMLError as err:
        raise ConfigError(
            f"{what} is not valid YAML ({_yaml_problem(err)}); fix the syntax "
            "(quote a string that holds ': ', '[' or '{')"
        ) from None
    except RecursionError:
        raise ConfigError(f"{what} is refused: {_too_deep(text)}") from None


#: Deepest nesting reported by name: a config's deepest field is three sections down, its
#: deepest value a list of pairs.
_DEEP = 32


def _too_deep(text: str) -> str:
    """Where ``text`` first nests deeper than ``_DEEP`` levels, named by the field that holds it and
    its line. YAML's event parser keeps its own stack, so it walks what the composer cannot."""
    frames: list[list[Any]] = []  # [is_sequence, path, expecting_a_key, last_key]
    try:
        for ev in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(ev, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
                frames.pop()
                continue
            if not isinstance(ev, (yaml.NodeEvent, yaml.CollectionStartEvent)):
                continue
            path: tuple[str, ...] = ()
            if frames:
                top = frames[-1]
                if not top[0] and top[2]:  # a mapping's key
                    top[2], top[3] = False, str(getattr(ev, "value", "?"))
                    if not isinstance(ev, yaml.CollectionStartEvent):
                        continue
                elif not top[0]:  # a mapping's value
                    top[2] = True
                path = top[1] if top[0] else (*top[1], top[3])
            if isinstance(ev, yaml.CollectionStartEvent):
                frames.append([isinstance(ev, yaml.SequenceStartEvent), path, True, "?"])
                if len(frames) > _DEEP:
                    field = ".".join(path) or "the document"
                    line = ev.start_mark.line + 1 if ev.start_mark is not None else "?"
                    return (
                        f"{field} (line {line}) nests more than {_DEEP} levels "
                        f"of lists or mappings; a config value is a number, a string or a short "
                        f"list: write {field} plainly"
                    )
    except (yaml.YAMLError, RecursionError):
        pass
    return "it nests too deeply to read; flatten it"


def _yaml_problem(err: yaml.YAMLError) -> str:
    if isinstance(err, yaml.MarkedYAMLError) and err.problem_mark is not None:
        m = err.problem_mark
        return f"{err.problem} at line {m.line + 1}, column {m.column + 1}"
    return str(err).splitlines()[0] if str(err) else type(err).__name__
