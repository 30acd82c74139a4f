"""The compiler probes a group implicates, as a standalone packet for the vendor.

Where a group's cause is a compiler defect, its draft carries the probes that test that
defect's feature: tiny Triton kernels with no FlagGems, each against the exact value it must
give, printed as the seed's table (variant, result, expected, verdict).  The packet is two
files: ``probes_battery.py``, the project's probe battery (``probes/battery.py``) copied
with its one import of ours (the registry's grid limits) written in as a literal, and
``probe.py``, which runs the battery's probes of the defect and exits 1 while one fails, 0
when all hold, 2 when it cannot run them.  torch, triton and numpy are all it needs on a
device; on an emulated lane it also brings up the emulator, as the reproductions do
(``script.py`` says why).
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

from ..util import FlContractError

_OUR_IMPORT = re.compile(r"^from pytest_fl_contract\.registry\.schema import GRID_LIMITS\n", re.M)

_RUNNER = '''#!/usr/bin/env python3
"""Compiler probes for {defect}: {feature}

Standalone Triton kernels, no FlagGems: each probe's result against the exact value it must
give (small integers: equality, not a tolerance).  Exit 1 while a probe fails, 0 when all
hold, 2 when they cannot run.  Needs torch, triton, numpy and probes_battery.py beside it.
    python probe.py [--lane ...]
    {lanes}
Written by fl-contract triage from lane {lane}.
"""
import argparse
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
LANES = {lanes_value!r}
DEFAULT_LANE = {default!r}
DEVICE = {device!r}
DEFECT = {defect!r}


def shown(values):
    flat = [v.item() if hasattr(v, "item") else v for v in getattr(values, "flat", [values])]
    text = ["%d" % v if float(v).is_integer() else "%g" % v for v in flat[:8]]
    return text[0] if len(flat) == 1 else "[" + ", ".join(text) + (", ..." if len(flat) > 8 else "") + "]"


def _main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lane", choices=sorted(LANES), default=DEFAULT_LANE)
    lane = parser.parse_args(argv).lane
    if LANES[lane] is not None:
        from pytest_fl_contract.emulation.interpreter import bring_up  # Triton's interpreter, the defect injected

        bring_up(*LANES[lane])
    sys.path.insert(0, HERE)
    import probes_battery as battery

    rows = []
    for probe in battery.PROBES:
        if probe.defect != DEFECT:
            continue
        outcome = probe.run(DEVICE)
        if outcome.skipped is not None:
            rows.append((probe.id, probe.variant, "-", "-", "skipped"))
            continue
        show = probe.shown or (lambda v: v)
        rows.append((probe.id, probe.variant, shown(show(outcome.result)), shown(show(outcome.expected)),
                     "ok" if outcome.passed else "FAIL"))
    print(__doc__.splitlines()[0] + "; run now: --lane " + lane)
    print()
    print("| probe | variant | result | expected | verdict |")
    print("|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(str(c).replace("|", "/") for c in row) + " |")
    failed = sum(row[4] == "FAIL" for row in rows)
    print()
    print(f"{{failed}} of {{len(rows)}} probes fail" if failed else "every probe holds")
    return 1 if failed else (0 if rows else 2)


def main(argv=None):
    try:
        return _main(argv)
    except SystemExit:
        raise
    except BaseException as exc:  # one line, never exit 1 (1 says the defect is there)
        print(f"cannot run the probes here: {{type(exc).__name__}}: {{' '.join(str(exc).split())[:300]}}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
'''


def battery_source() -> str:
    """The probe battery's source with its one import of ours written in as a literal."""
    from ..registry.schema import GRID_LIMITS

    spec = importlib.util.find_spec("pytest_fl_contract.probes.battery")
    if spec is None or spec.origin is None:
        raise FlContractError("the probe battery is not installed")
    text = Path(spec.origin).read_text(encoding="utf-8")
    text, found = _OUR_IMPORT.subn(
        f"GRID_LIMITS = {GRID_LIMITS!r}  # pytest_fl_contract.registry.schema's, written in\n", text
    )
    if found != 1 or "pytest_fl_contract" in text.replace("pytest_fl_contract.registry.schema's", ""):
        raise FlContractError(
            "the probe battery imports more of pytest-fl-contract than its grid limits: no standalone packet"
        )
    return text


def packet(
    out: Path,
    defect: str,
    feature: str,
    lane: str,
    device: str,
    emulated: tuple[str, tuple[str, ...]] | None,
    cpu_profile: str | None,
) -> Path:
    """Write the packet into ``out``; the runner's path."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "probes_battery.py").write_text(battery_source(), encoding="utf-8")
    lanes_value: dict[str, tuple[str, tuple[str, ...]] | None]
    if emulated is not None:
        lanes_value = {"emulated": (emulated[0], tuple(emulated[1])), "cpu": (cpu_profile or emulated[0], ())}
        lanes = (
            "--lane emulated (default): on Triton's interpreter with the defect injected (the one import of "
            "pytest-fl-contract: its emulator module); --lane cpu: the plain CPU lane"
        )
        default, device = "emulated", "cpu"
    else:
        lanes_value, default = {"device": None}, "device"
        lanes = "--lane device (default): this machine's accelerator"
    runner = out / "probe.py"
    runner.write_text(
        _RUNNER.format(
            defect=defect,
            feature=" ".join(feature.split()) or defect,
            lanes=lanes,
            lane=lane,
            lanes_value=lanes_value,
            default=default,
            device=device,
        ),
        encoding="utf-8",
    )
    return runner
