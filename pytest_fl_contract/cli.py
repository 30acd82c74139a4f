"""``fl-contract``: lanes, check, run, report, import (see runner.py); --version, platform."""

from __future__ import annotations

import sys

from . import __version__


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--version"]:
        print(f"fl-contract {__version__}")
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
