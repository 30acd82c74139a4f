"""Where a summary goes: the terminal, and the CI job's page where the runner offers one
(GitHub's ``$GITHUB_STEP_SUMMARY``) - one home for every command that prints a Markdown
summary (a lane run, a report, a compare, a scoreboard)."""

from __future__ import annotations

import os
import sys
from typing import TextIO

from .. import files
from ..config import safeyaml


def publish(markdown: str, out: TextIO | None = None) -> str | None:
    """Print the summary, and append it to $GITHUB_STEP_SUMMARY when that is set; returns
    why the latter failed (one line), or None."""
    try:
        (out or sys.stdout).write(markdown)
    except (OSError, ValueError, AttributeError):
        pass
    target = os.environ.get("GITHUB_STEP_SUMMARY")
    if target:
        try:
            files.append_text(target, markdown + "\n")
        except OSError as exc:
            return f"cannot append the summary to $GITHUB_STEP_SUMMARY ({safeyaml.shown(target)}): {exc.strerror}"
    return None
