"""The denominator: every entry of the installed FlagGems' registration table.

FlagGems registers its ops from ``flag_gems._FULL_CONFIG``, a tuple of ``(aten "name.overload",
function[, condition[, extra dispatch keys]])`` (5.0.2: two or three items; 5.4 adds the fourth;
a ``None`` condition means always).  That table, not a list kept here, is what a lane ships, so
it is what every overload's verdict is counted against: an entry the suite has no case for
still gets an item, UNTESTED with its reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Overload:
    """One registration table entry."""

    name: str  # the aten overload as registered: "add.Tensor", "sum" (the default overload)
    function: str  # the FlagGems function's __name__ ("add", "sum_dim")
    module: str  # where it is defined ("flag_gems.ops.add")
    enabled: bool  # its condition holds under this torch (True where it has none)
    extra_keys: tuple[str, ...] = ()  # dispatch keys registered beside the device's (5.4: Autograd)
    excluded: bool = False  # the vendor backend's unused-op list leaves it unregistered

    @property
    def base(self) -> str:
        """The aten op without its overload name ("add" for "add.Tensor", "add_" for "add_.Tensor")."""
        return self.name.split(".", 1)[0]

    @property
    def overload(self) -> str:
        """The overload name ("Tensor"), "default" for a bare op name."""
        return self.name.partition(".")[2] or "default"

    @property
    def registered(self) -> bool:
        """What ``flag_gems.enable()`` registers on this lane."""
        return self.enabled and not self.excluded


def _condition(item: tuple[Any, ...]) -> bool:
    cond = item[2] if len(item) > 2 else None
    if cond is None:
        return True
    try:
        return bool(cond())
    except Exception:  # a condition that cannot be evaluated registers nothing
        return False


def _unused(gems: Any) -> frozenset[str]:
    """The function names the lane's vendor backend leaves out (FlagGems' own rule: every vendor
    but NVIDIA lists them in its backend)."""
    try:
        from flag_gems.runtime import backend, common
        from flag_gems.runtime.backend.device import DeviceDetector

        device = DeviceDetector()
        if device.vendor == common.vendors.NVIDIA:
            return frozenset()
        return frozenset(backend.get_unused_ops(device.vendor_name) or ())
    except Exception:
        return frozenset()


def read(gems: Any) -> tuple[Overload, ...]:
    """Every entry of ``gems._FULL_CONFIG``, in its order.  An entry whose shape is not one of
    the known ones is a changed FlagGems: it raises rather than dropping out of the count."""
    unused = _unused(gems)
    found = []
    for item in gems._FULL_CONFIG:
        if not isinstance(item, tuple) or not 2 <= len(item) <= 4 or not isinstance(item[0], str):
            raise ValueError(f"flag_gems._FULL_CONFIG entry of an unknown shape: {item!r}")
        fn = item[1]
        name = getattr(fn, "__name__", repr(fn))
        inner = getattr(fn, "__wrapped__", fn)
        found.append(
            Overload(
                name=item[0],
                function=name,
                module=getattr(inner, "__module__", "") or "",
                enabled=_condition(item),
                extra_keys=tuple(item[3]) if len(item) > 3 and item[3] else (),
                excluded=name in unused,
            )
        )
    return tuple(found)


def function_of(gems: Any, name: str) -> tuple[Any, tuple[str, ...]]:
    """The function and the extra dispatch keys registered for overload ``name`` now (the lane's
    workaround may have replaced FlagGems' own: it rewires the table)."""
    for item in gems._FULL_CONFIG:
        if item[0] == name:
            return item[1], tuple(item[3]) if len(item) > 3 and item[3] else ()
    raise KeyError(f"{name}: not in flag_gems._FULL_CONFIG")


def summary(entries: tuple[Overload, ...]) -> str:
    """The header's line: how many entries, base ops and functions the lane's FlagGems registers."""
    registered = [e for e in entries if e.registered]
    return (
        f"{len(entries)} overloads in FlagGems' table ({len({e.base.rstrip('_') for e in entries})} base ops), "
        f"{len(registered)} registered on this lane"
    )
