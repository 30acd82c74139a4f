"""Small things every room uses: the one error type bad input becomes, and text made fit to
show - one line, bounded, inert in Markdown - because a message, a progress line or a step
summary quotes what tests, steps and files said (a skip reason with newlines, a heading,
a table row, a remote image), and it must stay one line of plain text where it is put."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from typing import Any

# set by the CPU emulator to the vendor it emulates: platform detection in its children and xdist
# workers knows the emulated vendor from real hardware
EMULATOR_ENV = "FL_CONTRACT_EMULATED_VENDOR"


class FlContractError(Exception):
    """Bad input or an environment we refuse to run in; str() is the whole message."""


def first_line(exc: BaseException) -> str:
    """An exception's message cut to its first line: drivers append pages of advice."""
    return (str(exc).strip().splitlines() or [""])[0]


def one_line(text: object, limit: int = 500, collapse: bool = True) -> str:
    """``text`` on one line of printable characters (controls written as escapes), cut to
    ``limit`` characters with "..." where it was longer; runs of whitespace become one space
    unless ``collapse`` is off (an error message quoting a value keeps its spaces)."""
    flat = " ".join(str(text).split()) if collapse else " ".join(str(text).splitlines())
    flat = "".join(c if c.isprintable() else repr(c)[1:-1] for c in flat)
    return flat if len(flat) <= limit else flat[: max(limit - 3, 0)] + "..."


# What can make structure inside one line: links and images ([ ]), HTML (< >), table cells
# (|), emphasis and code spans; the escape character itself.  Newlines are gone already.
_MD_SPECIAL = re.compile(r"([\\`*\[\]|<>~])")


def md_text(text: object, limit: int = 300) -> str:
    """``text`` as inert Markdown inside a line or a table cell: one line, and every
    character Markdown or HTML would act on escaped (no heading, table, link, image or tag
    can be made of it)."""
    return _MD_SPECIAL.sub(r"\\\1", one_line(text, limit))


def md_code(text: object, limit: int = 300) -> str:
    """``text`` as an inline code span (op and defect names): backticks cannot end it."""
    flat = one_line(text, limit).replace("`", "'")
    return f"`{flat}`"


_SURROGATE = re.compile("[\ud800-\udfff]")


def safe_text(value: Any) -> Any:
    """Data read from JSON with every lone surrogate (``"\\ud800"`` decodes to one, and no
    output can encode it) written as its escape, in every string, key and nested value."""
    if isinstance(value, str):
        return _SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", value)
    if isinstance(value, list):
        return [safe_text(v) for v in value]
    if isinstance(value, dict):
        return {safe_text(k): safe_text(v) for k, v in value.items()}
    return value


def installed_version(dist: str) -> str | None:
    """A distribution's version from its metadata (nothing is imported), or None."""
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def xdist_worker(config: Any) -> dict[str, Any] | None:
    """The ``workerinput`` of an xdist worker's config (workerid, workercount, testrunuid),
    or None in the controller and in a run without xdist."""
    return getattr(config, "workerinput", None)


def mnk(shape: Sequence[int], d: int) -> tuple[int, int, int]:
    """A single reduced dim's (M, N, K): the extents before it, its own, and after it -
    the shape every reduction kernel, tile heuristic and plan is written for."""
    return math.prod(shape[:d]), (shape[d] if shape else 1), math.prod(shape[d + 1 :])
