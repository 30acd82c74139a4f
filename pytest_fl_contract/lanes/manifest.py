"""``ci/manifest.yaml``: lanes x steps, validated with one clear line per problem.

Every error names the file, the line (from the YAML loader), the lane and the step.
Lane and step names become file names and argv words, so they are restricted to
``[a-z0-9][a-z0-9_-]{0,63}`` (never an option: ``-x``).
``check`` refuses everything ``run`` could not start (an env name with '=', a NUL in an
argument, a user step called ``setup`` beside the lane's own setup), and the file is read
bounded (size, UTF-8, aliases: ``safeyaml``) before any of it is believed.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from ..config import safeyaml
from ..config.platforms import Registry
from ..util import FlContractError

NAME_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,63}\Z")  # \Z, not $: "lane\n" is not a name; "-x" is an option
NAME_RULE = "[a-z0-9][a-z0-9_-]{0,63} (a letter or digit first)"
ENV_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
MAX_TIMEOUT = 24 * 3600
DEFAULT_OUTPUT_CAP = 64 * 1024  # bytes of a step's output kept in its JUnit case: half head, half tail
MIN_OUTPUT_CAP, MAX_OUTPUT_CAP = 1024, 256 * 1024 * 1024
SETUP_STEP = "setup"  # the name the lane's ``setup:`` commands run under
PACKAGES_STEP = "packages"  # the name the lane's ``packages:`` install runs under
TOP_KEYS = {"version", "defaults", "shared_steps", "lanes"}
LANE_KEYS = {
    "platform",
    "description",
    "display_name",
    "runner_labels",
    "image",
    "env",
    "setup",
    "packages",
    "timeout_minutes",
    "pytest_args",
    "steps",
    "baseline",
    "flaggems_tests_from",
}
STEP_KEYS = {
    "name",
    "use",
    "contracts",
    "flaggems_tests",
    "pytest",
    "command",
    "compare",
    "args",
    "shell",
    "env",
    "timeout",
    "allow_failure",
    "expect",
    "catch",
    "description",
    "output_cap",
}
DEFAULT_KEYS = {"timeout", "output_cap"}
TEXT_KEYS = ("description", "display_name", "image")  # lane keys whose value is text, and nothing else
# Names the runner gives its own files in a reports directory (``baselines/LANE.xml``, a lane's
# last green run): a lane of that name would write its steps' reports over other lanes' baselines.
RESERVED_NAMES = frozenset({"baselines"})


@dataclass(frozen=True)
class Step:
    name: str
    kind: str  # "pytest" | "command" | "compare"
    args: tuple[str, ...] | str  # pytest args, argv, a shell string, or the two steps a compare step holds alike
    suites: tuple[str, ...] = ()  # packaged contract suites the pytest step runs (``contracts:``)
    shell: bool = False
    env: dict[str, str] = field(default_factory=dict)
    timeout: float = 1800.0
    allow_failure: bool = False
    expect: str = "pass"  # "fail": the step exists to show a defect is caught
    output_cap: int = DEFAULT_OUTPUT_CAP  # bytes of output its JUnit case keeps (head and tail)
    catch: tuple[str, ...] = ()  # expect: fail - ops each of which must fail a contract
    rerun: int = 0  # re-runs of each failing case (``run --rerun-failures``; not a manifest key)
    flaggems_tests: tuple[str, ...] = ()  # families whose rows' FlagGems test files the step runs (lanes.owntests)


@dataclass(frozen=True)
class Lane:
    name: str
    platform: str
    steps: tuple[Step, ...]
    description: str = ""
    display_name: str = ""
    runner_labels: tuple[str, ...] = ()
    image: str = ""
    env: dict[str, str] = field(default_factory=dict)
    setup: tuple[str, ...] = ()
    timeout_minutes: float | None = None
    pytest_args: tuple[str, ...] = ()
    packages: tuple[str, ...] = ()  # pip specs for the lane's own directory; ${VAR} comes from the environment
    baseline: str = ""  # a report to compare each run with (a path), or "last-green": the lane's last green run
    flaggems_tests_from: str = ""  # a FlagGems wheel or directory whose own tests the lane runs; ${VAR} as packages

    def inputs(self) -> tuple[str, ...]:
        """The environment variables the lane's package specs name (``${VAR}``)."""
        specs = (*self.packages, self.flaggems_tests_from)
        return tuple(dict.fromkeys(m for spec in specs for m in PACKAGE_VAR.findall(spec)))


PACKAGE_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


@dataclass(frozen=True)
class Manifest:
    path: str
    lanes: dict[str, Lane]


_Loader = safeyaml.SourceLoader


class _Errors:
    def __init__(self, path: str) -> None:
        self.path = path

    def __call__(
        self, line: int | None, problem: str, lane: str | None = None, step: str | None = None
    ) -> FlContractError:
        where = f"{safeyaml.shown(self.path)}:{line}" if line else safeyaml.shown(self.path)
        scope = "".join([f" lane {_show(lane)}" if lane else "", f" step {_show(step)}" if step else ""])
        return FlContractError(f"{where}:{scope + ':' if scope else ''} {problem}")


def _show(value: Any, limit: int = 40) -> str:
    """repr, cut to ``limit`` characters: a 5,000-character name still makes a short line."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 5] + "...'"


def _line(mapping: Any, key: Any) -> int | None:
    return getattr(mapping, "lines", {}).get(key)


def _str_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _str_map(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(k, str) and isinstance(v, (str, int, float)) for k, v in value.items()
    )


def _has_nul(value: Any) -> bool:
    """A NUL anywhere in a string, or in a list's or mapping's strings: exec refuses it."""
    if isinstance(value, str):
        return "\0" in value
    if isinstance(value, (list, tuple)):
        return any(_has_nul(v) for v in value)
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    return False


def _env(env: Any) -> Any:
    """``env`` with each value as written (``2.10`` stays "2.10", ``010`` "010", ``true``
    "true"): a process environment holds text, never what YAML made of it."""
    if not isinstance(env, dict):
        return env
    return {k: safeyaml.as_written(env, k, v) for k, v in env.items()}


def _lane_as_written(raw: Any) -> Any:
    """A lane's lists and env as written, its lines kept for the messages."""
    out = safeyaml.Map(raw)
    out.lines, out.raw = getattr(raw, "lines", {}), getattr(raw, "raw", {})
    for key in ("runner_labels", "pytest_args", "setup", "packages"):
        if key in out:
            out[key] = safeyaml.texts(out[key])
    for key in TEXT_KEYS:
        if key in out:
            out[key] = safeyaml.as_written(raw, key, out[key])
    if "env" in out:
        out["env"] = _env(out["env"])
    return out


def _env_problem(env: Any) -> str | None:
    """Why ``env`` cannot be a process environment, or None."""
    if isinstance(env, dict):
        empty = next((k for k, v in env.items() if v is None), None)
        if empty is not None:
            return f"env {_show(empty)} has no value (YAML null): write '' for an empty string"
    if not _str_map(env):
        return "env must map names to strings"
    for key in env:
        if not ENV_RE.match(key):
            return f"env name {_show(key)} must be a variable name ([A-Za-z_][A-Za-z0-9_]*, no '=')"
    if _has_nul(env):
        return "env values cannot hold a NUL byte"
    return None


def _text_problem(raw: Any, key: str) -> str | None:
    """Why ``raw[key]`` is not text (a list, a mapping, a YAML null), or None; a plain scalar
    counts as the text written (``image: 3.11`` is "3.11")."""
    if key not in raw:
        return None
    value = raw[key]
    if not isinstance(value, str):
        what = (
            "null"
            if value is None
            else "a list"
            if isinstance(value, list)
            else "a mapping"
            if isinstance(value, dict)
            else type(value).__name__
        )
        return f"{key} must be text, got {what}: {_show(safeyaml.plain(value))}"
    if "\0" in value:
        return f"{key} cannot hold a NUL byte"
    return None


def label_problem(label: str) -> str | None:
    """Why ``label`` cannot be a runner label (GitHub ``runs-on``) or a GitLab tag, or None:
    ``fl-contract matrix`` puts labels on jobs as they are, and a space, a comma or a control
    character would name a different runner there (or none)."""
    if not label.strip():
        return "is empty: a runner label needs a name"
    if any(c.isspace() or c == "," or not c.isprintable() for c in label):
        return "holds whitespace, a comma or a control character: not a runner label or tag"
    return None


def _output_cap(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and MIN_OUTPUT_CAP <= value <= MAX_OUTPUT_CAP


def _timeout(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 < value <= MAX_TIMEOUT


def _parse_step(
    raw: Any,
    line: int | None,
    err: _Errors,
    lane: str,
    shared: dict[str, Any],
    default_timeout: float,
    default_cap: int = DEFAULT_OUTPUT_CAP,
) -> Step:
    if not isinstance(raw, dict):
        raise err(line, "a step must be a mapping", lane)
    name = raw.get("name", raw.get("use"))
    if not isinstance(name, str) or not NAME_RE.match(name):
        raise err(_line(raw, "name") or line, f"step name {_show(name)} must match {NAME_RULE}", lane)
    for key in raw:
        if key not in STEP_KEYS:
            raise err(_line(raw, key), f"unknown key {_show(key)} (known: {', '.join(sorted(STEP_KEYS))})", lane, name)
    merged = dict(raw)
    if "use" in raw:
        if not isinstance(raw["use"], str) or raw["use"] not in shared:
            raise err(
                _line(raw, "use"),
                f"unknown shared step {_show(raw['use'])} (known: {', '.join(sorted(shared)) or 'none'})",
                lane,
                name,
            )
        merged = {**shared[raw["use"]], **{k: v for k, v in raw.items() if k != "use"}}
    suites = merged.get("contracts", ())
    if isinstance(suites, str):
        suites = [suites]
    selection = safeyaml.texts(merged.get("flaggems_tests", []))
    if "flaggems_tests" in merged:
        from .owntests import check_selection

        problem = check_selection(selection) if _str_list(selection) else "flaggems_tests names families: a list"
        if problem:
            raise err(_line(raw, "flaggems_tests"), problem, lane, name)
        if "contracts" in merged or "command" in merged:
            raise err(
                _line(raw, "flaggems_tests"),
                "flaggems_tests runs pytest: it cannot go with 'contracts' or 'command'",
                lane,
                name,
            )
        merged.setdefault("pytest", [])
    if "contracts" in merged:
        from ..config.suites import SUITES

        if not _str_list(suites) or not suites or any(s not in SUITES for s in suites):
            raise err(_line(raw, "contracts"), f"contracts names packaged suites: {', '.join(SUITES)}", lane, name)
        if "command" in merged:
            raise err(_line(raw, "contracts"), "contracts runs pytest: it cannot go with 'command'", lane, name)
        merged.setdefault("pytest", [])
    kinds = [k for k in ("pytest", "command", "compare") if k in merged]
    if len(kinds) != 1:
        raise err(
            _line(raw, "name") or line,
            "a step needs exactly one of 'pytest', 'contracts', 'command' or 'compare' (or 'use')",
            lane,
            name,
        )
    kind = kinds[0]
    value = safeyaml.texts(merged[kind])
    if "args" in merged:
        extra = safeyaml.texts(merged["args"])
        if kind != "pytest" or not _str_list(extra):
            raise err(
                _line(raw, "args"),
                "args: a list of pytest arguments added to a pytest step's (after a shared step's)",
                lane,
                name,
            )
        value = [*value, *extra] if _str_list(value) else value
    if kind == "compare":
        if not (_str_list(value) and len(value) == 2 and value[0] != value[1]):
            raise err(
                _line(raw, "compare"),
                "compare names two earlier pytest steps of the lane: [REFERENCE, "
                "STEP]; the step fails unless both fail exactly the same cases",
                lane,
                name,
            )
        if merged.get("expect", "pass") != "pass" or "shell" in merged:
            raise err(_line(raw, "compare"), "a compare step takes neither expect nor shell", lane, name)
    shell = merged.get("shell", False)
    if not isinstance(shell, bool):
        raise err(_line(raw, "shell"), "shell must be true or false", lane, name)
    if kind == "pytest" and not _str_list(value):
        raise err(_line(raw, "pytest"), "pytest must be a list of arguments", lane, name)
    if kind == "command":
        if shell and not isinstance(value, str):
            raise err(_line(raw, "command"), "with shell: true, command must be a string", lane, name)
        if not shell and not (_str_list(value) and value):
            raise err(
                _line(raw, "command"),
                "command must be a non-empty argv list (or a string with shell: true)",
                lane,
                name,
            )
    if kind == "pytest" and shell:
        raise err(_line(raw, "shell"), "shell applies to command steps only", lane, name)
    if _has_nul(value):
        raise err(_line(raw, kind), f"{kind} cannot hold a NUL byte (no process can be started with one)", lane, name)
    timeout = merged.get("timeout", default_timeout)
    if not _timeout(timeout):
        raise err(
            _line(raw, "timeout"),
            f"timeout must be a number of seconds in (0, {MAX_TIMEOUT}], got {timeout!r}",
            lane,
            name,
        )
    env = _env(merged.get("env", {}))
    problem = _env_problem(env)
    if problem:
        raise err(_line(raw, "env"), problem, lane, name)
    allow = merged.get("allow_failure", False)
    if not isinstance(allow, bool):
        raise err(_line(raw, "allow_failure"), "allow_failure must be true or false", lane, name)
    expect = merged.get("expect", "pass")
    if expect not in ("pass", "fail"):
        raise err(_line(raw, "expect"), f"expect must be 'pass' or 'fail', got {_show(expect)}", lane, name)
    if expect == "fail" and kind == "command":
        raise err(
            _line(raw, "expect"),
            "expect: fail needs a pytest step: a command's exit status cannot tell a "
            "caught defect from a broken environment (a typo exits 127 too)",
            lane,
            name,
        )
    catch = merged.get("catch", [])
    if not (_str_list(catch) and all(catch)) or (catch and expect != "fail"):
        raise err(
            _line(raw, "catch"),
            "catch must be a list of op names, on an expect: fail step (each op must "
            "fail a contract for the defect to count as caught)",
            lane,
            name,
        )
    if "description" in merged:
        described = safeyaml.as_written(merged, "description", merged["description"])
        problem = _text_problem({"description": described}, "description")
        if problem:
            raise err(_line(raw, "description"), problem, lane, name)
    cap = merged.get("output_cap", default_cap)
    if not _output_cap(cap):
        raise err(
            _line(raw, "output_cap"), f"output_cap must be bytes in [{MIN_OUTPUT_CAP}, {MAX_OUTPUT_CAP}]", lane, name
        )
    return Step(
        name,
        kind,
        value if isinstance(value, str) else tuple(value),
        tuple(suites),
        shell,
        {k: str(v) for k, v in env.items()},
        float(timeout),
        allow,
        expect,
        cap,
        tuple(catch),
        flaggems_tests=tuple(selection),
    )


def parse(text: str, path: str, registry: Registry) -> Manifest:
    err = _Errors(path)
    try:
        doc = safeyaml.load(text, _Loader)
    except yaml.YAMLError as exc:
        problem, line = safeyaml.yaml_problem(exc)
        raise err(line, f"not valid YAML: {problem}") from None
    except safeyaml.YamlInputError as exc:
        raise err(exc.line, exc.problem) from None
    if not isinstance(doc, dict):
        raise err(None, "the manifest must be a mapping with 'lanes'")
    for key in doc:
        if key not in TOP_KEYS:
            raise err(_line(doc, key), f"unknown top-level key {_show(key)} (known: {', '.join(sorted(TOP_KEYS))})")
    version = doc.get("version", 1)
    if type(version) is not int or version != 1:  # not True, not 1.0, not "1": a version is the number 1
        raise err(_line(doc, "version"), f"unsupported version {_show(version)} (supported: 1)")
    defaults = doc.get("defaults", {}) or {}
    if not isinstance(defaults, dict) or set(defaults) - DEFAULT_KEYS:
        raise err(_line(doc, "defaults"), f"defaults may only set: {', '.join(sorted(DEFAULT_KEYS))}")
    default_timeout = defaults.get("timeout", 1800)
    if not _timeout(default_timeout):
        raise err(_line(defaults, "timeout"), f"defaults.timeout must be seconds in (0, {MAX_TIMEOUT}]")
    default_cap = defaults.get("output_cap", DEFAULT_OUTPUT_CAP)
    if not _output_cap(default_cap):
        raise err(
            _line(defaults, "output_cap"), f"defaults.output_cap must be bytes in [{MIN_OUTPUT_CAP}, {MAX_OUTPUT_CAP}]"
        )
    shared = doc.get("shared_steps", {}) or {}
    if not isinstance(shared, dict):
        raise err(_line(doc, "shared_steps"), "shared_steps must map names to steps")
    for name, raw in shared.items():
        if not isinstance(name, str) or not NAME_RE.match(name):
            raise err(_line(shared, name), f"shared step name {_show(name)} must match {NAME_RULE}")
        if not isinstance(raw, dict):
            raise err(_line(shared, name), f"shared step {name!r} must be a mapping")
        if "use" in raw:
            raise err(_line(shared, name), f"shared step {name!r} cannot 'use' another")
        _parse_step({"name": name, **raw}, _line(shared, name), err, "(shared_steps)", {}, default_timeout, default_cap)
    lanes_raw = doc.get("lanes")
    if not isinstance(lanes_raw, dict) or not lanes_raw:
        raise err(_line(doc, "lanes"), "'lanes' must be a non-empty mapping of lane names to lanes")
    lanes: dict[str, Lane] = {}
    for lane_name, raw in lanes_raw.items():
        line = _line(lanes_raw, lane_name)
        if not isinstance(lane_name, str) or not NAME_RE.match(lane_name):
            raise err(line, f"lane name {_show(lane_name)} must match {NAME_RULE}")
        if lane_name in RESERVED_NAMES:
            raise err(
                line,
                f"lane name {lane_name!r} is the runner's own in a reports directory (its {lane_name}/ "
                "keeps the lanes' last green runs); rename the lane",
            )
        if not isinstance(raw, dict):
            raise err(line, "a lane must be a mapping", lane_name)
        for key in raw:
            if key not in LANE_KEYS:
                raise err(
                    _line(raw, key), f"unknown key {_show(key)} (known: {', '.join(sorted(LANE_KEYS))})", lane_name
                )
        platform = raw.get("platform")
        if not isinstance(platform, str) or registry.canonical(platform) is None:
            raise err(
                _line(raw, "platform") or line,
                f"unknown platform {_show(platform)}; known: {', '.join(registry.names)}",
                lane_name,
            )
        raw = _lane_as_written(raw)
        for key in TEXT_KEYS:
            refused = _text_problem(raw, key)
            if refused:
                raise err(_line(raw, key), refused, lane_name)
        for key in ("runner_labels", "pytest_args", "setup", "packages"):
            if key in raw and not _str_list(raw[key]):
                raise err(_line(raw, key), f"{key} must be a list of strings", lane_name)
        for label in raw.get("runner_labels", ()):
            refused = label_problem(label)
            if refused:
                raise err(_line(raw, "runner_labels"), f"runner_labels: {_show(label)} {refused}", lane_name)
        for spec in raw.get("packages", ()):
            if not spec.strip() or spec.lstrip().startswith("-") or "$" in PACKAGE_VAR.sub("", spec):
                raise err(
                    _line(raw, "packages"),
                    f"packages: {_show(spec)} is not a pip spec (a wheel path, a "
                    "version or a URL; ${VAR} for one the lane is given)",
                    lane_name,
                )
        tests_from = raw.get("flaggems_tests_from", "")
        if "flaggems_tests_from" in raw and (
            not isinstance(tests_from, str)
            or not tests_from.strip()
            or _has_nul(tests_from)
            or "$" in PACKAGE_VAR.sub("", tests_from)
        ):
            raise err(
                _line(raw, "flaggems_tests_from"),
                "flaggems_tests_from: a FlagGems wheel or directory that "
                "ships flaggems_tests (${VAR} for one the lane is given)",
                lane_name,
            )
        for key in ("pytest_args", "setup", "packages"):
            if _has_nul(raw.get(key)):
                raise err(_line(raw, key), f"{key} cannot hold a NUL byte", lane_name)
        env_problem = _env_problem(raw["env"]) if "env" in raw else None
        if env_problem:
            raise err(_line(raw, "env"), env_problem, lane_name)
        if "timeout_minutes" in raw and not _timeout(raw["timeout_minutes"]):
            raise err(_line(raw, "timeout_minutes"), "timeout_minutes must be a positive number", lane_name)
        baseline = raw.get("baseline", "")
        if not isinstance(baseline, str) or _has_nul(baseline) or ("baseline" in raw and not baseline.strip()):
            raise err(_line(raw, "baseline"), "baseline must be a report path or last-green", lane_name)
        steps_raw = raw.get("steps")
        if not isinstance(steps_raw, list) or not steps_raw:
            raise err(_line(raw, "steps") or line, "a lane needs a non-empty list of steps", lane_name)
        steps: list[Step] = []
        names: set[str] = set()
        for i, step_raw in enumerate(steps_raw):
            step_line = steps_raw.lines[i] if hasattr(steps_raw, "lines") else None
            step = _parse_step(step_raw, step_line, err, lane_name, shared, default_timeout, default_cap)
            if step.name in names:
                raise err(step_line, "duplicate step name", lane_name, step.name)
            names.add(step.name)
            if step.kind == "compare":
                earlier = {s.name: s for s in steps}
                bad = [n for n in step.args if n not in earlier or earlier[n].kind != "pytest"]
                if bad:
                    raise err(
                        step_line,
                        f"compare: {_show(bad[0])} is not an earlier pytest step of this lane",
                        lane_name,
                        step.name,
                    )
            if step.name == PACKAGES_STEP and raw.get("packages"):
                raise err(
                    step_line,
                    "the name 'packages' is the lane's package install's own; rename the step",
                    lane_name,
                    step.name,
                )
            if step.name == SETUP_STEP and raw.get("setup"):
                raise err(
                    step_line,
                    "the name 'setup' is the lane's setup: commands' own; rename the step",
                    lane_name,
                    step.name,
                )
            steps.append(step)
        lanes[lane_name] = Lane(
            name=lane_name,
            platform=registry.canonical(platform),  # type: ignore[arg-type]
            steps=tuple(steps),
            description=str(raw.get("description", "")),
            display_name=str(raw.get("display_name", "")),
            runner_labels=tuple(raw.get("runner_labels", ())),
            image=str(raw.get("image", "")),
            env={k: str(v) for k, v in (raw.get("env") or {}).items()},
            setup=tuple(raw.get("setup", ())),
            timeout_minutes=raw.get("timeout_minutes"),
            pytest_args=tuple(raw.get("pytest_args", ())),
            packages=tuple(raw.get("packages", ())),
            baseline=baseline.strip(),
            flaggems_tests_from=tests_from.strip(),
        )
    return Manifest(path, lanes)


def load(path: str | Path, registry: Registry) -> Manifest:
    text = safeyaml.read_or_refuse(path, safeyaml.shown(path), "cannot read the manifest")
    return parse(text, str(path), registry)
