"""YAML that someone else wrote: bounded in bytes, UTF-8 only, aliases bounded.

Manifests and platform registries come from lane engineers and vendor plugins.  A file
that is binary, Latin-1, endless (``/dev/zero``), nested ten thousand deep or an alias
bomb (a few lines that expand to gigabytes once a value is turned into a string) must
become one clear line, never a traceback or all of the machine's memory.
"""

from __future__ import annotations

import os
from typing import Any

import yaml
from yaml.nodes import MappingNode, Node, SequenceNode

from .. import files

MAX_BYTES = 4 * 1024 * 1024  # a real manifest is a few KB; the shipped one is 4 KB
MAX_NODES = 100_000  # values after expanding every alias; the shipped manifest has ~400


class YamlInputError(ValueError):
    """A file we refuse; ``problem`` is one line without the file's name, ``line`` 1-based."""

    def __init__(self, problem: str, line: int | None = None) -> None:
        super().__init__(problem)
        self.problem = problem
        self.line = line


def shown(path: str | os.PathLike[str]) -> str:
    """A path as it can stand in a one-line message (repr when it holds a newline or worse)."""
    text = os.fspath(path)
    return text if text.isprintable() else repr(text)


def read_text(path: str | os.PathLike[str], max_bytes: int = MAX_BYTES) -> str:
    """The file as text.  Raises OSError when it cannot be read, YamlInputError when it is
    too large, binary or not UTF-8; never reads more than ``max_bytes + 1`` bytes."""
    data = files.read_bytes(path, max_bytes)
    if len(data) > max_bytes:
        raise YamlInputError(f"larger than {max_bytes} bytes: refused (is it the right file?)")
    nul = data.find(b"\0")
    if nul >= 0:
        raise YamlInputError(f"a binary file (NUL byte at offset {nul}), not YAML text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise YamlInputError(
            f"not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); save it as UTF-8"
        ) from None


def read_or_refuse(path: str | os.PathLike[str], label: str, cannot: str = "cannot read") -> str:
    """``read_text``, what it refuses as one ``FlContractError`` line: ``LABEL: CANNOT: why``
    for a file that cannot be read, ``LABEL: why`` for one that is not YAML text."""
    from ..util import FlContractError

    try:
        return read_text(path)
    except OSError as exc:
        raise FlContractError(f"{label}: {cannot}: {exc.strerror}") from None
    except YamlInputError as exc:
        raise FlContractError(f"{label}: {exc.problem}") from None


def expanded_size(node: Node, budget: int = MAX_NODES) -> int:
    """Nodes in the document once every alias is expanded; raises YamlInputError past
    ``budget`` or on a recursive alias.  Memoised per node, so a bomb costs its own size."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()
    aliased = False

    def size(current: Node) -> int:
        nonlocal aliased
        key = id(current)
        if key in sizes:
            aliased = True  # a node met twice: an alias
            return sizes[key]
        if key in open_nodes:
            raise YamlInputError("a recursive alias (an anchor used inside itself)", current.start_mark.line + 1)
        open_nodes.add(key)
        if isinstance(current, SequenceNode):
            children: list[Node] = list(current.value)
        elif isinstance(current, MappingNode):
            children = [part for pair in current.value for part in pair]
        else:
            children = []
        total = 1
        for child in children:
            total += size(child)
            if total > budget:
                what = (
                    f"aliases expand to more than {budget} values"
                    if aliased
                    else f"holds more than {budget} values (a manifest is a few hundred)"
                )
                raise YamlInputError(f"{what}: refused", current.start_mark.line + 1)
        open_nodes.discard(key)
        sizes[key] = total
        return total

    return size(node)


# -- a loader that keeps what was written ------------------------------------------------


class Map(dict):
    """A mapping that remembers each key's line and, for a plain scalar value, its source
    text (``2.10`` stays "2.10" where a string is wanted, not the float 2.1)."""

    lines: dict[Any, int]
    raw: dict[Any, str]


class Seq(list):
    lines: list[int]
    raw: list[str | None]


def _plain(node: Node) -> str | None:
    # PyYAML says None for a plain scalar's style, libyaml's parser says ""
    return node.value if isinstance(node, yaml.ScalarNode) and not node.style else None


_BASE = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser where PyYAML has it: 10x the speed


class SourceLoader(_BASE):  # type: ignore[misc, valid-type]
    """SafeLoader whose mappings and sequences keep lines and source text; keys are always
    the text written (``123:`` names the lane "123"); merge keys (``<<: *base``) merge, and
    a key given twice in one mapping is refused (one that overrides a merged key is not)."""


def _construct_mapping(loader: SourceLoader, node: yaml.MappingNode) -> Map:
    own = sum(
        1 for key, _ in node.value if not (isinstance(key, yaml.ScalarNode) and key.tag == "tag:yaml.org,2002:merge")
    )
    loader.flatten_mapping(node)  # merged pairs first, then the mapping's own
    merged = len(node.value) - own
    out = Map()
    out.lines, out.raw = {}, {}
    seen_own: set[Any] = set()
    for i, (key_node, value_node) in enumerate(node.value):
        key = _plain(key_node)
        if key is None:
            key = loader.construct_object(key_node, deep=True)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                None, None, f"a {type(key).__name__.strip('_').lower()} cannot be a key", key_node.start_mark
            ) from None
        if i >= merged:
            if key in seen_own:
                raise yaml.constructor.ConstructorError(None, None, f"duplicate key {key!r}", key_node.start_mark)
            seen_own.add(key)
        out[key] = loader.construct_object(value_node, deep=True)
        out.lines[key] = key_node.start_mark.line + 1
        raw = _plain(value_node)
        if raw is not None:
            out.raw[key] = raw
    return out


def _construct_sequence(loader: SourceLoader, node: yaml.SequenceNode) -> Seq:
    out = Seq(loader.construct_object(child, deep=True) for child in node.value)
    out.lines = [child.start_mark.line + 1 for child in node.value]
    out.raw = [_plain(child) for child in node.value]
    return out


SourceLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
SourceLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)


def as_written(container: Any, key: Any, value: Any) -> Any:
    """``value`` as its source text where YAML made a number or a boolean of a plain scalar
    (``true``, ``010``, ``12:30``); strings, nulls and collections as they are."""
    if isinstance(value, (bool, int, float)) and not isinstance(value, str):
        raw = getattr(container, "raw", None)
        text = raw.get(key) if isinstance(raw, dict) else raw[key] if isinstance(raw, list) and key < len(raw) else None
        if text is not None:
            return text
    return value


def plain(value: Any) -> Any:
    """``value`` with the loader's mappings and sequences as plain dicts and lists (what
    ``yaml.safe_dump`` can write)."""
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def texts(value: Any) -> Any:
    """A sequence's items as written (``command: [true]`` is the argv ["true"])."""
    if isinstance(value, list):
        return [as_written(value, i, v) for i, v in enumerate(value)]
    return value


def load(text: str, loader: type[yaml.SafeLoader] = _BASE, budget: int = MAX_NODES) -> Any:
    """``yaml.load`` with a safe loader class, refusing alias bombs and deep nesting.
    YAML syntax errors propagate as ``yaml.YAMLError``."""
    instance = loader(text)
    try:
        node = instance.get_single_node()
        if node is None:
            return None
        expanded_size(node, budget)
        return instance.construct_document(node)
    except RecursionError:
        raise YamlInputError("nested too deeply") from None
    finally:
        instance.dispose()


def yaml_problem(exc: yaml.YAMLError) -> tuple[str, int | None]:
    """One line and the 1-based line number of a YAML syntax error."""
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    problem = getattr(exc, "problem", None) or (str(exc).splitlines() or ["unreadable"])[0]
    return " ".join(str(problem).split()), (mark.line + 1 if mark is not None else None)
