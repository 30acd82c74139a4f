"""Does the fast path's row walk hold enough loads in flight?  Its kernels' main loops take
Triton's loop options as constexprs (``STAGES``: ``num_stages``, software pipelining;
``UNROLL``: ``loop_unroll_factor``), None by default, and the plan's divisor of K
(``K_DIV``: rows load as vectors; a third field of 1 launches without it, as before).  For
each case, the model's own plan is timed with each variant (do_bench, an L2 flush before
each call), its result compared bit for bit with the first's, and its share of the copy
bandwidth printed.

    python benchmarks/loop_ab.py [--variants none:none,2:none,none:2,none:none:1,...] [--json PATH] op:MxNxK:dim:dtype ...
"""

from __future__ import annotations

import argparse
import functools
import json
import math
import sys

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from bench_reductions import cuda_timing, parse, planned, reference, traffic  # noqa: E402

DEFAULT_VARIANTS = "none:none,2:none,3:none,none:2,none:4,3:2"


def variants(text: str) -> list[tuple[int | None, int | None, bool]]:
    """(STAGES, UNROLL, K_DIV kept) per comma-separated STAGES:UNROLL[:1]."""

    def one(part: str) -> int | None:
        return None if part == "none" else int(part)

    try:
        out = []
        for v in text.split(","):
            a, b, *rest = v.split(":")
            if rest not in ([], ["1"]):
                raise ValueError(v)  # K_DIV may only be turned off: a larger one than K's divisor misaligns
            out.append((one(a), one(b), not rest))
        return out
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: STAGES:UNROLL pairs, comma-separated (none for the default), "
            "each with :1 to launch without the plan's K_DIV"
        ) from None


def label(stages: int | None, unroll: int | None, k_div: bool) -> str:
    return f"{stages}:{unroll}" + ("" if k_div else ":1")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("shapes", nargs="+", help="op:MxNxK:dim:dtype")
    parser.add_argument("--variants", type=variants, default=variants(DEFAULT_VARIANTS))
    parser.add_argument("--json")
    args = parser.parse_args()

    import flag_gems  # noqa: F401  (its ops modules: the native entry points)
    import torch

    from pytest_fl_contract.registry import ROWS

    device, bench, copy_gbs = cuda_timing()
    print(f"{device.source}; copy {copy_gbs:.0f} GB/s; variants (STAGES, UNROLL) {args.variants}", flush=True)
    rows, wrong = [], []
    for spec in args.shapes:
        op, shape, dim, dtype = parse(spec)
        x = torch.randn(shape, device="cuda", dtype=getattr(torch, dtype))
        nbytes = x.numel() * x.element_size()
        moved = traffic(op, shape, dim, nbytes)
        entry = ROWS.get(op)
        native_ms = bench(functools.partial(entry.invoke, entry.fn(), x, entry.dim_arg(dim)))
        want = reference(op, x, dim)
        timed, base = [], None
        for stages, unroll, k_div in args.variants:
            plan, call = planned(op, shape, dim, x, device)
            for site in (getattr(call, "first", None), getattr(call, "second", None)):
                if site is not None:
                    site.meta.update(STAGES=stages, UNROLL=unroll)
                    if not k_div and "K_DIV" in site.meta:
                        site.meta["K_DIV"] = 1
            try:
                got = call.run(x)
            except Exception as error:  # a variant the compiler refuses: said, not fatal
                timed.append(
                    {
                        "variant": label(stages, unroll, k_div),
                        "stages": stages,
                        "unroll": unroll,
                        "k_div": k_div,
                        "error": f"{type(error).__name__}: {str(error)[:200]}",
                    }
                )
                print(f"  {spec} {timed[-1]['variant']}: {timed[-1]['error']}", flush=True)
                continue
            same = None if base is None else bool(torch.equal(got.view(torch.uint8), base.view(torch.uint8)))
            base = got if base is None else base
            err = float((got.double() - want).abs().max() / want.abs().max().clamp_min(1e-30))
            ms = bench(functools.partial(call.run, x))
            timed.append(
                {
                    "variant": label(stages, unroll, k_div),
                    "stages": stages,
                    "unroll": unroll,
                    "k_div": k_div,
                    "ms": ms,
                    "share": moved / ms / 1e6 / copy_gbs,
                    "same_bits": same,
                    "rel_error": err,
                }
            )
            if not err <= (1e-4 if dtype == "float32" else 1e-2):
                wrong.append(f"{spec} {label(stages, unroll, k_div)}: error {err:.1e}")
        rows.append({"case": spec, "bytes": nbytes, "plan": vars(plan), "native_ms": native_ms, "variants": timed})
        ok = [t for t in timed if "ms" in t]
        best = min(ok, key=lambda t: t["ms"])
        print(
            f"{spec:34} {nbytes / 2**20:8.1f} MB {vars(plan)}  native {native_ms:.4f} ms  "
            + "  ".join(
                f"{t['variant']} {t['ms']:.4f} ({100 * t['share']:.0f}%"
                f"{'' if t['same_bits'] in (None, True) else ' DIFF'})"
                for t in ok
            )
            + f"  best {best['variant']} {ok[0]['ms'] / best['ms']:.2f}x faster",
            flush=True,
        )
        if args.json:
            with open(args.json, "w", encoding="utf-8") as sink:
                json.dump({"device_model": device.source, "copy_gbs": copy_gbs, "rows": rows}, sink, indent=1)
    for i, variant in enumerate(args.variants):
        ratios = sorted(
            r["variants"][0]["ms"] / r["variants"][i]["ms"]
            for r in rows
            if len(r["variants"]) > i and "ms" in r["variants"][i] and "ms" in r["variants"][0]
        )
        big = sorted(r["variants"][i]["share"] for r in rows if r["bytes"] > 64 * 2**20 and "ms" in r["variants"][i])
        if ratios:
            print(
                f"{label(*variant)}: speed-up over the first median {ratios[len(ratios) // 2]:.2f}x, "
                f"min {ratios[0]:.2f}x, max {ratios[-1]:.2f}x; copy share over 64 MB median "
                f"{100 * big[len(big) // 2] if big else math.nan:.0f}%"
            )
    print(
        "correctness: "
        + ("every variant within tolerance of float64 torch" if not wrong else "\n  WRONG ".join([""] + wrong))
    )
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
