"""``fl-contract import``: torch_fl's ``.github/configs/<platform>.yml`` lanes as manifest lanes.

torch_fl runs each ``integration_tests`` entry with ``bash -c "set -euo pipefail ..."``,
one by one, stopping at the first failure.  Each becomes an argv step running the same
bash with the same options (our runner does not stop at the first failure unless
``--fail-fast``).  Keys with no manifest equivalent are kept as comments, and the
caller is told which.

What we write always passes ``fl-contract check``: names are sanitised and made unique
(case-insensitively, never ``setup`` beside a lane setup), values are checked as the
manifest checks them, YAML comes from ``yaml.safe_dump`` only (comments are escaped to
one line), and the result is parsed back before it is returned.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import Any

import yaml

from ..config import safeyaml
from ..config.platforms import Registry
from ..util import FlContractError
from . import manifest as schema

MAPPED = {
    "display_name": "display_name",
    "ci_image": "image",
    "runner_labels": "runner_labels",
    "integration_environment": "env",
    "timeout_minutes": "timeout_minutes",
}
MAX_TESTS = 10_000  # steps of one imported lane: about 8 YAML values each, inside safeyaml.MAX_NODES
CONTRACT_NAME = "op_contracts"  # the shipped manifest's step: an imported lane's cases meet the CPU lanes'
CONTRACT_STEP = {
    "contracts": ["reductions", "layers", "tensorops"],
    "pytest": ["-p", "xdist", "-n", "auto"],
    "timeout": 2700,
}


def name_of(text: str, fallback: str = "step") -> str:
    """A manifest name (``[a-z0-9][a-z0-9_-]{0,63}``) from free text."""
    name = re.sub(r"[^a-z0-9_-]+", "-", text.strip().lower()).lstrip("_-")[:64].strip("-")
    return name or fallback


def unique(name: str, taken: set[str], tried: dict[str, int] | None = None) -> str:
    """``name``, or ``name-2``, ``name-3``... when taken (names are lower case already).
    ``tried`` remembers the last suffix per name, so 19,000 tests of one name cost 19,000
    look-ups, not 19,000 squared."""
    tried = {} if tried is None else tried
    candidate, n = name, tried.get(name, 1)
    if n > 1:
        candidate = name[: 64 - len(f"-{n}")] + f"-{n}"
    while candidate in taken:
        n += 1
        suffix = f"-{n}"
        candidate = name[: 64 - len(suffix)] + suffix
    tried[name] = n
    taken.add(candidate)
    return candidate


def comment(text: str) -> str:
    """Free text as it can stand after '#': printable ASCII kept, anything else escaped,
    so a newline in a directory name cannot start a YAML key."""
    return "".join(c if c.isascii() and c.isprintable() else json.dumps(c)[1:-1] for c in str(text))


def _fail(path: Path, problem: str) -> FlContractError:
    return FlContractError(f"{safeyaml.shown(path)}: {problem}")


def _kind(value: Any) -> str:
    """What YAML made of a value, by its builtin type (the loader's list and dict subclasses
    are "list" and "dict")."""
    return next(t.__name__ for t in type(value).__mro__ if t.__module__ == "builtins")


def _mapped(path: Path, key: str, value: Any) -> Any:
    """A torch_fl value as the manifest takes it, or one line saying why it cannot be."""
    if key == "integration_environment":
        if not isinstance(value, dict):
            raise _fail(path, f"integration_environment must map names to strings, got {_kind(value)}")
        env = {str(k): safeyaml.as_written(value, k, v) for k, v in value.items()}  # 2.10 stays "2.10"
        env = {k: v if isinstance(v, (str, int, float)) and not isinstance(v, bool) else None for k, v in env.items()}
        problem = schema._env_problem({k: v for k, v in env.items() if v is not None}) if env else None
        if any(v is None for v in env.values()) or problem:
            raise _fail(path, f"integration_environment: {problem or 'values must be strings or numbers'}")
        return {k: str(v) for k, v in env.items()}
    if key == "runner_labels":
        if not schema._str_list(value):
            raise _fail(path, "runner_labels must be a list of strings")
        return value
    if key == "timeout_minutes":
        if not schema._timeout(value):
            raise _fail(path, f"timeout_minutes must be a positive number, got {schema._show(value)}")
        return value
    return str(value)  # display_name, ci_image: free text


def convert(path: Path, registry: Registry) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """Returns (lane name, lane mapping, keys kept as comments)."""
    try:
        doc = safeyaml.load(safeyaml.read_text(path), safeyaml.SourceLoader)
    except OSError as exc:
        raise _fail(path, f"cannot read: {exc.strerror}") from None
    except safeyaml.YamlInputError as exc:
        raise _fail(path, exc.problem) from None
    except yaml.YAMLError as exc:
        problem, line = safeyaml.yaml_problem(exc)
        raise FlContractError(f"{safeyaml.shown(path)}:{line or '?'}: not valid YAML: {problem}") from None
    if not isinstance(doc, dict):
        raise _fail(path, "expected a mapping of lane settings")
    platform = registry.canonical(path.stem)
    if platform is None:
        raise _fail(path, f"the file name {path.stem!r} is not a known platform; known: {', '.join(registry.names)}")
    lane_name = name_of(path.stem, fallback=platform)
    lane: dict[str, Any] = {"platform": platform}
    kept: dict[str, Any] = {}
    for key, value in doc.items():
        if key in MAPPED:
            lane[MAPPED[key]] = safeyaml.plain(_mapped(path, key, value))
        elif key == "setup_script":
            if not isinstance(value, str) or not value.strip() or "\0" in value:
                raise _fail(path, "setup_script must be a path")
            lane["setup"] = [f"bash {shlex.quote(value)}"]
        elif key != "integration_tests":
            kept[str(key)] = safeyaml.plain(value)
    tests = doc.get("integration_tests") or []
    if not isinstance(tests, list):
        raise _fail(path, "integration_tests must be a list of {name, command}")
    if len(tests) > MAX_TESTS:
        raise _fail(
            path,
            f"{len(tests)} integration_tests: a lane takes at most {MAX_TESTS} steps (a manifest "
            f"holds at most {safeyaml.MAX_NODES} values); split the file",
        )
    taken = {CONTRACT_NAME} | ({schema.SETUP_STEP} if "setup" in lane else set())
    tried: dict[str, int] = {}
    steps = []
    for i, test in enumerate(tests):
        if not isinstance(test, dict) or not isinstance(test.get("command"), str):
            raise _fail(path, f"integration_tests[{i}] needs a 'command' string")
        if "\0" in test["command"]:
            raise _fail(path, f"integration_tests[{i}]: the command holds a NUL byte")
        name = unique(name_of(str(test.get("name", f"step-{i}")), f"step-{i}"), taken, tried)
        steps.append({"name": name, "command": ["bash", "-c", "set -euo pipefail\n" + test["command"]]})
    steps.append({"use": CONTRACT_NAME})
    lane["steps"] = steps
    return lane_name, lane, kept


def _dump(value: Any) -> list[str]:
    return yaml.safe_dump(value, sort_keys=False, width=10_000, allow_unicode=False).splitlines()


def to_manifest(paths: list[Path], registry: Registry) -> tuple[str, list[str]]:
    """The YAML text of a manifest holding the converted lanes, and one notice per file
    that had keys kept only as comments.  Two files that would make the same lane are refused."""
    lines = ["# generated by fl-contract import; review, then merge into ci/manifest.yaml", "version: 1"]
    lines += _dump({"shared_steps": {CONTRACT_NAME: CONTRACT_STEP}})
    lines.append("lanes:")
    notices = []
    sources: dict[str, Path] = {}
    for path in paths:
        name, lane, kept = convert(path, registry)
        if name in sources:
            raise _fail(
                path,
                f"becomes lane {name!r}, as {safeyaml.shown(sources[name])} does: import them separately or rename one",
            )
        sources[name] = path
        body = ["  " + ln for ln in _dump({name: lane})]
        lines.append(body[0])
        lines.append(f"    # imported from {comment(str(path))}")
        if kept:
            lines.append("    # not mapped to the manifest, kept as written:")
            lines += [f"    #   {comment(ln)}" for ln in _dump(kept)]  # ASCII already: comment() is a no-op
            notices.append(f"{safeyaml.shown(path)}: kept as comments (no manifest equivalent): {', '.join(kept)}")
        lines += body[1:]
    text = "\n".join(lines) + "\n"
    try:
        schema.parse(text, "(imported manifest)", registry)
    except FlContractError as exc:  # a bug of ours: never hand out a manifest check refuses
        raise FlContractError(f"import produced a manifest that fails check, not written: {exc}") from None
    return text, notices
