"""The op families' behaviour: what a contract, an isolated hardware call or a mutant tool does
with a registry row and one of its cases - inputs, the call through torch dispatch, the float64
reference, the tolerance of each output, the device memory a call holds - written once per
family (``reductions``, ``layers``, ``tensorops``), with what differs between rows carried by the rows
themselves.  ``of(row)`` gives a row's family; no consumer asks which op a row is.

It sits above the registry (it reads rows) and below the contracts, the hardware lanes and the
testing tools, which all use it: the library never imports its contract suites.
"""

from __future__ import annotations

from typing import Any, Protocol

# machine epsilon per dtype: every family's tolerance starts from it
EPS = {"float32": 2.0**-23, "float16": 2.0**-10, "bfloat16": 2.0**-7, "float64": 2.0**-52}


def assert_within(got: Any, want: Any, tol: dict[str, float], msg: Any = None) -> None:
    """``got`` against ``want`` within ``tol`` (rtol, atol): NaN and inf exactly where ``want``
    has them."""
    import torch

    torch.testing.assert_close(got, want, rtol=tol["rtol"], atol=tol["atol"], equal_nan=True, msg=msg)


class Family(Protocol):
    """What every family does with one of its rows and a case."""

    suite: str

    def inputs(
        self, row: Any, case: Any, *, seed: int = 0, device: str = "cpu", dtype: str = "float32", backward: bool = False
    ) -> Any: ...

    def outputs(
        self, row: Any, case: Any, inputs: Any, *, gems: Any = None, backward: bool = False, enabling: str = "include"
    ) -> dict[str, Any]: ...

    def tolerance(self, row: Any, case: Any, dtype: str, output: str, on_device: bool = False) -> dict[str, float]:
        """assert_close tolerances of ``output`` against float64 (``on_device``: against torch's
        own result on the device)."""

    def memory_gib(self, row: Any, case: Any) -> float: ...


def of(row: Any) -> Family:
    """The family behaviour of a registry row (its ``suite``)."""
    from . import layers, reductions, tensorops

    families: dict[str, Family] = {
        "reductions": reductions.FAMILY,
        "layers": layers.FAMILY,
        "tensorops": tensorops.FAMILY,
    }
    try:
        return families[row.suite]
    except KeyError:
        raise ValueError(f"no family behaviour for {row.name!r} (suite {getattr(row, 'suite', None)!r})") from None
