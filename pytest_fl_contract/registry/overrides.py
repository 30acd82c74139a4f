"""Vendor overrides (issue 59): the functions a platform's FlagGems backend puts in place of the
generic kernels (``flag_gems/runtime/backend/_<vendor>/ops``), read from source and found in
the registration at run time.

On a vendor platform FlagGems registers the backend's copy of an op instead of the generic one;
a fix made in the generic kernel is not carried into the copy (FlagGems #6163: Sunrise's cumsum
on an empty tensor, the guard the generic kernel got in #4541 missing).  Iluvatar's backend grew
from 14 files at 5.4.0.dev0 to 49 on master, Cambricon's to 248.  ``backend_ops`` lists what a
backend exports (parsed, never imported: any FlagGems line, master included, on any machine);
``scan_backend`` runs the masked-row source scan (``registry.coverage``) over the backend's
modules, which the default scan does not read; ``registered`` pairs each override FlagGems
registered in this process with the generic function of the same name, for the differential
contract (``test_overrides``: both on the same inputs, no reference needed).
``python -m pytest_fl_contract.registry.overrides [ROOT]`` prints every backend's table.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .coverage import Reach, flag_gems_root, scan


@dataclass(frozen=True)
class Override:
    vendor: str
    name: str  # the function the backend exports
    module: str  # the backend module that defines it (relative to the backend's ops/)
    generic: bool  # FlagGems' default backend exports a function of that name too


def _exports(init: Path) -> dict[str, str]:
    """``name -> module`` of a package ``__init__.py``'s ``from .module import name`` lines."""
    if not init.is_file():
        return {}
    tree = ast.parse(init.read_text(encoding="utf-8"))
    out = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module and (node.level == 1 or node.module.count(".") >= 2):
            for alias in node.names:  # from .mm import mm, or from flag_gems.ops.mm import mm
                out[alias.asname or alias.name] = node.module.rsplit(".", 1)[-1]
    return out


def vendors(root: Path) -> tuple[str, ...]:
    """The backends of a FlagGems tree: ``runtime/backend/_<vendor>``."""
    backend = root / "runtime" / "backend"
    return tuple(sorted(p.name[1:] for p in backend.glob("_*") if p.is_dir() and not p.name.startswith("__")))


def backend_ops(root: Path, vendor: str) -> tuple[Override, ...]:
    """What ``vendor``'s backend exports from its ``ops`` package, each marked where the generic
    ``flag_gems.ops`` exports the same name (the override of a generic kernel)."""
    generic = set(_exports(root / "ops" / "__init__.py"))
    ops = _exports(root / "runtime" / "backend" / f"_{vendor}" / "ops" / "__init__.py")
    return tuple(Override(vendor, name, f"{module}.py", name in generic) for name, module in sorted(ops.items()))


def scan_backend(root: Path, vendor: str) -> tuple[Reach, ...]:
    """The masked-row scan (``registry.coverage``) over ``vendor``'s backend modules."""
    return scan(root, (f"runtime/backend/_{vendor}/ops", f"runtime/backend/_{vendor}/fused"))


def _is_vendor(fn: Any) -> bool:
    """A function of a vendor backend: defined under ``runtime/backend/_<vendor>/`` (its ops,
    or an architecture's: FlagGems imports 5.0.2's Hopper ops as ``hopper.ops.mul``), or in a
    module outside flag_gems named like a backend (``_iluvatar.ops``)."""
    code = getattr(getattr(fn, "__wrapped__", fn), "__code__", None)
    where = Path(code.co_filename).as_posix() if code is not None else ""
    if "/runtime/backend/_" in where:
        return True
    module = getattr(fn, "__module__", "") or ""
    return not module.startswith("flag_gems") and module.split(".", 1)[0].startswith("_")


def registered(gems: Any) -> dict[str, tuple[Any, Any]]:
    """The overrides registered in this process: ``name -> (vendor function, generic function)``
    for every registration whose function comes from a vendor backend (``_<vendor>.ops``, or any
    module outside flag_gems) and whose name ``flag_gems.ops`` also has."""
    out: dict[str, tuple[Any, Any]] = {}
    for item in getattr(gems, "_FULL_CONFIG", ()):
        fn = item[1] if isinstance(item, tuple) and len(item) >= 2 else None
        name = getattr(fn, "__name__", None)
        generic = getattr(getattr(gems, "ops", None), name, None) if name else None
        if name and fn is not None and _is_vendor(fn) and callable(generic) and generic is not fn:
            out[name] = (fn, generic)
    return out


def load_failure(gems: Any) -> str | None:
    """Why the lane's vendor backend's ops did not load, None when they did or there are none.

    FlagGems imports ``_<vendor>.ops`` and, on ``ModuleNotFoundError`` anywhere inside it,
    prints a note and registers its generic kernels instead: FlagGems 5.4.0.dev0's Iluvatar
    backend imports ``triton.ops.matmul_perf_model``, which upstream Triton dropped in 3.0, so
    under any Triton without it every Iluvatar override (mm, addmm, var, scatter_add_, ...)
    silently becomes the generic kernel.  A lane must say so, not run the generic kernels as
    the vendor's."""
    import importlib

    vendor = getattr(gems, "vendor_name", None)
    root = Path(getattr(gems, "__file__", "")).parent
    if not vendor or not (root / "runtime" / "backend" / f"_{vendor}" / "ops" / "__init__.py").is_file():
        return None
    try:
        importlib.import_module(f"_{vendor}.ops")
    except Exception as exc:  # what FlagGems swallowed (or would)
        return f"_{vendor}.ops did not import ({type(exc).__name__}: {exc}): FlagGems runs its generic kernels there"
    return None


def table(root: Path, names: Iterable[str] | None = None) -> Iterator[str]:
    yield "| vendor | modules | exported | override a generic kernel | masked-row scan reaches |"
    yield "|---|---:|---:|---|---|"
    for vendor in names or vendors(root):
        ops = backend_ops(root, vendor)
        files = len({o.module for o in ops})
        over = [o.name for o in ops if o.generic]
        reached = ", ".join(r.module.rsplit(".", 1)[-1] for r in scan_backend(root, vendor)) or "-"
        yield f"| {vendor} | {files} | {len(ops)} | {', '.join(over) or '-'} | {reached} |"


def main(argv: list[str]) -> int:
    root = Path(argv[0]) if argv else flag_gems_root()
    if root is None or not (root / "runtime" / "backend").is_dir():
        print(f"fl-contract: error: no flag_gems package {'at ' + str(root) if root else 'installed'}", file=sys.stderr)
        return 2
    print("\n".join(table(root)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
