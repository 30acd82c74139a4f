"""How a call reaches FlagGems through torch dispatch: the one home for ``use_gems``, for the
spy that proves the call reached FlagGems at all, and for telling a result from a refusal.

``include``: only the row's own entry points (``use_gems(include=...)``), so a failure names
the row.  ``everything``: FlagGems enabled for every op it registers (``use_gems()``), as
torch_fl and model servers run it - the row's call then meets every other FlagGems op it
dispatches to, a workaround route's own arithmetic included (on the emulated 5.4 line such a
route once recursed through FlagGems' ``mul`` until Python's limit).  Every family runs its
rows at least once each way."""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterable
from typing import Any

ENABLING = ("include", "everything")

# the FlagGems functions ``everything`` leaves out while a failure is being attributed
_EXCLUDED: contextvars.ContextVar[tuple[str, ...]] = contextvars.ContextVar("fl_excluded", default=())


class RegisteredFunctionDefect(Exception):
    """A case that fails with every FlagGems op enabled and holds once the function of a known
    defect (``trigger: registered_function``) is left out: that defect's failure, proven."""


def use_gems(gems: Any, names: Iterable[str], enabling: str = "include") -> Any:
    """FlagGems' registration context for a call: the row's ``names`` only, or every op."""
    if enabling not in ENABLING:
        raise ValueError(f"enabling {enabling!r}: expected one of {', '.join(ENABLING)}")
    if enabling == "include":
        return gems.use_gems(include=list(names))
    excluded = _EXCLUDED.get()
    return gems.use_gems(exclude=list(excluded)) if excluded else gems.use_gems()


def names_function(specs: Iterable[str], fn: Any) -> bool:
    """``fn`` is one of ``specs`` ("module:function", the module matched as a dotted suffix:
    FlagGems imports an architecture's ops as ``hopper.ops.mul``)."""
    module, name = getattr(fn, "__module__", "") or "", getattr(fn, "__name__", "")
    for spec in specs:
        want_module, want_name = spec.split(":", 1)
        if name == want_name and (module == want_module or module.endswith("." + want_module)):
            return True
    return False


def registered_functions(gems: Any, wanted: Iterable[str]) -> tuple[str, ...]:
    """The names of the functions of ``wanted`` that the lane's FlagGems registers here."""
    specs = tuple(wanted)
    found = [
        item[1].__name__
        for item in getattr(gems, "_FULL_CONFIG", ())
        if isinstance(item, tuple) and len(item) >= 2 and names_function(specs, item[1])
    ]
    return tuple(dict.fromkeys(found))


def defect_of_function(defects: Iterable[Any], fn: Any) -> Any:
    """The known defect (``trigger: registered_function``) that names ``fn``, or None."""
    return next(
        (
            d
            for d in defects
            if getattr(d, "trigger", None) == "registered_function" and names_function(d.registered, fn)
        ),
        None,
    )


def every_op(gems: Any, defects: Iterable[Any], body: Callable[[], None]) -> None:
    """``body`` (a case's calls under ``use_gems(..., "everything")``), its failure attributed:
    where it fails and a known defect of a registered function (``defects``: the platform's
    catalogue entries) has its functions registered here, the body runs again with them left
    out; holding then, the failure is that defect's (``RegisteredFunctionDefect``, which only
    that defect's xfail takes).  Failing either way, the first failure stands: no defect
    explains it."""
    try:
        body()
        return
    except Exception as first:
        failure = first
    for defect in defects:
        if getattr(defect, "trigger", None) != "registered_function":
            continue
        functions = registered_functions(gems, defect.registered)
        if not functions:
            continue
        token = _EXCLUDED.set(tuple(functions))
        try:
            body()
        except Exception:
            continue
        finally:
            _EXCLUDED.reset(token)
        first_line = (str(failure).strip().splitlines() or [""])[0][:300]
        raise RegisteredFunctionDefect(
            f"known defect {defect.id}: fails with every FlagGems op enabled "
            f"({type(failure).__name__}: {first_line}) and holds once FlagGems' "
            f"{', '.join(functions)} ({', '.join(defect.registered)}) is left out"
        ) from failure
    raise failure


def scope_text(names: Iterable[str], enabling: str) -> str:
    """How a failure message names the registration it ran under."""
    return f"use_gems(include={list(names)})" if enabling == "include" else "use_gems() (every op)"


@contextlib.contextmanager
def counted(gems: Any, names: set[str]) -> Any:
    """FlagGems' registration entries for the functions ``names``, each wrapped to record that
    torch dispatch called it (``use_gems`` reads the entries when it registers): a contract
    that never reached FlagGems - torch took cuDNN, or a registration moved - must not pass."""
    import functools

    seen: set[str] = set()

    def spy(fn: Any) -> Any:
        @functools.wraps(fn)
        def called(*args: Any, **kwargs: Any) -> Any:
            seen.add(fn.__name__)
            return fn(*args, **kwargs)

        return called

    spies: dict[int, Any] = {}

    def rewired(item: Any) -> Any:
        if isinstance(item, tuple) and len(item) >= 2 and getattr(item[1], "__name__", None) in names:
            wrapper = spies.setdefault(id(item[1]), spy(item[1]))
            return (item[0], wrapper, *item[2:])
        return item

    full, by_func = gems._FULL_CONFIG, getattr(gems, "FULL_CONFIG_BY_FUNC", None)
    gems._FULL_CONFIG = tuple(rewired(i) for i in full)
    if isinstance(by_func, dict):
        gems.FULL_CONFIG_BY_FUNC = {k: [rewired(i) for i in v] for k, v in by_func.items()}
    try:
        yield seen
    finally:
        gems._FULL_CONFIG = full
        if isinstance(by_func, dict):
            gems.FULL_CONFIG_BY_FUNC = by_func


def overloads(gems: Any, names: Iterable[str]) -> tuple[str, ...]:
    """Every FlagGems function registered under an overload of the aten ops that ``names``
    are registered under (``var`` -> var, var_correction, var_dim): what torch dispatch may
    pick for a call of that op once its arguments say which overload.  A row's entry point
    is one of them; the argument forms that reach the others are reached only through
    dispatch."""
    wanted = set(names)
    bases = {
        str(item[0]).split(".")[0]
        for item in gems._FULL_CONFIG
        if len(item) >= 2 and getattr(item[1], "__name__", None) in wanted
    }
    found = {
        getattr(item[1], "__name__", "")
        for item in gems._FULL_CONFIG
        if len(item) >= 2 and str(item[0]).split(".")[0] in bases
    }
    return tuple(sorted((found - {""}) | wanted))


def dispatched(gems: Any, name: str) -> bool:
    return any(getattr(item[1], "__name__", None) == name for item in gems._FULL_CONFIG if len(item) >= 2)


def outcome(call: Any) -> tuple[str, Any]:
    """("ok", result) or ("raises", exception type name)."""
    try:
        return "ok", call()
    except Exception as exc:  # the outcome is the exception type itself
        return "raises", type(exc).__name__
