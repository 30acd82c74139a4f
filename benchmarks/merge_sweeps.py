"""A committed sweep with some of its cases re-measured (``bench_reductions.py --json``
runs of chosen ``--shapes``): later files' rows replace the earlier ones' of the same op,
shape, dim and dtype, and the merged rows are summarised as the sweep summarises itself.
Each row's ratios come from one machine (native timed beside fast); rows of different
files may come from different machines.  No GPU needed.

    python benchmarks/merge_sweeps.py BASE.json [REPLACEMENT.json ...] [--current-picks] [--json OUT]

``--current-picks``: a later row replaces only where it ran the plan the tile model picks now
(an A/B run's two arms, or a run of an earlier rule, as replacements for the current code).
"""

from __future__ import annotations

import argparse
import json
import sys

from bench_reductions import summary
from model_check import ELEM, device


def key(row: dict) -> tuple:
    return row["op"], tuple(row["shape"]), row["dim"], row["dtype"]


def merge(base: list[dict], *later: list[dict]) -> tuple[list[dict], int]:
    """(base's rows with later rows in their places, how many were replaced); rows of a
    later file with no place in the base are not added: the base's sample stays its own."""
    rows = list(base)
    where = {key(r): i for i, r in enumerate(rows)}
    replaced = set()
    for batch in later:
        for row in batch:
            i = where.get(key(row))
            if i is not None:
                rows[i] = row
                replaced.add(i)
    return rows, len(replaced)


def on_current_pick(row: dict, device_model: str) -> bool:
    """The row ran the plan the tile model picks now for its problem on its device."""
    from pytest_fl_contract.util import mnk
    from pytest_fl_contract.workarounds import tilemodel as tm

    kind = "softmax" if row["op"] == "softmax" else "reduce"
    plan = tm.pick(*mnk(row["shape"], row["dim"]), device(device_model), ELEM[row["dtype"]], kind)
    return (vars(plan) if plan else None) == row["plan"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--json", help="write the merged rows here")
    parser.add_argument(
        "--current-picks", action="store_true", help="replace only with rows that ran the plan the tile model picks now"
    )
    args = parser.parse_args(argv)
    loaded = []
    for path in args.files:
        try:
            with open(path, encoding="utf-8") as source:
                loaded.append(json.load(source))
            loaded[-1]["rows"][0]["op"]  # noqa: B018 - a sweep's JSON has rows of cases
        except (OSError, ValueError, KeyError, TypeError, IndexError) as exc:
            print(f"merge_sweeps: cannot read {path} as a sweep: {type(exc).__name__}: {exc}", file=sys.stderr)
            return 2
    later = [data["rows"] for data in loaded[1:]]
    if args.current_picks:
        try:
            later = [
                [r for r in rows if on_current_pick(r, data["device_model"])] for rows, data in zip(later, loaded[1:])
            ]
        except (KeyError, ValueError, IndexError) as exc:
            print(
                f"merge_sweeps: --current-picks: a row or device the tile model cannot read: {type(exc).__name__}: {exc}",
                file=sys.stderr,
            )
            return 2
    rows, replaced = merge(loaded[0]["rows"], *later)
    print(f"{args.files[0]}: {len(rows)} cases, {replaced} re-measured from {', '.join(args.files[1:]) or 'nothing'}")
    print("\n".join(summary(rows)))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as sink:
            json.dump({**loaded[0], "merged_from": args.files, "rows": rows}, sink, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
