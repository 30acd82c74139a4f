"""Helpers of the hostile-input corpus (issue 15): the xunit2 schema pytest validates its
own JUnit against, and the one-line-error assertion every case makes."""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

import pytest

from pytest_fl_contract.cli import main

# pytest's own testing/example_scripts/junit-10.xsd (the Jenkins xUnit schema it validates its
# xunit2 output against), taken by scripts/setup.sh from the sdist of the installed pytest.
SCHEMA_PATH = Path(os.environ.get("FL_JUNIT_XSD") or Path(sys.prefix) / "share" / "fl-contract" / "junit-10.xsd")


@functools.lru_cache(maxsize=1)
def schema():
    import xmlschema

    if not SCHEMA_PATH.is_file():
        pytest.fail(f"no JUnit schema at {SCHEMA_PATH}: scripts/setup.sh fetches it from pytest's sdist", pytrace=False)
    return xmlschema.XMLSchema(str(SCHEMA_PATH))


def assert_valid_junit(path: Path) -> None:
    """``path`` validates against junit-10.xsd (the first error is the message)."""
    error = next(iter(schema().iter_errors(str(path))), None)
    assert error is None, f"{path.name} is not valid xunit2: {error}"


def assert_all_valid(directory: Path) -> list[Path]:
    files = sorted(p for p in directory.rglob("*.xml") if p.is_file())
    for path in files:
        assert_valid_junit(path)
    return files


def one_line(text: str, *needles: str) -> str:
    """The only non-blank line of ``text`` (stderr of a refused input), holding ``needles``."""
    assert "Traceback" not in text and "INTERNALERROR" not in text, text
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, f"expected one line, got {len(lines)}:\n{text[:2000]}"
    for needle in needles:
        assert needle in lines[0], f"{needle!r} not in {lines[0]!r}"
    return lines[0]


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``fl-contract ARGV`` in process: (exit code, stdout, stderr)."""
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err
