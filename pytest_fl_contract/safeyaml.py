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
    with open(path, "rb") as stream:
        data = stream.read(max_bytes + 1)
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


def expanded_size(node: Node, budget: int = MAX_NODES) -> int:
    """Nodes in the document once every alias is expanded; raises YamlInputError past
    ``budget`` or on a recursive alias.  Memoised per node, so a bomb costs its own size."""
    sizes: dict[int, int] = {}
    open_nodes: set[int] = set()

    def size(current: Node) -> int:
        key = id(current)
        if key in sizes:
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
                raise YamlInputError(
                    f"aliases expand to more than {budget} values: refused", current.start_mark.line + 1
                )
        open_nodes.discard(key)
        sizes[key] = total
        return total

    return size(node)


def load(text: str, loader: type[yaml.SafeLoader] = yaml.SafeLoader, budget: int = MAX_NODES) -> Any:
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
