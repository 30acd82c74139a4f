"""A committed sweep with some of its cases re-measured (``bench_reductions.py --json``
runs of chosen ``--shapes``): later files' rows replace the earlier ones' of the same op,
shape, dim and dtype, and the merged rows are summarised as the sweep summarises itself.
Each row's ratios come from one machine (native timed beside fast); rows of different
files may come from different machines.  No GPU needed.

    python benchmarks/merge_sweeps.py BASE.json [REPLACEMENT.json ...] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys

from bench_reductions import summary


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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+")
    parser.add_argument("--json", help="write the merged rows here")
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
    rows, replaced = merge(*(data["rows"] for data in loaded))
    print(f"{args.files[0]}: {len(rows)} cases, {replaced} re-measured from {', '.join(args.files[1:]) or 'nothing'}")
    print("\n".join(summary(rows)))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as sink:
            json.dump({**loaded[0], "merged_from": args.files, "rows": rows}, sink, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
