"""What a lane compiled: the kernels in a Triton cache directory, by name, with how many
specialisations of each (one compile each, per cache) and their size on disk.

    python benchmarks/triton_cache_census.py /tmp/triton-cache [--top 25]
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from pathlib import Path


def census(cache: Path) -> tuple[Counter[str], int, int]:
    """({kernel name: specialisations}, entries, bytes): an entry is a directory holding the
    compiled kernel's metadata JSON (``<name>.json``, with its ``name``)."""
    names: Counter[str] = Counter()
    entries = size = 0
    for entry in (p for p in cache.iterdir() if p.is_dir()) if cache.is_dir() else ():
        entries += 1
        size += sum(f.stat().st_size for f in entry.iterdir() if f.is_file())
        for meta in entry.glob("*.json"):
            if meta.name.startswith("__grp__"):
                continue
            try:
                name = json.loads(meta.read_text()).get("name")
            except (OSError, ValueError, AttributeError):
                continue
            if name:
                names[str(name)] += 1
                break
    return names, entries, size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("cache", type=Path)
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    names, entries, size = census(args.cache)
    print(
        f"{args.cache}: {entries} entries, {sum(names.values())} compiled kernels of {len(names)} names, "
        f"{size / 2**20:.1f} MiB"
    )
    for name, count in names.most_common(args.top):
        print(f"  {count:5d}  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
