"""Inputs for an overload, drawn from PyTorch's OpInfo database rather than written per op.

An aten overload is matched to OpInfo entries by name: the op's own name, its aliases, its
``aten_name``, the ``nn.functional.`` / ``special.`` / ``linalg.`` spellings, the in-place
form (``add_`` -> ``add``), the dunder operators (``__and__`` -> ``bitwise_and``), ``native_`` /
leading-underscore internals and ``*_backward`` (the forward op, run through autograd).  Which
way a sample is called - the function, the method, the in-place variant, ``out=`` with a
preallocated buffer, the aten overload itself, autograd of the forward op - follows from the
overload's schema.  A match by name proves nothing: ``reaches`` calls each candidate with a spy
registered for exactly that overload, which raises the moment dispatch gets there, so only the
samples that really reach the overload become its cases, and the probe costs no kernel.

The sample list of an (OpInfo, dtype) is drawn under a fixed seed, so a case is its index:
the same index gives the same tensors in every process (xdist workers, a rerun).
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass
from typing import Any, Callable

from .generators import GENERATED_DTYPES, GENERATORS

SEED = 20261207
LIMIT = 24  # samples read from an OpInfo's generator: its first ones are its plainest

# dunder operators registered as their own aten ops, and the OpInfo that has their samples
DUNDER = {
    "and": "bitwise_and",
    "or": "bitwise_or",
    "xor": "bitwise_xor",
    "lshift": "bitwise_left_shift",
    "rshift": "bitwise_right_shift",
}
PREFIXES = ("nn.functional.", "special.", "linalg.", "fft.", "_refs.")
CALLERS = ("op", "method", "inplace", "out", "aten", "backward")
# aten ops whose samples OpInfo files under another op's name (the functional that reaches them):
# matched by prefix of the aten op's stem, each candidate still proven by the probe
ALIASES = {
    "reflection_pad": ("nn.functional.pad.reflect",),
    "replication_pad": ("nn.functional.pad.replicate",),
    "upsample_": (
        "nn.functional.interpolate",
        "nn.functional.upsample_nearest",
        "nn.functional.upsample_bilinear",
        "_upsample_bilinear2d_aa",
    ),
    "nll_loss": ("nn.functional.nll_loss",),
    "native_dropout": ("nn.functional.dropout",),
    "embedding_dense": ("nn.functional.embedding",),
    "index": ("__getitem__",),
    "index_put_impl": ("index_put",),
    "unique2": ("unique",),
    "to_copy": ("to",),
    "safe_softmax": ("softmax",),
    "rrelu_with_noise": ("nn.functional.rrelu",),
    "zero": ("zero_",),
}


class Unavailable(Exception):
    """OpInfo's database cannot be imported here (``expecttest`` missing): every overload is
    UNTESTED with this reason, never an import error."""


@dataclass(frozen=True)
class Source:
    """Where an overload's samples come from and how one is called."""

    opinfo: str  # OpInfo's full name: "add", "nn.functional.gelu", "max.reduction_with_dim"
    caller: str  # one of CALLERS


@dataclass(frozen=True)
class Call:
    """One materialised call: ``run(fn_args)`` is what the case does, on the tensors of a sample."""

    source: Source
    args: tuple[Any, ...]
    kwargs: dict[str, Any]


@functools.lru_cache(maxsize=1)
def database() -> dict[str, Any]:
    """OpInfo's entries by full name (``name.variant_test_name``)."""
    try:
        from torch.testing._internal.common_methods_invocations import op_db
    except ImportError as exc:  # expecttest (or torch's testing package) missing
        raise Unavailable(f"PyTorch's OpInfo database cannot be imported ({exc}); install expecttest") from None
    return {full_name(o): o for o in op_db}


def full_name(opinfo: Any) -> str:
    return opinfo.name + (f".{opinfo.variant_test_name}" if opinfo.variant_test_name else "")


def schema(overload: str) -> Any:
    """The aten schema of ``"name.overload"`` (None where torch has no such overload)."""
    import torch

    base, _, name = overload.partition(".")
    try:
        return getattr(getattr(torch.ops.aten, base), name or "default")._schema
    except (AttributeError, RuntimeError):
        return None


def forward_stems(base: str) -> tuple[tuple[str, ...], str]:
    """The names an aten op's samples may be filed under, and the kind of call it is
    (``inplace``, ``backward`` or ``plain``)."""
    kind = "plain"
    name = base
    if name.startswith("__") and name.endswith("__"):
        inner = name[2:-2]
        if inner.startswith("i") and inner[1:] in DUNDER:
            return (DUNDER[inner[1:]],), "inplace"
        return ((DUNDER[inner],) if inner in DUNDER else (inner,)), "plain"
    if name.endswith("_") and not name.endswith("__"):
        name, kind = name[:-1], "inplace"
    for suffix in ("_backward_data", "_backward"):
        if name.endswith(suffix):
            name, kind = name[: -len(suffix)], "backward"
            break
    stems = [name, name.lstrip("_")]
    for prefix in ("native_", "_native_"):
        if name.startswith(prefix):
            stems.append(name[len(prefix) :])
    if name.startswith("_") and name.endswith("_legit"):  # _native_batch_norm_legit
        stems.append(name.lstrip("_").removeprefix("native_").removesuffix("_legit"))
    for suffix in ("_out", "_with_indices", "_functional", "_legit_no_training", "_copy", "_forward"):
        if name.endswith(suffix):
            stems.append(name.lstrip("_")[: -len(suffix)])
    return tuple(dict.fromkeys(s for s in stems if s)), kind


def aliased(stems: tuple[str, ...]) -> list[str]:
    """OpInfo names (or name prefixes) ``ALIASES`` gives the stems."""
    found: list[str] = []
    for stem in stems:
        bare = stem.lstrip("_")
        for prefix, names in ALIASES.items():
            if (
                bare == prefix
                or (prefix.endswith("_") and bare.startswith(prefix))
                or (bare.startswith(prefix) and bare[len(prefix) :].rstrip("123d") == "")
            ):
                found += names
    return found


def candidates(overload: str) -> list[str]:
    """OpInfo entries whose name says they may reach ``overload``, best first."""
    base = overload.split(".", 1)[0]
    stems, _ = forward_stems(base)
    db = database()
    found: list[str] = [f"gen:{base}"] if base in GENERATORS else []
    for stem in stems:
        for key, o in db.items():
            names = {o.name, getattr(o, "aten_name", None) or "", *(a.name for a in getattr(o, "aliases", ()) or ())}
            names |= {n.split(".")[-1] for n in names if any(n.startswith(p) for p in PREFIXES)}
            names |= {n.rstrip("_") for n in names if not n.endswith("__")}
            if stem in names:
                found.append(key)
    for name in aliased(stems):
        found += [key for key in db if key == name or key.startswith(name + ".")]
    return list(dict.fromkeys(found))


def callers(overload: str) -> tuple[str, ...]:
    """How samples are called to reach ``overload``, from its schema."""
    sch = schema(overload)
    _, kind = forward_stems(overload.split(".", 1)[0])
    if kind == "backward":
        return ("backward",)
    if sch is not None and any(a.is_out for a in sch.arguments):
        return ("out", "aten")
    if kind == "inplace" or (
        sch is not None
        and sch.arguments
        and sch.arguments[0].alias_info is not None
        and sch.arguments[0].alias_info.is_write
    ):
        return ("inplace", "aten")
    return ("op", "method", "aten")


@functools.lru_cache(maxsize=256)
def _drawn(opinfo: str, dtype: str, seed: int) -> tuple[Any, ...]:
    import torch

    if opinfo.startswith("gen:"):
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            return tuple(GENERATORS[opinfo[4:]](getattr(torch, dtype)))[:LIMIT]
    o = database()[opinfo]
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        try:
            return tuple(itertools.islice(o.sample_inputs("cpu", getattr(torch, dtype), requires_grad=False), LIMIT))
        except Exception:  # an OpInfo whose generator fails for this dtype has no samples in it
            return ()


def supports(opinfo: str, dtype: str) -> bool:
    import torch

    if opinfo.startswith("gen:"):
        return dtype in GENERATED_DTYPES
    try:
        return getattr(torch, dtype) in database()[opinfo].supported_dtypes("cpu")
    except Exception:
        return False


def drawn(opinfo: str, dtype: str, seed: int = SEED) -> tuple[Any, ...]:
    """The first LIMIT samples of ``opinfo`` in ``dtype`` under ``seed``: the same in every process."""
    return _drawn(opinfo, dtype, seed)


def fresh(sample: Any) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    """A sample's (input, args, kwargs) with every tensor copied: a case may write into them."""
    import torch
    from torch.utils._pytree import tree_map

    def copy(v: Any) -> Any:
        return v.detach().clone() if isinstance(v, torch.Tensor) else v

    return tree_map(copy, sample.input), tree_map(copy, tuple(sample.args)), tree_map(copy, dict(sample.kwargs))


def sample_args(sample: Any) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    """A sample's (input, args, kwargs), not copied."""
    return sample.input, tuple(sample.args), dict(sample.kwargs)


def _adapt(overload: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """A sample's arguments in the overload's own types: a tensor where its schema takes a
    Scalar becomes a number (its first element: ``add.Scalar`` from ``add``'s samples), a
    number where it takes a Tensor a 0-dim tensor."""
    import torch

    sch = schema(overload)
    if sch is None:
        return args, kwargs

    def fit(value: Any, kind: str) -> Any:
        if kind in ("number", "Scalar", "Optional[number]") and isinstance(value, torch.Tensor):
            if value.numel() == 0:
                raise TypeError("an empty tensor where the overload takes a Scalar")
            return value.reshape(-1)[0].item()
        if kind == "Tensor" and isinstance(value, (bool, int, float)):
            return torch.tensor(value)
        return value

    params = [a for a in sch.arguments if not a.kwarg_only]
    kinds = {a.name: str(a.type) for a in sch.arguments}
    out = [fit(value, str(param.type)) for value, param in zip(args, params)]
    # a functional's argument the overload has no place for is what picked the overload (F.pad's
    # mode "reflect" is reflection_pad): the overload's own call leaves it out (torch would refuse
    # the call otherwise; the reference makes the same call)
    return tuple(out), {k: fit(v, kinds[k]) for k, v in kwargs.items() if k in kinds}


def out_buffers(overload: str, result: Any) -> dict[str, Any]:
    """Preallocated ``out=`` buffers of the overload's out arguments, shaped as torch's result."""
    import torch

    sch = schema(overload)
    names = [a.name for a in sch.arguments if a.is_out] if sch is not None else ["out"]
    results = result if isinstance(result, (tuple, list)) else (result,)
    if len(results) != len(names) or not all(isinstance(r, torch.Tensor) for r in results):
        raise TypeError(f"{overload}: torch's result does not fit its out arguments {names}")
    return {n: torch.empty_like(r) for n, r in zip(names, results)}


def invoke(
    overload: str,
    source: Source,
    sample: tuple[Any, tuple[Any, ...], dict[str, Any]],
    out: dict[str, Any] | None = None,
    grads_seed: int = SEED,
) -> Any:
    """Call ``sample`` the way ``source`` says: the user's view of the overload.  ``out``: the
    buffers an out= call writes (the caller keeps them, to check the result is them)."""
    import torch

    inp, args, kwargs = sample
    if source.opinfo.startswith("gen:"):  # a generator's sample is the overload's own arguments
        source = Source(source.opinfo, "aten")
        o: Any = None
    else:
        o = database()[source.opinfo]
    if source.caller == "op":
        return o.op(inp, *args, **kwargs)
    if source.caller == "method":
        if o.method_variant is None:
            raise TypeError(f"{source.opinfo} has no method variant")
        return o.method_variant(inp, *args, **kwargs)
    if source.caller == "inplace":
        if o.inplace_variant is None:
            raise TypeError(f"{source.opinfo} has no in-place variant")
        return o.inplace_variant(inp, *args, **kwargs)
    if source.caller == "out":
        assert out is not None
        if len(out) == 1:
            return o.op(inp, *args, **kwargs, out=next(iter(out.values())))
        return o.op(inp, *args, **kwargs, out=tuple(out.values()))
    if source.caller == "aten":
        base, _, name = overload.partition(".")
        fn = getattr(getattr(torch.ops.aten, base), name or "default")
        a, k = _adapt(overload, (inp, *args), dict(kwargs))
        return fn(*a, **k, **(out or {}))
    if source.caller == "backward":
        return _gradients(o, inp, args, kwargs, grads_seed)
    raise ValueError(f"unknown caller {source.caller!r}")


def _gradients(o: Any, inp: Any, args: tuple[Any, ...], kwargs: dict[str, Any], seed: int) -> tuple[Any, ...]:
    """The gradients of every floating input of the forward op, for seeded output gradients:
    how a ``*_backward`` overload is reached, as training reaches it."""
    import torch
    from torch.utils._pytree import tree_flatten, tree_map

    leaves: list[Any] = []

    def grad_leaf(v: Any) -> Any:
        if isinstance(v, torch.Tensor) and v.is_floating_point():
            v = v.detach().requires_grad_(True)
            leaves.append(v)
        return v

    inp, args, kwargs = tree_map(grad_leaf, inp), tree_map(grad_leaf, args), tree_map(grad_leaf, kwargs)
    if not leaves:
        raise TypeError("no floating input to differentiate")
    with torch.enable_grad():
        result = o.op(inp, *args, **kwargs)
    outs = [t for t in tree_flatten(result)[0] if isinstance(t, torch.Tensor) and t.requires_grad]
    if not outs:
        raise TypeError("the forward op's result has no gradient")
    gen = torch.Generator().manual_seed(seed)
    grads = [torch.randn(t.shape, generator=gen, dtype=torch.float64).to(t.dtype) for t in outs]
    got = torch.autograd.grad(outs, leaves, grads, allow_unused=True)
    return tuple(got)


class Reached(Exception):
    """Raised by the probe's spy: dispatch got to the overload."""


def registered(name: str, fn: Callable[..., Any], keys: tuple[str, ...]) -> Any:
    """A Library registering ``fn`` for exactly the overload ``name`` under ``keys`` (as
    FlagGems' own registrar does, one overload at a time); ``_destroy()`` takes it back."""
    import torch

    lib = torch.library.Library("aten", "IMPL")
    try:
        for key in keys:
            lib.impl(name, fn, key)
    except Exception:
        lib._destroy()
        raise
    return lib


def on_device(args: Any, device: str) -> Any:
    """A sample's (input, args, kwargs) copied, every tensor on ``device``."""
    import torch
    from torch.utils._pytree import tree_map

    def copy(v: Any) -> Any:
        if not isinstance(v, torch.Tensor):
            return v
        return v.detach().clone() if device == "cpu" else v.detach().to(device)

    return tree_map(copy, args)


def reaches(
    overload: str, source: Source, sample: Any, keys: tuple[str, ...], fn: Callable[..., Any], device: str = "cpu"
) -> bool:
    """Whether calling ``sample`` the way ``source`` says reaches ``overload`` through dispatch
    (and torch, without FlagGems, accepts the call): a spy that raises ``Reached`` stands for
    the function, so no kernel runs.  The sample is called on the lane's ``device``, where the
    spy is registered (its dispatch key): OpInfo draws on the CPU, and a CPU tensor never
    reaches a CUDA registration (an H100 lane once planned 433 overloads UNTESTED that way)."""
    import torch

    args = on_device(sample_args(sample), device)
    out = None
    try:
        if source.caller in ("out",) or (
            source.caller == "aten" and any(a.is_out for a in (schema(overload).arguments if schema(overload) else ()))
        ):
            out = out_buffers(
                overload, invoke(overload, Source(source.opinfo, "op"), on_device(sample_args(sample), device))
            )
        else:
            invoke(overload, source, on_device(sample_args(sample), device))  # torch alone takes the call
    except Exception:
        return False

    @functools.wraps(fn)
    def spy(*a: Any, **k: Any) -> Any:
        raise Reached

    try:
        lib = registered(overload, spy, keys)
    except Exception:
        return False
    try:
        with torch.no_grad() if source.caller != "backward" else _nullcontext():
            invoke(overload, source, args, out=out)
    except Reached:
        return True
    except Exception as exc:  # a spy's Reached may come back wrapped
        seen: BaseException | None = exc
        while seen is not None:
            if isinstance(seen, Reached) or "Reached" in str(type(seen)):
                return True
            seen = seen.__cause__ or seen.__context__
        return False
    finally:
        lib._destroy()
    return False


class _nullcontext:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: Any) -> None:
        return None


# elements torch's result of a transformed sample may hold: the reference is computed on the
# host in float64, beside every other worker's (kron of two 129 x 4097 operands would hold 2.8e11)
RESULT_LIMIT = 1 << 24


def _result_size(overload: str, source: Source, sample: Any) -> int | None:
    """Elements of the largest tensor torch returns for ``sample``, found on the meta device
    (nothing allocated); None where the op has no meta kernel for it."""
    import torch
    from torch.utils._pytree import tree_flatten, tree_map

    meta = tree_map(lambda v: v.detach().to("meta") if isinstance(v, torch.Tensor) else v, sample)
    try:
        with torch.no_grad():
            result = invoke(overload, Source(source.opinfo, "op") if source.caller == "backward" else source, meta)
    except Exception:
        return None
    sizes = [t.numel() for t in tree_flatten(result)[0] if isinstance(t, torch.Tensor)]
    return max(sizes, default=0)


def transformed(
    overload: str, source: Source, sample: Any, transform: str, *, budget: int, seed: int = SEED
) -> tuple[Any, tuple[Any, ...], dict[str, Any]]:
    """``boundary.redraw`` of a fresh copy of ``sample``, its budget quartered until torch's
    result holds at most ``RESULT_LIMIT`` elements (an op whose result outgrows its operands:
    kron, outer, cdist); raises ``boundary.NotApplicable`` as redraw does.  The one draw the
    case's call, its differential and its known-defect predicates all see."""
    from . import boundary

    drawn_sample = boundary.redraw(fresh(sample), transform, budget=budget, seed=seed)
    while transform in boundary.REDRAWN and budget > 64:
        size = _result_size(overload, source, drawn_sample)
        if size is None or size <= RESULT_LIMIT:
            break
        budget //= 4
        drawn_sample = boundary.redraw(fresh(sample), transform, budget=budget, seed=seed)
    return drawn_sample
