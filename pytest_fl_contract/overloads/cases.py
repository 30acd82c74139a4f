"""The cases of each registered overload, and running one.

``plan`` gives every entry of the registration table either its cases - (sample, dtype,
transform) triples whose sample was shown to reach exactly that overload - or the reason it has
none, so the suite has an item for every entry.  ``run`` is one case: torch in the case's dtype
(structure, dtype, shape), torch in float64 (values), then FlagGems' function registered for
that overload alone, with a spy that must see it called.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from . import boundary, references
from .oracle import (
    BINNED,
    POOLED,
    TIES_OPEN,
    UNDEFINED_VALUES,
    UNORDERED_VALUES,
    Timeout,
    Verdict,
    compare,
    deadline,
    failure,
    histogram_difference,
    identity,
    leaves,
    one_line,
    random_verdict,
    spied,
    tied_order_difference,
)
from .samples import (
    SEED,
    Source,
    Unavailable,
    callers,
    candidates,
    drawn,
    invoke,
    out_buffers,
    reaches,
    registered,
    schema,
    supports,
    transformed,
)
from .table import Overload, function_of

QUICK_TRANSFORMS = ("none", "boundary")
FULL_TRANSFORMS = ("none", "boundary", "transposed", "strided", "expanded", "empty", "pow2")
FULL_DTYPES = ("float32", "float16", "bfloat16")
PROBE_DTYPES = ("float32", "int64", "int32", "bool", "float16", "bfloat16", "uint8", "float64")
BUDGET = {"quick": 4097, "full": 1 << 22}  # elements of a transformed sample's largest tensor


@dataclass(frozen=True)
class Case:
    overload: str
    source: Source
    index: int
    dtype: str
    transform: str

    @property
    def id(self) -> str:
        return f"{self.overload}-{self.source.opinfo}-{self.source.caller}-{self.index}-{self.dtype}-{self.transform}"

    @property
    def sample(self) -> str:
        """``fl_sample``: the sample's index and dtype."""
        return f"{self.source.opinfo}[{self.index}] {self.source.caller} {self.dtype}"


@dataclass(frozen=True)
class Plan:
    overload: Overload
    cases: tuple[Case, ...]
    untested: str = ""  # why there is no case


def dispatch_key(gems: Any) -> str:
    """The key FlagGems registers under on this lane (the device's)."""
    device = getattr(getattr(gems, "runtime", None), "device", None)
    key = getattr(device, "dispatch_key", None)
    if key:
        return str(key)
    from flag_gems.runtime.backend.device import DeviceDetector

    return str(DeviceDetector().dispatch_key)


def is_random(name: str) -> bool:
    """Some overload of the op takes a Generator: its values are drawn, not computed."""
    import torch

    base = name.split(".", 1)[0]
    packet = getattr(torch.ops.aten, base, None)
    if packet is None:
        return False
    for overload in packet.overloads():
        if any("Generator" in str(a.type) for a in getattr(packet, overload)._schema.arguments):
            return True
    return base.rstrip("_") in {
        "dropout",
        "native_dropout",
        "randperm",
        "rand",
        "randn",
        "rand_like",
        "randn_like",
        "randint",
        "randint_like",
        "multinomial",
    }


def draws_in_forward(case: Case) -> bool:
    """A backward overload reached through a forward op that draws numbers (rrelu's noise,
    dropout's mask): the same seed draws the same numbers on one device, not on two."""
    return case.source.caller == "backward" and is_random(case.source.opinfo.rsplit(".", 1)[-1])


def why_untestable(entry: Overload) -> str:
    """Why an entry can have no case whatever the samples (empty: it can)."""
    import torch

    if entry.excluded:
        return "the lane's vendor backend leaves it out of FlagGems' registration"
    if not entry.enabled:
        return f"its registration condition is false under torch {torch.__version__}"
    if schema(entry.name) is None:
        return f"torch {torch.__version__} has no aten::{entry.name}: FlagGems' registration of it fails"
    references.install()  # device-only overloads' math references: torch's CPU kernels from here on
    if not host_kernel(entry.name):
        return f"torch has no host kernel for aten::{entry.name} (a device-only op): no float64 reference on the CPU"
    return ""


HOST_KEYS = ("CPU", "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional", "CompositeImplicitAutograd")


def host_kernel(name: str) -> bool:
    """torch computes the overload on the CPU (its own kernel, or a composite of others)."""
    import torch

    qualified = f"aten::{name}"
    try:
        return any(torch._C._dispatch_has_kernel_for_dispatch_key(qualified, key) for key in HOST_KEYS)
    except RuntimeError:
        return True  # torch cannot say: the case decides


def plan_one(
    gems: Any,
    entry: Overload,
    sweep: str,
    keys: tuple[str, ...],
    dtypes: tuple[str, ...],
    device: str = "cpu",
    outer: frozenset[str] | None = None,
) -> Plan:
    """``entry``'s cases: the first samples that reach it (quick: one; full: up to four), in the
    dtypes the lane and the OpInfo take, under the sweep's transforms."""
    reason = why_untestable(entry)
    if reason:
        return Plan(entry, (), reason)
    try:
        names = candidates(entry.name)
    except Unavailable as exc:
        return Plan(entry, (), str(exc))
    if not names:
        return Plan(
            entry, (), "no OpInfo entry matches it by name, alias or variant, and no generator is written for it"
        )
    fn, extra = function_of(gems, entry.name)
    want = 1 if sweep == "quick" else 4
    hits: list[tuple[Source, int, str]] = []
    shaped: tuple[Source, int, str] | None = None  # the first reaching sample with a size past 1
    # ... and, of an overload that takes a dim, the first that works along one that is not the
    # innermost: the transforms go to it.  A sample along the last dim runs the kernels' inner
    # path, where no row mask is needed; the non-inner path's 2-D row mask is the Iluvatar
    # defect's (without it 43 of 45 overloads the masked-row scan reaches passed there)
    # (``outer``: the modules whose overloads get it; None: all - the interpreter pays minutes for
    # some, sort along a middle dim 100 s, so an emulated lane takes it where its defects reach)
    wanted = takes_dim(entry.name) and (outer is None or entry.module in outer)
    across: tuple[Source, int, str] | None = None if wanted else (Source("", ""), -1, "")
    # full: also the first whose tensors differ in shape (one broadcast against another), where
    # a kernel that walks its first operand's elements goes wrong (5.0.2's Hopper mul)
    spread: tuple[Source, int, str] | None = None if sweep != "quick" else (Source("", ""), -1, "")
    for name in names:
        probe = next((d for d in PROBE_DTYPES if supports(name, d)), None)
        if probe is None:
            continue
        for caller in callers(entry.name):
            source = Source(name, caller)
            for index, sample in enumerate(drawn(name, probe)):
                if len(hits) >= want and shaped is not None and spread is not None and across is not None:
                    break
                if reaches(entry.name, source, sample, keys + extra, fn, device):
                    if len(hits) < want:
                        hits.append((source, index, probe))
                    if shaped is None and has_size(sample):
                        shaped = (source, index, probe)
                    if across is None and has_size(sample) and along_outer_dim(entry.name, sample):
                        across = (source, index, probe)
                    if spread is None and broadcasts(sample):
                        spread = (source, index, probe)
            if hits:
                break  # one way of calling it is enough
        if hits:
            break
    if not hits:
        return Plan(entry, (), f"none of the samples of {', '.join(names[:4])} reaches it through dispatch")
    if across is not None and across[1] >= 0:
        shaped = across
    if spread is not None and spread[1] >= 0 and spread not in hits:
        hits.append(spread)
    cases: list[Case] = []
    transforms = QUICK_TRANSFORMS if sweep == "quick" else FULL_TRANSFORMS
    for source, index, probe in hits:
        kinds = (
            [probe]
            if sweep == "quick" or probe not in FULL_DTYPES
            else [d for d in dtypes if d == probe or supports(source.opinfo, d)]
        )
        for dtype in kinds:
            cases.append(Case(entry.name, source, index, dtype, "none"))
    if shaped is not None:
        source, index, probe = shaped
        cases += [Case(entry.name, source, index, probe, t) for t in transforms if t != "none"]
    return Plan(entry, tuple(dict.fromkeys(cases)))


def takes_dim(overload: str) -> bool:
    """The overload's schema has a ``dim`` argument (one int or a list of them)."""
    sch = schema(overload)
    return sch is not None and any(a.name == "dim" for a in sch.arguments)


def along_outer_dim(overload: str, sample: Any) -> bool:
    """The sample names, as its ``dim``, a dim of its input other than the innermost, of size
    past 1 (by keyword, or by position as the schema places it after the input)."""
    import torch

    sch = schema(overload)
    inp = sample.input
    if sch is None or not isinstance(inp, torch.Tensor) or inp.dim() < 2:
        return False
    names = [a.name for a in sch.arguments]
    if "dim" not in names:
        return False
    at = names.index("dim")
    if "dim" in sample.kwargs:
        value = sample.kwargs["dim"]
    elif 1 <= at <= len(sample.args):
        value = sample.args[at - 1]
    else:
        return False
    dims = [value] if isinstance(value, int) else list(value) if isinstance(value, (list, tuple)) else []
    rank = inp.dim()
    return any(isinstance(d, int) and -rank <= d < rank and d % rank != rank - 1 and inp.shape[d] > 1 for d in dims)


def broadcasts(sample: Any) -> bool:
    """Two of the sample's tensors of one rank differ in shape: one is broadcast against the
    other (a rank short of another is broadcast too, but kernels that walk their first operand
    flat took other rules there)."""
    import torch
    from torch.utils._pytree import tree_flatten

    flat = tree_flatten((sample.input, tuple(sample.args), dict(sample.kwargs)))[0]
    shapes = [tuple(t.shape) for t in flat if isinstance(t, torch.Tensor) and t.dim() > 0]
    return any(len(a) == len(b) and a != b for i, a in enumerate(shapes) for b in shapes[i + 1 :])


def has_size(sample: Any) -> bool:
    """Some tensor of the sample has a dimension past 1: the transforms have something to change."""
    import torch
    from torch.utils._pytree import tree_flatten

    flat = tree_flatten((sample.input, tuple(sample.args), dict(sample.kwargs)))[0]
    return any(isinstance(t, torch.Tensor) and any(s > 1 for s in t.shape) for t in flat)


def plan(
    gems: Any,
    entries: tuple[Overload, ...],
    sweep: str,
    dtypes: tuple[str, ...] = FULL_DTYPES,
    device: str = "cpu",
    outer: frozenset[str] | None = None,
) -> list[Plan]:
    """Every entry's cases, the reach of each sample probed on the lane's ``device``; the
    transforms of a dim-taking overload go to a sample along an outer dim where its module is
    in ``outer`` (None: every module)."""
    import warnings

    keys = (dispatch_key(gems),)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return [plan_one(gems, e, sweep, keys, dtypes, device, outer) for e in entries]


def _as64(sample: Any) -> Any:
    import torch
    from torch.utils._pytree import tree_map

    return tree_map(
        lambda v: v.to(torch.float64) if isinstance(v, torch.Tensor) and v.is_floating_point() else v, sample
    )


def _torch_call(case: Case, sample: Any) -> tuple[Any, dict[str, Any] | None]:
    """torch's own result of the case's call (FlagGems not registered) and its out buffers."""
    out = None
    if case.source.caller == "out" or (
        case.source.caller == "aten" and any(a.is_out for a in schema(case.overload).arguments)
    ):
        out = out_buffers(case.overload, invoke(case.overload, Source(case.source.opinfo, "op"), fresh_tuple(sample)))
    return invoke(case.overload, case.source, fresh_tuple(sample), out=out), out


def fresh_tuple(sample: Any) -> Any:
    import torch
    from torch.utils._pytree import tree_map

    return tree_map(lambda v: v.detach().clone() if isinstance(v, torch.Tensor) else v, sample)


@contextlib.contextmanager
def poisoned(device: str, emulated: bool) -> Iterator[None]:
    """The call runs with the memory around its tensors holding NaN (on hardware: a block
    filled and freed, which the case's tensors are then allocated from; under the emulator:
    its heap), then the emulator's heap is as it was.  A read past a tensor then folds NaN into
    the result: the emulator's finite heap pattern, multiplied by a masked operand's zeros,
    vanished (mm's K tail read without its row mask, the Iluvatar defect: the op contracts'
    determinism under poison caught it, the overload suite did not)."""
    from ..emulation import device as emulator
    from ..hardware.device import poison_device_memory

    poison_device_memory(device, float("nan"), nbytes=4096 if emulated else 64 << 20)
    try:
        yield
    finally:
        if emulated and emulator.DEVICE.installed:
            emulator.poison(None)


def injected_lanes(emulated: bool) -> Callable[[], int | None]:
    """From now, the lanes an injected defect makes loads read beyond their masks: what the
    returned function says when called (None where no defect is injected).  It tells a case the
    defect never touched (its kernels load no row-masked tile here) from one whose extra rows
    never reach the output, where the case passes all the same."""
    from ..emulation import device as emulator

    if not emulated or not emulator.DEVICE.injecting:
        return lambda: None
    start = emulator.DEVICE.counters.extra_lanes
    return lambda: emulator.DEVICE.counters.extra_lanes - start


def to_device(sample: Any, device: str) -> Any:
    import torch
    from torch.utils._pytree import tree_map

    if device == "cpu":
        return fresh_tuple(sample)
    return tree_map(lambda v: v.detach().to(device) if isinstance(v, torch.Tensor) else v, sample)


@contextlib.contextmanager
def only(overload: str, fn: Callable[..., Any], keys: tuple[str, ...]) -> Iterator[list[int]]:
    """``fn`` registered for ``overload`` alone while the block runs; yields its calls so far
    (a case that never reached it does not count)."""
    spy, calls = spied(fn)
    lib = registered(overload, spy, keys)
    try:
        yield calls
    finally:
        lib._destroy()


def call_once(
    case: Case, drawn_sample: Any, out: dict[str, Any] | None, device: str, seed: int
) -> tuple[Any, Any, Any]:
    """The case's call on a fresh device copy of its sample, in its layout, with fresh out=
    buffers where it has them: (result, the inputs it was given, the buffers)."""
    import torch

    inputs = boundary.relayout(to_device(drawn_sample, device), case.transform)
    bufs = {k: torch.empty_like(v, device=device) for k, v in out.items()} if out else None
    torch.manual_seed(seed)
    result = invoke(case.overload, case.source, inputs, out=bufs)
    settle(device)
    return result, inputs, bufs


def settle(device: str) -> None:
    """Wait for the device's queue: a kernel's fault raises here, in the call that launched it,
    not in the next call (the differential's generic kernel was charged with its override's
    illegal access on an H100)."""
    import torch

    kind = torch.device(device).type
    module = getattr(torch, kind, None) if kind != "cpu" else None
    if module is not None and hasattr(module, "synchronize"):
        module.synchronize()


def run(
    gems: Any, case: Case, *, budget: int, seconds: float, seed: int = SEED, device: str = "cpu", emulated: bool = False
) -> Verdict:
    """One case's verdict (``budget``: elements of a transformed tensor; ``seconds``: its time;
    ``device``: where FlagGems' call runs - torch's reference stays on the host)."""
    import warnings

    import torch

    warnings.filterwarnings("ignore", category=UserWarning)
    samples = drawn(case.source.opinfo, case.dtype)
    if case.index >= len(samples):
        return Verdict("UNTESTED", f"{case.source.opinfo} draws {len(samples)} samples in {case.dtype}")
    try:
        drawn_sample = transformed(
            case.overload, case.source, samples[case.index], case.transform, budget=budget, seed=seed
        )
        sample = boundary.relayout(drawn_sample, case.transform)
    except boundary.NotApplicable as exc:
        return Verdict("UNTESTED", f"{case.transform}: {exc}")
    random = is_random(case.overload)
    if not random and device != "cpu" and draws_in_forward(case):
        return Verdict(
            "UNTESTED",
            f"its forward ({case.source.opinfo}) draws numbers: on the device for FlagGems' backward, "
            "on the host for the float64 reference, so the two differentiate different draws",
        )
    grad = torch.enable_grad() if case.source.caller == "backward" else torch.no_grad()
    with grad:
        try:
            torch.manual_seed(seed)
            meta, out = _torch_call(case, sample)
        except Exception as exc:
            return Verdict("UNTESTED", f"torch refuses this sample ({case.transform}): {one_line(exc)}")
        ref = meta
        if not random and case.dtype != "float64":
            try:
                ref, _ = _torch_call(case, _as64(sample))
            except Exception:
                ref = meta  # torch has no float64 kernel for it: its own result in the case's dtype
        draws = []
        if random:
            for k in range(1, POOLED + 1):
                torch.manual_seed(seed + k)
                draws.append(_torch_call(case, sample)[0])
        fn, extra = function_of(gems, case.overload)
        lanes = injected_lanes(emulated)
        with only(case.overload, fn, (dispatch_key(gems), *extra)) as calls:
            try:
                with deadline(seconds), poisoned(device, emulated):
                    got, inputs, bufs = call_once(case, drawn_sample, out, device, seed)
                    again = call_once(case, drawn_sample, out, device, seed)[0] if random else None
            except (Exception, Timeout) as exc:
                if not calls:
                    return Verdict("UNTESTED", f"the case did not reach {fn.__name__} ({one_line(exc)})")
                return dataclasses.replace(failure(exc, emulated), defect_lanes=lanes())
    if not calls:
        return Verdict("UNTESTED", f"the case did not reach {fn.__name__}: dispatch took another path")
    return dataclasses.replace(_judged(case, got, inputs, bufs, again, meta, ref, draws, random), defect_lanes=lanes())


def _judged(
    case: Case, got: Any, inputs: Any, bufs: Any, again: Any, meta: Any, ref: Any, draws: list[Any], random: bool
) -> Verdict:
    problem = identity(case.source.caller, got, inputs, bufs)
    if problem:
        return Verdict("WRONG", problem)
    if random:
        return random_verdict(got, again, meta, draws)
    base = case.overload.split(".")[0]
    if base in BINNED:
        return _binned(got, meta, ref, inputs)
    if base in TIES_OPEN and not inputs[2].get("stable"):
        return _sorted(got, meta, ref, inputs)
    problem = compare(
        got, meta, ref, values=base.rstrip("_") not in UNDEFINED_VALUES, unordered=base in UNORDERED_VALUES
    )
    return Verdict("WRONG", problem) if problem else Verdict("PASS", "")


def _binned(got: Any, meta: Any, ref: Any, inputs: Any) -> Verdict:
    """A histogram: torch's structure and dtype, and counts within one per edge value."""
    problem = compare(got, meta, meta, values=False) or histogram_difference(got, ref, inputs)
    return Verdict("WRONG", problem) if problem else Verdict("PASS", "")


def _sorted(got: Any, meta: Any, ref: Any, inputs: Any) -> Verdict:
    """A sort not asked to be stable: torch's structure, float64's values, and indices that
    pick those values (any order among equal ones)."""
    import torch

    inp, args, kwargs = inputs
    dim = kwargs.get("dim", args[0] if args and isinstance(args[0], int) else -1)
    g, r = leaves(got), leaves(ref)
    problem = compare(got, meta, meta, values=False)
    if problem is None and isinstance(inp, torch.Tensor) and inp.dim() > 0 and g:
        if len(g) == 2:  # (values, indices)
            problem = compare(g[0], leaves(meta)[0], r[0])
            want = r[0]
        else:  # argsort: the values float64's indices pick
            want = inp.detach().cpu().to(torch.float64).gather(dim, r[0].detach().cpu().long())
        problem = problem or tied_order_difference(g[-1], want, inp, dim)
    elif problem is None:
        problem = compare(got, meta, ref)
    return Verdict("WRONG", problem) if problem else Verdict("PASS", "")
