"""The normalization layers' family behaviour: inputs for a case, the call, the float64
reference, tolerances and the check, for every layer row alike (the row's own callables say
what differs: its torch call, its weight's shape, the terms an output folds).

Every call goes through torch dispatch as a model makes it: ``torch.nn.functional``'s layer
inside ``flag_gems.use_gems(...)`` (the layer's entry points as the lane installed them, a
workaround's wrappers included), gradients through autograd inside it too.  The reference is
the same functional call on float64 CPU tensors, autograd included.  The contracts
(``contracts/layers``), the hardware lanes' isolated calls and the mutant tooling use it."""

from __future__ import annotations

import contextlib
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..registry.layers import Layer, LayerCase
from . import EPS, assert_within
from .dispatch import counted, dispatched, outcome, scope_text, use_gems

INF, NAN = float("inf"), float("nan")


@dataclass
class Inputs:
    x: Any
    weight: Any
    bias: Any
    grad: Any  # the upstream gradient of the output
    stats: Any  # batch norm's running (mean, var)


def make_inputs(layer: Layer, case: LayerCase, seed: int = 0, affine: bool = True, values: str = "normal") -> Inputs:
    """Seeded float32 CPU inputs: x normal (a special value planted in the first row where
    ``values`` says), weight around 1, bias around 0, an upstream gradient."""
    import torch

    g = torch.Generator().manual_seed(seed + sum(case.shape) * 7 + case.groups)
    x = torch.randn(case.shape, generator=g)
    if values == "wide":  # statistics past the half range: a square of 256 sigma is 2**16, past fp16's max
        x.mul_(WIDE)
    plant(x, values)
    channels = layer.channels(case)
    weight = torch.randn(channels, generator=g).mul_(0.5).add_(1.0) if affine else None
    bias = torch.randn(channels, generator=g).mul_(0.1) if affine and "bias" in layer.affine else None
    grad = torch.randn(case.shape, generator=g)
    stats = running_stats(channels, g) if layer.running_stats else None
    return Inputs(x, weight, bias, grad, stats)


def running_stats(channels: int | tuple[int, ...], g: Any, device: str = "cpu", dtype: Any = None) -> tuple[Any, Any]:
    """Running (mean, var) unlike any batch's own statistics (means near 0.5, variances 2 to 3):
    an eval-mode call that took the training branch - the batch's statistics for the running
    ones - differs from torch by far more than its tolerance; zeros and ones, a normal input's
    own statistics, hid that."""
    import torch

    mean = torch.rand(channels, generator=g, device=device, dtype=dtype).add_(0.25)
    var = torch.rand(channels, generator=g, device=device, dtype=dtype).add_(2.0)
    return mean, var


SPECIAL = {"nan": NAN, "pos_inf": INF, "huge": 1e30}
WIDE = 256.0  # values="wide": the input's scale (its values fit fp16; their squares do not)


def plant(x: Any, values: str) -> None:
    """A special value in the first element of the input (one row, one channel)."""
    if values in SPECIAL and x.numel():
        x.view(-1)[0] = SPECIAL[values]


GRADS = ("x", "weight", "bias")  # the leaves a backward case differentiates, unless it says fewer


def run(
    layer: Layer,
    case: LayerCase,
    inputs: Inputs,
    *,
    device: str,
    dtype: str,
    gems: Any = None,
    backward: bool = False,
    transposed: bool = False,
    enabling: str = "include",
    options: Mapping[str, Any] | None = None,
    grads: tuple[str, ...] = GRADS,
    on_device: bool = False,
    between: Inputs | None = None,
) -> dict[str, Any]:
    """The layer on ``inputs`` in ``dtype`` on ``device`` (``gems``: the flag_gems module,
    whose entry points serve the call, with the row's or every op enabled (``enabling``);
    None: torch itself), with the gradients of the leaves ``grads`` names when ``backward``:
    {"y", "dx", "dweight", "dbias", "running_mean", "running_var"} on the CPU.  ``options``:
    the call's arguments beyond its case (eps, training, momentum; ``running_stats=False``: a
    batch norm given no running buffers).  cuDNN is off for the call (torch's CUDA batch norm
    would take it, never FlagGems), and a call whose forward (or dispatched backward) never
    reached FlagGems fails.  ``on_device``: the outputs as the call left them, not copies on
    the CPU (a later call that reuses their memory then shows).  ``between``: inputs of another
    forward call of the layer that runs after this call's forward and before its backward (a
    graph held while the layer runs again: what the backward saved must still be its own)."""
    import torch

    dt = getattr(torch, dtype)
    options = dict(options or {})
    with_stats = options.pop("running_stats", True)

    def leaf(t: Any, name: str) -> Any:
        return None if t is None else t.detach().to(device=device, dtype=dt).requires_grad_(backward and name in grads)

    x = inputs.x.to(dt)
    if transposed and x.dim() >= 2:  # the same values, another memory order: a transposed copy viewed back
        x = x.transpose(0, -1).contiguous().transpose(0, -1)
    x = x.to(device).detach().requires_grad_(backward and "x" in grads)
    weight, bias = leaf(inputs.weight, "weight"), leaf(inputs.bias, "bias")
    stats = (
        None
        if inputs.stats is None or not with_stats
        else tuple(s.to(device=device, dtype=dt).clone() for s in inputs.stats)
    )
    wanted = {layer.forward} | (
        {layer.backward} if backward and gems is not None and dispatched(gems, layer.backward) else set()
    )
    count: Any = counted(gems, wanted) if gems is not None else contextlib.nullcontext(set())
    scope = use_gems(gems, layer.gems_names, enabling) if gems is not None else contextlib.nullcontext()
    with count as seen, torch.backends.cudnn.flags(enabled=False), scope:
        y = layer.torch_call(x, weight, bias, case, stats, **options)
        if between is not None:
            other = (leaf(t, "") for t in (between.x, between.weight, between.bias))
            other_stats = None if stats is None else tuple(s.to(device=device, dtype=dt).clone() for s in between.stats)
            later = layer.torch_call(*other, case, other_stats, **options)
        if backward:
            y.backward(inputs.grad.to(device=device, dtype=dt))
    if between is not None:
        del later
    if gems is not None and x.numel():
        missing = sorted(wanted - seen)
        assert not missing, (
            f"{layer.name}: torch dispatch never reached FlagGems' {', '.join(missing)} "
            f"({scope_text(layer.gems_names, enabling)}): the contract tested torch's own kernels"
        )
    out = {"y": y.detach()}
    if backward:
        out.update(
            dx=x.grad if "x" in grads else None,
            dweight=None if weight is None or "weight" not in grads else weight.grad,
            dbias=None if bias is None or "bias" not in grads else bias.grad,
        )
    if stats is not None:
        out.update(running_mean=stats[0], running_var=stats[1])
    return {k: (None if v is None else v.detach() if on_device else v.detach().cpu()) for k, v in out.items()}


def reference(
    layer: Layer,
    case: LayerCase,
    inputs: Inputs,
    backward: bool = False,
    options: Mapping[str, Any] | None = None,
    grads: tuple[str, ...] = GRADS,
) -> dict[str, Any]:
    """torch in float64 on the CPU, autograd included."""
    return run(layer, case, inputs, device="cpu", dtype="float64", backward=backward, options=options, grads=grads)


def terms(layer: Layer, case: LayerCase, what: str) -> int:
    """How many values an output folds (the row says: a normalized group for y and dx, the
    rows for a weight gradient and a running statistic)."""
    return layer.terms(case, what)


def tolerance(dtype: str, n: int) -> dict[str, float]:
    """assert_close tolerances against float64 of the same inputs: a normalization computes
    a mean, a reciprocal square root and (backward) two more sums over ``n`` values in fp32,
    then rounds once to the result's dtype: a few fp32 ulps a term for the sums, half an ulp
    of a half type on top.  A kernel that folds a row past the end, or a group's neighbour,
    is off by far more than that."""
    rtol = 32 * EPS["float32"] if dtype in ("float32", "float64") else 2 * EPS[dtype]
    atol = 16 * EPS["float32"] * math.sqrt(n) + (2 * EPS[dtype] if dtype in ("float16", "bfloat16") else 0.0)
    return {"rtol": rtol, "atol": atol}


def compare(
    layer: Layer, case: LayerCase, got: dict[str, Any], want: dict[str, Any], dtype: str, what: str = ""
) -> None:
    """Each output as torch has it: present where torch has it, the same shape and dtype
    family, values within ``tolerance`` (NaN and inf exactly where float64 has them)."""

    for key, ref in want.items():
        if ref is None:
            continue
        value = got.get(key)
        assert value is not None, f"{what}{layer.name}: FlagGems gave no {key} (torch: {tuple(ref.shape)})"
        assert tuple(value.shape) == tuple(ref.shape), (
            f"{what}{layer.name}: {key} has shape {tuple(value.shape)}, torch {tuple(ref.shape)}"
        )
        rounded = ref.to(value.dtype).double()  # what a right answer in the result's dtype can be
        assert_within(
            value.double(),
            rounded,
            tolerance(dtype, layer.terms(case, key)),
            msg=lambda m, k=key: f"{what}{layer.name}: {k}: {m}",
        )


def rounded(inputs: Inputs, dtype: str) -> Inputs:
    """The inputs as a ``dtype`` call sees them (rounded to it), back in float32: what the
    float64 reference of a half-precision call starts from."""
    import torch

    dt = getattr(torch, dtype)

    def r(t: Any) -> Any:
        return None if t is None else t.to(dt).float()

    stats = None if inputs.stats is None else tuple(r(s) for s in inputs.stats)
    return Inputs(r(inputs.x), r(inputs.weight), r(inputs.bias), r(inputs.grad), stats)


def check(
    layer: Layer,
    case: LayerCase,
    inputs: Inputs,
    *,
    device: str,
    dtype: str,
    gems: Any,
    backward: bool = False,
    transposed: bool = False,
    what: str = "",
    enabling: str = "include",
    options: Mapping[str, Any] | None = None,
    grads: tuple[str, ...] = GRADS,
) -> None:
    """FlagGems through dispatch against torch in float64 (the same inputs, rounded to the
    call's dtype, the same ``options`` and differentiated ``grads``); where torch refuses the
    call, FlagGems must refuse it too."""
    inputs = rounded(inputs, dtype)
    kind, want = outcome(lambda: reference(layer, case, inputs, backward, options, grads))
    if kind == "raises":
        got_kind, got = outcome(
            lambda: run(
                layer,
                case,
                inputs,
                device=device,
                dtype=dtype,
                gems=gems,
                backward=backward,
                transposed=transposed,
                enabling=enabling,
                options=options,
                grads=grads,
            )
        )
        assert got_kind == "raises", f"{what}{layer.name}: torch raises {want}, FlagGems returned a result"
        return
    got = run(
        layer,
        case,
        inputs,
        device=device,
        dtype=dtype,
        gems=gems,
        backward=backward,
        transposed=transposed,
        enabling=enabling,
        options=options,
        grads=grads,
    )
    compare(layer, case, got, want, dtype, what)


class LayerFamily:
    """The layers' family behaviour for one call of a row at any size (the hardware lanes'
    isolated calls): inputs drawn on the device, the outputs through dispatch, the tolerance."""

    suite = "layers"

    def inputs(
        self,
        row: Layer,
        case: LayerCase,
        *,
        seed: int = 0,
        device: str = "cpu",
        dtype: str = "float32",
        backward: bool = False,
    ) -> dict[str, Any]:
        """Seeded inputs drawn where they are used (a large case's gigabytes never cross the bus)."""
        import torch

        dt = getattr(torch, dtype)
        g = torch.Generator(device=device).manual_seed(seed)
        channels = row.channels(case)
        return {
            "x": torch.randn(case.shape, generator=g, device=device, dtype=dt),
            "weight": torch.rand(channels, generator=g, device=device, dtype=dt) + 0.5,
            "bias": torch.randn(channels, generator=g, device=device, dtype=dt) * 0.1 if "bias" in row.affine else None,
            "grad": torch.randn(case.shape, generator=g, device=device, dtype=dt) if backward else None,
        }

    def outputs(
        self,
        row: Layer,
        case: LayerCase,
        inputs: dict[str, Any],
        *,
        gems: Any = None,
        backward: bool = False,
        enabling: str = "include",
    ) -> dict[str, Any]:
        """The layer on ``inputs`` where they are (``gems``: through FlagGems' entry points;
        None: torch's own), its gradients too when ``backward``; a call that never reached
        FlagGems raises."""
        import torch

        def leaf(t: Any) -> Any:
            return None if t is None else t.detach().requires_grad_(backward)

        x, weight, bias = leaf(inputs["x"]), leaf(inputs["weight"]), leaf(inputs["bias"])
        stats = (
            running_stats(
                inputs["weight"].numel(),
                torch.Generator(device=inputs["weight"].device).manual_seed(1),
                str(inputs["weight"].device),
                inputs["weight"].dtype,
            )
            if row.running_stats
            else None
        )
        wanted = {row.forward} if gems is not None else set()
        count: Any = counted(gems, wanted) if gems is not None else contextlib.nullcontext(set())
        scope = use_gems(gems, row.gems_names, enabling) if gems is not None else contextlib.nullcontext()
        with count as seen, torch.backends.cudnn.flags(enabled=False), scope:
            y = row.torch_call(x, weight, bias, case, stats)
            if backward:
                y.backward(inputs["grad"])
        missing = sorted(wanted - seen)
        if missing:
            raise RuntimeError(f"torch dispatch never reached FlagGems' {', '.join(missing)}: torch's own kernels ran")
        found = {"y": y.detach()}
        if backward:
            found.update(dx=x.grad, dweight=weight.grad, **({"dbias": bias.grad} if bias is not None else {}))
        return found

    def tolerance(
        self, row: Layer, case: LayerCase, dtype: str, output: str, on_device: bool = False
    ) -> dict[str, float]:
        """The contracts' tolerance against float64; ``on_device`` (against torch's own result
        on the device, at sizes no float64 copy fits) also an ulp of a half dtype for each of
        sqrt(n) folded terms: FlagGems keeps a row's mean and rstd in the input's dtype (torch
        in fp32), which shifts every term of a weight gradient a little, at random (batch norm's
        gradients over 2**25 values, fp16, on an H200: 3 to 9 times the tolerance without it,
        within it with it).  A row read through a wrapped offset adds values of the terms' own
        size: 16 to 70 on an H200 where this allows 0.5."""
        n = row.terms(case, output)
        found = tolerance(dtype, n)
        if on_device and dtype in ("float16", "bfloat16"):
            found["atol"] += 2 * EPS[dtype] * math.sqrt(n)
        return found

    def memory_gib(self, row: Layer, case: LayerCase) -> float:
        """What a large case holds on the device: the input, the upstream gradient, and FlagGems'
        and torch's output and input gradient (six fp16 tensors of the input's size), and four
        more as slack for torch's float32 intermediates."""
        return 10 * 2 * math.prod(case.shape) / 2**30


FAMILY = LayerFamily()
