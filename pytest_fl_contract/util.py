"""Small things every room uses: the one error type bad input becomes, and text made fit to
show - one line, bounded, inert in Markdown - because a message, a progress line or a step
summary quotes what tests, steps and files said (a skip reason with newlines, a heading,
a table row, a remote image), and it must stay one line of plain text where it is put."""

from __future__ import annotations

import re


class FlContractError(Exception):
    """Bad input or an environment we refuse to run in; str() is the whole message."""


def first_line(exc: BaseException) -> str:
    """An exception's message cut to its first line: drivers append pages of advice."""
    return (str(exc).strip().splitlines() or [""])[0]


def one_line(text: object, limit: int = 500) -> str:
    """``text`` on one line of printable characters (controls written as escapes), cut to
    ``limit`` characters with "..." where it was longer."""
    flat = " ".join(str(text).split())
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


def md_code(text: object, limit: int = 120) -> str:
    """``text`` as an inline code span (op and defect names): backticks cannot end it."""
    flat = one_line(text, limit).replace("`", "'")
    return f"`{flat}`"
