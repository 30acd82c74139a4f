"""Helpers of the hostile-input corpus (issue 15): the xunit2 schema pytest validates its
own JUnit against, and the one-line-error assertion every case makes."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from pytest_fl_contract.cli import main

DATA = Path(__file__).resolve().parent / "data"
# pytest's testing/example_scripts/junit-10.xsd (MIT, from the Jenkins xUnit plugin); see DATA/README.md
SCHEMA_PATH = DATA / "junit-10.xsd"


@functools.lru_cache(maxsize=1)
def schema():
    import xmlschema

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
